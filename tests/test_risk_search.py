"""The search over eps behind ``Risk.tpr`` (its coarse scan is cut where no larger eps can win) and the report's
delta(eps) figure (evaluated until it falls below the plotted range)."""

import math

import numpy as np
import pytest
from scipy import stats

import privselect as ps
from privselect.accounting.profile import DirectionalCurve, ErrorBudget, PrivacyProfile
from privselect.attack_risk import Risk
from privselect.report import _plotted_delta

FPRS = np.array([1e-6, 1e-4, 1e-3, 1e-2, 0.1, 0.5, 0.9])
STEP = 1.0 / 16


def gdp_delta(eps: np.ndarray, mu: float) -> np.ndarray:
    """H_{e^eps}(N(mu, 1) || N(0, 1)) (Dong, Roth, Su 2022, Cor. 2.13)."""
    return stats.norm.cdf(-eps / mu + mu / 2) - np.exp(eps) * stats.norm.cdf(-eps / mu - mu / 2)


def grid_minimum(mu: float, alpha: np.ndarray, top: float = 60.0) -> np.ndarray:
    """min over eps = 0, 1/16, ..., top of both (eps, delta(eps)) constraints, with the exact GDP delta."""
    eps = STEP * np.arange(int(top / STEP) + 1)
    d, a = gdp_delta(eps, mu)[None, :], alpha[:, None]
    return np.minimum(d + np.exp(eps) * a, 1 - np.exp(-eps) * (1 - d - a)).min(axis=1)


class _Recording(DirectionalCurve):
    direction = "both"
    error_budget = ErrorBudget()

    def __init__(self, mu: float) -> None:
        self.inner, self.asked = ps.gdp_profile(mu), []

    def delta_bounds(self, eps):
        self.asked.append(np.array(eps, dtype=float).reshape(-1))
        return self.inner.delta_bounds(eps)


@pytest.mark.parametrize("mu", [0.2, 1.0, 3.0, 8.0])
def test_coarse_scan_finds_the_minimum_of_the_whole_grid(mu):
    got = Risk(profiles=(ps.gdp_profile(mu),)).tpr(FPRS, precise=False)
    exact = np.maximum(grid_minimum(mu, FPRS), FPRS)
    assert np.all(got >= exact)
    np.testing.assert_allclose(got, exact, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("mu", [0.5, 1.0, 3.0])
def test_coarse_scan_stops_within_a_chunk_of_the_last_eps_that_can_win(mu):
    """Past eps*, min(e^eps alpha, 1 - e^-eps) >= the grid minimum for every alpha: no point there can win, and the
    scan asks at most one chunk of 32 points (2 units of eps) beyond it."""
    curve = _Recording(mu)
    Risk(profiles=(PrivacyProfile(curves=(curve,), accountant="test"),)).tpr(FPRS, precise=False)
    best = grid_minimum(mu, FPRS)[:, None]
    eps = STEP * np.arange(2000)
    useless = np.all(np.minimum(np.exp(eps)[None, :] * FPRS[:, None], -np.expm1(-eps)[None, :]) >= best, axis=0)
    first_useless = eps[np.argmax(useless)]
    asked = np.concatenate(curve.asked)
    scanned = asked[asked < 10.0 * (1 + mu * mu)]  # leave out the large eps of the FPR 0 / trivial checks, if any
    assert scanned.max() <= first_useless + 2.0


class _Tail(DirectionalCurve):
    """GDP, failing the test if asked beyond ``limit``."""

    direction = "both"
    error_budget = ErrorBudget()

    def __init__(self, mu: float, limit: float) -> None:
        self.inner, self.limit = ps.gdp_profile(mu), limit

    def delta_bounds(self, eps):
        assert np.max(eps) <= self.limit
        return self.inner.delta_bounds(eps)


def test_plotted_delta_is_drawn_as_the_full_curve_and_skips_the_far_tail():
    mu, lo = 1.0, 1e-7
    eps = np.linspace(0.0, 20.0, 241)
    below = eps[np.argmax(gdp_delta(eps, mu) < lo)]  # the first plotted eps below the floor (about 6.0)
    profile = PrivacyProfile(curves=(_Tail(mu, below + 40 * (eps[1] - eps[0])),), accountant="test")
    got = _plotted_delta(profile, eps, lo)
    exact = gdp_delta(eps, mu)
    assert np.all(got >= exact * (1 - 1e-12))  # an upper bound everywhere (the tail: delta at an earlier eps)
    np.testing.assert_array_equal(np.maximum(got, lo), np.maximum(ps.gdp_profile(mu).delta(eps), lo))
    assert math.isclose(float(got[eps < below][-1]), float(gdp_delta(eps[eps < below][-1:], mu)[0]), rel_tol=1e-12)
