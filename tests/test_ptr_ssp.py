"""Sufficient-statistics perturbation: AdaSSP (two or three releases), Wang's printed AdaSSP, SSP with a private ridge choice."""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pytest
from scipy import stats
from threadpoolctl import threadpool_limits

import privselect as ps
from privselect.accounting.gaussian import gaussian_delta
from privselect.apps.ptr import (
    AdaSSPRegressor,
    AdaSSPWangRegressor,
    PrivateRegressorSelection,
    SSPRidgeSelectionRegressor,
    TrivialRegressor,
    analytic_gaussian_sigma,
    pure_dp_gdp_mu,
    releases_lambda_min,
)
from privselect.apps.ptr.model_selection import CANDIDATE_BUILDERS, DEFAULT_CANDIDATES
from privselect.apps.ptr.ssp import DEFAULT_RIDGE_MULTIPLIERS, exponential_mechanism_probabilities, ssp_ridge
from tests.support import UCI_DIR


def _data(n=400, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) / math.sqrt(d)
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1, keepdims=True))
    y = np.clip(X @ np.array([0.8, -0.5, 0.3][:d]) + 0.05 * rng.normal(size=n), -1, 1)
    return X, y


# ----------------------------------------------------------------------------------------
# AdaSSP: exact calibration of both forms, the public rule
# ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("eps", [0.1, 1.0, 10.0])
@pytest.mark.parametrize("three", [True, False])
def test_adassp_joint_calibration_is_exactly_eps_delta(eps, three):
    est = AdaSSPRegressor(epsilon=eps, delta=1e-6, release_lambda_min=three, x_bound=1.0, y_bound=2.0)
    s1, s2, s3 = est.noise_scales(d=3)
    assert (s1 > 0) == three
    mu = math.sqrt(((1 / s1) ** 2 if three else 0.0) + (1 / s2) ** 2 + (2 / s3) ** 2)  # sensitivities 1, 1, 2
    assert gaussian_delta(eps, mu) == pytest.approx(1e-6, rel=1e-6)
    profile = ps.privacy_profile(est.privacy_for(3), accountant="prv")  # an independent accountant agrees
    assert float(profile.epsilon(1e-6)) == pytest.approx(eps, rel=2e-3, abs=2e-3)
    assert sum(count for _, count in est.privacy_for(3).parts) == (3 if three else 2)


def test_release_lambda_min_rule_uses_public_quantities_only():
    d, eps, delta = 10, 1.0, 1e-6
    assert not releases_lambda_min(d, eps, delta, None)
    ridge = ssp_ridge(d, math.sqrt(2.0) * analytic_gaussian_sigma(eps, delta))
    threshold = ridge * d / 0.01  # LAMBDA_MIN_SHARE n_max B_x^2 / d >= two-release ridge
    assert releases_lambda_min(d, eps, delta, math.ceil(threshold))
    assert not releases_lambda_min(d, eps, delta, math.floor(threshold))
    X, y = _data()
    auto = AdaSSPRegressor(epsilon=eps, n_max=10 ** 9, random_state=0, x_bound=1.0, y_bound=1.0).fit(X, y)
    assert auto.lambda_min_released_ and auto.noise_scales_[0] > 0
    assert not AdaSSPRegressor(x_bound=1.0, y_bound=1.0, epsilon=eps, random_state=0).fit(X, y).lambda_min_released_
    with pytest.raises(ValueError, match="release_lambda_min must be True, False or 'auto'"):
        AdaSSPRegressor(x_bound=1.0, y_bound=1.0, release_lambda_min="yes").fit(X, y)


def test_adassp_release_noise_matches_its_scales():
    X, y = _data(n=100)
    est = AdaSSPRegressor(x_bound=1.0, y_bound=1.0, epsilon=1.0, delta=1e-6, release_lambda_min=False)
    _, s2, s3 = est.noise_scales(d=3)
    rng = np.random.default_rng(0)
    n = 4000
    releases = [est.release_statistics(X, y, rng) for _ in range(n)]
    assert all(r[0] == 0.0 for r in releases)
    xtx = np.array([r[1] for r in releases]) - X.T @ X
    xty = np.array([r[2] for r in releases]) - X.T @ y
    tol = 5 / math.sqrt(2 * n)
    assert np.allclose(xtx, np.swapaxes(xtx, 1, 2))
    assert xty.std(0) == pytest.approx(np.full(3, s3), rel=tol)
    assert np.diagonal(xtx, axis1=1, axis2=2).std(0) == pytest.approx(np.full(3, s2), rel=tol)
    assert xtx[:, 0, 1].std() == pytest.approx(s2 / math.sqrt(2), rel=tol)


# ----------------------------------------------------------------------------------------
# Wang's printed AdaSSP
# ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("eps", [0.1, 1.0, 10.0])
def test_wang_printed_adassp_privacy_is_the_exact_composition_of_its_gaussians(eps):
    est = AdaSSPWangRegressor(x_bound=1.0, y_bound=1.0, epsilon=eps, delta=1e-6)
    m = math.sqrt(math.log(6e6)) / (eps / 3)
    assert est.noise_multiplier() == pytest.approx(m)
    mu = math.sqrt(3) / m  # three releases, each 1/m-GDP (B_x = B_y = 1)
    true_eps = optimize_eps(mu, 1e-6)
    assert float(ps.privacy_profile(est.privacy).epsilon(1e-6)) == pytest.approx(true_eps, rel=1e-3)
    assert true_eps < eps  # Wang's constant over-noises once the releases are composed exactly


def optimize_eps(mu: float, delta: float) -> float:
    from scipy.optimize import brentq

    return brentq(lambda e: gaussian_delta(e, mu) - delta, 1e-9, 100.0, xtol=1e-12)


def test_wang_printed_adassp_ridge_and_noise_follow_the_printed_algorithm():
    X, y = _data(n=300, d=3)
    eps, delta = 1.0, 1e-6
    fitted = AdaSSPWangRegressor(x_bound=1.0, y_bound=1.0, epsilon=eps, delta=delta, random_state=3).fit(X, y)
    log6 = math.log(6 / delta)
    ceiling = math.sqrt(3 * log6 * math.log(2 * 9 / 0.05)) / (eps / 3)
    lam_min = np.linalg.eigvalsh(X.T @ X)[0]
    assert ceiling - lam_min - 6 * math.sqrt(log6) / (eps / 3) <= fitted.alpha_ <= ceiling
    # the upper triangle's noise is i.i.d. N(0, sigma^2), mirrored: off-diagonal variance equals the diagonal's
    est = AdaSSPWangRegressor(x_bound=1.0, y_bound=1.0, epsilon=eps, delta=delta)
    sigma = est.noise_multiplier()
    rng = np.random.default_rng(0)
    n = 4000
    releases = [est.release_statistics(X, y, rng) for _ in range(n)]
    xtx = np.array([r[1] for r in releases]) - X.T @ X
    xty = np.array([r[2] for r in releases]) - X.T @ y
    lam = np.array([r[0] for r in releases])
    tol = 5 / math.sqrt(2 * n)
    assert np.allclose(xtx, np.swapaxes(xtx, 1, 2))
    assert np.diagonal(xtx, axis1=1, axis2=2).std(0) == pytest.approx(np.full(3, sigma), rel=tol)
    assert xtx[:, 0, 1].std() == pytest.approx(sigma, rel=tol)
    assert xty.std(0) == pytest.approx(np.full(3, sigma), rel=tol)
    # lambda~ = max(lambda_min + sigma Z - log(6/delta)/(eps/3), 0): zero with probability Phi((shift - lambda_min)/sigma)
    shift = log6 / (eps / 3)
    assert np.mean(lam == 0) == pytest.approx(stats.norm.cdf((shift - lam_min) / sigma), abs=0.03)


# ----------------------------------------------------------------------------------------
# The exponential mechanism and the pure-to-GDP conversion
# ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("eps", [0.01, 0.1, 1.0, 3.0])
def test_pure_dp_is_dominated_by_the_gdp_it_is_converted_to(eps):
    mu = pure_dp_gdp_mu(eps)
    grid = np.linspace(0, eps, 50)
    pure = (math.exp(eps) - np.exp(grid)) / (1 + math.exp(eps))  # the exact profile of eps-DP (randomised response)
    gauss = np.array([gaussian_delta(float(e), mu) for e in grid])
    assert np.all(pure <= gauss + 1e-12)
    # tight: both curves meet at eps' = 0, where pure eps-DP has delta = tanh(eps/2)
    assert math.tanh(eps / 2) == pytest.approx(2 * stats.norm.cdf(mu / 2) - 1, rel=1e-9)
    assert gaussian_delta(0.0, 0.999 * mu) < math.tanh(eps / 2)


def test_exponential_mechanism_ratio_is_within_e_eps_for_a_worst_case_added_record():
    rng = np.random.default_rng(1)
    eps, clip = 0.7, 0.25
    scores = rng.uniform(0, 50, size=12)
    prior = rng.dirichlet(np.ones(12))
    base = exponential_mechanism_probabilities(scores, eps, clip, prior)
    worst = 0.0
    for _ in range(200):  # an added record raises each score by a value in [0, clip]: try extreme patterns
        bump = clip * rng.integers(0, 2, size=12)
        ratio = exponential_mechanism_probabilities(scores + bump, eps, clip, prior) / base
        worst = max(worst, float(np.max(np.abs(np.log(ratio)))))
    assert worst <= eps + 1e-12
    assert worst > 0.9 * eps  # the bound is attained by the extreme patterns


def test_gumbel_max_sampling_has_the_mechanisms_law():
    X, y = _data(n=200)
    est = SSPRidgeSelectionRegressor(x_bound=1.0, y_bound=1.0, epsilon=1.0, score_clip=0.25, random_state=0)
    m, eps_s = est.calibration()
    choices = np.bincount([SSPRidgeSelectionRegressor(x_bound=1.0, y_bound=1.0, epsilon=1.0, score_clip=0.25, random_state=s).fit(X, y).choice_
                           for s in range(1500)], minlength=len(DEFAULT_RIDGE_MULTIPLIERS) + X.shape[1] + 1)
    assert eps_s > 0 and choices.sum() == 1500
    assert choices[DEFAULT_RIDGE_MULTIPLIERS.index(1.0)] > 0  # the anchor is reachable; law checked below
    scores = np.array([10.0, 12.0, 9.0, 30.0])
    prior = np.array([0.5, 0.2, 0.2, 0.1])
    probs = exponential_mechanism_probabilities(scores, 0.5, 1.0, prior)
    rng = np.random.default_rng(2)
    draws = np.argmax(np.log(prior) - 0.5 * scores + rng.gumbel(size=(20000, 4)), axis=1)
    assert np.bincount(draws, minlength=4) / 20000 == pytest.approx(probs, abs=0.015)


# ----------------------------------------------------------------------------------------
# SSP with a private ridge choice
# ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("eps", [0.1, 1.0, 10.0])
def test_selection_certificate_is_the_profile_of_its_declared_mechanism(eps):
    est = SSPRidgeSelectionRegressor(x_bound=1.0, y_bound=1.0, epsilon=eps, delta=1e-6)
    cert = est.certified_epsilon()
    assert cert == float(ps.privacy_profile(est.privacy).epsilon(1e-6))
    assert eps - 1e-4 <= cert <= eps  # calibrated tightly and never above the target
    m, eps_s = est.calibration()
    # the declared mechanism is what runs: two Gaussians of multiplier m and a pure eps_s release
    assert dict(est.privacy.parts) == {ps.Gaussian(m, sensitivity=1.0): 2, ps.PureDP(eps_s): 1}


def test_selection_off_by_the_public_rule_is_two_release_adassp():
    X, y = _data()
    est = SSPRidgeSelectionRegressor(x_bound=1.0, y_bound=1.0, epsilon=0.1, n_max=500, random_state=4)
    assert not est.selects()
    fitted = est.fit(X, y)
    same = AdaSSPRegressor(x_bound=1.0, y_bound=1.0, epsilon=0.1, release_lambda_min=False, random_state=4).fit(X, y)
    assert np.array_equal(fitted.coef_, same.coef_) and fitted.choice_ is None
    assert dict(est.privacy.parts) == {ps.Gaussian(math.sqrt(2) * analytic_gaussian_sigma(0.1, 1e-6)): 2}
    assert est.certified_epsilon() == pytest.approx(0.1, abs=1e-6)
    assert SSPRidgeSelectionRegressor(epsilon=0.1, n_max=10 ** 6, x_bound=1.0, y_bound=1.0).selects()


def test_selection_can_choose_the_trivial_predictor():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(3000, 3)) / 3
    y = np.clip(rng.normal(scale=0.05, size=3000), -1, 1)  # no signal: predicting 0 is best
    picks = [SSPRidgeSelectionRegressor(x_bound=1.0, y_bound=1.0, epsilon=0.5, anchor_weight=0.0, random_state=s,
                                        include_single_feature=False).fit(X, y)
             for s in range(20)]
    trivial = len(DEFAULT_RIDGE_MULTIPLIERS)
    assert sum(p.choice_ == trivial and p.alpha_ == np.inf and not p.coef_.any() for p in picks) >= 2


@pytest.mark.slow  # seconds per case, measured: the slow tier runs it
def test_trivial_predictor_is_a_candidate_of_the_regressor_selection():
    assert {"method": "trivial"} in DEFAULT_CANDIDATES
    X, y = _data(n=50)
    est = CANDIDATE_BUILDERS["trivial"](1.0, 1e-6, {}, PrivateRegressorSelection(x_bound=1.0, y_bound=1.0), 3).fit(X, y)
    assert isinstance(est, TrivialRegressor) and np.all(est.predict(X) == 0.0)
    only = PrivateRegressorSelection(x_bound=1.0, y_bound=1.0, epsilon=1.0, candidates=({"method": "trivial"},), random_state=0).fit(X, y)
    assert only.best_params_ == {"method": "trivial"} and not only.coef_.any()


@pytest.mark.skipif(not (UCI_DIR / "elevators").is_dir(), reason="vendored UCI data missing")
def test_private_ridge_recovers_at_least_half_of_the_oracle_gain_on_elevators_at_eps_1():
    from experiments.linear_regression import load

    X, y = load("elevators", UCI_DIR, "wang")
    order = np.random.default_rng(0).permutation(len(y))
    cut = int(0.9 * len(y))
    Xtr, ytr, Xte, yte = X[order[:cut]], y[order[:cut]], X[order[cut:]], y[order[cut:]]

    def mse(est):
        return float(np.mean((est.predict(Xte) - yte) ** 2))

    seeds = range(10)
    with threadpool_limits(1):
        two = np.median([mse(AdaSSPRegressor(x_bound=1.0, y_bound=1.0, epsilon=1.0, release_lambda_min=False, random_state=s).fit(Xtr, ytr))
                         for s in seeds])
        oracle = np.median([min(min(mse(AdaSSPRegressor(x_bound=1.0, y_bound=1.0, epsilon=1.0, release_lambda_min=False, ridge_scale=c,
                                                        random_state=s).fit(Xtr, ytr)) for c in DEFAULT_RIDGE_MULTIPLIERS),
                                float(np.mean(yte ** 2))) for s in seeds])
        fits = [SSPRidgeSelectionRegressor(x_bound=1.0, y_bound=1.0, epsilon=1.0, n_max=len(y), random_state=s).fit(Xtr, ytr) for s in seeds]
    private = np.median([mse(f) for f in fits])
    assert oracle < two
    assert two - private >= 0.5 * (two - oracle)
    assert fits[0].certified_epsilon() == float(ps.privacy_profile(fits[0].privacy).epsilon(1e-6)) <= 1.0


def _one_fit_estimators():
    from privselect.apps.ptr import (
        AdaOPSRegressor,
        OPSPTRRegressor,
        OPSRegressor,
        OutputPerturbationRegressor,
        TukeyEMRegressor,
    )

    bounds = {"x_bound": 1.0, "y_bound": 1.0}
    return [SSPRidgeSelectionRegressor(epsilon=1.0, random_state=0, **bounds),
            SSPRidgeSelectionRegressor(epsilon=1.0, n_max=10, random_state=0, **bounds),  # no selection: AdaSSP path
            AdaSSPRegressor(epsilon=1.0, random_state=0, **bounds), AdaSSPWangRegressor(epsilon=1.0, random_state=0, **bounds),
            OPSRegressor(epsilon=1.0, random_state=0, **bounds), OPSPTRRegressor(epsilon=1.0, random_state=0, **bounds),
            OutputPerturbationRegressor(epsilon=1.0, random_state=0, **bounds),
            AdaOPSRegressor(epsilon=1.0, random_state=0, **bounds),
            TukeyEMRegressor(epsilon=1.0, n_min=1000, random_state=0)]


@pytest.mark.parametrize("est", _one_fit_estimators(), ids=lambda e: type(e).__name__)
def test_every_private_regressor_exposes_its_certificate_after_fit(est):
    X, y = _data(n=2000, d=3, seed=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, y)
    cert = est.certificate_
    # the certificate is the accountant's bound on this fit's own description, at the fit's delta
    assert cert.delta == est.delta and cert.base == est.privacy
    assert cert.epsilon == pytest.approx(float(ps.privacy_profile(est.privacy).epsilon(est.delta)), rel=1e-9)
    # each is calibrated to (epsilon, delta); OPS rounds up by at most 0.2%; Wang's printed calibration is looser
    assert cert.epsilon <= 1.0 * 1.002
    assert json.loads(cert.to_json())["epsilon"] == pytest.approx(cert.epsilon)


def test_ssp_certificate_matches_the_closed_form_of_its_gaussian_releases():
    """Two-release AdaSSP is exactly mu-GDP with mu = 1/sigma_G(1, 1e-6) (Balle, Wang 2018 Thm 8; DRS Cor. 3.3):
    its certificate is epsilon = 1 at delta = 1e-6, to the accountant's accuracy."""
    X, y = _data(n=500, d=3, seed=2)
    est = AdaSSPRegressor(epsilon=1.0, delta=1e-6, release_lambda_min=False, x_bound=1.0, y_bound=1.0,
                          random_state=0).fit(X, y)
    assert est.certificate_.epsilon == pytest.approx(1.0, abs=1e-4)


def test_trivial_regressor_certificate_is_zero_dp():
    X, y = _data(n=50, d=2, seed=3)
    cert = TrivialRegressor(x_bound=1.0, y_bound=1.0).fit(X, y).certificate_
    assert (cert.epsilon, cert.delta) == (0.0, 0.0)


def test_pure_dp_output_perturbation_certificate_is_its_epsilon_at_delta_zero():
    from privselect.apps.ptr import OutputPerturbationRegressor

    X, y = _data(n=200, d=2, seed=4)
    cert = OutputPerturbationRegressor(epsilon=0.7, delta=None, x_bound=1.0, y_bound=1.0, random_state=0).fit(X, y).certificate_
    assert (cert.epsilon, cert.delta) == (0.7, 0.0)


def test_certificate_survives_the_release_boundary_and_is_not_stored_state():
    from privselect.tuning.release import release_value

    X, y = np.random.default_rng(0).uniform(-0.5, 0.5, (200, 3)), np.random.default_rng(1).uniform(-1, 1, 200)
    est = AdaSSPRegressor(epsilon=1.0, delta=1e-6, x_bound=1.0, y_bound=1.0, random_state=0).fit(X, y)
    assert "certificate_" not in vars(est)  # derived from the public parameters, never fitted state
    released = release_value(est)  # the tuner's trusted walk accepts the fitted estimator
    assert released is not est and released.certificate_ == est.certificate_
    assert np.array_equal(released.predict(X), est.predict(X))
    with pytest.raises(AttributeError):
        AdaSSPRegressor(epsilon=1.0, delta=1e-6, x_bound=1.0, y_bound=1.0).certificate_  # noqa: B018 - before fit


# ----------------------------------------------------------------------------------------
# Public bounds are stated by the user
# ----------------------------------------------------------------------------------------


def _unbounded_regressors():
    from privselect.apps.ptr import (
        AdaOPSRegressor,
        NonPrivateRidge,
        OPSPTRRegressor,
        OPSRegressor,
        OutputPerturbationRegressor,
        TunedOPSPTRRegressor,
    )
    return [SSPRidgeSelectionRegressor(), AdaSSPRegressor(), AdaSSPWangRegressor(), TrivialRegressor(),
            OPSRegressor(), OPSPTRRegressor(), TunedOPSPTRRegressor(), OutputPerturbationRegressor(),
            AdaOPSRegressor(), NonPrivateRidge(), PrivateRegressorSelection()]


@pytest.mark.parametrize("est", _unbounded_regressors(), ids=lambda e: type(e).__name__)
def test_fit_on_raw_features_without_bounds_raises_naming_x_bound(est):
    from sklearn.datasets import load_diabetes
    X, y = load_diabetes(return_X_y=True, scaled=False)  # raw features, targets 25-346
    assert est.get_params()["x_bound"] is None and est.get_params()["y_bound"] is None
    with pytest.raises(ValueError, match=r"x_bound is required"):
        est.fit(X[:100], y[:100])
    assert not hasattr(est, "coef_")
    with pytest.raises(ValueError, match=r"y_bound is required"):
        est.set_params(x_bound=1.0).fit(X[:100], y[:100])


def test_single_feature_fit_on_the_intercept_column_predicts_the_training_mean():
    from privselect.apps.ptr.ssp import single_feature_fits
    rng = np.random.default_rng(3)
    X = np.column_stack([rng.uniform(-1, 1, size=(50, 2)), np.ones(50)]) / np.sqrt(3)
    y = rng.uniform(-1, 1, size=50)
    fits = single_feature_fits(X.T @ X, X.T @ y, floor=1e-12)  # exact statistics: the noise-free limit
    assert len(fits) == 3 and np.count_nonzero(fits[2]) == 1
    assert X @ fits[2] == pytest.approx(np.full(50, y.mean()), rel=1e-12)


def test_single_feature_candidates_cost_no_privacy_and_take_one_prior_slot():
    with_fits = SSPRidgeSelectionRegressor(x_bound=1.0, y_bound=1.0, epsilon=1.0)
    without = SSPRidgeSelectionRegressor(x_bound=1.0, y_bound=1.0, epsilon=1.0, include_single_feature=False)
    assert with_fits.privacy == without.privacy  # post-processing of the same releases
    multipliers = np.asarray(DEFAULT_RIDGE_MULTIPLIERS)
    prior = with_fits._prior(multipliers, n_single=4)
    k = len(multipliers)  # 11 ridges (anchor 0.5) + one slot for the 4 fits + the trivial: 12 slots share 0.5
    assert len(prior) == k + 4 + 1 and prior.sum() == pytest.approx(1.0)
    assert prior[k:k + 4] == pytest.approx(np.full(4, 0.5 / 12 / 4))
    assert prior[-1] == pytest.approx(0.5 / 12) and prior[DEFAULT_RIDGE_MULTIPLIERS.index(1.0)] == 0.5
    assert without._prior(multipliers)[-1] == pytest.approx(0.5 / 11)  # unchanged without the fits
