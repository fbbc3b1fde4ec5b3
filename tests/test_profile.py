"""PrivacyProfile and the exact profiles (Gaussian mechanism, mu-GDP)."""

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy import stats

import privselect as ps
from privselect.accounting.profile import invert_curve


# accounting-prv-fdp.md R1 (exact GDP) and accounting-cf.md §5 (Gaussian mu = 1)
@pytest.mark.parametrize(
    "mu, d0, d1, e5, e6",
    [
        (0.5, 0.197413, 0.00682959, 1.993091, 2.254085),
        (1.0, 0.382925, 0.126937, 4.377178, 4.886554),
        (2.0, 0.682689, 0.509862, 9.997256, 10.997151),
        (3.0, 0.866386, 0.787601, 16.675494, 18.163446),
    ],
)
def test_gdp_profile_reference_values(mu, d0, d1, e5, e6):
    prof = ps.gdp_profile(mu)
    assert prof.delta(0.0) == pytest.approx(d0, rel=1e-5)
    assert prof.delta(1.0) == pytest.approx(d1, rel=1e-5)
    assert prof.epsilon(1e-5) == pytest.approx(e5, abs=2e-6)
    assert prof.epsilon(1e-6) == pytest.approx(e6, abs=2e-6)
    # delta(0) = TV(N(0,1), N(mu,1)) = 2 Phi(mu/2) - 1
    assert prof.delta(0.0) == pytest.approx(2 * stats.norm.cdf(mu / 2) - 1, rel=1e-12)


def test_gaussian_tiny_delta_in_log_space():
    """accounting-cf.md §7: mu = 1 at eps = 8 and 12."""
    assert ps.gaussian_delta(8.0, 1.0) == pytest.approx(3.6508216874e-15, rel=1e-9)
    assert ps.gaussian_delta(12.0, 1.0) == pytest.approx(5.2084420690e-32, rel=1e-9)


@pytest.mark.parametrize("alpha, beta", [(0.001, 0.981702), (0.01, 0.907638), (0.05, 0.740489), (0.1, 0.610856),
                                         (0.3, 0.317180), (0.5, 0.158655)])
def test_tradeoff_is_a_tight_lower_bound_on_g1(alpha, beta):
    """G_1(alpha) = Phi(Phi^{-1}(1-alpha) - 1) (Su 2024, §3.2); the certified curve sits just below it."""
    f = ps.gdp_profile(1.0).tradeoff(alpha)
    exact = stats.norm.cdf(stats.norm.ppf(1 - alpha) - 1.0)
    assert exact == pytest.approx(beta, abs=1e-6)
    assert f <= exact + 1e-12
    assert f >= exact - 2e-4


def test_exact_method_composes_gaussians():
    m = ps.compose(ps.Gaussian(10.0).compose(50), ps.Gaussian(5.0).compose(50))
    prof = ps.privacy_profile(m, accountant="exact")
    # accounting-prv-fdp.md R4: mu = sqrt(2.5), delta(4) = 0.0164556729
    assert prof.delta(4.0) == pytest.approx(0.0164556729, rel=1e-8)
    with pytest.raises(ValueError, match="Gaussian"):
        ps.privacy_profile(ps.Laplace(1.0), accountant="exact")


@pytest.mark.parametrize("bad", [0.0, 1.0, -1e-5, 1.5, float("nan")])
def test_epsilon_rejects_delta_outside_unit_interval(bad):
    with pytest.raises(ValueError, match="delta"):
        ps.gdp_profile(1.0).epsilon(bad)


def test_profile_names_its_accountant_as_accountant():
    exact = ps.privacy_profile(ps.Gaussian(2.0).compose(3))
    subsampled = ps.privacy_profile(ps.Gaussian(2.0).poisson_subsample(0.1).compose(3))
    assert (exact.accountant, subsampled.accountant) == ("exact", "auto")
    assert ps.privacy_profile(ps.Laplace(2.0), accountant="rdp").accountant == "rdp"
    assert exact.to_dict()["accountant"] == "exact" and "method" not in exact.to_dict()
    assert not hasattr(exact, "method")


def test_privacy_profile_rejects_unknown_accountant_and_types():
    with pytest.raises(ValueError, match="accountant"):
        ps.privacy_profile(ps.Gaussian(1.0), accountant="moments")
    with pytest.raises(TypeError, match="renamed"):
        ps.privacy_profile(ps.Gaussian(1.0), method="prv")
    with pytest.raises(TypeError, match="Mechanism"):
        ps.privacy_profile("gaussian")
    with pytest.raises(ValueError, match="eps"):
        ps.gdp_profile(1.0).delta(float("nan"))


@settings(max_examples=50, deadline=None)
@given(mu=st.floats(0.05, 8.0), delta=st.floats(1e-12, 0.5))
def test_gdp_epsilon_and_delta_invert_each_other(mu, delta):
    prof = ps.gdp_profile(mu)
    eps = prof.epsilon(delta)
    if eps > 0:
        assert prof.delta(eps) <= delta * (1 + 1e-9)
        assert prof.delta(eps - 1e-6) > delta * (1 - 1e-9) or eps < 1e-6


@settings(max_examples=50, deadline=None)
@given(mu=st.floats(0.05, 8.0), eps=st.lists(st.floats(-20.0, 60.0), min_size=2, max_size=10))
def test_gdp_profile_is_a_non_increasing_probability(mu, eps):
    e = np.sort(np.asarray(eps))
    d = ps.gdp_profile(mu).delta(e)
    assert np.all((0 <= d) & (d <= 1))
    assert np.all(np.diff(d) <= 1e-15)


def test_invert_curve_brackets():
    curve = lambda e: np.exp(-np.asarray(e))  # noqa: E731
    lo = invert_curve(curve, np.array([0.5, 1e-3]), side="lower")
    hi = invert_curve(curve, np.array([0.5, 1e-3]), side="upper")
    np.testing.assert_allclose(hi, [math.log(2), math.log(1000)], rtol=1e-12)
    assert np.all(lo <= hi)
