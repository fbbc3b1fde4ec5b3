"""One run inside its boundary: its seeds, its rules, its outcome, and `execute_run`, which trains, converts,
guards and pickles the run's release value in one ``try`` and one silence, so that every run ends as a score
(the release rules of [`privselect.tuning.engine`][privselect.tuning.engine]; docs/release.md)."""

from __future__ import annotations

import contextlib
import gc
import io
import logging
import math
import numbers
import os
import pickle
import sys
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from ..errors import TrainerContractError
from ..mechanisms import Gaussian, Laplace
from .globalstate import restored_settings, seed_globals
from .guard import guard_release
from .isolation import MAX_MESSAGE_BYTES, in_fresh_process
from .release import release_value, restore_registrations, trust_snapshot
from .trusted import TrustSnapshot, selection_trust
from .wire import decode_outcome, encode_value, outcome_message

__all__ = ["OPERATOR_EXCEPTIONS", "RunSeeds", "StopSelection", "RunTask", "RunRules", "RunOutcome", "split_return",
           "silenced", "readonly", "release_payload", "execute_run"]

OPERATOR_EXCEPTIONS = (KeyboardInterrupt, SystemExit)
"""The only exceptions from inside a run that stop the selection: the operator's (they come from outside the runs)."""


@dataclass(frozen=True)
class RunSeeds:
    """The independent seeds of one run (candidate, training, score noise, the global states), and its index."""

    params: np.random.SeedSequence
    train: np.random.SeedSequence
    noise: np.random.SeedSequence
    globals: np.random.SeedSequence  # the frameworks' global states during the run
    index: int = 0

    @classmethod
    def of_run(cls, runs: np.random.SeedSequence, index: int) -> RunSeeds:
        """Run ``index``'s seeds: the ``index``-th child of ``runs`` (as ``runs.spawn`` would give), split in
        three, and a fourth child for the global states (independent of the other three)."""
        child = np.random.SeedSequence(runs.entropy, spawn_key=runs.spawn_key + (index,), pool_size=runs.pool_size)
        params, train, noise, global_seed = child.spawn(4)
        return cls(params, train, noise, global_seed, index=index)

    def params_rng(self) -> np.random.Generator:
        return np.random.Generator(np.random.PCG64(self.params))

    def train_rng(self) -> np.random.Generator:
        return np.random.Generator(np.random.PCG64(self.train))


class StopSelection(BaseException):
    """Raised by a front end's task (never by user code) when a run broke a usage rule (``error``).

    Inside a certified run it scores the worst value like any failure (whether a trainer breaks
    a rule can depend on the data); [`dry_run`][privselect.tuning.engine.dry_run] raises ``error`` with
    its full message.
    """

    def __init__(self, error: BaseException) -> None:
        super().__init__(error)
        self.error = error


class RunTask(Protocol):
    """One run of a front end: draw the candidate, train, return ``(returned, params, details)``.

    ``returned`` is the trainer's return value (a score or ``(score, output)``); ``details``
    is front-end data released with the winner (Optuna's distributions and user attributes).
    A usage error found by privselect's own checks is raised as [`StopSelection`][privselect.tuning.run.StopSelection]
    (scored worst; raised by ``dry_run``). A task may define ``check_candidate(seeds) -> str | None``:
    the engine calls it for all K runs before the first run (the candidate's privacy, from the
    seed alone) and stops with [`CandidatePrivacyError`][privselect.errors.CandidatePrivacyError] on a problem.
    """

    def __call__(self, data: Any, seeds: RunSeeds) -> tuple[Any, Any, Any]: ...


@dataclass(frozen=True)
class RunRules:
    """How every run of a selection ends (picklable; sent to the workers with the task).

    ``release``: the guard's mode; ``isolate``: each run in a fresh process
    ([`privselect.tuning.isolation`][privselect.tuning.isolation]); ``registrations``: the user's release
    converters and trusted estimators, applied in the worker before the conversion; ``selection``: a token naming
    the selection (fresh entropy, not the seed), for which each process fixes its trusted classes once, before its
    first run (``trusted_modules``, the driver's modules that hold them, are imported first;
    [`privselect.tuning.trusted`][privselect.tuning.trusted]).
    """

    score_noise: Gaussian | Laplace | None = None
    release: str = "refuse"
    isolate: bool = False
    registrations: tuple = ()
    selection: str = ""
    trusted_modules: tuple[str, ...] = ()

    def trust(self) -> TrustSnapshot:
        """This process's trust for the selection, fixed before its first run here."""
        return selection_trust(self.selection, lambda: trust_snapshot(self.selection, self.trusted_modules))


@dataclass(frozen=True)
class RunOutcome:
    """What a run sends back to the driver: its score and its release value, pickled inside the run (a failed
    run: ``score`` NaN and no payload). The repr shows the index only."""

    index: int
    score: float = field(repr=False)
    payload: bytes | None = field(default=None, repr=False)

    @property
    def failed(self) -> bool:
        return not math.isfinite(self.score)



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


def readonly(data: Any) -> Any:
    """``data`` as the runs see it: numpy arrays as read-only views, also inside a tuple, list or dict.

    A run that writes into the caller's array (``d *= 0.5``) raises instead, and scores worst,
    so the array cannot count runs. Other types (a torch tensor, a DataFrame, your own object)
    reach the runs as they are: do not let a trainer modify them in place.
    """
    if type(data) is np.ndarray:
        view = data.view()
        view.flags.writeable = False
        return view
    if type(data) in (tuple, list):
        return type(data)(readonly(item) for item in data)
    if type(data) is dict:
        return {key: readonly(value) for key, value in data.items()}
    return data


def release_payload(parts: list, release: str, trust: TrustSnapshot | None = None,
                    encode: Callable[[tuple], bytes] | None = None) -> bytes:
    """The run's release value, pickled (or ``encode``d): ``parts = [params, output, details]``, each rebuilt by
    value, checked by the guard, then serialised. ``trust``: the classes trusted before the runs (None: now).

    Consumes ``parts`` (each original is replaced by its release value, then the list is emptied), so that
    at most two copies of an output are alive at once. Raises what refuses it (``ReleaseRefusedError``,
    ``RandomnessLeakError``, a pickling error).
    """
    for position, root in enumerate(("params", "output", "details")):
        parts[position] = guard_release(release_value(parts[position], root, release, trust), root, release)
    try:
        if encode is not None:
            return encode(tuple(parts))
        return pickle.dumps(tuple(parts), protocol=pickle.HIGHEST_PROTOCOL)
    finally:
        parts.clear()


def execute_run(task: RunTask, data: Any, rules: RunRules, driver_pid: int, index: int,
                seeds: RunSeeds) -> RunOutcome:
    """One run, inside its own boundary; a failed run comes back as NaN with nothing else. Runs on the worker.

    With ``rules.isolate``, the run executes in a fresh forked process (a run that exits, is
    killed or leaves threads behind scores worst) and sends its outcome back as data
    ([`privselect.tuning.wire`][privselect.tuning.wire]); here the value is parsed, validated against the
    allowlist again and given this run's index. Only the operator's exceptions (``OPERATOR_EXCEPTIONS``)
    propagate; everything else ends as the score.
    """
    if rules.isolate:
        message = in_fresh_process(_isolated_run, (task, data, rules, driver_pid, index, seeds))
        return _checked_outcome(index, message, rules, driver_pid)
    return _bounded_run(task, data, rules, driver_pid, index, seeds)


def _isolated_run(task: RunTask, data: Any, rules: RunRules, driver_pid: int, index: int, seeds: RunSeeds) -> bytes:
    """In the isolated child: the bounded run, its value encoded as data; the message."""
    outcome = _bounded_run(task, data, rules, driver_pid, index, seeds,
                           encode=lambda parts: encode_value(parts, MAX_MESSAGE_BYTES))
    return outcome_message(outcome.score, outcome.payload)


def _checked_outcome(index: int, message: bytes | None, rules: RunRules, driver_pid: int) -> RunOutcome:
    """The caller's outcome of an isolated run: its message parsed (no code runs) and its value rebuilt and guarded
    again here, pickled by the caller; a missing, malformed or refused one is a failed run."""
    if message is None:
        return RunOutcome(index, math.nan)
    try:
        score, parts = decode_outcome(message)
        message = None
        if type(parts) is not tuple or len(parts) != 3 or not math.isfinite(score):
            return RunOutcome(index, math.nan)
        if rules.registrations:
            restore_registrations(rules.registrations)
        with silenced() if os.getpid() != driver_pid else contextlib.nullcontext():  # the driver's is on already
            payload = release_payload(list(parts), rules.release, rules.trust())
    except Exception:  # noqa: BLE001 - the release rules: a message that is not released is a failed run
        return RunOutcome(index, math.nan)
    return RunOutcome(index, score, payload)


def _bounded_run(task: RunTask, data: Any, rules: RunRules, driver_pid: int, index: int,
                 seeds: RunSeeds, encode: Callable[[tuple], bytes] | None = None) -> RunOutcome:
    """The run, its conversion, guard and pickling inside one ``try`` and one silence; then the garbage collected.

    The silence is the driver's for in-process backends (``silenced`` is process-wide, so it is
    entered once, around the whole selection) and the worker's otherwise.
    """
    in_worker = os.getpid() != driver_pid
    if in_worker:
        _freeze_worker()
    isolation = silenced() if in_worker else contextlib.nullcontext()
    score, payload = math.nan, None
    returned = params = output = details = parts = None
    with isolation, restored_settings():
        try:
            if rules.registrations:
                restore_registrations(rules.registrations)
            trust = rules.trust()
            seed_globals(seeds.globals)
            returned, params, details = task(readonly(data), seeds)
            score, output = split_return(returned)  # a wrong type or a float overflow raises: scored worst
            returned = None
            if rules.score_noise is not None and math.isfinite(score):
                score += _score_noise(rules.score_noise, np.random.Generator(np.random.PCG64(seeds.noise)))
            if math.isfinite(score):
                parts, params, output, details = [params, output, details], None, None, None
                payload = release_payload(parts, rules.release, trust, encode)
        except OPERATOR_EXCEPTIONS:
            raise
        except BaseException:  # noqa: BLE001 - the release rules: drop it (StopSelection and CancelledError too)
            score, payload = math.nan, None
        returned = params = output = details = parts = None
        gc.collect()  # the trainer's objects (cycles included) die here, inside the silence
    if payload is None or not math.isfinite(score):
        return RunOutcome(index, math.nan)
    return RunOutcome(index, score, payload)


_FROZEN_IN: set[int] = set()


def _freeze_worker() -> None:
    """In a worker, once: collect, then freeze what exists, so each run's ``gc.collect()`` scans its own objects only."""
    if os.getpid() not in _FROZEN_IN:
        _FROZEN_IN.add(os.getpid())
        gc.collect()
        gc.freeze()
