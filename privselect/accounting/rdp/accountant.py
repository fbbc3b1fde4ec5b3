"""The RDP accountant: `RdpCurve` (an upper bound only), `rdp_profile`, and `RDP`, its `Accountant`
(registered as "rdp")."""

from __future__ import annotations

import logging
import math
from typing import Any

import numpy as np

from ...mechanisms import Mechanism
from ..base import Accountant, UnsupportedMechanismError, register_accountant
from ..profile import DirectionalCurve, ErrorBudget, PrivacyProfile
from .conversions import CONVERSIONS, _conversion, _curve_pair, delta_from_rdp, epsilon_from_rdp
from .curves import DEFAULT_ORDERS, _orders_array, rdp_curve, unsupported_part

logger = logging.getLogger(__name__)


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
    """Upper-bound-only [`PrivacyProfile`][privselect.accounting.PrivacyProfile] of ``mechanism`` from its RDP curve."""
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


@register_accountant("rdp")
class RDP(Accountant):
    """Renyi-DP curve and its conversion (an upper bound only; Mironov 2017, Canonne et al. 2020).

    Options: ``orders`` and ``conversion`` (``"improved"`` or ``"classic"``; passed to
    ``rdp_profile`` as its ``method``).
    """

    name = "rdp"

    def __init__(self, *, orders: Any = None, conversion: str = "improved") -> None:
        self.options = {k: v for k, v in (("orders", orders), ("conversion", conversion)) if v is not None}
        self._orders = DEFAULT_ORDERS if orders is None else orders
        if conversion not in CONVERSIONS:
            raise ValueError(f"conversion must be one of {list(CONVERSIONS)}, got {conversion!r}")
        self._conversion = conversion

    def _walk(self, mechanism: Mechanism, *, dry: bool) -> PrivacyProfile | None:
        missing = unsupported_part(mechanism)
        if missing is not None:
            raise UnsupportedMechanismError(f"rdp accountant: no RDP curve for {missing} (in {mechanism!r})")
        return None if dry else rdp_profile(mechanism, orders=self._orders, conversion=self._conversion)
