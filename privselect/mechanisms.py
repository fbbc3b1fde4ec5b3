"""Immutable descriptions of what ONE base run does, and their algebra.

A mechanism description says which noise is added with which parameters; it
carries no numerics. Accountants (``privselect.accounting``) interpret these
descriptions: each one registers how it reads every description it supports.

Conventions (one meaning of each parameter, everywhere)
-------------------------------------------------------
* ``sensitivity`` is the query's sensitivity under the mechanism's own neighbouring
  ``relation`` (default `NeighbouringRelation.ADD_REMOVE`: for a clipped sum, the
  clipping norm). ``Gaussian(s, sensitivity=D)`` adds N(0, (s * D)^2) noise (Opacus and
  TF-Privacy's noise multiplier), so it is exactly mu-GDP with ``mu = 1 / s`` under its
  relation, whatever D. Likewise ``Laplace(b, sensitivity=D)`` adds Lap(b * D) and is
  (1/b)-DP. ``PureDP`` / ``ApproxDP`` / ``RandomizedResponse`` state their guarantee under
  their ``relation``.
* Under replace-one neighbours an add/remove description is worth twice as much: replacing
  a record is removing it and adding another, so the replace-one sensitivity is at most
  twice the add/remove one (group privacy of size 2 for the black boxes).
  [`Mechanism.under_replace_one`][privselect.mechanisms.Mechanism.under_replace_one] gives that description (same noise, doubled
  sensitivity).
* Poisson subsampling needs an add/remove base and is certified for add/remove neighbours,
  both directions (Zhu, Dong, Wang 2022, Thm 11(1)). Sampling without replacement takes its
  privacy from the base's replace-one description ([`SampledWithoutReplacement.replace_one_base`][privselect.mechanisms.SampledWithoutReplacement.replace_one_base],
  derived automatically from an add/remove base: write the clipping norm and the correct,
  larger epsilon follows) and is certified for add/remove neighbours of the full data set
  (Zhu, Dong, Wang 2022, Thm 11(2)).
"""

from __future__ import annotations

import dataclasses
import enum
import math
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

from . import _validation as check

__all__ = [
    "NeighbouringRelation",
    "dpsgd",
    "CERTIFIED_SAMPLERS",
    "refuse_uncertified_sampling",
    "uncertified_sampling_message",
    "mechanism_from_dict",
    "Mechanism",
    "Gaussian",
    "Laplace",
    "RandomizedResponse",
    "PureDP",
    "ApproxDP",
    "PoissonSubsampled",
    "SampledWithoutReplacement",
    "RandomAllocation",
    "Composition",
    "compose",
]


class NeighbouringRelation(str, enum.Enum):
    """Which data sets are neighbours: one record added or removed, or one record replaced."""

    ADD_REMOVE = "add_remove"
    REPLACE_ONE = "replace_one"

    def __str__(self) -> str:
        return self.value

    def __repr__(self) -> str:
        return f"NeighbouringRelation.{self.name}"

    @classmethod
    def parse(cls, value: object) -> NeighbouringRelation:
        """A relation from itself or its name ("add_remove", "replace_one"); ValueError otherwise."""
        if isinstance(value, cls):
            return value
        if isinstance(value, str):
            try:
                return cls(value.lower().replace("/", "_").replace("-", "_"))
            except ValueError:
                pass
        raise ValueError(f"relation must be one of {[r.value for r in cls]}, got {value!r}")


ADD_REMOVE = NeighbouringRelation.ADD_REMOVE
REPLACE_ONE = NeighbouringRelation.REPLACE_ONE

#: Mechanism classes by name (every subclass registers itself), for [`mechanism_from_dict`][privselect.mechanisms.mechanism_from_dict].
_MECHANISM_TYPES: dict[str, type] = {}


@dataclass(frozen=True)
class Mechanism:
    """Base class of all mechanism descriptions (frozen, hashable, comparable).

    ``repr`` shows the parameters that differ from their defaults, as a user writes them.
    """

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        _MECHANISM_TYPES[cls.__name__] = cls

    def to_dict(self) -> dict:
        """Structured, JSON-safe description: {"type": class name, field: value, ...} (nested for bases).

        Non-finite numbers are written as the strings "inf", "-inf", "nan"; [`mechanism_from_dict`][privselect.mechanisms.mechanism_from_dict]
        reads it back.
        """
        out: dict = {"type": type(self).__name__}
        for f in dataclasses.fields(self):
            out[f.name] = _to_json_value(getattr(self, f.name))
        return out

    def __repr__(self) -> str:
        shown = []
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.default is not dataclasses.MISSING and value == f.default:
                continue
            shown.append(f"{f.name}={value!r}")
        return f"{type(self).__name__}({', '.join(shown)})"

    @property
    def relation(self) -> NeighbouringRelation:
        """The neighbouring relation this description's privacy is stated for."""
        return ADD_REMOVE

    def under_replace_one(self) -> Mechanism:
        """This mechanism described under replace-one neighbours (itself if it already is)."""
        if self.relation is REPLACE_ONE:
            return self
        raise ValueError(f"{type(self).__name__} has no replace-one description; describe it with "
                         "relation='replace_one'")

    def poisson_subsample(self, rate: float) -> PoissonSubsampled:
        """Run this mechanism on a Poisson subsample with inclusion probability ``rate``."""
        return PoissonSubsampled(self, rate)

    def sample_without_replacement(self, rate: float) -> SampledWithoutReplacement:
        """Run this mechanism on a uniformly random subset of size ``rate * n``."""
        return SampledWithoutReplacement(self, rate)

    def random_allocation(self, steps: int, participations: int = 1) -> RandomAllocation:
        """One epoch of ``steps`` runs in which each record joins exactly ``participations`` of them, chosen
        uniformly without replacement and drawn afresh every epoch (compose over epochs with ``.compose``)."""
        return RandomAllocation(self, steps, participations)

    def fixed_bins_allocation(self, steps: int, cycles: int) -> RandomAllocation:
        """jax-privacy's ``BallsInBinsSampling``: bins drawn ONCE, then ``cycles`` passes over the same ``steps``
        batches. By sufficiency (docs/trainers.md) this is a single allocation among ``steps`` steps of a
        Gaussian with noise multiplier sigma / sqrt(cycles), never ``cycles`` composed epochs."""
        if not isinstance(self, Gaussian) or self.relation is not ADD_REMOVE:
            raise ValueError("fixed_bins_allocation needs an add/remove Gaussian base")
        cycles = check.positive_int("cycles", cycles)
        return RandomAllocation(Gaussian(self.noise_multiplier / math.sqrt(cycles), self.sensitivity), steps, 1)

    def compose(self, k: int) -> Composition:
        """k-fold (adaptive) self-composition."""
        k = check.positive_int("k", k)
        return Composition(((self, k),))

    def components(self) -> Iterator[tuple[Mechanism, int]]:
        """The distinct (mechanism, count) pairs this mechanism composes."""
        yield self, 1

    @property
    def is_symmetric(self) -> bool:
        """True if both neighbouring directions have the same privacy profile."""
        return True


def _relation_field(self: Mechanism) -> None:
    object.__setattr__(self, "relation", NeighbouringRelation.parse(self.relation))


@dataclass(frozen=True, repr=False)
class Gaussian(Mechanism):
    """Gaussian mechanism: noise N(0, (noise_multiplier * sensitivity)^2); mu = 1 / noise_multiplier
    under ``relation`` (Dong, Roth, Su 2022, Thm 2.7)."""

    noise_multiplier: float
    sensitivity: float = 1.0
    relation: NeighbouringRelation = ADD_REMOVE

    def __post_init__(self) -> None:
        object.__setattr__(self, "noise_multiplier", check.positive("noise_multiplier", self.noise_multiplier))
        object.__setattr__(self, "sensitivity", check.positive("sensitivity", self.sensitivity))
        _relation_field(self)

    def under_replace_one(self) -> Gaussian:
        """Same noise, replace-one sensitivity 2 x sensitivity: noise multiplier halved (mu doubled)."""
        if self.relation is REPLACE_ONE:
            return self
        return Gaussian(self.noise_multiplier / 2, 2 * self.sensitivity, REPLACE_ONE)

    @property
    def mu(self) -> float:
        """GDP parameter: the mechanism is exactly mu-GDP with mu = 1 / noise_multiplier."""
        return 1.0 / self.noise_multiplier


@dataclass(frozen=True, repr=False)
class Laplace(Mechanism):
    """Laplace mechanism: noise Lap(0, scale * sensitivity) on a query of that sensitivity; (1/scale)-DP."""

    scale: float
    sensitivity: float = 1.0
    relation: NeighbouringRelation = ADD_REMOVE

    def __post_init__(self) -> None:
        object.__setattr__(self, "scale", check.positive("scale", self.scale))
        object.__setattr__(self, "sensitivity", check.positive("sensitivity", self.sensitivity))
        _relation_field(self)

    def under_replace_one(self) -> Laplace:
        """Same noise, replace-one sensitivity 2 x sensitivity: scale halved (epsilon doubled)."""
        if self.relation is REPLACE_ONE:
            return self
        return Laplace(self.scale / 2, 2 * self.sensitivity, REPLACE_ONE)

    @property
    def epsilon(self) -> float:
        """Pure-DP parameter of one release: 1 / scale."""
        return 1.0 / self.scale


@dataclass(frozen=True, repr=False)
class RandomizedResponse(Mechanism):
    """Binary randomized response: report the true bit with probability p (|log(p/(1-p))|-DP)."""

    p: float
    relation: NeighbouringRelation = ADD_REMOVE

    def __post_init__(self) -> None:
        object.__setattr__(self, "p", check.open_unit("p", self.p))
        _relation_field(self)

    def under_replace_one(self) -> RandomizedResponse:
        """Group privacy of size 2: randomized response at twice the epsilon, p' = p^2 / (p^2 + (1-p)^2)."""
        if self.relation is REPLACE_ONE:
            return self
        p, q = self.p, 1.0 - self.p
        return RandomizedResponse(p * p / (p * p + q * q), REPLACE_ONE)

    @property
    def epsilon(self) -> float:
        """Pure-DP parameter: |log(p / (1 - p))|."""
        return abs(math.log(self.p) - math.log1p(-self.p))


@dataclass(frozen=True, repr=False)
class PureDP(Mechanism):
    """A black-box epsilon-DP mechanism (worst case: randomized response)."""

    epsilon: float
    relation: NeighbouringRelation = ADD_REMOVE

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check.nonnegative("epsilon", self.epsilon))
        _relation_field(self)

    def under_replace_one(self) -> PureDP:
        """Group privacy of size 2: 2 epsilon."""
        return self if self.relation is REPLACE_ONE else PureDP(2 * self.epsilon, REPLACE_ONE)


@dataclass(frozen=True, repr=False)
class ApproxDP(Mechanism):
    """A black-box (epsilon, delta)-DP mechanism (worst case: Gopi et al. 2021, App. B.1)."""

    epsilon: float
    delta: float
    relation: NeighbouringRelation = ADD_REMOVE

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check.nonnegative("epsilon", self.epsilon))
        d = check.real("delta", self.delta)
        if not 0 <= d < 1:
            raise ValueError(f"delta must be in [0, 1), got {self.delta!r}")
        object.__setattr__(self, "delta", d)
        _relation_field(self)

    def under_replace_one(self) -> ApproxDP:
        """Group privacy of size 2 (Dwork, Roth 2014, Thm 2.2 / Vadhan 2017, Lemma 2.2):
        (2 epsilon, (1 + e^epsilon) delta), capped below 1."""
        if self.relation is REPLACE_ONE:
            return self
        below_one = math.nextafter(1.0, 0.0)
        grown = (1.0 + math.exp(self.epsilon)) * self.delta if self.epsilon < 700.0 else math.inf * self.delta
        return ApproxDP(2 * self.epsilon, min(grown, below_one) if self.delta > 0 else 0.0, REPLACE_ONE)


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


@dataclass(frozen=True, repr=False)
class PoissonSubsampled(Mechanism):
    """``base`` run on a Poisson subsample (each record kept with probability ``rate``).

    Add/remove neighbours, for the base and the result; the two directions differ (Zhu, Dong,
    Wang 2022, Thm 11(1); Gopi, Lee, Wutschitz 2021, App. B.2).
    """

    base: Mechanism
    rate: float

    def __post_init__(self) -> None:
        _check_subsample_base(self.base, "poisson_subsample", tuple(POISSON_BASES))
        if self.base.relation is not ADD_REMOVE:
            raise ValueError("poisson_subsample needs a base described under add/remove neighbours (Zhu, Dong, "
                             f"Wang 2022, Thm 11(1)); got relation={self.base.relation.value!r}")
        object.__setattr__(self, "rate", check.half_open_unit("rate", self.rate))

    @property
    def is_symmetric(self) -> bool:
        return self.rate == 1.0


@dataclass(frozen=True, repr=False)
class SampledWithoutReplacement(Mechanism):
    """``base`` run on a uniformly random subset of size ``rate * n`` (Zhu, Dong, Wang 2022, Thm 11(2)).

    The privacy comes from the base's replace-one description ([`replace_one_base`][privselect.mechanisms.SampledWithoutReplacement.replace_one_base]): an
    add/remove base (e.g. ``Gaussian(1.1)`` for noise 1.1 x the clipping norm) is converted by
    [`Mechanism.under_replace_one`][privselect.mechanisms.Mechanism.under_replace_one] (sensitivity doubled). The result is certified for
    adding or removing one record of the full data set.
    """

    base: Mechanism
    rate: float

    def __post_init__(self) -> None:
        _check_subsample_base(self.base, "sample_without_replacement")
        object.__setattr__(self, "rate", check.half_open_unit("rate", self.rate))

    @property
    def replace_one_base(self) -> Mechanism:
        """The base under replace-one neighbours: the pair Thm 11(2) subsamples."""
        return self.base.under_replace_one()

    @property
    def is_symmetric(self) -> bool:
        return self.rate == 1.0


@dataclass(frozen=True, repr=False)
class RandomAllocation(Mechanism):
    """One epoch of random allocation (balls-in-bins redrawn per epoch): ``base`` (an add/remove Gaussian) run
    ``steps`` times, each record in exactly ``participations`` of the steps, chosen uniformly without replacement
    (Feldman, Shenfeld 2025, arXiv 2502.08202). Add/remove neighbours, both directions."""

    base: Mechanism
    steps: int
    participations: int = 1

    def __post_init__(self) -> None:
        if not isinstance(self.base, Gaussian) or self.base.relation is not ADD_REMOVE:
            raise ValueError("random_allocation needs an add/remove Gaussian base; got "
                             f"{type(self.base).__name__}")
        object.__setattr__(self, "steps", check.positive_int("steps", self.steps))
        k = check.positive_int("participations", self.participations)
        if k > self.steps:
            raise ValueError(f"participations must be at most steps={self.steps}, got {k}")
        object.__setattr__(self, "participations", k)

    @property
    def is_symmetric(self) -> bool:
        return False


@dataclass(frozen=True, repr=False)
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
        relations = {m.relation for m, _ in canonical}
        if len(relations) > 1:
            raise ValueError("a composition needs one neighbouring relation; got parts under "
                             f"{sorted(r.value for r in relations)} (describe each part under the same relation, "
                             "e.g. with .under_replace_one())")
        object.__setattr__(self, "parts", canonical)

    @property
    def relation(self) -> NeighbouringRelation:
        return self.parts[0][0].relation

    def under_replace_one(self) -> Composition:
        return Composition(tuple((m.under_replace_one(), c) for m, c in self.parts))

    def compose(self, k: int) -> Composition:
        k = check.positive_int("k", k)
        return Composition(tuple((m, c * k) for m, c in self.parts))

    def components(self) -> Iterator[tuple[Mechanism, int]]:
        yield from self.parts

    def poisson_subsample(self, rate: float) -> PoissonSubsampled:
        raise ValueError("poisson_subsample applies to one step; subsample each step, then compose")

    def sample_without_replacement(self, rate: float) -> SampledWithoutReplacement:
        raise ValueError("sample_without_replacement applies to one step; subsample each step, then compose")

    @property
    def total_count(self) -> int:
        return sum(c for _, c in self.parts)

    @property
    def is_symmetric(self) -> bool:
        return all(m.is_symmetric for m, _ in self.parts)


def _to_json_value(value):
    if isinstance(value, Mechanism):
        return value.to_dict()
    if isinstance(value, NeighbouringRelation):
        return value.value
    if isinstance(value, tuple):
        return [_to_json_value(v) for v in value]
    if isinstance(value, bool) or value is None or isinstance(value, (str, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    raise TypeError(f"{type(value).__name__} has no JSON description")


def _from_json_value(value):
    if isinstance(value, dict) and "type" in value:
        return mechanism_from_dict(value)
    if isinstance(value, list):
        return tuple(_from_json_value(v) for v in value)
    if value in ("inf", "-inf", "nan"):
        return float(value)
    return value


def mechanism_from_dict(data: dict) -> Mechanism:
    """The mechanism a [`Mechanism.to_dict`][privselect.mechanisms.Mechanism.to_dict] description describes."""
    if not isinstance(data, dict) or "type" not in data:
        raise ValueError(f"not a mechanism description: {data!r}")
    try:
        cls = _MECHANISM_TYPES[data["type"]]
    except KeyError:
        raise ValueError(f"unknown mechanism type {data['type']!r}") from None
    return cls(**{k: _from_json_value(v) for k, v in data.items() if k != "type"})


def compose(*mechanisms: Mechanism) -> Composition:
    """Heterogeneous adaptive composition: ``compose(m1, m2, m3.compose(10))``."""
    if not mechanisms:
        raise ValueError("compose needs at least one mechanism")
    for m in mechanisms:
        if not isinstance(m, Mechanism):
            raise TypeError(f"compose expects Mechanism descriptions, got {type(m).__name__}")
    return Composition(tuple((m, 1) for m in mechanisms))


# ----------------------------------------------------------------------------------------
# DP-SGD in Opacus / TF-Privacy vocabulary
# ----------------------------------------------------------------------------------------


#: Samplers privselect certifies, and the names of the ones it refuses with the reason.
CERTIFIED_SAMPLERS = ("poisson", "without_replacement", "random_allocation")
UNCERTIFIED_SAMPLERS = ("shuffle", "shuffled", "shuffling")


def uncertified_sampling_message(what: str) -> str:
    """Why ``what`` (a sampler privselect does not describe) gets no certificate, and what it certifies."""
    return (f"{what} is not certified: shuffle-and-partition (each record once per epoch, fixed batch sizes) has "
            "no certified privacy upper bound, and the Poisson number is not one for it; privselect certifies "
            f"the samplers {', '.join(CERTIFIED_SAMPLERS)}: draw the batches with one of them")


def refuse_uncertified_sampling(sampling: object) -> None:
    """Raise ValueError (naming ``sampling``) for a shuffling sampler, which privselect does not certify."""
    if isinstance(sampling, str) and sampling.lower() in UNCERTIFIED_SAMPLERS:
        raise ValueError(uncertified_sampling_message(f"sampling={sampling!r}"))


def dpsgd(*, noise_multiplier: float, sample_rate: float | None = None, batch_size: int | None = None,
          dataset_size: int | None = None, steps: int | None = None, epochs: float | None = None,
          sampling: str = "poisson") -> Mechanism:
    """The mechanism of DP-SGD training (Abadi et al. 2016), in Opacus and TF-Privacy vocabulary.

    Give ``sample_rate`` or ``batch_size`` with ``dataset_size`` (rate = batch_size / dataset_size),
    and ``steps`` or ``epochs`` (steps = ceil(epochs / rate), never fewer than trained).
    ``noise_multiplier`` is the noise std over the clipping norm (the add/remove sensitivity).
    ``sampling`` is ``"poisson"`` (Opacus, TF-Privacy's DP-SGD accountant) or
    ``"without_replacement"`` (a fixed-size batch drawn afresh from all records at every step;
    privacy from the replace-one description, Zhu, Dong, Wang 2022, Thm 11(2)), or ``"random_allocation"``
    (each record in exactly one of t = round(1 / rate) steps per epoch, redrawn every epoch; epochs composed).
    Shuffling (``"shuffle"``: each record once per epoch, fixed batches) has no certified bound and is refused.
    """
    sigma = check.positive("noise_multiplier", noise_multiplier)
    if (sample_rate is None) == (batch_size is None):
        raise ValueError("give exactly one of sample_rate or batch_size (with dataset_size)")
    if sample_rate is not None:
        if dataset_size is not None:
            raise ValueError("dataset_size goes with batch_size, not with sample_rate")
        rate = check.half_open_unit("sample_rate", sample_rate)
    else:
        batch = check.positive_int("batch_size", batch_size)
        if dataset_size is None:
            raise ValueError("batch_size needs dataset_size (the rate is batch_size / dataset_size)")
        n = check.positive_int("dataset_size", dataset_size)
        if batch > n:
            raise ValueError(f"batch_size must be at most dataset_size={n}, got {batch}")
        rate = batch / n
    if (steps is None) == (epochs is None):
        raise ValueError("give exactly one of steps or epochs")
    if steps is not None:
        count = check.positive_int("steps", steps)
    else:
        count = max(1, math.ceil(check.positive("epochs", epochs) / rate))
    refuse_uncertified_sampling(sampling)
    if sampling == "random_allocation":
        return _random_allocation_dpsgd(sigma, rate, count, epochs)
    if sampling not in ("poisson", "without_replacement"):
        raise ValueError(f"sampling must be 'poisson', 'without_replacement' or 'random_allocation', got {sampling!r}")
    step: Mechanism = Gaussian(sigma)
    if rate < 1.0:
        step = step.poisson_subsample(rate) if sampling == "poisson" else step.sample_without_replacement(rate)
    return step.compose(count)


def _random_allocation_dpsgd(sigma: float, rate: float, count: int, epochs: float | None) -> Mechanism:
    """Random allocation redrawn every epoch: t = round(1 / rate) steps per epoch (each record in exactly one),
    ceil(epochs) epochs, or ceil(steps / t) (never fewer steps than trained), composed."""
    t = max(1, round(1.0 / rate))
    n_epochs = max(1, math.ceil(epochs) if epochs is not None else math.ceil(count / t))
    epoch: Mechanism = Gaussian(sigma).random_allocation(steps=t) if t > 1 else Gaussian(sigma)
    return epoch.compose(n_epochs)
