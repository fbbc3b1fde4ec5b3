"""dp-accounting interop and the DP-SGD helper (issue 14, Build 9)."""

import math

import pytest

import privselect as ps
from privselect.mechanisms import NeighbouringRelation

dpa = pytest.importorskip("dp_accounting")
dp_event = dpa.dp_event

Q = 256 / 60000


def test_from_dp_event_equals_the_native_descriptions():
    """dp-accounting's own events read as the descriptions a privselect user writes."""
    cases = [
        (dp_event.GaussianDpEvent(1.1), ps.Gaussian(1.1)),
        (dp_event.LaplaceDpEvent(2.0), ps.Laplace(2.0)),
        (dp_event.RandomizedResponseDpEvent(0.5, 2), ps.RandomizedResponse(0.75)),
        (dp_event.PoissonSampledDpEvent(Q, dp_event.GaussianDpEvent(1.1)), ps.Gaussian(1.1).poisson_subsample(Q)),
        (dp_event.SelfComposedDpEvent(dp_event.PoissonSampledDpEvent(Q, dp_event.GaussianDpEvent(1.1)), 1000),
         ps.Gaussian(1.1).poisson_subsample(Q).compose(1000)),
        (dp_event.ComposedDpEvent([dp_event.GaussianDpEvent(1.0), dp_event.LaplaceDpEvent(3.0),
                                   dp_event.SelfComposedDpEvent(dp_event.GaussianDpEvent(1.0), 4)]),
         ps.compose(ps.Gaussian(1.0).compose(5), ps.Laplace(3.0))),
        # dp-accounting reads sampling without replacement under replace-one neighbours
        (dp_event.SampledWithoutReplacementDpEvent(60000, 256, dp_event.GaussianDpEvent(0.55)),
         ps.Gaussian(0.55, relation="replace_one").sample_without_replacement(256 / 60000)),
    ]
    if hasattr(dp_event, "EpsilonDeltaDpEvent"):  # dp-accounting >= 0.7
        cases += [(dp_event.EpsilonDeltaDpEvent(1.0, 1e-6), ps.ApproxDP(1.0, 1e-6)),
                  (dp_event.EpsilonDeltaDpEvent(1.0, 0.0), ps.PureDP(1.0))]
    for event, native in cases:
        assert ps.from_dp_event(event) == native, event


def test_to_dp_event_round_trips_and_matches_dp_accounting_numbers():
    mechanisms = [ps.Gaussian(1.1), ps.Laplace(2.0), ps.RandomizedResponse(0.75),
                  ps.Gaussian(1.1).poisson_subsample(Q).compose(1000),
                  ps.compose(ps.Gaussian(1.0).compose(5), ps.Laplace(3.0))]
    if hasattr(dp_event, "EpsilonDeltaDpEvent"):
        mechanisms += [ps.PureDP(1.0), ps.ApproxDP(1.0, 1e-6)]
    for m in mechanisms:
        assert ps.from_dp_event(ps.to_dp_event(m)) == m
    wor = ps.Gaussian(1.1).sample_without_replacement(256 / 60000)
    event = ps.to_dp_event(wor, dataset_size=60000)
    assert event == dp_event.SampledWithoutReplacementDpEvent(60000, 256, dp_event.GaussianDpEvent(0.55))
    with pytest.raises(ValueError, match="dataset_size"):
        ps.to_dp_event(wor)
    # the same numbers from both libraries on the converted event (PLD, pessimistic, 1e-4)
    from dp_accounting.pld import pld_privacy_accountant

    m = ps.Gaussian(1.1).poisson_subsample(Q).compose(1000)
    pld = pld_privacy_accountant.PLDAccountant(value_discretization_interval=1e-4)
    pld.compose(ps.to_dp_event(m))
    assert ps.privacy_profile(m).epsilon(1e-5) == pytest.approx(pld.get_epsilon(1e-5), rel=5e-3)


def test_from_dp_event_rejects_unknown_events_and_respects_the_relation():
    with pytest.raises(ValueError, match="no privselect description"):
        ps.from_dp_event(dp_event.NoOpDpEvent())
    g = ps.from_dp_event(dp_event.GaussianDpEvent(2.0), relation="replace_one")
    assert g.relation is NeighbouringRelation.REPLACE_ONE


def test_dpsgd_helper_in_opacus_vocabulary():
    by_rate = ps.dpsgd(noise_multiplier=1.1, sample_rate=Q, steps=14063)
    assert by_rate == ps.Gaussian(1.1).poisson_subsample(Q).compose(14063)
    assert ps.dpsgd(noise_multiplier=1.1, batch_size=256, dataset_size=60000, steps=14063) == by_rate
    # epochs: steps = ceil(epochs / rate) (60 epochs of MNIST at batch 256: 14063 steps)
    assert ps.dpsgd(noise_multiplier=1.1, batch_size=256, dataset_size=60000, epochs=60) == by_rate
    assert ps.dpsgd(noise_multiplier=1.1, sample_rate=1.0, steps=3) == ps.Gaussian(1.1).compose(3)
    wor = ps.dpsgd(noise_multiplier=1.1, sample_rate=Q, steps=10, sampling="without_replacement")
    assert wor == ps.Gaussian(1.1).sample_without_replacement(Q).compose(10)
    for bad, name in [(dict(sample_rate=Q), "steps or epochs"), (dict(steps=3), "sample_rate or batch_size"),
                      (dict(batch_size=256, steps=3), "dataset_size"),
                      (dict(sample_rate=Q, steps=3, epochs=1), "steps or epochs"),
                      (dict(sample_rate=Q, steps=3, sampling="shuffle"), "sampling")]:
        with pytest.raises(ValueError, match=name):
            ps.dpsgd(noise_multiplier=1.1, **bad)
    assert math.ceil(60 / Q) == 14063
