"""The exact Gaussian / mu-GDP profile at extreme mu and eps, against 30+ digit mpmath values.

delta(eps) = Phi(mu/2 - eps/mu) - e^eps Phi(-mu/2 - eps/mu) (Balle, Wang 2018, Thm 8) is evaluated
with mpmath at the exact float inputs, with enough digits to survive its cancellation (small mu)
and its huge exponents (large eps). Checked: ``gaussian_delta`` is accurate, the certified bracket of
``GaussianCurve`` contains the true value, epsilon(delta) is never optimistic and is tight, and bad
mu is rejected with an error naming it. Also the pinned B1/B2 cases (test_extremes / test_fuzz).
"""

import math

import mpmath as mp
import numpy as np
import pytest

import privselect as ps
from privselect.accounting import gaussian as G, profile as P
from privselect.accounting.profile import GaussianCurve


def _ncdf(x):
    # mpmath's erfc fails for astronomically large arguments; asymptotic series there (relative 1e-48)
    if x < -1e8:
        return mp.npdf(x) / (-x) * (1 - 1 / x**2 + 3 / x**4 - 15 / x**6)
    if x > 1e8:
        return 1 - _ncdf(-x)
    return mp.ncdf(x)


def ref_delta(eps, mu, digits=30):
    """The exact profile at the float inputs, to about ``digits`` significant digits."""
    extra = max(0.0, -math.log10(mu)) + max(0.0, math.log10(abs(eps) + 1.0))
    with mp.workdps(int(digits + 2 * extra + 20)):
        e, m = mp.mpf(eps), mp.mpf(mu)
        return +(_ncdf(m / 2 - e / m) - mp.exp(e) * _ncdf(-m / 2 - e / m))


def ref_epsilon(delta, mu):
    """The exact eps(delta) (mpmath root in x = mu/2 - eps/mu, where the profile is well scaled)."""
    with mp.workdps(60):
        m, d = mp.mpf(mu), mp.mpf(delta)
        f = lambda x: _ncdf(x) - mp.exp(m * (m / 2 - x)) * _ncdf(x - m) - d  # noqa: E731
        lo, hi = mp.mpf(-60), m / 2 + 60  # f(lo) < 0 < f(hi): delta increases in x
        for _ in range(400):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if f(mid) < 0 else (lo, mid)
        return m * (m / 2 - (lo + hi) / 2)


def _grid(mu):
    """eps where delta spans 1e-300 .. 1 (x = mu/2 - eps/mu from -38 to 3), both signs, and a few more."""
    q = np.concatenate([np.linspace(-3.0, 38.0, 15), [0.0, 1e-3]])
    eps = mu * mu / 2 + mu * q
    eps = np.concatenate([eps, -eps, [0.0, 1.0, -1.0, 50.0, 700.0]])
    return eps[np.isfinite(eps)]


# -- B1: epsilon above 1e4 and at huge mu -----------------------------------------------------------


@pytest.mark.parametrize("mu", [math.sqrt(19907), 1e3, 1e5, 1e100, 1e150])
def test_exact_profile_epsilon_for_large_mu_against_mpmath(mu):
    prof = ps.gdp_profile(mu)
    for delta in (math.exp(-1.0), 1e-5, 1e-15):
        exact = ref_epsilon(delta, mu)
        lower, upper = prof.epsilon_bounds(delta)
        assert lower <= exact <= upper
        assert upper == pytest.approx(float(exact), rel=1e-13)
        assert float(ps.gaussian_epsilon(delta, mu)) == upper
    assert prof.epsilon(math.exp(-1.0)) > 1e4 or mu < 150


def test_exact_method_matches_gdp_profile_above_1e4():
    prof = ps.privacy_profile(ps.Gaussian(1.0).compose(19907), accountant="exact")
    # mu^2/2 - mu Phi^{-1}(delta) is an upper bound (delta(eps) <= Phi(mu/2 - eps/mu)), tight for large mu
    mu = math.sqrt(19907)
    bound = mu * (mu / 2 - float(mp.sqrt(2) * mp.erfinv(2 * mp.exp(-1) - 1)))
    eps = prof.epsilon(math.exp(-1.0))
    assert 1e4 < eps <= bound
    assert eps == pytest.approx(float(ref_epsilon(math.exp(-1.0), mu)), rel=1e-13)


@pytest.mark.parametrize("mu", [1e200, 1.4e154, 1e308])
def test_astronomical_mu_is_rejected_by_the_profile(mu):
    with pytest.raises(ValueError, match="mu"):
        ps.gdp_profile(mu)
    with pytest.raises(ValueError, match="mu"):
        GaussianCurve(mu)


@pytest.mark.parametrize("mu", [1e100, 1e154, 1e200, 1e300])
def test_huge_mu_functions_return_numbers(mu):
    # delta(eps) = 1 up to ~1e-300 for every eps below ~mu^2/2; eps(delta) exceeds the double range
    # once mu^2/2 does (returned as +inf, an upper bound), no OverflowError or NaN.
    d = ps.gaussian_delta(np.array([-1e300, 0.0, 1.0, 1e300]), mu)
    assert not np.isnan(d).any()
    assert d[0] == 1.0 and d[1] == 1.0 and d[2] == 1.0
    e = float(ps.gaussian_epsilon(1e-5, mu))
    if mu * mu / 2 < np.finfo(float).max / 2:
        assert e == pytest.approx(float(ref_epsilon(1e-5, mu)), rel=1e-13)
    else:
        assert e == math.inf


# -- B2: gaussian_delta at tiny mu, huge |eps|, and its validation ---------------------------------


@pytest.mark.parametrize("mu", [2.2e-311, 2.35e-213, 1e-100, 1e-12, 1e-6, 1e-3, 0.1, 1.0, 7.0, 141.0,
                                1e4, 1e100])
def test_gaussian_delta_matches_mpmath(mu):
    eps = _grid(mu)
    est = np.asarray(ps.gaussian_delta(eps, mu))
    for e, d in zip(eps, est):
        r = ref_delta(e, mu)
        if r > 1e-300:
            assert abs(d - r) <= 1e-12 * r, (e, mu, d, r)
        else:  # subnormal or below: absolute
            assert abs(d - r) <= 1e-310, (e, mu, d, r)


@pytest.mark.parametrize("mu", [3e-310, 1e-200, 1e-8, 0.01, 0.5, 1.0, 2.5, 30.0, 141.0, 1e6, 1e100, 1e150])
def test_certified_bracket_contains_the_exact_value(mu):
    eps = _grid(mu)
    lower, upper = GaussianCurve(mu).delta_bounds(eps)
    for e, lo, up in zip(eps, lower, upper):
        r = ref_delta(e, mu)
        assert mp.mpf(lo) <= r <= mp.mpf(up), (e, mu, lo, r, up)
        if r > 1e-290 and mu < 1e6:  # tight where eps itself pins x down (the rounding of x is relative)
            assert up - lo <= 1e-12 * r


def test_limits_at_infinite_and_huge_eps():
    for mu in (1e-300, 1.0, 1e100):
        assert ps.gaussian_delta(math.inf, mu) == 0.0
        assert ps.gaussian_delta(-math.inf, mu) == 1.0
    # delta -> 0 as eps -> +inf; the formula at eps -> -inf is 1 - e^eps
    assert ps.gaussian_delta(1.8961503816218352e154, 1.0) == 0.0
    assert ps.gaussian_delta(-1.8961503816218352e154, 1.0) == 1.0
    assert ps.gaussian_delta(-50.0, 1e-300) == pytest.approx(-math.expm1(-50.0), rel=1e-15)
    assert ps.gaussian_delta(-1e-3, 1e-300) == pytest.approx(-math.expm1(-1e-3), rel=1e-14)
    lower, upper = GaussianCurve(1.0).delta_bounds(np.array([-math.inf, math.inf]))
    assert lower.tolist() == [1.0, 0.0] and upper.tolist() == [1.0, 0.0]


def test_tiny_mu_goes_to_zero_correctly():
    # delta(0) = 2 Phi(mu/2) - 1 ~ mu / sqrt(2 pi): no cancellation, down to subnormal mu
    for mu in (1e-20, 1e-200, 2.2e-311):
        assert ps.gaussian_delta(0.0, mu) == pytest.approx(mu / math.sqrt(2 * math.pi), rel=1e-12, abs=1e-322)
    assert ps.gaussian_delta(1.0, 2.35e-213) == 0.0
    assert ps.gaussian_delta(1.0, 2.2e-311) == 0.0
    d = ps.gaussian_delta(np.array([0.0, 1e-30, 1e-15, 1.0]), 1e-15)
    assert np.all(np.diff(d) <= 0) and d[-1] == 0.0 and d[0] > 0


@pytest.mark.parametrize("bad", [0.0, -1.0, -0.0, math.inf, -math.inf, math.nan, None, "1", True, [1.0], 1j])
def test_mu_is_validated_with_a_named_error(bad):
    for call in (lambda: ps.gaussian_delta(0.5, bad), lambda: ps.gaussian_epsilon(1e-5, bad),
                 lambda: ps.gdp_profile(bad)):
        with pytest.raises((ValueError, TypeError), match="mu"):
            call()


def test_eps_and_delta_are_validated():
    with pytest.raises(ValueError, match="eps"):
        ps.gaussian_delta(math.nan, 1.0)
    with pytest.raises(ValueError, match="eps"):
        ps.gaussian_delta(np.array([0.0, math.nan]), 1.0)
    for bad in (-0.1, 1.5, math.nan):
        with pytest.raises(ValueError, match="delta"):
            ps.gaussian_epsilon(bad, 1.0)
    assert float(ps.gaussian_epsilon(0.0, 1.0)) == math.inf
    assert float(ps.gaussian_epsilon(1.0, 1.0)) == -math.inf


def test_vectorised_shapes_are_kept():
    eps = np.linspace(-3, 10, 12).reshape(3, 4)
    assert np.asarray(ps.gaussian_delta(eps, 1.0)).shape == (3, 4)
    lower, upper = GaussianCurve(1.0).delta_bounds(eps)
    assert lower.shape == upper.shape == (3, 4)
    delta = np.array([[1e-5, 1e-3], [0.1, 0.5]])
    assert np.asarray(ps.gaussian_epsilon(delta, 2.0)).shape == (2, 2)
    assert ps.gdp_profile(2.0).epsilon(delta).shape == (2, 2)


# -- epsilon(delta): never optimistic, tight, at every scale of mu ----------------------------------


@pytest.mark.parametrize("mu", [3e-310, 1e-300, 1e-20, 1e-6, 1e-3, 0.1, 1.0, 4.0, 141.0, 1e4])
def test_epsilon_bracket_is_certified_against_mpmath(mu):
    deltas = np.array([1e-300, 1e-15, 1e-5, 0.3, 0.99])
    lower, upper = GaussianCurve(mu).epsilon_bounds(deltas)
    for d, lo, up in zip(deltas, lower, upper):
        assert ref_delta(up, mu) <= d < ref_delta(lo, mu)  # eps(d) lies in [lo, up]
        assert up - lo <= 1e-12 * max(abs(up), 1e-300) or up - lo <= 1e-300
    prof = ps.gdp_profile(mu)
    assert np.all(prof.epsilon(deltas) == np.maximum(upper, 0.0))


def test_delta_below_the_float_floor_is_refused():
    with pytest.raises(P.CertificationError, match="delta"):
        ps.gdp_profile(1.0).epsilon(1e-323)
    # subnormal delta: certified (never optimistic), with the precision subnormals allow
    eps = ps.gdp_profile(1.0).epsilon(1e-320)
    assert ref_delta(eps, 1.0) <= 1e-320
    assert eps == pytest.approx(float(ref_epsilon(1e-320, 1.0)), rel=1e-5)


def test_bounds_are_non_increasing_in_eps():
    for mu in (1e-6, 0.3, 1.0, 3.0, 1e3):
        eps = np.sort(np.concatenate([np.linspace(-20, 60, 400), mu * mu / 2 + mu * np.linspace(-3, 40, 400)]))
        lower, upper = GaussianCurve(mu).delta_bounds(eps)
        assert np.all(np.diff(upper) <= 0) and np.all(np.diff(lower) <= 0)
        assert np.all(lower <= upper)


# -- the numerical assumptions the certified bracket rests on ----------------------------------------


def test_special_function_accuracy_assumed_by_the_bracket():
    from scipy import special

    with mp.workdps(40):
        z = np.concatenate([np.linspace(-1.0, 30.0, 400), np.logspace(-8, 8, 200)])
        worst = max(abs(float((mp.mpf(special.erfcx(v)) - mp.exp(mp.mpf(v) ** 2) * mp.erfc(v))
                              / (mp.exp(mp.mpf(v) ** 2) * mp.erfc(v)))) for v in z)
        assert worst <= G._ERFCX_ERR
        x = -np.linspace(0.0, 708.0, 300)  # normal results (subnormal ones: absolute _TINY terms)
        assert max(abs(float((mp.mpf(np.exp(v)) - mp.exp(v)) / mp.exp(v))) for v in x) <= G._EXP_ERR
        x = -np.logspace(-20, 2.5, 300)
        assert max(abs(float((mp.mpf(np.expm1(v)) - mp.expm1(v)) / mp.expm1(v))) for v in x) <= G._EXP_ERR


def test_gauss_legendre_rule_and_mills_bounds():
    with mp.workdps(40):
        for node, weight in G._GL_HALF:
            root = mp.findroot(lambda t: mp.legendre(12, t), mp.mpf(node))
            dp = 12 * (root * mp.legendre(12, root) - mp.legendre(11, root)) / (root**2 - 1)
            assert node == float(root) and weight == float(2 / ((1 - root**2) * dp**2))
        for y in (-60.0, -10.0, -3.0, -1.0, -0.01, 0.0, 0.5, 2.0):
            rp = 1 + mp.mpf(y) * mp.ncdf(y) / mp.npdf(y)
            assert G._mills_prime_lower(np.array(y)) <= rp <= G._mills_prime_upper(np.array(y))


def test_scalar_fast_path_agrees_with_the_array_path():
    rng = np.random.default_rng(7)
    for _ in range(3000):
        mu = 10 ** rng.uniform(-310, 154)
        if rng.random() < 0.8:
            eps = (mu * mu / 2 + mu * rng.uniform(-5, 45)) * rng.choice([-1.0, 1.0])
        else:
            eps = 10 ** rng.uniform(-300, 308) * rng.choice([-1.0, 1.0])
        if not math.isfinite(eps):
            continue
        scalar = ps.gaussian_delta(float(eps), float(mu))
        array = ps.gaussian_delta(np.array([eps]), float(mu))[0]
        assert isinstance(scalar, np.float64)
        assert scalar == pytest.approx(array, rel=1e-15, abs=1e-320)


def _mp_gdp_epsilon(delta: float, mu, start: float) -> mp.mpf:
    """eps(delta) of mu-GDP at mpmath precision (mu an mpf: the exact composed value), Newton from start."""
    f = lambda e: mp.ncdf(-e / mu + mu / 2) - mp.exp(e) * mp.ncdf(-e / mu - mu / 2) - mp.mpf(delta)  # noqa: E731
    return mp.findroot(f, mp.mpf(start))


def test_exact_composition_adds_the_rounding_of_combining_the_steps():
    """Issue 14: Gaussian(1.4709...).compose(5662) at delta=1.817e-11 certified 0.39 ulp *below* mpmath.

    The composed mu = sqrt(5662) / 1.4709... is now carried as a certified range, so the upper eps is
    at or above the 50-digit value, and the lower eps at or below it.
    """
    sigma, k, delta = 1.4709636774060535, 5662, 1.817e-11
    prof = ps.privacy_profile(ps.Gaussian(sigma).compose(k), accountant="exact")
    lower, upper = prof.epsilon_bounds(delta)
    with mp.workdps(50):
        truth = _mp_gdp_epsilon(delta, mp.sqrt(k) / mp.mpf(sigma), upper)
        assert mp.mpf(lower) <= truth <= mp.mpf(upper)
        assert (mp.mpf(upper) - truth) / truth < 1e-13  # and still tight
    # heterogeneous composition: the same bracket property
    from privselect.accounting.profile import composed_gaussian_curve

    terms = [(1 / 0.7310000000000001, 3), (1 / 3.3, 977), (1 / 1.0000000000000002, 12)]
    curve = composed_gaussian_curve(terms)
    with mp.workdps(50):
        mu = mp.sqrt(sum(k / mp.mpf(1 / m) ** 2 for m, k in [(1 / 0.7310000000000001, 3), (1 / 3.3, 977),
                                                              (1 / 1.0000000000000002, 12)]))
        assert curve.mu_lower <= mu <= curve.mu_upper
        for d in (1e-3, 1e-9, 1e-15):
            lo, up = (float(v) for v in curve.epsilon_bounds(np.array(d)))
            truth = _mp_gdp_epsilon(d, mu, up)
            assert mp.mpf(lo) <= truth <= mp.mpf(up)


@pytest.mark.parametrize("sigma, k", [(1.0, 1), (1.4709636774060535, 5662), (1e-3, 1), (50.0, 10)])
def test_extreme_epsilon_gives_the_correct_bound(sigma, k):
    """delta(1e308) was 1.0 while delta(1e307) was 2e-323: the rounding bound of x overflowed."""
    prof = ps.privacy_profile(ps.Gaussian(sigma).compose(k), accountant="exact")
    tiny = 4 * float(np.finfo(float).smallest_subnormal)
    for eps in (1e300, 1e307, 1e308, float(np.finfo(float).max)):
        assert prof.delta(eps) <= tiny
        assert prof.delta_bounds(eps)[0] == 0.0
    assert prof.delta(math.inf) == 0.0
    assert prof.delta(-1e308) == 1.0 and prof.delta(-math.inf) == 1.0
    values = prof.delta(np.array([1e306, 1e307, 1e308, math.inf]))
    assert np.all(np.diff(values) <= 0)
