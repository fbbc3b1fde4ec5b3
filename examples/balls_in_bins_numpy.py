"""DP-SGD with jax-privacy's balls-in-bins sampler, in numpy, tuned by PrivateTuner (run: python
examples/balls_in_bins_numpy.py).

The bins are drawn ONCE (each record in exactly one of STEPS bins) and every cycle takes the same batches in
the same order, as jax-privacy's ``BallsInBinsSampling``. Its privacy is one random allocation among STEPS
steps of a Gaussian with noise multiplier NOISE / sqrt(CYCLES) (docs/trainers.md, "Random allocation"),
described by ``ps.Gaussian(NOISE).fixed_bins_allocation(steps=STEPS, cycles=CYCLES)``, never as CYCLES epochs.
"""

from __future__ import annotations

import numpy as np

import privselect as ps

NOISE, STEPS, CYCLES = 1.1, 20, 5
score_noise = ps.Gaussian(2.0)  # N(0, 2^2) on the count of correct validation predictions (sensitivity 1)


def balls_in_bins(n: int, steps: int, rng: np.random.Generator) -> list[np.ndarray]:
    """The bins: each of the n records in exactly one of ``steps`` bins, uniformly and independently."""
    bins = rng.integers(0, steps, size=n)
    return [np.flatnonzero(bins == i) for i in range(steps)]


def train_logistic(params, data, rng, steps: int = STEPS, cycles: int = CYCLES, noise: float = NOISE):
    """DP-SGD on the logistic loss: per-example gradients clipped to ``clip``, summed over the batch, plus
    N(0, (noise clip)^2); the same bins in every cycle. Returns (noisy validation count, weights)."""
    x, y, x_val, y_val = data
    clip, lr = float(params["clip_norm"]), float(params["learning_rate"])
    w = np.zeros(x.shape[1])
    batches = balls_in_bins(len(x), steps, rng)  # drawn once, reused every cycle
    expected = len(x) / steps  # public: the batch size the sampler aims at
    for _ in range(cycles):
        for batch in batches:
            margin = x[batch] @ w
            grads = (1 / (1 + np.exp(-margin)) - y[batch])[:, None] * x[batch]
            norms = np.maximum(np.linalg.norm(grads, axis=1) / clip, 1.0)
            noisy = (grads / norms[:, None]).sum(axis=0) + rng.normal(0.0, noise * clip, size=w.size)
            w -= lr * noisy / expected
    correct = float(np.sum(((x_val @ w) > 0) == y_val))
    return correct + rng.normal(0.0, score_noise.noise_multiplier), w


def one_run() -> ps.Mechanism:
    """The privacy of one run: one allocation at NOISE / sqrt(CYCLES), then the noisy validation score."""
    return ps.compose(ps.Gaussian(NOISE).fixed_bins_allocation(steps=STEPS, cycles=CYCLES), score_noise)


def synthetic(n: int, d: int, seed: int):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(2 * n, d)) / np.sqrt(d)
    y = (x @ rng.normal(size=d) + 0.1 * rng.normal(size=2 * n) > 0).astype(float)
    return x[:n], y[:n], x[n:], y[n:]


def tune(data, k: ps.Geometric | None = None, seed: int | None = None):
    space = {"learning_rate": ps.LogUniform(0.05, 2.0), "clip_norm": ps.LogUniform(0.1, 5.0)}
    tuner = ps.PrivateTuner(train_logistic, space, privacy=one_run(), k=k or ps.Geometric(10), delta=1e-5,
                            seed=seed)
    return tuner.run(data)


if __name__ == "__main__":
    result = tune(synthetic(2000, 10, 0))
    print("best hyperparameters:", result.best_params)
    print("certificate:", result.certificate)
