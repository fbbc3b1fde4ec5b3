"""Random allocation (balls-in-bins redrawn per epoch): certified eps next to Poisson at rate 1/t.

Grid: sigma in {0.8, 1.1, 2}, t in {100, 234, 1000} steps per epoch, 60 epochs, delta in {1e-5, 1e-10}. Each row:
the allocation accountant's certified bracket on eps(delta) (its upper end is the certificate; its lower end is
certified too, from the dominated epoch laws) and their ratio, Poisson subsampling at rate 1/t over the same 60 t steps (auto), the `random-allocation`
package's best valid upper bound and its lower bound (remove direction), the CPU seconds of a certificate from
nothing (``cert s``: epoch laws rebuilt, profile, its upper eps(delta), which never builds the lower end), and the
CPU seconds and peak traced memory (tracemalloc) of the whole bracket from nothing (``cpu s``: both ends).

    PYTHONPATH=. python benchmarks/random_allocation.py [--quick]

The package's numbers are read from tests/data/random_allocation_reference.json, which
benchmarks/random_allocation_reference.py writes in the package's own environment (its command is in the file).
"""

from __future__ import annotations

import argparse
import json
import pathlib
import time
import tracemalloc

import privselect as ps
from privselect.accounting.allocation.epoch import epoch_law
from privselect.accounting.allocation.lower import epoch_lower_law

REFERENCE = pathlib.Path(__file__).resolve().parent.parent / "tests" / "data" / "random_allocation_reference.json"

SIGMAS = (0.8, 1.1, 2.0)
STEPS = (100, 234, 1000)
EPOCHS = 60
DELTAS = (1e-5, 1e-10)


def measured(query):
    """(result, CPU seconds, peak traced MB) of ``query()`` from nothing (the epoch laws' caches cleared): timed
    untraced, then run again under tracemalloc for its peak (tracing slows numpy's many small allocations)."""
    epoch_law.cache_clear()
    epoch_lower_law.cache_clear()
    start = time.process_time()
    result = query()
    seconds = time.process_time() - start
    epoch_law.cache_clear()
    epoch_lower_law.cache_clear()
    tracemalloc.start()
    query()
    peak = tracemalloc.get_traced_memory()[1] / 1e6
    tracemalloc.stop()
    return result, seconds, peak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="sigma 1.1 and t 234 only")
    args = parser.parse_args()
    sigmas, steps = ((1.1,), (234,)) if args.quick else (SIGMAS, STEPS)
    reference = {(c["sigma"], c["steps"], c["epochs"], c["delta"]): c
                 for c in json.loads(REFERENCE.read_text())["summary"]}
    print(f"{'sigma':>5} {'t':>5} {'delta':>7} {'ours low':>8} {'ours up':>8} {'poisson':>8} {'pkg best':>8} "
          f"{'pkg low':>8} {'up/low':>7} {'up/pois':>7} {'up/pkg':>6} {'cert s':>6} {'cpu s':>6} {'peak MB':>7}")
    for sigma in sigmas:
        for t in steps:
            allocation = ps.Gaussian(sigma).random_allocation(steps=t).compose(EPOCHS)
            poisson = ps.privacy_profile(ps.Gaussian(sigma).poisson_subsample(1.0 / t).compose(EPOCHS * t))
            for delta in DELTAS:
                _, cert_seconds, _ = measured(lambda: ps.privacy_profile(allocation).epsilon(delta))
                (lo, hi), seconds, peak = measured(lambda: ps.privacy_profile(allocation).epsilon_bounds(delta))
                p_eps = float(poisson.epsilon(delta))
                ref = reference.get((sigma, t, EPOCHS, delta), {})
                best, low = ref.get("best_upper_both", float("nan")), ref.get("lower_remove", float("nan"))
                print(f"{sigma:5.2f} {t:5d} {delta:7.0e} {float(lo):8.4f} {float(hi):8.4f} {p_eps:8.4f} {best:8.4f} "
                      f"{low:8.4f} {float(hi) / float(lo):7.4f} {float(hi) / p_eps:7.3f} {float(hi) / best:6.3f} {cert_seconds:6.3f} "
                      f"{seconds:6.3f} {peak:7.0f}")

if __name__ == "__main__":
    main()
