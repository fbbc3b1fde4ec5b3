"""Log-space series for the RDP curves: signed log-sum-exp, log binomials, the binomial remainder,
and the Cohen-Villegas-Zagier acceleration of alternating tails with its certified error."""

from __future__ import annotations

import math

import numpy as np
from scipy import special

# Terms in each accelerated alternating tail (Cohen, Rodriguez Villegas, Zagier 2000):
# certified relative error 2 / (3 + sqrt 8)^24 < 1e-18.
_CVZ_TERMS = 24
# Rows per block when summing long binomial series (bounds memory for huge orders).
_BLOCK = 2048


def _signed_logsumexp(logs: np.ndarray, signs: np.ndarray, axis: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(log|S|, sign S) of S = sum(signs * exp(logs)) along ``axis``; -inf terms are ignored."""
    m = np.max(logs, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(under="ignore", invalid="ignore"):
        terms = np.where(np.isneginf(logs), 0.0, signs * np.exp(logs - m))
    total = np.sum(terms, axis=axis)
    with np.errstate(divide="ignore"):
        out = np.log(np.abs(total)) + np.squeeze(m, axis=axis)
    return out, np.sign(total)


def _log_abs_binom(alpha: np.ndarray, k: np.ndarray) -> np.ndarray:
    """log |C(alpha, k)| for real alpha and integer k >= 0 (-inf where C = 0)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return special.gammaln(alpha + 1) - special.gammaln(k + 1) - special.gammaln(alpha - k + 1)


def _log_expm1(x: np.ndarray) -> np.ndarray:
    """log(e^x - 1) for x > 0."""
    x = np.asarray(x, dtype=float)
    with np.errstate(divide="ignore", over="ignore"):
        return np.where(x > 1.0, x + np.log1p(-np.exp(-np.maximum(x, 1.0))), np.log(np.expm1(np.minimum(x, 1.0))))


def _log_phi(x: np.ndarray) -> np.ndarray:
    """log(e^x - 1 - x) for real x (the argument of the log is >= 0), without cancellation near 0."""
    x = np.asarray(x, dtype=float)
    out = np.empty_like(x)
    small = np.abs(x) < 0.5
    xs = x[small]
    # e^x - 1 - x = x^2 (1/2 + x/6 + x^2/24 + ...); 20 terms reach 0.5^20/22! << 1e-16.
    series = np.zeros_like(xs)
    coef = 0.5
    power = np.ones_like(xs)
    for j in range(2, 22):
        series += coef * power
        coef /= j + 1
        power = power * xs
    with np.errstate(divide="ignore"):
        out[small] = 2 * np.log(np.abs(xs)) + np.log(series)
    xl = x[~small]
    big = xl > 30.0
    with np.errstate(over="ignore"):
        out[~small] = np.where(
            big,
            xl + np.log1p(-(1 + xl) * np.exp(-np.where(big, xl, 30.0))),
            np.log(np.expm1(np.minimum(xl, 30.0)) - xl),
        )
    return out


def _log_binomial_remainder(s: np.ndarray | float, log1p_s: np.ndarray | float, alpha: np.ndarray | float) -> np.ndarray:
    """log((1+s)^alpha - 1 - alpha s) for s > -1, alpha > 1 (the value is >= 0).

    ``log1p_s`` must be log(1+s) computed accurately by the caller (s may be within
    rounding of -1). Small |s| alpha: the binomial series s^2 sum_{j>=2} C(alpha,j) s^{j-2};
    otherwise expm1(alpha log(1+s)) - alpha s, in log space when it is large.
    """
    s, log1p_s, alpha = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in (s, log1p_s, alpha)))
    out = np.empty(s.shape)
    with np.errstate(over="ignore"):
        small = np.abs(s) * np.maximum(alpha, 1.0) <= 0.05
    ss, aa = s[small], alpha[small]
    total = np.zeros_like(ss)
    coef = aa * (aa - 1) / 2  # C(alpha, 2)
    power = np.ones_like(ss)
    for j in range(2, 34):  # |term ratio| = |alpha - j| |s| / (j + 1) <= 0.05: 32 terms suffice
        total += coef * power
        coef = coef * (aa - j) / (j + 1)
        power = power * ss
    with np.errstate(divide="ignore"):
        out[small] = 2 * np.log(np.abs(ss)) + np.log(total)
    sl, ll, al = s[~small], log1p_s[~small], alpha[~small]
    big_l = al * ll
    big = big_l > 30.0
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        # Large branch (then s > 0): log g = L + log1p(-(1 + a s) e^{-L}), with
        # log(1 + a s) = logaddexp(0, log a + log s) and log s = log(expm1(log(1+s))), so an
        # overflowed s (= inf) is never used.
        log_1_as = np.logaddexp(0.0, np.log(al) + _log_expm1(np.where(big, ll, 1.0)))
        correction = np.log1p(-np.exp(np.minimum(log_1_as - big_l, 0.0)))
        out[~small] = np.where(big, big_l + correction, np.log(np.expm1(np.minimum(big_l, 30.0)) - al * sl))
    return out


def _cvz_weights(n: int) -> np.ndarray:
    """Weights w_k with sum_k (-1)^k a_k ~ sum_{k<n} (-1)^k w_k a_k (Cohen, Rodriguez Villegas,
    Zagier 2000, Algorithm 1). For a_k = int_0^1 x^k dmu(x), mu >= 0, the relative error is
    at most 2 / (3 + sqrt 8)^n (their Prop. 1)."""
    d = (3 + math.sqrt(8)) ** n
    d = (d + 1 / d) / 2
    b, c = -1.0, -d
    w = np.empty(n)
    for k in range(n):
        c = b - c
        w[k] = (-1) ** k * c / d  # c alternates in sign; w_k > 0
        b = (k + n) * (k - n) * b / ((k + 0.5) * (k + 1))
    return w


_CVZ_W = _cvz_weights(_CVZ_TERMS)
_CVZ_REL_ERROR = 2.0 / (3 + math.sqrt(8)) ** _CVZ_TERMS


def _accumulate_logsumexp(log_terms, k_stop: np.ndarray, k_start: int = 0) -> np.ndarray:
    """log sum_{k_start <= k <= k_stop} exp(log_terms(k)) for positive terms, per column.

    ``log_terms(k)`` maps a (B, 1) block of integers to (B, n) log-terms; the sum is
    streamed in blocks of ``_BLOCK`` rows so memory stays bounded for huge orders.
    """
    total = np.full(k_stop.shape, -np.inf)
    k_max = int(k_stop.max(initial=k_start - 1))
    for lo in range(k_start, k_max + 1, _BLOCK):
        k = np.arange(lo, min(lo + _BLOCK, k_max + 1), dtype=float)[:, None]
        block = np.where(k <= k_stop[None, :], log_terms(k), -np.inf)
        total = np.logaddexp(total, special.logsumexp(block, axis=0))
    return total
