"""dp-accounting interop (the optional extra "interop"; dp_accounting is imported lazily): a privselect
`Mechanism` as a ``DpEvent`` (`to_dp_event`) and back (`from_dp_event`)."""

from __future__ import annotations

import functools
import math

import numpy as np

from . import _validation as check
from .mechanisms import (
    ADD_REMOVE,
    CERTIFIED_SAMPLERS,
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
from .memo import quiet_cache

__all__ = ["to_dp_event", "from_dp_event", "truncation_probability"]

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


@functools.singledispatch
def _from_dp_event(event, relation: NeighbouringRelation) -> Mechanism:
    reason = _REFUSALS.get(type(event).__name__)
    if reason is not None:
        raise ValueError(f"no privselect description of {type(event).__name__}: {reason}")
    raise ValueError(f"no privselect description of {type(event).__name__}")


_REFUSALS = {
    "SampledWithReplacementDpEvent": (
        "a batch drawn with replacement can hold a record several times (its multiplicity is Binomial(sample_size, "
        "1/source_dataset_size)), so one step's sensitivity is not one clipping norm, and dp-accounting's "
        "accountants do not account it either; privselect certifies the samplers "
        + ", ".join(CERTIFIED_SAMPLERS)),
    "RandomAllocationDpEvent": (
        "this event is not part of dp-accounting's release; describe the run with privselect's own random "
        "allocation: ps.dpsgd(..., sampling='random_allocation')"),
    "RepeatAndSelectDpEvent": (
        "it is a whole tuning procedure, not one run: certify its run, "
        "ps.certify(event.event, ps.TruncatedNegativeBinomial(event.shape, mean=event.mean), delta) "
        "(shape inf: ps.Poisson(event.mean))"),
    "NonPrivateDpEvent": "the event is not differentially private",
    "UnsupportedDpEvent": "dp-accounting marks the event as unsupported",
}


@quiet_cache(maxsize=None)
def _registered() -> None:
    """Register the dp-accounting event types with ``_from_dp_event`` (once, at the first call: lazy import)."""
    dp_event = _dp_event_module()
    for event_type, reader in [
        (dp_event.GaussianDpEvent, lambda e, r: Gaussian(e.noise_multiplier, relation=r)),
        (dp_event.LaplaceDpEvent, lambda e, r: Laplace(e.noise_multiplier, relation=r)),
        (dp_event.RandomizedResponseDpEvent, _randomized_response),
        (dp_event.PoissonSampledDpEvent,
         lambda e, r: PoissonSubsampled(_from_dp_event(e.event, r), e.sampling_probability)),
        # dp-accounting reads the base of sampling without replacement under replace-one neighbours
        (dp_event.SampledWithoutReplacementDpEvent,
         lambda e, r: SampledWithoutReplacement(_from_dp_event(e.event, REPLACE_ONE),
                                                e.sample_size / e.source_dataset_size)),
        (dp_event.SelfComposedDpEvent, _self_composed),
        (dp_event.ComposedDpEvent, lambda e, r: compose(*(_from_dp_event(x, r) for x in e.events))),
        (dp_event.TruncatedSubsampledGaussianDpEvent, _truncated_subsampled_gaussian),
    ]:
        _from_dp_event.register(event_type, reader)
    epsilon_delta_event = getattr(dp_event, "EpsilonDeltaDpEvent", None)  # not in every dp-accounting version
    if epsilon_delta_event is not None:
        _from_dp_event.register(epsilon_delta_event, lambda e, r: PureDP(e.epsilon, relation=r) if e.delta == 0
                                else ApproxDP(e.epsilon, e.delta, relation=r))


def _randomized_response(event, relation: NeighbouringRelation) -> Mechanism:
    noise, buckets = event.noise_parameter, event.num_buckets
    if buckets == 2:
        return RandomizedResponse(1.0 - noise / 2.0, relation=relation)
    epsilon = math.inf if noise == 0 else math.log1p(buckets * (1.0 - noise) / noise)
    return PureDP(epsilon, relation=relation)


def binomial_tail_bounds(n: int, rate: float, at_least: np.ndarray) -> np.ndarray:
    """Proven upper bounds on P[Binomial(n, rate) >= b] for each b of ``at_least`` (Chernoff-Hoeffding:
    exp(-n KL(b/n || rate)) for b/n > rate; 1 otherwise; 0 for b > n), with a relative margin for rounding."""
    b = np.asarray(at_least, dtype=float)
    a = np.clip(b / n, 0.0, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        upper = np.where(a < 1.0, (1.0 - a) * np.log((1.0 - a) / (1.0 - rate)), 0.0) if rate < 1 else 0.0
        kl = a * np.log(a / rate) + upper
        bound = np.where(a > rate, np.exp(-n * kl * (1.0 - 1e-9)), 1.0)
    return np.where(b > n, 0.0, np.minimum(bound, 1.0))


def truncation_probability(dataset_size: int, rate: float, batch_size: int) -> float:
    """A proven upper bound on P[Binomial(dataset_size, rate) >= batch_size] (``binomial_tail_bounds``)."""
    return float(binomial_tail_bounds(dataset_size, rate, np.array([batch_size]))[0])


#: P[more than m truncated steps] at which the truncated event's description stops counting (added to delta).
TRUNCATION_TAIL = 1e-15


def _truncated_subsampled_gaussian(event, relation: NeighbouringRelation, count: int = 1) -> Mechanism:
    """``count`` steps of truncated Poisson sampling (dp-accounting's TruncatedSubsampledGaussianDpEvent;
    jax-privacy's ``truncated_dpsgd_event``), add/remove neighbours.

    Couple the two data sets through the other records' Poisson sample S and a uniform truncation
    that keeps x's slot: given S, a step's pair is a Poisson(q)-subsampled Gaussian pair whose shift
    is one clipped gradient when |S| < b (nothing truncated) and at most two when |S| >= b (x
    replaces a kept record), a data-independent event of probability p <= P[Binomial(n, q) >= b]
    (Chernoff). By joint convexity over the number J ~ Binomial(count, p) of truncated steps, and as
    the shift-2 pair dominates the shift-1 pair (composition of dominating pairs: Zhu, Dong, Wang
    2022, Thm 10; subsampling: their Thm 11(1)), the run is dominated by count - m shift-1 steps,
    m shift-2 steps (Gaussian(sigma / 2)) and (0, P[J > m])-DP, with m the smallest count whose
    Chernoff tail is at most ``TRUNCATION_TAIL``. No truncation (b > n) is plain Poisson sampling.
    """
    if relation is not ADD_REMOVE:
        raise ValueError("TruncatedSubsampledGaussianDpEvent is described under add/remove neighbours only "
                         f"(relation={relation.value!r})")
    n = check.positive_int("dataset_size", event.dataset_size)
    q = check.half_open_unit("sampling_probability", event.sampling_probability)
    b = check.positive_int("truncated_batch_size", event.truncated_batch_size)
    sigma = check.positive("noise_multiplier", event.noise_multiplier)

    def steps(noise: float) -> Mechanism:
        return Gaussian(noise).poisson_subsample(q) if q < 1 else Gaussian(noise)

    p = truncation_probability(n, q, b)
    if p == 0.0:
        return steps(sigma).compose(count)
    tails = np.append(binomial_tail_bounds(count, p, np.arange(1, count + 1)), 0.0)  # P[J > m], m = 0..count
    m = int(np.argmax(tails <= TRUNCATION_TAIL))
    parts: list[Mechanism] = [steps(sigma).compose(count - m)] if m < count else []
    parts += [steps(sigma / 2).compose(m)] if m > 0 else []
    parts += [ApproxDP(0.0, float(tails[m]))] if tails[m] > 0 else []
    return compose(*parts)


def _self_composed(event, relation: NeighbouringRelation) -> Mechanism:
    inner = event.event
    if type(inner).__name__ == "TruncatedSubsampledGaussianDpEvent":  # its description counts truncated steps
        return _truncated_subsampled_gaussian(inner, relation, check.positive_int("count", event.count))
    return _from_dp_event(inner, relation).compose(event.count)


def from_dp_event(event, relation: NeighbouringRelation | str = ADD_REMOVE) -> Mechanism:
    """The privselect description of a dp-accounting ``DpEvent`` (lazy import of dp_accounting).

    Supported: Gaussian, Laplace, PoissonSampled, SampledWithoutReplacement, SelfComposed,
    Composed, RandomizedResponse (2 buckets; more buckets as pure DP), EpsilonDelta and
    TruncatedSubsampledGaussian (jax-privacy's ``truncated_dpsgd_event``; see
    ``_truncated_subsampled_gaussian`` for its dominating description) events. Refused by name,
    with the reason: SampledWithReplacement, RepeatAndSelect (a tuning, not a run), NonPrivate,
    Unsupported; any other type as unknown. ``relation`` is the neighbouring relation the event's
    parameters are stated for (the relation of the dp-accounting accountant it was meant for); the
    base of a SampledWithoutReplacement event is read under replace-one neighbours, as dp-accounting does.
    """
    _registered()
    return _from_dp_event(event, NeighbouringRelation.parse(relation))
