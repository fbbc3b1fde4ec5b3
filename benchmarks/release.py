"""The release boundary's cost per run: release by value, the global-state reseed, process isolation.

    python -m benchmarks.release             # from the repository root
    python -m benchmarks.release --opacus    # also examples/opacus_digits.py's trainer, isolated or not

Prints, in one run (best of several repetitions; the machine's load average first):

* release by value of a 10-million-parameter torch ``state_dict`` (``release_payload``: the
  conversion to fresh plain tensors, the randomness guard and the pickling), against what a
  trainer did before (``{name: tensor.detach().clone()}``, then ``pickle.dumps``), as a ratio;
* the global-state reseed of one run (every loaded framework's state set from the run's seed:
  numpy's legacy state, ``random``, torch's CPU generator), and the save/restore around a
  selection, against drawing one ``numpy.random.default_rng`` from a ``SeedSequence``;
* process isolation: the tuner's time per run for a trivial trainer with ``isolate=True`` and
  without (sequential backend), and their difference (the fork, the result as data through a memory file,
  the end of every process of the run, the value parsed and validated again in the caller);
* with ``--opacus``: the same for the Opacus trainer of ``examples/opacus_digits.py`` (5 epochs).
"""

from __future__ import annotations

import os
import sys
import time

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import pickle  # noqa: E402

import numpy as np  # noqa: E402

import privselect as ps  # noqa: E402
from privselect.tuning import PrivateTuner  # noqa: E402
from privselect.tuning.globalstate import saved_globals, seed_globals  # noqa: E402
from privselect.tuning.run import release_payload  # noqa: E402
from privselect.tuning.space import Uniform  # noqa: E402

PARAMETERS = 10_000_000
RUNS = 40


def best_of(function, repeat: int = 5) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return min(times)


def state_dict_of(torch, parameters: int) -> dict:
    """A 10M-parameter MLP's state_dict (float32), as a trainer holds it after training."""
    width = 2000
    layers = parameters // (width * width + width)
    net = torch.nn.Sequential(*(torch.nn.Linear(width, width) for _ in range(layers)))
    rest = parameters - layers * (width * width + width)
    state = dict(net.state_dict())
    state["rest"] = torch.zeros(rest)
    assert sum(v.numel() for v in state.values()) == parameters
    return state


def release_by_value() -> None:
    import torch

    state = state_dict_of(torch, PARAMETERS)
    ours = best_of(lambda: release_payload([None, state, None], "refuse"))
    clone = best_of(lambda: pickle.dumps({k: v.detach().clone() for k, v in state.items()},
                                         protocol=pickle.HIGHEST_PROTOCOL))
    print(f"release by value, 10M-parameter state_dict: {ours * 1e3:.1f} ms per run; detach().clone() + pickle "
          f"(what a trainer did before) {clone * 1e3:.1f} ms; ratio {ours / clone:.2f}")


def global_reseed() -> None:
    import torch  # noqa: F401 - loaded: its global generator is reseeded too

    seed = np.random.SeedSequence(1).spawn(1)[0]
    reseed = best_of(lambda: [seed_globals(seed) for _ in range(100)]) / 100

    def save_restore():
        for _ in range(100):
            with saved_globals():
                pass

    saved = best_of(save_restore) / 100
    rng = best_of(lambda: [np.random.default_rng(seed) for _ in range(100)]) / 100
    print(f"global-state reseed (numpy legacy, random, torch CPU): {reseed * 1e6:.0f} us per run; save/restore "
          f"around a selection {saved * 1e6:.0f} us; numpy.random.default_rng(seed) {rng * 1e6:.0f} us; ratio "
          f"{reseed / rng:.1f}")


def _trivial(params, data, rng):
    return params["x"]


def per_run(train, data, isolate: bool, runs: int, space=None) -> float:
    tuner = PrivateTuner(train, space or {"x": Uniform(0, 1)}, ps.Gaussian(2.0), ps.Binomial(runs, 1 - 1e-12), 1e-5,
                         seed=0, backend="sequential", isolate=isolate, accountant="prv")
    tuner.certificate  # noqa: B018 - not timed
    start = time.perf_counter()
    tuner.run(data)
    return (time.perf_counter() - start) / runs


def isolation() -> None:
    plain = min(per_run(_trivial, None, False, RUNS) for _ in range(3))
    isolated = min(per_run(_trivial, None, True, RUNS) for _ in range(3))
    print(f"process isolation, trivial trainer: {isolated * 1e3:.2f} ms per run isolated, {plain * 1e3:.2f} ms not; "
          f"cost {(isolated - plain) * 1e3:.2f} ms per run")


def opacus_isolation() -> None:
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "examples"))
    import opacus_digits as example

    from privselect.tuning.space import Choice, LogUniform

    data, _ = example.load_data()
    space = {"lr": LogUniform(0.05, 1.0), "max_grad_norm": LogUniform(0.3, 3.0), "epochs": Choice([5])}
    plain = per_run(example.train_opacus, data, False, 4, space)
    isolated = per_run(example.train_opacus, data, True, 4, space)
    print(f"process isolation, examples/opacus_digits.py trainer (5 epochs): {isolated:.2f} s per run isolated, "
          f"{plain:.2f} s not; cost {isolated - plain:.3f} s per run ({100 * (isolated - plain) / plain:.1f}%)")


if __name__ == "__main__":
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    release_by_value()
    global_reseed()
    isolation()
    if "--opacus" in sys.argv:
        opacus_isolation()
