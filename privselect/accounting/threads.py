"""One BLAS thread for the accountants' numerical kernels.

Their matrix products are small and many (the Chernoff bounds' block sums: thousands by 64 by 40; the CF
accountant's blocked Fourier sums); a multi-threaded BLAS answers them no faster, spends its time synchronising
(10-50 times slower on a busy machine) and leaves its threads spinning on the other cores afterwards (on 2 cores,
0.5 s of CPU and 0.15 s of wall time in a 1 s random-allocation certificate). The limit holds only while a kernel
or a decorated build runs (threadpoolctl, which scikit-learn uses the same way), and changes no value.
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from ..memo import quiet_cache

__all__ = ["one_blas_thread", "single_blas_thread"]

F = TypeVar("F", bound=Callable[..., Any])


@quiet_cache(maxsize=1)  # no hit counters: a run may call an accountant (privselect.memo)
def _controller() -> Any:
    try:  # a scikit-learn dependency, hence privselect's; imported on first use
        from threadpoolctl import ThreadpoolController
    except ImportError:  # pragma: no cover
        return None
    return ThreadpoolController()


_lock = threading.Lock()
_held: list = []  # the active limiter (at most one) and how many contexts hold it


@contextlib.contextmanager
def single_blas_thread() -> Iterator[None]:
    """A context in which the BLAS libraries run one thread. The limit is process-wide, so concurrent contexts
    (two threads of one build) share it: the first sets it, the last restores the limits found before."""
    controller = _controller()
    if controller is None:  # pragma: no cover
        yield
        return
    with _lock:
        if not _held:
            _held.extend([controller.limit(limits=1, user_api="blas"), 0])
        _held[1] += 1
    try:
        yield
    finally:
        with _lock:
            _held[1] -= 1
            if _held[1] == 0:
                limiter = _held[0]
                _held.clear()
                limiter.restore_original_limits()


def one_blas_thread(function: F) -> F:
    """``function`` run with the BLAS libraries limited to one thread (restored afterwards)."""

    @functools.wraps(function)
    def limited(*args: Any, **kwargs: Any) -> Any:
        with single_blas_thread():
            return function(*args, **kwargs)

    return limited  # type: ignore[return-value]
