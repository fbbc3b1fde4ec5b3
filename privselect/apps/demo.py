"""The embedded default job of ``privselect demo``: tune DP-SGD privately on the digits data.

Data: scikit-learn's digits (1797 images, 64 pixels in [0, 16], 10 classes). Pixels are
scaled with their public range (x / 16 - 1/2), which uses no statistic of the data. The
split (train / validation / test) is a fixed random permutation.

One run: DP-SGD softmax regression (noise multiplier 2, Poisson rate 0.05, up to 20 epochs)
plus a Laplace-noised count of correct validation predictions. The search space covers the
learning rate, the clipping norm and the number of epochs; the privacy of one run is taken at
the largest epochs (fewer steps are dominated by more). K ~ Geometric(mean=10), delta = 1e-5.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..accounting import privacy_profile
from ..mechanisms import Gaussian, Laplace, compose
from ..selection import Geometric
from ..tuning import PrivateTuner
from ..tuning.space import Choice, LogUniform
from .dpsgd import DPSGDClassifier, dpsgd_steps, make_dpsgd_trainer

NOISE_MULTIPLIER = 2.0
SAMPLING_RATE = 0.05
EPOCHS = (5, 10, 20)
SCORE_NOISE = Laplace(2.0)  # on a count of correct predictions: sensitivity 1
MEAN_K = 10
DELTA = 1e-5
CLASSES = tuple(range(10))  # the digits; public, never read from the labels


def load_digits_split(seed: int = 0):
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    X = X / 16.0 - 0.5
    order = np.random.default_rng(seed).permutation(len(y))
    train, val, test = order[:1200], order[1200:1500], order[1500:]
    return (X[train], y[train], X[val], y[val]), (X[test], y[test])


def run_demo(seed: int | None = None, n_jobs: int = 1) -> dict[str, Any]:
    """Tune DP-SGD privately on digits. ``seed`` is a secret key (None: fresh entropy)."""
    data, (X_test, y_test) = load_digits_split()
    one_run = Gaussian(NOISE_MULTIPLIER).poisson_subsample(SAMPLING_RATE).compose(dpsgd_steps(max(EPOCHS), SAMPLING_RATE))
    space = {"learning_rate": LogUniform(0.05, 5.0), "clip_norm": LogUniform(0.1, 10.0), "epochs": Choice(EPOCHS)}
    k = Geometric(mean=MEAN_K)
    tuner = PrivateTuner(make_dpsgd_trainer(NOISE_MULTIPLIER, SAMPLING_RATE, classes=CLASSES), space, one_run, k, DELTA,
                         score_noise=SCORE_NOISE, seed=seed, n_jobs=n_jobs)
    result = tuner.run(data)
    model: DPSGDClassifier = result.best_output
    test_accuracy = float(model.score(X_test, y_test)) if model is not None else math.nan
    certificate = result.certificate
    run_with_score = compose(one_run, SCORE_NOISE)
    single = float(privacy_profile(run_with_score).epsilon(DELTA))
    naive = float(privacy_profile(run_with_score.compose(MEAN_K)).epsilon(DELTA))
    comparison = [
        ("one run only (what is often reported; NOT a valid bound)", single),
        ("privselect certificate (privacy profile, KRW Thm 5.2)", certificate.alternatives["profile"]),
        ("RDP (Papernot-Steinke)", certificate.alternatives.get("rdp", math.nan)),
        (f"naive composition of {MEAN_K} runs, all released", naive),
    ]
    return {
        "best_params": result.best_params,
        "best_score": result.best_score,
        "n_val": len(data[3]),
        "test_accuracy": test_accuracy,
        "mean_k": k.mean,
        "delta": DELTA,
        "comparison": comparison,
        "certificate": certificate.to_dict(),
    }
