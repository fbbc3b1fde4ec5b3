"""Ray Tune's overhead per trial: privselect's certified Tuner against plain ``ray.tune.Tuner.fit``.

The same function trainable (a few reports, no real training, so the overhead dominates) and the same number
of trials, measured in the same run on one local ray (num_cpus=2). privselect's Tuner draws K from its law; the
seed below is chosen so that K equals ``N_TRIALS``, and plain Ray Tune runs ``num_samples=N_TRIALS``.

    PYTHONPATH=. python benchmarks/ray_tune.py
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import privselect as ps

N_TRIALS = 8
K_LAW = ps.Poisson(8)
REPEATS = 2


def trainable(config):
    from ray import tune

    for step in range(3):
        tune.report({"accuracy": -(np.log10(config["lr"]) + 2.0) ** 2 + 0.01 * step})


def seed_for(n: int) -> int:
    """The first seed whose K (the engine's first child seed) is ``n``."""
    for seed in range(10_000):
        k_seed = np.random.SeedSequence(seed).spawn(3)[0]
        if int(K_LAW.sample(np.random.Generator(np.random.PCG64(k_seed)))) == n:
            return seed
    raise RuntimeError("no seed gives that K")


def main() -> None:
    import ray
    from ray import tune

    from privselect.integrations.ray_tune import Tuner

    root = str(Path(__file__).resolve().parents[1])
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False,
             runtime_env={"env_vars": {"PYTHONPATH": os.pathsep.join([root, str(Path(__file__).parent)])}})
    space = {"lr": tune.loguniform(1e-4, 1e-1)}
    seed = seed_for(N_TRIALS)

    def plain(reuse: bool) -> None:
        with tempfile.TemporaryDirectory() as storage:
            tune.Tuner(trainable, param_space=space,
                       tune_config=tune.TuneConfig(metric="accuracy", mode="max", num_samples=N_TRIALS,
                                                   reuse_actors=reuse),
                       run_config=tune.RunConfig(storage_path=storage, verbose=0)).fit()

    def certified(reuse: bool) -> None:
        Tuner(trainable, param_space=space, privacy=ps.Gaussian(5.0), k=K_LAW, delta=1e-5, seed=seed,
              tune_config=tune.TuneConfig(metric="accuracy", mode="max", reuse_actors=reuse)).fit()

    certified(False)  # warm-up: imports, the object store
    plain(False)
    print(f"{N_TRIALS} trials, median of {REPEATS} (local ray, num_cpus=2), python {sys.version.split()[0]}, "
          f"ray {ray.__version__}")
    for reuse in (False, True):
        times: dict[str, list[float]] = {"plain ray.tune.Tuner.fit": [], "privselect ray_tune.Tuner.fit": []}
        for _ in range(REPEATS):
            for name, run in (("plain ray.tune.Tuner.fit", plain), ("privselect ray_tune.Tuner.fit", certified)):
                start = time.perf_counter()
                run(reuse)
                times[name].append(time.perf_counter() - start)
        plain_s, ours_s = (float(np.median(v)) for v in times.values())
        print(f" reuse_actors={reuse}")
        for name, values in times.items():
            print(f"  {name:32s} {np.median(values):7.2f} s  ({np.median(values) / N_TRIALS:.3f} s per trial)")
        print(f"  overhead per trial: {(ours_s - plain_s) / N_TRIALS:+.3f} s; ratio {ours_s / plain_s:.2f}x",
              flush=True)
    ray.shutdown()


if __name__ == "__main__":
    main()
