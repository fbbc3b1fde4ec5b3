"""The PRV, CF and RDP accountants behind the `Accountant` interface.

Thin adapters: the numerics live in `prv`, `cf` and [`rdp`][privselect.accounting.rdp]. Each adapter's
walk is its module's own reading of the mechanism (``readable_losses``, i.e.
``plrv.privacy_losses`` by single dispatch on the mechanism type, for PRV and CF;
``rdp.unsupported_part`` over ``rdp``'s single-dispatch registry for RDP), so the dry run
``supports`` and ``profile`` read the mechanism the same way.
"""

from __future__ import annotations

import functools
import math
from typing import Any

from ..mechanisms import Gaussian, Laplace, Mechanism, PoissonSubsampled, SampledWithoutReplacement
from .base import Accountant, UnsupportedMechanismError, register_accountant
from .profile import PrivacyProfile

__all__ = ["PRV", "CF", "RDP"]


@functools.singledispatch
def _out_of_range(mechanism: Mechanism) -> str | None:
    """Why a part's parameters are beyond what the PLRV accountants evaluate in doubles (None if not)."""
    return None


@_out_of_range.register
def _(mechanism: Gaussian) -> str | None:
    if math.isfinite(mechanism.mu * mechanism.mu):
        return None
    return (f"{mechanism!r}: mu^2 = 1/noise_multiplier^2 overflows a double (the privacy loss has infinite "
            "variance in floating point; the rdp accountant answers)")


@_out_of_range.register
def _(mechanism: Laplace) -> str | None:
    return None if math.isfinite(mechanism.epsilon) else f"{mechanism!r}: 1/scale overflows a double"


@_out_of_range.register
def _(mechanism: PoissonSubsampled) -> str | None:
    return _out_of_range(mechanism.base)


@_out_of_range.register
def _(mechanism: SampledWithoutReplacement) -> str | None:
    return _out_of_range(mechanism.replace_one_base)


def _check_range(name: str, mechanism: Mechanism) -> None:
    for part, _ in mechanism.components():
        reason = _out_of_range(part)
        if reason is not None:
            raise UnsupportedMechanismError(f"{name} accountant: {reason}")


@register_accountant("prv")
class PRV(Accountant):
    """PRV accountant (Gopi, Lee, Wutschitz 2021) with a certified bracket; options go to ``PRVAccountant``."""

    name = "prv"

    def __init__(self, **options: Any) -> None:
        from .prv import PRVAccountant

        self.options = options
        self._impl = PRVAccountant(**options)  # validates the options now

    def floor_hint(self) -> float:
        """The requested delta error: the floor is twice the achieved one (GLW Thm 5.5), about this."""
        impl = self._impl
        return impl.delta_error if impl.delta_error is not None else impl.target_delta / 1000

    def _walk(self, mechanism: Mechanism, *, dry: bool) -> PrivacyProfile | None:
        from .prv import readable_losses

        readable_losses(mechanism)
        _check_range("PRV", mechanism)
        return None if dry else self._impl.profile(mechanism)


@register_accountant("cf")
class CF(Accountant):
    """Characteristic-function accountant (Zhu, Dong, Wang 2022); options go to ``CFAccountant``."""

    name = "cf"

    def __init__(self, **options: Any) -> None:
        from .cf import CFAccountant

        self.options = options
        self._impl = CFAccountant(**options)

    def _walk(self, mechanism: Mechanism, *, dry: bool) -> PrivacyProfile | None:
        from .cf import readable_losses

        readable_losses(mechanism)
        _check_range("cf", mechanism)
        return None if dry else self._impl.profile(mechanism)

    def closed_form(self, mechanism: Mechanism) -> bool:
        """Whether ``mechanism`` (which this accountant supports) has a closed-form characteristic
        function: then an eps(delta) query costs milliseconds at CF's full precision."""
        from .cf import closed_form

        return closed_form(mechanism)

    def atomic(self, mechanism: Mechanism) -> bool:
        """Whether every component's privacy loss is purely atomic (``cf.atomic``): delta(eps) is then
        an exact sum over atoms, cheap for long eps vectors."""
        from .cf import atomic

        return atomic(mechanism)

    def sampled_steps(self, mechanism: Mechanism) -> float:
        """Expected number of steps in which a record takes part (``cf.sampled_steps``): below about
        1, CF's grids are long and its bracket loose."""
        from .cf import sampled_steps

        return sampled_steps(mechanism)


@register_accountant("rdp")
class RDP(Accountant):
    """Renyi-DP curve and its conversion (an upper bound only; Mironov 2017, Canonne et al. 2020).

    Options: ``orders`` and ``conversion`` (``"improved"`` or ``"classic"``; passed to
    ``rdp_profile`` as its ``method``).
    """

    name = "rdp"

    def __init__(self, *, orders: Any = None, conversion: str = "improved") -> None:
        from . import rdp

        self.options = {k: v for k, v in (("orders", orders), ("conversion", conversion)) if v is not None}
        self._orders = rdp.DEFAULT_ORDERS if orders is None else orders
        if conversion not in rdp.CONVERSIONS:
            raise ValueError(f"conversion must be one of {list(rdp.CONVERSIONS)}, got {conversion!r}")
        self._conversion = conversion

    def _walk(self, mechanism: Mechanism, *, dry: bool) -> PrivacyProfile | None:
        from . import rdp

        missing = rdp.unsupported_part(mechanism)
        if missing is not None:
            raise UnsupportedMechanismError(f"rdp accountant: no RDP curve for {missing} (in {mechanism!r})")
        return None if dry else rdp.rdp_profile(mechanism, orders=self._orders, conversion=self._conversion)
