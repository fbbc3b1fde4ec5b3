"""Trainers of the scale-out tests and benchmark, importable on every worker (loky, dask, ray).

Each is deterministic given its ``rng``: the score and output depend only on the run's
generator and the candidate. Side effects (sleeping, writing a call log or a pid file into
``data["dir"]``) never change the result; they let the tests count calls and find the
process that is running a run.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

import numpy as np


def _record_call(data: dict, params: dict) -> None:
    directory = data.get("dir")
    if directory is None:
        return
    with open(Path(directory, "calls.log"), "a") as log:  # one short append per call: atomic across processes
        log.write(f"{params['x']!r}\n")
    # the pid file after the call is logged: a process killed once its pid file exists has logged its call (the
    # killed-worker tests count the re-executed run; killed in between, the lost run was never counted)
    Path(directory, f"{os.getpid()}.pid").touch()


def rng_trainer(params: dict, data: dict, rng: np.random.Generator):
    """Score = candidate + N(0, 1) from the run's rng; output: a small array drawn from it."""
    _record_call(data, params)
    time.sleep(data.get("sleep", 0.0))
    return params["x"] + float(rng.normal()), rng.integers(0, 1000, size=3)


def raising_trainer(params: dict, data: dict, rng: np.random.Generator):
    """Raises for candidates below 0.5 (those runs score worst); counts every call."""
    _record_call(data, params)
    if params["x"] < 0.5:
        raise ValueError(f"secret {params['x']!r}")
    return params["x"] + float(rng.normal())


def large_output_trainer(params: dict, data: dict, rng: np.random.Generator):
    """Returns an output of ``data["output_bytes"]`` bytes (float64 values drawn from the rng)."""
    _record_call(data, params)
    return params["x"], np.full(data["output_bytes"] // 8, rng.random())


def cpu_bound_trainer(params: dict, data: dict, rng: np.random.Generator):
    """About ``data["steps"]`` small matrix products: CPU-bound, one BLAS thread is enough."""
    x = rng.normal(size=(120, 120))
    for _ in range(data.get("steps", 100)):
        x = np.tanh(x @ x.T / 120)
    return float(x.sum()) + params["x"]


def trivial_trainer(params: dict, data, rng: np.random.Generator):
    return params["x"]


def calls(directory: str | os.PathLike) -> list[float]:
    """The candidates of every call recorded in ``directory`` (one entry per call)."""
    path = Path(directory, "calls.log")
    return [float(line) for line in path.read_text().split()] if path.exists() else []


def worker_pids(directory: str | os.PathLike) -> set[int]:
    """The pids of the processes that have started a run (pid files written by the trainers)."""
    return {int(p.stem) for p in Path(directory).glob("*.pid")}


RAY_START_TIMEOUT_S = 180
"""``ray.init`` must not hang CI: past this, the fixture fails with TimeoutError."""


def _ray_start_timed_out(signum, frame):
    raise TimeoutError(f"ray.init did not return within {RAY_START_TIMEOUT_S} s")


@contextlib.contextmanager
def local_ray_session(**init_options):
    """A local ray (2 CPUs, no dashboard, worker output kept from the driver) for one test module."""
    import ray

    previous = signal.signal(signal.SIGALRM, _ray_start_timed_out)
    signal.alarm(RAY_START_TIMEOUT_S)
    try:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False, **init_options)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    try:
        yield ray
    finally:
        ray.shutdown()
