"""Block sums of an inverse real FFT whose spectrum is a short prefix, without the inverse FFT; where that prefix ends.

The K-mixture (`privselect.selection.bounds.mixture`) mixes its buckets in the frequency domain on n points (millions:
the window of the largest k at the mesh of the reference k) but keeps only the first K entries (hundreds: the
rest fall below the spectrum floor) and reads the result on blocks of B cells. Its curve needs only the block sums

    y_b = sum_{t = bB}^{bB + L_b - 1} x_t,   x = irfft(X, n),   L_b = min(B, n - bB),

which are, exactly, ``y_b = (1/n) Re sum_{k < K} c_k X_k D_k(L_b) w^(k b B)`` with ``w = e^(2 pi i / n)``,
``c_0 = 1`` (irfft reads Re X_0), ``c_k = 2`` for 0 < k < n/2 and ``D_k(L) = sum_{j < L} w^(k j)``. With
``b = b1 S + b0`` this is one real matrix product of (n/B)^(1/2) x 2K by 2K x (n/B)^(1/2): a few ms where the inverse
FFT of n points takes about half a second. Every power of w is formed from its exact exponent (k b B mod n, in
integers).

Rounding (`block_sum_error`), per block, relative to ``M = (1/n) sum_k c_k |X_k| L_b`` (each term's size: |D_k| <= L_b,
|w| = 1): a power of w is within 48u of its value (the angle 2 pi m / n carries 3 roundings, <= 19u absolute, then
cos and sin, <= 4 ulp each); D_k within (L_b + 48) u L_b (a sum of L_b such terms); the two complex products
within 2 sqrt(2) gamma_2 (< 6u); the real dot product of length 2K within gamma_2K of the sum of its terms' sizes
(any summation order), which is at most M n (Cauchy-Schwarz on each Re(a) Re(t) - Im(a) Im(t)); the scaling by 1/n
within 2u. In all, (L_b + 2K + 160) u M to first order; `block_sum_error` charges twice (L_b + 2K + 200) u per
block, which also covers the second-order products, and sums over the blocks (L_b <= B).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ...accounting.threads import one_blas_thread

__all__ = ["block_sums", "block_sum_error", "spectrum_prefix"]

_U = 2.0**-53
_TWO_PI = 2.0 * math.pi


def _powers(exponents: np.ndarray, n: int) -> np.ndarray:
    """w^m for integer m (any shape), from m mod n."""
    return np.exp(1j * (_TWO_PI * (exponents % n) / n))


def _weights(spectrum: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The frequencies k < K and c_k X_k (Re X_0 at k = 0)."""
    ks = np.arange(spectrum.size, dtype=np.int64)
    if spectrum.size and not 2 * (spectrum.size - 1) < n:
        raise ValueError(f"the spectrum's {spectrum.size} entries reach n/2 = {n / 2:g} (the Nyquist entry)")
    x = np.array(spectrum, dtype=complex)
    if x.size:
        x[0] = x[0].real
    return ks, np.where(ks == 0, 1.0, 2.0) * x


def _kernel(ks: np.ndarray, length: int, n: int) -> np.ndarray:
    """D_k(length) = sum_{j < length} w^(k j)."""
    return _powers(ks[:, None] * np.arange(length, dtype=np.int64)[None, :], n).sum(axis=1)


@one_blas_thread  # one small product: BLAS threads would only synchronise (accounting.threads)
def block_sums(spectrum: np.ndarray, n: int, block: int) -> np.ndarray:
    """The sums of ``scipy.fft.irfft(X, n)`` over blocks of ``block`` cells (the last one may be shorter: the cells
    past n count 0), where X is ``spectrum`` followed by zeros (``spectrum.size`` <= n/2)."""
    if n < 1 or block < 1:
        raise ValueError(f"n and block must be positive, got {n} and {block}")
    ks, weighted = _weights(spectrum, n)
    count = -(-n // block)
    if not ks.size:
        return np.zeros(count)
    a = weighted * _kernel(ks, block, n)
    width = math.isqrt(count - 1) + 1  # b = b1 width + b0
    rows = -(-count // width)
    outer = _powers(ks[None, :] * ((np.arange(rows, dtype=np.int64) * width * block) % n)[:, None], n) * a[None, :]
    inner = _powers(ks[:, None] * ((np.arange(width, dtype=np.int64) * block) % n)[None, :], n)
    y = (np.concatenate([outer.real, -outer.imag], axis=1) @ np.concatenate([inner.real, inner.imag], axis=0)) / n
    y = y.reshape(-1)[:count]
    last = n - (count - 1) * block
    if last < block:  # the last block is short: its own kernel
        tail = weighted * _kernel(ks, last, n) * _powers(ks * (((count - 1) * block) % n), n)
        y[-1] = float(np.sum(tail).real) / n
    return y


def block_sum_error(spectrum: np.ndarray, n: int, block: int) -> float:
    """A bound on the l1 distance between ``block_sums(spectrum, n, block)`` and the exact block sums of the exact
    inverse DFT of the same spectrum (module docstring)."""
    ks, weighted = _weights(spectrum, n)
    count = -(-n // block)
    per_block = float(np.sum(np.abs(weighted))) * block / n * (1 + 1e-9)
    return count * per_block * 2 * (block + 2 * ks.size + 200) * _U


def spectrum_prefix(spectra: Sequence[tuple[int, np.ndarray]], e: float, level: float) -> int:
    """A length past which no entry m has ``sum_i c_i log(|P_i[m]| + e) > level`` (``spectra``: pairs (c_i, P_i),
    level < 0; the sum as the K-mixture computes it, np.log of np.abs), from squared magnitudes only (no hypot, no
    log on millions of entries).

    Such an entry has, for each i, c_i log(|P_i| + e) > level - sum_{j != i} c_j log(max_m |P_j[m]| + e), i.e.
    |P_i| > t_i - e with t_i the exponential of that over c_i. Every quantity here is given a relative margin of
    1e-6 (the rounding of the sum, of the products by c_i and of the squares is below 1e-12 relative), so the
    entries kept are a superset of those above the level."""
    squares = [spec.real.astype(float) ** 2 + spec.imag.astype(float) ** 2 for _, spec in spectra]
    if not squares or not squares[0].size:
        return 0
    caps = [count * math.log(math.sqrt(float(np.max(sq))) * (1 + 1e-6) + e) for (count, _), sq in zip(spectra, squares)]
    keep = np.ones(squares[0].size, dtype=bool)
    for i, ((count, _), sq) in enumerate(zip(spectra, squares)):
        rest = math.fsum(caps) - caps[i]
        t = math.exp((level - abs(level) * 1e-6 - rest) / count) * (1 - 1e-6) - e
        if t > 0:
            keep &= sq > t * t * (1 - 1e-6)
    found = np.flatnonzero(keep)
    return int(found[-1]) + 1 if found.size else 0
