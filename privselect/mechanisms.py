"""Immutable descriptions of what ONE base run does, and their algebra.

A mechanism description says which noise is added with which parameters; it
carries no numerics. Accountants (``privselect.accounting``) interpret these
descriptions: each one registers how it reads every description it supports.

Conventions
-----------
* Noise-multiplier parametrisation: ``Gaussian(s, sensitivity=D)`` adds N(0, (s * D)^2)
  noise to a query of sensitivity D, so its privacy does not depend on D: the dominating
  pair is (N(mu, 1), N(0, 1)) with ``mu = 1 / s``. Likewise ``Laplace(b, sensitivity=D)``
  adds Lap(b * D) and is (1/b)-DP. ``sensitivity`` only says how much noise to draw
  (e.g. for the tuner's ``score_noise``).
* Neighbouring relation: the base descriptions are dominating pairs for whatever
  relation their ``sensitivity`` is measured under. Poisson subsampling is
  certified for add/remove neighbours (both directions, Zhu, Dong, Wang 2022,
  Thm 11(1)). Sampling without replacement expects the base to be described under
  replace-one neighbours (use the replace-one sensitivity, e.g. twice the clipping
  norm for a clipped sum) and is certified for add/remove neighbours of the
  sampled mechanism (Zhu, Dong, Wang 2022, Thm 11(2)).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from typing import Iterator

from . import _validation as check

__all__ = [
    "Mechanism",
    "Gaussian",
    "Laplace",
    "RandomizedResponse",
    "PureDP",
    "ApproxDP",
    "PoissonSubsampled",
    "SampledWithoutReplacement",
    "Composition",
    "compose",
]


@dataclass(frozen=True)
class Mechanism:
    """Base class of all mechanism descriptions (frozen, hashable, comparable)."""

    def poisson_subsample(self, rate: float) -> "PoissonSubsampled":
        """Run this mechanism on a Poisson subsample with inclusion probability ``rate``."""
        return PoissonSubsampled(self, rate)

    def sample_without_replacement(self, rate: float) -> "SampledWithoutReplacement":
        """Run this mechanism on a uniformly random subset of size ``rate * n``."""
        return SampledWithoutReplacement(self, rate)

    def compose(self, k: int) -> "Composition":
        """k-fold (adaptive) self-composition."""
        k = check.positive_int("k", k)
        return Composition(((self, k),))

    def components(self) -> Iterator[tuple["Mechanism", int]]:
        """The distinct (mechanism, count) pairs this mechanism composes."""
        yield self, 1

    @property
    def is_symmetric(self) -> bool:
        """True if both neighbouring directions have the same privacy profile."""
        return True


@dataclass(frozen=True)
class Gaussian(Mechanism):
    """Gaussian mechanism: noise N(0, (noise_multiplier * sensitivity)^2)."""

    noise_multiplier: float
    sensitivity: float = 1.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "noise_multiplier", check.positive("noise_multiplier", self.noise_multiplier))
        object.__setattr__(self, "sensitivity", check.positive("sensitivity", self.sensitivity))

    @property
    def mu(self) -> float:
        """GDP parameter: the mechanism is exactly mu-GDP with mu = 1 / noise_multiplier."""
        return 1.0 / self.noise_multiplier


@dataclass(frozen=True)
class Laplace(Mechanism):
    """Laplace mechanism: noise Lap(0, scale * sensitivity) on a query of that sensitivity."""

    scale: float
    sensitivity: float = 1.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "scale", check.positive("scale", self.scale))
        object.__setattr__(self, "sensitivity", check.positive("sensitivity", self.sensitivity))

    @property
    def epsilon(self) -> float:
        """Pure-DP parameter of one release: 1 / scale."""
        return 1.0 / self.scale


@dataclass(frozen=True)
class RandomizedResponse(Mechanism):
    """Binary randomized response: report the true bit with probability p."""

    p: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "p", check.open_unit("p", self.p))

    @property
    def epsilon(self) -> float:
        """Pure-DP parameter: |log(p / (1 - p))|."""
        return abs(math.log(self.p) - math.log1p(-self.p))


@dataclass(frozen=True)
class PureDP(Mechanism):
    """A black-box epsilon-DP mechanism (worst case: randomized response)."""

    epsilon: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check.nonnegative("epsilon", self.epsilon))


@dataclass(frozen=True)
class ApproxDP(Mechanism):
    """A black-box (epsilon, delta)-DP mechanism (worst case: Gopi et al. 2021, App. B.1)."""

    epsilon: float
    delta: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check.nonnegative("epsilon", self.epsilon))
        d = check.real("delta", self.delta)
        if not 0 <= d < 1:
            raise ValueError(f"delta must be in [0, 1), got {self.delta!r}")
        object.__setattr__(self, "delta", d)


_SUBSAMPLABLE = (Gaussian, Laplace, RandomizedResponse, PureDP)
#: Further bases Poisson subsampling accepts, added by the modules defining them
#: (``accounting.dominating.ProfileMechanism``: a whole procedure run on one subsample).
POISSON_BASES: list[type] = []


def _check_subsample_base(base: object, how: str, extra: tuple[type, ...] = ()) -> None:
    if not isinstance(base, _SUBSAMPLABLE + extra):
        names = ", ".join(c.__name__ for c in _SUBSAMPLABLE + extra)
        raise ValueError(
            f"{how} supports bases {names}; got {type(base).__name__}. "
            "Subsample each step, then compose."
        )


@dataclass(frozen=True)
class PoissonSubsampled(Mechanism):
    """``base`` run on a Poisson subsample (each record kept with probability ``rate``).

    Add/remove neighbours; the two directions differ (Zhu, Dong, Wang 2022, Thm 11(1);
    Gopi, Lee, Wutschitz 2021, App. B.2).
    """

    base: Mechanism
    rate: float

    def __post_init__(self) -> None:
        _check_subsample_base(self.base, "poisson_subsample", tuple(POISSON_BASES))
        object.__setattr__(self, "rate", check.half_open_unit("rate", self.rate))

    @property
    def is_symmetric(self) -> bool:
        return self.rate == 1.0


@dataclass(frozen=True)
class SampledWithoutReplacement(Mechanism):
    """``base`` run on a uniformly random subset of size ``rate * n`` (Zhu, Dong, Wang 2022, Thm 11(2)).

    ``base`` must describe the mechanism under replace-one neighbours; the result is
    certified for adding or removing one record of the full data set.
    """

    base: Mechanism
    rate: float

    def __post_init__(self) -> None:
        _check_subsample_base(self.base, "sample_without_replacement")
        object.__setattr__(self, "rate", check.half_open_unit("rate", self.rate))

    @property
    def is_symmetric(self) -> bool:
        return self.rate == 1.0


@dataclass(frozen=True)
class Composition(Mechanism):
    """Adaptive composition of ``count`` runs of each ``mechanism`` in ``parts``.

    ``parts`` holds distinct, non-composite mechanisms with positive counts, in a
    canonical order, so equal compositions compare equal.
    """

    parts: tuple[tuple[Mechanism, int], ...]

    def __post_init__(self) -> None:
        if not self.parts:
            raise ValueError("a composition needs at least one mechanism")
        merged: Counter[Mechanism] = Counter()
        for item in self.parts:
            if not (isinstance(item, tuple) and len(item) == 2):
                raise TypeError("parts must be (mechanism, count) pairs")
            mechanism, count = item
            if not isinstance(mechanism, Mechanism):
                raise TypeError(f"expected a Mechanism, got {type(mechanism).__name__}")
            count = check.positive_int("count", count)
            for inner, inner_count in mechanism.components():
                merged[inner] += inner_count * count
        canonical = tuple(sorted(merged.items(), key=lambda kv: repr(kv[0])))
        object.__setattr__(self, "parts", canonical)

    def compose(self, k: int) -> "Composition":
        k = check.positive_int("k", k)
        return Composition(tuple((m, c * k) for m, c in self.parts))

    def components(self) -> Iterator[tuple[Mechanism, int]]:
        yield from self.parts

    def poisson_subsample(self, rate: float) -> "PoissonSubsampled":
        raise ValueError("poisson_subsample applies to one step; subsample each step, then compose")

    def sample_without_replacement(self, rate: float) -> "SampledWithoutReplacement":
        raise ValueError("sample_without_replacement applies to one step; subsample each step, then compose")

    @property
    def total_count(self) -> int:
        return sum(c for _, c in self.parts)

    @property
    def is_symmetric(self) -> bool:
        return all(m.is_symmetric for m, _ in self.parts)


def compose(*mechanisms: Mechanism) -> Composition:
    """Heterogeneous adaptive composition: ``compose(m1, m2, m3.compose(10))``."""
    if not mechanisms:
        raise ValueError("compose needs at least one mechanism")
    for m in mechanisms:
        if not isinstance(m, Mechanism):
            raise TypeError(f"compose expects Mechanism descriptions, got {type(m).__name__}")
    return Composition(tuple((m, 1) for m in mechanisms))
