"""Sufficient-statistics perturbation (SSP) for ridge regression: AdaSSP, its two-release form,
Wang's printed AdaSSP, a private ridge choice, and the trivial predictor.

* [`AdaSSPRegressor`][privselect.apps.ptr.ssp.AdaSSPRegressor]: Wang (2018, Alg. 2) with the Gaussian
  releases composed exactly; ``release_lambda_min`` chooses the three-release form (Wang's:
  lambda_min(X^T X), X^T X, X^T y) or the two-release form (X^T X, X^T y only, lambda~ = 0), by a
  documented rule on public quantities when ``"auto"`` ([`releases_lambda_min`][privselect.apps.ptr.ssp.releases_lambda_min]);
* [`AdaSSPWangRegressor`][privselect.apps.ptr.ssp.AdaSSPWangRegressor]: Wang's printed Alg. 2 (calibration
  sqrt(log(6/delta))/(eps/3) per release), kept as the published baseline; its `privacy` is the
  truthful description of what it releases (three Gaussians), whose exact profile is in fact below
  the nominal (eps, delta) (more noise than needed);
* [`SSPRidgeSelectionRegressor`][privselect.apps.ptr.ssp.SSPRidgeSelectionRegressor]: the two SSP releases
  plus a private choice of the ridge (and of the trivial predictor) by the exponential mechanism
  on the clipped in-sample loss, one (eps, delta) certificate;
* [`TrivialRegressor`][privselect.apps.ptr.ssp.TrivialRegressor]: predicts 0 (the centre of the label range).

Intercept: none of these fits one (centring with data means would leak). Labels mapped to a
public range centred at 0 make "predict 0" the public centre; append a constant feature to let
the model fit an intercept ([`load_table`][privselect.apps.ptr.table.load_table] does). Privacy is for
add/remove neighbours and is a property of the parameters alone.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import optimize, special

from ... import _validation as check
from ...accounting import privacy_profile
from ...mechanisms import Gaussian, PureDP, compose
from ...memo import quiet_cache
from .gptr import analytic_gaussian_sigma
from .regression import PrivateLinearRegressor, SingleReleaseCertified

__all__ = ["AdaSSPRegressor", "AdaSSPWangRegressor", "SSPRidgeSelectionRegressor", "TrivialRegressor",
           "releases_lambda_min", "ssp_ridge", "pure_dp_gdp_mu", "exponential_mechanism_probabilities", "calibrate_ssp", "DEFAULT_RIDGE_MULTIPLIERS", "LAMBDA_MIN_SHARE",
           "MIN_SELECTION_STRENGTH"]

#: ``release_lambda_min="auto"``: lambda_min(X^T X) is taken to be at most this share of its public
#: upper bound n_max B_x^2 / d (tr(X^T X) / d) when deciding whether its release can pay.
LAMBDA_MIN_SHARE = 0.01

#: `SSPRidgeSelectionRegressor` selects only if eps_score x n_max reaches this (see its ``selects``).
MIN_SELECTION_STRENGTH = 25.0

#: Ridge candidates of `SSPRidgeSelectionRegressor`, as multiples of Wang's two-release ridge.
DEFAULT_RIDGE_MULTIPLIERS: tuple[float, ...] = tuple(2.0 ** k for k in range(-6, 5))


@quiet_cache(maxsize=256)
def _sigma_g(epsilon: float, delta: float) -> float:
    """`analytic_gaussian_sigma`, cached (data-independent; called on every fit)."""
    return analytic_gaussian_sigma(epsilon, delta)


def ssp_ridge(d: int, sigma_xtx: float, rho: float = 0.05) -> float:
    """Wang's (2018, Alg. 2) ridge before the lambda_min correction: sqrt(d log(2 d^2 / rho)) sigma_XtX."""
    return math.sqrt(d * math.log(2 * d * d / rho)) * sigma_xtx


def releases_lambda_min(d: int, epsilon: float, delta: float, n_max: int | None, x_bound: float = 1.0,
                        rho: float = 0.05) -> bool:
    """The public rule of ``release_lambda_min="auto"``: release lambda_min only where it can pay.

    The lambda_min release can lower the ridge by at most lambda_min(X^T X) <= tr(X^T X)/d <=
    n_max B_x^2 / d, and costs a third of the budget (every noise scale grows by sqrt(3/2)). With
    rows scaled into a public ball lambda_min is usually a small share of that bound (it is ~0 on
    every data set of ``experiments/linear_regression.py``), so: three releases iff a public
    ``n_max`` is given and `LAMBDA_MIN_SHARE` n_max B_x^2 / d is at least the two-release ridge
    (`ssp_ridge` at the two-release noise). Depends on d, epsilon, delta, n_max, B_x, rho only.
    """
    if n_max is None:
        return False
    sigma2 = x_bound ** 2 * math.sqrt(2.0) * _sigma_g(float(epsilon), float(delta))
    return LAMBDA_MIN_SHARE * n_max * x_bound ** 2 / d >= ssp_ridge(d, sigma2, rho)


def _solve(A: np.ndarray, b: np.ndarray) -> np.ndarray:
    try:
        return np.linalg.solve(A, b)
    except np.linalg.LinAlgError:
        return np.linalg.lstsq(A, b, rcond=None)[0]


def _noisy_gram(xtx: np.ndarray, scale: float, rng: np.random.Generator, symmetrise: bool) -> np.ndarray:
    """X^T X + noise: (Z + Z^T)/2 scaled (symmetrised full release) or an upper triangle mirrored (Wang's printed)."""
    z = rng.standard_normal(xtx.shape)
    noise = (z + z.T) / 2 if symmetrise else np.triu(z) + np.triu(z, 1).T
    return xtx + scale * noise


class TrivialRegressor(SingleReleaseCertified, PrivateLinearRegressor):
    """The trivial predictor: coef_ = 0, i.e. predicts 0, the centre of a label range mapped to [-y_bound, y_bound].

    Reads nothing from the data but its shape: 0-DP. A candidate wherever the library selects
    among regressors (with labels centred by a public constant it is the intercept-only model).
    ``random_state`` is accepted and unused, so it fits every candidate interface.
    """

    def __init__(self, x_bound: float | None = None, y_bound: float | None = None, random_state=None) -> None:
        self.x_bound = x_bound
        self.y_bound = y_bound
        self.random_state = random_state

    @property
    def privacy(self):
        """``PureDP(0)``: the output does not depend on the records' values."""
        return PureDP(0.0)

    def fit(self, X, y):
        self._check_bounds()
        Xc, _ = self._prepare(X, y)
        self.coef_ = np.zeros(Xc.shape[1])
        self.intercept_ = 0.0
        return self


class AdaSSPRegressor(SingleReleaseCertified, PrivateLinearRegressor):
    """AdaSSP (Wang 2018, Alg. 2) with exact Gaussian composition, in its three- or two-release form.

    Releases (add/remove sensitivities): lambda_min(X^T X) (B_x^2, Weyl; three-release form only),
    X^T X (B_x^2 in Frobenius norm; the noise matrix is symmetrised, post-processing) and X^T y
    (B_x B_y). Each of the r releases gets GDP parameter mu/sqrt(r), mu = 1/sigma_G(eps, delta)
    (Balle, Wang 2018, Thm 8), so together they are exactly mu-GDP (Dong, Roth, Su 2022, Cor. 3.3)
    and (eps, delta)-DP: `privacy` is that composition of Gaussians.

    ``release_lambda_min``: ``True`` (Wang's three releases), ``False`` (two releases, lambda~ = 0,
    the budget split between X^T X and X^T y) or ``"auto"`` (the public rule
    [`releases_lambda_min`][privselect.apps.ptr.ssp.releases_lambda_min], which needs ``n_max``).

    Utility only (no privacy effect): lambda~ = max(lambda_min + sigma_1 Z + sigma_1 Phi^-1(rho), 0),
    ridge lambda = max(0, s sqrt(d log(2 d^2/rho)) sigma_2 - lambda~) with s = ``ridge_scale`` (1 is
    Wang's rule), theta = (X^T X~ + lambda I)^-1 X^T y~. No intercept (see the module docstring).
    Fitted: ``coef_``, ``noise_scales_`` = (sigma_1 or 0, sigma_2, sigma_3), ``alpha_`` (the ridge),
    ``lambda_min_released_``.
    """

    def __init__(self, epsilon: float = 1.0, delta: float = 1e-6, rho: float = 0.05, ridge_scale: float = 1.0,
                 release_lambda_min: bool | str = "auto", n_max: int | None = None, x_bound: float | None = None,
                 y_bound: float | None = None, random_state=None) -> None:
        self.epsilon = epsilon
        self.delta = delta
        self.rho = rho
        self.ridge_scale = ridge_scale
        self.release_lambda_min = release_lambda_min
        self.n_max = n_max
        self.x_bound = x_bound
        self.y_bound = y_bound
        self.random_state = random_state

    def _three_releases(self, d: int | None) -> bool:
        choice = self.release_lambda_min
        if choice == "auto":
            if self.n_max is None:
                return False
            n_max = check.positive_int("n_max", self.n_max)
            if d is None:
                raise ValueError("release_lambda_min='auto' with n_max depends on d: call fit first")
            return releases_lambda_min(d, self.epsilon, self.delta, n_max, self._bounds()[0], self.rho)
        if choice is True or choice is False:
            return choice
        raise ValueError(f"release_lambda_min must be True, False or 'auto', got {choice!r}")

    def noise_scales(self, d: int | None = None) -> tuple[float, float, float]:
        """(sigma_lambda_min or 0, sigma_XtX, sigma_Xty): sensitivity x sqrt(r) sigma_G(eps, delta), r releases."""
        x_bound, y_bound = self._bounds()
        three = self._three_releases(d)
        multiplier = math.sqrt(3.0 if three else 2.0) * _sigma_g(float(self.epsilon), float(self.delta))
        return (x_bound ** 2 * multiplier if three else 0.0, x_bound ** 2 * multiplier, x_bound * y_bound * multiplier)

    def privacy_for(self, d: int | None):
        """The composition of the Gaussian releases made on d features (exactly (eps, delta)-DP).

        ``d=None`` (not fitted) is accepted where the form does not depend on d; otherwise it raises.
        """
        x_bound, y_bound = self._bounds()
        three = self._three_releases(d)
        m = math.sqrt(3.0 if three else 2.0) * _sigma_g(float(self.epsilon), float(self.delta))
        parts = [Gaussian(m, sensitivity=x_bound ** 2), Gaussian(m, sensitivity=x_bound * y_bound)]
        return compose(Gaussian(m, sensitivity=x_bound ** 2), *parts) if three else compose(*parts)

    @property
    def privacy(self):
        """`privacy_for` the fitted d (or any d when the form does not depend on it)."""
        d = getattr(self, "n_features_in_", None)
        return self.privacy_for(d)

    def release_statistics(self, X: np.ndarray, y: np.ndarray, rng: np.random.Generator):
        """The private releases on clipped data: (lambda~ or 0, X^T X~, X^T y~).

        lambda~ = max(lambda_min + sigma_1 Z + sigma_1 Phi^-1(rho), 0) (a lower bound with probability
        about 1 - rho; utility only; three-release form), X^T X~ = X^T X + sigma_2 (Z + Z^T)/2,
        X^T y~ = X^T y + sigma_3 z.
        """
        d = X.shape[1]
        s1, s2, s3 = self.noise_scales(d)
        xtx = X.T @ X
        lam_lower = 0.0
        if s1 > 0:
            lam_min = float(max(np.linalg.eigvalsh(xtx)[0], 0.0))
            lam_lower = max(lam_min + s1 * rng.standard_normal() + s1 * float(special.ndtri(self.rho)), 0.0)
        return lam_lower, _noisy_gram(xtx, s2, rng, symmetrise=True), X.T @ y + s3 * rng.standard_normal(d)

    def fit(self, X, y):
        self._fit_into(self, X, y)
        return self

    def _fit_into(self, target: PrivateLinearRegressor, X, y):
        """Fit with this estimator's parameters, storing the fitted attributes on ``target``."""
        self._check_common()
        rho = check.open_unit("rho", self.rho)
        scale = check.positive("ridge_scale", self.ridge_scale)
        Xc, yc = target._prepare(X, y)
        d = Xc.shape[1]
        s1, s2, s3 = self.noise_scales(d)
        lam_lower, xtx_noisy, xty_noisy = self.release_statistics(Xc, yc, self._rng())
        alpha = max(0.0, scale * ssp_ridge(d, s2, rho) - lam_lower)
        target.noise_scales_ = (s1, s2, s3)
        target.lambda_min_released_ = s1 > 0
        target.alpha_ = alpha
        target.coef_ = _solve(xtx_noisy + alpha * np.eye(d), xty_noisy)
        target.intercept_ = 0.0
        return target


class AdaSSPWangRegressor(SingleReleaseCertified, PrivateLinearRegressor):
    """Wang's printed AdaSSP (2018, Alg. 2), the published baseline (not privselect's calibration).

    Per release sigma = sqrt(log(6/delta))/(eps/3) x sensitivity (B_x^2, B_x^2, B_x B_y);
    lambda~ = max(lambda_min(X^T X) + sigma_1 Z - B_x^2 log(6/delta)/(eps/3), 0);
    lambda = max(0, sqrt(d log(6/delta) log(2 d^2/rho)) B_x^2/(eps/3) - lambda~); X^T X~ = X^T X +
    sigma_2 Z with Z symmetric, its upper triangle i.i.d. N(0, 1); X^T y~ = X^T y + sigma_3 z;
    theta = (X^T X~ + lambda I)^-1 X^T y~.

    `privacy` describes exactly what is released: three Gaussians with noise multiplier
    sqrt(log(6/delta))/(eps/3). Each alone misses (eps/3, delta/3) for eps >~ 0.5 (design notes
    Sec. 9.1), yet their exact composition is below the nominal guarantee (at delta = 1e-6:
    eps 0.60 for nominal 1, 7.6 for nominal 10): ``privacy_profile(est.privacy)`` gives it. The
    surplus noise is why `AdaSSPRegressor` beats it. No intercept.
    """

    def __init__(self, epsilon: float = 1.0, delta: float = 1e-6, rho: float = 0.05, x_bound: float | None = None,
                 y_bound: float | None = None, random_state=None) -> None:
        self.epsilon = epsilon
        self.delta = delta
        self.rho = rho
        self.x_bound = x_bound
        self.y_bound = y_bound
        self.random_state = random_state

    def noise_multiplier(self) -> float:
        """sqrt(log(6/delta)) / (epsilon/3), Wang's per-release multiplier."""
        return math.sqrt(math.log(6 / self.delta)) / (self.epsilon / 3)

    @property
    def privacy(self):
        x_bound, y_bound = self._bounds()
        m = self.noise_multiplier()
        return compose(Gaussian(m, sensitivity=x_bound ** 2), Gaussian(m, sensitivity=x_bound ** 2),
                       Gaussian(m, sensitivity=x_bound * y_bound))

    def release_statistics(self, X: np.ndarray, y: np.ndarray, rng: np.random.Generator):
        """The three printed releases on clipped data: (lambda~, X^T X~, X^T y~)."""
        x_bound, y_bound = self._bounds()
        m, bx2 = self.noise_multiplier(), x_bound ** 2
        xtx = X.T @ X
        lam_min = float(max(np.linalg.eigvalsh(xtx)[0], 0.0))
        shift = bx2 * math.log(6 / self.delta) / (self.epsilon / 3)
        lam_lower = max(lam_min + m * bx2 * rng.standard_normal() - shift, 0.0)
        xtx_noisy = _noisy_gram(xtx, m * bx2, rng, symmetrise=False)
        return lam_lower, xtx_noisy, X.T @ y + m * x_bound * y_bound * rng.standard_normal(X.shape[1])

    def fit(self, X, y):
        self._check_common()
        x_bound, _ = self._bounds()
        rho = check.open_unit("rho", self.rho)
        Xc, yc = self._prepare(X, y)
        d = Xc.shape[1]
        lam_lower, xtx_noisy, xty_noisy = self.release_statistics(Xc, yc, self._rng())
        log6 = math.log(6 / self.delta)
        alpha = max(0.0, math.sqrt(d * log6 * math.log(2 * d * d / rho)) * x_bound ** 2 / (self.epsilon / 3)
                    - lam_lower)
        self.alpha_ = alpha
        self.coef_ = _solve(xtx_noisy + alpha * np.eye(d), xty_noisy)
        self.intercept_ = 0.0
        return self


# ----------------------------------------------------------------------------------------
# SSP with a privately chosen ridge
# ----------------------------------------------------------------------------------------


def pure_dp_gdp_mu(epsilon: float) -> float:
    """The smallest mu with every eps-DP mechanism mu-GDP: mu = 2 Phi^-1(e^eps / (1 + e^eps)).

    The trade-off curve of (eps, 0)-DP is max(0, 1 - e^eps a, e^-eps (1 - a)) (Dong, Roth, Su
    2022, Prop. 2.5) with its kink at a* = 1/(1 + e^eps) on the diagonal; the convex G_mu lies below
    that piecewise-linear curve iff G_mu(a*) <= a*, i.e. Phi^-1(1 - a*) - mu <= -Phi^-1(1 - a*).
    """
    return 2.0 * float(special.ndtri(special.expit(check.positive("epsilon", epsilon))))


def exponential_mechanism_probabilities(scores, epsilon: float, sensitivity: float, prior=None) -> np.ndarray:
    """P(g) proportional to prior_g exp(-epsilon s_g / sensitivity): the exponential mechanism for losses s_g.

    epsilon-DP when adding or removing a record moves every s_g by a value in [0, sensitivity]
    (monotone losses; McSherry, Talwar 2007; Dwork, Roth 2014, Thm 3.10 and the remark after it),
    for any fixed ``prior`` (default uniform).
    """
    scores = np.asarray(scores, dtype=float)
    logits = -epsilon * scores / sensitivity
    if prior is not None:
        with np.errstate(divide="ignore"):
            logits = logits + np.log(np.asarray(prior, dtype=float))
    logits -= logits.max()
    weights = np.exp(logits)
    return weights / weights.sum()


def _score_epsilon(mu: float) -> float:
    """Inverse of `pure_dp_gdp_mu`: the eps whose eps-DP is mu-GDP."""
    return float(special.log_ndtr(mu / 2) - special.log_ndtr(-mu / 2))


@quiet_cache(maxsize=256)
def calibrate_ssp(epsilon: float, delta: float, pure_shares: tuple[float, ...], x_bound: float = 1.0,
                  y_bound: float = 1.0) -> tuple[float, tuple[float, ...]]:
    """Two SSP Gaussian releases plus pure-DP steps, calibrated so the certified epsilon(delta) is ``epsilon``.

    Returns (noise multiplier m of each statistics release, the pure steps' epsilons). Pure step i
    gets GDP share sqrt(pure_shares[i]) mu, turned into a pure epsilon that is at most that mu-GDP
    (`pure_dp_gdp_mu`), the Gaussians the rest; the overall mu is then raised by root finding on the
    accountant's certified epsilon(delta) of compose(Gaussian(m, B_x^2), Gaussian(m, B_x B_y),
    PureDP(eps_1), ...) (never above ``epsilon``).
    """
    rest = 1.0 - sum(pure_shares)
    if not (0 < rest <= 1 and all(share > 0 for share in pure_shares)):
        raise ValueError(f"pure_shares must be positive with sum < 1, got {pure_shares!r}")

    def parts(mu: float) -> tuple[float, tuple[float, ...]]:
        return math.sqrt(2.0) / (mu * math.sqrt(rest)), tuple(_score_epsilon(mu * math.sqrt(s)) for s in pure_shares)

    def excess(log_mu: float) -> float:
        m, pure = parts(math.exp(log_mu))
        mechanism = compose(Gaussian(m, sensitivity=x_bound ** 2), Gaussian(m, sensitivity=x_bound * y_bound),
                            *(PureDP(e) for e in pure))
        return float(privacy_profile(mechanism).epsilon(delta)) - epsilon

    lo = math.log(1.0 / _sigma_g(float(epsilon), float(delta)))  # mu-GDP overall: certified <= epsilon
    hi = lo + 0.5
    while excess(hi) <= 0:
        lo, hi = hi, hi + 0.5
    if excess(lo) > 0:  # the accountant is looser than the GDP bound: shrink until it certifies
        while excess(lo) > 0:
            lo -= 0.05
    else:
        lo = optimize.brentq(excess, lo, hi, xtol=1e-6)
        while excess(lo) > 0:
            lo -= 1e-6
    return parts(math.exp(lo))


def single_feature_fits(xtx_noisy: np.ndarray, xty_noisy: np.ndarray, floor: float) -> list[np.ndarray]:
    """theta_j = e_j (X^T y~)_j / max((X^T X~)_jj, floor), j = 1..d: least squares on one feature, from the released statistics.

    Post-processing of the SSP releases (no privacy cost). On a constant column c (the intercept
    `load_table` appends) it is the private training mean: (c sum y + noise) / (c^2 n + noise) c.
    ``floor`` (the X^T X noise scale, public) keeps a noisy diagonal from dividing by ~0.
    """
    d = xtx_noisy.shape[0]
    weights = xty_noisy / np.maximum(np.diag(xtx_noisy), floor)
    return list(np.eye(d) * weights)


class SSPRidgeSelectionRegressor(SingleReleaseCertified, PrivateLinearRegressor):
    """Two-release SSP with a privately selected ridge (or the trivial predictor), one (eps, delta) certificate.

    1. Release X^T X~ and X^T y~ as [`AdaSSPRegressor`][privselect.apps.ptr.ssp.AdaSSPRegressor]'s
       two-release form, each with noise multiplier ``m`` (sensitivities B_x^2 and B_x B_y).
    2. Candidates (post-processing): theta_g = (X^T X~ + alpha_g I)^-1 X^T y~ for alpha_g =
       c_g x `ssp_ridge` (c_g in ``ridge_multipliers``: Wang's ridge is c = 1) and, with
       ``include_trivial``, theta = 0; with ``include_single_feature``, the d one-feature least-squares
       fits `single_feature_fits` (on the intercept column of a `load_table` table: the private
       training mean, so "predict the mean" competes with the ridges at no extra privacy cost).
    3. Score s_g = sum_i min((y_i - clip(x_i . theta_g, +-B_y))^2, ``score_clip`` B_y^2) on the same
       records: for fixed candidates adding a record raises every s_g by a value in
       [0, score_clip B_y^2] (monotone), so the exponential mechanism P(g) ~ exp(-eps_s s_g /
       (score_clip B_y^2)) is eps_s-DP (McSherry, Talwar 2007; Dwork, Roth 2014, Thm 3.10 and the
       remark on monotone utilities; `exponential_mechanism_probabilities`). Only theta_g leaves.

    `privacy` = compose(Gaussian(m, B_x^2), Gaussian(m, B_x B_y), PureDP(eps_s)) (adaptive
    composition: the candidates depend on step 1's output only). ``m`` and eps_s are calibrated
    so that the accountant's certified epsilon at ``delta`` of that description is at most
    ``epsilon`` (``score_share`` of the GDP budget goes to the score): `certified_epsilon` equals
    ``ps.privacy_profile(est.privacy).epsilon(delta)``.

    The exponential mechanism's base measure puts ``anchor_weight`` on Wang's ridge (c = 1) and
    spreads the rest uniformly (any fixed base measure keeps eps_s-DP): where the scores say
    little, the choice stays near two-release AdaSSP. With a public ``n_max``, `selects` decides
    from public quantities whether the score can pay at all; if not, the whole budget goes to the
    two releases and the result is two-release AdaSSP (``choice_ = None``).

    The ridge is chosen on the in-sample loss of the *true* data; with d << n the optimism of
    in-sample error is small next to the noise the ridge trades off. No intercept (module docstring).
    Fitted: ``coef_``, ``alpha_`` (``inf`` for the trivial predictor), ``choice_`` (index into the
    candidates: ridges in order, then the single-feature fits (``alpha_`` NaN), then the trivial
    predictor), ``noise_scales_``.
    """

    def __init__(self, epsilon: float = 1.0, delta: float = 1e-6, score_share: float = 0.2, score_clip: float = 0.25,
                 ridge_multipliers: tuple[float, ...] = DEFAULT_RIDGE_MULTIPLIERS, include_trivial: bool = True,
                 anchor_weight: float = 0.5, n_max: int | None = None, rho: float = 0.05, x_bound: float | None = None,
                 y_bound: float | None = None, include_single_feature: bool = True, random_state=None) -> None:
        self.epsilon = epsilon
        self.delta = delta
        self.score_share = score_share
        self.score_clip = score_clip
        self.ridge_multipliers = ridge_multipliers
        self.include_trivial = include_trivial
        self.anchor_weight = anchor_weight
        self.n_max = n_max
        self.rho = rho
        self.x_bound = x_bound
        self.y_bound = y_bound
        self.include_single_feature = include_single_feature
        self.random_state = random_state

    def _selection_calibration(self) -> tuple[float, float]:
        self._check_common()
        x_bound, y_bound = self._bounds()
        share = check.open_unit("score_share", self.score_share)
        m, (eps_s,) = calibrate_ssp(float(self.epsilon), float(self.delta), (share,), x_bound, y_bound)
        return m, eps_s

    def selects(self) -> bool:
        """The public rule: select only if eps_s n_max >= `MIN_SELECTION_STRENGTH` (always without ``n_max``).

        In the exponential mechanism two candidates whose mean clipped loss differs by 1% of
        the clip over n records differ in log-odds by 0.01 eps_s n; below 0.25 nats at the
        public size bound the choice is mostly the prior's, and the score's share of the budget
        is better left to the statistics. The threshold was set on the data sets of
        ``experiments/linear_regression.py``.
        """
        if self.n_max is None:
            return True
        n_max = check.positive_int("n_max", self.n_max)
        return self._selection_calibration()[1] * n_max >= MIN_SELECTION_STRENGTH

    def calibration(self) -> tuple[float, float]:
        """(noise multiplier of each statistics release, epsilon of the score's exponential mechanism or 0)."""
        if self.selects():
            return self._selection_calibration()
        return math.sqrt(2.0) * _sigma_g(float(self.epsilon), float(self.delta)), 0.0

    @property
    def privacy(self):
        m, eps_s = self.calibration()
        x_bound, y_bound = self._bounds()
        stats = (Gaussian(m, sensitivity=x_bound ** 2), Gaussian(m, sensitivity=x_bound * y_bound))
        return compose(*stats, PureDP(eps_s)) if eps_s > 0 else compose(*stats)

    def certified_epsilon(self) -> float:
        """``privacy_profile(self.privacy).epsilon(delta)``: the certificate (<= epsilon)."""
        return float(privacy_profile(self.privacy).epsilon(self.delta))

    def _multipliers(self) -> np.ndarray:
        c = np.asarray(self.ridge_multipliers, dtype=float)
        if c.ndim != 1 or (c.size == 0 and not self.include_trivial) or not np.all(np.isfinite(c)) or np.any(c <= 0):
            raise ValueError(f"ridge_multipliers must be a sequence of positive finite numbers (non-empty unless "
                             f"include_trivial), got {self.ridge_multipliers!r}")
        return c

    def _prior(self, multipliers: np.ndarray, n_single: int = 0) -> np.ndarray:
        """Base measure of the exponential mechanism: ``anchor_weight`` on Wang's ridge (c = 1), the rest uniform.

        Slots: the ridges, one slot for the ``n_single`` single-feature fits (split evenly among
        them, so adding them takes one candidate's weight), the trivial predictor if included.
        Order: ridges, single-feature fits, trivial. Public (any fixed base measure keeps eps_s-DP).
        """
        anchor = check.in_range("anchor_weight", self.anchor_weight, 0.0, 1.0, high_open=True)
        trivial = bool(self.include_trivial)
        slots = len(multipliers) + (n_single > 0) + trivial
        is_anchor = np.concatenate([multipliers == 1.0, np.zeros(slots - len(multipliers), dtype=bool)])
        if not is_anchor.any() or slots == 1:
            weights = np.full(slots, 1.0 / slots)
        else:
            weights = np.where(is_anchor, anchor, (1.0 - anchor) / (slots - 1))
        if n_single == 0:
            return weights
        k = len(multipliers)
        return np.concatenate([weights[:k], np.full(n_single, weights[k] / n_single), weights[k + 1:]])

    def fit(self, X, y):
        m, eps_s = self.calibration()
        rho = check.open_unit("rho", self.rho)
        if eps_s == 0:  # the public rule says the score cannot pay: Wang's ridge, the whole budget on the statistics
            AdaSSPRegressor(epsilon=self.epsilon, delta=self.delta, rho=rho, release_lambda_min=False,
                            x_bound=self.x_bound, y_bound=self.y_bound, random_state=self.random_state
                            )._fit_into(self, X, y)
            self.choice_ = None
            return self
        x_bound, y_bound = self._bounds()
        clip = check.positive("score_clip", self.score_clip) * y_bound ** 2
        multipliers = self._multipliers()
        Xc, yc = self._prepare(X, y)
        d = Xc.shape[1]
        rng = self._rng()
        s2, s3 = m * x_bound ** 2, m * x_bound * y_bound
        xtx_noisy = _noisy_gram(Xc.T @ Xc, s2, rng, symmetrise=True)
        xty_noisy = Xc.T @ yc + s3 * rng.standard_normal(d)
        alphas = multipliers * ssp_ridge(d, s2, rho)
        thetas = [_solve(xtx_noisy + a * np.eye(d), xty_noisy) for a in alphas]
        n_ridges = len(thetas)
        if self.include_single_feature:  # post-processing of the same two releases: no extra privacy cost
            thetas.extend(single_feature_fits(xtx_noisy, xty_noisy, s2))
            alphas = np.append(alphas, np.full(d, np.nan))
        if self.include_trivial:
            thetas.append(np.zeros(d))
            alphas = np.append(alphas, np.inf)
        coefs = np.column_stack(thetas)
        pred = np.clip(Xc @ coefs, -y_bound, y_bound)
        scores = np.minimum((yc[:, None] - pred) ** 2, clip).sum(axis=0)
        # Gumbel-max: argmax(log prior - eps_s s / clip + Gumbel) has law `exponential_mechanism_probabilities`
        with np.errstate(divide="ignore"):  # a zero prior weight: log 0 = -inf, never chosen
            log_prior = np.log(self._prior(multipliers, len(thetas) - n_ridges - bool(self.include_trivial)))
        choice = int(np.argmax(log_prior - eps_s * scores / clip + rng.gumbel(size=len(scores))))
        self.alpha_ = float(alphas[choice])
        self.choice_ = choice
        self.noise_scales_ = (0.0, s2, s3)
        self.coef_ = coefs[:, choice].copy()
        self.intercept_ = 0.0
        return self
