"""The run engine behind [`PrivateTuner`][privselect.tuning.PrivateTuner] and ``PrivateStudy``.

One procedure, whatever the front end (Liu, Talwar 2019; Papernot, Steinke 2022; Koskela,
Redberg, Wang 2024):

1. draw K once from the K law, with a generator spawned from the seed, before anything runs;
2. give run i its own seeds (``SeedSequence(seed)`` -> run i -> params, train, noise), so the
   candidate, the training noise and the score noise of every run are fixed by the seed alone,
   whatever the backend or the completion order;
3. run every candidate through a backend ([`privselect.tuning.backends`][privselect.tuning.backends]), streaming the
   results; keep only the running best (ties go to the lowest run index), so at most a few
   outputs are alive at any time, whatever K;
4. apply the release rules and hand back the winner.

Release rules (docs/release.md, "What leaves the tuner"):

* every run completes: no early stopping, pruning, timeouts or retries. The one exception is
  infrastructure: a run lost with its worker (the backend's worker-loss error) is executed
  again with its own seeds, which is privacy-neutral for a trainer deterministic given its
  ``rng`` (docs/cluster.md); a trainer's exception is never retried;
* every run ends as a score: a run that raises (any exception, ``BaseException`` subclasses
  such as ``asyncio.CancelledError`` or ``GeneratorExit`` included), returns something that is
  not a real number or a ``(number, output)`` pair, a number that does not fit a float
  (``10**400``, a huge ``Fraction``) or a NaN or infinite score, scores the worst value; its
  exception is dropped, never re-raised, logged or stored;
* only three things stop a selection, and none of them depends on the data: the operator's
  ``KeyboardInterrupt`` or ``SystemExit`` (they come from outside the runs), privselect's own
  usage checks (a candidate whose privacy is not what the certificate assumed, pruning in a
  study: each decided from the candidate's params, which come from the seed alone, and
  recorded out of band, so a trainer that catches or raises these errors itself changes
  nothing), and a backend that keeps losing workers (infrastructure);
* if the winner failed, which means that every run failed, [`AllRunsFailedError`][privselect.tuning.engine.AllRunsFailedError] is
  raised; it carries no run data;
* exceptions leave from a clean frame ([`released`][privselect.tuning.engine.released]): the engine's frames hold K,
  the seed's ``SeedSequence`` and the running best, so every exception that leaves a selection
  is replaced by a fresh copy raised after those frames are gone, with no ``__cause__``,
  ``__context__``, notes or traceback below the front end; a traceback walked frame by frame
  (Sentry, loguru's ``diagnose``, ``TracebackException(capture_locals=True)``) reaches none of
  it. ``dry_run`` keeps the full traceback: it runs on public data;
* warnings, stdout, stderr and logging inside runs are captured and dropped (in the driver for
  in-process backends, in the worker for process backends). Output written straight to file
  descriptors by C code is not captured;
* a return value that is neither a real number nor a ``(number, output)`` pair is a
  programming error: [`dry_run`][privselect.tuning.engine.dry_run] on public data raises
  [`TrainerContractError`][privselect.tuning.engine.TrainerContractError] for it. Inside a certified run it scores the worst
  value like any failure: raising there would let what the trainer returned on the private
  data decide whether the selection stops;
* the release guard ([`privselect.tuning.guard`][privselect.tuning.guard]) refuses, or strips, randomness state in
  the winner's output and params;
* K stays inside unless the front end was asked to reveal it.
"""

from __future__ import annotations

import contextlib
import io
import logging
import math
import numbers
import os
import sys
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Protocol

import numpy as np

from ..errors import AllRunsFailedError, TrainerContractError
from ..mechanisms import Gaussian, Laplace
from ..selection.distributions import KDistribution
from .backends import MAX_REEXECUTIONS, Backend, WorkerLossError, get_backend
from .guard import RELEASE_MODES, guard_release

__all__ = ["AllRunsFailedError", "TrainerContractError", "WorkerLossError", "RunSeeds", "RunTask", "RunOutcome",
           "SelectionPlan", "Selected", "StopSelection", "run_selection", "released", "clean_copy", "dry_run",
           "split_return", "silenced", "OPERATOR_EXCEPTIONS"]

OPERATOR_EXCEPTIONS = (KeyboardInterrupt, SystemExit)
"""The only exceptions from inside a run that stop the selection: the operator's (they come from outside the runs)."""

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class RunSeeds:
    """The three independent seeds of one run (candidate, training, score noise), and its index."""

    params: np.random.SeedSequence
    train: np.random.SeedSequence
    noise: np.random.SeedSequence
    index: int = 0

    @classmethod
    def of_run(cls, runs: np.random.SeedSequence, index: int) -> "RunSeeds":
        """Run ``index``'s seeds: the ``index``-th child of ``runs`` (as ``runs.spawn`` would give), split in three."""
        child = np.random.SeedSequence(runs.entropy, spawn_key=runs.spawn_key + (index,), pool_size=runs.pool_size)
        return cls(*child.spawn(3), index=index)

    def params_rng(self) -> np.random.Generator:
        return np.random.Generator(np.random.PCG64(self.params))

    def train_rng(self) -> np.random.Generator:
        return np.random.Generator(np.random.PCG64(self.train))


class StopSelection(BaseException):
    """Raised by a front end's task (never by user code) to stop the selection with ``error``.

    ``error`` is one of privselect's own errors, with a fixed message and no run data. Anything
    else a run raises scores the worst value (module docstring).
    """

    def __init__(self, error: BaseException) -> None:
        super().__init__(error)
        self.error = error


class RunTask(Protocol):
    """One run of a front end: draw the candidate, train, return ``(returned, params, details)``.

    ``returned`` is the trainer's return value (a score or ``(score, output)``); ``details``
    is front-end data released with the winner (Optuna's distributions and user attributes).
    A usage error found by privselect's own checks is raised as [`StopSelection`][privselect.tuning.engine.StopSelection]; every
    other exception scores the worst value.
    """

    def __call__(self, data: Any, seeds: RunSeeds) -> tuple[Any, Any, Any]: ...


@dataclass(frozen=True)
class RunOutcome:
    """What a run sends back to the driver (a failed run: ``score`` NaN and nothing else)."""

    index: int
    score: float
    output: Any = None
    params: Any = None
    details: Any = None
    stop: BaseException | None = None  # a usage error found by privselect's checks: stops the selection

    @property
    def failed(self) -> bool:
        return not math.isfinite(self.score)


@dataclass(frozen=True)
class SelectionPlan:
    """Everything about a selection that is fixed before the data is seen."""

    k: KDistribution
    seed: int | None = field(default=None, repr=False)  # a secret key: kept out of reprs (and captured locals)
    direction: str = "maximize"
    backend: str = "sequential"
    n_jobs: int = 1
    progress: bool = False
    score_noise: Gaussian | Laplace | None = None
    release: str = "refuse"

    def __post_init__(self) -> None:
        if not isinstance(self.k, KDistribution):
            raise TypeError(f"k must be a distribution of K (e.g. ps.Geometric(mean=10)), got {type(self.k).__name__}")
        if self.seed is not None and (isinstance(self.seed, bool) or not isinstance(self.seed, (int, np.integer))
                                      or self.seed < 0):
            raise ValueError(f"seed must be a non-negative integer or None, got {self.seed!r}")
        if self.direction not in ("maximize", "minimize"):
            raise ValueError(f"direction must be 'maximize' or 'minimize', got {self.direction!r}")
        if isinstance(self.n_jobs, bool) or not isinstance(self.n_jobs, int) or self.n_jobs == 0 or self.n_jobs < -1:
            raise ValueError(f"n_jobs must be a positive integer or -1, got {self.n_jobs!r}")
        get_backend(self.backend)
        if self.score_noise is not None and not isinstance(self.score_noise, (Gaussian, Laplace)):
            raise TypeError("score_noise must be ps.Gaussian(...) or ps.Laplace(...)")
        if self.release not in RELEASE_MODES:
            raise ValueError(f"release must be one of {RELEASE_MODES}, got {self.release!r}")


@dataclass(frozen=True)
class Selected:
    """The winner (or nothing, when K = 0) and K, which the front end releases only if asked."""

    selected: bool
    n_runs: int
    params: Any = None
    score: float | None = None
    output: Any = None
    details: Any = None


def split_return(returned: Any) -> tuple[float, Any]:
    """(score, output) from a trainer's return value: a score, or a (score, output) pair.

    A score is a real number (int, float, numpy scalar; not bool), a 0-d numpy array of a real
    dtype or a 0-d torch tensor of a real dtype (only if torch is already imported: torch is
    never imported here); arrays and tensors become a Python float here, inside the run.
    """
    if isinstance(returned, tuple) and len(returned) == 2:
        score = _as_score(returned[0])
        if score is not None:
            return score, returned[1]
        raise TrainerContractError(
            f"the trainer returned a pair (score, output) whose score is {_describe(returned[0])}; the score must "
            "be a real number (a float, int or numpy scalar, or a 0-d numpy array or 0-d torch tensor: "
            "e.g. loss.item()). This is a programming error: use dry_run(public_data) to debug it before "
            "touching private data.")
    score = _as_score(returned)
    if score is not None:
        return score, None
    shape = f"a {len(returned)}-tuple" if isinstance(returned, tuple) else _describe(returned)
    raise TrainerContractError(
        f"the trainer returned {shape}; it must return a score (a real number, or a 0-d numpy array or torch "
        "tensor) or a pair (score, output). This is a programming error: use dry_run(public_data) to debug it "
        "before touching private data."
    )


def _as_score(value: Any) -> float | None:
    """``value`` as a float if it is a score (see `split_return`), else None."""
    if _is_real(value):
        return float(value)
    if isinstance(value, np.ndarray):
        return float(value) if value.ndim == 0 and value.dtype.kind in "iuf" else None
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.Tensor):
        real = value.dtype.is_floating_point or (not value.dtype.is_complex and value.dtype != torch.bool)
        return float(value.detach().cpu().item()) if value.ndim == 0 and real else None
    return None


def _describe(value: Any) -> str:
    """The type of ``value`` (and, for arrays and tensors, the number of dimensions and dtype): no values."""
    kind = type(value)
    name = f"{kind.__module__}.{kind.__qualname__}" if kind.__module__ not in ("builtins",) else kind.__qualname__
    ndim, dtype = getattr(value, "ndim", None), getattr(value, "dtype", None)
    if isinstance(ndim, int) and dtype is not None:
        return f"a {name} with {ndim} dimension(s) and dtype {dtype}"
    return f"a {name}"


def _is_real(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))


def _score_noise(score_noise: Gaussian | Laplace, rng: np.random.Generator) -> float:
    if isinstance(score_noise, Gaussian):
        return float(rng.normal(0.0, score_noise.noise_multiplier * score_noise.sensitivity))
    return float(rng.laplace(0.0, score_noise.scale * score_noise.sensitivity))


@contextlib.contextmanager
def silenced() -> Iterator[None]:
    """Drop warnings, stdout, stderr and every log record emitted inside the block.

    Logging is disabled at every level: ``logging.disable(CRITICAL)`` would let custom levels
    above 50 through, so the threshold is ``sys.maxsize``. (A record handed straight to
    ``Logger.handle`` or a handler bypasses logging's levels, as a write to a file would.)
    """
    previous_disable = logging.root.manager.disable
    sink = io.StringIO()
    with warnings.catch_warnings(), contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
        warnings.simplefilter("ignore")
        logging.disable(sys.maxsize)
        try:
            yield
        finally:
            logging.disable(previous_disable)
            sink.close()


def execute_run(task: RunTask, data: Any, score_noise: Gaussian | Laplace | None, driver_pid: int, index: int,
                seeds: RunSeeds) -> RunOutcome:
    """One run, isolated; a failed run comes back as NaN with nothing else. Runs on the worker.

    Whatever the run raises or returns ends as a score: only the operator's exceptions
    (``OPERATOR_EXCEPTIONS``) propagate, and a usage error found by privselect's own checks
    comes back as ``RunOutcome.stop``.
    """
    isolation = silenced() if os.getpid() != driver_pid else contextlib.nullcontext()
    with isolation:
        try:
            returned, params, details = task(data, seeds)
            score, output = split_return(returned)  # a wrong type or a float overflow raises: scored worst
            if score_noise is not None and math.isfinite(score):
                score += _score_noise(score_noise, np.random.Generator(np.random.PCG64(seeds.noise)))
        except StopSelection as stop:
            return RunOutcome(index, math.nan, stop=stop.error)
        except OPERATOR_EXCEPTIONS:
            raise
        except BaseException:  # noqa: BLE001 - the release rules: drop it (CancelledError too), score the worst
            return RunOutcome(index, math.nan)
    if not math.isfinite(score):
        return RunOutcome(index, math.nan)
    return RunOutcome(index, score, output, params, details)


def run_selection(task: RunTask, data: Any, plan: SelectionPlan, *,
                  observe: Callable[[int, float], None] | None = None) -> Selected:
    """Draw K, run K candidates of ``task`` on ``data``, release the best (see the module docstring).

    ``observe(index, score)`` is called in the driver as each run completes (score NaN for a
    failed run); adaptive front ends use it and must run on an in-process sequential backend.
    An exception leaves from a clean frame ([`released`][privselect.tuning.engine.released]).
    """
    return released(_select, task, data, plan, observe)


def _select(task: RunTask, data: Any, plan: SelectionPlan, observe: Callable[[int, float], None] | None) -> Selected:
    root = np.random.SeedSequence(plan.seed)
    k_seed, _, runs_seed = root.spawn(3)  # the middle child is reserved (it drew candidates up to 0.1)
    n_runs = int(plan.k.sample(np.random.Generator(np.random.PCG64(k_seed))))
    logger.debug("drew K from %r", plan.k)  # K itself stays inside
    if n_runs == 0:
        return Selected(False, 0)
    backend = get_backend("sequential" if plan.n_jobs == 1 else plan.backend)
    logger.debug("running the candidates (backend=%s, n_jobs=%d)", backend.name, plan.n_jobs)
    shared = (task, data, plan.score_noise, os.getpid())
    sign = 1.0 if plan.direction == "maximize" else -1.0
    best: RunOutcome | None = None
    results = _with_progress(_stream_runs(backend, shared, runs_seed, n_runs, plan.n_jobs), n_runs, plan.progress)
    with silenced():
        for outcome in results:
            if outcome.stop is not None:  # a fresh error made by privselect's checks (never raised before)
                raise outcome.stop
            if observe is not None:
                observe(outcome.index, outcome.score)
            if best is None or _beats(outcome, best, sign):
                best = outcome
            del outcome
    if best.failed:
        raise AllRunsFailedError("every run failed (raised, or returned a non-finite score or something that is not a "
                                 "number or a (number, output) pair); nothing was released. Run dry_run(public_data) "
                                 "to see the first failure with its traceback")
    logger.debug("finished all runs")
    params = guard_release(best.params, "params", plan.release)
    output = guard_release(best.output, "output", plan.release)
    details = guard_release(best.details, "details", plan.release)
    return Selected(True, n_runs, params, best.score, output, details)


def _stream_runs(backend: Backend, shared: tuple, runs_seed: np.random.SeedSequence, n_runs: int,
                 n_jobs: int) -> Iterator[RunOutcome]:
    """Every run's outcome once, in completion order, re-executing runs lost with a worker.

    A worker loss reported by the backend ([`Backend.worker_loss_errors`][privselect.tuning.backends.Backend.worker_loss_errors]) is an
    infrastructure fault: the runs not yet received are submitted again with their OWN seeds
    (``RunSeeds.of_run``), so a trainer that is deterministic given its ``rng`` reproduces
    exactly what the lost attempt would have returned, and whether a fault happened does not
    depend on the data. At most [`MAX_REEXECUTIONS`][privselect.tuning.engine.MAX_REEXECUTIONS] rounds, then [`WorkerLossError`][privselect.tuning.engine.WorkerLossError]
    (no run data). A trainer's exception never reaches this loop: ``execute_run`` scores it
    worst, once.
    """
    received = np.zeros(n_runs, dtype=bool)
    for _ in range(MAX_REEXECUTIONS + 1):
        todo = np.flatnonzero(~received)
        tasks = ((int(index), RunSeeds.of_run(runs_seed, int(index))) for index in todo)
        del todo
        try:
            for outcome in backend.imap_unordered(execute_run, shared, tasks, n_jobs):
                if not received[outcome.index]:  # a run can complete twice across rounds; count it once
                    received[outcome.index] = True
                    yield outcome
                del outcome
            return
        except backend.worker_loss_errors():
            logger.debug("a worker was lost; re-executing the runs not yet received with their own seeds")
    raise WorkerLossError(f"workers were lost more than {MAX_REEXECUTIONS} times; nothing was released")


def released(function: Callable[..., Any], *args: Any) -> Any:
    """``function(*args)``; an exception leaves as a fresh copy raised from this clean frame.

    The original exception, its traceback (whose frames hold K, the seed's ``SeedSequence`` and
    the running best), ``__cause__``, ``__context__`` and notes are dropped before the copy is
    raised, outside the ``except`` block, so no chain leads back to them. The copy
    ([`clean_copy`][privselect.tuning.engine.clean_copy]) has the same type.
    """
    stop: BaseException | None = None
    try:
        return function(*args)
    except BaseException as exc:  # noqa: BLE001 - re-raised below, as a clean copy
        stop = clean_copy(exc)
    raise stop from None


def clean_copy(exc: BaseException) -> BaseException:
    """A fresh exception for ``exc``: same type; its message only where privselect wrote it.

    * the operator's ``KeyboardInterrupt``; ``SystemExit`` with its exit status (an int or None;
      any other code becomes 1); other ``BaseException`` types: a fresh instance without args;
    * an exception raised in privselect's own code (its innermost frame): the same type and
      args (privselect's messages name parameters and regimes, never run data);
    * anything else (a backend's, a user ``split``'s): a RuntimeError naming its type only.
    """
    kind = type(exc)
    if isinstance(exc, SystemExit):
        code = exc.code if exc.code is None or (isinstance(exc.code, int) and not isinstance(exc.code, bool)) else 1
        return SystemExit(code)
    if not isinstance(exc, Exception):
        copy = _fresh(kind, ())
        return BaseException(kind.__qualname__) if copy is None else copy
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    module = "" if tb is None else str(tb.tb_frame.f_globals.get("__name__", ""))
    del tb
    if module == "privselect" or module.startswith("privselect."):
        copy = _fresh(kind, exc.args)
        if copy is not None:
            return copy
    return RuntimeError(f"the selection stopped on {kind.__module__}.{kind.__qualname__}, raised outside the runs; its "
                        "message and traceback were dropped because they can hold run data. Nothing was released. "
                        "Run dry_run(public_data) to reproduce it with its traceback")


def _fresh(kind: type[BaseException], args: tuple) -> BaseException | None:
    try:
        copy = kind(*args)
    except Exception:  # noqa: BLE001 - a type that cannot be rebuilt from its args
        return None
    return copy if type(copy) is kind else None


def _beats(outcome: RunOutcome, best: RunOutcome, sign: float) -> bool:
    """Strictly better score, or an equal score at a lower run index (order-independent ties)."""
    if outcome.failed:
        return best.failed and outcome.index < best.index
    if best.failed:
        return True
    key, best_key = sign * outcome.score, sign * best.score
    return key > best_key or (key == best_key and outcome.index < best.index)


def _with_progress(results: Iterator[RunOutcome], total: int, progress: bool) -> Iterator[RunOutcome]:
    """A tqdm bar that counts runs on the operator's terminal: it shows K, never scores."""
    if not progress:
        return results
    try:
        from tqdm.auto import tqdm
    except ImportError:
        raise ImportError("progress=True needs tqdm: pip install 'privselect[progress]'") from None
    return tqdm(results, total=total, desc="privselect runs", unit="run", file=sys.stderr)


def dry_run(task: RunTask, data: Any, plan: SelectionPlan) -> Selected:
    """Run ONE candidate on public or synthetic ``data`` with nothing swallowed.

    The candidate's exception, a broken return value, a non-finite score or randomness state
    in the output are raised as they are, so programming errors surface before private data is
    touched. Uses fresh seeds (not the plan's): the seed is a secret key.
    """
    seeds = RunSeeds.of_run(np.random.SeedSequence(), 0)
    try:
        returned, params, details = task(data, seeds)
    except StopSelection as stop:
        raise stop.error from None
    score, output = split_return(returned)
    if score is not None and not math.isfinite(score):
        raise ValueError(f"the trainer returned a non-finite score ({score!r}) on the dry-run data; inside the "
                         "tuner this run would score the worst value")
    guard_release(params, "params", "refuse")
    guard_release(output, "output", "refuse")
    return Selected(True, 1, params, score, output, details)
