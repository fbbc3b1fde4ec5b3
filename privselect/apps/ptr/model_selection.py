"""Choosing among private regressors is itself a private selection (KRW Thm 5.2, one certificate).

[`PrivateRegressorSelection`][privselect.apps.ptr.model_selection.PrivateRegressorSelection] runs K ~ ``k`` candidates drawn uniformly from a public list of
private regressors (AdaSSP over a grid of its rho and ridge scale, AdaOPS, OPS-PTR over a ridge
grid, the trivial predictor), each at the same per-run budget (eps_fit, delta_Q), scores each on a held-out split with
Laplace noise, and releases only the best, through [`PrivateTuner`][privselect.tuning.PrivateTuner].

Privacy. Every record goes to the validation part independently with probability
``validation_fraction`` (coins from the estimator's generator, independent of the values), once
per fit. Given the split, a record in the training part changes only the fits, each
(eps_fit, delta_Q)-DP, and a record in the validation part changes only the scores, each the
clipped sum of squared errors (add/remove sensitivity ``score_clip`` B_y^2) plus
Laplace(score_clip B_y^2 / eps_score). So each run is at most
compose(ApproxDP(eps_fit, delta_Q), Laplace score) for every neighbour pair, and KRW Thm 5.2
([`privselect.certify`][privselect.selection.certify.certify]) certifies the selection; averaging over the split keeps the bound
(joint convexity). Each candidate is described by ApproxDP(eps_fit, delta_Q), an upper bound on
the profile of any (eps_fit, delta_Q)-DP mechanism (Kairouz, Oh, Viswanath 2015).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ... import _validation as check
from ...mechanisms import ApproxDP, Laplace, compose
from ...selection import KDistribution, Logarithmic
from ...tuning import PrivateTuner
from ...tuning.space import Choice
from .baselines import AdaOPSRegressor
from .regression import OPSPTRRegressor, PrivateLinearRegressor
from .ssp import AdaSSPRegressor, TrivialRegressor
from .tuning import RunBudget, clipped_squared_error, fit_quietly, selection_run_budget, tuner_seed

__all__ = ["PrivateRegressorSelection", "CANDIDATE_BUILDERS", "DEFAULT_CANDIDATES"]


def _adassp(epsilon: float, delta: float, params: dict, owner: PrivateRegressorSelection, d: int
            ) -> AdaSSPRegressor:
    return AdaSSPRegressor(epsilon=epsilon, delta=delta, rho=params.get("rho", 0.05),
                           ridge_scale=params.get("ridge_scale", 1.0),
                           release_lambda_min=params.get("release_lambda_min", "auto"), n_max=owner.n_max,
                           x_bound=owner.x_bound, y_bound=owner.y_bound)


def _adaops(epsilon: float, delta: float, params: dict, owner: PrivateRegressorSelection, d: int
            ) -> AdaOPSRegressor:
    return AdaOPSRegressor(epsilon=epsilon, delta=delta, x_bound=owner.x_bound, y_bound=owner.y_bound)


def _ops_ptr(epsilon: float, delta: float, params: dict, owner: PrivateRegressorSelection, d: int
             ) -> OPSPTRRegressor:
    """OPS-PTR at ``alpha_scale`` times its default ridge (public: the budget, d, n_max)."""
    est = OPSPTRRegressor(epsilon=epsilon, delta=delta, n_max=owner.n_max, x_bound=owner.x_bound,
                          y_bound=owner.y_bound)
    return est.set_params(alpha=params.get("alpha_scale", 1.0) * est.mechanism(d=d).alpha)


def _trivial(epsilon: float, delta: float, params: dict, owner: PrivateRegressorSelection, d: int
             ) -> TrivialRegressor:
    """The trivial predictor (coef 0): 0-DP, so within any per-run budget."""
    return TrivialRegressor(x_bound=owner.x_bound, y_bound=owner.y_bound)


#: method name -> builder(epsilon, delta, params, owner, d) of an (epsilon, delta)-DP regressor.
CANDIDATE_BUILDERS: dict[str, Callable[..., PrivateLinearRegressor]] = {
    "adassp": _adassp, "adaops": _adaops, "ops-ptr": _ops_ptr, "trivial": _trivial,
}

#: The default candidate list: AdaSSP over rho x ridge scale, AdaOPS, OPS-PTR over ridge scales, the trivial predictor.
DEFAULT_CANDIDATES: tuple[dict, ...] = (
    *({"method": "adassp", "rho": r, "ridge_scale": s} for r in (0.05, 0.5) for s in (1.0, 0.5, 0.25)),
    {"method": "adaops"},
    *({"method": "ops-ptr", "alpha_scale": a} for a in (1.0, 2.0)),
    {"method": "trivial"},
)


class _Trainer:
    """train(params, data, rng): fit one candidate on the training part, score it on the validation part."""

    def __init__(self, owner: PrivateRegressorSelection, budget: RunBudget, clip: float) -> None:
        self.owner = owner
        self.y_bound = owner._bounds()[1]
        self.budget = budget
        self.clip = clip

    def __call__(self, params, data, rng):
        X_train, y_train, X_val, y_val = data
        spec = params["candidate"]
        est = CANDIDATE_BUILDERS[spec["method"]](self.budget.ptr_epsilon, self.budget.delta, spec, self.owner,
                                                 X_train.shape[1])
        est.set_params(random_state=rng)
        fit_quietly(est, X_train, y_train)
        est.set_params(random_state=None)  # the run's generator is never part of what is released
        return clipped_squared_error(est.coef_, X_val, y_val, self.y_bound, self.clip), est


class PrivateRegressorSelection(PrivateLinearRegressor):
    """Privately select among private regressors, with one (epsilon, delta) certificate (KRW Thm 5.2).

    Parameters
    ----------
    epsilon, delta
        the privacy of the whole procedure (add/remove neighbours).
    k
        distribution of the number of runs; default ``ps.Logarithmic(mean=10)`` (eta = 0: Thm 5.2
        then costs about 2 eps_Q rather than the geometric's 3 eps_Q).
    candidates : list of dicts ``{"method": name, ...}`` with ``name`` in `CANDIDATE_BUILDERS`
        (``"adassp"`` with ``rho``, ``ridge_scale``, ``release_lambda_min``; ``"adaops"``; ``"ops-ptr"`` with
        ``alpha_scale``; ``"trivial"``: predict 0); default `DEFAULT_CANDIDATES`. Public, drawn uniformly per run.
    validation_fraction
        probability that a record is held out for scoring.
    score_fraction
        share of each run's eps_Q for the Laplace-noised score.
    score_clip
        the per-record squared error is clipped at ``score_clip`` B_y^2 (the score's
        sensitivity).
    n_max
        optional public bound on the number of records (OPS-PTR's default ridge).

    Notes
    -----
    Fitted: ``coef_``, ``best_params_`` (the winning candidate), ``run_budget_``,
    ``run_privacy_`` (one run's mechanism description), ``certificate_``. The winner was fitted
    on the training part only; refitting it on all data would be another release.
    Intercept: none (``intercept_ = 0``); append a constant feature and map labels to a public range centred at 0.
    """

    def __init__(self, epsilon: float = 1.0, delta: float = 1e-6, k: KDistribution | None = None,
                 candidates: tuple | None = None, validation_fraction: float = 0.1, score_fraction: float = 0.1,
                 score_clip: float = 0.25, n_max: int | None = None, x_bound: float | None = None, y_bound: float | None = None,
                 random_state=None) -> None:
        self.epsilon = epsilon
        self.delta = delta
        self.k = k
        self.candidates = candidates
        self.validation_fraction = validation_fraction
        self.score_fraction = score_fraction
        self.score_clip = score_clip
        self.n_max = n_max
        self.x_bound = x_bound
        self.y_bound = y_bound
        self.random_state = random_state

    def _k(self) -> KDistribution:
        k = Logarithmic(mean=10.0) if self.k is None else self.k
        if not isinstance(k, KDistribution):
            raise TypeError(f"k must be a distribution of K (e.g. ps.Logarithmic(mean=10)), got {type(k).__name__}")
        return k

    def _candidates(self) -> list[dict]:
        specs = DEFAULT_CANDIDATES if self.candidates is None else tuple(self.candidates)
        if not specs:
            raise ValueError("candidates must be a non-empty sequence of dicts")
        for spec in specs:
            if not isinstance(spec, dict) or spec.get("method") not in CANDIDATE_BUILDERS:
                raise ValueError(f"candidates: each entry must be a dict with 'method' in {sorted(CANDIDATE_BUILDERS)}, "
                                 f"got {spec!r}")
        return [dict(spec) for spec in specs]

    def run_budget(self) -> RunBudget:
        """The per-run budget (data-independent): KRW Thm 5.2 for K ~ ``k``."""
        self._check_common()
        return selection_run_budget(float(self.epsilon), float(self.delta), self._k(),
                                    check.open_unit("score_fraction", self.score_fraction))

    @property
    def privacy(self) -> ApproxDP:
        """The certified (epsilon, delta) of the whole selection (an upper bound)."""
        budget = self.run_budget()
        return ApproxDP(budget.certificate_epsilon, budget.certificate_delta)

    def fit(self, X, y):
        budget = self.run_budget()
        candidates = self._candidates()
        fraction = check.open_unit("validation_fraction", self.validation_fraction)
        clip = check.positive("score_clip", self.score_clip) * self._bounds()[1] ** 2
        Xc, yc = self._prepare(X, y)
        rng = self._rng()
        held_out = rng.random(len(yc)) < fraction  # per-record coins, independent of the values
        data = (Xc[~held_out], yc[~held_out], Xc[held_out], yc[held_out])
        score_noise = Laplace(1.0 / budget.score_epsilon, sensitivity=clip)
        fit_privacy = ApproxDP(budget.ptr_epsilon, budget.delta)
        tuner = PrivateTuner(_Trainer(self, budget, clip), {"candidate": Choice(candidates)}, privacy=fit_privacy,
                             k=self._k(), delta=self.delta, direction="minimize", seed=tuner_seed(rng),
                             backend="sequential", score_noise=score_noise)
        result = tuner.run(data)
        winner = result.best_output
        self.run_budget_ = budget
        self.run_privacy_ = compose(fit_privacy, score_noise)
        self.certificate_ = result.certificate
        self.best_params_ = None if winner is None else dict(result.best_params["candidate"])
        self.coef_ = np.zeros(Xc.shape[1]) if winner is None else np.asarray(winner.coef_)
        self.intercept_ = 0.0
        return self
