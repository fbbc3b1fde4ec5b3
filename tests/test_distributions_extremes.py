"""Distributions of K at extreme parameters: closed forms, mpmath references, limits, bounds.

The regressions B6 (Poisson huge mean), B10 (truncated negative binomial at extreme eta /
gamma, pgf(1) > 1) and B11 (binomial pmf for huge n) are pinned in tests/test_fuzz.py; here is
what they resolve to.
"""

import math

import numpy as np
import pytest
from scipy import special, stats

from privselect.selection.distributions import (
    MAX_BINOMIAL_N,
    MAX_ETA,
    MAX_MEAN,
    Binomial,
    Geometric,
    Logarithmic,
    Poisson,
    TruncatedNegativeBinomial,
)

# -- what the pins resolve to ---------------------------------------------------------------------


def test_extreme_eta_cases_resolve_to_accurate_distributions_or_refusals():
    d = TruncatedNegativeBinomial(1e-320, mean=2.0)  # eta in (0, 1e-300): the logarithmic limit
    lg = Logarithmic(gamma=d.gamma)
    assert d.mean >= 2.0 and d.mean == pytest.approx(2.0, rel=1e-14)
    assert d.pmf(np.arange(1, 50)) == pytest.approx(lg.pmf(np.arange(1, 50)), rel=1e-13)
    d = TruncatedNegativeBinomial(227.0, mean=4949.0)  # gamma^-eta - 1 ~ e^710 overflowed
    assert d.mean >= 4949.0 and d.mean == pytest.approx(4949.0, rel=1e-12)
    assert d.pmf(np.arange(1, 100_000)).sum() == pytest.approx(1.0, abs=1e-12)
    for eta, gamma in [(0.0, 1e-320), (2.1253678116873256e-181, 2.1253678116873256e-181)]:
        with pytest.raises(ValueError, match="mean"):  # the mean of K is ~1e317 / ~1e178
            TruncatedNegativeBinomial(eta, gamma)


@pytest.mark.parametrize("k", [Logarithmic(mean=2.0), Geometric(mean=3.0), TruncatedNegativeBinomial(-0.5, mean=7.0),
                               TruncatedNegativeBinomial(4.0, gamma=0.3), Logarithmic(gamma=0.5), Geometric(gamma=0.9),
                               TruncatedNegativeBinomial(1e6, gamma=1 - 1e-7), Binomial(10, 0.3), Poisson(4.0)],
                         ids=repr)
def test_pgf_is_exactly_one_at_one_and_its_derivative_the_mean(k):
    assert k.pgf(1.0) == 1.0
    assert k.pgf_derivative(1.0) == k.mean
    z = np.concatenate([np.linspace(0, 1, 201), 1 - np.geomspace(1e-16, 0.5, 60)])
    g = k.pgf(z)
    assert np.all((g >= 0) & (g <= 1))
    assert np.all(np.diff(g[:201]) >= 0)
    d = k.pgf_derivative(z)
    assert np.all((d >= 0) & (d <= k.mean))


# -- closed forms ------------------------------------------------------------------------------


@pytest.mark.parametrize("gamma", [1e-15, 1e-6, 0.01, 0.25, 0.5, 0.75, 1 - 1e-9, 1 - 2**-53])
def test_geometric_closed_forms(gamma):
    d = Geometric(gamma=gamma)
    k = np.array([1, 2, 3, 10, 1000, 10**6])
    assert d.pmf(k) == pytest.approx(gamma * np.exp((k - 1) * math.log1p(-gamma)), rel=1e-13, abs=1e-300)
    assert d.mean == pytest.approx(1 / gamma, rel=1e-14)
    for z in (0.0, 0.2, 0.5, 0.9, 0.999999):
        exact = gamma * z / ((1 - z) + gamma * z)  # gamma z / (1 - (1-gamma) z)
        assert d.pgf(z) == pytest.approx(exact, rel=1e-13)
        assert d.pgf_derivative(z) == pytest.approx(gamma / ((1 - z) + gamma * z) ** 2, rel=1e-13)


@pytest.mark.parametrize("gamma", [1e-18, 1e-12, 0.1, 0.5, 0.9, 1 - 1e-12])
def test_logarithmic_closed_forms(gamma):
    d = Logarithmic(gamma=gamma)
    lg = math.log(gamma)
    k = np.array([1, 2, 5, 50, 10**4])
    expected = np.exp(k * math.log1p(-gamma) - np.log(k) - math.log(-lg))
    assert d.pmf(k) == pytest.approx(expected, rel=1e-12, abs=1e-300)
    assert d.mean == pytest.approx(-math.expm1(lg) / (gamma * -lg), rel=1e-13)
    for z in (0.0, 0.3, 0.9, 0.999):
        assert d.pgf(z) == pytest.approx(math.log1p(-(1 - gamma) * z) / lg, rel=1e-12, abs=1e-300)


@pytest.mark.parametrize("gamma", [1e-9, 0.2, 0.6, 1 - 1e-10])
def test_eta_two_closed_form(gamma):
    """eta = 2: P[K = k] = (k + 1) (1-gamma)^k gamma^2 / (1 - gamma^2)."""
    d = TruncatedNegativeBinomial(2.0, gamma)
    k = np.array([1, 2, 3, 20, 500, 10**5])
    expected = (k + 1) * np.exp(k * math.log1p(-gamma)) * gamma**2 / ((1 - gamma) * (1 + gamma))
    assert d.pmf(k) == pytest.approx(expected, rel=1e-12, abs=1e-300)
    assert d.mean == pytest.approx(2 / (gamma * (1 + gamma)), rel=1e-13)


def test_small_eta_is_continuous_at_the_logarithmic_limit():
    for gamma in (1e-17, 0.01, 0.5, 0.999):
        log = Logarithmic(gamma=gamma)
        k = np.arange(1, 200)
        for eta in (5e-324, 1e-320, -1e-300, 1e-200, 1e-17):
            d = TruncatedNegativeBinomial(eta, gamma)
            assert d.mean == pytest.approx(log.mean, rel=1e-14)
            assert d.pmf(k) == pytest.approx(log.pmf(k), rel=1e-13, abs=1e-300)
            assert d.pgf(0.7) == pytest.approx(log.pgf(0.7), rel=1e-14)


@pytest.mark.parametrize("lam", [0.5, 3.0, 20.0])
def test_binomial_tends_to_poisson_for_huge_n(lam):
    """Bin(n, lam/n) / Poisson(lam) = exp(-(k - lam)^2 / (2n) + O(k / n)): B11 gave 4.2 for 0.37."""
    k = np.arange(0, 40)
    poisson = stats.poisson.pmf(k, lam)
    for n in (10**12, 377007766245747, 2**53):
        binom = Binomial.from_mean(lam, n).pmf(k)
        bound = 2 * (k**2 + lam**2 + k) / n + 1e-12
        assert np.all(np.abs(binom / poisson - 1) <= bound)
        assert np.all(binom <= 1)


def test_binomial_matches_exact_rational_arithmetic():
    n, p = 60, 0.37
    d = Binomial(n, p)
    from fractions import Fraction

    fp = Fraction(p)
    for k in range(0, n + 1):
        exact = math.comb(n, k) * fp**k * (1 - fp) ** (n - k)
        assert d.pmf(k) == pytest.approx(float(exact), rel=1e-13)


def test_poisson_pmf_for_huge_means():
    """scipy's poisson.logpmf(1e18, 1e18) is 0.0; the mode is ~ 1/sqrt(2 pi lam)."""
    for lam in (1e12, 1e15, 1e18, MAX_MEAN):
        d = Poisson(lam)
        m = float(math.floor(lam))
        # log p(m) = -0.5 log(2 pi m) - 1/(12 m) - (m - lam)^2/(2m) + O(1/m^2) near the mode
        assert d.log_pmf(m) == pytest.approx(-0.5 * math.log(2 * math.pi * m), abs=1e-12)
        if lam >= 1e15:  # the next term, x^3 / (6 sqrt(lam)) at x = 3, is below 1.5e-7
            k = float(math.floor(lam + 3 * math.sqrt(lam)))
            x = (k - lam) / math.sqrt(lam)
            assert d.log_pmf(k) == pytest.approx(-0.5 * math.log(2 * math.pi * lam) - x * x / 2, abs=1e-6)


# -- against mpmath ------------------------------------------------------------------------------


def _mp():
    return pytest.importorskip("mpmath")


def _mp_tnb_logpmf(mp, eta, gamma, k):
    eta, gamma, k = mp.mpf(eta), mp.mpf(gamma), mp.mpf(k)
    if eta == 0:
        return k * mp.log1p(-gamma) - mp.log(k) - mp.log(-mp.log(gamma))
    log_c = mp.loggamma(k + eta) - mp.loggamma(1 + eta) - mp.loggamma(k + 1)
    return k * mp.log1p(-gamma) + mp.re(log_c) - mp.log(mp.expm1(-eta * mp.log(gamma)) / eta)


TNB_GRID = [(-0.999999, 1e-300), (-0.99, 1e-30), (-0.5, 1e-6), (-0.5, 0.5), (-1e-10, 0.01), (0.0, 1e-12),
            (1e-300, 0.3), (0.3, 1e-15), (0.999999, 0.001), (1.000001, 0.001), (1.5, 0.999999), (2.0, 1e-12),
            (10.0, 0.5), (227.0, 0.04385625965996904), (1e4, 1e-6), (1e6, 0.5), (1e6, 1 - 1e-7), (3.0, 1 - 2**-53)]


@pytest.mark.parametrize("eta, gamma", TNB_GRID)
def test_tnb_pmf_mean_and_pgf_against_mpmath(eta, gamma):
    mp = _mp()
    mp.mp.dps = 60
    d = TruncatedNegativeBinomial(eta, gamma)
    e, g = mp.mpf(eta), mp.mpf(gamma)
    mean = (1 / g - 1) / mp.log(1 / g) if eta == 0 else e * (1 - g) / (g * -mp.expm1(e * mp.log(g)))
    assert d.mean == pytest.approx(float(mean), rel=1e-13)
    m = float(mean)
    ks = sorted({1, 2, 3, 15, 16, 17, 1000, 10**6, max(1, int(m)), int(m) + 7, int(3 * m) + 1, 10**12})
    logs = d.log_pmf(np.array(ks, dtype=float))
    for k, value in zip(ks, logs):
        ref = _mp_tnb_logpmf(mp, eta, gamma, k)
        if ref > -700:
            assert value == pytest.approx(float(ref), abs=2e-13 + 1e-15 * abs(float(ref))), k
    for z in (0.0, 0.5, 0.99, 1 - 1e-9):
        x = mp.log((1 - mp.mpf(z)) + g * mp.mpf(z))
        ref = x / mp.log(g) if eta == 0 else mp.expm1(-e * x) / mp.expm1(-e * mp.log(g))
        assert d.pgf(z) == pytest.approx(float(ref), rel=1e-12, abs=1e-300)
        dref = mp.exp((-e - 1) * (x - mp.log(g))) * mean
        assert d.pgf_derivative(z) == pytest.approx(float(dref), rel=1e-12, abs=1e-300)


@pytest.mark.parametrize("n", [7, 10**6, 10**9, 377007766245747, 2**52 + 1, MAX_BINOMIAL_N])
@pytest.mark.parametrize("p", [1e-300, 1e-15, 0.3, 0.5, 1 - 1e-12, 1 - 2**-53])
def test_binomial_pmf_against_mpmath(n, p):
    mp = _mp()
    mp.mp.dps = 60
    d = Binomial(n, p)
    mu, sd = n * p, math.sqrt(max(n * p * (1 - p), 1.0))
    ks = sorted({0, 1, 2, n - 2, n - 1, n, int(mu), int(mu) + 1, int(mu + 2 * sd), max(0, int(mu - 2 * sd))})
    ks = [k for k in ks if 0 <= k <= n]
    logs = d.log_pmf(np.array(ks, dtype=float))
    N, P = mp.mpf(n), mp.mpf(p)
    for k, value in zip(ks, logs):
        K = mp.mpf(k)
        ref = mp.loggamma(N + 1) - mp.loggamma(K + 1) - mp.loggamma(N - K + 1) + K * mp.log(P) + (N - K) * mp.log1p(-P)
        if ref > -700:
            assert value == pytest.approx(float(ref), abs=1e-13 + 1e-15 * abs(float(ref))), k
            assert value <= 0


@pytest.mark.parametrize("lam", [1e-300, 1e-6, 0.7, 30.0, 1e9, 1e16, MAX_MEAN])
def test_poisson_pmf_against_mpmath(lam):
    mp = _mp()
    mp.mp.dps = 60
    d = Poisson(lam)
    sd = math.sqrt(lam)
    ks = sorted({0, 1, 2, 17, int(lam), int(lam) + 1, int(lam + 3 * sd), max(0, int(lam - 3 * sd))})
    logs = d.log_pmf(np.array(ks, dtype=float))
    for k, value in zip(ks, logs):
        ref = mp.mpf(k) * mp.log(mp.mpf(lam)) - mp.mpf(lam) - mp.loggamma(mp.mpf(k) + 1)
        if ref > -700:
            assert value == pytest.approx(float(ref), abs=1e-13 + 1e-15 * abs(float(ref))), k


# -- probabilities stay in [0, 1] where the mass is on K = 1 --------------------------------------


@pytest.mark.parametrize("eta", [-0.9999999999999999, -0.999999, -0.5, -1e-300, 0.0, 1e-300, 0.5, 1.0, 2.0, 1e6])
@pytest.mark.parametrize("gamma", [1 - 2**-53, 1 - 2**-50, 1 - 1e-12, 0.5])
def test_pmf_never_exceeds_one(eta, gamma):
    d = TruncatedNegativeBinomial(eta, gamma)
    p = d.pmf(np.arange(1, 1000))
    assert np.all((p >= 0) & (p <= 1))
    if d.mean < 10:
        assert p.sum() == pytest.approx(1.0, abs=1e-12)
    assert d.pgf(1.0) == 1.0


# -- validation at the supported limits ----------------------------------------------------------


def test_supported_limits_are_validated_with_named_parameters():
    assert Poisson(MAX_MEAN).mean == MAX_MEAN
    with pytest.raises(ValueError, match="mean"):
        Poisson(float(np.nextafter(MAX_MEAN, math.inf)))
    assert TruncatedNegativeBinomial(MAX_ETA, gamma=0.5).eta == MAX_ETA
    with pytest.raises(ValueError, match="eta"):
        TruncatedNegativeBinomial(MAX_ETA * 1.5, gamma=0.5)
    with pytest.raises(ValueError, match="mean"):
        Geometric(gamma=1e-20)  # mean 1e20 > MAX_MEAN
    with pytest.raises(ValueError, match="mean"):
        Geometric(mean=1e19)
    with pytest.raises(ValueError, match="mean"):
        TruncatedNegativeBinomial(-0.99, mean=1e18)  # would need gamma below the double range
    with pytest.raises(ValueError, match="mean"):
        TruncatedNegativeBinomial(1e6, mean=1 + 1e-15)  # too close to 1 for eta = 1e6
    assert Binomial(MAX_BINOMIAL_N, 0.5).n == MAX_BINOMIAL_N
    with pytest.raises(ValueError, match="n"):
        Binomial(MAX_BINOMIAL_N + 1, 0.5)
    with pytest.raises(ValueError, match="n"):
        Binomial(1e308, 0.5)


# -- sampling ------------------------------------------------------------------------------------


def test_geometric_sampling_keeps_numpy_stream_and_does_not_clamp():
    for gamma in (0.5, 0.2, 1e-5):
        a, b = np.random.default_rng(7), np.random.default_rng(7)
        assert [Geometric(gamma=gamma).sample(a) for _ in range(200)] == [int(b.geometric(gamma)) for _ in range(200)]
    huge = Geometric(mean=9e18)
    draws = [huge.sample(np.random.default_rng(seed)) for seed in range(40)]
    assert all(isinstance(x, int) and x >= 1 for x in draws)
    assert max(draws) > 2**63 - 1  # numpy's geometric clamps at int64 max; P[K > 2^63] ~ 0.36


@pytest.mark.parametrize("k", [Logarithmic(mean=1e18), TruncatedNegativeBinomial(-0.99, gamma=5e-324),
                               TruncatedNegativeBinomial(0.5, gamma=1e-18), TruncatedNegativeBinomial(5.0, mean=1e18),
                               TruncatedNegativeBinomial(MAX_ETA, mean=1.5), Poisson(MAX_MEAN),
                               Binomial(MAX_BINOMIAL_N, 0.5)], ids=repr)
def test_sampling_is_fast_for_huge_means(k):
    rng = np.random.default_rng(3)
    draws = [k.sample(rng) for _ in range(200)]  # inversion would take ~mean / 4096 chunks
    assert all(isinstance(x, int) and x >= k.min_k for x in draws)


@pytest.mark.slow  # seconds per case, measured: the slow tier runs it
@pytest.mark.parametrize("eta, gamma", [(0.5, 1e-12), (0.3, 1e-17), (2.5, 1e-12), (7.0, 1e-15)])
def test_huge_mean_samples_follow_the_gamma_limit(eta, gamma):
    """For gamma -> 0 and eta > 0, gamma K tends to Gamma(eta, 1) (error O(gamma))."""
    k = TruncatedNegativeBinomial(eta, gamma)
    rng = np.random.default_rng(11)
    x = np.array([k.sample(rng) for _ in range(4000)], dtype=float) * -math.log1p(-gamma)
    assert stats.kstest(x, lambda v: special.gammainc(eta, v)).pvalue > 1e-4


@pytest.mark.slow  # seconds per case, measured: the slow tier runs it
@pytest.mark.parametrize("k", [Logarithmic(mean=1.5), Logarithmic(mean=50), TruncatedNegativeBinomial(-0.5, mean=30),
                               TruncatedNegativeBinomial(-0.9, gamma=1e-6), TruncatedNegativeBinomial(0.5, mean=200),
                               TruncatedNegativeBinomial(1e-300, gamma=0.01), TruncatedNegativeBinomial(1.5, mean=1.3),
                               TruncatedNegativeBinomial(3.0, gamma=0.05)], ids=repr)
def test_rejection_samplers_follow_the_pmf(k):
    """Chi-square on log-spaced bins, 6000 draws (the dyadic-block and gamma-Poisson samplers)."""
    rng = np.random.default_rng(2024)
    draws = np.array([k.sample(rng) for _ in range(6000)], dtype=float)
    top = min(1e7, 4 * draws.max() + 100)
    edges = np.unique(np.concatenate([np.arange(1, 10), np.geomspace(10, top, 25).round()]))
    kk = np.arange(1, int(edges[-1]))
    cdf = np.concatenate([[0.0], np.cumsum(k.pmf(kk))])  # cdf[i] = P[K < i + 1]
    probs = np.diff(cdf[(edges - 1).astype(int)])
    probs = np.append(probs, 1 - cdf[int(edges[-1]) - 1])
    counts = np.histogram(draws, bins=np.append(edges, np.inf))[0]
    expected = probs * draws.size
    keep = expected >= 20
    obs = np.append(counts[keep], counts[~keep].sum())
    exp = np.append(expected[keep], expected[~keep].sum())
    if exp[-1] < 5:
        obs, exp = obs[:-1], exp[:-1]
    assert stats.chisquare(obs, exp * obs.sum() / exp.sum()).pvalue > 1e-4
