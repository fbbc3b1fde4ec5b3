"""TukeyEM: approximate Tukey depth, the PTR distance, the restricted exponential mechanism, the estimator."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import privselect as ps
from privselect.apps.ptr import RefusalWarning, TukeyEMRegressor
from privselect.apps.ptr.tukey import (
    _log_volumes,
    _sample_restricted,
    approximate_tukey_depth,
    block_models,
    depth_box_bounds,
    distance_lower_bound,
    tukey_n_models,
)


def _linear(n, beta, noise=0.5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, len(beta)))
    return X, X @ beta + noise * rng.normal(size=n)


def test_depth_is_min_over_axis_halfspaces_by_brute_force():
    rng = np.random.default_rng(1)
    models, points = rng.normal(size=(9, 3)), rng.normal(size=(50, 3))
    expected = [min(min(int(np.sum(models[:, j] <= p[j])), int(np.sum(models[:, j] >= p[j]))) for j in range(3))
                for p in points]
    assert approximate_tukey_depth(models, points).tolist() == expected
    # a point at the coordinate-wise median of 9 models has depth 5 (5 on each side, itself counted)
    assert approximate_tukey_depth(models, np.median(models, axis=0))[0] == 5


def test_depth_boxes_hold_exactly_the_points_of_at_least_that_depth():
    rng = np.random.default_rng(2)
    models = rng.normal(size=(12, 2))
    lo, hi = depth_box_bounds(models)
    points = rng.uniform(-3, 3, size=(4000, 2))
    depth = approximate_tukey_depth(models, points)
    for i in range(1, 7):
        inside = np.all((points >= lo[i]) & (points <= hi[i]), axis=1)
        assert np.array_equal(inside, depth >= i)
    assert np.isneginf(_log_volumes(lo, hi)[7])  # V_{D+1} = 0


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), m=st.integers(16, 80), which=st.integers(0, 79), shift=st.floats(-50, 50))
def test_distance_bound_moves_by_at_most_one_when_one_model_changes(seed, m, which, shift):
    rng = np.random.default_rng(seed)
    models = rng.standard_t(df=3, size=(m, 2))
    other = models.copy()
    other[which % m] = rng.normal(size=2) + shift
    t, a = m // 4, 0.7
    ks = [distance_lower_bound(_log_volumes(*depth_box_bounds(x)), t, a, math.log(1e-3)) for x in (models, other)]
    assert abs(ks[0] - ks[1]) <= 1


def _density_1d(models, t, a, grid):
    depth = approximate_tukey_depth(models[:, None], grid[:, None])
    w = np.where(depth >= t, np.exp(a * depth), 0.0)
    return w / w.sum()


@pytest.mark.parametrize("move", [-100.0, 0.0, 0.3, 100.0])
def test_restricted_mechanism_meets_the_proved_bound_on_exact_1d_densities(move):
    """C_0's ingredients give (2a + log(1 + e^{-a(g+1)} V_{t-1}/V_{t+g}), e^{-a g} V_t/V_{t+g}) from S to any neighbour."""
    models = np.sort(np.random.default_rng(3).normal(size=30))
    t, a = 7, 0.6
    grid = np.linspace(-6, 6, 240_001)
    p = _density_1d(models, t, a, grid)
    lo, hi = depth_box_bounds(models[:, None])
    vol = np.exp(_log_volumes(lo, hi))
    without_pure_part = []
    for replaced in (0, 14, 29):
        other = models.copy()
        other[replaced] = move
        q = _density_1d(other, t, a, grid)
        for g in (1, 3, 5):
            eps = 2 * a + math.log1p(math.exp(-a * (g + 1)) * vol[t - 1] / vol[t + g])
            bound = math.exp(-a * g) * vol[t] / vol[t + g]
            hockey = float(np.sum(np.maximum(p - math.exp(eps) * q, 0.0)))
            assert hockey <= bound + 1e-4
            without_pure_part.append(float(np.sum(np.maximum(p - q, 0.0))) / bound)
    if move == 100.0:  # the check bites: with eps = 0 the delta term alone does not cover an outlying model
        assert max(without_pure_part) > 1.0


def test_sampler_draws_depth_levels_with_the_exponential_mechanism_law():
    rng = np.random.default_rng(4)
    models = rng.normal(size=(24, 2))
    lo, hi = depth_box_bounds(models)
    log_v = _log_volumes(lo, hi)
    t, a = 6, 0.4
    draws = np.array([_sample_restricted(lo, hi, log_v, t, a, rng) for _ in range(6000)])
    depth = approximate_tukey_depth(models, draws)
    levels = np.arange(t, 13)
    vol = np.exp(log_v)
    weights = np.exp(a * levels) * (vol[levels] - vol[levels + 1])
    expected = weights / weights.sum()
    observed = np.array([np.mean(depth == i) for i in levels])
    assert depth.min() >= t
    assert np.max(np.abs(observed - expected)) < 4 * math.sqrt(0.25 / 6000)


def test_refuses_on_tiny_data_and_predicts_zero():
    X, y = _linear(200, np.array([1.0, -2.0, 0.5]))
    est = TukeyEMRegressor(epsilon=1.0, n_min=200, random_state=0)
    with pytest.warns(RefusalWarning, match="TukeyEM refused"):
        est.fit(X, y)
    assert est.refused_ and est.n_models_ == tukey_n_models(200, 3) == 22
    assert np.array_equal(est.predict(X[:5]), np.zeros(5))


def test_recovers_true_coefficients_on_large_well_conditioned_data_at_eps_1():
    beta = np.array([1.0, -2.0, 0.5, 3.0, -1.0])
    X, y = _linear(20_000, beta)
    errors = []
    for seed in range(3):
        with warnings.catch_warnings():
            warnings.simplefilter("error", RefusalWarning)  # must not refuse
            est = TukeyEMRegressor(epsilon=1.0, delta=1e-6, n_min=20_000, random_state=seed).fit(X, y)
        errors.append(np.linalg.norm(est.coef_ - beta))
    assert est.n_models_ == 1333
    assert max(errors) < 0.05  # ||beta|| = 3.9; measured 0.01-0.02


def test_privacy_is_the_target_and_needs_no_bounds():
    est = TukeyEMRegressor(epsilon=1.0, delta=1e-6, n_min=5000)
    assert est.privacy == ps.ApproxDP(1.0, 1e-6 * math.exp(-0.5))  # max(delta/2, delta e^{-eps_1})
    assert float(ps.privacy_profile(est.privacy).epsilon(1e-6)) <= 1.0
    eps1, tau, eps2, a = est.budget()
    assert (eps1, eps2) == (0.5, 0.5) and tau == pytest.approx(math.log(5e5) / 0.5)
    # the release is (2a + log1p(theta e^{-a}), theta)-DP from a safe S, theta = delta/2; a false pass: delta e^{-eps_1}
    assert 2 * a + math.log1p(0.5e-6 * math.exp(-a)) <= eps2
    assert 0.5 * math.exp(-eps1 * (tau + 1)) == pytest.approx(1e-6 * math.exp(-0.5))
    for eps in (0.1, 10.0):
        small = TukeyEMRegressor(epsilon=eps, delta=1e-6, n_min=5000)
        assert float(ps.privacy_profile(small.privacy).epsilon(1e-6)) <= eps
    assert "x_bound" not in est.get_params()
    X, y = _linear(20_000, np.ones(3))
    est = TukeyEMRegressor(epsilon=1.0, n_min=20_000, random_state=0).fit(1e6 * X, 1e6 * y)  # any scale: no clipping
    assert np.linalg.norm(est.coef_ - np.ones(3)) < 0.05


def test_random_state_makes_fits_reproducible():
    X, y = _linear(20_000, np.array([1.0, 2.0]))
    fits = [TukeyEMRegressor(epsilon=1.0, n_min=20_000, random_state=7).fit(X, y).coef_ for _ in range(2)]
    other = TukeyEMRegressor(epsilon=1.0, n_min=20_000, random_state=8).fit(X, y).coef_
    assert np.array_equal(fits[0], fits[1]) and not np.array_equal(fits[0], other)


def test_removing_a_record_changes_one_block_model():
    X, y = _linear(600, np.array([1.0, -1.0]))
    labels = np.random.default_rng(5).integers(10, size=600)
    full = block_models(X, y, 10, np.random.default_rng(5))
    keep = np.arange(600) != 17  # the same labels for the others: the coupling of the proof
    reduced = block_models(X[keep], y[keep], 10, _FixedLabels(labels[keep]))
    changed = np.any(np.abs(full - reduced) > 1e-6, axis=1)
    assert changed.sum() == 1 and changed[labels[17]]


class _FixedLabels:
    """A generator stand-in that hands out given block labels (and zero jitter)."""

    def __init__(self, labels):
        self.labels = labels

    def integers(self, m, size):
        return self.labels

    def random(self, shape):
        return np.zeros(shape)


def test_auto_models_need_a_public_size_bound():
    with pytest.raises(ValueError, match="n_min"):
        TukeyEMRegressor().fit(*_linear(100, np.ones(2)))
    with pytest.raises(ValueError, match="ptr_share"):
        TukeyEMRegressor(n_models=10, ptr_share=1.5).fit(*_linear(100, np.ones(2)))


def test_attack_one_extreme_record_cannot_drag_the_release():
    beta = np.array([1.0, -2.0, 0.5, 3.0, -1.0])
    X, y = _linear(20_000, beta)
    X_bad = np.vstack([X, np.full((1, 5), 1e6)])
    y_bad = np.append(y, 1e15)  # no bounds anywhere: one record makes its block's model enormous
    est = TukeyEMRegressor(epsilon=1.0, n_min=20_000, random_state=3).fit(X_bad, y_bad)
    assert not est.refused_ and np.linalg.norm(est.coef_ - beta) < 0.05


def test_attack_fitted_state_and_refusal_warning_carry_no_exact_statistic():
    X, y = _linear(300, np.array([1.0, -1.0]))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est = TukeyEMRegressor(epsilon=1.0, n_min=300, random_state=0).fit(X, y)
    models = block_models(X, y, est.n_models_, np.random.default_rng(0))
    exact_k = distance_lower_bound(_log_volumes(*depth_box_bounds(models)), est.n_models_ // 4, est.budget()[3],
                                   math.log(0.5e-6))
    state = {k: v for k, v in vars(est).items() if k.endswith("_") and not k.startswith("_")}
    assert set(state) == {"n_features_in_", "n_models_", "distance_release_", "refused_", "coef_", "intercept_"}
    # the certificate is a function of the parameters alone: the same after a fit on other data
    other = TukeyEMRegressor(epsilon=1.0, n_min=300, random_state=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        other.fit(*_linear(400, np.array([3.0, 2.0])))
    assert est.certificate_ == other.certificate_
    assert est.distance_release_ != exact_k and np.array_equal(est.coef_, np.zeros(2))
    assert [type(w.message) for w in caught] == [RefusalWarning]
    assert f"{est.distance_release_:.4g}" in str(caught[0].message)  # only the noisy, already-released value
