"""`Allocation`, registered as "allocation": a certified bracket for compositions of random-allocation epochs.

One epoch (`RandomAllocation`: a Gaussian with noise multiplier sigma run on t steps, each record in exactly k
of them, chosen uniformly without replacement) is bracketed by two Gaussian mechanisms, both directions:

* **Upper (revealing the allocation).** Releasing the record's k steps along with the t outputs is a
  mechanism the epoch is a post-processing of; given the steps, the record moves k coordinates of a
  sigma-Gaussian by its clipped contribution: a Gaussian with mu = sqrt(k) / sigma (Dong, Roth, Su 2022,
  Thm 2.7 and Cor. 3.3). So every epoch is mu-GDP with mu^2 = k / sigma^2.
* **Lower (summing the steps).** The sum of the t outputs is a post-processing of the epoch; for the worst-case
  pair (a record whose contribution is the unit vector in every step it joins) it is N(k, t sigma^2) against
  N(0, t sigma^2): a Gaussian with mu = k / (sigma sqrt t). Composing the same post-processing over epochs
  gives a pair the composed epochs dominate (composition keeps the trade-off order: Dong, Roth, Su 2022, Sec. 3).

Composed over epochs (and with other random-allocation parts) the mu^2 add (Dong, Roth, Su 2022, Cor. 3.3),
and the profile is `GaussianCurve`'s closed form at each end: a sound but LOOSE bracket (no amplification by
the allocation in the upper end). The tight certified profile (the t-fold convolution of the epoch's
likelihood ratio on a linear scale, composed by pld) is not implemented yet.
"""

from __future__ import annotations

import math
import time

from ...errors import UnsupportedMechanismError
from ...mechanisms import ADD_REMOVE, Composition, Gaussian, Mechanism, RandomAllocation
from ..base import Accountant, register_accountant
from ..profile import GaussianCurve, PrivacyProfile

__all__ = ["Allocation", "allocation_mu_bracket"]


def _parts(mechanism: Mechanism) -> list[tuple[Mechanism, int]]:
    """The (part, count) pairs: random-allocation epochs, and add/remove Gaussian mechanisms composed with them
    (e.g. a noisy score); UnsupportedMechanismError naming any other part, or a mechanism with no allocation."""
    parts = mechanism.parts if isinstance(mechanism, Composition) else ((mechanism, 1),)
    out: list[tuple[Mechanism, int]] = []
    for part, count in parts:
        if not isinstance(part, (RandomAllocation, Gaussian)) or part.relation is not ADD_REMOVE:
            raise UnsupportedMechanismError(f"the allocation accountant reads RandomAllocation epochs and add/remove "
                                            f"Gaussian mechanisms only, got {type(part).__name__}")
        out.append((part, int(count)))
    if not any(isinstance(part, RandomAllocation) for part, _ in out):
        raise UnsupportedMechanismError("the allocation accountant reads mechanisms with a RandomAllocation epoch")
    return out


def allocation_mu_bracket(mechanism: Mechanism) -> tuple[float, float]:
    """(mu_lower, mu_upper): the composition is dominated by mu_upper-GDP and dominates the mu_lower-GDP pair
    (module docstring; a Gaussian part adds 1 / sigma^2 to both); both directions."""
    upper_sq = lower_sq = 0.0
    for part, count in _parts(mechanism):
        if isinstance(part, RandomAllocation):
            sigma, t, k = part.base.noise_multiplier, part.steps, part.participations  # type: ignore[attr-defined]
            upper_sq += count * k / sigma ** 2
            lower_sq += count * k * k / (sigma ** 2 * t)
        else:
            upper_sq += count / part.noise_multiplier ** 2  # type: ignore[attr-defined]
            lower_sq += count / part.noise_multiplier ** 2  # type: ignore[attr-defined]
    return math.sqrt(lower_sq), math.sqrt(upper_sq)


@register_accountant("allocation")
class Allocation(Accountant):
    """Random allocation (balls-in-bins, redrawn per epoch), bracketed by two Gaussian-DP curves."""

    name = "allocation"

    def __init__(self, **options: object) -> None:
        if options:
            raise ValueError(f"the allocation accountant takes no options, got {sorted(options)}")
        self.options: dict = {}

    def _walk(self, mechanism: Mechanism, *, dry: bool) -> PrivacyProfile | None:
        _parts(mechanism)
        if dry:
            return None
        start = time.perf_counter()
        lo, hi = allocation_mu_bracket(mechanism)
        curves = tuple(GaussianCurve(hi, direction, mu_bounds=(lo, hi)) for direction in ("remove", "add"))
        return PrivacyProfile(
            curves=curves, accountant="allocation", mechanism=mechanism,
            description=f"random allocation between {lo:.4g}-GDP (steps summed) and {hi:.4g}-GDP (allocation "
                        "revealed)",
            metadata=(("mu_lower", lo), ("mu_upper", hi), ("build_seconds", time.perf_counter() - start)))
