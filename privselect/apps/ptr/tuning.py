"""Tuning OPS-PTR privately: geometric K, KRW Thm 5.2 certificates, and the Liu-Talwar bound.

Generalized PTR gives one (eps_Q, delta_Q) point per run (KRW Thm 6.1), so the RDP selection
bounds do not apply. Two certificates for "run OPS-PTR K ~ Geometric times with i.i.d. proposals
and release the best":

* **profile** (KRW Thm 5.2, eta = 1): [`privselect.certify`][privselect.selection.certify.certify] applied to the run's mechanism
  description. [`profile_run_budget`][privselect.apps.ptr.tuning.profile_run_budget] finds the largest per-run eps_Q whose certificate
  meets the target, with delta_Q = delta / (2 E[K]).
* **Liu-Talwar** ([`liu_talwar_certificate`][privselect.apps.ptr.tuning.liu_talwar_certificate]): the (eps, delta) random-stopping bound of
  Liu & Talwar (2019), the baseline KRW Sec. 6.1 compare against. It needs a far smaller
  delta_Q (about (delta / T)^2 / 8 with T = E[K] log(2/delta)), which is what costs utility.

[`TunedOPSPTRRegressor`][privselect.apps.ptr.tuning.TunedOPSPTRRegressor] runs the whole procedure with
[`PrivateTuner`][privselect.tuning.PrivateTuner]: the score of a run is the sum over the training
records of min((y - clip(x.theta, +-B_y))^2, c B_y^2) (add/remove sensitivity c B_y^2, c =
``score_clip``; the private n is not used) plus Laplace noise added by the tuner; a refused run
(⊥) scores +inf and adds no noise; only the winner is released, and K is not.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, replace

import numpy as np
from sklearn.base import clone

from ... import _validation as check
from ...mechanisms import ApproxDP, Laplace, compose
from ...memo import quiet_cache
from ...selection import Geometric, KDistribution, TruncatedNegativeBinomial, certify
from ...selection.certify import Certificate
from ...tuning import PrivateTuner
from ...tuning.space import Choice
from .regression import MODES, OPSPTRRegressor, PrivateLinearRegressor

__all__ = ["LiuTalwarCertificate", "liu_talwar_certificate", "liu_talwar_run_budget", "RunBudget", "run_mechanism",
           "selection_run_budget", "profile_run_budget", "default_tuning_k", "DEFAULT_ALPHA_SCALES", "ops_ptr_candidates", "clipped_squared_error",
           "TunedOPSPTRRegressor", "ACCOUNTINGS"]

ACCOUNTINGS = ("profile", "liu-talwar")


# ----------------------------------------------------------------------------------------
# Liu-Talwar
# ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LiuTalwarCertificate:
    """(epsilon, delta) of "best of K ~ Geometric(gamma) runs" by Liu & Talwar's (eps, delta) bound.

    ``implied_by`` names the proved result that makes the stated bound valid here (see
    [`liu_talwar_certificate`][privselect.apps.ptr.tuning.liu_talwar_certificate]).
    """

    epsilon: float
    delta: float
    base_epsilon: float
    base_delta: float
    mean: float
    horizon: float
    delta2: float
    bound: str = "Liu-Talwar 2019, random stopping with an (eps, delta)-DP base (KRW Sec. 6.1: 'Thm 3.5')"
    implied_by: str = "KRW Cor. 5.4 (as its App. C.2 proof gives it: (3 eps + 2 delta/gamma, delta/gamma))"


def _geometric_gamma(k) -> float:
    if not (isinstance(k, TruncatedNegativeBinomial) and k.eta == 1.0):
        raise ValueError(f"k must be ps.Geometric(...) (truncated negative binomial with eta=1), got {k!r}")
    return float(k.gamma)


def liu_talwar_certificate(base_epsilon: float, base_delta: float, k, delta2: float) -> LiuTalwarCertificate:
    """Liu & Talwar (2019)'s bound for random stopping over an (eps_Q, delta_Q)-DP base, K ~ Geometric(gamma).

    Statement used, as KRW Sec. 6.1 cite it ("Thm 3.5") and the design notes recall it: with
    T = log(1/delta2)/gamma the selection is

        (3 eps_Q + 3 sqrt(2 delta_Q),  sqrt(2 delta_Q) T + delta2)-DP.

    The primary text (arXiv 1811.07971, Sec. 3) could not be read here, so the statement is not
    trusted on its own: it is used only where a proved result implies it. KRW Thm 5.2 with
    eps_1 = eps_Q gives, exactly as the App. C.2 proof of KRW Cor. 5.4 computes it,
    (3 eps_Q + 2 delta_Q/gamma, delta_Q/gamma)-DP for eta = 1 (the printed corollary omits the
    factor eta + 1 = 2 on delta/gamma). That pair is at least as strong as the one above whenever
    3 sqrt(2 delta_Q) >= 2 delta_Q/gamma and sqrt(2 delta_Q) T + delta2 >= delta_Q/gamma, which
    holds for every delta_Q <= 4.5 gamma^2 (the regime of tuning, delta_Q ~ 1e-17); outside it this
    function raises ``ValueError``. So the returned (epsilon, delta) is a valid certificate for
    privselect's untruncated geometric K whether or not Liu & Talwar state it for a K truncated
    at T; ``tests/test_ptr.py`` also checks it numerically against [`privselect.certify`][privselect.selection.certify.certify].
    """
    base_epsilon = check.nonnegative("base_epsilon", base_epsilon)
    base_delta = check.real("base_delta", base_delta)
    if not 0 <= base_delta < 1:
        raise ValueError(f"base_delta must be in [0, 1), got {base_delta!r}")
    delta2 = check.open_unit("delta2", delta2)
    gamma = _geometric_gamma(k)
    horizon = math.log(1 / delta2) / gamma
    root = math.sqrt(2 * base_delta)
    epsilon, delta = 3 * base_epsilon + 3 * root, root * horizon + delta2
    if not (3 * root >= 2 * base_delta / gamma and delta >= base_delta / gamma):
        raise ValueError(f"base_delta={base_delta!r} is outside the regime (base_delta <= 4.5 gamma^2) where the "
                         "Liu-Talwar statement is implied by KRW Cor. 5.4; it is not certified here")
    return LiuTalwarCertificate(epsilon=epsilon, delta=delta, base_epsilon=base_epsilon, base_delta=base_delta,
                                mean=float(k.mean), horizon=horizon, delta2=delta2)


def liu_talwar_run_budget(epsilon: float, delta: float, k) -> tuple[float, float, float]:
    """(eps_Q, delta_Q, delta2) with [`liu_talwar_certificate`][privselect.apps.ptr.tuning.liu_talwar_certificate] <= (epsilon, delta).

    delta2 = delta/2 and sqrt(2 delta_Q) T = delta/2; eps_Q = (epsilon - 3 sqrt(2 delta_Q))/3.
    """
    epsilon = check.positive("epsilon", epsilon)
    delta = check.open_unit("delta", delta)
    _geometric_gamma(k)
    delta2 = delta / 2
    horizon = math.log(1 / delta2) / _geometric_gamma(k)
    root = (delta - delta2) / horizon
    base_delta = root * root / 2
    base_epsilon = (epsilon - 3 * root) / 3
    for _ in range(50):  # shave for rounding, then verify
        cert = liu_talwar_certificate(base_epsilon, base_delta, k, delta2)
        if cert.epsilon <= epsilon and cert.delta <= delta:
            return base_epsilon, base_delta, delta2
        base_epsilon *= 1 - 1e-12
        base_delta *= 1 - 1e-9
    raise ArithmeticError("could not meet the Liu-Talwar target")  # pragma: no cover


# ----------------------------------------------------------------------------------------
# Per-run budgets
# ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RunBudget:
    """The privacy of ONE tuning run and the certificate it yields for the whole selection.

    ``epsilon``/``delta``: the run (the fit plus the Laplace score), pointwise; ``ptr_epsilon``:
    the fit's part (OPS-PTR or any (eps, delta)-DP regressor); ``score_epsilon``: the score's
    Laplace noise; ``certificate_epsilon``, ``certificate_delta``: what the accounting certifies
    for the selection.
    """

    accounting: str
    epsilon: float
    delta: float
    ptr_epsilon: float
    score_epsilon: float
    mean_k: float
    certificate_epsilon: float
    certificate_delta: float


def run_mechanism(fit_epsilon: float, score_epsilon: float, delta_q: float, score_sensitivity: float = 1.0):
    """One run: an (eps, delta_q)-DP fit (pointwise, e.g. KRW Thm 6.1) then the Laplace-noised score.

    The score's noise has scale ``score_sensitivity / score_epsilon``, so its privacy is
    ``score_epsilon`` whatever the sensitivity.
    """
    return compose(ApproxDP(fit_epsilon, delta_q), Laplace(1.0 / score_epsilon, sensitivity=score_sensitivity))


@quiet_cache(maxsize=256)
def selection_run_budget(epsilon: float, delta: float, k, score_fraction: float = 0.1) -> RunBudget:
    """Largest per-run eps_Q (delta_Q = delta/(2 E[K])) whose KRW Thm 5.2 certificate is <= epsilon.

    The run is [`run_mechanism`][privselect.apps.ptr.tuning.run_mechanism] ((1-f) eps_Q fit, f eps_Q score), exactly what the tuned
    estimators hand the tuner; a root search on eps_Q (`_largest_below`) with [`privselect.certify`][privselect.selection.certify.certify] (profile family).
    """
    epsilon = check.positive("epsilon", epsilon)
    delta = check.open_unit("delta", delta)
    f = check.open_unit("score_fraction", score_fraction)
    mean_k = float(k.mean)
    delta_q = delta / (2 * mean_k)

    def cert(eps_q: float) -> float:
        try:
            return certify(run_mechanism((1 - f) * eps_q, f * eps_q, delta_q), k, delta, bound="profile").epsilon
        except ValueError:
            return math.inf

    target = epsilon * (1 - 1e-9)
    lo = _largest_below(cert, target, epsilon)  # the selection is never more private than one run
    if lo == 0.0:
        raise ValueError(f"no per-run budget meets ({epsilon}, {delta}) with K ~ {k!r}")
    return RunBudget("profile", lo, delta_q, (1 - f) * lo, f * lo, mean_k, cert(lo), delta)


def _largest_below(cert, target: float, top: float) -> float:
    """The largest x in (0, top] found with cert(x) <= target, for cert increasing in x (0.0 if none).

    Brent's method on cert(x) - target (about 10 evaluations where bisection to the same precision
    takes 40; each is a full certificate), then a backtrack until cert(x) <= target holds: the
    returned x always satisfies it, whatever the root finder did.
    """
    if cert(top) <= target:
        return top
    low = top * 2.0 ** -40
    if not cert(low) <= target:
        return 0.0

    def gap(x: float) -> float:
        value = cert(x)
        return value - target if math.isfinite(value) else top  # cannot certify: above the target

    from scipy.optimize import brentq

    x = float(brentq(gap, low, top, xtol=top * 2.0 ** -40, rtol=1e-12))
    step = top * 2.0 ** -40
    while x > low and not cert(x) <= target:
        x, step = max(x - step, low), 2 * step
    return x


def profile_run_budget(epsilon: float, delta: float, mean_k: float, score_fraction: float = 0.1) -> RunBudget:
    """[`selection_run_budget`][privselect.apps.ptr.tuning.selection_run_budget] for K ~ Geometric(mean=mean_k) (KRW Sec. 6.1's tuning)."""
    if not check.positive("mean_k", mean_k) > 1:
        raise ValueError(f"mean_k must be > 1, got {mean_k!r}")
    return selection_run_budget(epsilon, delta, Geometric(mean=float(mean_k)), score_fraction)


def _liu_talwar_budget(epsilon: float, delta: float, k, score_fraction: float) -> RunBudget:
    f = check.open_unit("score_fraction", score_fraction)
    mean_k = float(k.mean)
    eps_q, delta_q, delta2 = liu_talwar_run_budget(epsilon, delta, k)
    cert = liu_talwar_certificate(eps_q, delta_q, k, delta2)
    return RunBudget("liu-talwar", eps_q, delta_q, (1 - f) * eps_q, f * eps_q, float(mean_k), cert.epsilon, cert.delta)


# ----------------------------------------------------------------------------------------
# Candidates and the tuned estimator
# ----------------------------------------------------------------------------------------

#: Default ridge grid of the tuned estimator, as multiples of OPS-PTR's default ridge
#: ([`default_ops_ptr_alpha`][privselect.apps.ptr.regression.default_ops_ptr_alpha] at the run's budget); those below
#: the mu floor are dropped. Narrow on purpose: with gamma solved per run the ridge is the only
#: thing tuned, and on elevators (Wang's protocol, eps = 1) the best fixed ridge lies in 1-3 x the
#: default rule; the former 0.5-8 x grid gave a median MSE 1.60 x AdaSSP's, this one 1.34 x
#: (docs/regression.md, Sec. 4).
DEFAULT_ALPHA_SCALES = (1.0, 1.5, 2.0, 3.0)


def default_tuning_k() -> TruncatedNegativeBinomial:
    """The default law of K for KRW Thm 5.2 accounting: truncated negative binomial, eta = -0.8, E[K] = 2.

    KRW Thm 5.2 charges about (eta + 2) eps_Q for an (eps_Q, delta_Q)-DP run, so eta = -0.8 leaves
    each run eps_Q ~ eps / 1.2 (geometric: eps / 3; logarithmic: eps / 2). The price is little
    search: P(K = 1) = 0.81. OPS-PTR is noise-limited per run, so on the measured data this is
    the best trade (elevators, eps = 1: median MSE 1.34 x AdaSSP's against 1.86 x with
    Geometric(10), 1.62 x with Logarithmic(10); docs/regression.md, Sec. 4).
    """
    return TruncatedNegativeBinomial(-0.8, mean=2.0)


def ops_ptr_candidates(template: OPSPTRRegressor, alphas) -> list[dict]:
    """The data-independent proposal grid ``[{"alpha": a}, ...]``: the alphas that can pass at all.

    gamma is not proposed: each run solves it from its own released bounds (``gamma="auto"``),
    so a run refuses only if alpha is below the mu floor, which is data-independent and checked
    here ([`infeasibility`][privselect.apps.ptr.regression.OPSPTR.infeasibility]). The candidate distribution
    (uniform over this list) is a function of public quantities only.
    """
    mech = template.mechanism(d=1)
    return [{"alpha": float(a)} for a in alphas if replace(mech, alpha=float(a)).infeasibility() is None]


def clipped_squared_error(coef: np.ndarray, X: np.ndarray, y: np.ndarray, y_bound: float, clip: float) -> float:
    """Sum of min((y - clip(x.theta, +-B_y))^2, clip): add/remove sensitivity ``clip`` for a fixed theta.

    A sum, not a mean, so the private number of records is not used.
    """
    pred = np.clip(X @ coef, -y_bound, y_bound)
    return float(np.minimum((y - pred) ** 2, clip).sum())


def fit_quietly(estimator: PrivateLinearRegressor, X: np.ndarray, y: np.ndarray) -> PrivateLinearRegressor:
    """Fit inside a tuning run: warnings (refusals included) stay inside; no randomness state is released."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        estimator.fit(X, y)
    estimator.set_params(random_state=None)
    return estimator


class _Trainer:
    """train(params, data, rng) for the tuner (picklable): one OPS-PTR fit and its raw score.

    A refused run (⊥) is a legitimate output that predicts 0: it is scored like any other
    output (the clipped error of the zero predictor), so it can only win if nothing beats 0.
    """

    def __init__(self, template: OPSPTRRegressor, clip: float) -> None:
        self.template = template
        self.y_bound = template._bounds()[1]
        self.clip = clip

    def __call__(self, params, data, rng):
        X, y = data
        est = clone(self.template).set_params(alpha=params["proposal"]["alpha"], random_state=rng)
        fit_quietly(est, X, y)
        est.set_params(random_state=None)  # the run's generator is never part of what is released
        return clipped_squared_error(est.coef_, X, y, self.y_bound, self.clip), est


def tuner_seed(random_state) -> int | None:
    """The tuner's integer seed from an estimator's ``random_state`` (None, int or Generator)."""
    if isinstance(random_state, np.random.Generator):
        return int(random_state.integers(2 ** 63))
    if random_state is not None:
        return int(np.random.default_rng(random_state).integers(2 ** 63))
    return None


class TunedOPSPTRRegressor(PrivateLinearRegressor):
    """OPS-PTR with its ridge tuned privately (KRW Sec. 6.1): (epsilon, delta)-DP overall.

    Intercept: none (``intercept_ = 0``); append a constant feature and map labels to a public range centred at 0.

    K ~ ``k`` runs of [`OPSPTRRegressor`][privselect.apps.ptr.regression.OPSPTRRegressor], each
    with a ridge drawn uniformly from a data-independent grid (``alphas`` in units of B_x^2, or by
    default `DEFAULT_ALPHA_SCALES` times OPS-PTR's default ridge at the run's budget) and
    with gamma solved from that run's released bounds (``gamma="auto"``), scored by the noisy
    clipped sum of squared errors; only the best run is released
    ([`PrivateTuner`][privselect.tuning.PrivateTuner]).

    ``k`` is the law of K (data-independent). The default for Thm 5.2 accounting is
    [`default_tuning_k`][privselect.apps.ptr.tuning.default_tuning_k], a truncated negative binomial with eta = -0.8 and E[K] = 2: Thm 5.2
    then charges about 1.2 eps_Q, so each run keeps eps_Q ~ eps/1.2, at the price of little search
    (P(K = 1) = 0.81). Pass ``k=ps.Logarithmic(mean=10)`` (about 2 eps_Q) or
    ``ps.Geometric(mean=10)`` (about 3 eps_Q, KRW Sec. 6.1) for a wider search; Liu-Talwar
    accounting needs a geometric K (default Geometric(mean=10)).

    ``accounting="profile"`` calibrates the per-run budget with KRW Thm 5.2
    ([`selection_run_budget`][privselect.apps.ptr.tuning.selection_run_budget]: the largest eps_Q whose certificate meets
    (epsilon, delta)); ``"liu-talwar"`` with Liu & Talwar's bound
    ([`liu_talwar_run_budget`][privselect.apps.ptr.tuning.liu_talwar_run_budget]). Either way the released model is (epsilon, delta)-DP, and
    ``certificate_`` is the certificate of the accounting in use (a
    [`Certificate`][privselect.selection.certify.Certificate] for "profile", a [`LiuTalwarCertificate`][privselect.apps.ptr.tuning.LiuTalwarCertificate] for
    "liu-talwar"). Of a run's eps_Q, ``score_fraction`` goes to the score's Laplace noise and the
    rest to OPS-PTR, split by ``eigen_fraction`` and ``norm_fraction`` as in
    [`OPSPTRRegressor`][privselect.apps.ptr.regression.OPSPTRRegressor].

    Refusals: with gamma solved per run a run refuses only when its alpha is below the mu
    floor, and such alphas are removed from the grid before any data is seen, so runs do not
    refuse (with ``eigen_fraction > 0`` neither: h~ >= alpha). ``refused_`` says whether the
    released output is ⊥. How many runs refused is never released (it would reveal K and the
    other runs).

    Fitted: ``coef_``, ``refused_``, ``best_params_``, ``run_budget_`` ([`RunBudget`][privselect.apps.ptr.tuning.RunBudget]),
    ``run_privacy_`` (the mechanism description of one run, fit plus score),
    ``certificate_`` and ``candidates_`` (the grid used).
    """

    def __init__(self, epsilon: float = 1.0, delta: float = 1e-6, k: KDistribution | None = None,
                 accounting: str = "profile", alphas: tuple | None = None, eigen_fraction: float = 0.0,
                 norm_fraction: float = 0.3, score_fraction: float = 0.1, score_clip: float = 1.0,
                 n_max: int | None = None, x_bound: float | None = None, y_bound: float | None = None, mode: str = "exact",
                 random_state=None) -> None:
        self.epsilon = epsilon
        self.delta = delta
        self.k = k
        self.accounting = accounting
        self.alphas = alphas
        self.eigen_fraction = eigen_fraction
        self.norm_fraction = norm_fraction
        self.score_fraction = score_fraction
        self.score_clip = score_clip
        self.n_max = n_max
        self.x_bound = x_bound
        self.y_bound = y_bound
        self.mode = mode
        self.random_state = random_state

    def run_budget(self) -> RunBudget:
        """The per-run budget the accounting allows (data-independent)."""
        self._check_common()
        if self.accounting not in ACCOUNTINGS:
            raise ValueError(f"accounting must be one of {ACCOUNTINGS}, got {self.accounting!r}")
        k = self._k()
        if self.accounting == "profile":
            return selection_run_budget(float(self.epsilon), float(self.delta), k, float(self.score_fraction))
        return _liu_talwar_budget(float(self.epsilon), float(self.delta), k, float(self.score_fraction))

    def _k(self) -> KDistribution:
        """``k``, or the default: [`default_tuning_k`][privselect.apps.ptr.tuning.default_tuning_k] (Thm 5.2), Geometric(mean=10) (Liu-Talwar)."""
        if self.k is None:
            return default_tuning_k() if self.accounting == "profile" else Geometric(mean=10.0)
        if not isinstance(self.k, KDistribution):
            raise TypeError(f"k must be a distribution of K (e.g. ps.Geometric(mean=10)), got {type(self.k).__name__}")
        if self.accounting == "liu-talwar":
            _geometric_gamma(self.k)
        return self.k

    def _template(self, budget: RunBudget) -> OPSPTRRegressor:
        return OPSPTRRegressor(epsilon=budget.ptr_epsilon, delta=budget.delta, gamma="auto",
                               eigen_fraction=self.eigen_fraction, norm_fraction=self.norm_fraction,
                               n_max=self.n_max, x_bound=self.x_bound, y_bound=self.y_bound, mode=self.mode)

    def candidates(self, d: int) -> list[dict]:
        """The ridge grid for these parameters and d features (data-independent)."""
        budget = self.run_budget()
        template = self._template(budget)
        if self.alphas is None:
            base = template.mechanism(d=d).alpha
            alphas = tuple(s * base for s in DEFAULT_ALPHA_SCALES)
        else:
            values = tuple(self.alphas)
            if not values or any(isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0
                                 for v in values):
                raise ValueError(f"alphas must be a non-empty sequence of positive numbers, got {self.alphas!r}")
            alphas = tuple(a * self._bounds()[0] ** 2 for a in values)
        return ops_ptr_candidates(template, alphas)

    def _score_clip(self) -> float:
        return check.positive("score_clip", self.score_clip) * self._bounds()[1] ** 2

    def fit(self, X, y):
        budget = self.run_budget()
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {self.mode!r}")
        clip = self._score_clip()
        Xc, yc = self._prepare(X, y)
        candidates = self.candidates(Xc.shape[1])
        if not candidates:
            raise ValueError("no ridge in the grid can pass the OPS-PTR test at this budget (every alpha is below "
                             "the mu floor): add larger alphas or raise epsilon")
        template = self._template(budget)
        score_noise = Laplace(1.0 / budget.score_epsilon, sensitivity=clip)
        run_privacy = compose(template.privacy, score_noise)
        k = self._k()
        tuner = PrivateTuner(_Trainer(template, clip), {"proposal": Choice(candidates)}, privacy=template.privacy,
                             k=k, delta=self.delta, direction="minimize", seed=tuner_seed(self.random_state),
                             backend="sequential", score_noise=score_noise)
        result = tuner.run((Xc, yc))
        winner = result.best_output
        self.run_budget_ = budget
        self.run_privacy_ = run_privacy
        self.candidates_ = candidates
        certificate: LiuTalwarCertificate | Certificate
        if self.accounting == "liu-talwar":
            _, _, delta2 = liu_talwar_run_budget(float(self.epsilon), float(self.delta), k)
            certificate = liu_talwar_certificate(budget.epsilon, budget.delta, k, delta2)
        else:
            certificate = result.certificate
        self.certificate_ = certificate
        self.refused_ = winner is None or bool(winner.refused_)
        self.best_params_ = None if winner is None else {"alpha": winner.alpha_, "gamma": winner.gamma_}
        self.coef_ = np.zeros(Xc.shape[1]) if self.refused_ else winner.coef_
        self.intercept_ = 0.0
        return self
