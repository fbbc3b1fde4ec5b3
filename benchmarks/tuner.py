"""Tuner benchmark: overhead for K = 1000 trivial runs, and loky speed-up on a CPU-bound trainer.

    python -m benchmarks.tuner

Targets (issue 4): overhead < 1 s for 1000 trivial runs; loky with 2 workers >= 1.6x faster
than sequential on a CPU-bound trainer. Also compares a plain Python loop over the same
trivial trainer, so the overhead is reported as a ratio measured in the same run.
"""

from __future__ import annotations

import numpy as np

import privselect as ps
from tests.support.timing import best_of
from privselect.space import Uniform
from privselect.tuning import PrivateTuner


def trivial(params, data, rng):
    return params["x"]


def cpu_bound(params, data, rng):
    x = rng.normal(size=(200, 200))
    for _ in range(300):
        x = np.tanh(x @ x.T / 200)
    return float(x.sum())


def make(train, mean, **kwargs):
    """K ~ Poisson(mean) with a fixed seed: the same K for every configuration compared (revealed, to
    report it; K is drawn independently of the data)."""
    t = PrivateTuner(train, {"x": Uniform(0, 1)}, ps.Gaussian(4.0), ps.Poisson(mean), 1e-6, seed=0,
                     accountant="exact", reveal_k=True, **kwargs)
    _ = t.certificate  # certificate cost is not tuner overhead
    return t


def main() -> None:
    t = make(trivial, 1000)
    result, tuner_s = best_of(lambda: t.run(None))
    n = result.n_runs
    rng = np.random.default_rng(0)
    _, loop_s = best_of(lambda: [trivial({"x": rng.uniform()}, None, rng) for _ in range(n)])
    print(f"K={n} trivial runs: tuner {tuner_s:.3f} s (target < 1 s per 1000); plain loop {loop_s:.4f} s; "
          f"overhead per run {1e6 * (tuner_s - loop_s) / n:.1f} us")
    seq = make(cpu_bound, 12)
    par = make(cpu_bound, 12, n_jobs=2, backend="loky")
    par.run(None)  # start the worker pool
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1):  # one BLAS thread per run, as in each loky worker
        _, seq_s = best_of(lambda: seq.run(None), repeat=2)
    _, par_s = best_of(lambda: par.run(None), repeat=2)
    print(f"{seq.run(None).n_runs} CPU-bound runs: sequential {seq_s:.2f} s, loky x2 {par_s:.2f} s, speed-up {seq_s / par_s:.2f}x "
          "(target >= 1.6x)")


if __name__ == "__main__":
    main()
