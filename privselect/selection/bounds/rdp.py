"""RDP baselines for private selection (Papernot, Steinke 2022; KRW Thm 5.1 and 5.6).

Kept so users and experiments can compare against the privacy-profile bounds; a certificate
uses whichever valid bound is smaller.

* Truncated negative binomial K (KRW Thm 5.1; P&S Thm 2): for orders alpha > 1 and
  alpha_hat >= 1,  eps'(alpha) = eps(alpha) + (eta+1)(1 - 1/alpha_hat) eps(alpha_hat)
  + (eta+1) log(1/gamma)/alpha_hat + log(m)/(alpha - 1), minimised over alpha_hat.
* Poisson K (KRW Thm 5.6; P&S Thm 6): with eps_hat = log(1 + 1/(alpha-1)) and delta_hat the
  base mechanism's delta at eps_hat (from its RDP curve, as dp-accounting does),
  eps'(alpha) = eps(alpha) + m delta_hat + log(m)/(alpha - 1).

RDP is non-decreasing in the order, so each curve is replaced by its running minimum from
the right before conversion (valid: (alpha_j, e)-RDP implies (alpha_i, e)-RDP for alpha_i <= alpha_j).
"""

from __future__ import annotations

import math

import numpy as np

from ...accounting import get_accountant, rdp
from ...mechanisms import Mechanism
from ..distributions import KDistribution, Poisson, TruncatedNegativeBinomial
from .registry import applicable_bound, register_bound, unsupported_reason

__all__ = ["selection_rdp_curve", "rdp_selection_epsilon", "supports_rdp_selection"]


def _poisson_condition(k_dist: Poisson) -> str | None:
    if k_dist.mean < 1:
        return "the Papernot-Steinke Poisson bound (KRW Thm 5.6) needs mean >= 1 (log(m) must be >= 0)"
    return None


@register_bound(TruncatedNegativeBinomial, "rdp", "Papernot-Steinke 2022 (KRW Thm 5.1)")
def _tnb_selection_rdp(k_dist: TruncatedNegativeBinomial, orders: np.ndarray, eps: np.ndarray) -> np.ndarray:
    """KRW Thm 5.1 (P&S Thm 2): eps'(alpha) of the selection from the base's RDP curve."""
    eta, gamma = k_dist.eta, k_dist.gamma
    finite = np.isfinite(eps)
    hat = orders[finite]
    # alpha_hat = 1 contributes (eta+1) log(1/gamma) with the (1 - 1/alpha_hat) term vanishing.
    terms = np.concatenate([(1 - 1 / hat) * eps[finite] - math.log(gamma) / hat, [-math.log(gamma)]])
    c = (eta + 1) * float(terms.min())
    return eps + c + math.log(k_dist.mean) / (orders - 1)


@register_bound(Poisson, "rdp", "Papernot-Steinke 2022 (KRW Thm 5.6)", requires=_poisson_condition)
def _poisson_selection_rdp(k_dist: Poisson, orders: np.ndarray, eps: np.ndarray) -> np.ndarray:
    """KRW Thm 5.6 (P&S Thm 6), delta_hat from the base's RDP curve as dp-accounting does."""
    m = k_dist.mean
    eps_hat = np.log1p(1 / (orders - 1))
    delta_hat = rdp.delta_from_rdp(orders, eps, eps_hat)
    return eps + m * delta_hat + math.log(m) / (orders - 1)


def supports_rdp_selection(base: Mechanism, k_dist: KDistribution) -> str | None:
    """None if an RDP baseline exists for (base, K); otherwise the reason it does not."""
    reason = unsupported_reason(k_dist, "rdp")
    if reason is not None:
        return reason
    if not isinstance(base, Mechanism):
        return "the RDP baseline needs a mechanism description, not a built profile"
    return get_accountant("rdp").supports(base)


def _monotone(curve: np.ndarray) -> np.ndarray:
    """Running minimum from the right: RDP is non-decreasing in the order."""
    return np.minimum.accumulate(curve[::-1])[::-1]


def selection_rdp_curve(base: Mechanism, k_dist: KDistribution, orders: np.ndarray | None = None) -> np.ndarray:
    """RDP curve of 'best of K runs' at ``orders`` (KRW Thm 5.1 / 5.6)."""
    reason = supports_rdp_selection(base, k_dist)
    if reason:
        raise ValueError(reason)
    orders = rdp.DEFAULT_ORDERS if orders is None else np.asarray(orders, dtype=float)
    out = applicable_bound(k_dist, "rdp").rule(k_dist, orders, rdp.rdp_curve(base, orders))
    return _monotone(np.where(np.isfinite(out), out, np.inf))


def rdp_selection_epsilon(base: Mechanism, k_dist: KDistribution, delta: float,
                          orders: np.ndarray | None = None) -> float:
    """Certified eps at ``delta`` of the selection from its RDP curve (improved conversion)."""
    orders = rdp.DEFAULT_ORDERS if orders is None else np.asarray(orders, dtype=float)
    curve = selection_rdp_curve(base, k_dist, orders)
    return float(rdp.epsilon_from_rdp(orders, curve, delta))
