"""RDP curves of the mechanism descriptions (`rdp_curve`), by single dispatch on the mechanism type
(Mironov 2017, Prop. 6/7; Mironov, Talwar, Zhang 2019 for the subsampled Gaussian; see the package docstring)."""

from __future__ import annotations

import functools
import logging
import math

import numpy as np
from scipy import special

from ... import _validation as check
from ...errors import UnsupportedMechanismError
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
from .logspace import (
    _CVZ_REL_ERROR,
    _CVZ_TERMS,
    _CVZ_W,
    _accumulate_logsumexp,
    _log_abs_binom,
    _log_binomial_remainder,
    _log_expm1,
    _log_phi,
    _signed_logsumexp,
)

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


def _orders_array(orders: object) -> np.ndarray:
    a = check.real_array("orders", orders)
    if a.size == 0:
        raise ValueError("orders must contain at least one order")
    bad = ~(np.isfinite(a) & (a > 1))
    if bad.any():
        raise ValueError(f"orders must be finite and > 1, got {float(a[bad].reshape(-1)[0])!r}")
    return a


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
    remove, add = mechanism.discrete_losses
    return np.maximum(remove.renyi(a), add.renyi(a))


@_subsampled_curve.register
def _(base: ProfileMechanism, rate: float, a: np.ndarray) -> np.ndarray:
    loss = base.discrete_losses[0]
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
