"""Step 3 of the PRV accountant: composition by FFT on a Chernoff window with the certified
floating-point term, and the assembly of one direction's `PRVCurve` (GLW Sec. 5, eq. (8))."""

from __future__ import annotations

import logging
import math
import sys
import time
from collections.abc import Sequence

import numpy as np
import scipy.fft

from ..budget import DEFAULT_MAX_MEMORY, require_memory
from ..profile import CertificationError, ErrorBudget
from .bounds import _chernoff_orders, _coupling, _planned_mesh, _tail_bound, _window
from .curve import PRVCurve
from .discretise import _U, _Cells, _discretise, _find_tails

logger = logging.getLogger(__name__)

#: Per radix stage relative error of pocketfft's butterflies (radices 2, 3, 4, 5; twiddles incl.).
_FFT_STAGE_ULPS = 10.0
#: Spectrum entries with |P|^k below this are set to 0 (their total effect is added to fp).
_SPECTRUM_FLOOR = 1e-60

#: Smallest floating-point error bound one composition adds to the delta bracket: the cell
#: masses of every step are normalised with relative error >= (log2(cells + 1) + 22) u, one
#: cell at least (see `_pmf_error`; hybrid argument over the steps).
_FP_PER_COMPOSITION = (math.log2(2) + 22) * _U
#: Largest total number of compositions: beyond it the floating-point part of delta_error alone
#: is >= 1, so every delta bound is the trivial 1 and no epsilon can be certified (3.9e14).
MAX_COMPOSITIONS = int(1 / _FP_PER_COMPOSITION)

#: Largest privacy loss (in absolute value, after truncation) of one step: squares of cell
#: offsets (at most the loss range) summed over up to MAX_COMPOSITIONS steps stay finite.
MAX_STEP_LOSS = math.sqrt(sys.float_info.max) / MAX_COMPOSITIONS


def _compose(cells: Sequence[_Cells], h: float, lower: float, upper: float, max_points: int,
             extended: bool = False, max_memory: float = DEFAULT_MAX_MEMORY):
    """Circular convolution of all components on n >= (upper - lower)/h + 1 points by one irfft.

    Returns (t0, pmf, fp_fft, n) with pmf[m] the mass at t0 + m h (wrapped modulo n h).
    ``extended``: transforms and powering in ``np.longdouble`` (x87 80-bit: unit roundoff 2^-64,
    2048x below double), for a ~2000x lower floating-point floor at ~3.5x the cost; the result
    is rounded to double (relative u per entry, accounted by the caller).
    """
    offset_cells = sum(c.count * c.lo for c in cells)
    offset_shift = math.fsum(c.count * c.shift for c in cells)
    x0 = offset_cells * h + offset_shift
    j_a = int(math.floor((lower - x0) / h + 1e-9))
    needed = int(math.ceil((upper - x0) / h - 1e-9)) - j_a + 1
    n = scipy.fft.next_fast_len(max(needed, 16), real=True)
    if n > max_points:
        raise CertificationError(f"the PRV accountant declines: the composed window needs {n} points "
                                 f"(> max_points={max_points}); use a larger eps_error or delta_error")
    require_memory("PRV", f"the composition on {n} points", compose_bytes(n, len(cells), extended), max_memory)
    j_a -= (n - needed) // 2
    real = np.longdouble if extended else np.float64
    unit = float(np.finfo(real).eps) / 2
    log2n = math.log2(n)
    e_inf = _FFT_STAGE_ULPS * unit * log2n  # componentwise forward-FFT error (||q||_1 = 1)
    log_abs = np.zeros(n // 2 + 1, dtype=real)
    log_abs_err = np.zeros(n // 2 + 1)
    spectra = []
    for c in cells:
        q = c.pmf
        if q.size > n:
            q = np.bincount(np.arange(q.size) % n, weights=q, minlength=n)
        spec = scipy.fft.rfft(q.astype(real), n)
        absval = np.abs(spec)
        with np.errstate(divide="ignore"):
            log_abs += c.count * np.log(absval)
            log_abs_err += (c.count - 1) * np.log(absval.astype(float) + e_inf)
        spectra.append(spec)
    keep = log_abs > math.log(_SPECTRUM_FLOOR)
    idx = np.nonzero(keep)[0]
    total_phase = np.zeros(idx.size, dtype=real)
    for c, spec in zip(cells, spectra):
        total_phase += c.count * np.angle(spec[idx])
    composed = np.zeros(n // 2 + 1, dtype=np.clongdouble if extended else complex)
    composed[idx] = np.exp(log_abs[idx] + 1j * total_phase)
    pmf = scipy.fft.irfft(composed, n).astype(float)
    pmf = np.roll(pmf, -(j_a % n))
    t0 = x0 + j_a * h
    log_abs = log_abs.astype(float)
    # Floating-point bound on ||pmf - exact circular convolution||_1 (see module docstring).
    k_total = sum(c.count for c in cells)
    # |prod P_i^k_i - prod P^_i^k_i| <= sum_i k_i |dP_i| prod_l (|P^_l| + e)^(k_l - 1) (1 + e)^b
    weights = np.exp(log_abs_err) * (1 + e_inf) ** len(cells)
    spec_err = k_total * e_inf * weights
    # rounding of exp(sum k log|P| + i sum k arg P): relative (2 + pi) u per unit of k, plus the logs
    power_err = ((2 + math.pi) * k_total + 200) * 2 * unit * np.exp(log_abs) * keep
    dropped = np.where(keep, 0.0, np.exp(log_abs))
    per_entry = spec_err + power_err + dropped
    fp_fft = math.sqrt(2.0 * float(np.sum(per_entry**2)))
    fp_ifft = _FFT_STAGE_ULPS * unit * log2n * 2.0 * float(np.sum(np.abs(composed)))
    return t0, pmf, fp_fft + fp_ifft, n


def compose_bytes(n: int, components: int, extended: bool) -> float:
    """Peak bytes of `_compose` on n points: one real input and one half spectrum per component, the
    log-modulus and error arrays, the composed spectrum, the pmf and its roll (x2 for temporaries)."""
    real = 16 if extended else 8
    return 2.0 * n * (real * (1 + components) + 4 * real + 3 * 8)


def _build_curve(components, direction: str, eps_target: float, delta_error: float, max_points: int,
                 extended: bool = False, max_memory: float = DEFAULT_MAX_MEMORY) -> PRVCurve:
    """Discretise, compose and bracket one direction (``extended``: long-double FFT, see _compose)."""
    start = time.perf_counter()
    total = sum(k for _, k in components)
    eta0, eta1, eta2 = 0.5 * delta_error, 0.25 * delta_error, 0.25 * delta_error
    tau = eta1 / (2 * total)
    tails = []
    for loss, _ in components:
        try:
            tl = _find_tails(loss, tau)
        except ValueError as exc:
            raise ValueError(f"the PRV accountant cannot truncate the privacy loss of one {type(loss).__name__} "
                             f"step of the mechanism ({exc}); the mechanism is too far from private for a "
                             "grid of losses (e.g. noise_multiplier too small); use accountant='rdp'") from None
        extent = max(abs(tl.lower), abs(tl.upper))
        if not extent <= MAX_STEP_LOSS:
            raise ValueError(f"the PRV accountant supports privacy losses up to {MAX_STEP_LOSS:.3g} per step; one "
                             f"{type(loss).__name__} step of the mechanism reaches {extent:.3g} (its squares, "
                             "summed over the compositions, overflow double precision); use accountant='rdp'")
        tails.append(tl)
    h = _planned_mesh(components, tails, eps_target, eta0)
    # The achieved error is not proportional to h when the loss has atoms (ApproxDP, PureDP):
    # their offsets from the grid vary erratically with h. Refinement is therefore geometric with
    # a growing margin; the cell count is bounded by max_points, whose error names the options.
    for attempt in range(12):
        cells = [_discretise(loss, k, h, tl, max_points, max_memory) for (loss, k), tl in zip(components, tails)]
        width, eta0_used, rule = _coupling(cells, h, eta0)
        bias = sum(c.count * c.mean_error for c in cells)
        eps_error = width + bias
        if eps_error <= eps_target:
            break
        logger.debug("%s: eps_error %.4g > target %.4g at h=%.4g; refining", direction, eps_error, eps_target, h)
        h *= min(0.98, 0.98 ** (attempt + 1) * eps_target / eps_error)
    else:
        raise CertificationError(f"the PRV accountant could not reach eps_error={eps_target:.3g} (achieved {eps_error:.3g} "
                         "after 12 refinements of the grid); pass a larger eps_error or use accountant='cf'")
    t_disc = time.perf_counter()
    eta1_used = sum(c.count * c.tail for c in cells)
    if total == 1:  # one step: no composition, no window, no FFT
        only = cells[0]
        t0, pmf, fp_fft, n, eta2_used = only.lo * h + only.shift, only.pmf.copy(), 0.0, only.pmf.size, 0.0
    else:
        orders = _chernoff_orders(cells, h, eta2 / 2)
        lower, upper = _window(cells, h, eta2, orders)
        t0, pmf, fp_fft, n = _compose(cells, h, lower, upper, max_points, extended, max_memory)
        eta2_used = _tail_bound(cells, h, t0 - h / 2, t0 + (n - 0.5) * h, orders)
    t_fft = time.perf_counter()
    fp_pmf = sum(c.count * c.pmf_error for c in cells)
    # relative: the cell masses (hybrid argument) and the curve's own sums (PRVCurve)
    rel_error = math.expm1(sum(c.count * math.log1p(c.pmf_rel_error) for c in cells) + (3 * n + 17) * _U)
    negative = float(-np.sum(pmf[pmf < 0]))
    fp = fp_fft + fp_pmf
    if negative > fp_fft:
        logger.debug("%s: negative mass %.3g exceeds the FFT bound %.3g; using 4x it", direction, negative, fp_fft)
        fp = max(fp, 4 * negative + fp_pmf)
    np.maximum(pmf, 0.0, out=pmf)  # moves every entry towards the (non-negative) exact pmf
    delta_total = eta0_used + eta1_used + eta2_used + fp
    # Below delta_total no eps is certified; just above it the bracket is valid but wide.
    min_delta = 2 * delta_total
    log_finite = sum(k * math.log1p(-loss.inf_mass) for loss, k in components)
    details = (
        ("eps_coupling", width),
        ("eps_mean_bias", bias),
        ("delta_coupling_eta0", eta0_used),
        ("delta_truncation_eta1", eta1_used),
        ("delta_wraparound_eta2", eta2_used),
        ("delta_fp_fft", fp_fft),
        ("delta_fp_pmf", fp_pmf),
        ("delta_fp_relative", rel_error),
        ("negative_mass", negative),
        ("mesh", h),
        ("points", n),
        ("window_lower", t0),
        ("window_upper", t0 + (n - 1) * h),
    )
    budget = ErrorBudget(eps_error=float(eps_error), delta_error=float(delta_total), min_delta=float(min_delta),
                         details=tuple((name, float(value)) for name, value in details))
    logger.debug(
        "%s: K=%d h=%.4g (%s) n=%d window=[%.4g, %.4g] eps_err=%.4g delta_err=%.3g (eta0 %.2g eta1 %.2g "
        "eta2 %.2g fp %.2g) discretise %.3fs compose %.3fs", direction, total, h, rule, n, t0,
        t0 + (n - 1) * h, eps_error, delta_total, eta0_used, eta1_used, eta2_used, fp, t_disc - start,
        t_fft - t_disc)
    top = math.fsum(k * float(loss.support[1]) for loss, k in components) if all(
        math.isfinite(loss.support[1]) for loss, _ in components) else math.inf
    return PRVCurve(direction=direction, t0=t0, h=h, pmf=pmf, log_finite=log_finite, eps_error=eps_error,
                    delta_error=delta_total, rel_error=rel_error, error_budget=budget,
                    top=top + (4 + len(components)) * _U * abs(top) + 1e-300)
