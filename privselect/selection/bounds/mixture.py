"""The K-mixture bound: K runs, K drawn independently of the data, everything released.

When the number of runs K is released with the result, or the runs are chosen adaptively
(e.g. an Optuna TPE sampler), the selection theorems do not apply. What does apply: given
K = k, the whole transcript is a post-processing of the adaptive k-fold composition of the
base run, and K is independent of the data, so by joint convexity of the hockey-stick
divergence (the output law is the same K-mixture on both neighbours, per direction)

    delta(eps) <= sum_k P[K = k] delta_k(eps),   delta_k the profile of the k-fold composition.

(K = 0 releases a data-independent output: delta_0(eps) = (1 - e^eps)_+.)

Buckets. delta_k is non-decreasing in k (k-fold is a post-processing of k'-fold for
k <= k'), so K is grouped into buckets (k_{j-1}, k_j] charged at delta_{k_j}; the tail
P[K > k_max] is added as a delta error. Both steps only increase the bound.

One discretisation, every k from it. Every k_j-fold profile comes from ONE description of
the base run:

* compositions of Gaussian mechanisms (the exact accountant): the k-fold composition of
  mu-GDP is exactly sqrt(k) mu-GDP (Dong, Roth, Su 2022, Cor. 3.3), one closed form per
  bucket from the base's exact mu^2;
* everything else the PRV accountant reads: the base run's privacy-loss laws are truncated
  and discretised ONCE (Gopi, Lee, Wutschitz 2021, Alg. 2) on one mesh h and transformed once (only
  the spectrum's head: `spectrum_head`); the buckets are mixed in the frequency domain, sum_j P_j R^{k_j} (R the
  run's spectrum), and the mixture's block sums come from its first (few hundred) entries, the rest below the floor
  (`block_sums`; an inverse FFT in long double). The accountant's bracket (GLW eq. (8), `privselect.accounting.prv`)
  of bucket j shifts its loss by the coupling width s_j of k_j runs; the shift is applied in the frequency domain,
  rounded up to whole cells (m_j h >= s_j: delta~ is non-increasing, so the larger shift is still an upper bound),
  and to the left for the lower side: two spectra, two `PRVCurve`s of the PRV accountant with no further eps
  slack (the lower side's is read on the first query of a lower bound: an upper delta, every risk bound, never
  reads it). Their delta slack carries the accountant's proven terms for every k (truncation,
  coupling failure, wrap-around at this window), weighted by P_j, plus a floating-point bound
  on the mixed spectrum. Atoms are put on the lattice without the accountant's mean shift
  (their offset is added to the mean error), so every k-fold law lives on the same lattice h Z.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import math
import os
import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import scipy.fft

from ...accounting import get_accountant, privacy_profile
from ...accounting.exact import gdp_mu_bracket, gdp_mu_squared
from ...accounting.plrv import UnsupportedMechanismError
from ...accounting.profile import CertificationError, DirectionalCurve, ErrorBudget, GaussianCurve, PrivacyProfile
from ...accounting.prv.interface import (
    COARSE_ORDERS,
    FFT_STAGE_ULPS,
    MAX_COMPOSITIONS,
    MAX_STEP_LOSS,
    SPECTRUM_FLOOR,
    UNIT_ROUNDOFF,
    Cells,
    PRVCurve,
    coupling,
    discretise,
    epsilon_scale,
    find_tails,
    log_mgf_cells,
    planned_mesh,
    readable_losses,
    tail_bound,
    window,
)
from ...mechanisms import Mechanism
from ..distributions import KDistribution
from .block_sums import block_sum_error, block_sums
from .registry import register_bound
from .spectrum_head import run_spectra

__all__ = ["k_mixture_profile", "KMixtureCurve", "K_MIXTURE"]

#: Relative inflation of the bucket probabilities: covers the rounding of K's pmf and of the
#: bucket sums (relative errors of order 1e-13 at k ~ 1e7) with a wide margin.
_PROBABILITY_MARGIN = 1e-9
#: PRV accuracy: eps_error = this x an RDP upper bound on eps(target_delta) of the k-fold run at
#: the bucket that dominates at target_delta (the PRV accountant's default relative accuracy).
_REL_EPS_ERROR = 1.5e-3
#: The curves are read on blocks of cells whose width adds at most this fraction of the targeted
#: eps error (see _mixture_curve).
_BLOCK_SLACK = 0.02
#: Recompose in long double when the double-precision delta slack exceeds this fraction of target_delta.
_EXTENDED_ABOVE = 0.01
#: Largest FFT size of the mixture (memory guard).
_MAX_POINTS = 1 << 23


def _buckets(k_dist: KDistribution, tail: float, ratio: float,
             exact_up_to: int = 32) -> tuple[np.ndarray, np.ndarray, float]:
    """Bucket ends k_j, their probabilities P[k_{j-1} < K <= k_j], and the tail mass beyond."""
    cumulative, k_max, chunk = 0.0, 0, 4096
    start = k_dist.min_k
    while True:
        ks = np.arange(start, start + chunk)
        cdf = cumulative + np.cumsum(k_dist.pmf(ks))
        hit = np.flatnonzero(1.0 - cdf <= tail)
        if hit.size:
            k_max = int(ks[hit[0]])
            break
        cumulative, start = float(cdf[-1]), start + chunk
        if start > 10**7:
            raise ValueError("K's tail is too heavy to bound with the mixture bound (k_max > 1e7)")
    k_max = max(k_max, 1)  # K = 0 up to the tail (e.g. a Poisson of mean 1e-300): one bucket k = 1 all the same
    bucket_ends = list(range(1, min(k_max, exact_up_to) + 1))
    while bucket_ends[-1] < k_max:
        bucket_ends.append(min(k_max, max(bucket_ends[-1] + 1, int(math.ceil(bucket_ends[-1] * ratio)))))
    ends = np.array(bucket_ends)
    cdf_at = np.cumsum(k_dist.pmf(np.arange(0, k_max + 1)))[ends]
    probs = np.diff(np.concatenate([[k_dist.pmf(0) if k_dist.min_k == 0 else 0.0], cdf_at]))
    # the sum carries absolute rounding <= (k_max + 1) u: added to the tail
    tail_mass = max(0.0, 1.0 - float(cdf_at[-1])) + 4 * (k_max + 2) * UNIT_ROUNDOFF
    return ends, probs * (1 + _PROBABILITY_MARGIN), tail_mass


#: First stage of the inversion: 0 and a log grid on [1e-8, 1e4] (eps beyond 1e4 is reported as +inf).
_EPS_GRID = np.concatenate([[0.0], np.geomspace(1e-8, 1e4, 1024)])
_ZOOM = np.linspace(0.0, 1.0, 129)


def _grid_inverse(bounds: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]], table: tuple[np.ndarray, np.ndarray],
                  delta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(lower, upper) on eps(delta) = inf{eps >= 0 : delta(eps) <= delta} from vectorised ``bounds``.

    ``table`` holds ``bounds`` on `_EPS_GRID` (both sides non-increasing). The bracketing cell
    of each side is zoomed into twice with 128 steps, both sides in one call of ``bounds``. The
    upper side returns a point where the upper curve is <= delta (a valid upper bound on eps),
    the lower side the last point where the lower curve is > delta (a valid lower bound); 0
    where the curve is already <= delta at 0, +inf where it is > delta on the whole grid.
    """
    d = np.asarray(delta, dtype=float).reshape(-1)
    size = _EPS_GRID.size
    brackets, first_ok = [], []
    for values in table:
        i = (values[None, :] > d[:, None]).sum(axis=1)  # first grid index where the side is <= delta
        first_ok.append(i)
        brackets.append([_EPS_GRID[np.clip(i - 1, 0, size - 1)], _EPS_GRID[np.minimum(i, size - 1)]])
    rows = np.arange(d.size)
    for _ in range(2):
        points = [a[:, None] + (b - a)[:, None] * _ZOOM[None, :] for a, b in brackets]
        for pts, (_a, b) in zip(points, brackets):
            pts[:, -1] = b  # exactly the known right end (a + (b - a) may round below it)
        flat = np.concatenate([p.reshape(-1) for p in points])
        sides = bounds(flat)
        for side, (pts, bracket) in enumerate(zip(points, brackets)):
            value = sides[side][side * pts.size:(side + 1) * pts.size].reshape(pts.shape)
            ok = value <= d[:, None]
            ok[:, -1] = True  # the right end is known to satisfy the test (or is the never-case)
            j = np.argmax(ok, axis=1)
            bracket[0] = np.where(j > 0, pts[rows, np.maximum(j - 1, 0)], bracket[0])
            bracket[1] = pts[rows, j]
    out = []
    for side, (i, (a, b)) in enumerate(zip(first_ok, brackets)):
        value = np.where(i == 0, 0.0, a if side == 0 else b)
        out.append(np.where(i >= size, np.inf, value).reshape(np.shape(delta)))
    return out[0], out[1]


class KMixtureCurve(DirectionalCurve):
    """One direction: sum_i w_i delta_i(eps) + P[K = 0] (1 - e^eps)_+ + P[K > k_max].

    ``parts`` are (weight, curve) pairs: a bucket's k-fold curve with weight P[K in bucket], or a
    mixture curve that already carries the buckets' probabilities (weight 1).
    """

    def __init__(self, direction: str, parts: Sequence[tuple[float, DirectionalCurve]], p_zero: float,
                 tail: float, details: tuple[tuple[str, float], ...] = ()) -> None:
        self.direction, self.parts, self.p_zero, self.tail = direction, tuple(parts), p_zero, tail
        budgets = [c.error_budget for _, c in self.parts]
        self.error_budget = ErrorBudget(
            eps_error=max(b.eps_error for b in budgets),
            delta_error=math.fsum(w * b.delta_error for (w, _), b in zip(self.parts, budgets)) + tail,
            min_delta=max(b.min_delta for b in budgets),
            details=(("k_tail_mass", tail),) + details,
        )
        self._table: tuple[np.ndarray, np.ndarray] | None = None

    def delta_bounds(self, eps):
        e = np.asarray(eps, dtype=float)
        lower: float | np.ndarray = 0.0
        upper: float | np.ndarray = 0.0
        for w, curve in self.parts:
            lo, up = curve.delta_bounds(e)
            lower, upper = lower + w * lo, upper + w * up
        upper = upper + self.p_zero * np.maximum(-np.expm1(np.minimum(e, 0.0)), 0.0) + self.tail
        return np.clip(lower, 0.0, 1.0), np.clip(upper, 0.0, 1.0)

    def delta_upper(self, eps):
        """The upper end of ``delta_bounds`` (the same sums), without reading any lower side."""
        e = np.asarray(eps, dtype=float)
        upper: float | np.ndarray = 0.0
        for w, curve in self.parts:
            upper = upper + w * curve.delta_upper(e)
        upper = upper + self.p_zero * np.maximum(-np.expm1(np.minimum(e, 0.0)), 0.0) + self.tail
        return np.clip(upper, 0.0, 1.0)

    def epsilon_bounds(self, delta):
        if self._table is None:
            self._table = self.delta_bounds(_EPS_GRID)
        return _grid_inverse(self.delta_bounds, self._table, np.asarray(delta, dtype=float))


# ----------------------------------------------------------------------------------------
# Buckets from one closed form: compositions of Gaussian mechanisms
# ----------------------------------------------------------------------------------------


def _gaussian_bucket_curves(base: Mechanism, ends: np.ndarray) -> list[GaussianCurve]:
    """The k_j-fold compositions of mu-GDP: sqrt(k_j) mu-GDP, mu^2 exact (Dong, Roth, Su 2022, Cor. 3.3)."""
    square = gdp_mu_squared(base)
    curves = []
    for k in ends:
        low, high = gdp_mu_bracket(square * int(k))
        curves.append(GaussianCurve(high, mu_bounds=(low, high)))
    return curves


# ----------------------------------------------------------------------------------------
# Buckets from one PRV discretisation
# ----------------------------------------------------------------------------------------


class _RunLaw:
    """The base run's discretised privacy-loss laws (one direction) and their Chernoff data."""

    def __init__(self, cells: list[Cells], h: float, eps_target: float) -> None:
        self.cells, self.h, self.eps_target = cells, h, eps_target
        self._log_mgf: dict[tuple[float, float], float] = {}
        self._coarse: dict[float, np.ndarray] = {}

    def scaled(self, k: int) -> list[Cells]:
        """The cells of k runs (counts multiplied; the pmfs and caches are shared)."""
        return [dataclasses.replace(c, count=c.count * k) for c in self.cells]

    def orders(self, k: int, eta_side: float) -> list[tuple[np.ndarray, np.ndarray]]:
        """Chernoff orders of k runs per side, with the exact log-MGF of the discretised sum.

        Orders are chosen on the coarse law (a heuristic, as in the accountant); the values are
        exact for the discretised law and cached per order, so every order gives a valid bound.
        """
        out = []
        for sign in (1.0, -1.0):
            if sign not in self._coarse:
                self._coarse[sign] = sum((c.count * log_mgf_cells(c, self.h, sign * COARSE_ORDERS, coarse=True)
                                          for c in self.cells), np.zeros_like(COARSE_ORDERS))
            approx = k * self._coarse[sign]
            crit = np.where(np.isfinite(approx), (approx - math.log(eta_side)) / COARSE_ORDERS, np.inf)
            best = int(np.argmin(crit))
            cand = COARSE_ORDERS[max(best - 1, 0): best + 2]
            exact = np.array([self._exact(sign, lam) for lam in cand])
            out.append((cand, k * exact))
        return out

    def _exact(self, sign: float, lam: float) -> float:
        key = (sign, float(lam))
        if key not in self._log_mgf:
            self._log_mgf[key] = float(sum(c.count * log_mgf_cells(c, self.h, np.array([sign * lam]))[0]
                                           for c in self.cells))
        return self._log_mgf[key]


def _snapped_to_atoms(h: float, components) -> float:
    """The largest mesh <= h with every atom on the lattice, where the atoms sit at +-a for one a
    (Laplace, randomized response, pure DP); else h. Atoms on the lattice cost no mean error."""
    magnitudes = np.concatenate([np.abs(loss.atoms().locations) for loss, _ in components])
    if magnitudes.size == 0 or not np.allclose(magnitudes, magnitudes[0], rtol=1e-12, atol=0.0) \
            or not magnitudes[0] > 0:
        return h
    a = float(magnitudes[0])
    return a / math.ceil(a / h)


def _run_law(components, k_ref: int, k_max: int, eps_target: float, delta_error: float) -> _RunLaw:
    """Truncate (for k_max runs) and discretise the run's laws on a mesh sized at k_ref runs."""
    run_total = sum(count for _, count in components)
    tau = 0.25 * delta_error / (2 * k_max * run_total)
    tails = [find_tails(loss, tau) for loss, _ in components]
    for (loss, _), tl in zip(components, tails):
        if not max(abs(tl.lower), abs(tl.upper)) <= MAX_STEP_LOSS:
            raise ValueError(f"one {type(loss).__name__} step's privacy loss exceeds {MAX_STEP_LOSS:.3g}")
    eta0 = 0.5 * delta_error
    h = planned_mesh([(loss, count * k_ref) for loss, count in components], tails, eps_target, eta0)
    for _ in range(4):  # the atoms' offsets (below) are not in the plan: refine while they dominate
        h = _snapped_to_atoms(h, components)
        cells = []
        for (loss, count), tl in zip(components, tails):
            c = discretise(loss, count, h, tl, _MAX_POINTS)
            # no mean shift: every k-fold law on h Z; the atoms' offset joins the mean error (proven bound)
            mean_error = c.mean_error + abs(c.shift) * (1 + 4 * UNIT_ROUNDOFF)
            cells.append(dataclasses.replace(c, shift=0.0, mean_error=mean_error, extra={}))
        law = _RunLaw(cells, h, eps_target)
        scaled = law.scaled(k_ref)
        achieved = coupling(scaled, h, eta0)[0] + sum(c.count * c.mean_error for c in scaled)
        if achieved <= 1.5 * eps_target:
            break
        h *= 0.98 * eps_target / achieved
    return law


class _BracketCurve(DirectionalCurve):
    """The lower side of one curve and the upper side of another (both certified for one direction). The lower
    curve may be given as its builder, called once, on the first query that reads a lower bound: an upper delta
    (``delta_upper``, what ``PrivacyProfile.delta`` and every risk bound read) never builds it."""

    def __init__(self, lower: DirectionalCurve | Callable[[], DirectionalCurve], upper: DirectionalCurve,
                 error_budget: ErrorBudget) -> None:
        self._lower, self.upper, self.error_budget = lower, upper, error_budget
        self.direction = upper.direction
        self._lock = threading.Lock()

    @property
    def is_lower_built(self) -> bool:
        return isinstance(self._lower, DirectionalCurve)

    @property
    def lower(self) -> DirectionalCurve:
        with self._lock:
            if not isinstance(self._lower, DirectionalCurve):
                self._lower = self._lower()
            return self._lower

    def delta_bounds(self, eps):
        e = np.asarray(eps, dtype=float)
        return self.lower.delta_bounds(e)[0], self.upper.delta_bounds(e)[1]

    def delta_upper(self, eps):
        return self.upper.delta_upper(np.asarray(eps, dtype=float))


def _mixture_curve(law: _RunLaw, ends: np.ndarray, probs: np.ndarray, direction: str,
                   delta_error: float, extended: bool = False) -> _BracketCurve:
    """sum_j P_j delta_{k_j} of one direction from one transform (its head) and two spectra, with its proven bracket.

    ``extended``: transforms, powers and phases in ``np.longdouble`` (as the PRV accountant does
    below its double-precision floor): the floating-point terms shrink with its unit roundoff.
    """
    h, cells = law.h, law.cells
    eta0, eta2 = 0.5 * delta_error, 0.25 * delta_error
    buckets = []  # (k, cells of k runs, Chernoff orders, cells of the eps shift, coupling-failure prob.)
    lower, upper = math.inf, -math.inf
    for k in (int(k) for k in ends):
        scaled = law.scaled(k)
        orders = law.orders(k, eta2 / 2)
        width, eta0_used, _ = coupling(scaled, h, eta0)
        shift = width + sum(c.count * c.mean_error for c in scaled)  # GLW eq. (8)'s eps_error for k runs
        cells_shift = int(math.ceil(shift / h))
        while cells_shift * h < shift:
            cells_shift += 1
        a, b = window(scaled, h, eta2, orders)
        lower, upper = min(lower, a - cells_shift * h), max(upper, b + cells_shift * h)
        buckets.append((k, scaled, orders, cells_shift, eta0_used))
    j_a = int(math.floor(lower / h + 1e-9))
    needed = int(math.ceil(upper / h - 1e-9)) - j_a + 1
    n = scipy.fft.next_fast_len(max(needed, 16), real=True)
    if n > _MAX_POINTS:
        raise ValueError(f"the K-mixture window needs {n} FFT points (> {_MAX_POINTS})")
    j_a -= (n - needed) // 2
    t0 = j_a * h
    real = np.longdouble if extended else np.float64
    unit = float(np.finfo(real).eps) / 2
    two_pi = 8 * np.arctan(real(1))  # 2 pi to the working precision
    e_inf = FFT_STAGE_ULPS * unit * math.log2(n)  # one spectrum per law (its head): |P_i| and arg P_i
    folded = [c.pmf if c.pmf.size <= n else np.bincount(np.arange(c.pmf.size) % n, weights=c.pmf, minlength=n)
              for c in cells]
    # Every bucket keeps a prefix of the spectrum (below): the entries up to the last one above the floor for the
    # smallest k. For k >= k_min, k x <= k_min x where x = log(|P| + e) < 0 (and entries with x >= 0 are kept by
    # every k), so no bucket keeps an entry beyond it, and none past `candidates` is above the floor (run_spectra).
    floor_log, k_min = math.log(SPECTRUM_FLOOR), float(np.min(ends))
    spectra, candidates, e_inf = run_spectra([(c.count, q) for c, q in zip(cells, folded)], n, e_inf,
                                             floor_log / k_min, real)
    log_err_run = sum((count * np.log(np.abs(spec[:candidates]).astype(float) + e_inf) for count, spec in spectra),
                      np.zeros(candidates))  # sum_i c_i log(|P_i| + e), summed in the cells' order from 0
    above = np.flatnonzero(k_min * log_err_run > floor_log)
    live = int(above[-1]) + 1 if above.size else 0
    log_abs_run = np.zeros(live, dtype=real)  # log |R|, R = prod_i P_i^{c_i}
    phase_run = np.zeros(live, dtype=real)
    log_err_one = np.zeros(live)  # sum_i log(|P_i| + e)
    for count, spec in spectra:
        head = spec[:live]
        absval = np.abs(head)
        with np.errstate(divide="ignore"):
            log_abs_run += count * np.log(absval)
        phase_run += count * np.angle(head)
        log_err_one += np.log(absval.astype(float) + e_inf)
    del spectra
    run_total = sum(c.count for c in cells)
    m, width = np.arange(live, dtype=np.int64), 0  # width: the entries some bucket keeps (the spectra are 0 beyond)
    held = max(live, 1)  # the mixed spectra's entries from `held` to n/2 are 0 (no bucket keeps them): not stored
    mixed = {side: np.zeros(held, dtype=np.clongdouble if extended else complex) for side in (+1, -1)}
    magnitude, entry_err = np.zeros(held), np.zeros(held)  # sum_j P_j |R|^{k_j}; the entries' error bounds
    dropped = 0.0  # per entry: an entry set to 0 had exact magnitude <= prod (|P^_i| + e)^{k c_i} < floor
    # entries from the last one above the floor on are dropped: a prefix per bucket, shrinking with k
    for (k, scaled, _orders, cells_shift, _e0), p in zip(buckets, probs):
        kept = np.flatnonzero(k * log_err_run[:live] > floor_log)
        size = int(kept[-1]) + 1 if kept.size else 0
        dropped, width = dropped + p * SPECTRUM_FLOOR, max(width, size)
        keep = slice(0, size)
        power = np.exp(k * log_abs_run[keep])
        angle = k * phase_run[keep]
        start = sum(c.count * c.lo for c in scaled) - j_a  # buffer index of the k-fold pmf's first cell
        for side in (+1, -1):  # the pmf moved right (upper side) or left (lower side) by cells_shift cells
            roll = ((m[keep] * ((start + side * cells_shift) % n)) % n).astype(real)
            mixed[side][keep] += real(p) * power * np.exp(1j * (angle - two_pi * roll / n))
        power = power.astype(float)
        magnitude[keep] += p * power
        # the accountant's bounds (prv._compose): spectra, powering, the roll and the scaling by k
        weights = np.exp(k * log_err_run[keep] - log_err_one[keep]) * (1 + e_inf) ** len(cells)
        entry_err[keep] += p * (k * run_total * e_inf * weights + ((2 + math.pi) * k * run_total + 400) * 2 * unit * power)
    entry_err += (len(ends) + 2) * unit * magnitude + dropped  # the probability-weighted sum; dropped entries
    # Parseval: l1 of the time-domain error; each entry not stored has error `dropped` (1e-12: the sums' rounding)
    fp_fft = math.sqrt(2.0 * (float(np.sum(entry_err ** 2)) + (n // 2 + 1 - held) * dropped ** 2) * (1 + 1e-12))
    # Curves read on blocks of B cells, a block's mass at its right (upper side) or left end (lower side): delta~(eps)
    # = sum_t p_t (1 - e^{eps - t})_+ grows with t, so both stay bounds, at an eps slack (B - 1) h <= 2% of the target.
    block = max(1, 1 + int(_BLOCK_SLACK * law.eps_target / h))
    # block sums from the first `width` entries (their l1 error: block_sum_error); long double: the inverse FFT
    direct = not extended and 2 * width < n
    fp_fft += max(block_sum_error(v[:width], n, block) for v in mixed.values()) if direct else \
        FFT_STAGE_ULPS * unit * math.log2(n) * 2.0 * float(max(np.sum(np.abs(v)) for v in mixed.values()))
    # per bucket: truncation (exact tails), coupling failure, wrap-around (Chernoff at both placements)
    weighted = 0.0
    for (_k, scaled, orders, cells_shift, eta0_used), p in zip(buckets, probs):
        eta1 = sum(c.count * c.tail for c in scaled)
        eta2_used = max(tail_bound(scaled, h, t0 - h / 2 - side * cells_shift * h,
                                    t0 + (n - 0.5) * h - side * cells_shift * h, orders) for side in (+1, -1))
        weighted += p * (eta0_used + eta1 + eta2_used)
    fp_pmf = math.fsum(p * sum(c.count * c.pmf_error for c in b[1]) for b, p in zip(buckets, probs))
    # cell masses (hybrid argument), the curve's sums, and the rounding of the pmf to double
    rel_error = max(math.expm1(sum(c.count * math.log1p(c.pmf_rel_error) for c in b[1]) + (3 * n + 19) * UNIT_ROUNDOFF)
                    for b in buckets)
    top = math.fsum(c.count * float(c.loss.support[1]) for c in buckets[-1][1])
    top = max(top, 0.0) + 8 * UNIT_ROUNDOFF * abs(top) + 1e-300 if math.isfinite(top) else math.inf
    largest_shift = max(b[3] for b in buckets) * h + (block - 1) * h
    rel_error = (1 + rel_error) * (1 + block * UNIT_ROUNDOFF) - 1  # the block sums (non-negative terms)

    def side_curve(side: int, pmf: np.ndarray, negative: float) -> PRVCurve:
        """One side's curve. ``fp_fft`` bounds the l1 error of EACH side's ``pmf`` (its cells, or with ``direct``
        its block sums; the entry errors are the same for both spectra, the last term takes the larger); the exact
        pmf is non-negative (clipping at 0 moves towards it), so a side's negative mass is at most that side's
        error, and where it exceeds fp_fft anyway the delta slack takes 4x it (``negative``: this side's, the
        upper's included for the lower side)."""
        fp = fp_fft + fp_pmf
        if negative > fp_fft:
            fp = max(fp, 4 * negative + fp_pmf)
        delta_total = weighted + fp
        budget = ErrorBudget(eps_error=float(largest_shift), delta_error=float(delta_total),
                             min_delta=float(2 * delta_total),
                             details=(("mesh", h), ("points", float(n)), ("block", float(block)),
                                      ("largest_shift", largest_shift), ("delta_fp", fp), ("delta_eta", weighted)))
        np.maximum(pmf, 0.0, out=pmf)
        coarse = pmf if direct else np.concatenate([pmf, np.zeros((-n) % block)]).reshape(-1, block).sum(axis=1)
        start = t0 + (block - 1) * h if side > 0 else t0
        return PRVCurve(direction=direction, t0=start, h=block * h, pmf=coarse, log_finite=0.0, eps_error=0.0,
                        delta_error=delta_total, rel_error=rel_error, error_budget=budget, top=top)

    def inverse(spectrum: np.ndarray) -> np.ndarray:
        return block_sums(spectrum[:width], n, block) if direct else scipy.fft.irfft(spectrum, n).astype(float)
    upper_pmf, lower_spectrum = inverse(mixed[+1]), mixed[-1]
    upper_negative = float(-np.sum(upper_pmf[upper_pmf < 0]))
    upper_curve = side_curve(+1, upper_pmf, upper_negative)
    del mixed, upper_pmf

    def build_lower() -> PRVCurve:  # built on the first lower-bracket query (an upper delta never reads it)
        pmf = inverse(lower_spectrum)
        return side_curve(-1, pmf, max(upper_negative, float(-np.sum(pmf[pmf < 0]))))

    return _BracketCurve(build_lower, upper_curve, upper_curve.error_budget)


def _prv_mixture_curves(base: Mechanism, ends: np.ndarray, probs: np.ndarray, k_ref: int, target_delta: float,
                        rel_eps_error: float) -> list[tuple[str, list[tuple[float, DirectionalCurve]]]]:
    """Per direction, the mixture curve of the buckets from one discretisation of the base run."""
    parts = readable_losses(base)
    if any(losses.remove.inf_mass > 0 or losses.add.inf_mass > 0 for losses, _ in parts):
        raise UnsupportedMechanismError("the one-discretisation K-mixture needs finite privacy losses "
                                        "(no mass at +inf, e.g. no ApproxDP part)")
    run_total = sum(count for _, count in parts)
    if int(ends[-1]) * run_total > MAX_COMPOSITIONS:
        raise ValueError(f"k_max x the run's compositions exceeds the PRV accountant's {MAX_COMPOSITIONS:.3g}")
    symmetric = all(losses.is_symmetric for losses, _ in parts)
    reference = base.compose(k_ref)
    scale, _ = epsilon_scale(reference, [(ls, c * k_ref) for ls, c in parts], symmetric, target_delta)
    eps_target = rel_eps_error * max(scale, 0.1)
    delta_error = target_delta / 1000

    def one_direction(direction: str) -> tuple[str, list[tuple[float, DirectionalCurve]]]:
        components = [(getattr(losses, "remove" if direction == "both" else direction), count)
                      for losses, count in parts]
        law = _run_law(components, k_ref, int(ends[-1]), eps_target, delta_error)
        curve = _mixture_curve(law, ends, probs, direction, delta_error)
        if curve.error_budget.delta_error > _EXTENDED_ABOVE * target_delta:  # the double floor is too high
            curve = _mixture_curve(law, ends, probs, direction, delta_error, extended=True)
        return direction, [(1.0, curve)]

    directions = ("both",) if symmetric else ("remove", "add")
    if len(directions) == 1 or (os.cpu_count() or 1) < 2:
        return [one_direction(d) for d in directions]
    # the two directions are independent and their FFTs and array arithmetic release the GIL: one thread each
    # (the same computation, hence the same curves, in about half the time on two free cores)
    with concurrent.futures.ThreadPoolExecutor(max_workers=len(directions)) as pool:
        return list(pool.map(one_direction, directions))


# ----------------------------------------------------------------------------------------
# The profile
# ----------------------------------------------------------------------------------------


def _bucket_profile(mechanism: Mechanism, accountant: str, options: dict[str, Any]) -> PrivacyProfile:
    """One bucket's profile from the named accountant (the fallback: one build per bucket)."""
    return privacy_profile(mechanism, accountant=accountant, **options)


def _reference_k(ends: np.ndarray, probs: np.ndarray, p_zero: float, target_delta: float) -> int:
    """The bucket end beyond which K's mass is below target_delta: the eps there decides the answer."""
    beyond = 1.0 - p_zero - np.cumsum(probs)
    return int(ends[min(int(np.searchsorted(-beyond, -target_delta)), len(ends) - 1)])


#: The theorem of the K-released bound (any K law independent of the data).
K_MIXTURE = "mixture of k-fold compositions (K released; joint convexity)"


@register_bound(KDistribution, "mixture", K_MIXTURE)
def k_mixture_profile(base: Mechanism, k_dist: KDistribution, *, tail: float = 1e-12, bucket_ratio: float = 1.1,
                      accountant: str = "auto", target_delta: float = 1e-6, shared: bool = True,
                      shared_eps_error: float = _REL_EPS_ERROR, **accountant_options: Any) -> PrivacyProfile:
    """Profile of K runs of ``base`` with everything released (K, every run, adaptive choices).

    ``tail`` bounds P[K > k_max] (added to delta; where it and the rounding of K's cdf reach
    ``target_delta``, a `CertificationError` is raised before any work); every k up to 32 is its own bucket, then
    ``bucket_ratio`` sets the bucket growth. Every bucket's k-fold profile comes from one
    description of the base run (module docstring): the closed form for compositions of
    Gaussian mechanisms (``accountant`` "auto" or "exact"), else one PRV discretisation
    (``accountant`` "auto" or "prv"; its mesh is sized for an eps error of ``shared_eps_error`` x eps near
    ``target_delta``: a larger one is cheaper and looser, its bracket as certified; an accountant option such as
    ``rel_eps_error`` instead builds one profile per bucket).
    ``shared=False``, other accountants, accountant options, or a base the shared
    discretisation cannot read (e.g. an ApproxDP part) build one profile per bucket with
    ``accountant`` (slower; "auto" then answers every delta); the profile's metadata says which
    ("bucket_profiles").
    """
    if not isinstance(base, Mechanism):
        raise TypeError("the K-mixture bound composes the base run: give a Mechanism, not a built profile")
    if not isinstance(k_dist, KDistribution):
        raise TypeError(f"k must be a distribution of K, got {type(k_dist).__name__}")
    ends, probs, tail_mass = _buckets(k_dist, tail, bucket_ratio)
    if not tail_mass < target_delta:
        # every answer's delta carries P[K > k_max] (and the rounding of K's cdf): nothing at or below it
        raise CertificationError(
            f"the K-mixture certificate cannot reach delta={target_delta:g} (target_delta): K's tail beyond k_max={ends[-1]} "
            f"and the rounding of K's probabilities add {tail_mass:.3g} to every delta; use a larger delta")
    p_zero = float(k_dist.pmf(0)) * (1 + _PROBABILITY_MARGIN) if k_dist.min_k == 0 else 0.0
    info = (("buckets", float(len(ends))),)
    source = None
    directions: list[tuple[str, list[tuple[float, DirectionalCurve]]]] = []
    if not shared:
        source = f"{accountant} per bucket (shared=False)"
    elif not accountant_options and accountant in ("auto", "exact") and get_accountant("exact").supports(base) is None:
        gaussian_curves = _gaussian_bucket_curves(base, ends)
        directions, source = [("both", list(zip(probs, gaussian_curves)))], "exact (sqrt(k) mu-GDP per bucket)"
    elif not accountant_options and accountant in ("auto", "prv"):
        try:
            directions = _prv_mixture_curves(base, ends, probs, _reference_k(ends, probs, p_zero, target_delta),
                                             target_delta, shared_eps_error)
            source = "prv (one discretisation, buckets mixed in the frequency domain)"
        except (ValueError, ArithmeticError, UnsupportedMechanismError) as exc:
            if accountant == "prv":
                raise
            source = f"{accountant} per bucket (one discretisation declined: {exc})"
    if not directions:  # one profile per bucket, each the max over its directions
        profiles = [_bucket_profile(base.compose(int(k)), accountant, accountant_options) for k in ends]
        directions = [("both", [(p, _MaxCurve(prof)) for p, prof in zip(probs, profiles)])]
        source = source or f"{accountant} per bucket"
    curves = tuple(KMixtureCurve(d, parts, p_zero, tail_mass, info) for d, parts in directions)
    return PrivacyProfile(curves=curves, accountant=f"k-mixture[{accountant}]", mechanism=base,
                          description=f"K ~ {k_dist!r} adaptive runs, all released (mixture of k-fold compositions)",
                          metadata=(("bound", "mixture of k-fold compositions (K independent of the data)"),
                                    ("k_max", int(ends[-1])), ("buckets", len(ends)), ("bucket_profiles", source)))


class _MaxCurve(DirectionalCurve):
    """A whole profile (max over its directions) as one curve."""

    direction = "both"

    def __init__(self, profile: PrivacyProfile) -> None:
        self.profile = profile
        self.error_budget = profile.error_budget

    def delta_bounds(self, eps):
        return self.profile.delta_bounds(np.asarray(eps, dtype=float))
