"""Search spaces: data-independent distributions of hyperparameters.

A search space is a dict ``{name: distribution}`` of the value objects below, or any callable
``sampler(rng) -> params``. Candidates are drawn i.i.d. from it with the tuner's generator,
before any run and independently of the data and of past scores (Papernot, Steinke 2022;
KRW Sec. 4 assume exactly this).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from . import _validation as check

__all__ = ["Uniform", "LogUniform", "IntUniform", "Choice", "Distribution", "SearchSpace", "sample_candidates"]


class Distribution:
    """A distribution of one hyperparameter."""

    def sample(self, rng: np.random.Generator) -> Any:  # pragma: no cover - interface
        raise NotImplementedError


@dataclass(frozen=True)
class Uniform(Distribution):
    """Uniform on [low, high]."""

    low: float
    high: float

    def __post_init__(self) -> None:
        low, high = check.real("low", self.low), check.real("high", self.high)
        if not (math.isfinite(low) and math.isfinite(high) and low < high):
            raise ValueError(f"Uniform needs finite low < high, got low={self.low!r}, high={self.high!r}")

    def sample(self, rng: np.random.Generator) -> float:
        return float(rng.uniform(self.low, self.high))


@dataclass(frozen=True)
class LogUniform(Distribution):
    """Log-uniform on [low, high], 0 < low < high."""

    low: float
    high: float

    def __post_init__(self) -> None:
        low, high = check.positive("low", self.low), check.positive("high", self.high)
        if not low < high:
            raise ValueError(f"LogUniform needs 0 < low < high, got low={self.low!r}, high={self.high!r}")

    def sample(self, rng: np.random.Generator) -> float:
        return float(math.exp(rng.uniform(math.log(self.low), math.log(self.high))))


@dataclass(frozen=True)
class IntUniform(Distribution):
    """Uniform on the integers low, ..., high (inclusive)."""

    low: int
    high: int

    def __post_init__(self) -> None:
        for name in ("low", "high"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                raise TypeError(f"IntUniform {name} must be an integer, got {value!r}")
        if not self.low <= self.high:
            raise ValueError(f"IntUniform needs low <= high, got low={self.low!r}, high={self.high!r}")

    def sample(self, rng: np.random.Generator) -> int:
        return int(rng.integers(self.low, self.high, endpoint=True))


@dataclass(frozen=True)
class Choice(Distribution):
    """Uniform choice among ``options`` (drawn with replacement, as the selection theorems need)."""

    options: tuple

    def __init__(self, options: Sequence[Any]) -> None:
        if isinstance(options, (Mapping, set, frozenset)):
            raise TypeError(f"Choice options must be an ordered sequence (list or tuple), got {type(options).__name__}")
        try:
            opts = tuple(options)
        except TypeError:
            raise TypeError(f"Choice options must be a list or tuple of values, got {type(options).__name__}") from None
        if not opts:
            raise ValueError("Choice options must hold at least one option, got an empty sequence")
        object.__setattr__(self, "options", opts)

    def sample(self, rng: np.random.Generator) -> Any:
        return self.options[int(rng.integers(len(self.options)))]


SearchSpace = Mapping[str, Distribution] | Callable[[np.random.Generator], Any]


def validate_space(space: SearchSpace) -> SearchSpace:
    """Check a search space at the public surface."""
    if callable(space) and not isinstance(space, Mapping):
        return space
    if not isinstance(space, Mapping) or not space:
        raise TypeError("search_space must be a non-empty dict of privselect.space distributions or a callable(rng)")
    for name, dist in space.items():
        if not isinstance(name, str):
            raise TypeError(f"search_space keys must be strings, got {name!r}")
        if not isinstance(dist, Distribution):
            raise TypeError(
                f"search_space[{name!r}] must be a privselect.space distribution (Uniform, LogUniform, IntUniform, "
                f"Choice), got {type(dist).__name__}"
            )
    return space


def sample_candidates(space: SearchSpace, n: int, rng: np.random.Generator) -> list[Any]:
    """Draw ``n`` i.i.d. candidates (in key order for dict spaces, so the stream is reproducible)."""
    if callable(space) and not isinstance(space, Mapping):
        return [space(rng) for _ in range(n)]
    return [{name: dist.sample(rng) for name, dist in space.items()} for _ in range(n)]
