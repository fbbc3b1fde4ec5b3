"""Numerical kernels of the CF accountant: blocked Fourier sums with their rounding bounds,
single-threaded BLAS for reproducible sums, and the Chernoff constant C(w) (accounting-cf.md §7)."""

from __future__ import annotations

import math

import numpy as np

from ..threads import single_blas_thread

_EPS = float(np.finfo(float).eps)

_CHUNK = 1 << 21  # elements per temporary (u x nodes, eps x u) array


def _log_c(w: np.ndarray) -> np.ndarray:
    """log C(w), C(w) = sup_{x >= 0} (1 - e^{-x}) e^{-w x} = (w/(1+w))^w / (1+w); C(0) = 1."""
    w = np.asarray(w, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(w > 0, w * (np.log(w) - np.log1p(w)) - np.log1p(w), 0.0)


def _cis(x: np.ndarray, sign: float = 1.0) -> np.ndarray:
    """e^{sign i x} (sign +-1) as cos x + sign i sin x, written straight into a complex array: the same values as
    ``np.exp(sign * 1j * x)`` (each part a correctly rounded-to-1-ulp cos or sin of x; an exact negation), about
    1.5 times faster (no complex exponential of a number whose real part is 0)."""
    out = np.empty(np.shape(x), complex)
    np.cos(x, out=out.real)
    np.sin(x, out=out.imag)
    if sign < 0:
        np.negative(out.imag, out=out.imag)
    return out


def _phase_table(phase_step: float, count: int, loc: np.ndarray) -> np.ndarray:
    """e^{-i k phase_step loc_j} for k < count, shape (loc.size, count), as e^{-i k1 (phase_step K) loc_j} times
    e^{-i k0 phase_step loc_j} (k = k1 K + k0, K ~ sqrt(count)): 2 sqrt(count) complex exponentials per node and
    one complex product per entry. Each factor's phase carries at most 4 roundings of its exact value
    (|k0 phase_step loc_j| + |k1 K phase_step loc_j| = |k phase_step loc_j|), each factor's value 1 ulp per part
    (0.71 eps_mach), and the product sqrt(2) gamma_2 (1.42 eps_mach): `_fourier_sum` counts them."""
    k0 = math.isqrt(max(count - 1, 0)) + 1
    k1 = -(-count // k0)
    low = _cis(np.outer(loc, np.arange(k0) * phase_step), -1.0)
    high = _cis(np.outer(loc, np.arange(k1) * (phase_step * k0)), -1.0)
    return (high[:, :, None] * low[:, None, :]).reshape(loc.size, k1 * k0)[:, :count]


def _fourier_sum(log_a: np.ndarray, loc: np.ndarray, step: float, n: int) -> tuple[np.ndarray, np.ndarray]:
    """S_m = sum_j e^{log_a_j} e^{-i m step loc_j} for m = 0..n-1, and a rounding bound for each.

    Blocked evaluation: m = b B + r with B ~ sqrt(n), so only B inner exponentials per node and the n/B outer
    factors from `_phase_table` (2 (n/B)^(1/2) exponentials and a complex product each) are computed, and the rest
    is a matrix product over node chunks of 1024 (no recurrence, so no error growth along u). Rounding: each
    term's phase is a sum of three products of at most four rounded factors (error <= 2 eps_mach |u loc_j|); its
    value carries three exponentials (0.71 eps_mach each), two complex products (1.42 each) and the product by a_j
    (0.5), 5.5 eps_mach, within the 8 charged (as before: one exponential fewer and no outer product, 3.4); and the
    sum is accumulated in chunks (any order inside a chunk): (1024 + chunks + 8) eps_mach sum a_j.
    """
    a = np.exp(log_a)
    chunk = 1024
    chunks = int(math.ceil(loc.size / chunk))
    if n == 1:  # u = 0 only (the tilted mass): a plain sum, pairwise (error below the bound used)
        total_rounding = _EPS * (chunk + chunks + 8) * float(np.sum(a))
        return np.array([np.sum(a)], dtype=complex), np.array([total_rounding])
    block = max(1, int(math.ceil(math.sqrt(n))))
    blocks = int(math.ceil(n / block))
    rows = np.arange(block) * step
    out = np.zeros((block, blocks), complex)
    with single_blas_thread():
        for s in range(0, loc.size, chunk):
            lc = loc[s:s + chunk]
            inner = _cis(np.outer(rows, lc), -1.0)
            outer = _phase_table(step * block, blocks, lc)
            outer *= a[s:s + chunk, None]
            out += inner @ outer
    values = out.T.reshape(-1)[:n]
    u = step * np.arange(n)
    rounding = _EPS * ((chunk + chunks + 8) * float(np.sum(a)) + 2 * u * float(np.sum(a * np.abs(loc))))
    return values, rounding


def _oscillatory_sum(weighted: np.ndarray, step: float, eps: np.ndarray) -> tuple[np.ndarray, int]:
    """Re sum_n W_n e^{i n step eps} for each eps, and the accumulation length of each sum.

    Blocked like `_fourier_sum` (n = b B + r): 2 sqrt(N) exponentials per eps and one
    matrix product; the sum over r (B terms) and over b (N/B terms) is accumulated in any
    order, so its rounding is bounded by (B + N/B) eps_mach sum |W_n|.
    """
    n = weighted.size
    block = max(1, int(math.ceil(math.sqrt(n))))
    blocks = int(math.ceil(n / block))
    padded = np.zeros(block * blocks, complex)
    padded[:n] = weighted
    matrix = padded.reshape(blocks, block)
    rows = np.arange(block) * step
    cols = np.arange(blocks) * (step * block)
    out = np.empty(eps.shape)
    width = max(1, _CHUNK // (block + blocks))
    with single_blas_thread():
        for s in range(0, eps.size, width):
            e = eps[s:s + width]
            inner = matrix @ _cis(np.outer(rows, e))
            out[s:s + width] = np.real(np.sum(_cis(np.outer(cols, e)) * inner, axis=0))
    return out, block + blocks


def _exp_ratio(value: float, log_ref: float) -> float:
    """value / e^{log_ref} without overflow (value >= 0)."""
    return math.exp(math.log(value) - log_ref) if value > 0 else 0.0


def _log_expm1_neg(x: np.ndarray | float) -> np.ndarray:
    """log(1 - e^{-x}) for x > 0."""
    x = np.asarray(x, dtype=float)
    with np.errstate(divide="ignore"):
        return np.where(x > math.log(2.0), np.log1p(-np.exp(-x)), np.log(-np.expm1(-x)))
