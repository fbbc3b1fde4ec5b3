"""Private Optuna studies: keep writing ``objective(trial)``, get one certificate for the search.

Three lines change from a plain Optuna study::

    study = PrivateStudy(privacy=one_run, k=ps.Geometric(mean=10), delta=1e-5)
    result = study.optimize(objective)          # no n_trials, no timeout
    result.best_params, result.best_value, result.certificate

``PrivateStudy`` is a thin front end on the run engine ([`privselect.tuning.engine`][privselect.tuning.engine]), the
same one behind [`PrivateTuner`][privselect.tuning.PrivateTuner]: same K law, seeds, backends,
progress, ``score_noise``, callable privacy, ``reveal_k``, release guard and dry run. For the
same seed, space and trainer, both give the same winner and certificate.

What the wrapper controls (Optuna leaks all of it by default):

* the number of trials is K, drawn from ``k`` before any trial; ``n_trials`` and ``timeout``
  are refused (a timeout makes K data-dependent; a fixed count released with the winner is
  what ``reveal_k=True`` certifies);
* with the default sampler, no Optuna study exists at all: ``trial.suggest_*`` draws from the
  trial's own generator, i.i.d. across trials (the law of Optuna's ``RandomSampler``), so
  nothing stores the trials;
* pruning is disabled: a trial that calls ``trial.report`` or ``trial.should_prune`` scores the
  worst value (even if the objective catches the error: the refusal is recorded on the trial),
  and ``dry_run`` raises [`PrivateStudyError`][privselect.integrations.optuna.PrivateStudyError] for it;
  ``pruner=`` is refused. Whether an objective calls them can depend on the data, so it never
  stops the study. A trial that
  raises ``optuna.TrialPruned`` scores the worst value like any other exception (whether it
  prunes depends on the data); ``dry_run`` reports it;
* a trial that raises (any exception) or returns something that is not a finite value
  scores the worst value; it is never retried; its message is dropped;
* with callable privacy, the hyperparameters declared in ``privacy_space`` are drawn from each
  trial's seed before any trial runs, and all K candidates' privacy is checked then
  (``privselect.tuning.privacy.CandidateCheck``; a problem stops the study before the data is
  touched). Inside a trial, each suggestion is checked again as it is made, and the whole params
  when the objective returns; a trial that fails there, or skips a declared suggestion, scores
  the worst value;
* only the winner leaves: ``best_trial`` is a fresh ``FrozenTrial`` holding the winner's params,
  value, distributions and user attributes, and constants elsewhere: ``number`` and
  ``_trial_id`` -1, ``datetime_start`` and ``datetime_complete`` both
  [`RELEASED_TRIAL_TIME`][privselect.integrations.optuna.RELEASED_TRIAL_TIME] (1970-01-01, not the time of any run), no
  system attributes, intermediate values or constraints.

Optuna habits that would publish the trials (``study.trials``, ``optuna.visualization``,
``study.trials_dataframe()``, ``directions=``, ``pruner=``, ``optimize(n_jobs=,
show_progress_bar=, callbacks=)``) get an error that says why and what to use instead.

Samplers. The selection theorems (KRW 2024; Papernot, Steinke 2022) need candidates drawn
i.i.d. and independently of past values. ``QMCSampler`` draws dependent points and adaptive
samplers (TPE, GP, CMA-ES, NSGA, ...) condition on past values; both are refused unless
``adaptive=True``, which certifies the search as what it then is, K adaptively chosen runs
with K independent of the data (sequential backend only):

    delta(eps) <= sum_k P[K = k] delta_k(eps)        (privselect.selection.bounds.mixture)

Proof: given K = k, the transcript of an adaptive search is an adaptive composition of k
runs, so its profile is at most delta_k. K has the same law on both neighbours, so the output
laws are mixtures with common weights P[K = k], and the hockey-stick divergence is jointly
convex. Releasing only the winner is a post-processing. This bound also covers releasing K.
``GridSampler`` visits the grid without replacement, which no selection theorem covers: it is
refused; use ``trial.suggest_categorical`` over the grid values instead.
"""

from __future__ import annotations

import dataclasses
import datetime
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import _validation as check
from ..accounting.base import Accountant
from ..accounting.profile import PrivacyProfile
from ..errors import PrivateStudyError, TrainerContractError
from ..mechanisms import Gaussian, Laplace, Mechanism
from ..selection.certify import Certificate
from ..selection.distributions import KDistribution
from ..selection.pipeline import certify_pipeline
from ..tuning.adaptive import AdaptiveSearch
from ..tuning.calibration import CALLABLE_PRIVACY, Issued, NoiseCalibration
from ..tuning.engine import SelectionPlan, dry_run, released, run_selection
from ..tuning.pipeline import FinalRun, run_pipeline
from ..tuning.privacy import CandidateCheck, CandidatePrivacyError, RunPrivacy
from ..tuning.run import RunSeeds, StopSelection, silenced
from ..tuning.space import (
    Distribution,
    validate_space,
)
from ..tuning.tuner import adaptive_certificate, check_signature
from .coverage import covers
from .optuna_trial import _PRUNING, PrivateTrial, _optuna, check_declared_laws, search_law

__all__ = ["RELEASED_TRIAL_TIME", "PrivateStudy", "PrivateStudyResult"]

RELEASED_TRIAL_TIME = datetime.datetime(1970, 1, 1)
"""``datetime_start`` and ``datetime_complete`` of the released ``FrozenTrial``: a constant (a time would tell K)."""


@dataclass(frozen=True, repr=False)
class PrivateStudyResult:
    """The winner of a private study, and the certificate of the whole search."""

    best_params: dict[str, Any] | None
    best_value: float | None
    best_output: Any
    best_trial: Any
    selected: bool
    certificate: Certificate
    n_trials: int | None = None  # K, released only with reveal_k=True or adaptive=True
    final_output: Any = None  # the final run's model, when the study was given final=

    @property
    def profile(self) -> PrivacyProfile | None:
        """The profile of the whole search the certificate used (``certificate.profile``); data-independent."""
        return self.certificate.profile

    def __repr__(self) -> str:
        k = "" if self.n_trials is None else f", n_trials={self.n_trials}"
        if not self.selected:
            return f"PrivateStudyResult(nothing selected (K = 0){k}; {covers(self.certificate)})"
        return (f"PrivateStudyResult(best_params={self.best_params!r}, best_value={self.best_value!r}{k}; "
                f"{covers(self.certificate)})")

    @property
    def trials(self) -> Any:
        raise AttributeError(f"PrivateStudyResult.trials: {_NO_TRIALS}")

    def to_dict(self) -> dict[str, Any]:
        out = {"best_params": self.best_params, "best_value": self.best_value, "selected": self.selected,
               "certificate": self.certificate.to_dict()}
        if self.n_trials is not None:
            out["n_trials"] = self.n_trials
        return out


_NO_TRIALS = ("a PrivateStudy keeps no trials by design: only the winner leaves (result = study.optimize(objective); "
              "result.best_trial, result.best_params, result.certificate). Plots, dataframes and trial lists would "
              "publish every trial's value, which the certificate does not cover")
_STUDY_API = frozenset({"trials", "get_trials", "best_trials", "trials_dataframe", "metric_names", "set_metric_names",
                        "directions", "_is_multi_objective", "user_attrs", "system_attrs", "add_trial", "add_trials",
                        "enqueue_trial", "tell", "ask", "stop", "_storage", "_study_id"})
_OPTIMIZE_OPTIONS = {
    "n_jobs": "parallelism is a constructor option here: PrivateStudy(..., n_jobs=4, backend='loky') (K and every "
              "trial's seeds are fixed before any trial, so the winner does not depend on it)",
    "show_progress_bar": "the progress bar is a constructor option here: PrivateStudy(..., progress=True); it counts "
                         "trials, so it shows K to the operator: do not publish it",
    "callbacks": "callbacks would see every trial and its value; only the winner leaves the study",
    "catch": "nothing to catch: every exception a trial raises already scores the worst value",
    "gc_after_trial": "not needed: the study keeps no trials",
}


def _explain_plots(optuna) -> None:
    """Make every ``optuna.visualization`` (and ``.matplotlib``) ``plot_*`` explain, before its plotly or
    matplotlib check, that a private study or its result has no trials to plot. Any other study
    goes to Optuna's function unchanged. Idempotent; called when a PrivateStudy is built."""
    import importlib

    for module_name in ("optuna.visualization", "optuna.visualization.matplotlib"):
        module = importlib.import_module(module_name)
        for name in [n for n in dir(module) if n.startswith("plot_")]:
            plot = getattr(module, name)
            if callable(plot) and not getattr(plot, "privselect_explains", False):
                setattr(module, name, _explaining(plot, f"{module_name}.{name}"))


def _explaining(plot: Callable[..., Any], qualified: str) -> Callable[..., Any]:
    def explained(*args: Any, **kwargs: Any) -> Any:
        study = args[0] if args else kwargs.get("study")
        studies = study if isinstance(study, (list, tuple)) else [study]  # plot_edf takes a list of studies
        if any(isinstance(s, (PrivateStudy, PrivateStudyResult)) for s in studies):
            raise TypeError(f"{qualified}: {_NO_TRIALS}. optuna.visualization cannot plot a private study or its "
                            "result for that reason; plot the certificate instead (privselect.plotting)")
        return plot(*args, **kwargs)

    explained.__wrapped__ = plot  # type: ignore[attr-defined]
    explained.__name__, explained.__doc__ = plot.__name__, plot.__doc__
    explained.privselect_explains = True  # type: ignore[attr-defined]
    return explained


@dataclass(frozen=True)
class _ObjectiveTask:
    """One trial: a PrivateTrial drawing from the run's params seed; the objective trains with ``trial.rng``."""

    objective: Callable[[PrivateTrial], Any]
    privacy_space: Mapping[str, Distribution] | None
    candidate_check: CandidateCheck | None

    def check_candidate(self, seeds: RunSeeds) -> str | None:
        """The privacy problem of the trial's declared hyperparameters (drawn from its seed alone), or None."""
        if self.candidate_check is None:
            return None
        trial = PrivateTrial(seeds.index, seeds.train_rng(), seeds.params_rng(), privacy_space=self.privacy_space)
        return self.candidate_check.problem(trial._predrawn)

    def __call__(self, data: Any, seeds: RunSeeds) -> tuple[Any, Any, Any]:
        trial = PrivateTrial(seeds.index, seeds.train_rng(), seeds.params_rng(), privacy_space=self.privacy_space,
                             candidate_check=self.candidate_check)
        return _call_objective(self.objective, trial, self.privacy_space, self.candidate_check)


def _call_objective(objective, trial: PrivateTrial, privacy_space, candidate_check) -> tuple[Any, Any, Any]:
    """Run the objective; a rule it broke raises ``StopSelection``, whatever it raised or caught.

    Inside ``optimize`` that trial scores the worst value (whether an objective breaks a rule can
    depend on the data); ``dry_run`` raises the error with its message.
    """
    try:
        returned = objective(trial)
    finally:
        if trial.refusal is not None:
            raise StopSelection(trial.refusal)
    missing = sorted(set(privacy_space or {}) - set(trial.params))
    if missing:
        raise StopSelection(TrainerContractError(f"the objective did not suggest {missing}, declared in privacy_space"))
    problem = None if candidate_check is None else candidate_check.problem(trial.params)
    if problem is not None:
        raise StopSelection(CandidatePrivacyError(problem))
    optuna = _optuna()
    distributions = {name: optuna.distributions.distribution_to_json(dist)
                     for name, dist in trial.distributions.items()}  # released by value, as JSON text
    return returned, trial.params, (distributions, trial.user_attrs)


class _AdaptiveTask:
    """Trials asked of a real (in-memory) Optuna study; the engine runs it in the driver, in order."""

    def __init__(self, objective, study: Any, privacy_space, candidate_check) -> None:
        self.objective, self.study = objective, study
        self.privacy_space, self.candidate_check = privacy_space, candidate_check
        self.current: Any = None

    def __call__(self, data: Any, seeds: RunSeeds) -> tuple[Any, Any, Any]:
        self.current = self.study.ask()
        trial = PrivateTrial(seeds.index, seeds.train_rng(), None, self.current, self.privacy_space,
                             self.candidate_check)
        return _call_objective(self.objective, trial, self.privacy_space, self.candidate_check)

    def observe(self, index: int, score: float) -> None:
        """Tell the sampler the run's released score (after score noise), or FAIL."""
        optuna = _optuna()
        if math.isfinite(score):
            self.study.tell(self.current, score)
        else:
            self.study.tell(self.current, state=optuna.trial.TrialState.FAIL)
        self.current = None


class _SearchTask:
    """Trials of an adaptive search (DP-HyPO): the declared hyperparameters come from the search's law, the
    others from their own laws (independent of earlier trials); the engine runs it in the driver, in order."""

    def __init__(self, objective, state, search_space, privacy_space, candidate_check) -> None:
        self.objective, self.state, self.search_space = objective, state, search_space
        self.privacy_space, self.candidate_check = privacy_space, candidate_check

    def __call__(self, data: Any, seeds: RunSeeds) -> tuple[Any, Any, Any]:
        drawn = self.state.draw(seeds.index, seeds.params_rng())
        others = np.random.SeedSequence(seeds.params.entropy, spawn_key=seeds.params.spawn_key + (1,))
        trial = PrivateTrial(seeds.index, seeds.train_rng(), np.random.Generator(np.random.PCG64(others)),
                             privacy_space=self.privacy_space, candidate_check=self.candidate_check,
                             preset=(self.search_space, drawn))
        return _call_objective(self.objective, trial, self.privacy_space, self.candidate_check)

    def observe(self, index: int, score: float) -> None:
        self.state.observe(index, score)


@dataclass(frozen=True)
class _LawDraws:
    """Each trial's declared hyperparameters drawn i.i.d. from fixed laws (a public prior): no history."""

    space: Mapping[str, Distribution]

    def draw(self, index: int, rng: np.random.Generator) -> dict[str, Any]:
        return {name: law.sample(rng) for name, law in self.space.items()}

    def observe(self, index: int, score: float) -> None:
        """Nothing: the laws do not learn."""


def _direction(direction: Any) -> str:
    name = getattr(direction, "name", direction)  # optuna.study.StudyDirection.MAXIMIZE -> "MAXIMIZE"
    if isinstance(name, str) and name.lower() in ("maximize", "minimize"):
        return name.lower()
    raise ValueError(f"direction must be 'maximize', 'minimize' or an optuna StudyDirection of them, got {direction!r}")


class PrivateStudy(NoiseCalibration):
    """An Optuna-style study that runs exactly K trials (K ~ ``k``) and releases the best one, certified.

    ``privacy`` is the privacy of ONE trial: a Mechanism, a PrivacyProfile, or a callable
    ``params -> Mechanism`` when hyperparameters change it; then ``privacy_space`` declares
    the laws of those hyperparameters (``{"sigma": Choice([...])}``), which the objective must
    suggest with the same laws. ``seed`` is a secret key (None: fresh entropy). The other
    options are those of [`PrivateTuner`][privselect.tuning.PrivateTuner]. ``calibrate`` sets the DP-SGD noise
    multiplier of the certificate the study issues ([`privselect.tuning.calibration`][privselect.tuning.calibration]).
    """

    def __init__(self, privacy: Any, k: KDistribution, delta: float, *, direction: Any = "maximize",
                 sampler: Any = None, seed: int | None = None, study_name: str | None = None,
                 adaptive: bool = False, reveal_k: bool = False, storage: Any = None, n_jobs: int = 1,
                 backend: str = "loky", progress: bool = False, score_noise: Gaussian | Laplace | None = None,
                 base_epsilon: float | None = None, privacy_space: Mapping[str, Distribution] | None = None,
                 release: str = "refuse", accountant: str | Accountant = "auto", final: FinalRun | None = None,
                 pruner: Any = None, directions: Any = None, isolate: bool = False,
                 search: AdaptiveSearch | None = None, search_space: Mapping[str, Any] | None = None):
        optuna = _optuna()
        _explain_plots(optuna)
        if pruner is not None and not isinstance(pruner, optuna.pruners.NopPruner):
            raise PrivateStudyError(
                f"pruner= is refused: {_PRUNING.split('. The study')[0]}, which no certificate covers. Remove "
                "pruner=; every trial runs to completion (spend less per trial instead: fewer epochs or steps, "
                "declared in privacy)")
        if directions is not None:
            directions = list(directions) if not isinstance(directions, str) else [directions]
            if len(directions) != 1:
                raise PrivateStudyError(
                    f"directions= with {len(directions)} objectives is refused: a private study releases the best of K "
                    "trials under ONE score (the selection theorems rank one value). Combine the objectives into one "
                    "value (e.g. a weighted sum) and pass direction='maximize' or 'minimize'")
            direction = directions[0]
        if storage is not None:
            raise PrivateStudyError(
                "a private study keeps its trials in memory and drops them: a persistent storage would keep every "
                "trial's parameters and value, which the certificate does not cover. Remove storage=."
            )
        self.delta = check.delta_scalar("delta", delta)
        self.study_name, self.adaptive, self.reveal_k = study_name, bool(adaptive), bool(reveal_k)
        self.accountant = accountant
        if privacy_space is not None:
            laws = validate_space(privacy_space)
            if not isinstance(laws, Mapping):
                raise TypeError("privacy_space must be a dict of privselect.space distributions (the laws of the "
                                "hyperparameters privacy(params) reads), not a callable")
            privacy_space = dict(laws)
        elif callable(privacy) and not isinstance(privacy, (Mechanism, PrivacyProfile)):
            raise ValueError("a callable privacy needs privacy_space: the laws of the hyperparameters it reads, "
                             "e.g. privacy_space={'noise_multiplier': Choice([1.0, 2.0])}")
        self.privacy_space = privacy_space
        base_epsilon = None if base_epsilon is None else check.positive("base_epsilon", base_epsilon)
        self._privacy = RunPrivacy(privacy, score_noise, privacy_space, base_epsilon)
        self._plan = SelectionPlan(k, seed, _direction(direction), backend, n_jobs, bool(progress), score_noise,
                                   release, bool(isolate))
        self._sampler = self._check_sampler(optuna, sampler)
        if (self.adaptive or self.reveal_k) and not isinstance(privacy, Mechanism):
            raise ValueError(self._composed_privacy_message(privacy))
        if self.adaptive and self._plan.n_jobs != 1:
            raise ValueError("adaptive=True runs the trials one after another (the sampler needs each value): "
                             "use n_jobs=1")
        self._certificate: Certificate | None = None
        # final=FinalRun(train, privacy): train(best_params, None, rng) on the full data (it closes over the data,
        # as the objective does; subsampled tuning needs the data itself: use PrivateTuner(tuning_rate=...)).
        fixed = isinstance(privacy, (Mechanism, PrivacyProfile)) and not (self.adaptive or self.reveal_k)
        if final is not None and not (isinstance(final, FinalRun) and final.data == "full" and fixed):
            raise ValueError("final= takes a privselect.FinalRun on the full data (data='full'), with privacy a Mechanism "
                             "or PrivacyProfile, adaptive=False and reveal_k=False")
        self.final = final
        self.search, self.search_space = self._check_search(search, search_space)

    def _check_search(self, search: Any, search_space: Any) -> tuple[AdaptiveSearch | None, dict | None]:
        if search is None:
            if search_space is None:
                return None, None
            if not isinstance(search_space, Mapping) or not search_space:
                raise ValueError("search_space must be a dict name -> law (e.g. ps.space.from_public(...))")
            if self._sampler is not None or self.adaptive:
                raise ValueError("search_space= without search= draws each trial's declared hyperparameters i.i.d. "
                                 "from its laws (e.g. a public prior): it takes no sampler= and no adaptive=True")
            space = {name: search_law(name, law) for name, law in search_space.items()}
            validate_space(space)
            return None, space  # i.i.d. from these laws (a public prior costs no privacy: the certificate is i.i.d.)
        if not isinstance(search, AdaptiveSearch):
            raise TypeError(f"search must be a privselect.AdaptiveSearch, got {type(search).__name__}")
        if (self._sampler is not None or self.adaptive or self.reveal_k or self.final is not None
                or self._plan.n_jobs != 1 or self._plan.isolate):
            raise ValueError("search= is the study's sampler: it runs trials one after another (n_jobs=1) in this "
                             "process (the search learns from each trial), keeps K inside, and takes no sampler=, "
                             "adaptive=True, reveal_k=True, final= or isolate=True")
        if not isinstance(search_space, Mapping) or not search_space:
            raise ValueError("search= needs search_space: the laws the adaptive search draws from, in Optuna's "
                             "vocabulary or privselect's, e.g. {'lr': optuna.distributions.FloatDistribution(1e-4, "
                             "1e-1, log=True)}; the objective suggests them with the same laws")
        space = {name: search_law(name, law) for name, law in search_space.items()}
        validate_space(space)
        search.start(space, self._plan.direction)  # builds the grid now: refuses a bad space early
        return search, space

    def _composed_privacy_message(self, privacy: Any) -> str:
        """What to do when adaptive=True or reveal_k=True meets a privacy that is not a Mechanism."""
        flag = " and ".join(f"{name}=True" for name, on in (("adaptive", self.adaptive), ("reveal_k", self.reveal_k)) if on)
        given = "a callable" if callable(privacy) and not isinstance(privacy, PrivacyProfile) else type(privacy).__name__
        why = ("the sampler sees every trial's value, so K and every trial are released and the trials are composed"
               if self.adaptive else "K and every trial are released, so the trials are composed")
        return (f"{flag}: {why}, which needs privacy to be one fixed Mechanism (e.g. ps.Gaussian(...)), but privacy "
                f"is {given}. Either pass adaptive=False{' and reveal_k=False' if self.reveal_k else ''} (a "
                "the default sampler, RandomSampler; only the best trial is released, and a callable privacy "
                "with privacy_space is certified), or pass as privacy one Mechanism that dominates every trial's "
                "privacy (for Gaussian trials: the Gaussian of the smallest noise multiplier privacy_space can draw).")

    privacy = property(lambda self: self._privacy.privacy, doc="The privacy of one trial, as declared.")
    k = property(lambda self: self._plan.k)
    seed = property(lambda self: self._plan.seed)
    direction = property(lambda self: self._plan.direction)

    def _check_sampler(self, optuna, sampler) -> Any:
        samplers = optuna.samplers
        if sampler is None or type(sampler) is samplers.RandomSampler:
            return None  # i.i.d. draws from each trial's own generator (the RandomSampler's law)
        if isinstance(sampler, samplers.GridSampler):
            raise PrivateStudyError(
                "GridSampler visits the grid without replacement, which the selection theorems do not cover; use "
                "trial.suggest_categorical over the grid values with the default sampler (with replacement)"
            )
        if not self.adaptive:
            reason = ("draws dependent low-discrepancy points" if isinstance(sampler, samplers.QMCSampler)
                      else "chooses candidates from past trial values")
            raise PrivateStudyError(
                f"{type(sampler).__name__} {reason}; the selection certificate needs i.i.d. candidates "
                "(the default sampler). For a search that learns from earlier trials, use "
                "search=ps.AdaptiveSearch(model='parzen' (TPE-like) or 'gp', density_ratio=(2, 0.75)) with "
                "search_space=: its density stays within (C, c) of the prior and ps.certify_adaptive certifies it "
                "with K hidden (docs/adaptive.md). adaptive=True keeps this sampler and certifies the search as a "
                "composition of every trial (a much larger epsilon)."
            )
        return sampler

    @property
    def certificate(self) -> Certificate:
        """Certificate of the whole search (computed before any trial; data-independent)."""
        if self._certificate is None and self.search is not None:
            self._certificate = adaptive_certificate(self.search, self._privacy, self.search_space, self.k,
                                                     self.delta)
        if self._certificate is None and self.final is not None:
            base = self._privacy.base
            assert isinstance(base, (Mechanism, PrivacyProfile))  # final= needs a fixed privacy (checked in __init__)
            self._certificate = certify_pipeline(base, self.k, self.delta, final=self.final.privacy,
                                                 accountant=self.accountant)
        if self._certificate is None:
            self._certificate = self._privacy.certificate(self.k, self.delta, reveal_k=self.adaptive or self.reveal_k,
                                                          accountant=self.accountant)
        return self._certificate

    def _issued(self) -> Issued:
        """What this study certifies, for ``calibrate`` (the noise multiplier; NoiseCalibration)."""
        return Issued("PrivateStudy", self.k, self.delta, self._plan.score_noise,
                      None if self.search is None else self.search.ratio,
                      None if self.final is None else self.final.privacy,
                      "mixture" if self.adaptive or self.reveal_k else None, self.accountant,
                      CALLABLE_PRIVACY if self._privacy.depends_on_params else None)

    def _adopt(self, run: Mechanism, final: Mechanism | None) -> None:
        """Certify ``run`` (the calibrated one) for every trial; the final run too when ``final`` is given."""
        self._privacy = RunPrivacy(run, self._plan.score_noise, self.privacy_space, None)
        if final is not None and self.final is not None:
            self.final = dataclasses.replace(self.final, privacy=final)
        self._certificate = None

    def __getattr__(self, name: str):
        if name in ("best_params", "best_value", "best_trial"):
            raise AttributeError(
                f"a PrivateStudy keeps no trials: use result = study.optimize(objective), then result.{name} "
                "(only the winner is released)")
        if name in _STUDY_API:
            raise AttributeError(f"PrivateStudy.{name}: {_NO_TRIALS}. optuna.visualization cannot plot a private "
                                 "study for the same reason")
        raise AttributeError(f"{type(self).__name__!s} has no attribute {name!r}")

    def __iter__(self):
        raise TypeError(f"{_NO_TRIALS}. optuna.visualization cannot plot a private study for the same reason")

    def _candidate_check(self):
        return self._privacy.candidate_check(self.k, self.delta, self.accountant, None)

    def optimize(self, objective: Callable[[PrivateTrial], Any], n_trials: Any = None, timeout: Any = None,
                 **optuna_options: Any) -> PrivateStudyResult:
        """Run K trials of ``objective`` (returning a value or (value, output)); release the best."""
        if n_trials is not None:
            raise PrivateStudyError("n_trials is refused: the number of trials is K, drawn from k before any trial "
                                    "(a fixed, released count is what reveal_k=True certifies)")
        if timeout is not None:
            raise PrivateStudyError("timeout is refused: it makes the number of completed trials depend on how "
                                    "long the data takes to train on, which no certificate covers")
        if optuna_options:
            reasons = "; ".join(f"{name}=: {_OPTIMIZE_OPTIONS.get(name, 'not an option of a private study')}"
                                for name in sorted(optuna_options))
            raise PrivateStudyError(f"optimize() takes only the objective here. {reasons}")
        if not callable(objective):
            raise TypeError("objective must be callable: objective(trial) -> value or (value, output)")
        check_signature(objective, ("trial",), "objective")
        certificate = self.certificate
        if self.search_space is not None:  # a law mismatch is the code's: named now, before any trial
            check_declared_laws(objective, self.search_space, self.privacy_space)
        return released(self._optimize, objective, certificate)

    def _optimize(self, objective: Callable[[PrivateTrial], Any], certificate: Certificate) -> PrivateStudyResult:
        if self.search is None and self.search_space is not None:  # i.i.d. from the declared laws
            drawn = _SearchTask(objective, _LawDraws(self.search_space), self.search_space, self.privacy_space,
                                self._candidate_check())
            selected, final_output = run_pipeline(drawn, None, self._plan, final=self.final, tuning_rate=1.0)
        elif self.search is not None:
            selected, final_output = self._optimize_search(objective, self.search), None
        elif self._sampler is None:
            task = _ObjectiveTask(objective, self.privacy_space, self._candidate_check())
            selected, final_output = run_pipeline(task, None, self._plan, final=self.final, tuning_rate=1.0)
        else:
            selected, final_output = self._optimize_adaptive(objective), None
        result = self._result(selected, certificate)
        return dataclasses.replace(result, final_output=final_output) if final_output is not None else result

    def _optimize_search(self, objective, search: AdaptiveSearch):
        """The adaptive search: its state (the released values so far) lives in this frame only."""
        space = self.search_space
        assert space is not None  # _check_search sets search and search_space together
        task = _SearchTask(objective, search.start(space, self._plan.direction), space, self.privacy_space,
                           self._candidate_check())
        try:
            return run_selection(task, None, self._plan, observe=task.observe)
        finally:
            task.state = None

    def _optimize_adaptive(self, objective):
        optuna = _optuna()
        with silenced():
            study = optuna.create_study(storage=None, sampler=self._sampler, pruner=optuna.pruners.NopPruner(),
                                        direction=self._plan.direction, study_name=self.study_name)
        task = _AdaptiveTask(objective, study, self.privacy_space, self._candidate_check())
        try:
            return run_selection(task, None, self._plan, observe=task.observe)
        finally:
            task.study = None
            del study

    def _result(self, selected, certificate: Certificate) -> PrivateStudyResult:
        revealed = selected.n_runs if (self.adaptive or self.reveal_k) else None
        if not selected.selected:
            return PrivateStudyResult(None, None, None, None, False, certificate, revealed)
        distributions, user_attrs = selected.details
        optuna = _optuna()
        distributions = {name: optuna.distributions.json_to_distribution(text) for name, text in distributions.items()}
        frozen = optuna.trial.FrozenTrial(
            number=-1, trial_id=-1, state=optuna.trial.TrialState.COMPLETE, value=selected.score, values=None,
            datetime_start=RELEASED_TRIAL_TIME, datetime_complete=RELEASED_TRIAL_TIME, params=selected.params,
            distributions=distributions, user_attrs=user_attrs, system_attrs={}, intermediate_values={})
        frozen._validate()
        return PrivateStudyResult(selected.params, selected.score, selected.output, frozen, True, certificate,
                                  revealed)

    def dry_run(self, objective_on_public_data: Callable[[PrivateTrial], Any]) -> PrivateStudyResult:
        """Run ONE trial of an objective bound to public or synthetic data; re-raise whatever goes wrong.

        An Optuna objective closes over its data, so pass the objective built on public or
        synthetic data. Fresh seeds are used (never the secret ``seed``); K is not drawn.
        """
        check_signature(objective_on_public_data, ("trial",), "objective")
        task: _ObjectiveTask | _SearchTask = _ObjectiveTask(objective_on_public_data, self.privacy_space, self._candidate_check())
        if self.search is not None and self.search_space is not None:  # the adaptive search's first trial: its law is
            # the prior (no history yet); _check_search sets search and search_space together
            task = _SearchTask(objective_on_public_data, self.search.start(self.search_space, self._plan.direction),
                               self.search_space, self.privacy_space, self._candidate_check())
        elif self.search_space is not None:  # i.i.d. from the declared laws (a public prior)
            task = _SearchTask(objective_on_public_data, _LawDraws(self.search_space), self.search_space,
                               self.privacy_space, self._candidate_check())
        try:
            selected = dry_run(task, None, self._plan)
        except _optuna().TrialPruned:
            raise PrivateStudyError(f"raise optuna.TrialPruned() was called: {_PRUNING} Inside optimize() such a "
                                    "trial scores the worst value.") from None
        return self._result(selected, self.certificate)
