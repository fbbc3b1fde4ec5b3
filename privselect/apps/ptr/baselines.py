"""Baselines for private linear regression, with corrected calibrations.

* [`OutputPerturbationRegressor`][privselect.apps.ptr.baselines.OutputPerturbationRegressor]: Chaudhuri, Monteleoni, Sarwate (2011, Alg. 1) adapted
  to ridge regression on a public ball ||theta|| <= theta_bound;
* [`AdaOPSRegressor`][privselect.apps.ptr.baselines.AdaOPSRegressor]: Wang (2018, AdaOPS) rebuilt on the corrected OPS-PTR components:
  Laplace bounds with exact one-sided margins, the sensitivity of log(B_y + B_x ||theta_hat||)
  including the removed-record case, and gamma solved from the exact OPS profile (the reference
  code's closed form is not a valid bound, [`ops_epsilon_wang`][privselect.apps.ptr.ops.ops_epsilon_wang]);
* [`NonPrivateRidge`][privselect.apps.ptr.baselines.NonPrivateRidge]: the non-private reference (same clipping rule, no privacy).

AdaSSP and its variants are in [`ssp`][privselect.apps.ptr.ssp]. All share the clipping rule and surface of [`privselect.apps.ptr.regression`][privselect.apps.ptr.regression]; all privacy is for
add/remove neighbours.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import linalg, optimize

from ... import _validation as check
from ...mechanisms import ApproxDP, Gaussian, PureDP
from .gptr import LaplaceBound, analytic_gaussian_sigma
from .ops import ops_gamma, ops_mu_bound, ridge_solution, sample_ops
from .regression import MODES, PrivateLinearRegressor, SingleReleaseCertified, _delta_split

__all__ = ["OutputPerturbationRegressor", "AdaOPSRegressor", "NonPrivateRidge",
           "output_perturbation_alpha", "constrained_ridge"]


# ----------------------------------------------------------------------------------------
# Output perturbation
# ----------------------------------------------------------------------------------------


def constrained_ridge(X: np.ndarray, y: np.ndarray, alpha: float, radius: float) -> np.ndarray:
    """argmin over ||theta|| <= radius of ||y - X theta||^2/2 + alpha ||theta||^2/2.

    KKT: theta(nu) = (X^T X + (alpha + nu) I)^-1 X^T y with nu >= 0 the smallest value giving
    ||theta(nu)|| <= radius (the norm decreases in nu); found by root finding on the eigenbasis.
    """
    w, V = np.linalg.eigh(X.T @ X)
    b = V.T @ (X.T @ y)
    norm = lambda nu: float(np.sqrt(np.sum((b / (w + alpha + nu)) ** 2)))  # noqa: E731
    if norm(0.0) <= radius:
        return V @ (b / (w + alpha))
    hi = float(np.linalg.norm(b)) / radius  # norm(hi) <= ||b||/(alpha + hi) < radius
    nu = optimize.brentq(lambda v: norm(v) - radius, 0.0, hi, xtol=1e-14, rtol=1e-13)
    theta = V @ (b / (w + alpha + nu))
    n = np.linalg.norm(theta)
    return theta if n <= radius else theta * (radius / n)


def output_perturbation_alpha(n_public: int, d: int, epsilon: float, delta: float | None = None,
                              x_bound: float = 1.0, y_bound: float = 1.0, theta_bound: float = 1.0) -> float:
    """A data-independent ridge strength for output perturbation (a utility heuristic).

    Minimises d (noise std)^2 + (theta_bound * alpha / (alpha + n_public x_bound^2 / (2 d)))^2 over
    alpha: the squared norm of the noise against the shrinkage of an isotropic proxy design with
    ``n_public`` records. Uses public quantities only.
    """
    alphas = np.logspace(-3, 7, 2001) * x_bound ** 2
    sens = x_bound * (y_bound + x_bound * theta_bound) / alphas
    if delta is None:
        noise2 = (d * (d + 1)) * (sens / epsilon) ** 2  # E||b||^2 for the Gamma(d, Delta/eps) norm
    else:
        noise2 = d * (sens * analytic_gaussian_sigma(epsilon, delta)) ** 2
    bias2 = (theta_bound * alphas / (alphas + n_public * x_bound ** 2 / (2 * d))) ** 2
    return float(alphas[np.argmin(noise2 + bias2)])


class OutputPerturbationRegressor(SingleReleaseCertified, PrivateLinearRegressor):
    """Output perturbation (Chaudhuri, Monteleoni, Sarwate 2011, Alg. 1) for ridge regression.

    Computes theta_R = argmin_{||theta|| <= theta_bound} ||y - X theta||^2/2 + alpha ||theta||^2/2 and
    releases theta_R + b. On the ball the squared loss of one record is L-Lipschitz with
    L = B_x (B_y + B_x theta_bound), and the objective is alpha-strongly convex, so adding or
    removing one record moves theta_R by at most Delta = L / alpha (CMS11, Lemma 7, sum form,
    add/remove). Noise:

    * ``delta=None``: density proportional to exp(-(eps/Delta) ||b||), i.e. ||b|| ~ Gamma(d, Delta/eps)
      with a uniform direction (CMS11): eps-DP (`privacy` is ``PureDP(eps)``);
    * otherwise: N(0, (Delta sigma_G(eps, delta))^2 I) with the analytic Gaussian multiplier
      (Balle, Wang 2018): (eps, delta)-DP.

    ``alpha`` and ``theta_bound`` are public hyperparameters (see [`output_perturbation_alpha`][privselect.apps.ptr.baselines.output_perturbation_alpha]).
    Fitted: ``coef_``, ``noise_scale_`` (Gamma scale Delta/eps, or the Gaussian standard deviation).
    Intercept: none (``intercept_ = 0``); append a constant feature and map labels to a public range centred at 0.
    """

    def __init__(self, epsilon: float = 1.0, delta: float | None = 1e-6, alpha: float = 10.0,
                 theta_bound: float = 1.0, x_bound: float | None = None, y_bound: float | None = None, random_state=None) -> None:
        self.epsilon = epsilon
        self.delta = delta
        self.alpha = alpha
        self.theta_bound = theta_bound
        self.x_bound = x_bound
        self.y_bound = y_bound
        self.random_state = random_state

    def sensitivity(self) -> float:
        """Add/remove L2 sensitivity Delta = B_x (B_y + B_x theta_bound) / alpha of the constrained minimiser."""
        x_bound, y_bound = self._bounds()
        return x_bound * (y_bound + x_bound * self.theta_bound) / self.alpha

    def noise_scale(self) -> float:
        """Gamma scale Delta/eps (pure) or Gaussian standard deviation Delta sigma_G(eps, delta)."""
        if self.delta is None:
            return self.sensitivity() / self.epsilon
        return self.sensitivity() * analytic_gaussian_sigma(self.epsilon, self.delta)

    @property
    def privacy(self):
        if self.delta is None:
            return PureDP(self.epsilon)
        return Gaussian(analytic_gaussian_sigma(self.epsilon, self.delta), sensitivity=self.sensitivity())

    def fit(self, X, y):
        self._check_common()
        check.positive("alpha", self.alpha)
        check.positive("theta_bound", self.theta_bound)
        Xc, yc = self._prepare(X, y)
        d = Xc.shape[1]
        rng = self._rng()
        theta = constrained_ridge(Xc, yc, self.alpha, self.theta_bound)
        scale = self.noise_scale()
        if self.delta is None:
            direction = rng.standard_normal(d)
            direction /= np.linalg.norm(direction)
            noise = rng.gamma(shape=d, scale=scale) * direction
        else:
            noise = rng.normal(0.0, scale, size=d)
        self.noise_scale_ = scale
        self.coef_ = theta + noise
        self.intercept_ = 0.0
        return self


# ----------------------------------------------------------------------------------------
# AdaOPS
# ----------------------------------------------------------------------------------------


class AdaOPSRegressor(SingleReleaseCertified, PrivateLinearRegressor):
    """AdaOPS (Wang 2018) on corrected components: (epsilon, delta)-DP, add/remove neighbours.

    Budget as in the reference code: eps/4 for a private lower bound on lambda_min(X^T X), eps/4
    for a private upper bound on u(X) = log(B_y + B_x ||theta_hat||), eps/2 for OPS; delta split as
    delta_ops = delta/2, p_1 = delta/8, p_2 = delta/4. Steps:

    1. lambda~ = Laplace lower bound of lambda_min (sensitivity B_x^2, failure p_1);
    2. ridge alpha from lambda~ (utility rule, below), subject to ops_epsilon(B_x^2/h~, 0) <= eps_ops/2;
    3. u~ = Laplace upper bound of u(X) with sensitivity log(1 + B_x^2/h~), h~ = max(alpha, alpha + lambda~ - B_x^2);
    4. gamma = the largest value with ops_epsilon(B_x^2/h~, sqrt(gamma) e^{u~}(1 + B_x^2/h~), delta_ops) <= eps_ops;
    5. release theta ~ N(theta_hat, (gamma H)^-1).

    This is OPS-PTR with gamma solved from the released bounds instead of proposed: the test
    always passes by construction, and the privacy argument of
    [`OPSPTR`][privselect.apps.ptr.regression.OPSPTR] applies unchanged, giving (eps, delta_ops + 2 p_1 + p_2)
    = (eps, delta). Utility rule for alpha (Wang's AdaOPS objective, our constants): minimise
    C1 B_x^4 (1 + B_x^2/(t + lambda~))^(2 C2)/(t + lambda~) + t over t >= the privacy floor, with
    C1 = (d/2 + sqrt(d log 20) + log 20) log(2/delta_ops)/(eps_ops/2)^2 and C2 = ln(1/(2 p_2))/eps_2.
    Fitted: ``coef_``, ``alpha_``, ``gamma_``, ``lambda_lower_``, ``log_norm_upper_`` (private releases).
    Intercept: none (``intercept_ = 0``); append a constant feature and map labels to a public range centred at 0.
    """

    def __init__(self, epsilon: float = 1.0, delta: float = 1e-6, x_bound: float | None = None, y_bound: float | None = None,
                 mode: str = "exact", random_state=None) -> None:
        self.epsilon = epsilon
        self.delta = delta
        self.x_bound = x_bound
        self.y_bound = y_bound
        self.mode = mode
        self.random_state = random_state

    @property
    def privacy(self) -> ApproxDP:
        return ApproxDP(self.epsilon, self.delta)

    def _budget(self):
        eps1, eps2, eps_ops = self.epsilon / 4, self.epsilon / 4, self.epsilon / 2
        delta_ops, p1, p2 = _delta_split(self.delta, True)
        return eps1, eps2, eps_ops, delta_ops, p1, p2

    def fit(self, X, y):
        self._check_common()
        x_bound, y_bound = self._bounds()
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {self.mode!r}")
        Xc, yc = self._prepare(X, y)
        d = Xc.shape[1]
        bx2 = x_bound ** 2
        rng = self._rng()
        eps1, eps2, eps_ops, delta_ops, p1, p2 = self._budget()
        lam_min = float(max(np.linalg.eigvalsh(Xc.T @ Xc)[0], 0.0))
        lam_lower = max(float(LaplaceBound(bx2, eps1, p1, "lower").release(lam_min, rng)), 0.0)
        # privacy floor: h~ >= B_x^2 / mu_target makes the rho-free part of eps_ops at most eps_ops / 2
        h_floor = bx2 / ops_mu_bound(eps_ops / 2, delta_ops, self.mode)
        floor = max(h_floor - max(lam_lower - bx2, 0.0), 1e-12 * bx2)
        c1 = (d / 2 + math.sqrt(d * math.log(20)) + math.log(20)) * math.log(2 / delta_ops) / (eps_ops / 2) ** 2
        c2 = math.log(1 / (2 * p2)) / eps2
        t = floor * np.logspace(0, 8, 801)
        objective = c1 * bx2 ** 2 * np.exp(2 * c2 * np.log1p(bx2 / (t + lam_lower))) / (t + lam_lower) + t
        alpha = float(t[np.argmin(objective)])
        h = max(alpha, alpha + lam_lower - bx2)
        theta, chol = ridge_solution(Xc, yc, alpha)
        log_norm = math.log(y_bound + x_bound * float(np.linalg.norm(theta)))
        u_upper = float(LaplaceBound(math.log1p(bx2 / h), eps2, p2, "upper").release(log_norm, rng))
        gamma = ops_gamma(bx2 / h, math.exp(u_upper) * (1 + bx2 / h), eps_ops, delta_ops, self.mode)
        self.alpha_, self.gamma_ = alpha, gamma
        self.lambda_lower_, self.log_norm_upper_ = lam_lower, u_upper
        self.coef_ = sample_ops(theta, chol, gamma, rng) if gamma > 0 else np.zeros(d)
        self.intercept_ = 0.0
        return self


class NonPrivateRidge(PrivateLinearRegressor):
    """Non-private ridge (alpha -> 0: least squares) with the same clipping rule: a reference, not DP.

    Intercept: none (``intercept_ = 0``); append a constant feature and map labels to a public range centred at 0.
    """

    def __init__(self, alpha: float = 1e-6, x_bound: float | None = None, y_bound: float | None = None) -> None:
        self.alpha = alpha
        self.x_bound = x_bound
        self.y_bound = y_bound

    def fit(self, X, y):
        check.positive("alpha", self.alpha)
        self._check_bounds()
        Xc, yc = self._prepare(X, y)
        d = Xc.shape[1]
        self.coef_ = linalg.solve(Xc.T @ Xc + self.alpha * np.eye(d), Xc.T @ yc, assume_a="pos")
        self.intercept_ = 0.0
        return self
