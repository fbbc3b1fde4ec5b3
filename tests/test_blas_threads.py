"""The accountants' one-BLAS-thread limit: held while a kernel runs, restored afterwards, also when threads overlap."""

from __future__ import annotations

import threading

import numpy as np
import pytest

threadpoolctl = pytest.importorskip("threadpoolctl")

from privselect.accounting.threads import one_blas_thread, single_blas_thread  # noqa: E402


def _blas_threads() -> list[int]:
    np.ones((2, 2)) @ np.ones((2, 2))  # BLAS loaded
    return [info["num_threads"] for info in threadpoolctl.threadpool_info() if info["user_api"] == "blas"]


def test_the_limit_holds_inside_and_the_limits_found_before_come_back():
    before = _blas_threads()
    with single_blas_thread():
        assert all(n == 1 for n in _blas_threads())
        with single_blas_thread():  # nested
            assert all(n == 1 for n in _blas_threads())
        assert all(n == 1 for n in _blas_threads())
    assert _blas_threads() == before


def test_overlapping_threads_leave_the_limits_found_before():
    before = _blas_threads()
    entered, release = threading.Barrier(4), threading.Event()

    @one_blas_thread
    def kernel() -> None:
        entered.wait()
        release.wait(timeout=10)

    threads = [threading.Thread(target=kernel) for _ in range(4)]
    for t in threads:
        t.start()
    release.set()
    for t in threads:
        t.join()
    assert _blas_threads() == before
