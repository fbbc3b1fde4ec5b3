"""The first entries of a long real DFT of a short pmf, and a proof that no later entry is above the spectrum floor.

The K-mixture (`privselect.selection.bounds.mixture`) transforms each run law's pmf q (s cells, about 1e5) on n points
(millions: the window of the largest k) but keeps only the entries m < K where the smallest bucket's power
``prod_i |P_i[m]|^(k_min c_i)`` can exceed the spectrum floor (hundreds). `run_spectra` gives those entries without the
n-point FFT:

1. Where they end. ``P(theta) = sum_t q_t e^(-i theta t)`` is the law's characteristic function on the cells, and
   ``P[m] = P(2 pi m / n)``. For any centre c, ``|d/dtheta (e^(i theta c) P(theta))| <= L = sum_t q_t |t - c|``, so
   ``|P|`` is L-Lipschitz. One FFT on N' << n points gives P at ``theta_j = 2 pi j / N'`` (within e', the FFT's
   componentwise bound ``FFT_STAGE_ULPS u log2 N'``, taken twice); on the cell ``[theta_j, theta_j+1]``
   ``|P| <= max(|P~_j|, |P~_j+1|) + e' + pi L / N'``. Cells where ``sum_i c_i log`` of that bound is below the level
   (with a relative margin of 1e-6 for the logs and sums) are proven to hold no entry above it; every m >= K, the
   first m at or past the start of the first cell after the last unproven one, has ``theta_m`` in a proven cell
   (m <= n/2, theta_m <= pi); where the last cell (up to pi) is unproven, K = n/2 + 1 (every entry).
2. The entries m < K, directly, with t = t1 T + t0 (T ~ sqrt(s)): ``P[m] = sum_t0 w^-(m t0) Y[m, t0]``,
   ``Y[m, t0] = sum_t1 w^-(m t1 T) q_(t1 T + t0)``, ``w = e^(2 pi i / n)``, every power formed from its exact integer
   exponent mod n (within 48u, as in `block_sums`): 2 K sqrt(s) powers and real matrix products, where the FFT
   costs n log n. Error per entry, relative to ``S = sum_t q_t`` (each column's share ``S_t0``): Y's powers within
   48u; Y's real and imaginary parts as real products over chunks of C = 64 terms, in any order (``gamma_C`` each,
   ``sqrt(2) gamma_C < 1.42 C u`` together), summed over the chunks by a balanced tree of p1 levels
   (``sqrt(2) gamma_p1``): Y within ``(48 + 1.42 (C + p1)) u S_t0`` to first order; each term ``w^-(m t0) Y`` within
   another 48u and a complex product's ``sqrt(2) gamma_2 < 3u``; the sum over t0 by a balanced tree of p2 levels
   (``gamma_p2``). In all ``(99 + 1.42 (C + p1) + p2) u S`` to first order; `direct_head` charges
   ``(100 + 1.5 C + 2 p1 + p2) u S (1 + 1e-6)`` (about 208u for the README's 1.2e5 cells, below the 8.1e6-point
   FFT's 230u), and `run_spectra` returns the larger of that and the FFT's own bound (the K-mixture's ``e``).

Where that would not pay (a long-double transform, a pmf longer than n / 8, N' > n / 4, or K above 4096) the
n-point FFT runs as before, with `block_sums.spectrum_prefix` for the end.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import scipy.fft

from ...accounting.prv.interface import FFT_STAGE_ULPS
from ...accounting.threads import single_blas_thread
from .block_sums import spectrum_prefix

__all__ = ["run_spectra"]

_U = 2.0**-53
_TWO_PI = 2.0 * math.pi
#: Terms per real dot product of the direct sum.
_CHUNK = 64
#: Largest head K, and head x pmf length (memory: about 0.5 bytes each), computed directly.
_MAX_HEAD = 4096
_MAX_WORK = 1 << 27


def _inverse_powers(exponents: np.ndarray, n: int) -> np.ndarray:
    """w^-m for integer m (any shape), from m mod n: conj(cos a + i sin a), a = 2 pi (m mod n) / n."""
    angle = _TWO_PI * (exponents % n) / n
    out = np.empty(angle.shape, complex)
    np.cos(angle, out=out.real)
    np.sin(angle, out=out.imag)
    np.negative(out.imag, out=out.imag)
    return out


def _pairwise(x: np.ndarray) -> tuple[np.ndarray, int]:
    """The sum over axis 0 by a balanced tree (zeros pad odd levels: exact), and its number of levels."""
    levels = 0
    while x.shape[0] > 1:
        if x.shape[0] % 2:
            x = np.concatenate([x, np.zeros_like(x[:1])])
        x = x[0::2] + x[1::2]
        levels += 1
    return x[0], levels


def _tree_sum(items: list[np.ndarray]) -> tuple[np.ndarray, int]:
    """The sum of equal-shape arrays by a balanced tree (an odd one out waits, unrounded, for the next level), and
    its number of levels: every item goes through at most that many roundings."""
    levels = 0
    while len(items) > 1:
        paired = [np.add(a, b, out=a) for a, b in zip(items[0::2], items[1::2])]
        items = paired + items[len(paired) * 2:]
        levels += 1
    return items[0], levels


def direct_head(q: np.ndarray, n: int, size: int) -> tuple[np.ndarray, float]:
    """The entries m < ``size`` of ``scipy.fft.rfft(q, n)`` (q real, q.size <= n), summed directly, and a bound on
    each entry's error (module docstring, step 2): with t = t1 T + t0 (T ~ sqrt(q.size)),
    ``P[m] = sum_t0 w^-(m t0) Y[m, t0]``, ``Y[m, t0] = sum_t1 w^-(m t1 T) q_(t1 T + t0)``."""
    span = max(1, math.isqrt(q.size))
    rows = -(-q.size // span)
    rows += (-rows) % _CHUNK
    padded = np.zeros(rows * span)
    padded[:q.size] = q
    grid = padded.reshape(rows, span)  # grid[t1, t0] = q[t1 T + t0]
    m = np.arange(size, dtype=np.int64)
    outer = _inverse_powers(m[:, None] * ((np.arange(rows, dtype=np.int64) * span) % n)[None, :], n)
    stacked = np.concatenate([outer.real, outer.imag])  # exact copies: one real product per part
    with single_blas_thread():  # small products: BLAS threads would only synchronise
        partial, levels_y = _tree_sum([stacked[:, c:c + _CHUNK] @ grid[c:c + _CHUNK] for c in range(0, rows, _CHUNK)])
    y = np.empty((size, span), complex)
    y.real, y.imag = partial[:size], partial[size:]
    terms = _inverse_powers(m[:, None] * np.arange(span, dtype=np.int64)[None, :], n) * y
    total, levels_t = _pairwise(np.ascontiguousarray(terms.T))
    bound = (100 + 1.5 * _CHUNK + 2 * levels_y + levels_t) * _U * float(np.sum(np.abs(q))) * (1 + 1e-6)
    return total, bound


def _lipschitz(q: np.ndarray) -> float:
    """An upper bound on sum_t q_t |t - c| for c the rounded mean cell (rounding covered by 1e-6 relative)."""
    t = np.arange(q.size, dtype=float)
    mass = float(np.sum(q))
    c = float(round(float(np.sum(t * q)) / mass)) if mass > 0 else 0.0
    return float(np.sum(np.abs(q) * np.abs(t - c))) * (1 + 1e-6)


def head_length(laws: Sequence[tuple[int, np.ndarray]], n: int, level: float) -> int | None:
    """A length K such that every entry K <= m <= n/2 of the n-point spectra has sum_i c_i log |P_i[m]| <= level
    (``laws``: pairs (c_i, q_i), level < 0; module docstring, step 1); None where the coarse grid would not be
    much smaller than n."""
    lips = [_lipschitz(q) for _, q in laws]
    # the cells' Lipschitz slack pi L / N' costs about c L pi / (N' |P|) of the log sum near the end, where
    # |P| ~ e^(level / sum c): N' keeps that below 1/8 of |level| (a choice of cost, not of soundness)
    at_end = math.exp(level / sum(c for c, _ in laws))
    if not at_end > 0:
        return None
    want = max(float(max(q.size for _, q in laws)), 64.0,
               8 * math.pi * sum(c * lip for (c, _), lip in zip(laws, lips)) / (abs(level) * at_end))
    if not 4 * want <= n:
        return None
    coarse = 2 * scipy.fft.next_fast_len(-(-math.ceil(want) // 2), real=True)  # even: theta_{N'/2} = pi
    if 4 * coarse > n:
        return None
    total = np.zeros(coarse // 2)
    for (count, q), lip in zip(laws, lips):
        mags = np.abs(scipy.fft.rfft(q, coarse)) * (1 + 4 * _U)
        slack = 2 * FFT_STAGE_ULPS * _U * math.log2(coarse) * float(np.sum(np.abs(q))) \
            + math.pi * lip / coarse * (1 + 1e-6)
        cell = np.maximum(mags[:-1], mags[1:]) + slack
        with np.errstate(divide="ignore"):
            total += count * np.log(cell)
    unsafe = np.flatnonzero(~(total <= level - abs(level) * 1e-6))
    first_safe = int(unsafe[-1]) + 1 if unsafe.size else 0
    if first_safe >= total.size:  # the last cell (up to pi) is not proven: every entry may be above the level
        return n // 2 + 1
    return min(-(-first_safe * n // coarse), n // 2 + 1)  # theta_m >= theta_first_safe: a proven cell


def run_spectra(laws: Sequence[tuple[int, np.ndarray]], n: int, e_fft: float, level: float,
                real: type = np.float64) -> tuple[list[tuple[int, np.ndarray]], int, float]:
    """Per law (c_i, q_i), c_i and the first entries of ``rfft(q_i, n)`` (at least the first K); K, past which no
    entry has ``sum_i c_i log(|P~_i| + e) > level`` nor, for the exact spectra, ``sum_i c_i log |P_i| > level``;
    and e, a bound on each returned entry's error (||q_i||_1 <= 1; ``e_fft`` that of the n-point FFT)."""
    size = None
    if real is np.float64 and all(q.size <= n // 8 for _, q in laws):
        size = head_length(laws, n, level)
    if size is None or size > _MAX_HEAD or size * max(q.size for _, q in laws) > _MAX_WORK:
        spectra = [(count, scipy.fft.rfft(q.astype(real), n)) for count, q in laws]
        return spectra, spectrum_prefix(spectra, e_fft, level), e_fft
    heads = [(count, direct_head(np.asarray(q, dtype=float), n, size)) for count, q in laws]
    return [(count, head) for count, (head, _) in heads], size, max([e_fft] + [bound for _, (_, bound) in heads])
