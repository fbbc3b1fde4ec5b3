"""Characteristic-function accountant: reference values of accounting-cf.md §3, §5, §7."""

import math
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy import integrate, stats

import privselect as ps
from privselect.accounting.cf import MIN_DELTA, CFAccountant, cf_profile
from privselect.accounting.gaussian import gaussian_delta, gaussian_epsilon
from privselect.accounting.plrv import UnsupportedMechanismError


def assert_bracket(lower, upper, exact, rel_width, abs_slack=0.0):
    """exact in [lower, upper] and the bracket is tight."""
    lower, upper, exact = (np.asarray(x, dtype=float) for x in (lower, upper, exact))
    assert np.all(lower <= exact + abs_slack), (lower, exact)
    assert np.all(exact <= upper + abs_slack), (exact, upper)
    assert np.all(upper - lower <= rel_width * np.abs(exact) + abs_slack), (upper - lower, exact)


# -- Gaussian mechanism (accounting-cf.md §3.1, §5, §7) ------------------------------------------

GAUSS_MU1 = {
    -1.0: 0.6788179748866,
    0.0: 0.382924922548,
    0.5: 0.2384217081349,
    1.0: 0.1269367375066,
    2.0: 0.02092363582111,
    3.0: 0.001537185369401,
    5.0: 5.793721691919e-7,
}


def test_gaussian_profile_matches_closed_form():
    prof = cf_profile(ps.Gaussian(1.0))
    eps = np.array(sorted(GAUSS_MU1))
    exact = gaussian_delta(eps, 1.0)
    np.testing.assert_allclose(exact, [GAUSS_MU1[e] for e in eps], rtol=2e-12)
    lower, upper = prof.delta_bounds(eps)
    np.testing.assert_allclose(prof.delta_estimate(eps), exact, rtol=1e-9)
    np.testing.assert_allclose(upper, exact, rtol=1e-9)
    assert_bracket(lower, upper, exact, rel_width=1e-9)
    assert len(prof.curves) == 1 and prof.curves[0].direction == "both"
    assert prof.accountant == "cf"


@pytest.mark.parametrize("eps, exact", [(8.0, 3.6508216874e-15), (12.0, 5.2084420690e-32)])
def test_gaussian_tiny_delta_keeps_relative_precision(eps, exact):
    """§7: the saddle-point contour keeps full relative precision far below 1e-15."""
    prof = cf_profile(ps.Gaussian(1.0))
    lower, upper = prof.delta_bounds(eps)
    ref = float(gaussian_delta(eps, 1.0))
    assert ref == pytest.approx(exact, rel=1e-9)
    assert prof.delta_estimate(eps) == pytest.approx(ref, rel=1e-9)
    assert_bracket(lower, upper, ref, rel_width=1e-9)
    # epsilon at such deltas is far above the floor of the CF accountant
    assert prof.error_budget.min_delta == MIN_DELTA < 1e-200
    lo, up = prof.epsilon_bounds(ref)
    assert lo <= eps <= up + 1e-12 and up - lo < 1e-9


EXP1 = [  # (sigma, k, eps at delta = 1e-4), §5 Exp 1 (exact = mu-GDP with mu = sqrt(k)/sigma)
    (50, 10, 0.164534), (50, 100, 0.601565), (50, 1000, 2.225246), (50, 10**4, 8.876869), (50, 10**5, 42.736929),
    (100, 10, 0.074700), (100, 100, 0.275924), (100, 1000, 1.008383), (100, 10**4, 3.804436),
    (100, 10**5, 16.103080),
]


@pytest.mark.parametrize("sigma, k, eps_ref", EXP1)
def test_k_fold_gaussian_is_mu_gdp(sigma, k, eps_ref):
    prof = cf_profile(ps.Gaussian(sigma).compose(k))
    lo, up = prof.epsilon_bounds(1e-4)
    exact = float(gaussian_epsilon(1e-4, math.sqrt(k) / sigma))
    assert exact == pytest.approx(eps_ref, abs=1e-6)
    assert lo - 1e-12 * exact <= exact <= up + 1e-12 * exact
    assert up - lo <= 1e-8 * max(1.0, exact)


# -- Laplace, randomized response, mixtures, black boxes ---------------------------------------


def test_laplace_closed_form():
    """§3.2: delta(eps) = 1 - exp((eps - 1/lambda)/2) on [0, 1/lambda], 0 above (lambda = 1)."""
    prof = cf_profile(ps.Laplace(1.0))
    eps = np.array([0.0, 0.5, 0.9, 0.99])
    exact = -np.expm1((eps - 1.0) / 2)
    np.testing.assert_allclose(exact[:3], [0.393469340287, 0.221199216929, 0.048770575499], rtol=1e-11)
    lower, upper = prof.delta_bounds(eps)
    assert_bracket(lower, upper, exact, rel_width=1e-8)
    np.testing.assert_allclose(prof.delta_estimate(eps), exact, rtol=1e-10)
    lower, upper = prof.delta_bounds(np.array([1.0, 1.5]))
    assert np.all(lower == 0) and np.all(upper == 0)


@pytest.mark.slow  # seconds per case, measured: the slow tier runs it
@pytest.mark.parametrize("rel_tol", [1e-11, 1e-6])
@pytest.mark.parametrize("scale", [0.5, 1.0, 20.0])
def test_laplace_epsilon_of_delta_closed_form_up_to_the_top(scale, rel_tol, monkeypatch):
    """eps(delta) = 1/b + 2 log(1 - delta) (from the closed form above), also 2e-14 below the
    support's top, where delta ~ (top - eps) / 2 is linear in eps, not in log delta, so a secant on
    log delta alone crawls towards the root from one side. The bracket holds the truth, each end is
    on its safe side, it is narrow, and the search takes few curve evaluations per delta."""
    from privselect.accounting.cf.quadrature import _Direction

    calls = []
    bounds = _Direction.bounds
    monkeypatch.setattr(_Direction, "bounds", lambda self, e: calls.append(1) or bounds(self, e))
    prof = cf_profile(ps.Laplace(scale), rel_tol=rel_tol)
    deltas = np.array([1e-2, 1e-3, 1e-6, 1e-10, 1e-14])
    exact = 1 / scale + 2 * np.log1p(-deltas)
    for delta, truth in zip(deltas, exact):
        calls.clear()
        lower, upper = prof.epsilon_bounds(delta)
        assert len(calls) <= 30
        assert lower <= truth <= upper and upper - lower <= 4e-6 * delta + 1e-12
        assert prof.delta(upper) <= delta < prof.delta_bounds(lower)[0]


@pytest.mark.parametrize("k, ref", [(1, 0.0153898737), (10, 0.0813688170), (100, 0.2944261037)])
def test_randomized_response_pure_composition(k, ref):
    """§5: RR p = 0.52, delta(0.05) is a binomial sum (exact in the CF accountant: atoms)."""
    p = 0.52
    c = math.log(p / (1 - p))
    j = np.arange(k + 1)
    exact = float(np.sum(stats.binom.pmf(j, k, p) * np.maximum(0.0, -np.expm1(0.05 - c * (2 * j - k)))))
    assert exact == pytest.approx(ref, abs=6e-11)
    lower, upper = cf_profile(ps.RandomizedResponse(p).compose(k)).delta_bounds(0.05)
    assert_bracket(lower, upper, exact, rel_width=1e-10)


@settings(max_examples=30, deadline=None)
@given(st.floats(0.51, 0.95), st.integers(1, 3000), st.integers(0, 2**32 - 1))
def test_a_vector_of_eps_gets_each_exact_binomial_sum(p, k, seed):
    """RR(p)^k at 64 eps at once (atoms and points within 1 of an atom included): each bracket holds the
    binomial sum delta(eps) = sum_j pmf(j) (1 - e^{eps - c (2j - k)})_+, summed exactly (math.fsum)."""
    c = math.log(p / (1 - p))
    rng = np.random.default_rng(seed)
    atoms = c * (2 * np.arange(k + 1) - k)
    eps = np.concatenate([rng.uniform(-1.0, c * k + 1.0, 40), rng.choice(atoms[atoms >= 0], 12),
                          rng.choice(atoms[atoms >= 0], 12) - rng.uniform(0, 1, 12)])
    pmf = stats.binom.pmf(np.arange(k + 1), k, p)
    exact = np.array([math.fsum(pmf * np.maximum(0.0, -np.expm1(e - atoms))) for e in eps])
    lower, upper = cf_profile(ps.RandomizedResponse(p).compose(k)).delta_bounds(eps)
    slack = 1e-12 * exact + 1e-300  # scipy's binomial pmf: relative error ~1e-14 per term
    assert np.all(lower <= exact + slack) and np.all(exact <= upper + slack)
    # an eps at an atom: the atom's rounded location (a few ulps of c k) may lie on either side of it
    assert np.all(upper - lower <= 1e-9 * exact + 8 * 2.3e-16 * (c * k + 1))


EXP2 = [(10, 4.1684884083e-6), (20, 8.3136397895e-4), (50, 3.2334793697e-2), (100, 1.5020164212e-1),
        (200, 3.9318086202e-1), (500, 7.8644760526e-1), (1000, 9.5934217045e-1)]


@pytest.mark.parametrize("k, ref", EXP2)
def test_mixed_gaussian_and_randomized_response(k, ref):
    """§5 Exp 2: k/2 Gaussians (sigma = 5) and k/2 RRs (p = 0.52), delta(2)."""
    sigma, p, n_rr = 5.0, 0.52, k // 2
    c = math.log(p / (1 - p))
    j = np.arange(n_rr + 1)
    gauss = gaussian_delta(2.0 - c * (2 * j - n_rr), math.sqrt(n_rr) / sigma)
    exact = float(np.sum(stats.binom.pmf(j, n_rr, p) * gauss))
    assert exact == pytest.approx(ref, rel=1e-9)
    m = ps.compose(ps.Gaussian(sigma).compose(n_rr), ps.RandomizedResponse(p).compose(n_rr))
    lower, upper = cf_profile(m).delta_bounds(2.0)
    assert_bracket(lower, upper, exact, rel_width=1e-9)


def test_approx_dp_mass_at_infinity():
    """§2.6: delta = m + (1 - m) delta_RR, m = 1 - (1 - delta0)^k; eps(delta <= m) = inf."""
    e0, d0, k = 0.5, 1e-3, 20
    prof = cf_profile(ps.ApproxDP(e0, d0).compose(k))
    m = -math.expm1(k * math.log1p(-d0))
    p = math.exp(e0) / (1 + math.exp(e0))
    j = np.arange(k + 1)
    eps = np.array([0.0, 1.0, 3.0, 5.0, 9.9, 10.0, 12.0])
    rr = np.array([np.sum(stats.binom.pmf(j, k, p) * np.maximum(0.0, -np.expm1(e - e0 * (2 * j - k)))) for e in eps])
    exact = m + (1 - m) * rr
    lower, upper = prof.delta_bounds(eps)
    assert_bracket(lower, upper, exact, rel_width=1e-11, abs_slack=1e-17)
    assert prof.error_budget.details  # reported even without a contour integral
    lo, up = prof.epsilon_bounds([0.05, 0.9 * m])
    assert 0 < lo[0] <= up[0] < 10 and np.isinf(lo[1]) and np.isinf(up[1])
    assert prof.delta(up[0]) <= 0.05


@pytest.mark.slow  # seconds per case, measured: the slow tier runs it
def test_subsampled_laplace_single_step_matches_direct_integration():
    lam, q = 1.0, 0.2
    prof = cf_profile(ps.Laplace(lam).poisson_subsample(q))
    pdf = lambda o, c: math.exp(-abs(o - c) / lam) / (2 * lam)  # noqa: E731
    mix = lambda o: (1 - q) * pdf(o, 0) + q * pdf(o, 1)  # noqa: E731
    base = lambda o: pdf(o, 0)  # noqa: E731

    def hockey(a, b, eps):
        f = lambda o: max(a(o) - math.exp(eps) * b(o), 0.0)  # noqa: E731
        return integrate.quad(f, -60, 60, points=[0.0, 1.0], limit=500, epsabs=1e-14, epsrel=1e-12)[0]

    remove, add = prof.curves
    assert (remove.direction, add.direction) == ("remove", "add")
    for eps in (0.0, 0.1, 0.2):
        assert_bracket(*remove.delta_bounds(np.array(eps)), hockey(mix, base, eps), rel_width=5e-6, abs_slack=1e-12)
        assert_bracket(*add.delta_bounds(np.array(eps)), hockey(base, mix, eps), rel_width=5e-6, abs_slack=1e-12)


# -- Poisson-subsampled Gaussian vs dp_accounting (§5 Exp 3, DP-SGD) ----------------------------------

EXP3 = [(100, 0.18979, 0.15523), (500, 0.43198, 0.39226), (1000, 0.62203, 0.57969), (1500, 0.77165, 0.72761)]


def _pld_epsilon(sigma, q, k, delta, pessimistic):
    pld = pytest.importorskip("dp_accounting.pld.privacy_loss_distribution")
    dist = pld.from_gaussian_mechanism(standard_deviation=sigma, sensitivity=1, sampling_prob=q,
                                       value_discretization_interval=1e-4, pessimistic_estimate=pessimistic)
    return dist.self_compose(k).get_epsilon_for_delta(delta)


@pytest.mark.parametrize("k, eps_remove, eps_add", EXP3)
def test_subsampled_gaussian_exp3(k, eps_remove, eps_add):
    prof = cf_profile(ps.Gaussian(2.0).poisson_subsample(0.01).compose(k))
    remove, add = prof.curves
    r_lo, r_up = remove.epsilon_bounds(np.array(1e-5))
    a_lo, a_up = add.epsilon_bounds(np.array(1e-5))
    assert float(r_lo) == pytest.approx(eps_remove, abs=1e-5) and float(r_up) - float(r_lo) < 1e-8
    assert float(a_lo) == pytest.approx(eps_add, abs=1e-5) and float(a_up) - float(a_lo) < 1e-8
    lo, up = prof.epsilon_bounds(1e-5)
    assert up == float(r_up)  # the remove direction dominates
    assert up >= _pld_epsilon(2.0, 0.01, k, 1e-5, pessimistic=False)
    assert up <= 1.005 * _pld_epsilon(2.0, 0.01, k, 1e-5, pessimistic=True)
    names = dict(prof.error_budget.details)
    assert "remove:phi_quadrature_rel" in names and "add:truncation_rel" in names
    assert prof.certified  # the Gaussian-base quadrature error is a proven (aliasing) bound


@pytest.mark.slow  # seconds per case, measured: the slow tier runs it
def test_dpsgd_matches_pld():
    """q = 256/60000, sigma = 1.1, T = 14063 (60 epochs of MNIST), delta = 1e-5."""
    prof = cf_profile(ps.Gaussian(1.1).poisson_subsample(256 / 60000).compose(14063))
    lo, up = prof.epsilon_bounds(1e-5)
    pld_eps = _pld_epsilon(1.1, 256 / 60000, 14063, 1e-5, pessimistic=True)
    assert up == pytest.approx(pld_eps, rel=5e-3)
    assert up <= pld_eps and up - lo < 1e-7
    assert prof.error_budget.eps_error < 1e-6


# -- API ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Unknown(ps.Mechanism):
    pass


def test_supports_names_the_failing_component():
    from privselect.accounting import get_accountant

    acc = get_accountant("cf")
    assert acc.supports(ps.compose(ps.Gaussian(1.0), ps.Laplace(2.0).poisson_subsample(0.1))) is None
    m = ps.compose(ps.Gaussian(1.0), _Unknown())
    assert "_Unknown" in acc.supports(m)
    with pytest.raises(UnsupportedMechanismError, match="_Unknown"):
        acc.profile(m)
    with pytest.raises(UnsupportedMechanismError, match="_Unknown"):
        CFAccountant().profile(m)


@pytest.mark.parametrize("option, value", [("rel_tol", 0.5), ("rel_tol", -1.0), ("max_grid_points", 10),
                                           ("quadrature_safety", 0.5), ("max_atoms", 10), ("max_work", 1.0)])
def test_options_are_validated(option, value):
    with pytest.raises(ValueError, match=option):
        CFAccountant(**{option: value})


def test_privacy_profile_dispatches_to_cf():
    prof = ps.privacy_profile(ps.Gaussian(2.0).compose(4), accountant="cf", rel_tol=1e-9)
    assert prof.accountant == "cf" and dict(prof.metadata)["rel_tol"] == 1e-9
    assert prof.delta(1.0) == pytest.approx(float(gaussian_delta(1.0, 1.0)), rel=1e-8)


# -- properties -----------------------------------------------------------------------------------------

mechanisms = st.one_of(
    st.builds(lambda s, k: ps.Gaussian(s).compose(k), st.floats(0.3, 20.0), st.integers(1, 200)),
    st.builds(lambda b, k: ps.Laplace(b).compose(k), st.floats(0.5, 10.0), st.integers(1, 5)),
    st.builds(lambda p, k: ps.RandomizedResponse(p).compose(k), st.floats(0.3, 0.9), st.integers(1, 50)),
    st.builds(lambda s, k, e: ps.compose(ps.Gaussian(s).compose(k), ps.PureDP(e)),
              st.floats(0.5, 5.0), st.integers(1, 20), st.floats(0.0, 2.0)),
    st.builds(lambda s, q, k: ps.Gaussian(s).poisson_subsample(q).compose(k),
              st.floats(0.8, 3.0), st.floats(0.01, 0.3), st.integers(20, 400)),
)


@pytest.mark.slow  # seconds per case, measured: the slow tier runs it
@settings(max_examples=25, deadline=None, derandomize=True)
@given(mechanism=mechanisms, deltas=st.lists(st.floats(1e-12, 0.5), min_size=1, max_size=3))
def test_brackets_are_consistent_and_invert(mechanism, deltas):
    prof = cf_profile(mechanism, max_grid_points=1 << 14)  # small grids: wider but still valid brackets
    eps = np.linspace(-2.0, 12.0, 29)
    lower, upper = prof.delta_bounds(eps)
    estimate = prof.delta_estimate(eps)
    assert np.all((0 <= lower) & (lower <= estimate) & (estimate <= upper) & (upper <= 1))
    # the true profile is non-increasing, so a lower bound never exceeds an earlier upper bound
    assert np.all(lower[1:] <= upper[:-1] + 1e-15)
    width = upper - lower
    assert np.all(np.diff(estimate) <= width[:-1] + width[1:] + 1e-15)
    # eps(delta) and delta(eps) invert each other within the bracket
    d = np.array(deltas)
    lo, up = prof.epsilon_bounds(d)
    assert np.all(lo <= up)
    finite = np.isfinite(up) & (up > 0)
    if finite.any():
        assert np.all(prof.delta(up[finite]) <= d[finite] * (1 + 1e-9))
    positive = np.isfinite(lo) & (lo > 0)
    if positive.any():
        assert np.all(prof.delta_bounds(lo[positive])[0] >= d[positive] * (1 - 1e-9))


def test_fourier_sum_is_the_direct_sum_within_its_rounding_bound():
    """The blocked Fourier sum (cos and sin written into one complex array) against math.cos/math.sin term by term
    in exact-as-possible Python sums (math.fsum), within the bound it reports."""
    from privselect.accounting.cf.numerics import _fourier_sum

    rng = np.random.default_rng(3)
    loc = np.sort(rng.normal(0.0, 2.0, 1500))
    log_a = -0.5 * loc**2
    step, n = 0.013, 200
    got, bound = _fourier_sum(log_a, loc, step, n)
    a = np.exp(log_a)
    for m in (0, 1, 17, 199):
        u = step * m
        re = math.fsum(float(w) * math.cos(u * x) for w, x in zip(a, loc))
        im = -math.fsum(float(w) * math.sin(u * x) for w, x in zip(a, loc))
        assert abs(got[m] - complex(re, im)) <= bound[m]
