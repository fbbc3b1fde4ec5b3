"""The run engine behind [`PrivateTuner`][privselect.tuning.PrivateTuner] and ``PrivateStudy``.

One procedure, whatever the front end (Liu, Talwar 2019; Papernot, Steinke 2022; Koskela,
Redberg, Wang 2024):

1. draw K once from the K law, with a generator spawned from the seed, before anything runs;
2. give run i its own seeds (``SeedSequence(seed)`` -> run i -> params, train, noise, globals), so
   the candidate, the training noise, the score noise and the frameworks' global random states
   of every run are fixed by the seed alone, whatever the backend or the completion order;
3. check every candidate's privacy (``task.check_candidate``) for all K runs, before the first
   run: the candidates come from the seed alone, so nothing a run does can change the check;
4. run every candidate through a backend ([`privselect.tuning.backends`][privselect.tuning.backends]), streaming the
   results; keep only the running best (ties go to the lowest run index);
5. hand back the winner's release value.

Release rules (docs/release.md):

* every run ends inside its own boundary ([`execute_run`][privselect.tuning.run.execute_run]): in one ``try`` and one
  silence (in the worker for process backends) the run trains, its output, params and details
  become their release value ([`privselect.tuning.release`][privselect.tuning.release]: rebuilt by value from an
  allowlist, never the trainer's object), pass the randomness guard ([`privselect.tuning.guard`][privselect.tuning.guard])
  and are pickled; then the trainer's objects are dropped and garbage-collected, still inside the
  silence. A run sends back its index, its score and those bytes, nothing else;
* every run ends as a score: a run that raises (any exception, ``BaseException`` subclasses
  such as ``asyncio.CancelledError`` or ``GeneratorExit`` included, and privselect's own usage
  errors: a study's ``trial.report``, a declared name not suggested, a privacy mismatch), returns
  something that is not a real number or a ``(number, output)`` pair, a number that does not fit
  a float or a NaN or infinite score, or a value that is refused, fails the guard or cannot be
  pickled, scores the worst value; its exception is dropped, never re-raised, logged or stored;
* only two things stop a selection, and a run decides neither: the operator's
  ``KeyboardInterrupt`` or ``SystemExit``, and a backend that loses workers even on a run of
  nothing ([`WorkerLossError`][privselect.errors.WorkerLossError]); a run lost with its worker is executed again with
  its own seeds and scores worst if it is lost alone. Before any run, a candidate whose privacy
  is not what the certificate assumed stops the selection (decided from the seed alone);
* each run starts with the global random states of every loaded framework seeded from its own
  seed; the caller's states are restored when the selection ends
  ([`privselect.tuning.globalstate`][privselect.tuning.globalstate]); numpy data reaches runs as read-only views
  ([`readonly`][privselect.tuning.run.readonly]);
* privselect writes no log record between the draw of K and the release; every backend waits,
  silenced, for the runs in flight before the selection returns or raises;
* if the winner failed, which means that every run failed, [`AllRunsFailedError`][privselect.errors.AllRunsFailedError] is
  raised; it carries no run data;
* exceptions leave from a clean frame ([`released`][privselect.tuning.engine.released]): the engine's frames hold K,
  the seed's ``SeedSequence`` and the running best, so every exception that leaves a selection
  is replaced by a fresh copy raised after those frames are gone, with no ``__cause__``,
  ``__context__``, notes or traceback below the front end. ``dry_run`` keeps the full
  traceback and raises every refusal with its message: it runs on public data;
* warnings, stdout, stderr and logging inside runs are captured and dropped (in the driver for
  in-process backends, in the worker for process backends). Output written straight to file
  descriptors by C code, or to ``sys.__stdout__``, is not captured: ``isolate=True`` runs each
  run in a fresh process whose descriptors are closed ([`privselect.tuning.isolation`][privselect.tuning.isolation]);
* K stays inside unless the front end was asked to reveal it.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import math
import os
import pickle
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import AllRunsFailedError, CandidatePrivacyError
from ..mechanisms import Gaussian, Laplace
from ..selection.distributions import KDistribution
from .backends import MAX_REEXECUTIONS, Backend, WorkerLossError, get_backend
from .globalstate import saved_globals, seed_globals
from .guard import RELEASE_MODES
from .isolation import isolation_supported
from .release import registered_converters
from .run import (
    RunOutcome,
    RunRules,
    RunSeeds,
    RunTask,
    StopSelection,
    execute_run,
    readonly,
    release_payload,
    silenced,
    split_return,
)

__all__ = ["SelectionPlan", "Selected", "run_selection", "released", "clean_copy", "dry_run"]

logger = logging.getLogger(__name__)


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
    isolate: bool = False

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
        if self.isolate and not isolation_supported():
            raise ValueError("isolate=True needs os.fork (POSIX): every run executes in a fresh forked process")

    def rules(self, selection: str = "", trusted_modules: tuple[str, ...] = ()) -> RunRules:
        return RunRules(self.score_noise, self.release, bool(self.isolate), registered_converters(), selection,
                        trusted_modules)


@dataclass(frozen=True)
class Selected:
    """The winner (or nothing, when K = 0) and K, which the front end releases only if asked."""

    selected: bool
    n_runs: int
    params: Any = None
    score: float | None = None
    output: Any = None
    details: Any = None

@contextlib.contextmanager
def _runs_collect_their_own_garbage() -> Iterator[None]:
    """Freeze the driver's objects for the selection: a full ``gc.collect()`` after each run then scans only what
    the runs made (milliseconds, not the seconds a process with torch loaded takes). Unfrozen at the end, unless
    the caller had frozen objects already (then what the selection froze stays frozen)."""
    first = gc.get_freeze_count() == 0
    gc.freeze()
    try:
        yield
    finally:
        if first:
            gc.unfreeze()


def run_selection(task: RunTask, data: Any, plan: SelectionPlan, *,
                  observe: Callable[[int, float], None] | None = None) -> Selected:
    """Draw K, run K candidates of ``task`` on ``data``, release the best (see the module docstring).

    ``observe(index, score)`` is called in the driver as each run completes (score NaN for a
    failed run); adaptive front ends use it and must run on an in-process sequential backend.
    An exception leaves from a clean frame ([`released`][privselect.tuning.engine.released]).
    """
    return released(_select, task, data, plan, observe)


def _check_candidates(task: RunTask, runs_seed: np.random.SeedSequence, n_runs: int) -> None:
    """Every candidate's privacy, from the seed alone, before the first run: a run can change nothing it reads.

    K checks run here (the operator's ``privacy`` callable, the accountants of a Cor. 6.2 check), so they run
    silenced: a log record or a print per check would count K.
    """
    check = getattr(task, "check_candidate", None)
    if check is None:
        return
    problem = None
    with silenced():
        for index in range(n_runs):
            problem = check(RunSeeds.of_run(runs_seed, index))
            if problem is not None:
                break
    if problem is not None:
        raise CandidatePrivacyError(problem)


def _select(task: RunTask, data: Any, plan: SelectionPlan, observe: Callable[[int, float], None] | None) -> Selected:
    selection = os.urandom(16).hex()  # names the selection for the workers' trust snapshots (not the seed)
    rules = plan.rules(selection, RunRules(selection=selection).trust().modules)  # trust fixed before any run
    root = np.random.SeedSequence(plan.seed)
    k_seed, _, runs_seed = root.spawn(3)  # the middle child is reserved (it drew candidates up to 0.1)
    n_runs = int(plan.k.sample(np.random.Generator(np.random.PCG64(k_seed))))
    if n_runs == 0:
        return Selected(False, 0)
    _check_candidates(task, runs_seed, n_runs)
    backend = get_backend("sequential" if plan.n_jobs == 1 else plan.backend)
    shared = (task, data, rules, os.getpid())
    sign = 1.0 if plan.direction == "maximize" else -1.0
    best: RunOutcome | None = None
    # no log record from here to the release: a timestamp per line would time the runs (docs/release.md)
    # the progress bar (operator's terminal) binds stderr now, before the silence
    results = _with_progress(_stream_runs(backend, shared, runs_seed, n_runs, plan.n_jobs), n_runs, plan.progress)
    with saved_globals(), silenced(), _runs_collect_their_own_garbage():
        try:
            for outcome in results:
                if observe is not None:
                    observe(outcome.index, outcome.score)
                if best is None or _beats(outcome, best, sign):
                    best = outcome
                del outcome
        finally:
            close = getattr(results, "close", None)
            if close is not None:
                close()  # every backend waits for its runs in flight here, still silenced
            del results
        if best is None or best.failed or best.payload is None:  # n_runs >= 1 outcomes; a failed one has no payload
            raise AllRunsFailedError("every run failed (raised, returned a non-finite score or something that is "
                                     "not a number or a (number, output) pair, or returned a value that is not "
                                     "released); nothing was released. Run dry_run(public_data) to see the first "
                                     "failure with its traceback")
        params, output, details = pickle.loads(best.payload)
        gc.collect()
    return Selected(True, n_runs, params, best.score, output, details)


def _stream_runs(backend: Backend, shared: tuple, runs_seed: np.random.SeedSequence, n_runs: int,
                 n_jobs: int) -> Iterator[RunOutcome]:
    """Every run's outcome once, in completion order, re-executing runs lost with a worker.

    A worker loss reported by the backend ([`Backend.worker_loss_errors`][privselect.tuning.backends.Backend.worker_loss_errors])
    may be an infrastructure fault or a run that killed its worker (``os._exit``, a signal, an
    out-of-memory kill), which can depend on the data. The runs not yet received are submitted
    again with their OWN seeds (``RunSeeds.of_run``), up to [`MAX_REEXECUTIONS`][privselect.tuning.engine.MAX_REEXECUTIONS]
    rounds. Then the runs still missing execute one at a time: a run lost alone scores worst,
    unless a run of nothing is lost too, which is the infrastructure failing:
    [`WorkerLossError`][privselect.errors.WorkerLossError] (no run data). So a trainer cannot stop the
    selection by killing its worker.
    """
    received = np.zeros(n_runs, dtype=bool)

    def tasks(indices):
        return ((int(index), RunSeeds.of_run(runs_seed, int(index))) for index in indices)

    for _ in range(MAX_REEXECUTIONS + 1):
        try:
            for outcome in backend.imap_unordered(execute_run, shared, tasks(np.flatnonzero(~received)), n_jobs):
                if not received[outcome.index]:  # a run can complete twice across rounds; count it once
                    received[outcome.index] = True
                    yield outcome
                del outcome
            return
        except backend.worker_loss_errors():
            pass
    for index in np.flatnonzero(~received):
        outcome = None
        try:
            # n_jobs as given: joblib runs a single job with n_jobs=1 in the driver itself
            outcome = _first(backend.imap_unordered(execute_run, shared, tasks([index]), n_jobs))
        except backend.worker_loss_errors():
            pass
        if outcome is None:  # lost on its own: the run, or the infrastructure? (outside the except: no context)
            _probe_infrastructure(backend, n_jobs)
            outcome = RunOutcome(int(index), math.nan)
        yield outcome
        del outcome


def _first(results: Iterator[Any]) -> Any:
    try:
        return next(iter(results))
    finally:
        close = getattr(results, "close", None)
        if close is not None:
            close()


def _nothing() -> None:
    """A run of nothing: no data, no trainer."""


def _probe_infrastructure(backend: Backend, n_jobs: int) -> None:
    """Raise [`WorkerLossError`][privselect.errors.WorkerLossError] if the backend loses a run of nothing too."""
    lost = False
    try:
        _first(backend.imap_unordered(_nothing, (), [()], n_jobs))
    except backend.worker_loss_errors():
        lost = True
    if lost:
        raise WorkerLossError(f"workers were lost more than {MAX_REEXECUTIONS} times, and a run of nothing was lost "
                              "too; nothing was released")


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

    The candidate's exception, a usage error, a broken return value, a non-finite score, a
    value that is not released (``ReleaseRefusedError``), randomness state in it and a pickling
    error are raised as they are, so programming errors surface before private data is touched.
    Uses fresh seeds (not the plan's): the seed is a secret key.
    """
    seeds = RunSeeds.of_run(np.random.SeedSequence(), 0)
    trust = RunRules(selection=os.urandom(16).hex()).trust()  # the classes trusted before the run
    check = getattr(task, "check_candidate", None)
    problem = None if check is None else check(seeds)
    if problem is not None:
        raise CandidatePrivacyError(problem)
    with saved_globals():
        seed_globals(seeds.globals)
        try:
            returned, params, details = task(readonly(data), seeds)
        except StopSelection as stop:
            raise stop.error from None
    score, output = split_return(returned)
    if score is not None and not math.isfinite(score):
        raise ValueError(f"the trainer returned a non-finite score ({score!r}) on the dry-run data; inside the "
                         "tuner this run would score the worst value")
    params, output, details = pickle.loads(release_payload([params, output, details], plan.release, trust))
    return Selected(True, 1, params, score, output, details)
