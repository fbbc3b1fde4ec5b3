"""Search-space laws and the law of a run's privacy over them (below ``selection``: certificates read them).

A search space is a dict ``{name: law}`` of the value objects below, or any callable
``sampler(rng) -> params``; the tuning layer draws from it ([`privselect.tuning.space`][privselect.tuning.space]).
[`privacy_law`][privselect.selection.laws.privacy_law] turns a finite space and a hyperparameter-dependent privacy
``params -> Mechanism`` into the law of the run's mechanism (a
[`HyperparameterMixture`][privselect.accounting.average.HyperparameterMixture]), which ``certify`` averages and
``certify_adaptive`` takes the supremum over.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn

import numpy as np

from .. import _validation as check

__all__ = ["Uniform", "LogUniform", "IntUniform", "IntLogUniform", "Choice", "Distribution", "SearchSpace",
           "privacy_law", "probe_privacy", "Probe", "UndeclaredAccess", "ContinuousDependence",
           "MAX_ENUMERATED_CANDIDATES"]

# A finite space with more combinations than this is not enumerated for the mixture certificate.
MAX_ENUMERATED_CANDIDATES = 100_000


class Distribution:
    """A distribution of one hyperparameter."""

    def sample(self, rng: np.random.Generator) -> Any:  # pragma: no cover - interface
        raise NotImplementedError

    def support(self) -> tuple[tuple[Any, float], ...] | None:
        """(value, probability) pairs of a finite law; None for a continuous one."""
        return None

    @property
    def suggest_law(self) -> Distribution:
        """The law a study's ``suggest_*`` call names for this hyperparameter: itself (a public prior: its range)."""
        return self


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
    """Uniform on the integers low, low + step, ..., up to high (inclusive)."""

    low: int
    high: int
    step: int = 1

    def __post_init__(self) -> None:
        for name in ("low", "high", "step"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                raise TypeError(f"IntUniform {name} must be an integer, got {value!r}")
        if not self.low <= self.high:
            raise ValueError(f"IntUniform needs low <= high, got low={self.low!r}, high={self.high!r}")
        if self.step < 1:
            raise ValueError(f"IntUniform step must be a positive integer, got {self.step!r}")

    def sample(self, rng: np.random.Generator) -> int:
        return int(self.low + self.step * rng.integers(0, (self.high - self.low) // self.step, endpoint=True))

    def support(self) -> tuple[tuple[Any, float], ...]:
        values = range(self.low, self.high + 1, self.step)
        return tuple((int(v), 1.0 / len(values)) for v in values)


@dataclass(frozen=True)
class IntLogUniform(Distribution):
    """Integers low..high, log-uniform (Optuna's ``suggest_int(log=True)``: round a log-uniform draw)."""

    low: int
    high: int

    def __post_init__(self) -> None:
        if isinstance(self.low, bool) or not isinstance(self.low, (int, np.integer)) or self.low < 1:
            raise ValueError(f"IntLogUniform low must be a positive integer, got {self.low!r}")
        if isinstance(self.high, bool) or not isinstance(self.high, (int, np.integer)) or self.high < self.low:
            raise ValueError(f"IntLogUniform needs an integer high >= low, got {self.high!r}")

    def sample(self, rng: np.random.Generator) -> int:
        value = math.exp(rng.uniform(math.log(self.low - 0.5), math.log(self.high + 0.5)))
        return int(min(max(round(value), self.low), self.high))


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

    def support(self) -> tuple[tuple[Any, float], ...]:
        return tuple((option, 1.0 / len(self.options)) for option in self.options)


SearchSpace = Mapping[str, Distribution] | Callable[[np.random.Generator], Any]

# -- the law of a run's privacy -----------------------------------------------------------


class ContinuousDependence(LookupError):
    """``privacy(params)`` read a hyperparameter with a continuous law."""


class _NotEnumerated(LookupError):
    """``privacy(params)`` read a finite hyperparameter that is not enumerated yet."""


class UndeclaredAccess(ValueError):
    """``privacy(params)`` read a hyperparameter that is not declared, or iterated over params.

    Deliberately not a ``KeyError``: ``Mapping.get`` and ``in`` turn a KeyError into a default.
    """


_ITERATION = ("privacy(params) iterated over params (a for loop, keys(), values(), items(), len() or dict(params)): "
              "read each hyperparameter by name, params['name'], so that privselect knows which ones the privacy "
              "depends on")


class Probe(Mapping):
    """The params a privacy callable sees while its law is enumerated (and when a candidate is checked).

    Every access is by name: reading a continuous hyperparameter raises
    [`ContinuousDependence`][privselect.selection.laws.ContinuousDependence]; a finite one that is not enumerated yet
    raises `_NotEnumerated` (it is then added); an undeclared name, through ``[]``, ``get`` or
    ``in``, and any iteration (``keys()``, ``values()``, ``items()``, ``len``, ``for``) raise
    [`UndeclaredAccess`][privselect.selection.laws.UndeclaredAccess]. Each is also recorded in ``refused``, so a callable that
    catches the exception and falls back to a default is refused all the same.
    """

    def __init__(self, names: tuple[str, ...], values: Mapping[str, Any], continuous: frozenset[str]) -> None:
        self._names, self._values, self._continuous = names, dict(values), continuous
        self.refused: list[LookupError | ValueError] = []

    def _refuse(self, error: LookupError | ValueError) -> NoReturn:
        self.refused.append(error)
        raise error

    def __getitem__(self, name: object) -> Any:
        if not isinstance(name, str) or name not in self._names:
            self._refuse(UndeclaredAccess(f"privacy(params) read {name!r}, which is not declared: the certificate "
                                          "covers only hyperparameters whose law it knows (the search space; for a "
                                          "PrivateStudy, privacy_space). Declare its law there, e.g. "
                                          f"{{{name!r}: Choice([...])}}; declared: {', '.join(self._names)}"))
        if name in self._continuous:
            self._refuse(ContinuousDependence(name))
        if name not in self._values:
            self._refuse(_NotEnumerated(name))
        return self._values[name]

    def get(self, name: str, default: Any = None) -> Any:
        return self[name]

    def __contains__(self, name: object) -> bool:
        if isinstance(name, str) and name in self._names:
            return True  # a declared hyperparameter is always present (its value is not read)
        self[name]  # refuses the undeclared name
        return True  # pragma: no cover - the line above raises

    def __iter__(self) -> Iterator[str]:
        self._refuse(UndeclaredAccess(_ITERATION))

    def __len__(self) -> int:
        self._refuse(UndeclaredAccess(_ITERATION))

    def keys(self):
        self._refuse(UndeclaredAccess(_ITERATION))

    values = items = keys

    def __eq__(self, other: object) -> bool:
        self._refuse(UndeclaredAccess(_ITERATION))

    __hash__ = None  # type: ignore[assignment]

    def first_refusal(self) -> LookupError | ValueError | None:
        return self.refused[0] if self.refused else None


def probe_privacy(privacy: Callable[[Any], Any], probe: Probe) -> Any:
    """``privacy(probe)``, raising the probe's first refusal even if the callable caught it."""
    try:
        result = privacy(probe)
    except Exception:
        refusal = probe.first_refusal()
        if refusal is None:
            raise
        raise refusal from None
    refusal = probe.first_refusal()
    if refusal is not None:
        raise refusal
    return result


def privacy_law(space: SearchSpace | None, privacy: Callable[[Any], Any], transform: Callable[[Any], Any] = lambda m: m):
    """The law of ``transform(privacy(params))`` for params drawn from ``space``; exact, by enumeration.

    Only the hyperparameters that ``privacy`` reads are enumerated (discovered by reading:
    a read of a new finite hyperparameter adds it and starts again), each with its sampling
    probabilities (``Choice``, ``IntUniform``); the others integrate out. A read of a
    hyperparameter with a continuous law (or a ``space`` that is not a dict: callable or None) raises
    [`ContinuousDependence`][privselect.selection.laws.ContinuousDependence], naming it;
    a read of an undeclared name, or iteration over params, raises
    [`UndeclaredAccess`][privselect.selection.laws.UndeclaredAccess] (see [`Probe`][privselect.selection.laws.Probe]).
    Equal mechanisms are merged. Returns a
    [`HyperparameterMixture`][privselect.accounting.average.HyperparameterMixture].
    """
    if not isinstance(space, Mapping):
        raise ContinuousDependence("a callable search space has no enumerable law; use a dict of distributions")
    supports = {name: dist.support() for name, dist in space.items()}
    continuous = frozenset(name for name, s in supports.items() if s is None)
    read: list[str] = []
    while True:
        try:
            return _enumerate(tuple(space), {name: supports[name] for name in read}, continuous, privacy, transform)
        except _NotEnumerated as exc:
            read.append(exc.args[0])


def _enumerate(names, supports, continuous, privacy, transform):
    from ..accounting.average import HyperparameterMixture
    from ..mechanisms import Mechanism

    size = math.prod(len(s) for s in supports.values())
    if size > MAX_ENUMERATED_CANDIDATES:
        raise ValueError(f"the hyperparameters that privacy(params) reads ({', '.join(supports)}) have {size} "
                         f"combinations, more than the {MAX_ENUMERATED_CANDIDATES} enumerated for the mixture certificate")
    weights: dict[Any, float] = {}
    for combination in itertools.product(*supports.values()):
        values = dict(zip(supports, (value for value, _ in combination)))
        mechanism = probe_privacy(privacy, Probe(names, values, continuous))
        if not isinstance(mechanism, Mechanism):
            raise TypeError(f"privacy(params) must return a Mechanism, got {type(mechanism).__name__} "
                            f"for params {values!r}")
        mechanism = transform(mechanism)
        weights[mechanism] = weights.get(mechanism, 0.0) + math.prod(p for _, p in combination)
    return HyperparameterMixture(tuple((weight, mechanism) for mechanism, weight in weights.items()))
