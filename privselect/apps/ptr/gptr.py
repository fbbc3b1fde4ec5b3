"""Generalized Propose-Test-Release and the private one-sided bounds its tests are built from.

Generalized PTR (Redberg, Zhu, Wang 2023, Alg. 2; stated as Koskela, Redberg, Wang 2024 (KRW),
Thm 6.1). A proposal phi fixes a mechanism M_phi whose privacy loss eps_phi(X) (w.r.t. a fixed
delta) depends on the data set X. A private test T decides whether to run M_phi:

1. b <- T(X), with randomness independent of M_phi;
2. if b = 0 output the refusal symbol `BOTTOM` (and nothing else);
3. else output M_phi(X).

If T is (eps_hat, delta_hat)-DP and passes with probability at most delta' on every X with
eps_phi(X) > eps, the whole procedure is (eps + eps_hat, delta + delta_hat + delta')-DP
(KRW Thm 6.1, reading its "with probability delta'" as "at most delta'"). Only this one
(eps, delta) point is available: GPTR does not satisfy Renyi DP, which is why tuning it needs
the privacy-profile selection bound (KRW Thm 5.2) rather than the RDP one (KRW Sec. 6.1).
[`GeneralizedPTR`][privselect.apps.ptr.gptr.GeneralizedPTR] exposes the guarantee as an [`ApproxDP`][privselect.mechanisms.ApproxDP]
description so that [`PrivateTuner`][privselect.tuning.PrivateTuner] and [`certify`][privselect.selection.certify.certify]
can certify a selection over GPTR runs.

Tests are built from *conservative* private bounds on data-dependent statistics
([`LaplaceBound`][privselect.apps.ptr.gptr.LaplaceBound], [`GaussianBound`][privselect.apps.ptr.gptr.GaussianBound]): a released bound that fails (lies on the wrong
side of the statistic) with probability exactly ``failure_probability``, whatever the data.
If eps_phi(X) <= F(s_1(X), s_2(X), ...) with F monotone in each statistic, the test
``F(bounds) <= eps`` passes on a data set with eps_phi(X) > eps only if some bound failed, so
its false-pass rate is at most the sum of the failure probabilities.

Neighbouring relation: add/remove one record, both directions; every sensitivity here is an
add/remove sensitivity.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import special

from ... import _validation as check
from ...accounting.gaussian import gaussian_delta
from ...accounting.profile import gdp_profile
from ...mechanisms import ApproxDP, Gaussian, Laplace

__all__ = [
    "BOTTOM",
    "Bottom",
    "analytic_gaussian_sigma",
    "LaplaceBound",
    "GaussianBound",
    "GeneralizedPTR",
    "PTRResult",
]


class Bottom:
    """The refusal symbol of PTR. ``BOTTOM`` is its only instance; it is a legitimate output."""

    _instance: Bottom | None = None

    def __new__(cls) -> Bottom:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "BOTTOM"

    def __bool__(self) -> bool:
        return False

    def __reduce__(self):  # unpickles to the same singleton
        return (Bottom, ())


#: The refusal symbol (⊥) output by a PTR mechanism whose test fails.
BOTTOM = Bottom()


def analytic_gaussian_sigma(epsilon: float, delta: float) -> float:
    """Smallest noise multiplier sigma making ``f(X) + N(0, (sigma * Delta)^2 I)`` (eps, delta)-DP.

    Analytic Gaussian mechanism (Balle, Wang 2018, Thm 8): with mu = 1/sigma the mechanism is
    exactly mu-GDP and (eps, delta)-DP iff Phi(mu/2 - eps/mu) - e^eps Phi(-mu/2 - eps/mu) <= delta.
    Solved by bisection on log(mu) with point values of the closed form, then certified: mu is
    lowered until the exact profile's certified upper bound (rounding included, ``gdp_profile``)
    is <= delta, so the returned sigma is never below the exact root (and within ~1e-12 of it).
    """
    epsilon = check.positive("epsilon", epsilon)
    delta = check.open_unit("delta", delta)
    lo, hi = -30.0, 10.0  # log(mu): delta(eps, e^-30) ~ 0, delta(eps, e^10) ~ 1
    if gaussian_delta(epsilon, math.exp(hi)) <= delta:
        return math.exp(-hi)
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if gaussian_delta(epsilon, math.exp(mid)) <= delta:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-13:
            break
    step = 1e-13
    while float(gdp_profile(math.exp(lo)).delta(epsilon)) > delta:  # 1-2 passes: point vs certified
        lo -= step
        step *= 2.0
    return math.exp(-lo)


def _side(side: str) -> float:
    if side not in ("lower", "upper"):
        raise ValueError(f"side must be 'lower' or 'upper', got {side!r}")
    return -1.0 if side == "lower" else 1.0


@dataclass(frozen=True)
class LaplaceBound:
    """A one-sided private bound ``s(X) + Lap(b) -/+ b ln(1/(2 p))``, b = sensitivity / epsilon.

    (epsilon, 0)-DP for a statistic of add/remove sensitivity ``sensitivity``. The released
    value is on the wrong side of s(X) (above it for ``side="lower"``, below it for
    ``side="upper"``) with probability exactly p = ``failure_probability``:
    P[Lap(b) > m] = e^{-m/b} / 2 = p at m = b ln(1/(2p)) (needs p < 1/2).
    """

    sensitivity: float
    epsilon: float
    failure_probability: float
    side: str = "lower"

    def __post_init__(self) -> None:
        object.__setattr__(self, "sensitivity", check.positive("sensitivity", self.sensitivity))
        object.__setattr__(self, "epsilon", check.positive("epsilon", self.epsilon))
        p = check.open_unit("failure_probability", self.failure_probability)
        if not p < 0.5:
            raise ValueError(f"failure_probability must be in (0, 0.5), got {self.failure_probability!r}")
        object.__setattr__(self, "failure_probability", p)
        _side(self.side)

    @property
    def scale(self) -> float:
        """Laplace scale b = sensitivity / epsilon."""
        return self.sensitivity / self.epsilon

    @property
    def margin(self) -> float:
        """The shift b ln(1/(2p)) that makes the bound fail with probability exactly p."""
        return self.scale * math.log(1.0 / (2.0 * self.failure_probability))

    @property
    def privacy(self) -> Laplace:
        """The release as a mechanism description: Laplace(1/epsilon) on a sensitivity-``sensitivity`` query."""
        return Laplace(1.0 / self.epsilon, sensitivity=self.sensitivity)

    def release(self, value, rng: np.random.Generator, size=None):
        """The private bound of ``value`` (vectorised: ``size`` independent draws)."""
        return value + rng.laplace(0.0, self.scale, size=size) + _side(self.side) * self.margin


@dataclass(frozen=True)
class GaussianBound:
    """A one-sided private bound ``s(X) + sigma Z -/+ sigma Phi^-1(1 - p)``.

    sigma = sensitivity * sigma_G(epsilon, delta) (analytic Gaussian, Balle, Wang 2018), so the
    release is (epsilon, delta)-DP. It fails with probability exactly p = ``failure_probability``
    because the margin is the one-sided normal quantile Phi^-1(1-p), not sqrt(2 ln(1/p)) (too
    large) nor sqrt(ln(1/p)) (too small: the optimistic margin of the reference code, see the
    design notes, Sec. 9.2).
    """

    sensitivity: float
    epsilon: float
    delta: float
    failure_probability: float
    side: str = "lower"

    def __post_init__(self) -> None:
        object.__setattr__(self, "sensitivity", check.positive("sensitivity", self.sensitivity))
        object.__setattr__(self, "epsilon", check.positive("epsilon", self.epsilon))
        object.__setattr__(self, "delta", check.open_unit("delta", self.delta))
        p = check.open_unit("failure_probability", self.failure_probability)
        if not p < 0.5:
            raise ValueError(f"failure_probability must be in (0, 0.5), got {self.failure_probability!r}")
        object.__setattr__(self, "failure_probability", p)
        _side(self.side)

    @property
    def noise_multiplier(self) -> float:
        return analytic_gaussian_sigma(self.epsilon, self.delta)

    @property
    def sigma(self) -> float:
        """Standard deviation of the added noise: sensitivity x sigma_G(epsilon, delta)."""
        return self.sensitivity * self.noise_multiplier

    @property
    def margin(self) -> float:
        """sigma Phi^-1(1 - p)."""
        return self.sigma * float(-special.ndtri(self.failure_probability))

    @property
    def privacy(self) -> Gaussian:
        return Gaussian(self.noise_multiplier, sensitivity=self.sensitivity)

    def release(self, value, rng: np.random.Generator, size=None):
        """The private bound of ``value`` (vectorised: ``size`` independent draws)."""
        return value + rng.normal(0.0, self.sigma, size=size) + _side(self.side) * self.margin


@dataclass(frozen=True)
class PTRResult:
    """What one Generalized-PTR run releases: the output (or ``BOTTOM``) and the test's release.

    ``test_release`` is whatever the test released (e.g. the private bounds); it is covered by
    the test's (eps_hat, delta_hat), so publishing it costs nothing extra.
    """

    output: Any
    passed: bool
    test_release: Any = None

    @property
    def refused(self) -> bool:
        return self.output is BOTTOM


@dataclass(frozen=True)
class GeneralizedPTR:
    """Generalized Propose-Test-Release (Redberg, Zhu, Wang 2023, Alg. 2; KRW Thm 6.1).

    Parameters
    ----------
    epsilon, delta
        The data-dependent target for the proposed mechanism: the test must (with probability
        at least 1 - ``false_pass``) pass only on data sets X with eps_phi(X) <= epsilon, where
        eps_phi is M_phi's data-dependent loss w.r.t. ``delta`` (both neighbour directions).
    test_epsilon, test_delta
        (eps_hat, delta_hat): the privacy of the test (everything it releases).
    false_pass
        delta': the test passes with probability at most delta' on any X with eps_phi(X) > epsilon.

    Notes
    -----
    The procedure is (epsilon + test_epsilon, delta + test_delta + false_pass)-DP under add/remove
    neighbours: [`privacy`][privselect.apps.ptr.gptr.GeneralizedPTR.privacy].
    """

    epsilon: float
    delta: float
    test_epsilon: float
    test_delta: float
    false_pass: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check.nonnegative("epsilon", self.epsilon))
        object.__setattr__(self, "test_epsilon", check.nonnegative("test_epsilon", self.test_epsilon))
        for name in ("delta", "test_delta", "false_pass"):
            value = check.real(name, getattr(self, name))
            if not 0 <= value < 1:
                raise ValueError(f"{name} must be in [0, 1), got {getattr(self, name)!r}")
            object.__setattr__(self, name, value)
        if not self.delta + self.test_delta + self.false_pass < 1:
            raise ValueError("delta + test_delta + false_pass must be < 1")

    @property
    def privacy(self) -> ApproxDP:
        """(eps + eps_hat, delta + delta_hat + delta')-DP: KRW Thm 6.1 (an upper bound)."""
        return ApproxDP(self.epsilon + self.test_epsilon, self.delta + self.test_delta + self.false_pass)

    def run(self, data: Any, test: Callable[[Any, np.random.Generator], tuple[bool, Any]],
            release: Callable[[Any, Any, np.random.Generator], Any], rng: np.random.Generator) -> PTRResult:
        """Run the test, then either refuse (``BOTTOM``) or release ``M_phi(data)``.

        ``test(data, rng) -> (passed, test_release)`` must be the (eps_hat, delta_hat)-DP test
        with false-pass rate <= delta'; ``release(data, test_release, rng)`` is M_phi, which may
        use the test's (already private) release. The test and the mechanism get independent
        generators spawned from ``rng``.
        """
        test_rng, mech_rng = rng.spawn(2)
        passed, info = test(data, test_rng)
        if not passed:
            return PTRResult(BOTTOM, False, info)
        return PTRResult(release(data, info, mech_rng), True, info)
