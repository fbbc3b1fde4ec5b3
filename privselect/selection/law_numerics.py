"""Numerics of the K laws, below [`distributions`][privselect.selection.distributions]: Loader's (2000)
Stirling error terms and ``bd0`` (the saddle-point form of the binomial, Poisson and negative binomial
terms), the truncated negative binomial's log-gamma ratio and log(1 - r z), its exact mean and its
block sampler (KRW Sec. 5.1)."""

from __future__ import annotations

import math

import numpy as np
from scipy import special

_LOG_2PI = math.log(2 * math.pi)
_LN_SQRT_2PI = 0.5 * _LOG_2PI

# -- accurate building blocks (log space) -------------------------------------------------

_S0, _S1, _S2, _S3, _S4 = 1.0 / 12, 1.0 / 360, 1.0 / 1260, 1.0 / 1680, 1.0 / 1188


def _stirlerr(n) -> np.ndarray:
    """log(n!) - log(sqrt(2 pi n) (n/e)^n) for real n > 0 (Loader 2000)."""
    n = np.asarray(n, dtype=float)
    out = np.empty(n.shape)
    small = n <= 15.0
    if small.any():
        ns = n[small]
        out[small] = special.gammaln(ns + 1) - (ns + 0.5) * np.log(ns) + ns - _LN_SQRT_2PI
    if (~small).any():
        nl = n[~small]
        with np.errstate(over="ignore"):
            nn = nl * nl  # inf beyond 1e154: the series is then 1/(12 n), as it should be
        out[~small] = (_S0 - (_S1 - (_S2 - (_S3 - _S4 / nn) / nn) / nn) / nn) / nl
    return out


def _bd0(x, m, d) -> np.ndarray:
    """Deviance term x log(x/m) + m - x >= 0 for x >= 0, m > 0, with d = x - m given accurately.

    Loader's series in v = d / (x + m) when x and m are close (no cancellation); the direct
    form otherwise.
    """
    x, m, d = np.broadcast_arrays(np.asarray(x, dtype=float), np.asarray(m, dtype=float),
                                  np.asarray(d, dtype=float))
    h = 0.5 * x + 0.5 * m  # (x + m) / 2 without overflow
    near = np.abs(d) < 0.2 * h
    out = np.empty(x.shape)
    if near.any():
        xn, dn, hn = x[near], d[near], h[near]
        v = 0.5 * (dn / hn)  # d / (x + m)
        v2 = v * v
        term = dn * (xn / hn)  # 2 x v
        acc = dn * v
        for j in range(1, 12):
            term = term * v2
            acc = acc + term / (2 * j + 1)
        out[near] = acc
    far = ~near
    if far.any():
        xf, mf, df = x[far], m[far], d[far]
        with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
            ratio = xf / mf
            log_ratio = np.where(np.abs(df) < mf, np.log1p(df / mf),  # x/m in (0, 2): via d
                                 np.where(np.isfinite(ratio) & (ratio > 0), np.log(ratio), np.log(xf) - np.log(mf)))
            direct = xf * log_ratio - df
        out[far] = np.where(xf == 0, mf, direct)
    return out


def _log_g(y) -> np.ndarray:
    """log(expm1(y) / y) (= 0 at y = 0), accurate and overflow-free for every real y."""
    y = np.asarray(y, dtype=float)
    out = np.empty(y.shape)
    tiny = np.abs(y) < 1e-4
    y2 = y * y
    out[tiny] = (y / 2 + y2 / 24 - y2 * y2 / 2880)[tiny]
    pos = (y > 0) & ~tiny
    yp = y[pos]
    out[pos] = yp + np.log(-np.expm1(-yp)) - np.log(yp)
    neg = (y < 0) & ~tiny
    yn = y[neg]
    out[neg] = np.log(-np.expm1(yn)) - np.log(-yn)
    return out


def _g(y: float) -> float:
    """expm1(y) / y (= 1 at y = 0) for |y| <= 700."""
    if abs(y) < 1e-5:
        return 1.0 + y / 2 + y * y / 6 + y * y * y / 24
    return math.expm1(y) / y


def _two_prod(a, b) -> tuple[np.ndarray, np.ndarray]:
    """Dekker's exact product: a * b == hi + lo exactly while |a|, |b| < 1e290 (else lo = 0)."""
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    hi = a * b
    split = 134217729.0  # 2^27 + 1
    with np.errstate(over="ignore", invalid="ignore"):
        ca, cb = split * a, split * b
        a_hi = ca - (ca - a)
        a_lo = a - a_hi
        b_hi = cb - (cb - b)
        b_lo = b - b_hi
        lo = ((a_hi * b_hi - hi) + a_hi * b_lo + a_lo * b_hi) + a_lo * b_lo
    return hi, np.where(np.isfinite(lo), lo, 0.0)


def _log_gamma_ratio(k: np.ndarray, eta: float) -> np.ndarray:
    """log Gamma(k + eta) - log Gamma(k + 1) for real k >= 1 and eta in (-1, 1].

    Direct for k < 16; for larger k Loader's form, which avoids the cancellation of two huge
    log-gammas: stirlerr(u) - stirlerr(k) - bd0(k, u) + log1p((eta-1)/k)/2 + (eta-1) log u with
    u = k + eta - 1.
    """
    k = np.asarray(k, dtype=float)
    out = np.empty(k.shape)
    small = k < 16
    if small.any():
        ks = k[small]
        out[small] = special.gammaln(ks + eta) - special.gammaln(ks + 1)
    if (~small).any():
        kl = k[~small]
        a = eta - 1.0
        u = kl + a
        out[~small] = (_stirlerr(u) - _stirlerr(kl) - _bd0(kl, u, -a) + 0.5 * np.log1p(a / kl)
                       + a * np.log(u))
    return out


# -- truncated negative binomial ---------------------------------------------------------


def _log_one_minus_r_z(gamma: float, r: float, z: np.ndarray) -> np.ndarray:
    """log(1 - (1 - gamma) z) for z in [0, 1], accurate for every gamma.

    With t = z (1 - gamma): log1p(-t) when t < 1/2, else log((1 - z) + gamma z), a sum of two
    non-negative terms (1 - z is exact there). At z = 1 this is log(gamma) computed from gamma
    itself (gamma < 1/2) or log1p(-(1 - gamma)) with 1 - gamma exact (gamma >= 1/2).
    """
    z = np.asarray(z, dtype=float)
    t = z * r
    low = t < 0.5
    with np.errstate(divide="ignore"):
        return np.where(low, np.log1p(-np.where(low, t, 0.0)), np.log((1.0 - z) + gamma * z))


def _sample_tnb_blocks(eta: float, gamma: float, rng: np.random.Generator) -> int:
    """Exact rejection sampler for eta < 1 (then w_k = Gamma(k+eta)/k! decreases in k).

    Dyadic blocks [2^j, 2^(j+1)); in block j the envelope is w_(2^j) (1-gamma)^k, sampled from a
    truncated geometric (or uniformly with the (1-gamma)^k factor moved into the acceptance when
    the block is short compared with 1/gamma). Within a block w varies by at most a factor
    2^(1-eta) < 4, so fewer than ~7 proposals are needed on average, whatever the mean. Blocks
    past (1-gamma)^(2^j) < e^-8000 or past 2^1000 are not formed: for every supported
    (eta, gamma) their mass is below 1e-280.
    """
    lr = math.log1p(-gamma)  # log(1 - gamma) < 0
    j_max = 1000
    needed = math.log2(2000.0) - math.log2(-lr) + 2  # r^(2^j) < e^-8000 beyond
    j_count = int(min(j_max, max(1, math.ceil(needed)))) + 1
    starts = np.ldexp(1.0, np.arange(j_count))  # a_j = 2^j, block length L_j = 2^j
    lengths = starts
    log_w = _log_gamma_ratio(starts, eta)
    span = lengths * lr  # log r^L
    geometric = span <= -0.5
    with np.errstate(divide="ignore"):
        log_mass = log_w + starts * lr + np.where(
            geometric, np.log(-np.expm1(np.where(geometric, span, -1.0))) - math.log(gamma), np.log(lengths))
    log_mass[~np.isfinite(log_mass)] = -np.inf
    weights = np.exp(log_mass - np.max(log_mass))
    cdf = np.cumsum(weights)
    while True:
        j = int(np.searchsorted(cdf, rng.random() * cdf[-1], side="right"))
        j = min(j, j_count - 1)
        a, length = float(starts[j]), float(lengths[j])
        u = rng.random()
        if geometric[j]:
            m = -math.expm1(length * lr)  # 1 - r^L
            t = math.floor(math.log1p(-u * m) / lr)
            t = min(max(t, 0), int(length) - 1)
            log_accept_extra = 0.0
        else:
            t = min(math.floor(u * length), int(length) - 1)
            log_accept_extra = t * lr
        k = a + t
        log_accept = float(_log_gamma_ratio(np.array([k]), eta)[0]) - float(log_w[j]) + log_accept_extra
        if rng.random() < math.exp(min(log_accept, 0.0)):
            return int(k)


def _tnb_log_mean(eta: float, gamma: float) -> float:
    return math.log(_tnb_mean(eta, gamma)) if gamma >= 1e-300 else _tnb_log_mean_lg(eta, math.log(gamma))


def _tnb_log_mean_lg(eta: float, lg: float) -> float:
    """log E[K] as a function of log(gamma) < 0 (valid where gamma itself underflows)."""
    if lg > -700 and abs(eta * lg) <= 700:
        gamma = math.exp(lg)
        return math.log(-math.expm1(lg) / (gamma * -lg * _g(eta * lg)))
    return math.log(-math.expm1(lg)) - lg - math.log(-lg) - float(_log_g(eta * lg))


def _tnb_mean(eta: float, gamma: float) -> float:
    """E[K] = eta (1-gamma) / (gamma (1 - gamma^eta)), or (1/gamma - 1)/log(1/gamma) at eta = 0.

    Written as (1-gamma) / (gamma (-log gamma) g(eta log gamma)) with g(y) = expm1(y)/y: exact
    as eta -> 0 (no 0/0) and accurate as gamma -> 1 (mean -> 1).
    """
    lg = float(_log_one_minus_r_z(gamma, 1.0 - gamma, np.float64(1.0)))
    y = eta * lg
    if gamma >= 1e-300 and abs(y) <= 700:
        return (1.0 - gamma) / (gamma * -lg * _g(y))
    return math.exp(math.log1p(-gamma) - lg - math.log(-lg) - float(_log_g(y)))
