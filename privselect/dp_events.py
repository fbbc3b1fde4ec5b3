"""dp-accounting interop (the optional extra "interop"; dp_accounting is imported lazily): a privselect
`Mechanism` as a ``DpEvent`` (`to_dp_event`) and back (`from_dp_event`)."""

from __future__ import annotations

import functools
import math

from . import _validation as check
from .mechanisms import (
    ADD_REMOVE,
    REPLACE_ONE,
    ApproxDP,
    Composition,
    Gaussian,
    Laplace,
    Mechanism,
    NeighbouringRelation,
    PoissonSubsampled,
    PureDP,
    RandomizedResponse,
    SampledWithoutReplacement,
    compose,
)

__all__ = ["to_dp_event", "from_dp_event"]

def _dp_event_module():
    try:
        from dp_accounting import dp_event
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("dp-accounting interop needs the optional dependency: pip install 'privselect[interop]'"
                          ) from exc
    return dp_event


@functools.singledispatch
def _to_dp_event(mechanism: Mechanism, dataset_size: int | None):
    raise ValueError(f"{type(mechanism).__name__} has no dp-accounting event")


@_to_dp_event.register
def _(mechanism: Gaussian, dataset_size):
    return _dp_event_module().GaussianDpEvent(mechanism.noise_multiplier)


@_to_dp_event.register
def _(mechanism: Laplace, dataset_size):
    return _dp_event_module().LaplaceDpEvent(mechanism.scale)


@_to_dp_event.register
def _(mechanism: RandomizedResponse, dataset_size):
    # dp-accounting: with probability noise_parameter a uniform bucket, so P[true] = 1 - noise/2;
    # RR(p) and RR(1 - p) have the same privacy.
    return _dp_event_module().RandomizedResponseDpEvent(2.0 * min(mechanism.p, 1.0 - mechanism.p), 2)


def _epsilon_delta_event(epsilon: float, delta: float):
    event_type = getattr(_dp_event_module(), "EpsilonDeltaDpEvent", None)
    if event_type is None:  # dp-accounting < 0.7 has no (epsilon, delta) event
        raise ValueError("this dp-accounting version has no EpsilonDeltaDpEvent; upgrade dp-accounting")
    return event_type(epsilon, delta)


@_to_dp_event.register
def _(mechanism: PureDP, dataset_size):
    return _epsilon_delta_event(mechanism.epsilon, 0.0)


@_to_dp_event.register
def _(mechanism: ApproxDP, dataset_size):
    return _epsilon_delta_event(mechanism.epsilon, mechanism.delta)


@_to_dp_event.register
def _(mechanism: PoissonSubsampled, dataset_size):
    return _dp_event_module().PoissonSampledDpEvent(mechanism.rate, _to_dp_event(mechanism.base, dataset_size))


@_to_dp_event.register
def _(mechanism: SampledWithoutReplacement, dataset_size):
    if dataset_size is None:
        raise ValueError("to_dp_event of sampling without replacement needs dataset_size (dp-accounting's event "
                         "holds the data set and sample sizes)")
    n = check.positive_int("dataset_size", dataset_size)
    sample = round(mechanism.rate * n)
    if sample < 1 or sample / n != mechanism.rate:
        raise ValueError(f"rate={mechanism.rate!r} is not a sample size over dataset_size={n}")
    # dp-accounting's SampledWithoutReplacementDpEvent is read under replace-one neighbours
    return _dp_event_module().SampledWithoutReplacementDpEvent(n, sample, _to_dp_event(mechanism.replace_one_base, n))


@_to_dp_event.register
def _(mechanism: Composition, dataset_size):
    dp_event = _dp_event_module()
    events = [_to_dp_event(m, dataset_size) if c == 1 else dp_event.SelfComposedDpEvent(_to_dp_event(m, dataset_size), c)
              for m, c in mechanism.parts]
    return events[0] if len(events) == 1 else dp_event.ComposedDpEvent(events)


def to_dp_event(mechanism: Mechanism, dataset_size: int | None = None):
    """``mechanism`` as a dp-accounting ``DpEvent`` (lazy import of dp_accounting).

    Sampling without replacement needs ``dataset_size``; its base becomes the replace-one
    description, as dp-accounting reads that event under replace-one neighbours.
    """
    return _to_dp_event(mechanism, dataset_size)


def from_dp_event(event, relation: NeighbouringRelation | str = ADD_REMOVE) -> Mechanism:
    """The privselect description of a dp-accounting ``DpEvent`` (lazy import of dp_accounting).

    Supported: Gaussian, Laplace, PoissonSampled, SampledWithoutReplacement, SelfComposed,
    Composed, RandomizedResponse (2 buckets; more buckets as pure DP) and EpsilonDelta events.
    ``relation`` is the neighbouring relation the event's parameters are stated for (the
    relation of the dp-accounting accountant it was meant for); the base of a
    SampledWithoutReplacement event is read under replace-one neighbours, as dp-accounting does.
    """
    dp_event = _dp_event_module()
    relation = NeighbouringRelation.parse(relation)
    if isinstance(event, dp_event.GaussianDpEvent):
        return Gaussian(event.noise_multiplier, relation=relation)
    if isinstance(event, dp_event.LaplaceDpEvent):
        return Laplace(event.noise_multiplier, relation=relation)
    if isinstance(event, dp_event.RandomizedResponseDpEvent):
        noise, buckets = event.noise_parameter, event.num_buckets
        if buckets == 2:
            return RandomizedResponse(1.0 - noise / 2.0, relation=relation)
        epsilon = math.inf if noise == 0 else math.log1p(buckets * (1.0 - noise) / noise)
        return PureDP(epsilon, relation=relation)
    epsilon_delta_event = getattr(dp_event, "EpsilonDeltaDpEvent", None)  # not in every dp-accounting version
    if epsilon_delta_event is not None and isinstance(event, epsilon_delta_event):
        if event.delta == 0:
            return PureDP(event.epsilon, relation=relation)
        return ApproxDP(event.epsilon, event.delta, relation=relation)
    if isinstance(event, dp_event.PoissonSampledDpEvent):
        return PoissonSubsampled(from_dp_event(event.event, relation), event.sampling_probability)
    if isinstance(event, dp_event.SampledWithoutReplacementDpEvent):
        return SampledWithoutReplacement(from_dp_event(event.event, REPLACE_ONE),
                                         event.sample_size / event.source_dataset_size)
    if isinstance(event, dp_event.SelfComposedDpEvent):
        return from_dp_event(event.event, relation).compose(event.count)
    if isinstance(event, dp_event.ComposedDpEvent):
        return compose(*(from_dp_event(e, relation) for e in event.events))
    raise ValueError(f"no privselect description of {type(event).__name__}")
