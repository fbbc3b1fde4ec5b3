"""What not memory-mapping the data costs on loky (docs/cluster.md, "What stays behind after a hard kill").

    python -m benchmarks.loky_data            # from the repository root

privselect's loky backend pickles the data with every run (``max_nbytes=None``), so no file of
the raw data exists that a SIGKILL could leave behind; joblib's default (``max_nbytes="1M"``)
memory-maps it once per selection into ``/dev/shm``. Prints, in one run, the warm wall time of
one selection (K = 9 trivial runs, loky(2)) with each setting, for 6.4 MB and 64 MB of data, and
the ratio. The trivial trainer makes the transfer the whole cost: with real training runs the
difference is the same number of seconds per run.
"""

from __future__ import annotations

import numpy as np

import privselect as ps
from privselect.tuning.backends import JoblibBackend, register_backend
from privselect.tuning.space import Uniform
from tests.support.timing import best_of

SIZES_MB = (6.4, 64.0)
K_RUNS = 9  # K drawn by Geometric(mean=40) with seed 3


def _trainer(params, data, rng):
    return float(params["x"] + 0.0 * data[0])


def selection_seconds(max_nbytes, data) -> float:
    register_backend(JoblibBackend("loky", max_nbytes=max_nbytes))
    try:
        tuner = ps.PrivateTuner(_trainer, {"x": Uniform(0, 1)}, ps.Gaussian(5.0), ps.Geometric(mean=40), 1e-5,
                                n_jobs=2, backend="loky", seed=3, reveal_k=True, accountant="prv")
        assert tuner.run(data).n_runs == K_RUNS  # also warms the pool
        return best_of(lambda: tuner.run(data), 3)[1]
    finally:
        register_backend(JoblibBackend("loky"))


def main() -> None:
    for size in SIZES_MB:
        data = np.random.default_rng(0).random(int(size * 1e6 / 8))
        pickled, mapped = selection_seconds(None, data), selection_seconds("1M", data)
        print(f"{size:5.1f} MB, K = {K_RUNS}, loky(2): pickled with each run {pickled:.3f} s, memory-mapped "
              f"{mapped:.3f} s, ratio {pickled / mapped:.2f} (+{(pickled - mapped) / K_RUNS * 1e3:.0f} ms per run)")


if __name__ == "__main__":
    main()
