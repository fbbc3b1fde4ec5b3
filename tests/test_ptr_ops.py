"""OPS privacy: the rank-one formulas against direct numerics, bound validity, neighbour bounds, sampler.

Every check here can fail: the closed forms of ``privselect.apps.ptr.ops`` are compared with
quadrature in d = 1, a grid integral of the d = 2 posteriors, Monte Carlo in d = 3, and exact
Renyi integrals; the data-dependent bounds with random and adversarial neighbours.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, stats

from privselect.apps.ptr import ops
from privselect.apps.ptr.ops import (
    clip_records,
    ops_delta,
    ops_epsilon,
    ops_epsilon_exact,
    ops_epsilon_safe,
    ops_epsilon_wang,
    ops_gamma,
    ops_hockey_stick,
    ops_local_bounds,
    ops_passes,
    ops_renyi,
    ridge_solution,
    sample_ops,
)
from tests.support.ptr import neighbour_quantities


def _data(n: int, d: int, seed: int, x_bound: float = 1.0, y_bound: float = 1.0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * 0.6
    y = X @ rng.normal(size=d) * 0.5 + 0.3 * rng.normal(size=n)
    return clip_records(X, y, x_bound, y_bound)


def _posteriors(S_X, S_y, x, yz, alpha, gamma):
    """(mean, cov) of the OPS posteriors on S and S u {z}."""
    out = []
    for X, y in ((S_X, S_y), (np.vstack([S_X, x]), np.append(S_y, yz))):
        theta, L = ridge_solution(X, y, alpha)
        H = L @ L.T
        out.append((theta, np.linalg.inv(gamma * H)))
    return out


def _pair(d: int, seed: int, alpha=0.5, gamma=2.0, n=12):
    S_X, S_y = _data(n, d, seed)
    rng = np.random.default_rng(seed + 100)
    x = rng.normal(size=d)
    x /= np.linalg.norm(x)
    yz = 0.9
    mu, rho = neighbour_quantities(S_X, S_y, x, yz, alpha, gamma)
    return S_X, S_y, x, yz, alpha, gamma, mu, rho


# ----------------------------------------------------------------------------------------
# The rank-one reduction against direct computations
# ----------------------------------------------------------------------------------------


def _hockey_stick_1d(m0, s0, m1, s1, eps):
    """H_{e^eps}(N(m0, s0^2) || N(m1, s1^2)) by quadrature between the exact crossing points."""
    # log p - log q - eps = A t^2 + B t + C
    A = -0.5 / s0 ** 2 + 0.5 / s1 ** 2
    B = m0 / s0 ** 2 - m1 / s1 ** 2
    C = -0.5 * m0 ** 2 / s0 ** 2 + 0.5 * m1 ** 2 / s1 ** 2 - math.log(s0 / s1) - eps
    roots = sorted(r.real for r in np.roots([A, B, C]) if abs(r.imag) < 1e-12) if A != 0 else [-C / B]
    span = 60 * max(s0, s1)
    edges = [min(m0, m1) - span, *roots, max(m0, m1) + span]
    f = lambda t: stats.norm.pdf(t, m0, s0) - math.exp(eps) * stats.norm.pdf(t, m1, s1)  # noqa: E731
    total = 0.0
    for a, b in zip(edges[:-1], edges[1:]):
        if f(0.5 * (a + b)) > 0:
            total += integrate.quad(f, a, b, epsabs=1e-15, epsrel=1e-12, limit=400)[0]
    return total


@pytest.mark.parametrize("seed", [0, 1])
def test_hockey_stick_matches_quadrature_d1(seed):
    S_X, S_y, x, yz, alpha, gamma, mu, rho = _pair(1, seed)
    (m0, c0), (m1, c1) = _posteriors(S_X, S_y, x, yz, alpha, gamma)
    s0, s1 = math.sqrt(c0[0, 0]), math.sqrt(c1[0, 0])
    for eps in (0.0, 0.1, 0.5, 1.0):
        direct = (_hockey_stick_1d(m0[0], s0, m1[0], s1, eps), _hockey_stick_1d(m1[0], s1, m0[0], s0, eps))
        formula = ops_hockey_stick(eps, mu, rho)
        for which in (0, 1):
            assert float(formula[which]) == pytest.approx(direct[which], rel=1e-8, abs=1e-13), (eps, which)


def test_hockey_stick_matches_grid_integral_d2():
    S_X, S_y, x, yz, alpha, gamma, mu, rho = _pair(2, 3, alpha=0.3, gamma=3.0, n=8)
    (m0, c0), (m1, c1) = _posteriors(S_X, S_y, x, yz, alpha, gamma)
    P, Q = stats.multivariate_normal(m0, c0), stats.multivariate_normal(m1, c1)
    span = 9 * math.sqrt(max(np.linalg.eigvalsh(c0)[-1], np.linalg.eigvalsh(c1)[-1]))
    centre = (m0 + m1) / 2
    g = np.linspace(-span, span, 1201)
    T1, T2 = np.meshgrid(centre[0] + g, centre[1] + g, indexing="ij")
    pts = np.stack([T1, T2], axis=-1)
    pd, qd = P.pdf(pts), Q.pdf(pts)
    cell = (g[1] - g[0]) ** 2
    for eps in (0.0, 0.2, 0.7):
        for a, b, which in ((pd, qd, 0), (qd, pd, 1)):
            direct = float(np.maximum(a - math.exp(eps) * b, 0).sum() * cell)
            formula = float(ops_hockey_stick(eps, mu, rho)[which])
            assert formula == pytest.approx(direct, rel=2e-3, abs=1e-6), (eps, which, mu, rho)


def test_hockey_stick_matches_monte_carlo_d3():
    S_X, S_y, x, yz, alpha, gamma, mu, rho = _pair(3, 5, alpha=0.2, gamma=4.0, n=10)
    (m0, c0), (m1, c1) = _posteriors(S_X, S_y, x, yz, alpha, gamma)
    P, Q = stats.multivariate_normal(m0, c0), stats.multivariate_normal(m1, c1)
    rng = np.random.default_rng(7)
    n = 400_000
    draws_p = P.rvs(size=n, random_state=rng)
    draws_q = Q.rvs(size=n, random_state=rng)
    loss_p = P.logpdf(draws_p) - Q.logpdf(draws_p)  # log p/p' under p
    loss_q = Q.logpdf(draws_q) - P.logpdf(draws_q)  # log p'/p under p'
    for eps in (0.0, 0.3):
        for loss, which in ((loss_p, 0), (loss_q, 1)):
            samples = np.maximum(1 - np.exp(eps - loss), 0)
            mc, se = samples.mean(), samples.std() / math.sqrt(n)
            formula = float(ops_hockey_stick(eps, mu, rho)[which])
            assert formula > 1e-2
            assert abs(formula - mc) < 5 * se + 1e-4, (eps, which, formula, mc, se)


@pytest.mark.slow  # seconds per case, measured: the slow tier runs it
def test_renyi_closed_forms_match_quadrature():
    for mu, rho in ((0.05, 0.7), (0.3, 2.0), (0.01, 5.0)):
        p = stats.norm(rho, math.sqrt(mu))  # u under the posterior on S
        q = stats.norm(rho / (1 + mu), math.sqrt(mu / (1 + mu)))  # u under the posterior on S u z
        for alpha in (1.5, 2.0, 3.0):
            fwd, bwd = ops_renyi(alpha, mu, rho)

            def renyi(P, Q):
                f = lambda t: math.exp(alpha * P.logpdf(t) + (1 - alpha) * Q.logpdf(t))  # noqa: E731
                val, _ = integrate.quad(f, rho - 60, rho + 60, points=[rho / (1 + mu), rho], epsabs=0, epsrel=1e-13,
                                        limit=500)
                return math.log(val) / (alpha - 1)

            if alpha < 1 + 1 / mu:
                assert float(fwd) == pytest.approx(renyi(p, q), rel=1e-9, abs=1e-12)
            assert float(bwd) == pytest.approx(renyi(q, p), rel=1e-9, abs=1e-12)
    assert np.isinf(ops_renyi(3.0, 0.6, 1.0)[0])  # alpha >= 1 + 1/mu


# ----------------------------------------------------------------------------------------
# Validity of the epsilon forms
# ----------------------------------------------------------------------------------------

MU = np.logspace(-6, 0, 25)[:, None]
RHO = np.concatenate([[0.0], np.logspace(-3, 3, 25)])[None, :]


@pytest.mark.parametrize("delta", [1e-2, 1e-6, 1e-10, 1e-17])
def test_exact_and_safe_epsilon_are_valid_and_ordered(delta):
    exact = ops_epsilon_exact(MU, RHO, delta)
    safe = ops_epsilon_safe(MU, RHO, delta)
    assert (ops_delta(exact, MU, RHO) <= delta).all()
    assert (ops_delta(safe, MU, RHO) <= delta).all()
    assert (exact <= safe + 1e-12).all()
    # bisection is tight: 1% below the exact eps the profile exceeds delta (where eps is not tiny)
    big = exact > 1e-3
    assert (ops_delta(exact * 0.99, MU, RHO)[big] > delta).all()


@pytest.mark.parametrize("delta", [1e-2, 1e-6, 1e-10, 1e-17])
def test_exact_epsilon_is_monotone(delta):
    """Plugging upper bounds on (mu, rho) into eps_exact is valid only if it is non-decreasing."""
    exact = ops_epsilon_exact(MU, RHO, delta)
    assert (np.diff(exact, axis=0) >= -1e-12).all()
    assert (np.diff(exact, axis=1) >= -1e-12).all()


def test_reference_closed_form_is_not_a_valid_bound():
    """Wang's coded closed form: delta at its eps exceeds the nominal delta by >20x (design notes Sec. 3.4(a))."""
    ratio = ops_delta(ops_epsilon_wang(MU, RHO, 1e-6), MU, RHO) / 1e-6
    assert ratio.max() > 20
    assert ops_delta(ops_epsilon_wang(1.0, 0.0, 1e-6), 1.0, 0.0) > 10 * 1e-6


def test_epsilon_table_of_the_design_notes():
    """Sec. 3.4 table at delta = 1e-6: (mu, rho) -> (eps_W, eps_S, eps_exact)."""
    for mu, rho, w, s, e in ((1e-3, 3, 0.374, 0.530, 0.383), (1e-2, 3, 1.265, 1.806, 1.382), (0.1, 1, 2.025, 3.200, 2.312)):
        assert float(ops_epsilon_wang(mu, rho, 1e-6)) == pytest.approx(w, abs=1.5e-3)
        assert float(ops_epsilon_safe(mu, rho, 1e-6)) == pytest.approx(s, abs=1.5e-3)
        assert float(ops_epsilon_exact(mu, rho, 1e-6)) == pytest.approx(e, abs=1.5e-3)


def test_passes_agrees_with_epsilon_and_gamma_is_maximal():
    rng = np.random.default_rng(0)
    mu = 10 ** rng.uniform(-4, 0.3, 200)
    rho = 10 ** rng.uniform(-2, 2, 200)
    eps = ops_epsilon(mu, rho, 1e-8)
    assert (ops_passes(eps * (1 + 1e-9), mu, rho, 1e-8)).all()
    assert not ops_passes(eps * 0.98, mu, rho, 1e-8)[eps > 1e-3].any()
    assert (ops_epsilon(mu, rho, 1e-8, "safe") >= eps - 1e-12).all()
    g = ops_gamma(0.01, 2.0, 0.5, 1e-8)
    assert ops_passes(0.5, 0.01, math.sqrt(g) * 2.0, 1e-8)
    assert not ops_passes(0.5, 0.01, math.sqrt(g * 1.001) * 2.0, 1e-8)
    assert ops_gamma(1.0, 2.0, 0.01, 1e-8) == 0.0  # mu term alone exceeds eps: infeasible


# ----------------------------------------------------------------------------------------
# Data-dependent bounds over all neighbours
# ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("alpha", [0.05, 1.0, 10.0])
def test_local_bounds_cover_every_added_and_removed_record(alpha):
    x_bound, y_bound = 1.0, 1.0
    X, y = _data(30, 3, 11)
    X = np.vstack([X, X[:5] * 3.0])  # some rows at the norm bound after clipping
    y = np.append(y, -y[:5] * 5)
    X, y = clip_records(X, y, x_bound, y_bound)
    b = ops_local_bounds(X, y, alpha, x_bound, y_bound)
    rng = np.random.default_rng(1)
    w, V = np.linalg.eigh(X.T @ X)
    added = [(V[:, 0], s * y_bound) for s in (-1.0, 1.0)]  # adversarial: along the weakest direction
    for _ in range(60):
        z = rng.normal(size=3)
        added.append((z / np.linalg.norm(z) * rng.uniform(0.2, 1.0), rng.uniform(-1, 1)))
    theta_X, _ = ridge_solution(X, y, alpha)
    u_X = math.log(y_bound + x_bound * np.linalg.norm(theta_X))
    for xz, yz in added:  # X' = X + z: the smaller set is X
        mu, r = neighbour_quantities(X, y, xz, yz, alpha)
        assert mu <= b.mu_bound * (1 + 1e-12) and r <= b.residual_bound * (1 + 1e-12)
        theta2, _ = ridge_solution(np.vstack([X, xz]), np.append(y, yz), alpha)
        assert abs(math.log(y_bound + x_bound * np.linalg.norm(theta2)) - u_X) <= b.log_norm_sensitivity + 1e-12
    for i in range(len(y)):  # X' = X - z_i: the smaller set is X'
        S_X, S_y = np.delete(X, i, axis=0), np.delete(y, i)
        mu, r = neighbour_quantities(S_X, S_y, X[i], y[i], alpha)
        assert mu <= b.mu_bound * (1 + 1e-12) and r <= b.residual_bound * (1 + 1e-12)
        theta2, _ = ridge_solution(S_X, S_y, alpha)
        assert abs(math.log(y_bound + x_bound * np.linalg.norm(theta2)) - u_X) <= b.log_norm_sensitivity + 1e-12


def test_lambda_min_sensitivity_is_weyl():
    X, _ = _data(25, 3, 2)
    lam = np.linalg.eigvalsh(X.T @ X)[0]
    rng = np.random.default_rng(3)
    for _ in range(100):
        z = rng.normal(size=3)
        z /= np.linalg.norm(z)
        assert 0 <= np.linalg.eigvalsh(X.T @ X + np.outer(z, z))[0] - lam <= 1.0 + 1e-12
    for i in range(len(X)):
        Xr = np.delete(X, i, axis=0)
        assert 0 <= lam - np.linalg.eigvalsh(Xr.T @ Xr)[0] <= 1.0 + 1e-12


# ----------------------------------------------------------------------------------------
# Sampler and clipping
# ----------------------------------------------------------------------------------------


def test_sampler_covariance_is_inverse_of_gamma_h():
    X, y = _data(6, 3, 4)
    X[:, 1] *= 3  # a non-normal Cholesky factor
    alpha, gamma = 0.3, 2.5
    theta, L = ridge_solution(X, y, alpha)
    draws = sample_ops(theta, L, gamma, np.random.default_rng(0), size=1_000_000)
    emp = np.cov(draws.T)
    target = np.linalg.inv(L @ L.T) / gamma
    assert np.linalg.norm(emp - target) / np.linalg.norm(target) < 0.01
    assert np.abs(draws.mean(0) - theta).max() < 5 * math.sqrt(target.diagonal().max() / 1e6)
    R = L.T  # MATLAB chol: R'R = H; the reference sampler (R')\z has covariance (R R')^-1 / gamma
    wrong = np.linalg.inv(R @ R.T) / gamma
    assert np.linalg.norm(emp - wrong) / np.linalg.norm(wrong) > 0.05


def test_clipping_rule():
    X = np.array([[3.0, 4.0], [0.3, 0.4], [0.0, 0.0]])
    y = np.array([5.0, -0.5, -7.0])
    Xc, yc = clip_records(X, y, 1.0, 2.0)
    assert np.allclose(Xc, [[0.6, 0.8], [0.3, 0.4], [0.0, 0.0]])
    assert np.allclose(yc, [2.0, -0.5, -2.0])
    assert ops.GUARD[-1] == 1.0
