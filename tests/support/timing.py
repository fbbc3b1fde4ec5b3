"""Small timing helpers shared by the benchmarks and experiments (best of n wall-clock runs)."""

from __future__ import annotations

import time
from typing import Any, Callable


def best_of(fn: Callable[[], Any], repeat: int = 3) -> tuple[Any, float]:
    """Run ``fn`` ``repeat`` times; return its last result and the fastest wall time in seconds."""
    best = float("inf")
    result = None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return result, best
