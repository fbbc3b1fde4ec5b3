"""PrivateTuner: private hyperparameter selection around any DP trainer (a thin front end on the engine).

The procedure and the release rules are those of [`privselect.tuning.engine`][privselect.tuning.engine]: K drawn
once, candidates i.i.d. from the search space, every run completes, only the best run leaves
(its hyperparameters, score and output) with one certificate for the whole procedure, asked of
``ps.certify``. K itself is NOT released: the selection theorems bound the winner alone, and
the pair (K, winner) can be far less private (for a pure ε-DP binary score, best-of-k has
likelihood ratio e^{kε}). ``reveal_k=True`` releases K as ``n_runs`` and certifies with the
K-mixture bound instead. The optional progress bar counts runs on the operator's terminal,
which shows K: do not publish it.

The score is part of the DP output of a run. Either the trainer privatises it (e.g. a noisy
validation accuracy whose noise is included in ``privacy``) or the tuner does it: pass
``score_noise=ps.Laplace(b, sensitivity=s)`` (or ``ps.Gaussian``) and the trainer's raw score
(of sensitivity ``s``) gets that noise, and the noise mechanism is composed into ``privacy``.
The privacy you declare must cover everything the trainer does, failures included: a crash
that depends on the data is part of the mechanism. ``tuner.calibrate(target, sample_rate=..., steps=...)`` sets
the DP-SGD noise multiplier of the certificate the tuner issues (``ps.calibrate_noise``;
[`privselect.tuning.calibration`][privselect.tuning.calibration]); ``calibrate_k_mean`` sets K's mean.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .. import _validation as check
from ..accounting.base import Accountant
from ..accounting.profile import PrivacyProfile
from ..errors import CandidatePrivacyError, TrainerContractError
from ..mechanisms import Gaussian, Laplace, Mechanism
from ..selection.calibrate import calibrate_k_mean
from ..selection.certify import Certificate
from ..selection.distributions import KDistribution
from .adaptive import AdaptiveSearch, AdaptiveTask
from .backends import BACKENDS
from .calibration import CALLABLE_PRIVACY, Issued, NoiseCalibration
from .engine import SelectionPlan, dry_run, released, run_selection
from .pipeline import FinalRun, run_pipeline, split_records, tuning_rate_of
from .privacy import CandidateCheck, RunPrivacy
from .run import RunSeeds, StopSelection
from .space import SearchSpace, draw, validate_space

__all__ = ["BACKENDS", "PrivateTuner", "TuningResult"]



@dataclass(frozen=True, repr=False)
class TuningResult:
    """What leaves the tuner: the winner only, and the certificate of the whole procedure."""

    best_params: Any
    best_score: float | None
    best_output: Any
    selected: bool
    certificate: Certificate
    n_runs: int | None = None  # K, released only with reveal_k=True
    final_output: Any = None  # the final run's model, when the tuner was given final=

    @property
    def profile(self) -> PrivacyProfile | None:
        """The profile of the whole procedure the certificate used (``certificate.profile``): plot it, or pass
        the result's certificate to ``ps.risk``. Data-independent, like the certificate."""
        return self.certificate.profile

    @property
    def trials(self) -> Any:
        raise AttributeError("TuningResult.trials: a private tuner keeps no runs by design: only the winner leaves "
                             "(result.best_params, result.best_score, result.best_output, result.certificate). A "
                             "list of runs would publish every run's score, which the certificate does not cover")

    def to_dict(self) -> dict[str, Any]:
        out = {
            "best_params": self.best_params,
            "best_score": self.best_score,
            "selected": self.selected,
            "certificate": self.certificate.to_dict(),
        }
        if self.n_runs is not None:
            out["n_runs"] = self.n_runs
        return out

    def __repr__(self) -> str:
        k = "" if self.n_runs is None else f", n_runs={self.n_runs}"
        if not self.selected:
            return f"TuningResult(nothing selected (K = 0){k}, certificate={self.certificate})"
        return (f"TuningResult(best_params={self.best_params!r}, best_score={self.best_score!r}{k}, "
                f"certificate={self.certificate})")


@dataclass(frozen=True)
class _TrainerTask:
    """One run of the tuner: draw the candidate from the run's params seed, train with its train seed."""

    train: Callable[..., Any]
    space: SearchSpace
    candidate_check: CandidateCheck | None = None

    def check_candidate(self, seeds: RunSeeds) -> str | None:
        """The candidate's privacy problem, or None; the engine asks it for all K runs before the first run."""
        if self.candidate_check is None:
            return None
        return self.candidate_check.problem(draw(self.space, seeds.params_rng()))

    def __call__(self, data: Any, seeds: RunSeeds) -> tuple[Any, Any, Any]:
        # the candidate's privacy was checked for all K runs before the first one (check_candidate): it comes from
        # the seed alone, so a check here could only add what a run changed in between, a data-dependent event
        params = draw(self.space, seeds.params_rng())
        return self.train(params, data, seeds.train_rng()), params, None


@dataclass(frozen=True)
class _AdaptiveCandidate:
    """One run of an adaptive search: the candidate comes from the search's law; check it, then train."""

    train: Callable[..., Any]
    candidate_check: CandidateCheck | None = None

    def __call__(self, params: Any, data: Any, seeds: RunSeeds) -> tuple[Any, Any, Any]:
        if self.candidate_check is not None:
            problem = self.candidate_check.problem(params)
            if problem is not None:
                raise StopSelection(CandidatePrivacyError(problem))
        return self.train(params, data, seeds.train_rng()), params, None


def adaptive_certificate(search: AdaptiveSearch, run_privacy: RunPrivacy, space: Any, k: KDistribution,
                         delta: float) -> Certificate:
    """The certificate of an adaptive search (DP-HyPO; ``ps.certify_adaptive``) for the front ends."""
    from ..selection.adaptive import certify_adaptive

    base = run_privacy.base
    if base is None:
        raise ValueError(f"an adaptive search needs a finite law of the hyperparameters privacy(params) reads: "
                         f"{run_privacy.continuous_reason}")
    if isinstance(base, PrivacyProfile):
        if not isinstance(base.mechanism, Mechanism):
            raise TypeError("an adaptive search is certified from the run's RDP curve: privacy must be a Mechanism "
                             "(or a profile built from one)")
        base = base.mechanism
    return certify_adaptive(base, k, delta, density_ratio=search.ratio)


def check_signature(function: Callable[..., Any], arguments: tuple[str, ...], role: str) -> None:
    """Refuse, before any run, a callable that cannot take ``arguments`` positionally."""
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):  # builtins without a signature: nothing to check
        return
    try:
        signature.bind(*arguments)
    except TypeError:
        raise TrainerContractError(
            f"{role} must accept {len(arguments)} positional argument(s) ({', '.join(arguments)}); its signature is "
            f"{signature}") from None


class PrivateTuner(NoiseCalibration):
    """Tune a DP trainer privately: random K runs, release the best, certify the whole procedure.

    Parameters
    ----------
    train : callable ``train(params, data, rng) -> score | (score, output)``
        One DP training run. ``rng`` is the run's own ``numpy.random.Generator``: use it, never
        store it (nor a seed) in the output; the release guard refuses it.
    search_space : dict of ``privselect.space`` distributions, or ``callable(rng) -> params``
    privacy : Mechanism, PrivacyProfile, or callable ``params -> Mechanism``
        The privacy of ONE run. A callable means hyperparameters change the privacy; the
        certificate averages the candidates' profiles over the space's law (exact for finite
        laws; checked at construction) or uses KRW Cor. 6.2, whichever is smaller.
    k : KDistribution
        Distribution of the number of runs (``ps.Geometric(mean=10)``, ...).
    delta : float
        Target delta of the certificate.
    direction : "maximize" or "minimize"
    seed : int or None
        A SECRET key: K, the candidates and every run's noise follow from it. Never publish it
        or reuse it on updated data; None (the default) draws fresh entropy.
    n_jobs : int
        Number of parallel workers (1: sequential; -1: every core).
    backend : str
        Where the runs execute ([`privselect.tuning.backends`][privselect.tuning.backends]): "sequential", "loky",
        "threading", "dask" or "ray"; the result does not depend on it.
    progress
        show a tqdm bar of runs done (off by default; it shows K to the operator).
    score_noise : ps.Gaussian or ps.Laplace, optional
        Noise the tuner adds to the trainer's raw score (noise scale = parameter x the
        mechanism's ``sensitivity``, the raw score's sensitivity); composed into ``privacy``.
    base_epsilon : float, optional
        ε_Q of KRW Cor. 6.2 for callable privacy (searched when None and the space is finite).
    reveal_k : bool
        Release K as ``result.n_runs``; the certificate is then the K-mixture bound.
    final : FinalRun, optional
        Train the final model with the winner's hyperparameters and release it with the winner
        (``result.final_output``); the certificate covers the selection and the final run
        (docs/pipelines.md).
    tuning_rate : float in (0, 1]
        Run the candidates on one Poisson subsample of the records of this rate, drawn once and
        independently of the data (Koskela, Kulkarni 2023); ``privacy`` is then that of one run on
        the subsample. ``split(data, keep_mask) -> data`` takes the records (default: rows of an
        array or of a tuple of arrays).
    release : "refuse" (default) or "strip"
        The winner is released by value ([`privselect.tuning.release`][privselect.tuning.release]); a run whose
        output holds randomness state scores worst ("refuse"), or has it set to None ("strip").
    isolate : bool
        Run every candidate in a fresh forked process with stdout and stderr closed at the
        file-descriptor level ([`privselect.tuning.isolation`][privselect.tuning.isolation]): for trainer code
        you do not trust. A run that exits, is killed or leaves threads or ``atexit`` handlers
        behind scores worst. POSIX only.
    search : ps.AdaptiveSearch, optional
        An adaptive search that learns from earlier runs (a Gaussian process or a Parzen model), each
        candidate drawn from a density within ``density_ratio=(C, c)`` of the search space's law;
        certified by ``ps.certify_adaptive`` (DP-HyPO, docs/adaptive.md). Sequential (n_jobs=1), K not
        revealed, no final run or subsample.
    accountant
        the accountant ``certify`` builds the base profile with: a registered name, or a configured
        `Accountant` (``ps.get_accountant("prv", eps_error=1e-2)``) that carries its options.
    """

    def __init__(self, train: Callable[..., Any], search_space: SearchSpace, privacy: Any, k: KDistribution,
                 delta: float, *, direction: str = "maximize", seed: int | None = None, n_jobs: int = 1,
                 backend: str = "loky", progress: bool = False, score_noise: Gaussian | Laplace | None = None,
                 base_epsilon: float | None = None, reveal_k: bool = False, release: str = "refuse",
                 accountant: str | Accountant = "auto",
                 final: FinalRun | None = None, tuning_rate: float = 1.0,
                 split: Callable[[Any, Any], Any] | None = None, isolate: bool = False,
                 search: AdaptiveSearch | None = None) -> None:
        if not callable(train):
            raise TypeError("train must be callable: train(params, data, rng) -> score or (score, output)")
        check_signature(train, ("params", "data", "rng"), "train")
        self.train = train
        self.search_space = validate_space(search_space)
        if not isinstance(k, KDistribution):
            raise TypeError(f"k must be a distribution of K (e.g. ps.Geometric(mean=10)), got {type(k).__name__}")
        self.delta = check.delta_scalar("delta", delta)
        base_epsilon = None if base_epsilon is None else check.positive("base_epsilon", base_epsilon)
        self._privacy = RunPrivacy(privacy, score_noise, self.search_space, base_epsilon)
        self.k, self.seed, self.direction, self.backend, self.n_jobs = k, seed, direction, backend, n_jobs
        self.progress, self.release, self.isolate = bool(progress), release, bool(isolate)
        self._plan()  # validates
        self.reveal_k = bool(reveal_k)
        if self.reveal_k and not isinstance(privacy, Mechanism):
            raise ValueError("reveal_k=True composes the base run: privacy must be a Mechanism")
        self.accountant = accountant
        self._certificate: Certificate | None = None
        self.final, self.tuning_rate = final, tuning_rate_of(tuning_rate)
        self.split = split_records if split is None else split
        if final is not None and not isinstance(final, FinalRun):
            raise TypeError(f"final must be a privselect.FinalRun, got {type(final).__name__}")
        if self.pipeline and (self.reveal_k or self.heterogeneous):
            raise ValueError("final= and tuning_rate < 1 need privacy as a Mechanism or PrivacyProfile and K kept "
                             "inside (reveal_k=False)")
        if final is not None and final.data == "complement" and self.tuning_rate == 1.0:
            raise ValueError("FinalRun(data='complement') needs tuning_rate < 1")
        if search is not None and not isinstance(search, AdaptiveSearch):
            raise TypeError(f"search must be a privselect.AdaptiveSearch, got {type(search).__name__}")
        self.search = search
        if search is not None:
            if callable(self.search_space) and not isinstance(self.search_space, dict):
                raise ValueError("search= needs search_space as a dict of privselect.space distributions (its law is "
                                 "the prior the density ratio refers to)")
            if self.reveal_k or self.pipeline or n_jobs != 1 or self.isolate:
                raise ValueError("search= runs the candidates one after another (n_jobs=1) in this process (the "
                                 "search learns from each run: isolate=False), keeps K inside (reveal_k=False) and "
                                 "has no final= or tuning_rate < 1")

    def _plan(self) -> SelectionPlan:
        return SelectionPlan(self.k, self.seed, self.direction, self.backend, self.n_jobs, self.progress,
                             self.score_noise, self.release, self.isolate)

    privacy = property(lambda self: self._privacy.privacy, doc="The privacy of one run, as declared.")
    score_noise = property(lambda self: self._privacy.score_noise)
    base_epsilon = property(lambda self: self._privacy.base_epsilon)
    heterogeneous = property(lambda self: self._privacy.depends_on_params,
                             doc="True when the hyperparameters change the privacy of a run.")

    def thresholds(self):
        """KRW Cor. 6.2 thresholds at ``base_epsilon`` (callable privacy with base_epsilon only)."""
        from ..selection.calibrate import cor62_thresholds

        if not self.heterogeneous or self.base_epsilon is None:
            raise ValueError("thresholds apply when privacy is a callable params -> Mechanism and base_epsilon is set")
        return cor62_thresholds(self.base_epsilon, self.delta, self.k)

    @property
    def pipeline(self) -> bool:
        """True when the tuner runs a pipeline (a final run, or candidates on a subsample)."""
        return self.final is not None or self.tuning_rate < 1

    @property
    def certificate(self) -> Certificate:
        """The certificate of the whole procedure; depends on privacy, k and delta only (not on data)."""
        if self._certificate is None and self.pipeline:
            from ..selection.pipeline import certify_pipeline

            final, base = self.final, self._privacy.base
            assert isinstance(base, (Mechanism, PrivacyProfile))  # a pipeline needs a fixed privacy (checked in __init__)
            self._certificate = certify_pipeline(
                base, self.k, self.delta, final=None if final is None else final.privacy,
                tuning_rate=self.tuning_rate, final_data="full" if final is None else final.data,
                accountant=self.accountant)
        if self._certificate is None and self.search is not None:
            self._certificate = adaptive_certificate(self.search, self._privacy, self.search_space, self.k,
                                                     self.delta)
        if self._certificate is None:
            self._certificate = self._privacy.certificate(self.k, self.delta, reveal_k=self.reveal_k,
                                                          accountant=self.accountant)
        return self._certificate

    def calibrate_k_mean(self, target_epsilon: float,
                         family: Callable[[float], KDistribution] | None = None) -> PrivateTuner:
        """Set K to the largest mean (same family unless ``family`` is given) meeting ``target_epsilon``."""
        if self.heterogeneous or self.reveal_k or self.pipeline or self.search is not None:
            raise ValueError("calibrate_k_mean supports the selection certificate (fixed privacy per run, K not "
                             "revealed, no final run or subsample)")
        if family is None:
            family = self.k.with_mean  # the same law (same eta, same n) at another mean
        base = self._privacy.base
        assert isinstance(base, (Mechanism, PrivacyProfile))  # fixed privacy per run (checked above)
        options: dict[str, Any] = {} if isinstance(base, PrivacyProfile) else {"accountant": self.accountant}
        min_mean = 1.0 + 1e-9 if self.k.min_k >= 1 else 1e-3  # K >= 1 (TNB laws): mean > 1
        mean = calibrate_k_mean(base, target_epsilon, self.delta, family=family, min_mean=min_mean, **options)
        self.k = family(mean)
        self._certificate = None
        return self

    def _issued(self) -> Issued:
        """What this tuner certifies, for ``calibrate`` (the noise multiplier; NoiseCalibration)."""
        refusal = None
        if self.heterogeneous:
            refusal = CALLABLE_PRIVACY
        elif self.tuning_rate < 1:
            refusal = (f"tuning_rate={self.tuning_rate!r}: calibrate certifies candidates on the full data "
                       "(ps.calibrate_noise has no tuning subsample); calibrate with tuning_rate=1")
        return Issued("PrivateTuner", self.k, self.delta, self.score_noise, None if self.search is None else
                      self.search.ratio, None if self.final is None else self.final.privacy,
                      "mixture" if self.reveal_k else None, self.accountant, refusal)

    def _adopt(self, run: Mechanism, final: Mechanism | None) -> None:
        """Train and certify ``run`` (the calibrated one); the final run too when ``final`` is given."""
        self._privacy = RunPrivacy(run, self.score_noise, self.search_space, None)
        if final is not None and self.final is not None:
            self.final = dataclasses.replace(self.final, privacy=final)
        self._certificate = None

    # -- running ----------------------------------------------------------------------------

    def _task(self) -> _TrainerTask:
        check_candidate = self._privacy.candidate_check(self.k, self.delta, self.accountant, None)
        return _TrainerTask(self.train, self.search_space, check_candidate)

    def run(self, data: Any) -> TuningResult:
        """Run the private selection on ``data``; release the best run and the certificate.

        Raises [`AllRunsFailedError`][privselect.errors.AllRunsFailedError] (no run data) if every
        run failed, and [`RandomnessLeakError`][privselect.tuning.guard.RandomnessLeakError] if the winner
        holds randomness state (``release="refuse"``). Every exception leaves from a clean frame
        ([`released`][privselect.tuning.engine.released]): its traceback holds no run data, K or seed.
        """
        certificate = self.certificate  # data-independent; computed before anything runs
        return released(self._run, data, certificate)

    def _run(self, data: Any, certificate: Certificate) -> TuningResult:
        if self.search is not None:
            selected, final_output = self._run_search(self.search, data), None
        elif self.pipeline:
            selected, final_output = run_pipeline(self._task(), data, self._plan(), final=self.final,
                                                  tuning_rate=self.tuning_rate, split=self.split)
        else:
            selected, final_output = run_selection(self._task(), data, self._plan()), None
        revealed = selected.n_runs if self.reveal_k else None
        if not selected.selected:
            return TuningResult(None, None, None, False, certificate, revealed)
        return TuningResult(selected.params, selected.score, selected.output, True, certificate, revealed,
                            final_output)

    def _run_search(self, search: AdaptiveSearch, data: Any):
        """The adaptive search: its state (the released scores so far) lives in this frame only."""
        space = self.search_space
        assert isinstance(space, Mapping)  # __init__ refuses search= without a dict of distributions
        check_candidate = self._privacy.candidate_check(self.k, self.delta, self.accountant, None)
        task = AdaptiveTask(search.start(space, self.direction),
                            _AdaptiveCandidate(self.train, check_candidate))
        try:
            return run_selection(task, data, self._plan(), observe=task.observe)
        finally:
            task.state = None

    def dry_run(self, public_or_synthetic_data: Any) -> TuningResult:
        """Run ONE candidate on public or synthetic data and re-raise whatever goes wrong.

        Use it before ``run``: a NameError, a wrong signature, a broken return value, a
        non-finite score or a generator left in the output surface here, on data that is not
        private. Fresh seeds are used (never the secret ``seed``); K is not drawn.
        """
        selected = dry_run(self._task(), public_or_synthetic_data, self._plan())
        return TuningResult(selected.params, selected.score, selected.output, True, self.certificate, None)


__all__ += ["adaptive_certificate", "check_signature"]
