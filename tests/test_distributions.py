"""Distributions of K: pmf, pgf, means and sampling against closed forms and brute-force sums."""

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy import stats

from privselect.selection.distributions import (
    Binomial,
    Geometric,
    Logarithmic,
    Poisson,
    TruncatedNegativeBinomial,
)

DISTRIBUTIONS = [
    Geometric(mean=10),
    Logarithmic(mean=10),
    TruncatedNegativeBinomial(-0.5, mean=10),
    TruncatedNegativeBinomial(3.0, gamma=0.2),
    Binomial(100, 0.1),
    Poisson(10),
]


@pytest.mark.parametrize("dist", DISTRIBUTIONS, ids=repr)
def test_pmf_pgf_and_derivative_match_brute_force_sums(dist):
    k = np.arange(0, 40000)
    p = dist.pmf(k)
    assert p.sum() == pytest.approx(1.0, abs=1e-12)
    assert (k * p).sum() == pytest.approx(dist.mean, rel=1e-10)
    for z in (0.0, 0.3, 0.9, 1.0):
        assert dist.pgf(z) == pytest.approx((p * z**k).sum(), rel=1e-10, abs=1e-300)
        assert dist.pgf_derivative(z) == pytest.approx((k * p * z ** np.maximum(k - 1, 0)).sum(), rel=1e-9)


def test_geometric_and_logarithmic_closed_forms():
    g = Geometric(gamma=0.25)
    assert g.pmf(3) == pytest.approx(0.25 * 0.75**2, rel=1e-14)
    assert g.mean == pytest.approx(4.0, rel=1e-14)
    lg = Logarithmic(gamma=0.1)
    assert lg.pmf(2) == pytest.approx(0.9**2 / (2 * math.log(10)), rel=1e-14)
    assert lg.mean == pytest.approx(9 / math.log(10), rel=1e-14)


def test_tnb_mean_formula_krw_sec_5_1():
    """E K = eta (1-gamma) / (gamma (1 - gamma^eta)) (KRW Sec. 5.1)."""
    d = TruncatedNegativeBinomial(2.0, gamma=0.3)
    assert d.mean == pytest.approx(2 * 0.7 / (0.3 * (1 - 0.09)), rel=1e-14)
    # phi'(z) = (1 - (1-gamma) z)^(-eta-1) gamma^(eta+1) E K  (KRW eq. (5.1))
    assert d.pgf_derivative(0.5) == pytest.approx((1 - 0.35) ** -3 * 0.3**3 * d.mean, rel=1e-13)


@pytest.mark.parametrize("eta", [-0.9, -0.5, 0.0, 0.5, 1.0, 4.0])
@pytest.mark.parametrize("mean", [1.5, 10.0, 3000.0])
def test_solver_from_mean_is_conservative(eta, mean):
    d = TruncatedNegativeBinomial(eta, mean=mean)
    assert d.mean >= mean
    assert d.mean == pytest.approx(mean, rel=1e-12)


@settings(max_examples=300, deadline=None)
@given(st.floats(min_value=1.0 + 2.0**-40, max_value=1e6))
def test_geometric_from_mean_is_the_largest_gamma_whose_mean_reaches_it(mean):
    """Geometric(mean=m): E K = 1/gamma (KRW Sec. 5.1), so gamma is 1/m up to rounding. The one chosen has a mean
    of at least m, and the next double up has a mean below m: conservative, and no more than rounding."""
    g = Geometric(mean=mean).gamma
    assert Geometric(gamma=g).mean >= mean
    assert Geometric(gamma=float(np.nextafter(g, 1.0))).mean < mean
    assert g == pytest.approx(1.0 / mean, rel=1e-15)


def test_large_k_log_pmf_is_finite():
    d = TruncatedNegativeBinomial(0.5, mean=1e5)
    assert np.isfinite(d.log_pmf(10**7))
    assert d.log_pmf(0) == -np.inf and d.log_pmf(2.5) == -np.inf


@pytest.mark.slow  # seconds per case, measured: the slow tier runs it
@pytest.mark.parametrize("dist", DISTRIBUTIONS, ids=repr)
def test_sampling_follows_the_pmf(dist):
    """Chi-square goodness of fit on 20000 draws (bins with expected count >= 20)."""
    rng = np.random.default_rng(12345)
    draws = np.array([dist.sample(rng) for _ in range(20000)])
    k = np.arange(dist.min_k, draws.max() + 1)
    expected = dist.pmf(k) * draws.size
    observed = np.bincount(draws - dist.min_k, minlength=k.size)[: k.size]
    keep = expected >= 20
    obs = np.append(observed[keep], observed[~keep].sum())
    exp = np.append(expected[keep], draws.size - expected[keep].sum())
    assert stats.chisquare(obs, exp).pvalue > 1e-4


@pytest.mark.parametrize(
    "factory, message",
    [
        (lambda: TruncatedNegativeBinomial(-1.0, gamma=0.5), "eta"),
        (lambda: TruncatedNegativeBinomial(-2.0, gamma=0.5), "eta"),
        (lambda: TruncatedNegativeBinomial(1.0, gamma=1.0), "gamma"),
        (lambda: TruncatedNegativeBinomial(1.0, gamma=0.0), "gamma"),
        (lambda: TruncatedNegativeBinomial(1.0, gamma=0.5, mean=3), "exactly one"),
        (lambda: Geometric(mean=0.5), "mean"),
        (lambda: Geometric(mean=float("nan")), "mean"),
        (lambda: Binomial(0, 0.5), "n"),
        (lambda: Binomial(10, 1.0), "p"),
        (lambda: Binomial(10, 0.0), "p"),
        (lambda: Binomial.from_mean(20, 10), "mean"),
        (lambda: Poisson(0.0), "mean"),
        (lambda: Poisson(-1.0), "mean"),
    ],
)
def test_bad_parameters(factory, message):
    with pytest.raises(ValueError, match=message):
        factory()


def test_sample_requires_a_generator():
    with pytest.raises(TypeError, match="Generator"):
        Geometric(mean=3).sample(np.random.RandomState(0))


@settings(max_examples=60, deadline=None)
@given(eta=st.floats(-0.95, 5.0), gamma=st.floats(1e-4, 0.99), z=st.floats(0.0, 1.0))
def test_tnb_pgf_properties(eta, gamma, z):
    d = TruncatedNegativeBinomial(eta, gamma=gamma)
    assert 0.0 <= d.pgf(z) <= 1.0 + 1e-12
    assert d.pgf(1.0) == pytest.approx(1.0, rel=1e-9)
    assert d.pgf_derivative(1.0) == pytest.approx(d.mean, rel=1e-9)
    assert d.pgf_derivative(z) <= d.pgf_derivative(1.0) * (1 + 1e-12)
