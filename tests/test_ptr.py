"""Generalized PTR, its private bounds, OPS-PTR's test, the tuned estimator, estimator checks, the UCI loader.

Monte Carlo checks are vectorised and sized so that a wrong constant is detected: failure
rates are compared with their nominal value within 5 binomial standard errors, and the
negative controls (the optimistic margins of the reference code) fall outside that band.
"""

from __future__ import annotations

import math
import pickle
import warnings
from dataclasses import replace
from itertools import permutations

import numpy as np
import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

import privselect as ps
from privselect.accounting.gaussian import gaussian_delta
from privselect.apps.ptr import (
    BOTTOM,
    OPSPTR,
    AdaOPSRegressor,
    AdaSSPRegressor,
    GaussianBound,
    GeneralizedPTR,
    LaplaceBound,
    LiuTalwarCertificate,
    NonPrivateRidge,
    OPSPTRRegressor,
    OPSRegressor,
    OutputPerturbationRegressor,
    PrivateRegressorSelection,
    TunedOPSPTRRegressor,
    analytic_gaussian_sigma,
    default_tuning_k,
    liu_talwar_certificate,
    liu_talwar_run_budget,
    profile_run_budget,
)
from privselect.apps.ptr.data import UCI_DATASETS, UCI_DIR_ENV, load_diabetes_raw, load_uci, read_numeric_table
from privselect.apps.ptr.ops import (
    bounds_from_statistics,
    clip_records,
    ops_epsilon,
    ops_gamma,
    ops_passes,
    ridge_solution,
    sample_ops,
)
from privselect.apps.ptr.regression import RefusalWarning
from tests.support import UCI_DIR

UCI = UCI_DIR  # vendored in the repository


def _binomial_band(p: float, n: int, k: float = 5.0) -> tuple[float, float]:
    se = math.sqrt(p * (1 - p) / n)
    return p - k * se, p + k * se


def _regression_data(n=400, d=3, seed=0, noise=0.1):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) / math.sqrt(d)
    y = X @ np.linspace(0.5, -0.5, d) + noise * rng.normal(size=n)
    return clip_records(X, y, 1.0, 1.0)


# ----------------------------------------------------------------------------------------
# Analytic Gaussian and the private one-sided bounds
# ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("eps,delta", [(0.1, 1e-6), (1.0, 1e-8), (5.0, 1e-5), (20.0, 1e-10)])
def test_analytic_gaussian_sigma_is_the_smallest_valid_multiplier(eps, delta):
    sigma = analytic_gaussian_sigma(eps, delta)
    assert gaussian_delta(eps, 1 / sigma) <= delta
    assert ps.gdp_profile(1 / sigma).delta(eps) <= delta  # the certified upper bound, rounding included
    assert gaussian_delta(eps, 1 / (sigma * (1 - 1e-6))) > delta
    if eps < 1:  # never worse than the classical calibration
        assert sigma <= math.sqrt(2 * math.log(1.25 / delta)) / eps


def test_laplace_lower_bound_fails_with_probability_delta_prime():
    bound = LaplaceBound(sensitivity=2.0, epsilon=0.5, failure_probability=0.01, side="lower")
    n = 1_000_000
    draws = bound.release(3.0, np.random.default_rng(0), size=n)
    lo, hi = _binomial_band(0.01, n)
    assert lo <= (draws > 3.0).mean() <= hi
    assert bound.margin == pytest.approx(4.0 * math.log(50))
    assert bound.privacy == ps.Laplace(2.0, sensitivity=2.0)
    up = replace(bound, side="upper").release(3.0, np.random.default_rng(1), size=n)
    assert lo <= (up < 3.0).mean() <= hi


def test_gaussian_bound_margin_is_the_normal_quantile_and_the_reference_margin_is_not():
    bound = GaussianBound(sensitivity=1.0, epsilon=1.0, delta=1e-6, failure_probability=0.01, side="lower")
    n = 1_000_000
    rng = np.random.default_rng(2)
    draws = bound.release(0.0, rng, size=n)
    lo, hi = _binomial_band(0.01, n)
    assert lo <= (draws > 0.0).mean() <= hi
    # negative control: the reference code's shift sigma sqrt(log(1/p)) fails far more often
    wrong = rng.normal(0.0, bound.sigma, size=n) - bound.sigma * math.sqrt(math.log(1 / 0.01))
    assert (wrong > 0).mean() > hi + 0.004
    assert bound.privacy.mu == pytest.approx(1 / analytic_gaussian_sigma(1.0, 1e-6))


def test_private_lambda_min_lower_bound_failure_rate_on_data():
    """OPS-PTR step 1 on a real data set: P[lambda~ > lambda_min(X^T X)] = p_1 (before clamping)."""
    X, y = _regression_data(n=300, d=3)
    mech = OPSPTR(alpha=1.0, gamma=1.0, epsilon_eigen=0.7, epsilon_norm=1.0, epsilon_ops=1.0, delta_ops=1e-6,
                  failure_eigen=0.02, failure_norm=0.01)
    stats = mech.statistics(X, y)
    assert stats.lambda_min == pytest.approx(np.linalg.eigvalsh(X.T @ X)[0])
    n = 1_000_000
    raw = mech.eigen_bound.release(stats.lambda_min, np.random.default_rng(3), size=n)
    lo, hi = _binomial_band(0.02, n)
    assert lo <= (raw > stats.lambda_min).mean() <= hi
    assert mech.eigen_bound.sensitivity == 1.0  # B_x^2 (Weyl, tests/test_ptr_ops.py)


@pytest.mark.parametrize("kwargs", [dict(sensitivity=0.0, epsilon=1.0, failure_probability=0.1),
                                    dict(sensitivity=1.0, epsilon=-1.0, failure_probability=0.1),
                                    dict(sensitivity=1.0, epsilon=1.0, failure_probability=0.6),
                                    dict(sensitivity=1.0, epsilon=1.0, failure_probability=0.1, side="left")])
def test_bounds_validate(kwargs):
    with pytest.raises(ValueError):
        LaplaceBound(**kwargs)


# ----------------------------------------------------------------------------------------
# Generalized PTR
# ----------------------------------------------------------------------------------------


def test_generalized_ptr_privacy_and_refusal():
    ptr = GeneralizedPTR(epsilon=0.5, delta=1e-7, test_epsilon=0.2, test_delta=1e-8, false_pass=2e-8)
    assert ptr.privacy == ps.ApproxDP(0.7, 1e-7 + 1e-8 + 2e-8)
    rng = np.random.default_rng(0)
    refused = ptr.run("data", lambda d, r: (False, "info"), lambda d, i, r: 1 / 0, rng)
    assert refused.output is BOTTOM and refused.refused and not refused.passed and refused.test_release == "info"
    ran = ptr.run("data", lambda d, r: (True, 3), lambda d, i, r: (d, i), rng)
    assert ran.output == ("data", 3) and ran.passed
    assert pickle.loads(pickle.dumps(BOTTOM)) is BOTTOM and not BOTTOM and repr(BOTTOM) == "BOTTOM"
    with pytest.raises(ValueError, match="false_pass"):
        GeneralizedPTR(0.5, 1e-7, 0.2, 0.0, 1.5)
    # the tuner certifies it like any (eps, delta) mechanism
    cert = ps.certify(ptr.privacy, ps.Geometric(mean=5), 1e-5)
    assert cert.epsilon < 3 * 0.7 + 0.01


def test_ops_ptr_privacy_accounting():
    mech = OPSPTR(alpha=10.0, gamma=1.0, epsilon_eigen=0.1, epsilon_norm=0.2, epsilon_ops=0.7, delta_ops=5e-7,
                  failure_eigen=1.25e-7, failure_norm=2.5e-7)
    assert mech.privacy.epsilon == pytest.approx(1.0)
    assert mech.privacy.delta == pytest.approx(5e-7 + 2 * 1.25e-7 + 2.5e-7)  # KRW Thm 6.1
    reg = OPSPTRRegressor(x_bound=1.0, y_bound=1.0, epsilon=1.0, delta=1e-6, eigen_fraction=0.1, norm_fraction=0.2)
    assert reg.privacy.epsilon == pytest.approx(1.0) and reg.privacy.delta == pytest.approx(1e-6)
    no_eigen = OPSPTRRegressor(x_bound=1.0, y_bound=1.0, epsilon=1.0, delta=1e-6, eigen_fraction=0.0).mechanism(d=3)
    assert no_eigen.eigen_bound is None and no_eigen.privacy.delta == pytest.approx(1e-6)


@pytest.mark.slow  # seconds per case, measured: the slow tier runs it
def test_ops_ptr_false_pass_rate_is_at_most_delta_prime():
    """KRW Thm 6.1's condition: on X with eps_phi(X) > eps the test passes with probability <= p_1 + p_2.

    gamma is set 1% above the largest value that passes at the exact statistics, so the data-
    dependent loss exceeds eps_ops; the test may pass only when a private bound fails.
    """
    X, y = _regression_data(n=300, d=3, seed=1)
    p1, p2, eps_ops, delta_ops = 0.02, 0.02, 1.0, 1e-6
    base = OPSPTR(alpha=2.0, gamma=1.0, epsilon_eigen=1.0, epsilon_norm=1.0, epsilon_ops=eps_ops,
                  delta_ops=delta_ops, failure_eigen=p1, failure_norm=p2)
    stats = base.statistics(X, y)
    assert stats.lambda_min > 5  # the eigenvalue bound matters for this data set
    exact = bounds_from_statistics(base.alpha, stats.lambda_min, stats.log_norm, 1.0)
    g_star = ops_gamma(exact.mu_bound, exact.residual_bound, eps_ops, delta_ops)
    mech = replace(base, gamma=1.01 * g_star)
    assert not ops_passes(eps_ops, exact.mu_bound, math.sqrt(mech.gamma) * exact.residual_bound, delta_ops)
    n = 200_000
    release = mech.test(stats, np.random.default_rng(4), size=n)
    rate = release.passed.mean()
    assert rate <= _binomial_band(p1 + p2, n)[1]
    # the test is exercised at its boundary: it does pass when the bounds fail by enough (a pass
    # needs u~ below u(X) by more than the slack lambda~'s margin leaves, so the rate is below p_2)
    assert rate > 0.001
    # just inside the boundary the test passes whenever the bounds hold (up to the margins)
    relaxed = replace(base, gamma=0.2 * g_star).test(stats, np.random.default_rng(5), size=20_000)
    assert relaxed.passed.mean() > 0.9


def test_ops_ptr_regressor_refuses_and_predicts_zero():
    X, y = _regression_data()
    with pytest.warns(RefusalWarning, match="refitting"):
        reg = OPSPTRRegressor(x_bound=1.0, y_bound=1.0, epsilon=1.0, alpha=100.0, gamma=1e6, random_state=0).fit(X, y)
    assert reg.refused_ and not reg.test_release_.passed and reg.gamma_ == 0.0
    assert np.all(reg.coef_ == 0) and np.all(reg.predict(X) == 0)
    # the kept statistic is the tested value at the released bounds, and it failed the test
    release = reg.test_release_
    eps_ops = reg.mechanism(d=3).epsilon_ops
    assert reg.test_statistic_ == pytest.approx(float(ops_epsilon(release.mu_bound, release.rho_bound, 5e-7)))
    assert reg.test_statistic_ > eps_ops
    ok = OPSPTRRegressor(x_bound=1.0, y_bound=1.0, epsilon=5.0, alpha=10.0, gamma=1e-3, random_state=0).fit(X, y)
    assert not ok.refused_ and np.any(ok.coef_ != 0) and ok.test_statistic_ <= ok.mechanism(d=3).epsilon_ops
    again = OPSPTRRegressor(x_bound=1.0, y_bound=1.0, epsilon=5.0, alpha=10.0, gamma=1e-3, random_state=0).fit(X, y)
    assert np.array_equal(ok.coef_, again.coef_)


def test_ops_ptr_auto_gamma_is_the_largest_gamma_the_released_bounds_allow():
    X, y = _regression_data()
    reg = OPSPTRRegressor(x_bound=1.0, y_bound=1.0, epsilon=1.0, random_state=3).fit(X, y)
    release = reg.test_release_
    mech = reg.mechanism(d=3)
    assert not reg.refused_ and reg.gamma_ == release.gamma > 0
    residual = release.rho_bound / math.sqrt(release.gamma)
    assert ops_passes(mech.epsilon_ops, release.mu_bound, math.sqrt(reg.gamma_) * residual, mech.delta_ops)
    assert not ops_passes(mech.epsilon_ops, release.mu_bound, math.sqrt(1.001 * reg.gamma_) * residual, mech.delta_ops)
    assert reg.test_statistic_ <= mech.epsilon_ops and reg.test_statistic_ > 0.99 * mech.epsilon_ops
    # the default ridge is above the mu floor: the rho-free part of the loss is at most half of eps_ops
    assert float(ops_epsilon(1.0 / reg.alpha_, 0.0, mech.delta_ops)) <= mech.epsilon_ops / 2 + 1e-9


def test_ops_ptr_auto_gamma_false_pass_rate_is_at_most_delta_prime():
    """With gamma solved from the released bounds, the released gamma exceeds the largest private gamma at
    the exact statistics only when a bound failed (probability <= p_1 + p_2)."""
    X, y = _regression_data(n=300, d=3, seed=1)
    p1, p2, eps_ops, delta_ops = 0.05, 0.05, 1.0, 1e-6
    mech = OPSPTR(alpha=2.0, gamma=None, epsilon_eigen=1.0, epsilon_norm=1.0, epsilon_ops=eps_ops,
                  delta_ops=delta_ops, failure_eigen=p1, failure_norm=p2)
    stats = mech.statistics(X, y)
    exact = bounds_from_statistics(mech.alpha, stats.lambda_min, stats.log_norm, 1.0)
    g_star = ops_gamma(exact.mu_bound, exact.residual_bound, eps_ops, delta_ops)
    n = 3000
    release = mech.test(stats, np.random.default_rng(7), size=n)
    over = float(np.mean(release.gamma > g_star * (1 + 1e-9)))
    assert over <= _binomial_band(p1 + p2, n)[1]
    assert over > 0  # exercised: failed bounds do produce an optimistic gamma
    assert release.passed.all()


def test_explicit_proposal_that_can_never_pass_raises_at_construction():
    # KRW-style default alpha = 100 at eps = 0.1: the mu log(2/delta) floor alone exceeds eps_ops
    with pytest.raises(ValueError, match="can never pass"):
        OPSPTRRegressor(x_bound=1.0, y_bound=1.0, epsilon=0.1, alpha=100.0)
    with pytest.raises(ValueError, match="can never pass"):
        OPSPTRRegressor(x_bound=1.0, y_bound=1.0, epsilon=0.1, alpha=100.0, gamma=0.01)
    OPSPTRRegressor(x_bound=1.0, y_bound=1.0, epsilon=0.1, alpha=100.0, eigen_fraction=0.1)  # a large lambda~ could rescue it
    OPSPTRRegressor(x_bound=1.0, y_bound=1.0, epsilon=1.0, alpha=100.0)  # feasible


def test_ops_regressor_does_not_reveal_n_above_n_max():
    X, y = _regression_data(n=200)
    # n > n_max: no error; a uniformly random n_max-subset is used (same law as fitting that subset)
    big = OPSRegressor(x_bound=1.0, y_bound=1.0, epsilon=1.0, n_max=50, random_state=0).fit(X, y)
    assert big.coef_.shape == (3,) and np.all(np.isfinite(big.coef_))
    rng = np.random.default_rng(0)
    keep = np.sort(rng.choice(200, size=50, replace=False))
    theta_hat, _ = ridge_solution(X[keep], y[keep], big.alpha_)
    posterior = sample_ops(theta_hat, np.linalg.cholesky(X[keep].T @ X[keep] + big.alpha_ * np.eye(3)), big.gamma_,
                           rng)
    assert np.allclose(big.coef_, posterior)
    small = OPSRegressor(x_bound=1.0, y_bound=1.0, epsilon=1.0, n_max=50, random_state=0).fit(X[:50], y[:50])
    assert small.alpha_ == big.alpha_ and small.gamma_ == big.gamma_  # calibration depends on n_max only


@pytest.mark.parametrize("params,match", [(dict(epsilon=0.0), "epsilon"), (dict(delta=1.5), "delta"),
                                          (dict(alpha=-1.0), "alpha"), (dict(norm_fraction=0.0), "norm_fraction"),
                                          (dict(eigen_fraction=0.6, norm_fraction=0.5), "fraction"),
                                          (dict(mode="fast"), "mode"), (dict(x_bound=0.0), "x_bound")])
def test_ops_ptr_regressor_validates(params, match):
    X, y = _regression_data(n=20)
    with pytest.raises(ValueError, match=match):
        OPSPTRRegressor(**{"x_bound": 1.0, "y_bound": 1.0, **params}).fit(X, y)


# ----------------------------------------------------------------------------------------
# Selection: Liu-Talwar and Thm 5.2 budgets
# ----------------------------------------------------------------------------------------


def _selection_pmf(p: np.ndarray, order, k) -> np.ndarray:
    """Exact output law of "best of K i.i.d. draws", outcomes ranked by ``order`` (worst first)."""
    ranked = p[list(order)]
    cdf = np.concatenate([[0.0], np.cumsum(ranked)])
    cdf[-1] = min(cdf[-1], 1.0)
    probs = np.diff(k.pgf(cdf))
    out = np.empty_like(p)
    out[list(order)] = probs
    return out


def _hockey(p, q, eps):
    return float(np.maximum(p - math.exp(eps) * q, 0).sum())


@pytest.mark.parametrize("eps_q,delta_q,mean", [(0.1, 1e-4, 5), (0.5, 1e-3, 20), (1.0, 1e-5, 10), (0.3, 1e-7, 50)])
def test_thm52_dominates_exact_selection_profiles_of_worst_case_pairs(eps_q, delta_q, mean):
    """KRW Thm 5.2 (ps.certify) against the exact law of "best of K" over every score order of the
    worst-case (eps, delta) pair (Kairouz et al.): a bound that can fail."""
    e = math.exp(eps_q)
    P = np.array([delta_q, (1 - delta_q) * e / (1 + e), (1 - delta_q) / (1 + e), 0.0])
    Q = P[::-1].copy()
    k = ps.Geometric(mean=mean)
    delta_tot = 3 * mean * delta_q
    cert = ps.certify(ps.ApproxDP(eps_q, delta_q), k, delta_tot, bound="profile")
    worst = 0.0
    exact_at = lambda eps: max(max(_hockey(a, b, eps), _hockey(b, a, eps)) for a, b in  # noqa: E731
                               ((_selection_pmf(P, o, k), _selection_pmf(Q, o, k)) for o in permutations(range(4))))
    worst = exact_at(cert.epsilon)
    assert worst <= delta_tot
    assert exact_at(0.5 * cert.epsilon) > 0  # not vacuous: the exact profile is positive below the bound


@pytest.mark.parametrize("mean", [5, 10, 30])
@pytest.mark.parametrize("eps_q,delta_q", [(0.05, 1e-17), (0.3, 1e-12), (2.0, 1e-9)])
def test_liu_talwar_statement_is_implied_by_proved_bounds(eps_q, delta_q, mean):
    """The Liu-Talwar (eps, delta) we use is weaker than KRW Cor 5.4 (as its proof gives it) and than
    what ps.certify (KRW Thm 5.2, numerically) certifies for the same base, at the same delta."""
    k = ps.Geometric(mean=mean)
    delta2 = 1e-7
    lt = liu_talwar_certificate(eps_q, delta_q, k, delta2)
    cor54_eps, cor54_delta = 3 * eps_q + 2 * mean * delta_q, mean * delta_q
    assert lt.epsilon >= cor54_eps and lt.delta >= cor54_delta
    # numerically (characteristic-function accountant: relative precision at tiny deltas)
    assert ps.certify(ps.ApproxDP(eps_q, delta_q), k, lt.delta, bound="profile", accountant="cf").epsilon <= lt.epsilon
    assert liu_talwar_certificate(eps_q, 0.0, k, delta2).epsilon == pytest.approx(3 * eps_q)  # LT Thm 1.3
    with pytest.raises(ValueError, match="outside the regime"):
        liu_talwar_certificate(eps_q, 0.5, k, delta2)


@pytest.mark.slow  # seconds per case, measured: the slow tier runs it
def test_run_budgets_meet_their_targets_and_lt_needs_a_tiny_delta():
    k = ps.Geometric(mean=10)
    eps_q, delta_q, delta2 = liu_talwar_run_budget(1.0, 1e-6, k)
    cert = liu_talwar_certificate(eps_q, delta_q, k, delta2)
    assert cert.epsilon <= 1.0 and cert.delta <= 1e-6
    assert cert.epsilon > 0.999 and cert.delta > 0.99e-6
    prof = profile_run_budget(1.0, 1e-6, 10.0, 0.1)
    assert prof.certificate_epsilon <= 1.0 and prof.delta == pytest.approx(5e-8)
    run = ps.compose(ps.ApproxDP(prof.ptr_epsilon, prof.delta), ps.Laplace(1 / prof.score_epsilon))
    assert ps.certify(run, k, 1e-6, bound="profile").epsilon <= 1.0
    assert prof.ptr_epsilon + prof.score_epsilon == pytest.approx(prof.epsilon)
    assert delta_q < 1e-9 * prof.delta  # the gap KRW Sec. 6.1 exploits (design notes Sec. 5.2 table)
    with pytest.raises(ValueError, match="Geometric"):
        liu_talwar_certificate(0.1, 1e-8, ps.Logarithmic(mean=5), 1e-7)


# ----------------------------------------------------------------------------------------
# The tuned estimator
# ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("accounting", [pytest.param("profile", marks=pytest.mark.slow), "liu-talwar"])  # profile: ~30 s
def test_tuned_ops_ptr_is_certified_and_deterministic(accounting):
    X, y = _regression_data(n=3000, d=3, seed=2)
    reg = TunedOPSPTRRegressor(x_bound=1.0, y_bound=1.0, epsilon=3.0, delta=1e-6, k=ps.Geometric(mean=5), accounting=accounting, random_state=1)
    reg.fit(X, y)
    assert reg.certificate_.epsilon <= 3.0 and reg.certificate_.delta <= 1e-6
    k = ps.Geometric(mean=5)
    thm52 = ps.certify(reg.run_privacy_, k, 1e-6)
    if accounting == "liu-talwar":  # certificate_ is the certificate of the mode in use
        assert isinstance(reg.certificate_, LiuTalwarCertificate)
        assert reg.certificate_.base_epsilon == reg.run_budget_.epsilon
        assert reg.certificate_.epsilon > 2.999 and thm52.epsilon < 3.0  # Thm 5.2 certifies the same run more cheaply
    else:
        assert "5.2" in reg.certificate_.theorem and reg.certificate_.epsilon == thm52.epsilon
    assert not reg.refused_ and reg.best_params_["alpha"] in [c["alpha"] for c in reg.candidates_]
    again = TunedOPSPTRRegressor(x_bound=1.0, y_bound=1.0, epsilon=3.0, delta=1e-6, k=ps.Geometric(mean=5), accounting=accounting, random_state=1).fit(X, y)
    assert np.array_equal(reg.coef_, again.coef_)
    assert reg.get_params()["random_state"] == 1
    trivial = float(np.mean(y ** 2))
    assert float(np.mean((reg.predict(X) - y) ** 2)) < trivial


@pytest.mark.slow  # seconds per case, measured: the slow tier runs it
def test_tuned_ops_ptr_grid_keeps_only_feasible_ridges():
    X, y = _regression_data(n=200)
    reg = TunedOPSPTRRegressor(x_bound=1.0, y_bound=1.0, epsilon=1.0, k=ps.Geometric(mean=3), alphas=(1.0, 1e4), random_state=0)
    assert reg.candidates(3) == [{"alpha": 1e4}]  # alpha = 1 is below the mu floor at eps_Q ~ 0.3
    reg.fit(X, y)
    assert reg.best_params_["alpha"] == 1e4 and not reg.refused_
    with pytest.raises(ValueError, match="no ridge"):
        TunedOPSPTRRegressor(x_bound=1.0, y_bound=1.0, epsilon=0.05, alphas=(0.001,)).fit(X, y)
    with pytest.raises(ValueError, match="accounting"):
        TunedOPSPTRRegressor(x_bound=1.0, y_bound=1.0, accounting="rdp").fit(X, y)
    with pytest.raises(ValueError, match="alphas"):
        TunedOPSPTRRegressor(x_bound=1.0, y_bound=1.0, alphas=(-1.0,)).fit(X, y)
    with pytest.raises(TypeError, match="k must be a distribution"):
        TunedOPSPTRRegressor(x_bound=1.0, y_bound=1.0, k=10).fit(X, y)
    with pytest.raises(ValueError, match="Geometric"):  # Liu-Talwar's bound is for a geometric K only
        TunedOPSPTRRegressor(x_bound=1.0, y_bound=1.0, k=ps.Logarithmic(mean=3), accounting="liu-talwar").fit(X, y)


def test_tuned_ops_ptr_default_k_law():
    """Default K (Thm 5.2): TNB(eta=-0.8, E[K]=2), P(K=1) = 0.81; Thm 5.2 then costs ~ (eta + 2) eps_Q = 1.2 eps_Q."""
    k = default_tuning_k()
    assert k.eta == -0.8 and k.mean == pytest.approx(2.0)
    assert float(np.exp(k.log_pmf(np.array([1])))[0]) == pytest.approx(0.81, abs=0.01)
    budget = TunedOPSPTRRegressor(x_bound=1.0, y_bound=1.0, epsilon=1.0).run_budget()
    # KRW Thm 5.2 with a flat (eps_Q, delta_Q) point: eps = eps_Q + (eta + 1) log(e^eps_Q + ...) ~ 1.2 eps_Q
    assert budget.epsilon == pytest.approx(1.0 / 1.2, rel=2e-3) and budget.certificate_epsilon <= 1.0
    assert budget.delta == pytest.approx(1e-6 / 4)  # delta_Q = delta / (2 E[K])
    assert TunedOPSPTRRegressor(x_bound=1.0, y_bound=1.0, accounting="liu-talwar")._k() == ps.Geometric(mean=10)


# ----------------------------------------------------------------------------------------
# scikit-learn estimator checks
# ----------------------------------------------------------------------------------------

ESTIMATORS = [OPSRegressor(x_bound=1.0, y_bound=1.0), OPSPTRRegressor(x_bound=1.0, y_bound=1.0), OutputPerturbationRegressor(x_bound=1.0, y_bound=1.0),
              OutputPerturbationRegressor(x_bound=1.0, y_bound=1.0, delta=None), AdaSSPRegressor(x_bound=1.0, y_bound=1.0), AdaOPSRegressor(x_bound=1.0, y_bound=1.0), NonPrivateRidge(x_bound=1.0, y_bound=1.0)]


def _expected_failures(estimator):
    if isinstance(estimator, (OPSRegressor, OPSPTRRegressor)):
        return {"check_regressors_train": "the check sets alpha=0.01, for which no gamma > 0 is private; "
                                          "both refuse such (data-independent) parameters with a ValueError"}
    return {}


@parametrize_with_checks(ESTIMATORS, expected_failed_checks=_expected_failures)
def test_sklearn_compatible(estimator, check):
    check(estimator)


#: The tuned estimators' first fit in a process calibrates the per-run budget (a bisection over KRW Thm 5.2
#: certificates, ~25 s): the slow tier runs their checks.
TUNED_ESTIMATORS = [TunedOPSPTRRegressor(x_bound=1.0, y_bound=1.0, k=ps.Geometric(mean=3)),
                    PrivateRegressorSelection(x_bound=1.0, y_bound=1.0, k=ps.Geometric(mean=2))]


@pytest.mark.slow  # the first fit per process calibrates its run budget (~25 s): the slow tier runs it
@parametrize_with_checks(TUNED_ESTIMATORS, expected_failed_checks=_expected_failures)
def test_tuned_estimators_are_sklearn_compatible(estimator, check):
    check(estimator)


# ----------------------------------------------------------------------------------------
# UCI loader
# ----------------------------------------------------------------------------------------


def test_read_numeric_table_handles_line_endings_and_trailing_separators(tmp_path):
    f = tmp_path / "t.txt"
    f.write_bytes(b"1.0\t2\t3\t\r4\t5\t6\t\r\n\r\n7\t8\t9\t")
    table, dropped = read_numeric_table(f, "\t")
    assert table.shape == (3, 3) and dropped == 0 and table[2, 2] == 9
    g = tmp_path / "w.txt"
    g.write_text(" 1  2 3\n4 5\t6\n")
    assert read_numeric_table(g)[0].tolist() == [[1, 2, 3], [4, 5, 6]]


def test_read_numeric_table_reports_malformed_rows(tmp_path):
    f = tmp_path / "bad.csv"
    f.write_text("1,2,3\n4,?,6\n7,8\n")
    with pytest.raises(ValueError, match=r"line 2: field '\?'"):
        read_numeric_table(f, ",")
    g = tmp_path / "ragged.csv"
    g.write_text("1,2,3\n7,8\n")
    with pytest.raises(ValueError, match="line 2: expected 3 columns, got 2"):
        read_numeric_table(g, ",")
    table, dropped = read_numeric_table(f, ",", strict=False)
    assert table.tolist() == [[1, 2, 3]] and dropped == 2
    with pytest.raises(FileNotFoundError):
        read_numeric_table(tmp_path / "missing.csv")
    with pytest.raises(ValueError, match="name must be one of"):
        load_uci("mnist", tmp_path)


def test_load_uci_files():
    shapes = {"airfoil": (1503, 5), "autompg": (392, 7), "bike": (731, 11), "concrete": (1030, 8),
              "elevators": (16599, 18), "energy": (768, 8), "housing": (506, 13), "parkinsons": (5875, 20),
              "wine": (1599, 11), "yacht": (308, 6)}
    for name, shape in shapes.items():
        data = load_uci(name, UCI)
        assert data.X.shape == shape and data.y.shape == (shape[0],) and np.isfinite(data.X).all()
    bike = load_uci("bike", UCI)
    assert set(np.unique(bike.X[:, 0])) == {1.0, 2.0, 3.0, 4.0}  # season, not a row index
    assert bike.y.max() < 9.1  # log(cnt)
    wine = load_uci("wine", UCI)
    assert 8 <= wine.y.min() and wine.y.max() <= 15  # alcohol
    with pytest.raises(ValueError, match="line 208"):
        load_uci("machine", UCI)
    machine = load_uci("machine", UCI, strict=False)
    assert machine.dropped_rows == 2 and machine.X.shape == (207, 7)
    assert set(UCI_DATASETS) >= set(shapes)


def test_load_uci_root_from_environment_or_clear_error(monkeypatch):
    monkeypatch.delenv(UCI_DIR_ENV, raising=False)
    with pytest.raises(ValueError, match="root: pass the folder.*PRIVSELECT_UCI_DIR"):
        load_uci("airfoil")
    monkeypatch.setenv(UCI_DIR_ENV, str(UCI))
    assert load_uci("airfoil").X.shape == (1503, 5)


def test_diabetes_raw_is_unscaled():
    X, y = load_diabetes_raw()
    assert X.shape == (442, 10) and X[:, 0].max() > 50  # ages, not z-scores


def test_estimators_pickle_to_their_one_class():
    import privselect.apps.ptr as apps_ptr

    assert OPSPTRRegressor is apps_ptr.regression.OPSPTRRegressor
    assert OPSPTRRegressor.__module__ == "privselect.apps.ptr.regression"
    restored = pickle.loads(pickle.dumps(OPSPTRRegressor(x_bound=1.0, y_bound=1.0, epsilon=2.0)))
    assert type(restored) is OPSPTRRegressor and restored.get_params() == OPSPTRRegressor(x_bound=1.0, y_bound=1.0, epsilon=2.0).get_params()


@pytest.mark.parametrize("make", [lambda: TunedOPSPTRRegressor(x_bound=1.0, y_bound=1.0, epsilon=1.0, k=ps.Geometric(mean=3), alphas=(50.0, 1e4)),
                                  lambda: PrivateRegressorSelection(x_bound=1.0, y_bound=1.0, epsilon=1.0, k=ps.Geometric(mean=3))])
def test_tuned_regressors_release_only_the_winner(make, capsys):
    """What leaves the tuned estimators: no randomness state (a released generator or seed lets anyone
    replay the noise), no warning or output from the runs, nothing of the losing runs."""
    X, y = _regression_data(n=500)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        reg = make().fit(X, y)
    assert caught == [] and capsys.readouterr() == ("", "")
    blob = pickle.dumps(reg)
    assert not any(word in blob for word in (b"PCG64", b"Generator", b"SeedSequence", b"BitGenerator"))
    fitted = {k for k in vars(reg) if k.endswith("_") and not k.startswith("_")}
    assert fitted <= {"coef_", "intercept_", "refused_", "best_params_", "run_budget_", "run_privacy_",
                      "certificate_", "candidates_", "n_features_in_"}
