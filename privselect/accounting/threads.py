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
from collections.abc import Callable
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


def single_blas_thread() -> contextlib.AbstractContextManager:
    """A context in which the BLAS libraries run one thread (restored on exit)."""
    controller = _controller()
    if controller is None:  # pragma: no cover
        return contextlib.nullcontext()
    return controller.limit(limits=1, user_api="blas")


def one_blas_thread(function: F) -> F:
    """``function`` run with the BLAS libraries limited to one thread (restored afterwards)."""

    @functools.wraps(function)
    def limited(*args: Any, **kwargs: Any) -> Any:
        with single_blas_thread():
            return function(*args, **kwargs)

    return limited  # type: ignore[return-value]
