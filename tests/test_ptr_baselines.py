"""Baselines: each noise scale against its stated calibration, and the sensitivities behind them."""

from __future__ import annotations

import math

import numpy as np
import pytest

import privselect as ps
from privselect.accounting.gaussian import gaussian_delta
from privselect.apps.ptr import (
    AdaOPSRegressor,
    NonPrivateRidge,
    OPSRegressor,
    OutputPerturbationRegressor,
    analytic_gaussian_sigma,
    balanced_alpha,
    output_perturbation_alpha,
)
from privselect.apps.ptr.baselines import constrained_ridge
from privselect.apps.ptr.ops import clip_records, ops_gamma, ops_passes, ridge_solution


def _data(n=200, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) / math.sqrt(d)
    y = X @ np.linspace(1.0, -1.0, d) + 0.1 * rng.normal(size=n)
    return clip_records(X, y, 1.0, 1.0)


# ----------------------------------------------------------------------------------------
# Output perturbation
# ----------------------------------------------------------------------------------------


def test_constrained_ridge_is_the_constrained_minimiser():
    X, y = _data()
    alpha, radius = 0.5, 0.3
    theta = constrained_ridge(X, y, alpha, radius)
    assert np.linalg.norm(theta) <= radius * (1 + 1e-12)
    objective = lambda t: 0.5 * np.sum((y - X @ t) ** 2) + 0.5 * alpha * t @ t  # noqa: E731
    rng = np.random.default_rng(0)
    for _ in range(300):
        v = theta + 0.05 * rng.normal(size=3)
        v *= min(1.0, radius / np.linalg.norm(v))
        assert objective(theta) <= objective(v) + 1e-10
    free, _ = ridge_solution(X, y, alpha)
    assert np.allclose(constrained_ridge(X, y, alpha, 10.0), free)


def test_output_perturbation_sensitivity_holds_for_neighbours():
    X, y = _data(n=60)
    est = OutputPerturbationRegressor(x_bound=1.0, y_bound=1.0, alpha=0.3, theta_bound=0.8)
    delta2 = est.sensitivity()
    theta = constrained_ridge(X, y, 0.3, 0.8)
    rng = np.random.default_rng(1)
    worst = 0.0
    for _ in range(200):
        z = rng.normal(size=3)
        z /= np.linalg.norm(z)
        yz = rng.choice([-1.0, 1.0])
        t2 = constrained_ridge(np.vstack([X, z]), np.append(y, yz), 0.3, 0.8)
        worst = max(worst, np.linalg.norm(t2 - theta))
    for i in range(len(y)):
        t2 = constrained_ridge(np.delete(X, i, 0), np.delete(y, i), 0.3, 0.8)
        worst = max(worst, np.linalg.norm(t2 - theta))
    assert worst <= delta2


@pytest.mark.slow  # seconds per case, measured: the slow tier runs it
def test_output_perturbation_noise_scales():
    X, y = _data()
    d, n = 3, 3000
    pure = OutputPerturbationRegressor(x_bound=1.0, y_bound=1.0, epsilon=0.5, delta=None, alpha=2.0, theta_bound=1.0)
    assert pure.privacy == ps.PureDP(0.5)
    scale = pure.noise_scale()
    assert scale == pytest.approx(1.0 * (1.0 + 1.0) / 2.0 / 0.5)  # Delta / eps with Delta = B_x (B_y + B_x R) / alpha
    theta = constrained_ridge(X, y, 2.0, 1.0)
    noise = np.array([pure.set_params(random_state=s).fit(X, y).coef_ - theta for s in range(n)])
    norms = np.linalg.norm(noise, axis=1)
    # ||b|| ~ Gamma(d, scale): mean d*scale, sd sqrt(d)*scale; direction uniform
    assert abs(norms.mean() - d * scale) < 5 * math.sqrt(d) * scale / math.sqrt(n)
    assert np.abs((noise / norms[:, None]).mean(0)).max() < 5 / math.sqrt(3 * n)
    gauss = OutputPerturbationRegressor(x_bound=1.0, y_bound=1.0, epsilon=0.5, delta=1e-6, alpha=2.0, theta_bound=1.0)
    sigma = gauss.noise_scale()
    assert sigma == pytest.approx(gauss.sensitivity() * analytic_gaussian_sigma(0.5, 1e-6))
    assert gaussian_delta(0.5, gauss.privacy.mu) <= 1e-6
    noise = np.array([gauss.set_params(random_state=s).fit(X, y).coef_ - theta for s in range(n)])
    assert noise.std(0) == pytest.approx(np.full(d, sigma), rel=5 / math.sqrt(2 * n))
    assert 0 < output_perturbation_alpha(1000, 5, 1.0, 1e-6) < output_perturbation_alpha(1000, 5, 0.1, 1e-6)


# ----------------------------------------------------------------------------------------
# AdaOPS and data-independent OPS
# ----------------------------------------------------------------------------------------


def test_adaops_budget_and_gamma():
    X, y = _data()
    est = AdaOPSRegressor(x_bound=1.0, y_bound=1.0, epsilon=1.0, delta=1e-6)
    eps1, eps2, eps_ops, delta_ops, p1, p2 = est._budget()
    assert eps1 + eps2 + eps_ops == pytest.approx(1.0) and delta_ops + 2 * p1 + p2 == pytest.approx(1e-6)
    est.set_params(random_state=3).fit(X, y)
    h = max(est.alpha_, est.alpha_ + est.lambda_lower_ - 1.0)
    rho = math.sqrt(est.gamma_) * math.exp(est.log_norm_upper_) * (1 + 1 / h)
    assert ops_passes(eps_ops, 1 / h, rho, delta_ops)  # the released bounds certify eps_ops ...
    assert not ops_passes(eps_ops, 1 / h, rho * 1.001, delta_ops)  # ... and gamma is the largest such


def test_adaops_norm_release_noise_scale():
    """u~ - u(X) = Lap(s/eps_2) + (s/eps_2) ln(1/(2 p_2)), s = log(1 + B_x^2/h~)."""
    X, y = _data(n=150)
    est = AdaOPSRegressor(x_bound=1.0, y_bound=1.0, epsilon=1.0, delta=1e-6)
    _, eps2, _, _, _, p2 = est._budget()
    z = []
    for s in range(150):
        est.set_params(random_state=s).fit(X, y)
        h = max(est.alpha_, est.alpha_ + est.lambda_lower_ - 1.0)
        theta, _ = ridge_solution(X, y, est.alpha_)
        b = math.log1p(1 / h) / eps2
        z.append((est.log_norm_upper_ - math.log(1 + np.linalg.norm(theta))) / b - math.log(1 / (2 * p2)))
    z = np.array(z)  # standard Laplace draws
    assert abs(z.mean()) < 5 * math.sqrt(2 / len(z))
    assert np.abs(z).mean() == pytest.approx(1.0, abs=5 / math.sqrt(len(z)))


def test_ops_regressor_data_independent_calibration():
    X, y = _data()
    est = OPSRegressor(x_bound=1.0, y_bound=1.0, epsilon=1.0, delta=1e-6, alpha=50.0, n_max=500, random_state=0).fit(X, y)
    theta_bound = min(math.sqrt(500) / (2 * math.sqrt(50.0)), 500 / 50.0)
    assert est.gamma_ == pytest.approx(ops_gamma(1 / 50.0, 1 + theta_bound, 1.0, 1e-6))
    # the data-independent norm bound covers every data set of at most n_max records
    theta, _ = ridge_solution(X, y, 50.0)
    assert np.linalg.norm(theta) <= theta_bound
    OPSRegressor(x_bound=1.0, y_bound=1.0, n_max=10).fit(X, y)  # n > n_max is not refused (tests/test_ptr.py checks the subsampling)
    auto = OPSRegressor(x_bound=1.0, y_bound=1.0, epsilon=1.0, n_max=500, random_state=0).fit(X, y)
    assert auto.alpha_ == pytest.approx(balanced_alpha(500, 3, 1.0, 1e-6))
    assert NonPrivateRidge(x_bound=1.0, y_bound=1.0).fit(X, y).score(X, y) > 0.9
