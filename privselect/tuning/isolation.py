"""Process isolation: a run of trainer code you do not trust, in a fresh process of its own.

[`in_fresh_process`][privselect.tuning.isolation.in_fresh_process] forks the calling process for one
run (``PrivateTuner(..., isolate=True)``, any backend). In the child, stdin, stdout and stderr
are pointed at ``/dev/null`` at the file-descriptor level before the run starts, so C code and
writes to ``sys.__stdout__`` reach nothing; the child sends back one pickled outcome through a
pipe and leaves with ``os._exit``, so ``atexit`` handlers, threads and everything else the run
started die with it. A child that exits early (``sys.exit``, ``os._exit``), is killed by a
signal, or sends a truncated outcome gives the fallback (the run scores worst). Only the
operator's ``KeyboardInterrupt`` in the parent stops the selection: the child is killed first.

The cost is one ``fork`` of the calling process per run (it grows with the process's memory:
about 0.2 s with torch loaded on a busy machine), plus pickling the outcome (``benchmarks/release.py``).
"""

from __future__ import annotations

import os
import pickle
import signal
from collections.abc import Callable
from typing import Any

__all__ = ["in_fresh_process", "isolation_supported"]


def isolation_supported() -> bool:
    return hasattr(os, "fork")


def _child(function: Callable[..., Any], args: tuple, write: int) -> None:
    """In the forked child: silence the descriptors, run, send the outcome, leave without any cleanup."""
    try:
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        os.close(null)
        payload = pickle.dumps(function(*args), protocol=pickle.HIGHEST_PROTOCOL)
        view = memoryview(payload)
        while view:
            view = view[os.write(write, view):]
    finally:
        os._exit(0)


def in_fresh_process(function: Callable[..., Any], args: tuple, fallback: Any) -> Any:
    """``function(*args)`` computed in a forked child; ``fallback`` if the child does not send a whole outcome."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child (coverage does not follow it)
        os.close(read)
        _child(function, args, write)
    os.close(write)
    chunks = []
    try:
        with os.fdopen(read, "rb") as pipe:
            while chunk := pipe.read(1 << 20):
                chunks.append(chunk)
    except BaseException:
        _kill(pid)
        raise
    os.waitpid(pid, 0)
    try:
        return pickle.loads(b"".join(chunks))
    except Exception:  # noqa: BLE001 - an empty or truncated outcome: the run died
        return fallback


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    except (ProcessLookupError, ChildProcessError):
        pass
