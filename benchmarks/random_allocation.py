"""Random allocation (balls-in-bins redrawn per epoch): certified eps next to Poisson at rate 1/t.

Grid: sigma in {0.8, 1.1, 2}, t in {100, 234, 1000} steps per epoch, 60 epochs, delta in {1e-5, 1e-10}. Each row:
the allocation accountant's certified bracket on eps(delta) (its upper end is the certificate), Poisson
subsampling at rate 1/t over the same 60 t steps (auto), the bracket's ratio upper/lower, and the CPU seconds
and peak traced memory (tracemalloc) of one allocation query (profile build plus eps(delta)).

    PYTHONPATH=. python benchmarks/random_allocation.py [--quick]

The `random-allocation` package (Feldman, Shenfeld) is not run here (not installed beside our numpy).
"""

from __future__ import annotations

import argparse
import time
import tracemalloc

import privselect as ps

SIGMAS = (0.8, 1.1, 2.0)
STEPS = (100, 234, 1000)
EPOCHS = 60
DELTAS = (1e-5, 1e-10)


def measured(query):
    """(result, CPU seconds, peak traced MB) of ``query()``."""
    tracemalloc.start()
    start = time.process_time()
    result = query()
    seconds = time.process_time() - start
    peak = tracemalloc.get_traced_memory()[1] / 1e6
    tracemalloc.stop()
    return result, seconds, peak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="sigma 1.1 and t 234 only")
    args = parser.parse_args()
    sigmas, steps = ((1.1,), (234,)) if args.quick else (SIGMAS, STEPS)
    print(f"{'sigma':>5} {'t':>5} {'delta':>7} {'alloc lower':>11} {'alloc upper':>11} {'up/low':>7} "
          f"{'poisson':>8} {'cpu s':>6} {'peak MB':>7}")
    for sigma in sigmas:
        for t in steps:
            allocation = ps.Gaussian(sigma).random_allocation(steps=t).compose(EPOCHS)
            poisson = ps.privacy_profile(ps.Gaussian(sigma).poisson_subsample(1.0 / t).compose(EPOCHS * t))
            for delta in DELTAS:
                (lo, hi), seconds, peak = measured(lambda: ps.privacy_profile(allocation).epsilon_bounds(delta))
                p_eps = float(poisson.epsilon(delta))
                print(f"{sigma:5.2f} {t:5d} {delta:7.0e} {float(lo):11.4f} {float(hi):11.4f} "
                      f"{float(hi) / float(lo):7.2f} {p_eps:8.4f} {seconds:6.3f} {peak:7.2f}")


if __name__ == "__main__":
    main()
