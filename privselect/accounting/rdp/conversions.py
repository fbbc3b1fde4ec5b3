"""RDP -> (eps, delta) conversions (`epsilon_from_rdp`, `delta_from_rdp`): the classic rule (Mironov 2017,
Prop. 3) and the improved one (Canonne, Kamath, Steinke 2020, Prop. 12), minimised over the orders."""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import _validation as check
from ...mechanisms import Mechanism
from .curves import DEFAULT_ORDERS, _orders_array, rdp_curve

#: Names accepted by the ``conversion`` argument of the conversions.
CONVERSIONS = ("improved", "classic", "krw", "best")


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
    if np.asarray(template).ndim == 0:  # np.ndim, whose stub does not take an object
        return float(np.asarray(values).reshape(-1)[0])
    return values


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
