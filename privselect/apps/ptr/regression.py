"""Private linear regression estimators: OPS (data-independent calibration) and OPS-PTR.

Every estimator here follows scikit-learn conventions (parameters set in ``__init__`` and
validated in ``fit``; ``fit`` / ``predict`` / ``score``; ``get_params``) and shares one
data-independent preprocessing rule, applied in ``fit`` and in ``predict``:

* each feature row is clipped to the public norm bound: ``x <- x * min(1, x_bound / ||x||_2)``;
* each label is clipped to the public range: ``y <- clip(y, -y_bound, y_bound)``;
* predictions are clipped to ``[-y_bound, y_bound]``.

There is no intercept: centring with data means would leak. Scale features and labels with
public constants and append a constant feature if an intercept is wanted.

Privacy is for add/remove neighbours and is a property of the parameters alone
(`privacy`, an [`ApproxDP`][privselect.mechanisms.ApproxDP] description), so it can be
certified before any data is seen. ``random_state`` fixes the noise (for reproducibility only;
a fixed seed known to an adversary voids the guarantee). Floating-point attacks on the
samplers (Mironov 2012) are out of scope.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from ... import _validation as check
from ...mechanisms import ApproxDP, Mechanism
from ...tuning.release import trust_value_type
from .certificate import release_certificate
from .gptr import BOTTOM, GeneralizedPTR, LaplaceBound, PTRResult
from .ops import (
    clip_records,
    ops_epsilon,
    ops_gamma,
    ops_mu_bound,
    ops_passes,
    ops_rho_bound,
    ridge_solution,
    sample_ops,
)

__all__ = ["OPSRegressor", "OPSPTRRegressor", "OPSPTR", "OPSPTRTestRelease", "RefusalWarning", "balanced_alpha",
           "default_ops_ptr_alpha", "public_bound"]

MODES = ("exact", "safe")


class SingleReleaseCertified:
    """Mixin of the regressors that release once: ``certificate_`` derived from their public parameters."""

    @property
    def privacy(self) -> Mechanism:
        """The mechanism of one fit; every regressor using this mixin defines it."""
        raise NotImplementedError

    @property
    def certificate_(self):
        """The certified (epsilon, delta) of this fit's `privacy` at ``delta`` (0 for pure DP), after ``fit``.

        Derived from the public parameters alone (never stored on the estimator), so the release
        boundary's trusted walk of a fitted estimator (privselect.tuning.release) sees no extra
        state, and the rebuilt estimator still answers it.
        """
        check_is_fitted(self)
        return release_certificate(self.privacy, float(getattr(self, "delta", None) or 0.0))


_BOUND_MEANING = {"x_bound": "every feature row's L2 norm", "y_bound": "every label's absolute value"}


def public_bound(name: str, value: object) -> float:
    """A public data bound the user must state (``x_bound`` or ``y_bound``): ``None`` raises naming it.

    There is no default: a bound that does not fit the data clips every record silently (raw
    targets of 25-346 with ``y_bound=1`` give predictions in [-1, 1]), and a bound read from the
    data would leak. A [`Table`][privselect.apps.ptr.table.Table] from ``load_table`` carries its
    bounds: pass ``**table.bounds``.
    """
    if value is None:
        raise ValueError(
            f"{name} is required: state the public bound on {_BOUND_MEANING.get(name, name)} (a number you "
            f"know without looking at the data), e.g. {name}=1.0 after mapping the data into [-1, 1] with "
            f"public ranges, or pass **table.bounds for a Table from load_table; there is no default, "
            f"because a bound that does not fit the data silently clips every record")
    return check.positive(name, value)


class PrivateLinearRegressor(RegressorMixin, BaseEstimator):
    """Shared surface: validation, the clipping rule, predict (linear, clipped), poor_score tag.

    ``x_bound`` and ``y_bound`` have no default: ``fit`` (and `privacy` where it depends on them)
    raises ``ValueError`` naming the one not given ([`public_bound`][privselect.apps.ptr.regression.public_bound]).
    """

    def _bounds(self) -> tuple[float, float]:
        """(x_bound, y_bound) validated by `public_bound` (raises naming the one not given)."""
        return public_bound("x_bound", self.x_bound), public_bound("y_bound", self.y_bound)

    def _check_bounds(self) -> None:
        self._bounds()

    def _check_common(self) -> None:
        check.positive("epsilon", self.epsilon)
        delta = getattr(self, "delta", None)
        if delta is not None:
            check.open_unit("delta", delta)
        self._check_bounds()

    def _prepare(self, X, y) -> tuple[np.ndarray, np.ndarray]:
        X, y = validate_data(self, X, y, y_numeric=True, dtype=np.float64)
        return clip_records(X, y, self.x_bound, self.y_bound)

    def _rng(self) -> np.random.Generator:
        return np.random.default_rng(self.random_state)

    def predict(self, X) -> np.ndarray:
        """x . coef_ on rows clipped to ``x_bound``, clipped to [-y_bound, y_bound]."""
        check_is_fitted(self, "coef_")
        X = validate_data(self, X, reset=False, dtype=np.float64)
        Xc, _ = clip_records(X, None, self.x_bound, self.y_bound)
        return np.clip(Xc @ self.coef_, -self.y_bound, self.y_bound)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.regressor_tags.poor_score = True  # private fits are noisy by design
        return tags


# ----------------------------------------------------------------------------------------
# OPS with a data-independent calibration
# ----------------------------------------------------------------------------------------


def balanced_alpha(n: int, d: int, epsilon: float, delta: float, x_bound: float = 1.0, y_bound: float = 1.0,
                   theta_norm: float = 1.0, rho: float = 0.05) -> float:
    """Ridge strength of Wang's OPS-Balanced (reference code ``OPS_epsdelta_balanced.m``), from public n, d.

    lam = max( (C1 B_x^4 B_y^2 n / (2 ||theta*||^2))^(1/3), (1 + log(2/delta)) B_x^2 / eps ) with
    C1 = (d/2 + sqrt(d log(1/rho)) + log(1/rho)) log(2/delta) / eps'^2, eps' = min(eps/2, sqrt(eps/2)).
    A utility heuristic only: privacy comes from the exact calibration of gamma.
    """
    eps_p = min(epsilon / 2, math.sqrt(epsilon / 2))
    c1 = (d / 2 + math.sqrt(d * math.log(1 / rho)) + math.log(1 / rho)) * math.log(2 / delta) / eps_p ** 2
    return max((c1 * x_bound ** 4 * y_bound ** 2 * n / (2 * theta_norm ** 2)) ** (1 / 3),
               (1 + math.log(2 / delta)) * x_bound ** 2 / epsilon)


class OPSRegressor(SingleReleaseCertified, PrivateLinearRegressor):
    """One-posterior sample with a data-independent calibration: (epsilon, delta)-DP for data sets of at most ``n_max`` records.

    Intercept: none (``intercept_ = 0``); append a constant feature and map labels to a public range centred at 0.

    Releases theta ~ N(theta_hat, (gamma H)^-1), H = X^T X + alpha I (Wang 2018; exact privacy
    from [`ops_hockey_stick`][privselect.apps.ptr.ops.ops_hockey_stick]). Every neighbour pair has leverage
    mu <= B_x^2/alpha and residual at most B_y + B_x R_theta with the data-independent norm bound
    R_theta = min(B_y sqrt(n_max)/(2 sqrt(alpha)), n_max B_x B_y/alpha) (since s/(s^2+alpha) <=
    1/(2 sqrt(alpha)) and ||X^T y|| <= n B_x B_y), so gamma is set to the largest value with
    ``ops_epsilon(B_x^2/alpha, sqrt(gamma)(B_y + B_x R_theta), delta) <= epsilon``.

    Under add/remove neighbours the number of records is private; ``n_max`` is a public upper
    bound on it, part of the declared data domain like B_x, and [`privacy`][privselect.apps.ptr.regression.OPSRegressor.privacy] is the guarantee
    over data sets of at most ``n_max`` records. ``fit`` never refuses a larger data set (a refusal
    would reveal whether n > n_max): it keeps a uniformly random subset of ``n_max`` records, drawn
    with the estimator's own generator independently of the values. A neighbour pair that crosses
    the bound is then coupled to a pair of in-domain data sets differing in one *replaced* record,
    covered by group privacy at (2 epsilon, (1 + e^epsilon) delta) only; choose ``n_max`` so that
    it really bounds n. ``alpha=None`` uses Wang's OPS-Balanced rule ([`balanced_alpha`][privselect.apps.ptr.regression.balanced_alpha])
    with n_max in place of n; ``alpha`` is the full ridge (no built-in +1).
    """

    def __init__(self, epsilon: float = 1.0, delta: float = 1e-6, alpha: float | None = None, x_bound: float | None = None,
                 y_bound: float | None = None, n_max: int = 100_000, mode: str = "exact", random_state=None) -> None:
        self.epsilon = epsilon
        self.delta = delta
        self.alpha = alpha
        self.x_bound = x_bound
        self.y_bound = y_bound
        self.n_max = n_max
        self.mode = mode
        self.random_state = random_state

    @property
    def privacy(self) -> ApproxDP:
        """(epsilon, delta)-DP, add/remove neighbours, data sets of at most n_max records."""
        return ApproxDP(self.epsilon, self.delta)

    def fit(self, X, y):
        self._check_common()
        x_bound, y_bound = self._bounds()
        n_max = check.positive_int("n_max", self.n_max)
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {self.mode!r}")
        Xc, yc = self._prepare(X, y)
        rng = self._rng()
        n, d = Xc.shape
        if n > n_max:  # never refuse (that would reveal n > n_max): keep a uniformly random n_max-subset
            keep = np.sort(rng.choice(n, size=n_max, replace=False))
            Xc, yc = Xc[keep], yc[keep]
        alpha = (balanced_alpha(n_max, d, self.epsilon, self.delta, x_bound, y_bound)
                 if self.alpha is None else check.positive("alpha", self.alpha))
        theta_bound = min(y_bound * math.sqrt(n_max) / (2 * math.sqrt(alpha)), n_max * x_bound * y_bound / alpha)
        residual = y_bound + x_bound * theta_bound
        gamma = ops_gamma(x_bound ** 2 / alpha, residual, self.epsilon, self.delta, self.mode)
        self.alpha_, self.gamma_ = alpha, gamma
        if gamma <= 0:  # data-independent: no gamma meets the target at this alpha
            raise ValueError(f"no gamma > 0 makes OPS ({self.epsilon}, {self.delta})-DP at alpha={alpha:g}; "
                             "increase alpha")
        theta, chol = ridge_solution(Xc, yc, alpha)
        self.coef_ = sample_ops(theta, chol, gamma, rng)
        self.intercept_ = 0.0
        return self


# ----------------------------------------------------------------------------------------
# OPS-PTR
# ----------------------------------------------------------------------------------------


class RefusalWarning(UserWarning):
    """Issued by [`OPSPTRRegressor`][privselect.apps.ptr.regression.OPSPTRRegressor] when its test fails and the release is ⊥.

    Carries only already-private values (the noisy test statistic and the budget). Refitting
    after a refusal is another DP release and must be accounted as such.
    """


@trust_value_type  # released inside a fitted estimator (test_release_): rebuilt field by field
@dataclass(frozen=True)
class OPSPTRTestRelease:
    """What the OPS-PTR test releases (private; covered by the test's privacy).

    ``lambda_lower``: private lower bound on lambda_min(X^T X) (0 when not released);
    ``log_norm_upper``: private upper bound on u(X) = log(B_y + B_x ||theta_hat||);
    ``mu_bound``, ``rho_bound``: the implied bounds on every neighbour pair's (mu, rho);
    ``gamma``: the inverse temperature used (the proposal, or the largest one the bounds allow);
    ``statistic``: the tested value eps_hat = ops_epsilon(mu_bound, rho_bound, delta_ops) (a
    post-processing of the private bounds; only in scalar runs); ``passed``: the verdict.
    Arrays when the test was run vectorised.
    """

    lambda_lower: Any
    log_norm_upper: Any
    mu_bound: Any
    rho_bound: Any
    passed: Any
    gamma: Any = None
    statistic: Any = None


@dataclass(frozen=True)
class OPSStatistics:
    """Non-private statistics of one data set that OPS-PTR needs (never released)."""

    lambda_min: float
    log_norm: float
    theta_hat: np.ndarray
    chol: np.ndarray


@dataclass(frozen=True)
class OPSPTR:
    """OPS-PTR_phi: Generalized PTR applied to OPS, proposal phi = (alpha, gamma) (KRW Sec. 6.1).

    Steps (design notes Sec. 4, with the corrected constants):

    1. if ``epsilon_eigen > 0``: lambda~ = max(lambda_min(X^T X) + Lap(B_x^2/eps_1) - (B_x^2/eps_1) ln(1/(2 p_1)), 0),
       a lower bound failing with probability p_1 = ``failure_eigen`` (sensitivity B_x^2 by Weyl);
       otherwise lambda~ = 0 (no release, no cost);
    2. h~ = max(alpha, alpha + lambda~ - B_x^2) <= lambda_min(H(S)) for the smaller set S of every pair;
    3. u~ = u(X) + Lap(s/eps_2) + (s/eps_2) ln(1/(2 p_2)), s = log(1 + B_x^2/h~), an upper bound on
       u(X) = log(B_y + B_x ||theta_hat||) failing with probability p_2 = ``failure_norm``;
    4. mu~ = B_x^2/h~, rho~ = sqrt(gamma) e^{u~} (1 + B_x^2/h~); with ``gamma=None`` ("auto"),
       gamma is the largest value with ops_epsilon(mu~, rho~) <= eps_ops (a post-processing of
       the released bounds, as in AdaOPS), 0 if none;
    5. test: ``ops_epsilon(mu~, rho~, delta_ops, mode) <= epsilon_ops`` (with "auto": gamma > 0);
    6. refuse (``BOTTOM``) or release theta ~ N(theta_hat, (gamma H)^-1).

    Privacy (KRW Thm 6.1). The test is (eps_1 + eps_2, p_1)-DP: step 3's noise is calibrated
    for a pair (X, X') whenever lambda~ <= lambda_min(X^T X), an event of probability >= 1 - p_1
    (a bad-event argument; p_1 = 0 without step 1). On {lambda~ <= lambda_min, u~ >= u(X)} the
    bounds of step 4 hold for every neighbour of X and eps_OPS(X) <= the tested value, so the
    false-pass rate is at most p_1 + p_2. OPS-PTR is therefore
    (eps_1 + eps_2 + eps_ops, delta_ops + 2 p_1 + p_2)-DP ([`privacy`][privselect.apps.ptr.regression.OPSPTR.privacy]). Solving gamma from
    the released bounds changes nothing in this argument: gamma is a function of the test's
    release, and the tested inequality holds for it by construction.
    [Derived here; the tests check the bound failure rates and the false-pass rate by Monte
    Carlo and the neighbour bounds on random neighbours.]
    """

    alpha: float
    gamma: float | None
    epsilon_eigen: float
    epsilon_norm: float
    epsilon_ops: float
    delta_ops: float
    failure_eigen: float
    failure_norm: float
    x_bound: float = 1.0
    y_bound: float = 1.0
    mode: str = "exact"

    def __post_init__(self) -> None:
        for name in ("alpha", "epsilon_norm", "epsilon_ops", "x_bound", "y_bound"):
            object.__setattr__(self, name, check.positive(name, getattr(self, name)))
        if self.gamma is not None:
            object.__setattr__(self, "gamma", check.positive("gamma", self.gamma))
        object.__setattr__(self, "epsilon_eigen", check.nonnegative("epsilon_eigen", self.epsilon_eigen))
        object.__setattr__(self, "delta_ops", check.open_unit("delta_ops", self.delta_ops))
        object.__setattr__(self, "failure_norm", check.open_unit("failure_norm", self.failure_norm))
        if self.epsilon_eigen > 0:
            object.__setattr__(self, "failure_eigen", check.open_unit("failure_eigen", self.failure_eigen))
        else:
            object.__setattr__(self, "failure_eigen", 0.0)
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {self.mode!r}")

    # -- privacy ----------------------------------------------------------------------------

    @property
    def gptr(self) -> GeneralizedPTR:
        return GeneralizedPTR(epsilon=self.epsilon_ops, delta=self.delta_ops,
                              test_epsilon=self.epsilon_eigen + self.epsilon_norm, test_delta=self.failure_eigen,
                              false_pass=self.failure_eigen + self.failure_norm)

    @property
    def privacy(self) -> ApproxDP:
        """(eps_1 + eps_2 + eps_ops, delta_ops + 2 p_1 + p_2)-DP, add/remove neighbours (KRW Thm 6.1)."""
        return self.gptr.privacy

    @property
    def eigen_bound(self) -> LaplaceBound | None:
        if self.epsilon_eigen == 0:
            return None
        return LaplaceBound(self.x_bound ** 2, self.epsilon_eigen, self.failure_eigen, "lower")

    def norm_bound(self, sensitivity: float) -> LaplaceBound:
        return LaplaceBound(sensitivity, self.epsilon_norm, self.failure_norm, "upper")

    def infeasibility(self) -> str | None:
        """Why this proposal can never pass (data-independent), or None.

        Without the eigenvalue release h~ = alpha, so the leverage bound is B_x^2/alpha whatever the
        data; if OPS at that leverage is not (eps_ops, delta_ops)-DP even at rho = 0 (the mu floor,
        [`ops_mu_bound`][privselect.apps.ptr.ops.ops_mu_bound]), every run refuses. With the eigenvalue release a
        large lambda~ can rescue any alpha, so nothing is ruled out.
        """
        if self.epsilon_eigen > 0:
            return None
        mu_floor = ops_mu_bound(self.epsilon_ops, self.delta_ops, self.mode)
        if self.x_bound ** 2 / self.alpha <= mu_floor:
            return None
        return (f"alpha={self.alpha:g} can never pass the OPS-PTR test: at eps_ops={self.epsilon_ops:.4g}, "
                f"delta_ops={self.delta_ops:.3g} the leverage bound B_x^2/alpha={self.x_bound ** 2 / self.alpha:.4g} "
                f"exceeds the largest private leverage {mu_floor:.4g} even with a zero residual (rho = 0); "
                f"use alpha >= {self.x_bound ** 2 / mu_floor:.4g} (or alpha=None for the default rule), "
                "a larger epsilon, or eigen_fraction > 0")

    # -- numerics ---------------------------------------------------------------------------

    def statistics(self, X: np.ndarray, y: np.ndarray) -> OPSStatistics:
        """lambda_min(X^T X), u(X), theta_hat and chol(H) of already-clipped data."""
        lam_min = float(max(np.linalg.eigvalsh(X.T @ X)[0], 0.0)) if X.shape[0] else 0.0
        theta, chol = ridge_solution(X, y, self.alpha)
        log_norm = math.log(self.y_bound + self.x_bound * float(np.linalg.norm(theta)))
        return OPSStatistics(lam_min, log_norm, theta, chol)

    def test(self, stats: OPSStatistics, rng: np.random.Generator, size=None) -> OPSPTRTestRelease:
        """Steps 1-5, vectorised over ``size`` independent runs of the test."""
        eigen = self.eigen_bound
        if eigen is None:
            lam_lower = np.zeros(() if size is None else size)
        else:
            lam_lower = np.maximum(eigen.release(stats.lambda_min, rng, size=size), 0.0)
        h = np.maximum(self.alpha, self.alpha + lam_lower - self.x_bound ** 2)
        sensitivity = np.log1p(self.x_bound ** 2 / h)
        # Lap(s/eps_2) + (s/eps_2) ln(1/(2 p_2)) with a per-draw sensitivity s
        b = sensitivity / self.epsilon_norm
        u_upper = stats.log_norm + rng.laplace(0.0, 1.0, size=size) * b + b * math.log(1 / (2 * self.failure_norm))
        mu = self.x_bound ** 2 / h
        residual = np.exp(u_upper) * (1 + self.x_bound ** 2 / h)
        if self.gamma is None:
            gamma = (ops_rho_bound(self.epsilon_ops, mu, self.delta_ops, self.mode) / residual) ** 2
            passed = gamma > 0
        else:
            gamma = np.full(np.shape(mu), self.gamma)
            passed = ops_passes(self.epsilon_ops, mu, math.sqrt(self.gamma) * residual, self.delta_ops, self.mode)
        rho = np.sqrt(gamma) * residual
        if size is None:
            statistic = float(ops_epsilon(float(mu), float(rho), self.delta_ops, self.mode))
            if passed:  # the verdict compares delta(eps_ops) directly; the bisection's bracket may end above
                statistic = min(statistic, self.epsilon_ops)
            return OPSPTRTestRelease(float(lam_lower), float(u_upper), float(mu), float(rho), bool(passed),
                                     float(gamma), statistic)
        return OPSPTRTestRelease(lam_lower, u_upper, mu, rho, passed, gamma)

    def run(self, X: np.ndarray, y: np.ndarray, rng: np.random.Generator) -> PTRResult:
        """One OPS-PTR run on clipped data: ``PTRResult(theta or BOTTOM, passed, test release)``."""
        stats = self.statistics(X, y)

        def test(_data, test_rng):
            release = self.test(stats, test_rng)
            return release.passed, release

        def release(_data, info, mech_rng):
            return sample_ops(stats.theta_hat, stats.chol, info.gamma, mech_rng)

        return self.gptr.run((X, y), test, release, rng)


def _delta_split(delta: float, with_eigen: bool) -> tuple[float, float, float]:
    """(delta_ops, p_1, p_2) with delta_ops + 2 p_1 + p_2 = delta."""
    if with_eigen:
        return delta / 2, delta / 8, delta / 4
    return delta / 2, 0.0, delta / 2


def default_ops_ptr_alpha(epsilon_ops: float, delta_ops: float, epsilon_norm: float, failure_norm: float, d: int,
                          n_max: int | None = None, x_bound: float = 1.0, y_bound: float = 1.0) -> float:
    """The default ridge of OPS-PTR: a function of public quantities only, never below the mu floor.

    alpha = max(a_mu, a_norm, a_n) with
    * a_mu = B_x^2 / ops_mu_bound(eps_ops/2, delta_ops): the leverage term alone takes at most half
      of eps_ops (twice the mu floor, below which no gamma > 0 passes);
    * a_norm = 2 B_x^2 ln(1/(2 p_2)) / eps_2: the norm release's margin then inflates the residual
      bound by at most e^{1/2} (it inflates it by (1 + B_x^2/alpha)^{ln(1/(2 p_2))/eps_2});
    * a_n = balanced_alpha(n_max, d, eps_ops, delta_ops) / 4 when a public bound n_max on the number
      of records is given (Wang's OPS-Balanced bias/variance rule, scaled down because the
      data-dependent norm bound is tighter than OPS-Balanced's data-independent one).
    A utility rule (chosen on elevators, Wang's protocol; docs/regression.md); privacy never
    depends on it.
    """
    a_mu = x_bound ** 2 / ops_mu_bound(epsilon_ops / 2, delta_ops)
    a_norm = 2 * x_bound ** 2 * math.log(1 / (2 * failure_norm)) / epsilon_norm
    a_n = 0.0 if n_max is None else balanced_alpha(n_max, d, epsilon_ops, delta_ops, x_bound, y_bound) / 4
    return max(a_mu, a_norm, a_n)


class OPSPTRRegressor(SingleReleaseCertified, PrivateLinearRegressor):
    """OPS-PTR as a scikit-learn regressor: (epsilon, delta)-DP whatever the data (KRW Sec. 6.1, Thm 6.1).

    Intercept: none (``intercept_ = 0``); append a constant feature and map labels to a public range centred at 0.

    Parameters
    ----------
    epsilon, delta
        the total privacy of one fit (add/remove neighbours).
    alpha
        ridge strength; None (default) uses `default_ops_ptr_alpha` (public quantities:
        the budget, d, ``n_max``), never below the mu floor. An explicit alpha that can never pass
        (below the mu floor without the eigenvalue release) raises ``ValueError`` at construction.
    gamma
        OPS inverse temperature; "auto" (default) takes the largest gamma the released bounds
        allow (the test then passes unless no gamma > 0 does); a number is a fixed proposal.
    eigen_fraction
        share of ``epsilon`` for a private lower bound on lambda_min(X^T X); 0 (default)
        skips it. It pays only when lambda_min(X^T X) >> B_x^2 (1 + ln(1/(2 p_1))/eps_1): below
        that the released bound cannot raise h~ above alpha (docs/regression.md).
    norm_fraction
        share of ``epsilon`` for the private upper bound on log(B_y + B_x ||theta_hat||);
        the rest goes to OPS. ``delta`` is split as delta_ops = delta/2, p_1 = delta/8,
        p_2 = delta/4 (delta/2 and delta/2 without the eigenvalue bound).
    n_max
        optional public bound on the number of records, used only by the default alpha.
    x_bound, y_bound
        public bounds B_x, B_y (inputs are clipped, module docstring).
    mode
        "exact" (numerical OPS profile) or "safe" (closed form) for the test.

    Notes
    -----
    Fitted attributes: ``coef_`` (the posterior sample, or zeros when refused), ``refused_``
    (True when the test failed: the output is ⊥, the model predicts 0, the centre of the label
    range, and a [`RefusalWarning`][privselect.apps.ptr.regression.RefusalWarning] is issued), ``test_statistic_`` (the private test value
    eps_hat compared with eps_ops), ``test_release_`` ([`OPSPTRTestRelease`][privselect.apps.ptr.regression.OPSPTRTestRelease], private),
    ``alpha_``, ``gamma_`` (0 when refused), ``intercept_`` = 0. A refusal is itself the DP
    release; fitting again on the same data is a second release and costs another (epsilon, delta).
    """

    def __init__(self, epsilon: float = 1.0, delta: float = 1e-6, alpha: float | None = None,
                 gamma: float | str = "auto", eigen_fraction: float = 0.0, norm_fraction: float = 0.3,
                 n_max: int | None = None, x_bound: float | None = None, y_bound: float | None = None, mode: str = "exact",
                 random_state=None) -> None:
        self.epsilon = epsilon
        self.delta = delta
        self.alpha = alpha
        self.gamma = gamma
        self.eigen_fraction = eigen_fraction
        self.norm_fraction = norm_fraction
        self.n_max = n_max
        self.x_bound = x_bound
        self.y_bound = y_bound
        self.mode = mode
        self.random_state = random_state
        reason = self._infeasibility()
        if reason is not None:
            raise ValueError(reason)

    def _infeasibility(self) -> str | None:
        """The construction-time check: a valid explicit proposal that can never pass."""
        if self.alpha is None:
            return None
        try:
            mech = self.mechanism(d=1)
        except (TypeError, ValueError):
            return None  # invalid parameters are reported by fit, with the parameter's name
        return mech.infeasibility()

    def mechanism(self, d: int | None = None) -> OPSPTR:
        """The OPS-PTR description these parameters define (validates them); ``d`` feeds the default alpha."""
        self._check_common()
        x_bound, y_bound = self._bounds()
        fe = check.real("eigen_fraction", self.eigen_fraction)
        fn = check.real("norm_fraction", self.norm_fraction)
        if not (0 <= fe < 1 and 0 < fn < 1 and fe + fn < 1):
            raise ValueError("eigen_fraction in [0, 1) and norm_fraction in (0, 1) must sum to less than 1, got "
                             f"eigen_fraction={self.eigen_fraction!r}, norm_fraction={self.norm_fraction!r}")
        if isinstance(self.gamma, str):
            if self.gamma != "auto":
                raise ValueError(f"gamma must be 'auto' or a positive number, got {self.gamma!r}")
            gamma = None
        else:
            gamma = check.positive("gamma", self.gamma)
        n_max = None if self.n_max is None else check.positive_int("n_max", self.n_max)
        delta_ops, p1, p2 = _delta_split(self.delta, fe > 0)
        eps_norm, eps_ops = fn * self.epsilon, (1 - fe - fn) * self.epsilon
        if self.alpha is None:
            if d is None:
                raise ValueError("the default alpha needs the number of features d")
            alpha = default_ops_ptr_alpha(eps_ops, delta_ops, eps_norm, p2, d, n_max, x_bound, y_bound)
        else:
            alpha = check.positive("alpha", self.alpha)
        return OPSPTR(alpha=alpha, gamma=gamma, epsilon_eigen=fe * self.epsilon, epsilon_norm=eps_norm,
                      epsilon_ops=eps_ops, delta_ops=delta_ops, failure_eigen=p1, failure_norm=p2,
                      x_bound=x_bound, y_bound=y_bound, mode=self.mode)

    @property
    def privacy(self) -> ApproxDP:
        """The privacy of one fit: an upper bound, (epsilon, delta)-DP up to rounding (independent of alpha)."""
        return self.mechanism(d=1).privacy

    def fit(self, X, y):
        self.mechanism(d=1)  # validate before touching the data
        Xc, yc = self._prepare(X, y)
        mech = self.mechanism(d=Xc.shape[1])
        reason = mech.infeasibility()
        if reason is not None:
            raise ValueError(reason)
        result = mech.run(Xc, yc, self._rng())
        release = result.test_release
        self.refused_ = result.output is BOTTOM
        self.test_release_ = release
        self.test_statistic_ = release.statistic
        self.alpha_ = mech.alpha
        self.gamma_ = 0.0 if self.refused_ else release.gamma
        self.coef_ = np.zeros(Xc.shape[1]) if self.refused_ else np.asarray(result.output)
        self.intercept_ = 0.0
        if self.refused_:
            warnings.warn(RefusalWarning(
                f"OPS-PTR refused (⊥): the private test statistic {release.statistic:.4g} exceeds "
                f"eps_ops={mech.epsilon_ops:.4g}; the model predicts 0. This refusal is the ({self.epsilon:g}, "
                f"{self.delta:g})-DP release; refitting on the same data is another release and must be "
                "accounted for."), stacklevel=2)
        return self
