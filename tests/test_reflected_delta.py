"""delta(eps) at eps < 0 from the positive side: H_a(P || Q) = 1 - a + a H_{1/a}(Q || P) (``reflected_delta``)."""

import math

import numpy as np
import pytest
from scipy import stats

import privselect as ps
from privselect.accounting.profile import (
    DirectionalCurve,
    ErrorBudget,
    PrivacyProfile,
    discrete_profile,
    reflected_delta,
)
from privselect.selection.bounds import selection_profile
from privselect.selection.distributions import Geometric

NEGATIVE = np.array([-4.0, -1.5, -0.5, -0.1, -1e-3, -1e-9])


def gdp_delta(eps: np.ndarray, mu: float) -> np.ndarray:
    """H_{e^eps}(N(mu, 1) || N(0, 1)) for every real eps (Dong, Roth, Su 2022, Cor. 2.13)."""
    return stats.norm.cdf(-eps / mu + mu / 2) - np.exp(eps) * stats.norm.cdf(-eps / mu - mu / 2)


def subsampled_gaussian_delta(eps: float, rate: float) -> float:
    """max over both directions of H_{e^eps} for P = (1 - rate) N(0, 1) + rate N(1, 1) and Q = N(0, 1), in closed
    form: the likelihood ratio p/q = 1 - rate + rate e^(t - 1/2) is increasing in t, so each hockey-stick integral is
    a difference of normal tails beyond one threshold."""
    a = math.exp(eps)
    norm = stats.norm
    if a - 1 + rate <= 0:  # p > a q everywhere
        remove = 1 - a
    else:
        t = 0.5 + math.log((a - 1 + rate) / rate)
        remove = (1 - rate) * norm.sf(t) + rate * norm.sf(t - 1) - a * norm.sf(t)
    t = 0.5 + math.log((1 / a - 1 + rate) / rate) if 1 / a - 1 + rate > 0 else -math.inf
    add = norm.cdf(t) - a * ((1 - rate) * norm.cdf(t) + rate * norm.cdf(t - 1))
    return max(remove, add)


class _PositiveOnly(DirectionalCurve):
    """A GDP curve that fails the test if asked at a negative eps."""

    direction = "both"
    error_budget = ErrorBudget()

    def __init__(self, mu: float) -> None:
        self.inner, self.asked = ps.gdp_profile(mu), []

    def delta_bounds(self, eps):
        e = np.asarray(eps, dtype=float)
        self.asked.append(e.copy())
        assert np.all(e >= 0), "the profile was asked at a negative eps"
        return self.inner.delta_bounds(e)


@pytest.mark.parametrize("mu", [0.3, 1.0, 3.0])
def test_reflected_delta_of_gdp_is_the_closed_form_at_negative_eps(mu):
    exact = gdp_delta(NEGATIVE, mu)
    got = reflected_delta(ps.gdp_profile(mu), NEGATIVE)
    assert np.all(got >= exact)
    np.testing.assert_allclose(got, exact, rtol=1e-12)


def test_reflected_delta_of_an_asymmetric_pair_is_the_direct_hockey_stick():
    p, q = np.array([0.5, 0.3, 0.15, 0.05]), np.array([0.05, 0.25, 0.3, 0.4])
    profile = discrete_profile(p, q)
    for eps in NEGATIVE:
        a = math.exp(eps)
        direct = max(math.fsum(max(x - a * y, 0.0) for x, y in zip(p, q)),
                     math.fsum(max(y - a * x, 0.0) for x, y in zip(p, q)))
        got = float(reflected_delta(profile, np.array([eps]))[0])
        assert got >= direct
        assert got == pytest.approx(direct, rel=1e-13)


@pytest.mark.parametrize("rate", [0.01, 0.2])
def test_reflected_delta_of_a_subsampled_gaussian_bounds_its_closed_form(rate):
    profile = ps.privacy_profile(ps.Gaussian(noise_multiplier=1.0).poisson_subsample(rate))
    got = reflected_delta(profile, NEGATIVE)
    exact = np.array([subsampled_gaussian_delta(float(e), rate) for e in NEGATIVE])
    assert np.all(got >= exact)
    np.testing.assert_allclose(got, exact, rtol=1e-6)


def test_reflected_delta_keeps_positive_eps_and_never_asks_a_negative_one():
    curve = _PositiveOnly(1.0)
    profile = PrivacyProfile(curves=(curve,), accountant="test")
    eps = np.array([[-2.0, 0.0], [0.5, -0.25]])
    got = reflected_delta(profile, eps)
    assert got.shape == eps.shape
    assert got[0, 1] == ps.gdp_profile(1.0).delta(0.0) and got[1, 0] == ps.gdp_profile(1.0).delta(0.5)
    assert np.all(got >= gdp_delta(eps, 1.0))
    np.testing.assert_allclose(got, gdp_delta(eps, 1.0), rtol=1e-12)


def test_selection_profile_below_its_shift_is_the_mean_times_the_reflected_base():
    """KRW Thm 5.2: delta_A(eps) <= min(1, m delta(eps - s*)), with delta(eps - s*) < 0 from the positive side."""
    curve = _PositiveOnly(0.5)
    tuning = selection_profile(PrivacyProfile(curves=(curve,), accountant="test"), Geometric(mean=10))
    shift = dict(tuning.metadata)["shift"]
    eps = np.array([0.0, 0.25, 0.5]) * shift
    expected = np.minimum(1.0, 10 * gdp_delta(eps - shift, 0.5))
    got = tuning.delta(eps)
    assert np.all(got >= expected)
    np.testing.assert_allclose(got, expected, rtol=1e-11)
    assert all(np.all(e >= 0) for e in curve.asked)


def test_reflected_delta_of_dp_sgd_lies_in_the_bracket_certified_directly_at_negative_eps():
    """The CF accountant answers eps < 0 directly too: the reflection of its positive side (an independent
    computation, other saddle points) must fall inside that bracket."""
    profile = ps.privacy_profile(ps.Gaussian(noise_multiplier=1.0).poisson_subsample(0.01).compose(1000),
                                 accountant="cf")
    eps = -np.array([2.0, 1.0, 0.5, 0.1, 0.01])
    lower, upper = profile.delta_bounds(eps)
    got = reflected_delta(profile, eps)
    assert np.all(got >= lower)
    assert np.all(got <= upper * (1 + 1e-9))
