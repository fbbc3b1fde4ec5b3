"""Small timing helpers shared by the benchmarks, experiments and tests: best of n wall-clock runs, and
a wall-clock bound on one call (no hang; SIGALRM, so main thread only)."""

from __future__ import annotations

import contextlib
import signal
import time
from collections.abc import Callable
from typing import Any

#: "Never a hang": every single call of the fuzz tests must return (or raise) within this.
CALL_SECONDS = 60


class Hang(AssertionError):
    pass


@contextlib.contextmanager
def bounded(seconds: float = CALL_SECONDS):
    """Raise `Hang` if the block runs longer than ``seconds`` of wall-clock time."""
    def handler(signum, frame):
        raise Hang(f"call did not finish within {seconds}s")

    old = signal.signal(signal.SIGALRM, handler)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def best_of(fn: Callable[[], Any], repeat: int = 3) -> tuple[Any, float]:
    """Run ``fn`` ``repeat`` times; return its last result and the fastest wall time in seconds."""
    best = float("inf")
    result = None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return result, best
