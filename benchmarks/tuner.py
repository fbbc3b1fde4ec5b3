"""Tuner scale-out benchmark (issue 18): backends, start-up, overhead per run, driver memory.

    python -m benchmarks.tuner            # from the repository root

Prints, in one run:

* wall time and speed-up of 32 CPU-bound runs on sequential, loky(2), dask(2) and ray(2),
  warm (pool, cluster or ray already running) and the start-up cost paid once (starting the
  pool / ``LocalCluster`` / ``ray.init`` plus the first selection's worker warm-up);
* the tuner's overhead per run: 1000 trivial runs in the driver against a plain Python loop,
  and the per-run cost of each parallel backend on 200 trivial runs;
* peak driver memory (tracemalloc) with 50 MB outputs at K = 200, sequential and loky(2).

K is fixed by ``Binomial(n, 1 - 1e-12)`` (K = n except with probability ~n * 1e-12), so every
backend runs the same candidates. One BLAS thread per process (set below, before numpy loads),
so a run uses one core wherever it executes. The machine's load average is printed: on a
shared machine the speed-ups are lower bounds.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # inherited by loky, dask and ray workers

import logging  # noqa: E402
import time  # noqa: E402
import tracemalloc  # noqa: E402

import privselect as ps  # noqa: E402
from privselect.tuning import PrivateTuner  # noqa: E402
from privselect.tuning.space import Uniform  # noqa: E402
from tests.support.scaleout import cpu_bound_trainer, large_output_trainer, trivial_trainer  # noqa: E402
from tests.support.timing import best_of  # noqa: E402

CPU_RUNS = 32
CPU_STEPS = 200  # ~0.3-0.5 s per run on one core
MEMORY_RUNS = 200
OUTPUT_BYTES = 50_000_000


def fixed_k(n: int) -> ps.Binomial:
    return ps.Binomial(n, 1.0 - 1e-12)


def make(train, n_runs: int, **kwargs) -> PrivateTuner:
    tuner = PrivateTuner(train, {"x": Uniform(0, 1)}, ps.Gaussian(4.0), fixed_k(n_runs), 1e-6, seed=0,
                         accountant="exact", **kwargs)
    _ = tuner.certificate  # the certificate's cost is not tuner overhead
    return tuner


def timed(fn) -> tuple[object, float]:
    start = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - start


def overhead_in_driver() -> float:
    """Microseconds per run: 1000 trivial runs through the tuner minus the same loop in plain Python."""
    import numpy as np

    tuner = make(trivial_trainer, 1000)
    _, tuner_s = best_of(lambda: tuner.run(None))
    rng = np.random.default_rng(0)
    _, loop_s = best_of(lambda: [trivial_trainer({"x": rng.uniform()}, None, rng) for _ in range(1000)])
    return 1e6 * (tuner_s - loop_s) / 1000


def backend_rows() -> list[tuple[str, float, float, float, float]]:
    """(backend, warm seconds for 32 runs, start-up seconds, per-run overhead in ms, best score)."""
    data = {"steps": CPU_STEPS}
    rows = []
    sequential = make(cpu_bound_trainer, CPU_RUNS)
    result, seq_s = best_of(lambda: sequential.run(data), repeat=2)
    rows.append(("sequential", seq_s, 0.0, 0.0, result.best_score))

    def parallel(name: str, start: float) -> None:
        tuner = make(cpu_bound_trainer, CPU_RUNS, n_jobs=2, backend=name)
        _, cold_s = timed(lambda: tuner.run(data))
        result, warm_s = best_of(lambda: tuner.run(data), repeat=2)
        trivial = make(trivial_trainer, 200, n_jobs=2, backend=name)
        _, trivial_s = best_of(lambda: trivial.run(None), repeat=2)
        rows.append((f"{name}(2)", warm_s, start + cold_s - warm_s, 1e3 * trivial_s / 200, result.best_score))

    parallel("loky", 0.0)
    import distributed

    (cluster, client), start_s = timed(lambda: _dask_cluster(distributed))
    try:
        parallel("dask", start_s)
    finally:
        client.close()
        cluster.close()
    import ray

    _, start_s = timed(lambda: ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
                                        configure_logging=False))
    try:
        parallel("ray", start_s)
    finally:
        ray.shutdown()
    return rows


def _dask_cluster(distributed):
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                       silence_logs=logging.ERROR)
    return cluster, distributed.Client(cluster)


def peak_driver_memory(backend: str) -> tuple[float, float]:
    """(peak MB allocated in the driver, seconds) for K = 200 runs with 50 MB outputs."""
    tuner = make(large_output_trainer, MEMORY_RUNS, n_jobs=1 if backend == "sequential" else 2, backend=backend)
    tracemalloc.start()
    try:
        _, seconds = timed(lambda: tuner.run({"output_bytes": OUTPUT_BYTES}))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak / 1e6, seconds


def main() -> None:
    load = os.getloadavg()[0]
    print(f"machine: {os.cpu_count()} CPUs, load average {load:.1f} at start")
    print(f"tuner overhead in the driver: {overhead_in_driver():.1f} us per run (1000 trivial runs vs a plain loop)")
    rows = backend_rows()
    seq_s = rows[0][1]
    print(f"\n{CPU_RUNS} CPU-bound runs ({CPU_STEPS} steps of tanh(X X^T), 120x120):")
    print("| backend | wall time (warm) | speed-up | start-up (once) | overhead per run | same winner |")
    print("|---|---|---|---|---|---|")
    for name, warm_s, start_s, per_run_ms, score in rows:
        same = "yes" if score == rows[0][4] else "NO"
        startup = "-" if name == "sequential" else f"{start_s:.1f} s"
        per_run = "-" if name == "sequential" else f"{per_run_ms:.1f} ms"
        print(f"| {name} | {warm_s:.2f} s | {seq_s / warm_s:.2f}x | {startup} | {per_run} | {same} |")
    print(f"\npeak driver memory, K = {MEMORY_RUNS} runs with {OUTPUT_BYTES // 1_000_000} MB outputs "
          f"(all outputs: {MEMORY_RUNS * OUTPUT_BYTES / 1e9:.0f} GB):")
    for backend in ("sequential", "loky"):
        peak_mb, seconds = peak_driver_memory(backend)
        print(f"  {backend}: peak {peak_mb:.0f} MB = {peak_mb * 1e6 / OUTPUT_BYTES:.1f} outputs ({seconds:.0f} s)")
    print(f"load average at end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
