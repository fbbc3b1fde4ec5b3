"""Renyi-DP curves of the mechanism descriptions and RDP -> (eps, delta) conversions.

RDP is an upper-bound-only accountant here: it serves as a baseline and to size the PRV
domain (Gopi, Lee, Wutschitz 2021, Remark 5.6). Every curve is the worst case over both
neighbouring directions, ``max(D_a(M(X) || M(X')), D_a(M(X') || M(X)))``, and composes by
addition (Mironov 2017, Prop. 1).

Conventions follow `privselect.accounting.plrv`: ``Gaussian(s, sensitivity)`` has
``mu = sensitivity / s`` and ``Laplace(b, sensitivity)`` has ``eps0 = sensitivity / b``.

Curves (``rdp_curve``), for orders ``a > 1``:

* Gaussian: ``a mu^2 / 2`` (Mironov 2017, Prop. 7).
* Laplace: Mironov 2017, Prop. 6, evaluated without cancellation.
* RandomizedResponse, PureDP (= RR with ``p = e^eps / (1 + e^eps)``), ApproxDP with
  ``delta == 0``: the exact RDP of binary randomized response. It dominates every
  eps-DP pair (Kairouz, Oh, Viswanath 2015), so it is also valid for PureDP.
  ApproxDP with ``delta > 0`` has infinite RDP.
* PoissonSubsampled(Gaussian): exact (Mironov, Talwar, Zhang 2019): the finite binomial
  sum for integer orders (Sec. 3.2), and for fractional orders their split of ``A_a`` at
  ``z0`` into two binomial series (Sec. 3.3), summed with signs and with the alternating
  tails accelerated with a certified error bound (see ``_sgm_log_a_minus_1_frac``).
  Their Thm 5 (the remove direction dominates) gives the worst case over directions.
* PoissonSubsampled(RR / PureDP / Laplace): the exact RDP, in both directions, of
  subsampled randomized response with the base's pure-DP eps0. A Laplace base is an
  eps0-DP post-processing of RR, so this is a valid (not tight) bound for it.
* SampledWithoutReplacement(base): the base's replace-one description (``replace_one_base``);
  Zhu, Dong, Wang 2022, Thm 11(2) gives the dominating pairs ``(P, (1-g)P + gQ)`` and
  their swap, which for the symmetric bases here are reflections of the Poisson pairs.
  A dominating pair for every hockey-stick divergence dominates in the Blackwell order,
  hence in every Renyi divergence, so the Poisson curve at the same rate applies.
* Composition: ``sum(count * curve)``.

Conversions (``epsilon_from_rdp``, ``delta_from_rdp``) minimise over the given orders
where the curve is finite; see their docstrings for the three rules.
"""

from __future__ import annotations

import functools
import logging
import math
from typing import Any

import numpy as np
from scipy import special

from ... import _validation as check
from ...mechanisms import (
    ApproxDP,
    Composition,
    Gaussian,
    Laplace,
    Mechanism,
    PoissonSubsampled,
    PureDP,
    RandomizedResponse,
    SampledWithoutReplacement,
)
from ..dominating import ProfileMechanism
from ..plrv import UnsupportedMechanismError
from ..profile import DirectionalCurve, ErrorBudget, PrivacyProfile

__all__ = [
    "DEFAULT_ORDERS",
    "CONVERSIONS",
    "rdp_curve",
    "unsupported_part",
    "epsilon_from_rdp",
    "delta_from_rdp",
    "rdp_epsilon",
    "rdp_delta",
    "rdp_profile",
    "RdpCurve",
]

logger = logging.getLogger(__name__)

#: Default Renyi orders. The improved conversion's optimal order is about
#: 1 + sqrt(log(1/delta) / rho) for a curve ~ rho * a, so large total privacy loss wants
#: orders near 1 and tiny loss wants large orders:
#: * (1, 2): a - 1 geometric from 0.01 (ratio ~1.12), because the log(1/delta)/(a - 1) term
#:   varies on the relative scale of a - 1;
#: * [2, 64]: step 0.25, the working range of DP-SGD-like compositions;
#: * (64, 1024]: integers spaced by a factor 2^(1/8), for small losses.
#: 321 orders. Against a 12,000-order grid up to 4096 the improved eps grows by at most
#: 0.12% for eps >= 0.1 (DP-SGD and Gaussian settings, delta 1e-3..1e-10); below eps ~ 0.05
#: orders beyond 1024 help (pass your own grid). Every order has an exact
#: subsampled-Gaussian value.
DEFAULT_ORDERS: np.ndarray = np.unique(np.concatenate([
    1.0 + np.geomspace(0.01, 1.0, 41)[:-1],
    np.arange(2.0, 64.0 + 0.125, 0.25),
    np.round(64.0 * 2.0 ** (np.arange(1, 33) / 8.0)),
]))
DEFAULT_ORDERS.setflags(write=False)

#: Names accepted by the ``conversion`` argument of the conversions.
CONVERSIONS = ("improved", "classic", "krw", "best")

# Terms in each accelerated alternating tail (Cohen, Rodriguez Villegas, Zagier 2000):
# certified relative error 2 / (3 + sqrt 8)^24 < 1e-18.
_CVZ_TERMS = 24
# Rows per block when summing long binomial series (bounds memory for huge orders).
_BLOCK = 2048


# ----------------------------------------------------------------------------------------
# Input checks
# ----------------------------------------------------------------------------------------


def _orders_array(orders: object) -> np.ndarray:
    a = check.real_array("orders", orders)
    if a.size == 0:
        raise ValueError("orders must contain at least one order")
    bad = ~(np.isfinite(a) & (a > 1))
    if bad.any():
        raise ValueError(f"orders must be finite and > 1, got {float(a[bad].reshape(-1)[0])!r}")
    return a


def _curve_pair(orders: object, rdp: object) -> tuple[np.ndarray, np.ndarray]:
    a = _orders_array(orders).reshape(-1)
    r = check.real_array("rdp", rdp).reshape(-1)
    if r.shape != a.shape:
        raise ValueError(f"rdp must have one value per order: got {r.size} values for {a.size} orders")
    if (r < 0).any():
        raise ValueError("rdp must be in [0, inf] (Renyi divergences are non-negative)")
    return a, r


def _conversion(conversion: object) -> str:
    if conversion not in CONVERSIONS:
        raise ValueError(f"conversion must be one of {list(CONVERSIONS)}, got {conversion!r}")
    return str(conversion)


def _like(template: object, values: np.ndarray) -> Any:
    """A Python float for scalar input, an array of the input's shape otherwise."""
    if np.ndim(template) == 0:
        return float(np.asarray(values).reshape(-1)[0])
    return values


# ----------------------------------------------------------------------------------------
# Numerically careful building blocks (log space)
# ----------------------------------------------------------------------------------------


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


def _log_binomial_remainder(s: np.ndarray, log1p_s: np.ndarray, alpha: np.ndarray) -> np.ndarray:
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


# ----------------------------------------------------------------------------------------
# Closed forms
# ----------------------------------------------------------------------------------------


def _gaussian_rdp(mu: float, a: np.ndarray) -> np.ndarray:
    """a mu^2 / 2 (Mironov 2017, Prop. 7)."""
    return a * mu * mu / 2


def _laplace_rdp(eps0: float, a: np.ndarray) -> np.ndarray:
    """RDP of Lap(0, b) vs Lap(1, b), eps0 = 1/b (Mironov 2017, Prop. 6; both directions agree):

        (1/(a-1)) log( a/(2a-1) e^{(a-1) eps0} + (a-1)/(2a-1) e^{-a eps0} ).

    Written as log1p(X)/(a-1) with (2a-1) X = a phi((a-1) eps0) + (a-1) phi(-a eps0),
    phi(x) = e^x - 1 - x >= 0 (the linear terms cancel exactly), so no cancellation.
    """
    am1 = a - 1
    log_x = np.logaddexp(np.log(a) + _log_phi(am1 * eps0), np.log(am1) + _log_phi(-a * eps0)) - np.log1p(2 * am1)
    return np.logaddexp(0.0, log_x) / am1


def _two_point_log_moment(log_w: np.ndarray, s: np.ndarray, log1p_s: np.ndarray, a: np.ndarray) -> np.ndarray:
    """log E_B[(A/B)^a] for distributions on two points, B = exp(log_w), A = B (1 + s).

    Uses E_B[(A/B)^a] = 1 + sum_i B_i g(s_i), g(s) = (1+s)^a - 1 - a s >= 0, because
    sum_i B_i s_i = 0; so small divergences keep full relative precision. Shapes: log_w, s
    and log1p_s are (2, 1), a is (1, n).
    """
    log_g = _log_binomial_remainder(s, log1p_s, a)
    return np.logaddexp(0.0, special.logsumexp(log_w + log_g, axis=0))


def _subsampled_rr_rdp(eps0: float, q: float, a: np.ndarray) -> np.ndarray:
    """Exact RDP, worst of both directions, of eps0-randomized response on a Poisson subsample.

    Base pair P = (p, 1-p), Q = (1-p, p) with p = e^eps0/(1+e^eps0); subsampled pair
    A = (1-q) Q + q P vs B = Q (remove) and B vs A (add) (Zhu, Dong, Wang 2022, Thm 11(1)).
    q = 1 gives plain randomized response. Every eps0-DP pair is a post-processing of
    (P, Q) (Kairouz, Oh, Viswanath 2015), and post-processing commutes with the mixture,
    so this bounds every eps0-DP base.
    """
    if eps0 == 0.0:
        return np.zeros_like(a)
    # B = Q = (1/(1+e^eps0), e^eps0/(1+e^eps0)); A_i / B_i = 1 - q + q e^{+-eps0}.
    log_b = np.array([[-np.logaddexp(0.0, eps0)], [-np.logaddexp(0.0, -eps0)]])
    with np.errstate(over="ignore"):
        s = q * np.expm1(np.array([[eps0], [-eps0]]))  # may overflow to +inf for eps0 > ~709
    log1p_s = np.logaddexp(math.log1p(-q) if q < 1 else -np.inf, math.log(q) + np.array([[eps0], [-eps0]]))
    a2 = a.reshape(1, -1)
    remove = _two_point_log_moment(log_b, s, log1p_s, a2)
    if q == 1.0:
        return (remove / (a2 - 1)).reshape(a.shape)
    # Reverse: E_A[(B/A)^a] with A_i = B_i (1 + s_i) and B_i/A_i - 1 = 1/(1+s_i) - 1.
    t = np.expm1(-log1p_s)
    add = _two_point_log_moment(log_b + log1p_s, t, -log1p_s, a2)
    return (np.maximum(remove, add) / (a2 - 1)).reshape(a.shape)


# ----------------------------------------------------------------------------------------
# Poisson-subsampled Gaussian (Mironov, Talwar, Zhang 2019)
# ----------------------------------------------------------------------------------------


def _sgm_log_a_minus_1_int(q: float, sigma: float, a: np.ndarray) -> np.ndarray:
    """log(A_a - 1) for integer a (MTZ 2019, Sec. 3.2):

        A_a = sum_{k=0}^{a} C(a,k) (1-q)^{a-k} q^k exp((k^2-k) / (2 sigma^2)).

    Since sum_k C(a,k)(1-q)^{a-k} q^k = 1 and the k = 0, 1 exponents vanish,
    A_a - 1 = sum_{k>=2} C(a,k)(1-q)^{a-k} q^k expm1((k^2-k)/(2 sigma^2)): all terms positive.
    """
    log_q, log_1mq = math.log(q), math.log1p(-q)
    row = a[None, :]

    def terms(k: np.ndarray) -> np.ndarray:
        return (_log_abs_binom(row, k) + (row - k) * log_1mq + k * log_q
                + _log_expm1((k * k - k) / (2 * sigma * sigma)))

    return _accumulate_logsumexp(terms, a, k_start=2)


def _sgm_log_a_minus_1_frac(q: float, sigma: float, a: np.ndarray) -> np.ndarray:
    """log(A_a - 1) for non-integer a (MTZ 2019, Sec. 3.3), A_a = E_{N(0,s^2)}[(1 - q + q r)^a],
    r(z) = exp((2z - 1)/(2 s^2)).

    Split at z0 = s^2 log(1/q - 1) + 1/2, where (1-q) = q r:
      z <= z0: (1-q)^a (1+x)^a, x = q r/(1-q) <= 1, terms t_k = C(a,k)(1-q)^{a-k} q^k M_k,
               M_k = E[r^k; z <= z0] = exp((k^2-k)/(2s^2)) Phi((z0 - k)/s);
      z >  z0: (q r)^a (1+y)^a, y = 1/x < 1, terms u_k = C(a,k) q^{a-k}(1-q)^k N_{a-k},
               N_b = E[r^b; z > z0] = exp((b^2-b)/(2s^2)) Phi((b - z0)/s).
    A_a - 1 is assembled so that the O(1) parts cancel analytically: with
    1 = (1-aq)[Phi(z0/s) + Phi(-z0/s)] + aq[Phi((z0-1)/s) + Phi((1-z0)/s)],
      A_a - 1 = [(1-q)^a - 1 + aq] M_0 - aq[1 - (1-q)^{a-1}] M_1 + sum_{k>=2} t_k
              + sum_{k>=0} u_k - (1-aq) Phi(-z0/s) - aq Phi((1-z0)/s).
    For k >= floor(a)+2 both series alternate and |t_k|, |u_k| are moment sequences in k
    (|C(a,k)| ~ B(k-a, a+1) and x^k, y^k with x, y in [0,1]), so each tail is summed with
    CVZ acceleration (certified relative error < 1e-18), rounded towards a larger A_a.
    """
    log_q, log_1mq = math.log(q), math.log1p(-q)
    s2 = sigma * sigma
    z0 = s2 * (log_1mq - log_q) + 0.5
    row = a[None, :]
    k0 = np.floor(a) + 2  # first index of the alternating tails

    def t_log(k: np.ndarray) -> np.ndarray:
        return (_log_abs_binom(row, k) + (row - k) * log_1mq + k * log_q
                + (k * k - k) / (2 * s2) + special.log_ndtr((z0 - k) / sigma))

    def u_log(k: np.ndarray) -> np.ndarray:
        b = row - k
        return (_log_abs_binom(row, k) + b * log_q + k * log_1mq
                + (b * b - b) / (2 * s2) + special.log_ndtr((b - z0) / sigma))

    head_t = _accumulate_logsumexp(t_log, k0 - 1, k_start=2)   # k = 2 .. floor(a)+1, positive
    head_u = _accumulate_logsumexp(u_log, k0 - 1, k_start=0)   # k = 0 .. floor(a)+1, positive
    j = np.arange(_CVZ_TERMS, dtype=float)[:, None]
    log_w = np.log(_CVZ_W)[:, None]
    # Tails: -sum_j (-1)^j a_j with a_j = |term_{k0+j}|; a lower bound on sum_j (-1)^j a_j is
    # the CVZ value / (1 + rel_error), which makes the assembled A_a an upper bound.
    alt = np.where(j % 2 == 0, 1.0, -1.0)
    shrink = -math.log1p(_CVZ_REL_ERROR)
    tail_t, _ = _signed_logsumexp(log_w + t_log(k0[None, :] + j), alt)
    tail_u, _ = _signed_logsumexp(log_w + u_log(k0[None, :] + j), alt)

    one_minus_aq = 1 - a * q
    with np.errstate(divide="ignore"):
        parts = np.stack([
            _log_binomial_remainder(-q, log_1mq, a) + special.log_ndtr(z0 / sigma),
            np.log(a) + log_q + np.log(-np.expm1((a - 1) * log_1mq)) + special.log_ndtr((z0 - 1) / sigma),
            head_t,
            tail_t + shrink,
            head_u,
            tail_u + shrink,
            np.log(np.abs(one_minus_aq)) + special.log_ndtr(-z0 / sigma),
            np.log(a) + log_q + special.log_ndtr((1 - z0) / sigma),
        ])
    signs = np.stack([
        np.ones_like(a), -np.ones_like(a), np.ones_like(a), -np.ones_like(a),
        np.ones_like(a), -np.ones_like(a), -np.sign(one_minus_aq), -np.ones_like(a),
    ])
    log_am1, sign = _signed_logsumexp(parts, signs)
    # The z > z0 parts cancel to O(1) when q is large and sigma huge (A_a - 1 below 1e-16);
    # add a rounding allowance (4 ulps per part, of sum |part|) so the result stays an
    # upper bound. It is ~1e-14 relative in every regime without such cancellation.
    log_allowance = special.logsumexp(parts, axis=0) + math.log(4 * parts.shape[0] * np.finfo(float).eps)
    log_am1 = np.where(sign > 0, log_am1, -np.inf)
    return np.logaddexp(log_am1, log_allowance)


def _subsampled_gaussian_rdp(mu: float, q: float, a: np.ndarray) -> np.ndarray:
    """Exact RDP of the Poisson-subsampled Gaussian mechanism (MTZ 2019, Secs. 3.2-3.3, Thm 5).

    Capped by the unsampled curve a mu^2/2, which bounds both directions by joint convexity
    of p^a q^(1-a); the cap only acts where sigma^2 over- or underflows.
    """
    base = _gaussian_rdp(mu, a)
    if q == 1.0:
        return base
    sigma = 1.0 / mu
    flat = a.reshape(-1)
    log_am1 = np.empty_like(flat)
    integer = flat == np.floor(flat)
    if integer.any():
        log_am1[integer] = _sgm_log_a_minus_1_int(q, sigma, flat[integer])
    if (~integer).any():
        log_am1[~integer] = _sgm_log_a_minus_1_frac(q, sigma, flat[~integer])
    return np.fmin((np.logaddexp(0.0, log_am1) / (flat - 1)).reshape(a.shape), base)


# ----------------------------------------------------------------------------------------
# Interpretation of the mechanism descriptions (one registration per class)
# ----------------------------------------------------------------------------------------


def _gaussian_mu(mechanism: Gaussian) -> float:
    """mu = 1 / noise_multiplier: the noise std is noise_multiplier x sensitivity (mechanisms.py)."""
    return mechanism.mu


def _laplace_eps(mechanism: Laplace) -> float:
    """eps = 1 / scale: the noise scale is scale x sensitivity (mechanisms.py)."""
    return mechanism.epsilon


@functools.singledispatch
def _curve(mechanism: Mechanism, a: np.ndarray) -> np.ndarray:
    raise UnsupportedMechanismError(f"no RDP curve for {type(mechanism).__name__}")


@_curve.register
def _(mechanism: Gaussian, a: np.ndarray) -> np.ndarray:
    return _gaussian_rdp(_gaussian_mu(mechanism), a)


@_curve.register
def _(mechanism: Laplace, a: np.ndarray) -> np.ndarray:
    return _laplace_rdp(_laplace_eps(mechanism), a)


@_curve.register
def _(mechanism: RandomizedResponse, a: np.ndarray) -> np.ndarray:
    return _subsampled_rr_rdp(mechanism.epsilon, 1.0, a)


@_curve.register
def _(mechanism: PureDP, a: np.ndarray) -> np.ndarray:
    return _subsampled_rr_rdp(mechanism.epsilon, 1.0, a)


@_curve.register
def _(mechanism: ApproxDP, a: np.ndarray) -> np.ndarray:
    if mechanism.delta > 0:
        return np.full_like(a, np.inf)
    return _subsampled_rr_rdp(mechanism.epsilon, 1.0, a)


@functools.singledispatch
def _subsampled_curve(base: Mechanism, rate: float, a: np.ndarray) -> np.ndarray:
    raise UnsupportedMechanismError(f"no RDP curve for a subsampled {type(base).__name__}")


@_subsampled_curve.register
def _(base: Gaussian, rate: float, a: np.ndarray) -> np.ndarray:
    return _subsampled_gaussian_rdp(_gaussian_mu(base), rate, a)


@_subsampled_curve.register
def _(base: Laplace, rate: float, a: np.ndarray) -> np.ndarray:
    if rate == 1.0:
        return _laplace_rdp(_laplace_eps(base), a)
    return _subsampled_rr_rdp(_laplace_eps(base), rate, a)  # valid bound, not tight


@_subsampled_curve.register
def _(base: RandomizedResponse, rate: float, a: np.ndarray) -> np.ndarray:
    return _subsampled_rr_rdp(base.epsilon, rate, a)


@_subsampled_curve.register
def _(base: PureDP, rate: float, a: np.ndarray) -> np.ndarray:
    return _subsampled_rr_rdp(base.epsilon, rate, a)


@_curve.register
def _(mechanism: PoissonSubsampled, a: np.ndarray) -> np.ndarray:
    return _subsampled_curve(mechanism.base, mechanism.rate, a)


@_curve.register
def _(mechanism: SampledWithoutReplacement, a: np.ndarray) -> np.ndarray:
    # Zhu, Dong, Wang 2022, Thm 11(2): same pairs as Poisson subsampling of the replace-one base,
    # up to reflection (module docstring).
    return _subsampled_curve(mechanism.replace_one_base, mechanism.rate, a)


@_curve.register
def _(mechanism: ProfileMechanism, a: np.ndarray) -> np.ndarray:
    # exact Renyi divergences of the discrete dominating pair; +inf where it has mass at +-inf
    return np.maximum(mechanism.losses.remove.renyi(a), mechanism.losses.add.renyi(a))


@_subsampled_curve.register
def _(base: ProfileMechanism, rate: float, a: np.ndarray) -> np.ndarray:
    loss = base.losses.remove
    return np.maximum(*(loss.poisson_subsampled(rate, side).renyi(a) for side in ("remove", "add")))


@_curve.register
def _(mechanism: Composition, a: np.ndarray) -> np.ndarray:
    total = np.zeros_like(a)
    for part, count in mechanism.components():
        total = total + count * _curve(part, a)
    return total


def unsupported_part(mechanism: Mechanism) -> str | None:
    """Name of the first piece with no registered RDP curve, or None (no numerics)."""
    for part, _ in mechanism.components():
        impl = _curve.dispatch(type(part))
        if impl is _curve.dispatch(object):
            return type(part).__name__
        if isinstance(part, (PoissonSubsampled, SampledWithoutReplacement)):
            if _subsampled_curve.dispatch(type(part.base)) is _subsampled_curve.dispatch(object):
                return f"{type(part).__name__}({type(part.base).__name__})"
    return None


def rdp_curve(mechanism: Mechanism, orders: object = DEFAULT_ORDERS) -> np.ndarray:
    """Renyi-DP curve eps_RDP(a) of ``mechanism`` at each order (worst of both directions).

    ``orders``: finite floats > 1, any shape; the result has the same shape, ``np.inf``
    where the divergence is infinite. Sources per mechanism are listed in the module
    docstring. Values are exact up to floating-point rounding except for subsampled
    Laplace, which is bounded by subsampled randomized response (valid, not tight).
    """
    if not isinstance(mechanism, Mechanism):
        raise TypeError(f"mechanism must be a privselect Mechanism, got {type(mechanism).__name__}")
    a = _orders_array(orders)
    missing = unsupported_part(mechanism)
    if missing is not None:
        raise UnsupportedMechanismError(f"no RDP curve for {missing} (in {mechanism!r})")
    flat = np.ascontiguousarray(a, dtype=float).reshape(-1)
    with np.errstate(all="ignore"):  # extreme parameters overflow to inf by design
        out = _curve(mechanism, flat)
    if np.isnan(out).any():  # not expected; +inf is the safe reading
        logger.debug("rdp_curve: NaN at %d orders for %r, reported as inf", int(np.isnan(out).sum()), mechanism)
        out = np.where(np.isnan(out), np.inf, out)
    return np.maximum(out, 0.0).reshape(a.shape)


# ----------------------------------------------------------------------------------------
# Conversions RDP -> (eps, delta)
# ----------------------------------------------------------------------------------------


def _log_delta_rules(a: np.ndarray, r: np.ndarray, eps: np.ndarray, conversion: str) -> np.ndarray:
    """log delta(eps) bound per (target, order): eps is (n, 1), a and r are (1, m)."""
    am1 = a - 1
    classic = am1 * (r - eps)
    improved = am1 * (r - eps + np.log1p(-1 / a)) - np.log(a)
    return classic if conversion == "classic" else improved  # improved <= classic always


def _log_tv_bound(r: np.ndarray) -> np.ndarray:
    """log of sqrt(1 - e^{-r}) >= TV (Bretagnolle-Huber with KL <= D_a)."""
    with np.errstate(divide="ignore"):
        return 0.5 * np.log(-np.expm1(-r))


def delta_from_rdp(orders: object, rdp: object, epsilon: object, conversion: str = "improved") -> Any:
    """Upper bound on delta(eps) from an RDP curve, minimised over the orders where it is finite.

    Vectorised over ``epsilon`` (any real values; a float in, a float out). Rules, for
    an (a, r)-RDP mechanism:

    * ``"classic"``: delta = exp((a-1)(r - eps)) (Mironov 2017, Prop. 3);
    * ``"improved"`` (default): delta = exp((a-1)(r - eps)) (1 - 1/a)^(a-1) / a
      (Canonne, Kamath, Steinke 2020, Prop. 12; Balle et al. 2020, Thm 21); it holds for
      every real eps and is below the classic rule for every a > 1;
    * ``"krw"``: KRW 2024, App. D, Lemma D.1, which states exactly the improved rule:
      "(a, eps')-RDP implies (eps, delta(eps))-DP for arbitrary eps >= 0 with
      delta(eps) = exp((a-1)(eps' - eps)) / a * (1 - 1/a)^(a-1)". Kept as a name so
      reproductions can say which conversion they use;
    * ``"best"``: the minimum of the rules above (equal to ``"improved"``).

    Every rule is also capped, for eps >= 0, by delta(eps) <= delta(0) = TV <= sqrt(1 - e^{-r})
    (Bretagnolle-Huber, since KL <= D_a for a > 1), and the result is clipped to [0, 1].
    """
    conversion = _conversion(conversion)
    a, r = _curve_pair(orders, rdp)
    e = check.real_array("epsilon", epsilon)
    keep = np.isfinite(r)
    flat = e.reshape(-1, 1)
    if not keep.any():
        return _like(epsilon, np.ones(e.shape))
    a, r = a[keep][None, :], r[keep][None, :]
    with np.errstate(invalid="ignore", over="ignore"):
        log_d = _log_delta_rules(a, r, flat, conversion)
        log_d = np.where(flat >= 0, np.minimum(log_d, _log_tv_bound(r)), log_d)
    delta = np.exp(np.minimum(np.min(log_d, axis=1), 0.0))
    return _like(epsilon, np.clip(delta, 0.0, 1.0).reshape(e.shape))


def epsilon_from_rdp(orders: object, rdp: object, delta: object, conversion: str = "improved") -> Any:
    """Upper bound on eps(delta) from an RDP curve, minimised over the orders where it is finite.

    Vectorised over ``delta`` in (0, 1) (a float in, a float out); +inf if no order is
    finite. Rules (see [`delta_from_rdp`][privselect.accounting.rdp.delta_from_rdp] for sources), for an (a, r)-RDP mechanism:

    * ``"classic"``: eps = r + log(1/delta)/(a-1);
    * ``"improved"`` (default) and ``"krw"`` (KRW 2024 Lemma D.1, the same statement solved
      for eps): eps = r + log((a-1)/a) - (log delta + log a)/(a-1);
    * ``"best"``: the minimum over the rules.

    Each rule also returns 0 where delta >= sqrt(1 - e^{-r}) for some order (then
    delta(0) = TV <= delta; Bretagnolle-Huber). The value reported is max(eps, 0): the
    rules can give eps < 0, and (eps, delta)-DP implies (eps', delta)-DP for every
    eps' >= eps, so max(eps, 0) is still a valid upper bound for the usual eps >= 0 notion.
    """
    conversion = _conversion(conversion)
    a, r = _curve_pair(orders, rdp)
    d = check.delta_array("delta", delta)
    keep = np.isfinite(r)
    if not keep.any():
        return _like(delta, np.full(d.shape, np.inf))
    a, r = a[keep][None, :], r[keep][None, :]
    log_delta = np.log(d.reshape(-1, 1))
    am1 = a - 1
    if conversion == "classic":
        eps = r - log_delta / am1
    else:
        eps = r + np.log1p(-1 / a) - (log_delta + np.log(a)) / am1
    eps = np.where(log_delta >= _log_tv_bound(r), 0.0, eps)
    return _like(delta, np.maximum(np.min(eps, axis=1), 0.0).reshape(d.shape))


def rdp_epsilon(mechanism: Mechanism, delta: object, orders: object = DEFAULT_ORDERS, *,
                conversion: str = "improved") -> Any:
    """Upper bound on eps(delta) of ``mechanism`` through its RDP curve (see [`epsilon_from_rdp`][privselect.accounting.rdp.epsilon_from_rdp])."""
    conversion = _conversion(conversion)
    d = check.delta_array("delta", delta)
    a = _orders_array(orders).reshape(-1)
    return _like(delta, np.asarray(epsilon_from_rdp(a, rdp_curve(mechanism, a), d, conversion)))


def rdp_delta(mechanism: Mechanism, epsilon: object, orders: object = DEFAULT_ORDERS, *,
              conversion: str = "improved") -> Any:
    """Upper bound on delta(eps) of ``mechanism`` through its RDP curve (see [`delta_from_rdp`][privselect.accounting.rdp.delta_from_rdp])."""
    conversion = _conversion(conversion)
    e = check.real_array("epsilon", epsilon)
    a = _orders_array(orders).reshape(-1)
    return _like(epsilon, np.asarray(delta_from_rdp(a, rdp_curve(mechanism, a), e, conversion)))


# ----------------------------------------------------------------------------------------
# RDP as a (one-sided) PrivacyProfile
# ----------------------------------------------------------------------------------------


class RdpCurve(DirectionalCurve):
    """Privacy profile bound from an RDP curve (worst of both directions): upper side only.

    The lower bounds are the trivial ones (delta >= 0, eps >= -inf); the error budget is
    therefore unbounded (``inf``).
    """

    def __init__(self, orders: np.ndarray, rdp: np.ndarray, conversion: str = "improved") -> None:
        self.orders, self.rdp = _curve_pair(orders, rdp)
        self.conversion = _conversion(conversion)
        self.direction = "both"
        self.error_budget = ErrorBudget(eps_error=math.inf, delta_error=math.inf,
                                        details=(("rdp_upper_bound_only", math.inf),))

    def delta_bounds(self, eps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        e = np.asarray(eps, dtype=float)
        upper = np.asarray(delta_from_rdp(self.orders, self.rdp, e, self.conversion), dtype=float).reshape(e.shape)
        return np.zeros(e.shape), upper

    def epsilon_bounds(self, delta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        d = np.asarray(delta, dtype=float)
        upper = np.asarray(epsilon_from_rdp(self.orders, self.rdp, d, self.conversion), dtype=float).reshape(d.shape)
        return np.full(d.shape, -np.inf), upper


def rdp_profile(mechanism: Mechanism, *, orders: object = DEFAULT_ORDERS, conversion: str = "improved") -> PrivacyProfile:
    """Upper-bound-only [`PrivacyProfile`][privselect.accounting.rdp.PrivacyProfile] of ``mechanism`` from its RDP curve."""
    conversion = _conversion(conversion)
    a = _orders_array(orders).reshape(-1)
    curve = rdp_curve(mechanism, a)
    finite = np.isfinite(curve)
    logger.debug("rdp_profile: %d orders, %d finite", a.size, int(finite.sum()))
    return PrivacyProfile(
        curves=(RdpCurve(a, curve, conversion),),
        accountant="rdp",
        mechanism=mechanism,
        description=f"RDP upper bound ({conversion} conversion, {a.size} orders)",
        metadata=(("orders", a.size), ("conversion", conversion)),
    )
