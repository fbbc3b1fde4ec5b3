"""Reading a mechanism description as privacy losses: `privacy_losses` (both directions, by single
dispatch on the mechanism type), `composed_losses`, and the range the PLRV accountants evaluate in doubles."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from ... import mechanisms as mech
from ...errors import UnsupportedMechanismError
from ...mechanisms import Mechanism
from .gaussian import GaussianLoss
from .laplace import LaplaceLoss
from .loss import PrivacyLoss
from .subsampled import subsampled_loss
from .two_point import TwoPointLoss


@dataclass(frozen=True)
class DirectedLosses:
    """The PLRVs of one mechanism in the remove and the add direction."""

    remove: PrivacyLoss
    add: PrivacyLoss

    @property
    def is_symmetric(self) -> bool:
        return self.remove is self.add


def _symmetric(loss: PrivacyLoss) -> DirectedLosses:
    return DirectedLosses(remove=loss, add=loss)


@functools.singledispatch
def privacy_losses(mechanism: Mechanism) -> DirectedLosses:
    """The PLRVs of a non-composite mechanism in both directions."""
    raise UnsupportedMechanismError(f"no privacy-loss description for {type(mechanism).__name__}")


@privacy_losses.register
def _(mechanism: mech.Gaussian) -> DirectedLosses:
    return _symmetric(GaussianLoss(mechanism.mu))  # noise std = noise_multiplier x sensitivity


@privacy_losses.register
def _(mechanism: mech.Laplace) -> DirectedLosses:
    return _symmetric(LaplaceLoss(mechanism.epsilon))  # noise scale = scale x sensitivity


@privacy_losses.register
def _(mechanism: mech.RandomizedResponse) -> DirectedLosses:
    return _symmetric(TwoPointLoss(mechanism.epsilon))


@privacy_losses.register
def _(mechanism: mech.PureDP) -> DirectedLosses:
    return _symmetric(TwoPointLoss(mechanism.epsilon))


@privacy_losses.register
def _(mechanism: mech.ApproxDP) -> DirectedLosses:
    return _symmetric(TwoPointLoss(mechanism.epsilon, mechanism.delta))


def _subsampled(base: Mechanism, rate: float) -> DirectedLosses:
    base_losses = privacy_losses(base)
    if rate == 1.0:
        return base_losses
    return DirectedLosses(
        remove=subsampled_loss(base_losses.remove, rate, "remove"),
        add=subsampled_loss(base_losses.remove, rate, "add"),
    )


@privacy_losses.register
def _(mechanism: mech.PoissonSubsampled) -> DirectedLosses:
    return _subsampled(mechanism.base, mechanism.rate)


@privacy_losses.register
def _(mechanism: mech.SampledWithoutReplacement) -> DirectedLosses:
    # Zhu, Dong, Wang 2022, Thm 11(2): pairs (P, (1-g)P + gQ) and its swap, (P, Q) the base's
    # replace-one pair. For the symmetric bases supported here (P, Q) and (Q, P) are reflections
    # of each other, so the laws are those of Poisson subsampling of the replace-one base.
    return _subsampled(mechanism.replace_one_base, mechanism.rate)


def composed_losses(mechanism: Mechanism) -> tuple[tuple[DirectedLosses, int], ...]:
    """(directed losses, count) for each distinct component of a (possibly composite) mechanism."""
    if not isinstance(mechanism, Mechanism):
        raise TypeError(f"expected a Mechanism, got {type(mechanism).__name__}")
    return tuple((privacy_losses(m), count) for m, count in mechanism.components())


@functools.singledispatch
def out_of_double_range(mechanism: Mechanism) -> str | None:
    """Why a part's parameters are beyond what the PLRV accountants evaluate in doubles (None if not)."""
    return None


@out_of_double_range.register
def _(mechanism: mech.Gaussian) -> str | None:
    if math.isfinite(mechanism.mu * mechanism.mu):
        return None
    return (f"{mechanism!r}: mu^2 = 1/noise_multiplier^2 overflows a double (the privacy loss has infinite "
            "variance in floating point; the rdp accountant answers)")


@out_of_double_range.register
def _(mechanism: mech.Laplace) -> str | None:
    return None if math.isfinite(mechanism.epsilon) else f"{mechanism!r}: 1/scale overflows a double"


@out_of_double_range.register
def _(mechanism: mech.PoissonSubsampled) -> str | None:
    return out_of_double_range(mechanism.base)


@out_of_double_range.register
def _(mechanism: mech.SampledWithoutReplacement) -> str | None:
    return out_of_double_range(mechanism.replace_one_base)


def readable_losses(mechanism: Mechanism, accountant: str) -> tuple[tuple[DirectedLosses, int], ...]:
    """The mechanism's PLRVs, both directions, with their counts (no numerics); raises UnsupportedMechanismError
    naming the failing part and ``accountant``."""
    if not isinstance(mechanism, Mechanism):
        raise TypeError(f"expected a privselect Mechanism, got {type(mechanism).__name__}")
    try:
        parts = composed_losses(mechanism)
    except UnsupportedMechanismError as exc:
        raise UnsupportedMechanismError(f"{accountant} accountant cannot interpret {mechanism!r}: {exc}") from None
    for losses, _ in parts:
        for loss in (losses.remove, losses.add):
            if not isinstance(loss, PrivacyLoss):
                raise UnsupportedMechanismError(f"{accountant} accountant: {type(loss).__name__} is not a PrivacyLoss")
    return parts


def check_double_range(name: str, mechanism: Mechanism) -> None:
    for part, _ in mechanism.components():
        reason = out_of_double_range(part)
        if reason is not None:
            raise UnsupportedMechanismError(f"{name} accountant: {reason}")
