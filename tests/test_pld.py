"""The connect-the-dots PLD accountant ("pld"): its bracket against closed forms (Gaussian compositions), the
peers on the same inputs (dp-accounting's PLD, prv-accountant's certified bounds), and its contracts."""

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy.stats import norm

import privselect as ps
from privselect.accounting import get_accountant
from privselect.accounting.pld.discretise import discretise
from privselect.accounting.plrv import composed_losses
from privselect.errors import CertificationError, UnsupportedMechanismError


def gaussian_delta(mu: float, eps: np.ndarray) -> np.ndarray:
    """delta(eps) of a Gaussian mechanism with mu = sensitivity / sigma (Balle, Wang 2018, Thm 8)."""
    return norm.cdf(mu / 2 - eps / mu) - np.exp(eps) * norm.cdf(-mu / 2 - eps / mu)


def pld(mechanism, **options):
    return get_accountant("pld", **options).profile(mechanism)


@pytest.mark.parametrize("noise, steps", [(1.0, 10), (2.0, 300), (0.7, 3)])
def test_gaussian_composition_bracket_contains_the_closed_form_and_is_tight(noise, steps):
    eps = np.array([0.0, 0.5, 1.0, 3.0, 8.0])
    exact = gaussian_delta(math.sqrt(steps) / noise, eps)
    low, up = pld(ps.Gaussian(noise).compose(steps)).delta_bounds(eps)
    assert np.all(low <= exact) and np.all(exact <= up)
    assert np.all(up - low <= 1e-4 * exact + 1e-15)


@settings(max_examples=12, deadline=None)
@given(st.lists(st.tuples(st.floats(0.5, 4.0), st.integers(1, 400)), min_size=1, max_size=3),
       st.floats(-0.5, 6.0))
def test_heterogeneous_gaussian_bracket_contains_the_closed_form(parts, eps):
    mechanism = ps.compose(*[ps.Gaussian(s).compose(k) for s, k in parts])
    mu = math.sqrt(sum(k / s**2 for s, k in parts))
    exact = float(gaussian_delta(mu, np.array(eps)))
    low, up = pld(mechanism).delta_bounds(eps)
    assert low <= exact <= up


def test_one_step_laws_bracket_the_true_curve_at_and_between_grid_points():
    loss = composed_losses(ps.Gaussian(1.0).poisson_subsample(0.01))[0][0].remove
    h = 1e-3
    law = discretise(loss, h, -0.02, 6.0)
    loc = (law.i0 + np.arange(law.upper.size)) * h
    eps = np.linspace(-0.01, 5.0, 2001) + h / 3  # off the grid
    true = loss.inf_mass + loss.sf(eps) - np.exp(eps) * loss.sf_secondary(eps)
    weights = np.clip(1 - np.exp(eps[:, None] - loc[None, :]), 0, None)
    assert np.all(law.upper >= 0) and np.all(law.lower >= 0)
    assert np.all(weights @ law.upper + law.upper_inf >= true - 1e-18)
    assert np.all(weights @ law.lower <= true + 1e-18)


@pytest.mark.parametrize("noise, rate, steps", [(1.1, 256 / 60000, 14063), (0.8, 1e-3, 20000), (2.0, 0.05, 500)])
def test_subsampled_gaussian_upper_end_is_at_most_dp_accountings_pessimistic_pld(noise, rate, steps):
    pytest.importorskip("dp_accounting")
    from dp_accounting.pld import privacy_loss_distribution as dpl

    one = dpl.from_gaussian_mechanism(noise, sampling_prob=rate, value_discretization_interval=1e-4,
                                      use_connect_dots=True, pessimistic_estimate=True)
    peer = one.self_compose(steps)
    # the optimistic privacy buckets round every loss down: their curve lies below the true one
    optimistic = dpl.from_gaussian_mechanism(noise, sampling_prob=rate, value_discretization_interval=1e-4,
                                             use_connect_dots=False, pessimistic_estimate=False).self_compose(steps)
    profile = pld(ps.Gaussian(noise).poisson_subsample(rate).compose(steps))
    for delta in (1e-5, 1e-8):
        low, up = profile.epsilon_bounds(delta)
        assert up <= peer.get_epsilon_for_delta(delta) * 1.001
        assert up >= optimistic.get_epsilon_for_delta(delta) and low <= up


@pytest.mark.parametrize("noise, rate, steps, delta", [(0.8, 1e-4, 200_000, 1e-7), (1.0, 1e-3, 10_000, 1e-9)])
def test_bracket_meets_prv_accountants_certified_bounds(noise, rate, steps, delta):
    pytest.importorskip("prv_accountant")
    from prv_accountant import PoissonSubsampledGaussianMechanism, PRVAccountant

    peer = PRVAccountant(prvs=[PoissonSubsampledGaussianMechanism(noise_multiplier=noise, sampling_probability=rate)],
                         max_self_compositions=[steps], eps_error=0.01, delta_error=delta / 1000)
    peer_low, _, peer_up = peer.compute_epsilon(delta=delta, num_self_compositions=[steps])
    low, up = pld(ps.Gaussian(noise).poisson_subsample(rate).compose(steps)).epsilon_bounds(delta)
    assert up >= peer_low and low <= peer_up
    assert up <= peer_up  # tighter than the peer's certified end on the same input


def test_both_directions_of_a_subsampled_mechanism_have_their_own_curve():
    profile = pld(ps.Gaussian(1.0).poisson_subsample(0.1).compose(50))
    assert [c.direction for c in profile.curves] == ["remove", "add"]
    remove, add = (c.delta_bounds(np.array([1.0]))[1][0] for c in profile.curves)
    assert remove != add


def test_declines_past_its_memory_budget_and_point_cap():
    mechanism = ps.Gaussian(0.8).poisson_subsample(1e-4).compose(10**6)
    with pytest.raises(CertificationError, match="max_memory"):
        pld(mechanism, max_memory=20_000_000)
    with pytest.raises(CertificationError, match="max_points"):
        pld(mechanism, value_discretization_interval=1e-7, max_points=1 << 20)


def test_supports_is_a_dry_run_and_names_what_it_cannot_read():
    from dataclasses import dataclass

    @dataclass(frozen=True)
    class Unknown(ps.Mechanism):
        pass

    accountant = get_accountant("pld")
    assert accountant.supports(ps.Gaussian(1.0).poisson_subsample(0.01).compose(5)) is None
    assert "Unknown" in accountant.supports(ps.compose(ps.Gaussian(1.0), Unknown()))
    with pytest.raises(UnsupportedMechanismError):
        accountant.profile(ps.compose(ps.Gaussian(1.0), Unknown()))
