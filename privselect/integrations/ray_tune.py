"""Ray Tune, certified: keep the function trainable and ``param_space``, swap the import, get the best trial.

Three arguments and one import change from a plain ``ray.tune.Tuner``::

    from privselect.integrations.ray_tune import Tuner          # was: from ray.tune import Tuner
    result = Tuner(trainable, param_space={"lr": tune.loguniform(1e-4, 1e-1)},
                   privacy=one_run, k=ps.Geometric(mean=10), delta=1e-5,
                   tune_config=tune.TuneConfig(metric="accuracy", mode="max")).fit()
    result.best_params, result.best_score, result.certificate

It is a front end on privselect's run engine ([`privselect.tuning.engine`][privselect.tuning.engine]), with Ray
Tune as the place where the runs execute: K is drawn from ``k`` and every run's seeds from ``seed`` exactly as
[`PrivateTuner`][privselect.tuning.PrivateTuner] draws them, the configurations are drawn by privselect from the
param space (its law is the prior: ``tune.uniform``, ``tune.loguniform``, ``tune.randint`` and ``tune.choice``
become [`Uniform`][privselect.tuning.space.Uniform], [`LogUniform`][privselect.tuning.space.LogUniform],
[`IntUniform`][privselect.tuning.space.IntUniform] and [`Choice`][privselect.tuning.space.Choice]; other
domains are sampled by Ray's own law from the run's generator), and the K runs are Ray Tune trials on the
user's cluster: a grid over the run indices, one trial per run, no search algorithm, so Ray adds no
randomness of its own. The trainable reads its configuration as usual, and its own seed under the reserved key
[`SEED_KEY`][privselect.integrations.ray_tune.SEED_KEY] (it need not use it).

Inside each trial, the run ends inside privselect's run boundary
([`execute_run`][privselect.tuning.run.execute_run]): its ``tune.report`` calls are kept in the trial (they
never reach Ray), the metric of its LAST report is its score, its last checkpoint is read by the
``checkpoint_loader`` the user gives (in the trial), and that value is rebuilt by the release allowlist
([`release_value`][privselect.tuning.release.release_value]). A trial that raises, reports no ``metric`` last, or
whose loader fails scores the worst value. Ray sees one report per trial: the score and the release value.

What leaves ``fit()`` is a [`TuneResult`][privselect.integrations.ray_tune.TuneResult]: the winner's params,
score and loaded checkpoint, and the certificate of the whole selection. Never Ray's ``ResultGrid``.

Refused, with the reason: schedulers and stoppers (they act on intermediate results, so which trials finish
depends on the data; PBT also copies weights between trials), any ``search_alg`` (concurrency goes through
``max_concurrent_trials``), ``num_samples`` (K is drawn, not chosen), ``time_budget_s``, ``fail_fast``,
callbacks and progress reporters (they see every trial; ``verbose`` is set to 0), ``checkpoint_config`` (no
trial's checkpoint reaches Ray), ``tune.grid_search`` and ``tune.sample_from`` in the param space.

A Ray trainable is trusted code: Ray moves its results by pickle, so the isolation guarantees
(``isolate=True``) do not cover it. What Ray itself shows or keeps is the operator's (docs/ray_tune.md).
"""

from __future__ import annotations

import inspect
import math
import os
import shutil
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .. import _validation as check
from ..accounting.base import Accountant
from ..errors import PrivateStudyError
from ..mechanisms import Gaussian, Laplace
from ..selection.certify import Certificate
from ..selection.distributions import KDistribution
from ..tuning.backends import MAX_REEXECUTIONS, Backend, register_backend
from ..tuning.engine import SelectionPlan, released, run_selection
from ..tuning.privacy import CandidateCheck, RunPrivacy
from ..tuning.run import RunOutcome, RunSeeds, execute_run
from ..tuning.space import Choice, Distribution, IntUniform, LogUniform, Uniform, draw
from .coverage import covers

__all__ = ["SEED_KEY", "Tuner", "TuneResult", "RayTuneRefusal", "ray_law"]

SEED_KEY = "privselect_seed"
"""The reserved config key holding the trial's own seed (an int in [0, 2**32)), from privselect's seed tree."""

RUN_KEY = "privselect_run"
"""The one key of Ray's param space: the run's index (Ray's grid over 0..K-1; Ray's side only)."""

SCORE_KEY = "privselect_score"
"""The one metric a trial reports to Ray: its score after the run boundary (NaN for a failed run)."""

_PAYLOAD = "release.pickle"
_BACKEND = "ray-tune"


class RayTuneRefusal(PrivateStudyError):
    """A Ray Tune option that would publish trials or make K or the trials depend on the data."""


# -- the param space: Ray's domains as privselect's laws ------------------------------------------------------


@dataclass(frozen=True)
class RayDomainLaw(Distribution):
    """A Ray Tune domain with no privselect counterpart, sampled by Ray's own law from privselect's generator."""

    domain: Any

    def sample(self, rng: np.random.Generator) -> Any:
        return self.domain.sample(random_state=rng)


def ray_law(name: str, domain: Any) -> Distribution:
    """The law of one Ray Tune domain: privselect's own for uniform, loguniform, randint and choice (same law,
    drawn from the run's generator), Ray's sampler on the same generator otherwise (quantized, normal,
    lograndint, ...). ``sample_from`` and grid domains are refused."""
    from ray.tune.search import sample

    sampler = domain.sampler
    if isinstance(domain, sample.Function):
        raise RayTuneRefusal(f"param_space[{name!r}] is tune.sample_from(...): its law is a function privselect "
                             "cannot see (it may read other keys or the global random state); use tune.uniform, "
                             "tune.loguniform, tune.randint, tune.choice or a constant")
    if isinstance(sampler, sample.Grid):
        raise RayTuneRefusal(_GRID.format(name=name))
    if isinstance(domain, sample.Float) and (sampler is None or type(sampler) is sample.Float._Uniform):
        return Uniform(domain.lower, domain.upper)
    if isinstance(domain, sample.Float) and type(sampler) is sample.Float._LogUniform:
        return LogUniform(domain.lower, domain.upper)  # the base changes nothing in the law
    if isinstance(domain, sample.Integer) and (sampler is None or type(sampler) is sample.Integer._Uniform):
        return IntUniform(int(domain.lower), int(domain.upper) - 1)  # tune.randint's upper bound is exclusive
    if isinstance(domain, sample.Categorical) and (sampler is None or type(sampler) is sample.Categorical._Uniform):
        return Choice(domain.categories)
    return RayDomainLaw(domain)


_GRID = ("param_space[{name!r}] is a grid: Ray visits it without replacement, which no selection theorem covers; "
         "use tune.choice over the grid values (drawn with replacement)")


@dataclass(frozen=True)
class ParamLayout:
    """A (possibly nested) param space split into privselect laws (flat names joined by '/') and constants."""

    laws: dict[str, Distribution]
    constants: dict[str, Any]
    order: tuple[tuple[str, ...], ...]  # every leaf's path, in the param space's order

    @classmethod
    def of(cls, param_space: Mapping[str, Any]) -> ParamLayout:
        from ray.tune.search.sample import Domain

        if not isinstance(param_space, Mapping):
            raise TypeError(f"param_space must be a dict, got {type(param_space).__name__}")
        laws: dict[str, Distribution] = {}
        constants: dict[str, Any] = {}
        order: list[tuple[str, ...]] = []

        def walk(space: Mapping[str, Any], path: tuple[str, ...]) -> None:
            for key, value in space.items():
                if not isinstance(key, str):
                    raise TypeError(f"param_space keys must be strings, got {key!r}")
                here = (*path, key)
                name = "/".join(here)
                if name in (SEED_KEY, RUN_KEY):
                    raise ValueError(f"param_space[{name!r}]: the key is reserved by privselect")
                if isinstance(value, Mapping) and "grid_search" in value:
                    raise RayTuneRefusal(_GRID.format(name=name))
                if isinstance(value, Mapping):
                    walk(value, here)
                    continue
                if name in laws or name in constants:
                    raise ValueError(f"param_space: two keys flatten to {name!r}")
                order.append(here)
                if isinstance(value, Domain):
                    laws[name] = ray_law(name, value)
                else:
                    constants[name] = value

        walk(param_space, ())
        return cls(laws, constants, tuple(order))

    def config(self, drawn: Mapping[str, Any]) -> dict[str, Any]:
        """The nested configuration of one run: drawn values and constants in the param space's shape."""
        config: dict[str, Any] = {}
        for path in self.order:
            name = "/".join(path)
            node = config
            for key in path[:-1]:
                node = node.setdefault(key, {})
            node[path[-1]] = drawn[name] if name in self.laws else self.constants[name]
        return config


# -- one trial ------------------------------------------------------------------------------------------------


def trial_seed(seeds: RunSeeds) -> int:
    """The seed a trial reads under ``SEED_KEY``: 32 bits of its training seed (independent of its candidate)."""
    return int(seeds.train.generate_state(1, np.uint32)[0])


class _Reports:
    """A trial's ``tune.report`` calls, kept in the trial: the last metrics and a copy of the last checkpoint."""

    def __init__(self, keep_checkpoint: bool) -> None:
        self.last: dict[str, Any] | None = None
        self.folder = tempfile.mkdtemp(prefix="privselect-trial-") if keep_checkpoint else None
        self.checkpointed = False

    def report(self, metrics: Any, checkpoint: Any = None, **_: Any) -> None:
        if not isinstance(metrics, Mapping):
            raise TypeError("tune.report takes a dict of metrics")
        self.last = dict(metrics)
        if checkpoint is not None and self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
            checkpoint.to_directory(self.folder)  # the trainable may delete its folder once report returns
            self.checkpointed = True

    def output(self, returned: Any) -> None:
        """A function trainable's return value, as Ray reads it: a dict is a last report, a number ``_metric``."""
        if returned is None:
            return
        if isinstance(returned, Mapping):
            self.report(returned)
        elif isinstance(returned, (int, float, np.number)) and not isinstance(returned, bool):
            self.report({"_metric": returned})
        else:
            raise TypeError("a function trainable returns None, a dict of metrics or a number")

    def close(self) -> None:
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)


@dataclass(frozen=True)
class TrialTask:
    """One run: the configuration from the run's params seed, the trainable in its trial, the last report's
    ``metric`` as the score, the loader's value of the last checkpoint as the output."""

    trainable: Callable[..., Any]
    layout: ParamLayout
    metric: str
    checkpoint_loader: Callable[[Any], Any] | None
    candidate_check: CandidateCheck | None
    launch: TuneLaunch = field(repr=False)

    def params(self, seeds: RunSeeds) -> dict[str, Any]:
        return draw(self.layout.laws, seeds.params_rng()) if self.layout.laws else {}

    def check_candidate(self, seeds: RunSeeds) -> str | None:
        return None if self.candidate_check is None else self.candidate_check.problem(self.params(seeds))

    def __call__(self, data: Any, seeds: RunSeeds) -> tuple[Any, Any, Any]:
        from ray.train._internal.session import get_session
        from ray.tune import Checkpoint

        params = self.layout.config(self.params(seeds))
        config = {**params, SEED_KEY: trial_seed(seeds)}
        session: Any = get_session()
        if session is None:
            raise RuntimeError("a Ray Tune trial runs inside a Ray Tune session")
        reports = _Reports(self.checkpoint_loader is not None)
        session.report = reports.report  # tune.report and train.report both call the session's report
        try:
            if inspect.isgeneratorfunction(self.trainable):
                for returned in self.trainable(config):
                    reports.output(returned)
            else:
                reports.output(self.trainable(config))
            if reports.last is None or self.metric not in reports.last:
                raise KeyError("the trial's last report holds no value of the metric")
            output = None
            if self.checkpoint_loader is not None:
                if not reports.checkpointed or reports.folder is None:
                    raise LookupError("the trial reported no checkpoint")
                output = self.checkpoint_loader(Checkpoint.from_directory(reports.folder))
            return (reports.last[self.metric], output), params, None
        finally:
            del session.report
            reports.close()


def _trial(config: dict, shared: tuple[Any, Any, Any, int] | None = None,
           seeds: Mapping[int, RunSeeds] | None = None) -> None:
    """The function trainable Ray runs: one run of privselect, reported to Ray once (score and release value)."""
    from ray.tune import Checkpoint, report

    index = int(config[RUN_KEY])
    assert seeds is not None and shared is not None  # tune.with_parameters passes them
    task, data, rules, driver_pid = shared
    outcome = execute_run(task, data, rules, driver_pid, index, seeds[index])
    if outcome.payload is None:
        report({SCORE_KEY: math.nan})
        return
    with tempfile.TemporaryDirectory(prefix="privselect-release-") as folder:
        with open(os.path.join(folder, _PAYLOAD), "wb") as file:
            file.write(outcome.payload)
        report({SCORE_KEY: outcome.score}, checkpoint=Checkpoint.from_directory(folder))


# -- Ray Tune as the engine's backend -------------------------------------------------------------------------


@dataclass(frozen=True)
class TuneLaunch:
    """How the trials launch on Ray: the operator's options that change nothing in what is selected."""

    max_concurrent_trials: int | None = None
    reuse_actors: bool = False
    resources: Any = None  # the trainable's tune.with_resources request
    run_options: dict[str, Any] = field(default_factory=dict)  # RunConfig's name, storage, failure, sync, log_to_file


@dataclass(frozen=True)
class RayTuneBackend(Backend):
    """The engine's backend for [`Tuner`][privselect.integrations.ray_tune.Tuner]: all runs as one Ray Tune
    experiment, a grid over the run indices. Its storage is a temporary folder removed after the run unless the
    operator names one. A trial Ray loses is retried by Ray (``FailureConfig``, default ``max_failures`` =
    ``MAX_REEXECUTIONS``) with the same index, so the same seeds; a trial that still errors scores worst."""

    name: str = _BACKEND
    in_process: bool = False

    def imap_unordered(self, function, shared, tasks, n_jobs):
        import ray.tune as tune

        task = shared[0]
        if not isinstance(task, TrialTask) or function is not execute_run:
            raise TypeError("the 'ray-tune' backend runs privselect.integrations.ray_tune.Tuner's trials only")
        seeds = {int(index): run_seeds for index, run_seeds in tasks}
        launch = task.launch
        trainable = tune.with_parameters(_trial, shared=shared, seeds=seeds)
        if launch.resources is not None:
            trainable = tune.with_resources(trainable, launch.resources)
        options = dict(launch.run_options)
        temporary = options.get("storage_path") is None
        if temporary:
            options["storage_path"] = tempfile.mkdtemp(prefix="privselect-ray-tune-")
        options.setdefault("failure_config", tune.FailureConfig(max_failures=MAX_REEXECUTIONS))
        try:
            tuner = tune.Tuner(
                trainable, param_space={RUN_KEY: tune.grid_search(sorted(seeds))},
                tune_config=tune.TuneConfig(num_samples=1, max_concurrent_trials=launch.max_concurrent_trials,
                                            reuse_actors=launch.reuse_actors),
                run_config=tune.RunConfig(verbose=0, **options))
            grid = tuner.fit()
            received: set[int] = set()
            for number in range(len(grid)):
                outcome = _outcome(grid[number])
                if outcome is not None and outcome.index in seeds and outcome.index not in received:
                    received.add(outcome.index)
                    yield outcome
            for index in sorted(set(seeds) - received):
                yield RunOutcome(index, math.nan)
        finally:
            if temporary:
                shutil.rmtree(options["storage_path"], ignore_errors=True)


def _outcome(result: Any) -> RunOutcome | None:
    """A trial's RunOutcome from Ray's result: NaN when it errored; the payload from its one checkpoint."""
    index = (result.config or {}).get(RUN_KEY)
    if index is None:
        return None
    score = float((result.metrics or {}).get(SCORE_KEY, math.nan))
    if result.error is not None or not math.isfinite(score) or result.checkpoint is None:
        return RunOutcome(int(index), math.nan)
    with result.checkpoint.as_directory() as folder, open(os.path.join(folder, _PAYLOAD), "rb") as file:
        payload = file.read()
    return RunOutcome(int(index), score, payload)


register_backend(RayTuneBackend())


# -- the front end --------------------------------------------------------------------------------------------


_NOT_A_GRID = ("a privselect TuneResult is not a ResultGrid: only the winner leaves (result.best_params, "
               "result.best_score, result.best_output, result.certificate). Every trial's metrics, configs and "
               "checkpoints would publish what the certificate does not cover")
_GRID_API = frozenset({"get_best_result", "get_dataframe", "num_errors", "num_terminated", "errors", "experiment_path",
                       "filesystem", "metrics", "metrics_dataframe", "config", "checkpoint", "best_checkpoints",
                       "path", "error", "results"})


@dataclass(frozen=True, repr=False)
class TuneResult:
    """What leaves [`Tuner.fit`][privselect.integrations.ray_tune.Tuner.fit]: the winner, and the certificate of the
    whole selection. ``best_output`` is the ``checkpoint_loader``'s value of the winner's last checkpoint (None
    without a loader), rebuilt by the release allowlist."""

    best_params: dict[str, Any] | None
    best_score: float | None
    best_output: Any
    selected: bool
    certificate: Certificate

    def __repr__(self) -> str:
        if not self.selected:
            return f"TuneResult(nothing selected (K = 0); {covers(self.certificate)})"
        return f"TuneResult(best_params={self.best_params!r}, best_score={self.best_score!r}; {covers(self.certificate)})"

    def to_dict(self) -> dict[str, Any]:
        return {"best_params": self.best_params, "best_score": self.best_score, "selected": self.selected,
                "certificate": self.certificate.to_dict()}

    def __getattr__(self, name: str) -> Any:
        if name in _GRID_API:
            raise AttributeError(f"TuneResult.{name}: {_NOT_A_GRID}")
        raise AttributeError(f"{type(self).__name__} has no attribute {name!r}")

    def __iter__(self):
        raise TypeError(_NOT_A_GRID)

    def __len__(self) -> int:
        raise TypeError(_NOT_A_GRID)

    def __getitem__(self, item: Any) -> Any:
        raise TypeError(_NOT_A_GRID)


def _tune_options(tune_config: Any) -> tuple[str, str, dict[str, Any]]:
    """(metric, direction, launch options) from a ``TuneConfig``; refuses what would make K or the trials
    depend on the data."""
    from ray.tune.schedulers import FIFOScheduler

    if tune_config is None:
        raise ValueError("tune_config=tune.TuneConfig(metric=..., mode='max' or 'min') names the score: the metric "
                         "of each trial's last report")
    metric, mode = tune_config.metric, tune_config.mode
    if not isinstance(metric, str) or not metric:
        raise ValueError("tune_config.metric must name the reported metric that scores a trial (its last report)")
    if mode not in ("max", "min"):
        raise ValueError(f"tune_config.mode must be 'max' or 'min', got {mode!r}")
    if tune_config.search_alg is not None:
        raise RayTuneRefusal(
            f"tune_config.search_alg ({type(tune_config.search_alg).__name__}) is refused: privselect draws K and "
            "every configuration from its own seed (the param space is the prior); a search algorithm, Ray's default "
            "random search included, chooses them itself (adaptive ones from the trials' results). Concurrency goes "
            "through tune_config.max_concurrent_trials")
    scheduler = tune_config.scheduler
    if scheduler is not None and type(scheduler) is not FIFOScheduler:
        copies = (" and copies weights between trials" if "PopulationBased" in type(scheduler).__name__ else "")
        raise RayTuneRefusal(
            f"tune_config.scheduler ({type(scheduler).__name__}) acts on intermediate results{copies}: which trials "
            "finish would depend on the data, and the selection theorems need every run to complete. Remove it")
    if tune_config.num_samples != 1:
        raise RayTuneRefusal("tune_config.num_samples is refused: the number of trials is K, drawn from k before any "
                             "trial (a chosen count released with the winner is a different certificate)")
    if tune_config.time_budget_s is not None:
        raise RayTuneRefusal("tune_config.time_budget_s is refused: it makes the number of completed trials depend "
                             "on how long the data takes to train on, which no certificate covers")
    options = {"max_concurrent_trials": tune_config.max_concurrent_trials, "reuse_actors": bool(tune_config.reuse_actors)}
    return metric, "maximize" if mode == "max" else "minimize", options


def _run_options(run_config: Any) -> dict[str, Any]:
    """RunConfig's options that change nothing in what is selected; refuses the rest with the reason."""
    from ray.tune import CheckpointConfig, RunConfig

    if run_config is None:
        return {}
    if not isinstance(run_config, RunConfig):
        raise TypeError(f"run_config must be a ray.tune.RunConfig, got {type(run_config).__name__}")
    if run_config.stop is not None:
        raise RayTuneRefusal("run_config.stop is refused: a stopper acts on intermediate results, so which trials "
                             "finish would depend on the data; every run must complete")
    if run_config.callbacks:
        raise RayTuneRefusal("run_config.callbacks are refused: a callback sees every trial's results; only the "
                             "winner leaves")
    if run_config.progress_reporter is not None:  # verbose is set to 0 whatever it was (its default is 1)
        raise RayTuneRefusal("Ray's console reporter is off: its trial table counts K and prints every trial's "
                             "metrics. Remove progress_reporter=")
    if run_config.checkpoint_config is not None and run_config.checkpoint_config != CheckpointConfig():
        raise RayTuneRefusal("run_config.checkpoint_config is refused: no trial's checkpoint reaches Ray; the "
                             "winner's leaves only through checkpoint_loader=")
    failure = run_config.failure_config
    if failure is not None and failure.fail_fast:
        raise RayTuneRefusal("failure_config.fail_fast is refused: a trial that errors scores worst, and whether it "
                             "errors can depend on the data, so it never stops the selection")
    options = {"name": run_config.name, "storage_path": run_config.storage_path,
               "storage_filesystem": run_config.storage_filesystem, "sync_config": run_config.sync_config,
               "log_to_file": run_config.log_to_file}
    if failure is not None and failure != type(failure)():
        options["failure_config"] = failure
    return {key: value for key, value in options.items() if value is not None}


class Tuner:
    """Ray Tune's ``Tuner``, certified: K ~ ``k`` trials of ``trainable``, the best released with one certificate.

    Parameters
    ----------
    trainable : function trainable ``trainable(config)``
        Reports with ``tune.report({metric: value, ...}, checkpoint=...)`` as usual (or returns a dict).
        Its score is ``metric`` in its LAST report; ``config[SEED_KEY]`` is its own seed. A class
        ``Trainable`` is refused. ``tune.with_parameters`` and ``tune.with_resources`` are kept.
    param_space : dict (nested allowed)
        ``tune.uniform``, ``tune.loguniform``, ``tune.randint``, ``tune.choice``, other Ray domains
        (sampled by Ray's law from privselect's generator) and constants; the prior of the selection.
    privacy : Mechanism, PrivacyProfile, or callable ``params -> Mechanism``
        The privacy of ONE trial. A callable reads the hyperparameters by their names, nested keys
        joined by '/' (``params["optim/lr"]``).
    k, delta, seed, score_noise, release, accountant, base_epsilon
        As for [`PrivateTuner`][privselect.tuning.PrivateTuner]; ``seed`` is a secret key.
    tune_config : ray.tune.TuneConfig
        ``metric`` and ``mode`` name the score; ``max_concurrent_trials`` and ``reuse_actors`` are
        kept; schedulers, ``search_alg``, ``num_samples`` and ``time_budget_s`` are refused.
    run_config : ray.tune.RunConfig, optional
        ``name``, ``storage_path`` (default: a temporary folder, removed after the run),
        ``storage_filesystem``, ``failure_config`` (default ``max_failures=3``), ``sync_config`` and
        ``log_to_file`` are kept; ``verbose`` is set to 0 (the console reporter counts K); ``stop``,
        ``callbacks``, ``progress_reporter`` and ``checkpoint_config`` are refused.
    checkpoint_loader : callable ``loader(checkpoint) -> value``, optional
        Reads the trial's last reported ``tune.Checkpoint`` inside the trial; its value, rebuilt by
        the release allowlist, is ``result.best_output`` for the winner. A trial whose loader fails
        scores worst.
    """

    def __init__(self, trainable: Callable[..., Any], *, param_space: Mapping[str, Any], privacy: Any,
                 k: KDistribution, delta: float, tune_config: Any = None, run_config: Any = None,
                 seed: int | None = None, checkpoint_loader: Callable[[Any], Any] | None = None,
                 score_noise: Gaussian | Laplace | None = None, release: str = "refuse",
                 accountant: str | Accountant = "auto", base_epsilon: float | None = None) -> None:
        if inspect.isclass(trainable):
            raise RayTuneRefusal(f"{trainable.__name__} is a class Trainable: pass a function trainable "
                                 "trainable(config) that reports with tune.report (its last report is its score)")
        if not callable(trainable):
            raise TypeError("trainable must be a function trainable(config)")
        if checkpoint_loader is not None and not callable(checkpoint_loader):
            raise TypeError("checkpoint_loader must be callable: loader(tune.Checkpoint) -> value")
        if not isinstance(k, KDistribution):
            raise TypeError(f"k must be a distribution of K (e.g. ps.Geometric(mean=10)), got {type(k).__name__}")
        self.trainable, self.checkpoint_loader = trainable, checkpoint_loader
        self.layout = ParamLayout.of(param_space)
        self.metric, direction, tune_options = _tune_options(tune_config)
        self.launch = TuneLaunch(resources=getattr(trainable, "_resources", None),
                                 run_options=_run_options(run_config), **tune_options)
        self.k, self.delta, self.accountant = k, check.delta_scalar("delta", delta), accountant
        base_epsilon = None if base_epsilon is None else check.positive("base_epsilon", base_epsilon)
        self._privacy = RunPrivacy(privacy, score_noise, self.layout.laws or None, base_epsilon)
        # n_jobs=-1: the engine's sequential shortcut is for n_jobs=1; Ray's max_concurrent_trials bounds the trials
        self._plan = SelectionPlan(k, seed, direction, _BACKEND, -1, False, score_noise, release, False)
        self._certificate: Certificate | None = None

    privacy = property(lambda self: self._privacy.privacy, doc="The privacy of one trial, as declared.")
    seed = property(lambda self: self._plan.seed)

    @property
    def certificate(self) -> Certificate:
        """The certificate of the whole selection (privacy, k and delta only; computed before any trial)."""
        if self._certificate is None:
            self._certificate = self._privacy.certificate(self.k, self.delta, reveal_k=False,
                                                          accountant=self.accountant)
        return self._certificate

    def fit(self) -> TuneResult:
        """Run K trials on Ray Tune and release the best; every exception leaves from a clean frame."""
        certificate = self.certificate
        return released(self._fit, certificate)

    def _fit(self, certificate: Certificate) -> TuneResult:
        check_candidate = self._privacy.candidate_check(self.k, self.delta, self.accountant, None)
        task = TrialTask(self.trainable, self.layout, self.metric, self.checkpoint_loader, check_candidate,
                         self.launch)
        selected = run_selection(task, None, self._plan)
        if not selected.selected:
            return TuneResult(None, None, None, False, certificate)
        return TuneResult(selected.params, selected.score, selected.output, True, certificate)

    def get_results(self) -> Any:
        raise AttributeError(f"Tuner.get_results: {_NOT_A_GRID}")
