"""Renyi-DP curves and RDP -> (eps, delta) conversions (privselect.accounting.rdp).

Reference values come from independent computations: numerical integration of the Renyi
divergence (scipy quad, or 30-digit mpmath quad for the subsampled Gaussian), direct
two-point sums, Google's dp_accounting, and the exact Gaussian privacy profile.
"""

import math
from dataclasses import dataclass

import mpmath
import numpy as np
import pytest
from dp_accounting.rdp import rdp_privacy_accountant as dpa
from hypothesis import given, settings, strategies as st
from scipy import integrate, optimize, stats

import privselect as ps
from privselect.accounting import rdp

# ----------------------------------------------------------------------------------------
# Independent references
# ----------------------------------------------------------------------------------------


def renyi_quad(log_p, log_q, a, pieces):
    """D_a(P || Q) = log(int p^a q^(1-a)) / (a - 1) by scipy quad over the given pieces."""
    f = lambda x: math.exp(a * log_p(x) + (1 - a) * log_q(x))  # noqa: E731
    total = sum(integrate.quad(f, lo, hi, epsabs=0, epsrel=1e-13, limit=200)[0] for lo, hi in pieces)
    return math.log(total) / (a - 1)


def sgm_rdp_mpmath(q, sigma, a, reverse=False):
    """D_a((1-q)N(0,s^2) + qN(1,s^2) || N(0,s^2)) (or the reverse) at 30 digits.

    Integrates N(0,s^2)-density * ((m^e) - 1 - e(m - 1)), m = mixture ratio, e = a (or 1 - a
    for the reverse direction, since D_a(Q||M) = log E_Q[(M/Q)^(1-a)]/(a-1)); the subtracted
    terms integrate to zero and keep log(A) accurate when A is close to 1.
    """
    with mpmath.workdps(30):
        q, s, a = mpmath.mpf(q), mpmath.mpf(sigma), mpmath.mpf(a)
        e = 1 - a if reverse else a
        z0 = s * s * mpmath.log(1 / q - 1) + mpmath.mpf(1) / 2

        def f(z):
            m = 1 - q + q * mpmath.exp((2 * z - 1) / (2 * s * s))
            return mpmath.npdf(z, 0, s) * (m**e - 1 - e * (m - 1))

        pts = sorted({-mpmath.inf, z0 - 10 * s, z0, z0 + 10 * s, mpmath.mpf(0), mpmath.inf})
        return float(mpmath.log1p(mpmath.quad(f, pts)) / (a - 1))


def two_point_renyi(p, q, a):
    """D_a(P || Q) for distributions on finitely many points, straight from the definition."""
    return math.log(sum(pi**a * qi ** (1 - a) for pi, qi in zip(p, q))) / (a - 1)


def exact_gaussian_epsilon(mu, delta):
    """eps(delta) of N(mu,1) vs N(0,1): delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)."""
    def excess(e):
        return stats.norm.cdf(-e / mu + mu / 2) - math.exp(e) * stats.norm.cdf(-e / mu - mu / 2) - delta

    return optimize.brentq(excess, 0.0, 100.0, xtol=1e-14)


# ----------------------------------------------------------------------------------------
# Curves
# ----------------------------------------------------------------------------------------


def test_default_orders():
    o = rdp.DEFAULT_ORDERS
    assert o.ndim == 1 and (o > 1).all() and (np.diff(o) > 0).all()
    assert o[0] == pytest.approx(1.01) and o[-1] == 1024
    assert not o.flags.writeable


@pytest.mark.parametrize("sigma, sens", [(0.5, 1.0), (1.1, 1.0), (4.0, 2.0)])
def test_gaussian_closed_form_and_quadrature(sigma, sens):
    orders = np.array([1.5, 2.0, 7.25, 32.0])
    mu = 1 / sigma  # noise std = noise_multiplier x sensitivity: privacy does not depend on sens
    curve = rdp.rdp_curve(ps.Gaussian(sigma, sensitivity=sens), orders)
    np.testing.assert_allclose(curve, orders * mu**2 / 2, rtol=1e-15)
    ref = renyi_quad(lambda x: stats.norm.logpdf(x, mu), stats.norm.logpdf, 2.0, [(-np.inf, np.inf)])
    assert curve[1] == pytest.approx(ref, rel=1e-9)


@pytest.mark.parametrize("q", [1e-3, 0.01, 0.3])
@pytest.mark.parametrize("sigma", [0.5, 1.1, 4.0])
def test_subsampled_gaussian_integer_orders_match_dp_accounting(q, sigma):
    orders = np.concatenate([np.arange(2.0, 65.0), [128.0, 256.0, 1024.0]])
    mine = rdp.rdp_curve(ps.Gaussian(sigma).poisson_subsample(q), orders)
    theirs = dpa._compute_rdp_poisson_subsampled_gaussian(q, sigma, orders)
    np.testing.assert_allclose(mine, theirs, rtol=1e-8)


@pytest.mark.parametrize("q, sigma, a", [
    (1e-3, 4.0, 1.05), (1e-3, 0.5, 3.7), (0.01, 1.1, 1.5), (0.01, 0.5, 10.3),
    (0.3, 0.5, 1.01), (0.3, 4.0, 2.5), (0.3, 1.1, 33.25), (0.9, 30.0, 1.05),
])
def test_subsampled_gaussian_fractional_orders_match_quadrature(q, sigma, a):
    mine = float(rdp.rdp_curve(ps.Gaussian(sigma).poisson_subsample(q), a))
    ref = sgm_rdp_mpmath(q, sigma, a)
    # one-sided: the series carries a rounding allowance of 32 ulps of its largest parts
    # (visible only for large q and sigma, e.g. 6e-10 at q = 0.9, sigma = 30, a = 1.05)
    assert ref * (1 - 1e-11) <= mine <= ref * (1 + 1e-9)


def test_dp_accounting_fractional_orders_are_looser():
    """dp_accounting 0.6.0 sums |terms| of the fractional-order series (log|Gamma| drops the
    signs of C(a, k) for k > a), so its value is an upper bound, here 4.4x the exact one
    (and +inf where its series does not converge). Ours matches the 30-digit integral."""
    exact = sgm_rdp_mpmath(0.3, 4.0, 1.5)
    mine = float(rdp.rdp_curve(ps.Gaussian(4.0).poisson_subsample(0.3), 1.5))
    theirs = float(dpa._compute_rdp_poisson_subsampled_gaussian(0.3, 4.0, [1.5])[0])
    assert mine == pytest.approx(exact, rel=1e-10)
    assert theirs == pytest.approx(0.018990036, rel=1e-6) and exact == pytest.approx(0.0043116653, rel=1e-8)
    orders = np.array([1.01, 1.25, 1.5, 2.5, 3.7, 10.3, 33.25])
    for q, sigma in [(1e-3, 0.5), (0.01, 1.1), (0.3, 4.0)]:
        mine = rdp.rdp_curve(ps.Gaussian(sigma).poisson_subsample(q), orders)
        theirs = dpa._compute_rdp_poisson_subsampled_gaussian(q, sigma, orders)
        assert (theirs >= mine * (1 - 1e-12)).all()


@pytest.mark.parametrize("q, sigma, a", [(0.3, 1.1, 1.5), (0.01, 0.5, 2.5), (0.5, 4.0, 7.75)])
def test_subsampled_gaussian_remove_direction_dominates(q, sigma, a):
    """Mironov, Talwar, Zhang 2019, Thm 5, checked at fractional orders."""
    assert sgm_rdp_mpmath(q, sigma, a, reverse=True) <= sgm_rdp_mpmath(q, sigma, a)


def test_subsampled_gaussian_extremes():
    assert float(rdp.rdp_curve(ps.Gaussian(2.0).poisson_subsample(1.0), 3.5)) == pytest.approx(3.5 / 8, rel=1e-15)
    # tiny amplified loss: A_2 - 1 = q^2 (e^{1/s^2} - 1) exactly at integer order 2
    q, s = 1e-6, 100.0
    assert float(rdp.rdp_curve(ps.Gaussian(s).poisson_subsample(q), 2.0)) == pytest.approx(
        math.log1p(q * q * math.expm1(1 / s**2)), rel=1e-12)
    c = rdp.rdp_curve(ps.Gaussian(0.1).poisson_subsample(0.9), [1.5, 1000.5, 20000.0])
    assert np.isfinite(c).all() and (np.diff(c) > 0).all()


@pytest.mark.parametrize("eps0", [0.1, 1.0, 3.0])
def test_laplace_matches_quadrature(eps0):
    b = 1 / eps0
    log_p = lambda x: -abs(x - 1) / b - math.log(2 * b)  # noqa: E731
    log_q = lambda x: -abs(x) / b - math.log(2 * b)  # noqa: E731
    orders = np.array([1.1, 2.0, 5.5, 20.0])
    curve = rdp.rdp_curve(ps.Laplace(b), orders)
    for a, value in zip(orders, curve):
        ref = renyi_quad(log_p, log_q, a, [(-np.inf, 0.0), (0.0, 1.0), (1.0, np.inf)])
        assert value == pytest.approx(ref, rel=1e-9)
    assert (curve <= eps0).all()
    # sensitivity scales the noise, not the privacy (noise scale = scale x sensitivity)
    np.testing.assert_allclose(rdp.rdp_curve(ps.Laplace(b, sensitivity=2.0), orders), curve, rtol=1e-14)


def test_small_losses_keep_relative_precision():
    orders = np.array([1.01, 2.0, 100.0])
    # Laplace and eps-RR both behave like a eps^2 / 2 for tiny eps
    np.testing.assert_allclose(rdp.rdp_curve(ps.Laplace(1e6), orders), orders * 1e-12 / 2, rtol=1e-5)
    np.testing.assert_allclose(rdp.rdp_curve(ps.PureDP(1e-6), orders), orders * 1e-12 / 2, rtol=1e-5)
    assert (rdp.rdp_curve(ps.PureDP(0.0), orders) == 0).all()


@pytest.mark.parametrize("p", [0.6, 0.9, 0.2])
def test_randomized_response_two_point_sum(p):
    orders = np.array([1.3, 2.0, 4.5, 16.0])
    curve = rdp.rdp_curve(ps.RandomizedResponse(p), orders)
    ref = [two_point_renyi((p, 1 - p), (1 - p, p), a) for a in orders]
    np.testing.assert_allclose(curve, ref, rtol=1e-12)


@pytest.mark.parametrize("eps", [0.3, 1.0, 5.0])
def test_pure_dp_is_randomized_response(eps):
    orders = rdp.DEFAULT_ORDERS
    pure = rdp.rdp_curve(ps.PureDP(eps), orders)
    rr = rdp.rdp_curve(ps.RandomizedResponse(math.exp(eps) / (1 + math.exp(eps))), orders)
    np.testing.assert_allclose(pure, rr, rtol=1e-12)
    assert (pure <= eps * (1 + 1e-12)).all()
    assert (pure <= orders * eps**2 / 2 * (1 + 1e-12)).all()  # Bun, Steinke 2016, Prop. 3.3
    np.testing.assert_array_equal(rdp.rdp_curve(ps.ApproxDP(eps, 0.0), orders), pure)
    assert np.isinf(rdp.rdp_curve(ps.ApproxDP(eps, 1e-6), orders)).all()


@pytest.mark.parametrize("eps0, q", [(1.0, 0.1), (3.0, 0.01), (0.5, 0.5)])
def test_subsampled_randomized_response_both_directions(eps0, q):
    p = math.exp(eps0) / (1 + math.exp(eps0))
    P, Q = (p, 1 - p), (1 - p, p)
    M = tuple((1 - q) * qi + q * pi for pi, qi in zip(P, Q))
    orders = np.array([1.2, 2.0, 6.5, 40.0])
    curve = rdp.rdp_curve(ps.PureDP(eps0).poisson_subsample(q), orders)
    ref = [max(two_point_renyi(M, Q, a), two_point_renyi(Q, M, a)) for a in orders]
    np.testing.assert_allclose(curve, ref, rtol=1e-10)
    amplified = math.log1p(q * math.expm1(eps0))  # Balle, Barthe, Gaboardi 2018
    assert (curve <= rdp.rdp_curve(ps.PureDP(amplified), orders) * (1 + 1e-12)).all()
    np.testing.assert_allclose(rdp.rdp_curve(ps.RandomizedResponse(p).poisson_subsample(q), orders), curve, rtol=1e-13)


def test_subsampled_laplace_bound_is_valid():
    """The RR-based bound is at least the true RDP of the subsampled Laplace (both directions)."""
    b, q = 1.0, 0.2
    pieces = [(-np.inf, 0.0), (0.0, 1.0), (1.0, np.inf)]

    def log_q(x):
        return -abs(x) / b - math.log(2 * b)

    def log_m(x):
        return np.logaddexp(math.log1p(-q) - abs(x) / b, math.log(q) - abs(x - 1) / b) - math.log(2 * b)

    orders = np.array([1.5, 3.0, 10.0])
    bound = rdp.rdp_curve(ps.Laplace(b).poisson_subsample(q), orders)
    for a, value in zip(orders, bound):
        true = max(renyi_quad(log_m, log_q, a, pieces), renyi_quad(log_q, log_m, a, pieces))
        assert true <= value <= 1.5 * true


def test_sampling_without_replacement_uses_the_same_pairs():
    """Zhu, Dong, Wang 2022, Thm 11(2): the replace-one base's pairs, add/remove sampled mechanism.

    An add/remove base is worth twice as much under replace-one (noise multiplier halved).
    """
    orders = rdp.DEFAULT_ORDERS
    for base, replace_one in ((ps.Gaussian(1.1, sensitivity=2.0), ps.Gaussian(0.55)), (ps.PureDP(1.0), ps.PureDP(2.0)),
                              (ps.Laplace(2.0), ps.Laplace(1.0))):
        np.testing.assert_array_equal(
            rdp.rdp_curve(base.sample_without_replacement(0.05), orders),
            rdp.rdp_curve(replace_one.poisson_subsample(0.05), orders),
        )


def test_composition_adds_curves():
    orders = rdp.DEFAULT_ORDERS
    g = ps.Gaussian(1.1).poisson_subsample(0.01)
    lap = ps.Laplace(3.0)
    comp = ps.compose(g.compose(100), lap, g.compose(20))
    expected = 120 * rdp.rdp_curve(g, orders) + rdp.rdp_curve(lap, orders)
    np.testing.assert_allclose(rdp.rdp_curve(comp, orders), expected, rtol=1e-14)
    assert np.isinf(rdp.rdp_curve(ps.compose(g, ps.ApproxDP(1.0, 1e-5)), orders)).all()


_ORDERS_SMALL = np.array([1.05, 1.5, 2.0, 3.25, 8.0, 32.5])


@settings(max_examples=40, deadline=None)
@given(
    q=st.floats(1e-4, 0.99), dq=st.floats(1e-3, 0.5),
    sigma=st.floats(0.3, 20.0), ds=st.floats(1e-3, 2.0),
)
def test_subsampled_gaussian_monotone_in_rate_and_inverse_noise(q, dq, sigma, ds):
    base = rdp.rdp_curve(ps.Gaussian(sigma).poisson_subsample(q), _ORDERS_SMALL)
    more_sampled = rdp.rdp_curve(ps.Gaussian(sigma).poisson_subsample(min(1.0, q + dq)), _ORDERS_SMALL)
    noisier = rdp.rdp_curve(ps.Gaussian(sigma * (1 + ds)).poisson_subsample(q), _ORDERS_SMALL)
    assert (more_sampled >= base * (1 - 1e-9)).all()
    assert (noisier <= base * (1 + 1e-9)).all()
    assert (np.diff(base) >= -1e-9 * base[1:]).all()  # non-decreasing in the order


# ----------------------------------------------------------------------------------------
# Conversions
# ----------------------------------------------------------------------------------------


def _dpsgd_curve(orders, sigma=1.1, q=256 / 60000, steps=14063):
    return steps * rdp.rdp_curve(ps.Gaussian(sigma).poisson_subsample(q), orders)


@pytest.mark.parametrize("sigma, q, steps", [(1.1, 256 / 60000, 14063), (0.8, 0.01, 2000), (4.0, 0.3, 10)])
def test_improved_conversion_matches_dp_accounting(sigma, q, steps):
    # dp_accounting uses the improved rule only for orders > 1.01; compare on such orders.
    orders = rdp.DEFAULT_ORDERS[rdp.DEFAULT_ORDERS > 1.01]
    curve = _dpsgd_curve(orders, sigma, q, steps)
    for delta in (1e-3, 1e-5, 1e-10):
        theirs, _ = dpa.compute_epsilon(orders, curve, delta)
        assert rdp.epsilon_from_rdp(orders, curve, delta) == pytest.approx(theirs, rel=1e-13)
    for eps in (0.5, 2.0, 8.0):
        theirs, _ = dpa.compute_delta(orders, curve, eps)
        assert rdp.delta_from_rdp(orders, curve, eps) == pytest.approx(theirs, rel=1e-12)


def test_dp_accounting_accountant_end_to_end():
    import dp_accounting

    orders = np.arange(2.0, 257.0)
    acc = dp_accounting.rdp.RdpAccountant(orders=list(orders))
    acc.compose(dp_accounting.PoissonSampledDpEvent(0.01, dp_accounting.GaussianDpEvent(1.1)), 1000)
    mine = rdp.rdp_epsilon(ps.Gaussian(1.1).poisson_subsample(0.01).compose(1000), 1e-5, orders)
    assert mine == pytest.approx(acc.get_epsilon(1e-5), rel=1e-12)


def test_conversion_rules_single_order():
    a, r = 8.0, 0.7
    for eps in (0.8, 1.0, 3.0):  # where the rules are below the TV cap sqrt(1 - e^{-r}) = 0.7095
        krw = math.exp((a - 1) * (r - eps)) / a * (1 - 1 / a) ** (a - 1)  # KRW Lemma D.1, verbatim
        classic = math.exp((a - 1) * (r - eps))
        assert rdp.delta_from_rdp([a], [r], eps, "krw") == pytest.approx(krw, rel=1e-13)
        assert rdp.delta_from_rdp([a], [r], eps, "improved") == pytest.approx(krw, rel=1e-13)
        assert rdp.delta_from_rdp([a], [r], eps, "classic") == pytest.approx(classic, rel=1e-13)
    # at eps = 0 every rule is capped by delta(0) = TV <= sqrt(1 - e^{-r}) (Bretagnolle-Huber)
    assert rdp.delta_from_rdp([a], [r], 0.0, "krw") == pytest.approx(math.sqrt(-math.expm1(-r)), rel=1e-13)
    delta = 1e-6
    classic = r + math.log(1 / delta) / (a - 1)
    assert rdp.epsilon_from_rdp([a], [r], delta, "classic") == pytest.approx(classic, rel=1e-14)
    improved = r + math.log((a - 1) / a) - (math.log(delta) + math.log(a)) / (a - 1)
    assert rdp.epsilon_from_rdp([a], [r], delta, "krw") == pytest.approx(improved, rel=1e-14)
    # eps(delta) and delta(eps) invert each other
    e = rdp.epsilon_from_rdp([a], [r], delta, "krw")
    assert rdp.delta_from_rdp([a], [r], e, "krw") == pytest.approx(delta, rel=1e-10)


def test_best_is_the_minimum_and_improved_beats_classic():
    orders = rdp.DEFAULT_ORDERS
    curve = _dpsgd_curve(orders)
    deltas = np.array([1e-2, 1e-5, 1e-9])
    eps = {m: rdp.epsilon_from_rdp(orders, curve, deltas, m) for m in rdp.CONVERSIONS}
    assert (eps["improved"] < eps["classic"]).all()
    np.testing.assert_array_equal(eps["best"], np.minimum(eps["improved"], eps["classic"]))
    np.testing.assert_array_equal(eps["krw"], eps["improved"])


def test_conversion_edge_cases():
    orders = np.array([2.0, 4.0])
    assert rdp.epsilon_from_rdp(orders, [np.inf, np.inf], 1e-5) == math.inf
    assert rdp.delta_from_rdp(orders, [np.inf, np.inf], 3.0) == 1.0
    # only finite orders are used
    assert rdp.epsilon_from_rdp(orders, [0.1, np.inf], 1e-5) == rdp.epsilon_from_rdp([2.0], [0.1], 1e-5)
    # TV shortcut: delta >= sqrt(1 - e^{-r}) gives eps = 0, and caps delta(eps >= 0)
    assert rdp.epsilon_from_rdp(orders, [1e-6, 2e-6], 0.01) == 0.0
    assert rdp.delta_from_rdp(orders, [1e-6, 2e-6], 0.0) == pytest.approx(math.sqrt(-math.expm1(-1e-6)), rel=1e-12)
    assert rdp.delta_from_rdp(orders, [0.0, 0.0], 0.0) == 0.0
    assert rdp.delta_from_rdp(orders, [0.5, 1.0], -math.inf) == 1.0
    assert rdp.delta_from_rdp(orders, [0.5, 1.0], math.inf) == 0.0
    # vectorised: shapes follow the targets, scalars give floats
    d = np.array([[1e-3, 1e-6], [1e-9, 0.5]])
    assert rdp.epsilon_from_rdp(orders, [0.5, 1.0], d).shape == (2, 2)
    assert isinstance(rdp.epsilon_from_rdp(orders, [0.5, 1.0], 1e-3), float)
    e = rdp.delta_from_rdp(orders, [0.5, 1.0], np.linspace(0, 10, 7))
    assert e.shape == (7,) and (np.diff(e) <= 0).all() and ((0 <= e) & (e <= 1)).all()


@pytest.mark.parametrize("mu", [0.5, 1.0, 2.0, 4.0])
def test_gaussian_rdp_epsilon_is_an_upper_bound(mu):
    mech = ps.Gaussian(1 / mu)
    for delta in (1e-3, 1e-6, 1e-10):
        exact = exact_gaussian_epsilon(mu, delta)
        for method in rdp.CONVERSIONS:
            assert rdp.rdp_epsilon(mech, delta, conversion=method) >= exact
        # and not absurdly loose: improved is within 15% here (e.g. mu = 1, delta = 1e-6: 5.22 vs 4.89)
        assert rdp.rdp_epsilon(mech, delta) <= 1.15 * exact + 0.2
    for eps in (0.5, 2.0, 5.0):
        exact_delta = stats.norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * stats.norm.cdf(-eps / mu - mu / 2)
        assert rdp.rdp_delta(mech, eps) >= exact_delta


def test_rdp_profile():
    mech = ps.Gaussian(1.1).poisson_subsample(0.01).compose(1000)
    prof = ps.privacy_profile(mech, accountant="rdp")
    assert prof.accountant == "rdp"
    assert prof.epsilon(1e-5) == pytest.approx(rdp.rdp_epsilon(mech, 1e-5), rel=1e-15)
    lower, upper = prof.delta_bounds(np.array([0.5, 1.0, 2.0]))
    assert (lower == 0).all()
    np.testing.assert_allclose(upper, rdp.rdp_delta(mech, np.array([0.5, 1.0, 2.0])), rtol=1e-15)
    lo, up = prof.epsilon_bounds(1e-5)
    assert lo == 0.0 and up == prof.epsilon(1e-5)
    exact = ps.gdp_profile(1.0)
    assert ps.privacy_profile(ps.Gaussian(1.0), accountant="rdp").epsilon(1e-6) >= exact.epsilon(1e-6)


# ----------------------------------------------------------------------------------------
# Support and validation
# ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Unknown(ps.Mechanism):
    pass


def test_supports_rdp_dry_run():
    from privselect.accounting import get_accountant

    for m in (ps.Gaussian(1.0), ps.Laplace(1.0), ps.RandomizedResponse(0.7), ps.PureDP(1.0),
              ps.ApproxDP(1.0, 1e-6), ps.Gaussian(1.0).poisson_subsample(0.1),
              ps.Laplace(1.0).sample_without_replacement(0.1), ps.compose(ps.Gaussian(1.0), ps.Laplace(2.0))):
        assert get_accountant("rdp").supports(m) is None
    assert "_Unknown" in get_accountant("rdp").supports(_Unknown())
    assert "_Unknown" in get_accountant("rdp").supports(ps.compose(ps.Gaussian(1.0), _Unknown()))
    assert "str" in get_accountant("rdp").supports("gaussian")
    with pytest.raises(ValueError, match="_Unknown"):
        rdp.rdp_curve(ps.compose(ps.Gaussian(1.0), _Unknown()), [2.0])


@pytest.mark.parametrize("call, name", [
    (lambda: rdp.rdp_curve(ps.Gaussian(1.0), [1.0, 2.0]), "orders"),
    (lambda: rdp.rdp_curve(ps.Gaussian(1.0), [0.5]), "orders"),
    (lambda: rdp.rdp_curve(ps.Gaussian(1.0), [np.nan]), "orders"),
    (lambda: rdp.rdp_curve(ps.Gaussian(1.0), [np.inf]), "orders"),
    (lambda: rdp.rdp_curve(ps.Gaussian(1.0), []), "orders"),
    (lambda: rdp.epsilon_from_rdp([2.0, 3.0], [0.1], 1e-5), "rdp"),
    (lambda: rdp.epsilon_from_rdp([2.0], [-0.1], 1e-5), "rdp"),
    (lambda: rdp.epsilon_from_rdp([2.0], [np.nan], 1e-5), "rdp"),
    (lambda: rdp.epsilon_from_rdp([2.0], [0.1], 0.0), "delta"),
    (lambda: rdp.epsilon_from_rdp([2.0], [0.1], 1.0), "delta"),
    (lambda: rdp.epsilon_from_rdp([2.0], [0.1], np.nan), "delta"),
    (lambda: rdp.epsilon_from_rdp([2.0], [0.1], 1e-5, conversion="optimal"), "conversion"),
    (lambda: rdp.delta_from_rdp([2.0], [0.1], np.nan), "epsilon"),
    (lambda: rdp.delta_from_rdp([2.0], [0.1], 1.0, conversion=None), "conversion"),
    (lambda: rdp.rdp_epsilon(ps.Gaussian(1.0), -1e-5), "delta"),
    (lambda: rdp.rdp_delta(ps.Gaussian(1.0), [1.0, np.nan]), "epsilon"),
    (lambda: rdp.rdp_profile(ps.Gaussian(1.0), orders=[1.0]), "orders"),
])
def test_bad_input_names_the_parameter(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_rdp_curve_rejects_non_mechanisms():
    with pytest.raises(TypeError, match="Mechanism"):
        rdp.rdp_curve(1.0, [2.0])
