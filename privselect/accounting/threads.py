"""One BLAS thread for the accountants' builds.

Their matrix products are small (the Chernoff bounds' block sums: thousands by 64 by 40); a multi-threaded BLAS
answers them no faster and leaves its threads spinning on the other cores afterwards (on 2 cores, 0.5 s of CPU and
0.15 s of wall time in a 1 s random-allocation certificate). The limit holds only while a decorated build runs
(threadpoolctl, which scikit-learn uses the same way), and changes no value.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["one_blas_thread"]

F = TypeVar("F", bound=Callable[..., Any])


@functools.lru_cache(maxsize=1)
def _controller() -> Any:
    from threadpoolctl import ThreadpoolController  # a scikit-learn dependency, imported on first use

    return ThreadpoolController()


def one_blas_thread(function: F) -> F:
    """``function`` run with the BLAS libraries limited to one thread (restored afterwards)."""

    @functools.wraps(function)
    def limited(*args: Any, **kwargs: Any) -> Any:
        with _controller().limit(limits=1, user_api="blas"):
            return function(*args, **kwargs)

    return limited  # type: ignore[return-value]
