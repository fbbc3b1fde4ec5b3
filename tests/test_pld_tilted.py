"""The tilted pld (``PLDAccountant(target_delta=...)``): relative precision far below the plain composition's
floor, against closed forms (Gaussian compositions at delta down to 1e-40), exact binomial sums
(randomized response) and CF's certified bracket (DP-SGD at 1e-15), and its place in the default."""

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy.stats import norm

import privselect as ps
from privselect.accounting import get_accountant
from tests.test_pld import exact_atomic_delta


def gaussian_delta(mu: float, eps: np.ndarray) -> np.ndarray:
    """delta(eps) of a Gaussian mechanism with mu = sensitivity / sigma (Balle, Wang 2018, Thm 8), from
    log-survival functions (relative precision at tiny deltas)."""
    a = norm.logcdf(mu / 2 - eps / mu)
    b = eps + norm.logcdf(-mu / 2 - eps / mu)
    return np.exp(a) * -np.expm1(b - a)


def tilted(mechanism, target_delta: float):
    return get_accountant("pld", target_delta=target_delta).profile(mechanism)


@settings(max_examples=10, deadline=None)
@given(st.floats(0.8, 4.0), st.integers(1, 300), st.sampled_from([1e-15, 1e-25, 1e-40]))
def test_gaussian_bracket_holds_the_closed_form_with_relative_precision_at_tiny_delta(noise, steps, target):
    """The plain composition's floor is ~1e-13; tilted towards the target, the bracket holds the closed form
    and is within 1% of it (relative; the mesh's gap, which grows with the steps and the tilt: 0.4% at 205 steps
    and 1e-40) at the eps where delta is about the target."""
    mu = math.sqrt(steps) / noise
    eps = float(ps.gaussian_epsilon(target, mu))
    points = eps + np.array([-0.2, 0.0, 0.2]) * max(1.0, eps) * 0.05
    exact = gaussian_delta(mu, points)
    low, up = tilted(ps.Gaussian(noise).compose(steps), target).delta_bounds(points)
    assert np.all(low <= exact) and np.all(exact <= up)
    assert np.all(up - low <= 1e-2 * exact)


def test_gaussian_epsilon_near_the_target_is_within_a_millionth_of_the_closed_form():
    mu = math.sqrt(10) / 2
    deltas = np.array([1e-15, 1e-20, 1e-25])
    low, up = tilted(ps.Gaussian(2.0).compose(10), 1e-20).epsilon_bounds(deltas)
    exact = np.array([float(ps.gaussian_epsilon(d, mu)) for d in deltas])  # 13.449, 15.567, 17.419
    assert np.all(low <= exact) and np.all(exact <= up)
    assert np.all(up[:2] <= exact[:2] * (1 + 1e-6)) and up[2] <= exact[2] * (1 + 1e-4)


@settings(max_examples=8, deadline=None)
@given(st.floats(0.55, 0.95), st.one_of(st.just(1.0), st.floats(0.01, 0.5)), st.integers(20, 300))
def test_atomic_compositions_bracket_the_exact_binomial_sum_at_tiny_delta(p, rate, steps):
    base = ps.RandomizedResponse(p)
    mechanism = base if rate == 1.0 else base.poisson_subsample(rate)
    profile = tilted(mechanism.compose(steps), 1e-18)
    eps = float(profile.epsilon(1e-18))
    for x in (eps, 0.9 * eps):
        exact = exact_atomic_delta(mechanism, steps, x)
        low, up = profile.delta_bounds(x)
        assert low <= exact * (1 + 1e-9) + 1e-300 and exact <= up * (1 + 1e-9)


def test_dpsgd_at_1e15_meets_cfs_certified_bracket_within_a_tenth_of_a_percent():
    mechanism = ps.Gaussian(1.1).poisson_subsample(256 / 60000).compose(14063)
    low, up = tilted(mechanism, 1e-15).epsilon_bounds(1e-15)
    cf_low, cf_up = ps.privacy_profile(mechanism, accountant="cf").epsilon_bounds(1e-15)  # 4.771842, both ends
    assert low <= cf_up and cf_low <= up <= cf_up * (1 + 1e-3)


@pytest.mark.parametrize("value", [0.0, -1e-5, 1.0, 2.0, float("nan")])
def test_target_delta_outside_zero_one_is_refused_by_name(value):
    with pytest.raises(ValueError, match="target_delta"):
        get_accountant("pld", target_delta=value)
