"""The exact accountant for compositions of Gaussian mechanisms (Dong, Roth, Su 2022, Cor. 3.3).

The k-fold composition of Gaussian mechanisms with GDP parameters mu_i is exactly mu-GDP with
mu^2 = sum_i k_i mu_i^2. The sum is formed in exact rational arithmetic (``fractions``) from
the mechanisms' own parameters, and mu is bracketed by the two adjacent doubles
``mu_low <= mu <= mu_high`` (``GaussianCurve(mu, mu_bounds=...)``): delta_mu(eps) increases in
mu, so the rounding of the combination is part of the certified bracket, not ignored.
Compositions whose mu^2 exceeds the double range are not supported here (no closed form is
evaluated for them; "auto" then uses the other accountants).
"""

from __future__ import annotations

import functools
import math
import sys
from fractions import Fraction

from ...mechanisms import Composition, Gaussian, Mechanism, PoissonSubsampled
from ..base import Accountant, UnsupportedMechanismError, register_accountant
from ..profile import GaussianCurve, PrivacyProfile

__all__ = ["ExactAccountant", "gdp_mu_squared"]

_MAX = sys.float_info.max


@functools.singledispatch
def gdp_mu_squared(mechanism: Mechanism) -> Fraction:
    """mu^2 of the mu-GDP mechanism ``mechanism`` is exactly, as a rational number."""
    raise UnsupportedMechanismError(
        f"exact accountant: no closed form for {type(mechanism).__name__} (compositions of Gaussian "
        "mechanisms only)")


@gdp_mu_squared.register
def _(mechanism: Gaussian) -> Fraction:
    # mu = 1 / noise_multiplier under the mechanism's own neighbouring relation (mechanisms.py)
    return 1 / Fraction(mechanism.noise_multiplier) ** 2


@gdp_mu_squared.register
def _(mechanism: PoissonSubsampled) -> Fraction:
    if mechanism.rate != 1.0:
        raise UnsupportedMechanismError(
            f"exact accountant: no closed form for a Poisson-subsampled mechanism ({mechanism!r})")
    return gdp_mu_squared(mechanism.base)


@gdp_mu_squared.register
def _(mechanism: Composition) -> Fraction:
    return sum((count * gdp_mu_squared(part) for part, count in mechanism.components()), Fraction(0))


def _checked_square(mechanism: Mechanism) -> Fraction:
    square = gdp_mu_squared(mechanism)
    if square >= Fraction(_MAX):
        raise UnsupportedMechanismError(f"exact accountant: mu^2 = sum k_i mu_i^2 of {mechanism!r} exceeds the "
                                        "double range (the mechanism is essentially not private)")
    return square


def _sqrt_bracket(square: Fraction) -> tuple[float, float]:
    """Adjacent doubles (low, high) with low^2 <= square <= high^2 (high = inf beyond the range)."""
    k = (square.denominator.bit_length() - square.numerator.bit_length()) // 2  # square * 4^k ~ 1
    x = math.ldexp(math.sqrt(float(square * Fraction(4) ** k)), -k)  # within a few ulps
    while Fraction(x) ** 2 > square:
        x = math.nextafter(x, 0.0)
    low = x
    high = x
    while Fraction(high) ** 2 < square:
        high = math.nextafter(high, math.inf)
        if high == math.inf:
            break
    return low, high


@register_accountant("exact")
class ExactAccountant(Accountant):
    """Closed-form profile of compositions of Gaussian mechanisms (mu-GDP; Dong, Roth, Su 2022, Cor. 3.3)."""

    name = "exact"

    def __init__(self) -> None:
        self.options: dict = {}

    def _walk(self, mechanism: Mechanism, *, dry: bool) -> PrivacyProfile | None:
        square = _checked_square(mechanism)
        if dry:
            return None
        mu_low, mu_high = _sqrt_bracket(square)
        curve = GaussianCurve(mu_high, mu_bounds=(mu_low, mu_high))
        return PrivacyProfile(curves=(curve,), accountant="exact", mechanism=mechanism,
                              description=f"{mu_high:.6g}-GDP (exact, Dong-Roth-Su 2022 Cor. 3.3)",
                              metadata=(("mu", mu_high), ("mu_low", mu_low)))


def gdp_mu_bracket(square: Fraction) -> tuple[float, float]:
    """Adjacent doubles (low, high) around mu = sqrt(square), low^2 <= square <= high^2: the certified mu
    of a composition of Gaussian mechanisms whose exact mu^2 is ``square`` (`gdp_mu_squared`)."""
    return _sqrt_bracket(square)
