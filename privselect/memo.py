"""A memo for data-independent functions that counts nothing.

``functools.lru_cache`` keeps hit and miss counters (``cache_info()``) that anyone in the process can read. A cached
function that a run calls (a calibration inside a trainer, a check per candidate) would count the runs, and
so K (docs/release.md). [`quiet_cache`][privselect.memo.quiet_cache] keeps the results without counters: the
wrapped function has no ``cache_info`` or ``cache_parameters``, only ``cache_clear``. Which results it holds is
process state like an imported module (reachable by introspecting the closure): an in-process channel that
``isolate=True`` contains.
"""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["quiet_cache"]

F = TypeVar("F", bound=Callable[..., Any])


def quiet_cache(maxsize: int | None = 128) -> Callable[[F], F]:
    """Memoise a pure function on its hashable arguments (least recently used first out past ``maxsize``)."""
    if maxsize is not None and (isinstance(maxsize, bool) or not isinstance(maxsize, int) or maxsize < 1):
        raise ValueError(f"maxsize must be a positive integer or None, got {maxsize!r}")

    def decorate(function: F) -> F:
        results: OrderedDict[Any, Any] = OrderedDict()
        lock = threading.Lock()

        @functools.wraps(function)
        def cached(*args: Any, **kwargs: Any) -> Any:
            key = (args, tuple(sorted(kwargs.items()))) if kwargs else args
            with lock:
                if key in results:
                    results.move_to_end(key)
                    return results[key]
            value = function(*args, **kwargs)
            with lock:
                results[key] = value
                if maxsize is not None and len(results) > maxsize:
                    results.popitem(last=False)
            return value

        cached.cache_clear = results.clear  # type: ignore[attr-defined]
        return cached  # type: ignore[return-value]

    return decorate
