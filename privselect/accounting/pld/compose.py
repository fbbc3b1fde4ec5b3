"""Composition of discretised laws by one FFT: circular convolution on a window sized by a Chernoff bound,
in long double, with the proven floating-point and wrap-around terms (Koskela, Jälkö, Honkela 2020, Sec. 5;
the floating-point bound follows Higham 2002, Sec. 24.1, as in the PRV member).

In exact arithmetic the circular convolution c~ on n points equals the true composed law folded modulo n h,
so c~_j >= c_j on the window: every mass that wraps either comes from above the window (its weight 1 in
delta is charged separately by the Chernoff bound ``above``) or from below (a smaller loss, whose weight is
smaller). Hence delta_upper = sum_j c~_j w_j(eps) + above + fp is an upper bound, and
delta_lower = sum_j c~_j w_j(eps) - above - below - fp a lower bound, for the laws composed.

The circular convolution is computed by one long-double FFT per law (`_compose_long`, error ~ k u_long) where
that error is small (`LONG_FIRST_ERROR`), else by `fast.compose_fast` (float64 FFTs; the low frequencies, where
powering amplifies the FFT's error k-fold, recomputed in long double relative to each law's mode, so the error
term no longer grows like k u) wherever its direct sums fit their budget, else again by the long-double FFT.
Asked for long double (few-step laws on large windows), a many-fold sum takes that path's precise variant (far
parts and the inverse in long double). Laws of a few points that are nearly one atom (whose spectra never decay, so
the float64 path declines them) are first offered to `sparse.compose_sparse`, their truncated binomial expansions.
Each gives a proven l1 bound ``fp``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import scipy.fft

from ..budget import require_memory
from .fast import compose_fast
from .sparse import compose_sparse

#: Per radix stage relative error of a pocketfft butterfly, in units of the unit roundoff (as the PRV member).
FFT_STAGE_ULPS = 10.0
#: Unit roundoff of the x87 long double (pocketfft computes in it natively).
LONG_UNIT = float(np.finfo(np.longdouble).eps) / 2
#: Where the long-double FFT's k-fold error (k u_long log n per unit of spectrum) is below this, it composes
#: (one FFT per law; its floor below the float64 path's ~1e-13): 200 subsampled Laplace steps in 0.1 s instead
#: of 0.9 s of long-double direct sums. Above it (DP-SGD's 14,063 steps: 1e-13) the float64 path answers.
LONG_FIRST_ERROR = 1e-14
#: With ``long_double``, above this k-fold error the precise float64 path (`fast.compose_fast`, ``precise=True``:
#: its low frequencies from the modes, a long-double inverse) answers: its bound does not grow like k u_long.
PRECISE_FIRST_ERROR = 1e-16
#: Chernoff orders searched for the window and its tail masses (any order gives a valid bound).
ORDERS = np.geomspace(0.05, 400.0, 40)


@dataclass(frozen=True)
class Composed:
    """A composed law on l = (j0 + j) h, j = 0..n-1 (long double), with its additive error terms."""

    j0: int
    pmf: np.ndarray
    inf_mass: float
    above: float
    below: float
    fp: float


#: Points per block of `log_mgf` (within a block e^{lam l} = e^{lam l_block} e^{lam h t}, t < `_BLOCK`).
_BLOCK = 64


def log_mgf(masses: np.ndarray, i0: int, h: float, orders: np.ndarray) -> np.ndarray:
    """log sum_j w_j e^{lam l_j} at each order lam (masses >= 0), rounded up: the masses of each block of
    `_BLOCK` grid points are weighted by e^{lam h t} in one matrix product (non-negative terms: relative error
    <= (_BLOCK + 4) u), the blocks combined by a log-sum-exp; a relative 1e-12 covers both and the exponentials."""
    nz = np.flatnonzero(masses)
    if not nz.size:
        return np.full(orders.size, -np.inf)
    first = int(nz[0])
    w = masses[first:int(nz[-1]) + 1].astype(float)
    blocks = -(-w.size // _BLOCK)
    w = np.concatenate([w, np.zeros(blocks * _BLOCK - w.size)]).reshape(blocks, _BLOCK)
    inner = w @ np.exp(h * np.outer(np.arange(_BLOCK), orders))  # (blocks, orders), each >= 0
    starts = (i0 + first + _BLOCK * np.arange(blocks)) * h
    with np.errstate(divide="ignore"):
        e = np.log(inner) + starts[:, None] * orders[None, :]
    top = np.max(e, axis=0)
    out = top + np.log(np.sum(np.exp(e - top[None, :]), axis=0))
    return out + 1e-12 * (1 + np.abs(out))


def part_log_mgfs(parts: Sequence[tuple[np.ndarray, int, int]], h: float) -> tuple[np.ndarray, np.ndarray]:
    """sum over parts of count x log-MGF at +ORDERS and at -ORDERS (one `log_mgf` pass per part)."""
    both = np.concatenate([ORDERS, -ORDERS])
    total = sum(k * log_mgf(m, i0, h, both) for m, i0, k in parts)
    total = np.asarray(total, dtype=float)
    return total[:ORDERS.size], total[ORDERS.size:]


def window(mgfs: tuple[np.ndarray, np.ndarray], eta: float) -> tuple[float, float]:
    """[a, b] with composed mass above b and below a each at most eta (Chernoff, every order tried)."""
    up, down = mgfs
    with np.errstate(invalid="ignore"):
        b = (up - math.log(eta)) / ORDERS
        a = (math.log(eta) - down) / ORDERS
    return float(np.nanmax(a)), float(np.nanmin(b))


def tail_masses(mgfs: tuple[np.ndarray, np.ndarray], a: float, b: float) -> tuple[float, float]:
    """Chernoff bounds on the composed mass above b and below a."""
    up, down = mgfs
    with np.errstate(invalid="ignore", over="ignore"):
        above = float(np.exp(np.nanmin(up - ORDERS * b)))
        below = float(np.exp(np.nanmin(down + ORDERS * a)))
    return min(above * (1 + 1e-9), 1.0), min(below * (1 + 1e-9), 1.0)


def compose_bytes(n: int, components: int) -> float:
    """Peak bytes of `compose` on n points: per component a long-double input and half spectrum, the
    composed spectrum, its log-modulus and error arrays, the output (x2 for temporaries)."""
    return 2.0 * n * (16 * (1 + components) + 16 * 4 + 8 * 3)


def compose(parts: Sequence[tuple[np.ndarray, int, int]], infs: Sequence[float], h: float, a: float, b: float,
            max_points: int, max_memory: float, mgfs: tuple[np.ndarray, np.ndarray],
            trig: dict | None = None, long_double: bool = False) -> Composed:
    """Circular convolution of ``parts`` = (masses, i0, count) on a window covering [a, b] (module docstring);
    ``trig`` keeps the float64 path's long-double angles for the next call on the same window; ``long_double``
    takes the long-double FFT for few-fold sums and the precise float64 path for many-fold ones (their bounds beat
    the float64 path's on large windows; a t-fold heavy-tailed sum's, 1e-13 by the long-double FFT, is 5e-15 by the
    precise path), whatever the count."""
    j_a = int(math.floor(a / h))
    needed = int(math.ceil(b / h)) - j_a + 1
    n = scipy.fft.next_fast_len(max(needed, 16), real=True)
    if n > max_points:
        from ...errors import CertificationError

        raise CertificationError(f"the PLD accountant declines: the composed window needs {n} points "
                                 f"(> max_points={max_points}); use a coarser value_discretization_interval")
    require_memory("PLD", f"the composition on {n} points", compose_bytes(n, len(parts)), max_memory)
    offset = sum(k * i0 for _, i0, k in parts)
    shift = j_a - offset  # output index j holds the loss (offset + shift + j) h after rolling
    k_total = sum(k for _, _, k in parts)
    long_error = FFT_STAGE_ULPS * LONG_UNIT * math.log2(n) * k_total
    fast = compose_sparse(parts, n)  # laws of a few points, nearly one atom: their binomial expansions
    if fast is None and long_double:  # the precise path where the long-double FFT's k-fold error would dominate
        fast = compose_fast(parts, n, trig, precise=True) if long_error > PRECISE_FIRST_ERROR else None
    elif fast is None and long_error > LONG_FIRST_ERROR:
        fast = compose_fast(parts, n, trig)
    pmf, fp = fast if fast is not None else _compose_long(parts, n)
    pmf = np.roll(pmf, -(shift % n))
    negative = float(-np.sum(pmf[pmf < 0]))
    np.maximum(pmf, 0, out=pmf)  # moves every entry towards the (non-negative) exact value
    inf_mass = -math.expm1(sum(k * math.log1p(-w) for (_, _, k), w in zip(parts, infs))) if any(infs) else 0.0
    above, below = tail_masses(mgfs, (j_a - 0.5) * h, (j_a + n - 0.5) * h)
    return Composed(j0=j_a, pmf=pmf, inf_mass=inf_mass, above=above, below=below, fp=max(fp, negative))


def _compose_long(parts: Sequence[tuple[np.ndarray, int, int]], n: int) -> tuple[np.ndarray, float]:
    """The circular convolution by one long-double FFT per law (pmf before the roll, its l1 error bound)."""
    log2n = math.log2(n)
    e_inf = FFT_STAGE_ULPS * LONG_UNIT * log2n  # componentwise forward-FFT error per unit of input mass
    log_abs = np.zeros(n // 2 + 1, dtype=np.longdouble)
    log_abs_err = np.zeros(n // 2 + 1)
    phase = np.zeros(n // 2 + 1, dtype=np.longdouble)
    k_err = 0.0
    for masses, _, k in parts:
        q = masses.astype(np.longdouble)
        if q.size > n:
            q = np.bincount(np.arange(q.size) % n, weights=masses, minlength=n).astype(np.longdouble)
        mass = float(np.sum(q))
        spec = scipy.fft.rfft(q, n)
        absval = np.abs(spec)
        with np.errstate(divide="ignore"):
            log_abs += k * np.log(absval)
            log_abs_err += (k - 1) * np.log(absval.astype(float) + e_inf * mass)
        phase += k * np.angle(spec)
        k_err += k * e_inf * mass
    keep = log_abs > math.log(1e-60)
    composed = np.zeros(n // 2 + 1, dtype=np.clongdouble)
    composed[keep] = np.exp(log_abs[keep] + 1j * phase[keep])
    pmf = scipy.fft.irfft(composed, n)
    # |prod P_i^k_i - prod P^_i^k_i| <= sum_i k_i |dP_i| prod_l (|P^_l| + e)^(k_l - 1)  (mean value theorem)
    k_total = sum(k for _, _, k in parts)
    spec_err = k_err * np.exp(log_abs_err)
    power_err = ((2 + math.pi) * k_total + 200) * 2 * LONG_UNIT * np.exp(log_abs.astype(float)) * keep
    dropped = np.where(keep, 0.0, np.exp(log_abs.astype(float)))
    per_entry = spec_err + power_err + dropped
    fp = math.sqrt(2.0 * float(np.sum(per_entry ** 2)))  # ||error of the output||_1 <= ||spectrum error||_2
    fp += FFT_STAGE_ULPS * LONG_UNIT * log2n * 2.0 * float(np.sum(np.abs(composed)))
    return pmf, fp
