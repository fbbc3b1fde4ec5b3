"""What an attacker reads where a release should hold nothing: traceback frames and leftover files.

Used by ``tests/test_release_attacks.py``.

* [`traceback_leaks`][tests.support.leaks.traceback_leaks] walks an exception's whole traceback, and the tracebacks of
  its ``__cause__`` / ``__context__`` chain, frame by frame through ``f_locals`` (as Sentry or
  loguru's ``diagnose`` do), descending into containers, dataclasses and privselect objects,
  and also renders it with ``traceback.TracebackException(capture_locals=True)``;
* [`files_holding`][tests.support.leaks.files_holding] searches a folder tree for files holding a byte string;
  [`kill_tuner_mid_run`][tests.support.leaks.kill_tuner_mid_run] SIGKILLs a loky tuner's process group mid-run;
* a backend that keeps losing workers, and a logging handler that collects messages.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import traceback
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from privselect.tuning.backends import SequentialBackend

__all__ = ["traceback_leaks", "files_holding", "SEED_TYPES", "LossyBackend", "AlwaysLostBackend", "CollectingHandler", "kill_tuner_mid_run",
           "remove_leftovers", "dies_on_d", "unpicklable_on_d"]

SEED_TYPES = (np.random.SeedSequence, np.random.bit_generator.SeedlessSeedSequence, np.random.Generator,
              np.random.BitGenerator, np.random.RandomState)
_LONG_INTEGER = re.compile(r"\d{30,}")  # a 128-bit entropy printed in decimal
_SEED_REPR = re.compile(r"SeedSequence\(\s*entropy|Generator\(\w+\) at|RandomState\(\w+\) at")


def _is_library(obj: Any) -> bool:
    return type(obj).__module__.startswith("privselect")


def _value_leaks(value: Any, path: str, k: int | None, floats: set[float], markers: tuple[str, ...],
                 depth: int, seen: set[int]) -> list[str]:
    if id(value) in seen or depth > 4:
        return []
    seen.add(id(value))
    found = []
    if isinstance(value, SEED_TYPES):
        return [f"{path}: {type(value).__name__}"]
    if type(value).__name__ in ("RunOutcome", "Selected", "RunSeeds") and _is_library(value):
        return [f"{path}: {type(value).__name__}"]
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        if k is not None and int(value) == k:
            found.append(f"{path}: K = {k}")
        if abs(int(value)) >= 2**64:
            found.append(f"{path}: a long integer (seed entropy?)")
        return found
    if isinstance(value, (float, np.floating)):
        return [f"{path}: a run's score or param {value!r}"] if float(value) in floats else []
    if isinstance(value, str):
        return [f"{path}: holds {m!r}" for m in markers if m in value]
    if isinstance(value, dict):
        items: Iterable = value.items()
    elif isinstance(value, (list, tuple, set, frozenset)):
        items = enumerate(value)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        items = ((f.name, getattr(value, f.name, None)) for f in dataclasses.fields(value))
    elif _is_library(value) and hasattr(value, "__dict__") and not isinstance(value, type):
        items = vars(value).items()
    else:
        return []
    for key, child in list(items):
        found += _value_leaks(child, f"{path}[{key!r}]", k, floats, markers, depth + 1, seen)
    return found


def traceback_leaks(exc: BaseException, *, k: int | None = None, floats: Iterable[float] = (),
                    markers: tuple[str, ...] = (), skip_files: tuple[str, ...] = ()) -> list[str]:
    """Every piece of run data reachable from ``exc``'s tracebacks (frames in ``skip_files`` excepted).

    Looks for seed material (SeedSequence, generators, integers >= 2**64), K, the runs' scores
    and params (``floats``), the engine's run records, and ``markers`` in strings; both in the
    live ``f_locals`` and in the locals that ``TracebackException(capture_locals=True)`` captures.
    """
    floats = set(floats)
    found: list[str] = []
    chain, seen_exceptions = [exc], set()
    while chain:
        current = chain.pop()
        if current is None or id(current) in seen_exceptions:
            continue
        seen_exceptions.add(id(current))
        chain += [current.__cause__, current.__context__]
        found += [f"{type(current).__name__} message holds {m!r}" for m in markers if m in str(current)]
        tb = current.__traceback__
        while tb is not None:
            frame = tb.tb_frame
            if frame.f_code.co_filename not in skip_files:
                seen: set[int] = set()
                for name, value in frame.f_locals.items():
                    found += _value_leaks(value, f"{frame.f_code.co_name}:{name}", k, floats, markers, 0, seen)
            tb = tb.tb_next
    captured = traceback.TracebackException.from_exception(exc, capture_locals=True)
    for frame_summary in _frames(captured):
        if frame_summary.filename in skip_files:
            continue
        for name, text in (frame_summary.locals or {}).items():
            where = f"captured {frame_summary.name}:{name}"
            if _SEED_REPR.search(text) or _LONG_INTEGER.search(text):
                found.append(f"{where}: seed material in {text[:80]!r}")
            if k is not None and text.strip() == str(k):
                found.append(f"{where}: K = {k}")
            found += [f"{where}: holds {m!r}" for m in markers if m in text]
            found += [f"{where}: a run's score or param {x!r}" for x in floats if repr(x) in text]
    return found


def _frames(captured: traceback.TracebackException):
    stack, seen = [captured], set()
    while stack:
        current = stack.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        yield from current.stack
        stack += [current.__cause__, current.__context__]


def files_holding(roots: Iterable[Path], needle: bytes, newer_than: float, max_bytes: int = 1 << 28) -> list[str]:
    """Files under ``roots`` modified after ``newer_than`` (epoch s) whose bytes contain ``needle``."""
    hits = []
    for root in roots:
        for directory, _, names in os.walk(root):
            for name in names:
                path = Path(directory) / name
                try:
                    stat = path.stat()
                    if stat.st_mtime < newer_than or stat.st_size > max_bytes or not path.is_file():
                        continue
                    if needle in path.read_bytes():
                        hits.append(f"{path} ({stat.st_size} bytes, mode {oct(stat.st_mode & 0o777)})")
                except OSError:
                    continue
    return hits


class LostWorker(Exception):
    pass


@dataclasses.dataclass(frozen=True)
class LossyBackend(SequentialBackend):
    """Completes two runs per round, then reports a lost worker (as loky's BrokenProcessPool would)."""

    name: str = "test-lossy"

    def imap_unordered(self, function, shared, tasks, n_jobs):
        for count, task in enumerate(tasks):
            if count == 2:
                raise LostWorker()
            yield function(*shared, *task)

    def worker_loss_errors(self):
        return (LostWorker,)


@dataclasses.dataclass(frozen=True)
class AlwaysLostBackend(SequentialBackend):
    """Loses every task, a run of nothing included: the infrastructure is gone."""

    name: str = "test-always-lost"

    def imap_unordered(self, function, shared, tasks, n_jobs):
        for _ in tasks:
            raise LostWorker()
        yield from ()

    def worker_loss_errors(self):
        return (LostWorker,)


class CollectingHandler(logging.Handler):
    def __init__(self):
        super().__init__(level=0)
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


KILLED_RUN = """
import sys, time
import numpy as np
import privselect as ps
from privselect.tuning.space import Uniform

canary, started = sys.argv[1].encode(), sys.argv[2]
data = np.frombuffer((canary * (4_000_000 // len(canary)))[:4_000_000], dtype=np.uint8).copy()

def train(params, data, rng):
    open(started, "a").close()
    time.sleep(0.2)
    return float(params["x"] + data[:1].sum() * 0)

ps.PrivateTuner(train, {"x": Uniform(0, 1)}, ps.Gaussian(5.0), ps.Geometric(mean=2000), 1e-5, n_jobs=2,
                backend="loky", accountant="prv").run(data)
"""


def kill_tuner_mid_run(canary: bytes, workdir: Path, root: Path) -> Path:
    """Run a loky tuner on data holding ``canary`` in a subprocess (``$TMPDIR`` under ``workdir``),
    SIGKILL its whole process group (driver, workers, resource tracker) mid-run; return the TMPDIR."""
    temp, started = workdir / "tmp", workdir / "started"
    temp.mkdir()
    env = {**os.environ, "TMPDIR": str(temp), "PYTHONPATH": str(root)}
    env.pop("JOBLIB_TEMP_FOLDER", None)
    process = subprocess.Popen([sys.executable, "-c", KILLED_RUN, canary.decode(), str(started)], env=env,
                               start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while not started.exists() and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        if not started.exists():
            raise AssertionError("the runs never started")
        time.sleep(1.0)  # several runs in both workers
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    time.sleep(0.5)
    KILLED_PIDS.append(process.pid)
    return temp


KILLED_PIDS: list[int] = []


def remove_leftovers(shm: Path, temp: Path) -> None:
    """Delete what the killed drivers left in /dev/shm (loky's semaphores, joblib's folders: named by pid)."""
    while KILLED_PIDS:
        pid = KILLED_PIDS.pop()
        for leftover in [*shm.glob(f"joblib_memmapping_folder_{pid}_*"), *shm.glob(f"sem.loky-{pid}-*")]:
            shutil.rmtree(leftover) if leftover.is_dir() else leftover.unlink()
    shutil.rmtree(temp, ignore_errors=True)


# Trainers whose picklability or survival depends on the data (D holds a record above 2.5). They live here, not
# in the test module, so that each fresh loky worker imports this light module (numpy only) to unpickle them.


def dies_on_d(params, data, rng):
    """Kills its worker process (``os._exit``) on D for candidates above 0.6."""
    if data.max() > 2.5 and params["x"] > 0.6:
        os._exit(3)
    return params["x"]


def unpicklable_on_d(params, data, rng):
    """Returns an unpicklable output (a lock) on D for candidates above 0.6."""
    import threading

    return params["x"], ({"lock": threading.Lock()} if data.max() > 2.5 and params["x"] > 0.6 else params["x"])
