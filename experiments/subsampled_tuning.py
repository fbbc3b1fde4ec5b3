"""Tuning inside a pipeline: full-data tuning + final run vs subsampled tuning (Koskela, Kulkarni 2023).

DP-SGD (softmax regression, [`privselect.DPSGDClassifier`][privselect.apps.dpsgd.DPSGDClassifier]) on scikit-learn's digits. The
private data X are 70% of the 1797 images (the other 30% is the public test set). The learning
rate is tuned by private selection (K ~ Geometric(mean 10), candidates uniform on a 7-point grid);
each candidate trains with DP-SGD and is scored by its count of correct validation predictions
plus Gaussian noise (noise multiplier 10, sensitivity 1); the winner's learning rate then trains
the final model on all of X, which is released with it. The pipeline runs on the library's engine:
``PrivateTuner(..., tuning_rate=r, final=FinalRun(...))``, whose certificate comes from
``certify_pipeline``.

* (i) ``full``: candidates train on 75% of X and validate on the other 25%;
* (ii) ``r = 0.1, 0.2, 0.5``: candidates train and validate (75/25) on one Poisson subsample of X
  of rate r, drawn once, independently of the data. Extrapolation rule from the subset to the full
  data: same learning rate, epochs and batch size (so the sampling rate on the subset is 1/r times
  larger, and the number of steps per epoch the same in expectation).

Every configuration uses one DP-SGD noise multiplier sigma for the candidates and the final run,
calibrated so that the whole pipeline is (eps, 1e-5)-DP at the target eps, once with the profile
route (``certify_pipeline``: KRW selection profile -> ProfileMechanism -> subsampling ->
composition with the final run) and once with the RDP route (Papernot-Steinke selection RDP,
Zhu-Wang subsampling, RDP composition; Koskela and Kulkarni's analysis). Sampling rates and step
counts come from the public n, never from the subsample's size.
"""

from __future__ import annotations

import math
import time

import numpy as np
from scipy import optimize

import privselect as ps
from privselect.selection.pipeline import certify_pipeline, pipeline_rdp_epsilon

from . import _common as c

NAME = "subsampled_tuning"
DELTA = 1e-5
BATCH = 128
EPOCHS = 10
SCORE_NOISE = 10.0
LEARNING_RATES = (0.03, 0.1, 0.3, 1.0, 3.0, 10.0, 30.0)
K_LAW = ps.Geometric(mean=10)
RATES = (1.0, 0.5, 0.2, 0.1)


def _load():
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    X, y = load_digits(return_X_y=True)
    X = X / np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1e-12)  # per-record map to the unit sphere
    return train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)


def _dpsgd(sigma: float, n_expected: float) -> tuple[ps.Mechanism, float, int]:
    """DP-SGD with batch BATCH on n_expected records for EPOCHS epochs: (mechanism, rate, steps)."""
    rate = min(1.0, BATCH / n_expected)
    steps = math.ceil(EPOCHS / rate)
    step = ps.Gaussian(sigma)
    return (step.poisson_subsample(rate) if rate < 1 else step).compose(steps), rate, steps


def _plan(sigma: float, r: float, n: int):
    """(candidate mechanism incl. its noisy score, final mechanism, candidate rate, final rate)."""
    train, cand_rate, _ = _dpsgd(sigma, 0.75 * r * n)
    final, final_rate, _ = _dpsgd(sigma, n)
    return ps.compose(train, ps.Gaussian(SCORE_NOISE)), final, cand_rate, final_rate


def _epsilon(sigma: float, r: float, n: int, route: str) -> float:
    candidate, final, _, _ = _plan(sigma, r, n)
    if route == "rdp":
        return pipeline_rdp_epsilon(candidate, K_LAW, DELTA, final=final, tuning_rate=r)
    try:
        return certify_pipeline(candidate, K_LAW, DELTA, final=final, tuning_rate=r).alternatives["profile"]
    except ValueError:  # far from private (eps in the hundreds): the accountant's grid would be too large
        return math.inf


def _calibrate(target: float, r: float, n: int, route: str) -> float:
    """The smallest sigma (to 0.5%) whose pipeline epsilon is at most ``target``."""
    lo, hi = 0.8, 60.0
    f = lambda log_sigma: min(_epsilon(math.exp(log_sigma), r, n, route), 1e6) - target  # noqa: E731
    root = optimize.brentq(f, math.log(lo), math.log(hi), xtol=0.005)
    sigma = math.exp(root) * 1.005
    assert _epsilon(sigma, r, n, route) <= target
    return sigma


def _train(X, y, lr, sigma, rate, rng):
    model = ps.DPSGDClassifier(learning_rate=lr, noise_multiplier=sigma, sampling_rate=rate, epochs=EPOCHS,
                               classes=np.arange(10), random_state=rng)  # the public label set
    return model.fit(X, y)


def _tuner(sigma: float, r: float, n: int) -> ps.PrivateTuner:
    """The pipeline on the library's engine: candidates on the subsample, the final run on all of X."""
    _, final_run, cand_rate, final_rate = _plan(sigma, r, n)

    def candidate(params, data, rng):
        X, y = data
        train = rng.random(len(y)) < 0.75  # the run's own train/validation split
        model = _train(X[train], y[train], params["learning_rate"], sigma, cand_rate, rng)
        return float(np.sum(model.predict(X[~train]) == y[~train])), None  # raw count; the tuner adds the noise

    def final(params, data, rng):
        return _train(*data, params["learning_rate"], sigma, final_rate, rng)

    train_run = _dpsgd(sigma, 0.75 * r * n)[0]  # the tuner composes the score noise into it
    return ps.PrivateTuner(candidate, {"learning_rate": ps.space.Choice(list(LEARNING_RATES))}, train_run, K_LAW,
                           DELTA, score_noise=ps.Gaussian(SCORE_NOISE), backend="sequential", tuning_rate=r,
                           final=ps.FinalRun(final, final_run))


def _pipeline_accuracy(data, tuner: ps.PrivateTuner, seed: int) -> float:
    """One run of the pipeline: the released final model's test accuracy (K = 0: a default model)."""
    X, X_test, y, y_test = data
    tuner.seed = seed
    result = tuner.run((X, y))
    model = result.final_output
    if model is None:  # K = 0, nothing selected: a data-independent guess
        return float(np.mean(y_test == 0))
    return float(np.mean(model.predict(X_test) == y_test))


def run(quick: bool = False, out_dir=None) -> dict:
    started = time.perf_counter()
    data = _load()
    n = data[0].shape[0]
    targets = (2.0,) if quick else (1.0, 2.0, 4.0)
    seeds = range(3 if quick else 8)
    rates = (1.0, 0.1) if quick else RATES
    rows = []
    for target in targets:
        for r in rates:
            for route in ("profile", "rdp"):
                sigma = _calibrate(target, r, n, route)
                tuner = _tuner(sigma, r, n)
                acc = np.array([_pipeline_accuracy(data, tuner, 1000 * i + 7) for i in seeds])
                rows.append({
                    "target_eps": target, "tuning": "full" if r == 1 else f"r={r:g}", "rate": r,
                    "calibrated_by": route, "sigma": sigma,
                    "eps_profile": _epsilon(sigma, r, n, "profile"), "eps_rdp": _epsilon(sigma, r, n, "rdp"),
                    "eps_certificate": tuner.certificate.epsilon,
                    "accuracy_mean": float(acc.mean()), "accuracy_se": float(acc.std(ddof=1) / math.sqrt(acc.size)),
                    "runs": acc.size,
                })
    fig, axes = c.figure(1, 2, width=4.6, height=3.4)
    for i, r in enumerate(rates):
        for route, style in (("profile", c.PROFILE), ("rdp", c.RDP)):
            sel = [row for row in rows if row["rate"] == r and row["calibrated_by"] == route]
            label = ("full" if r == 1 else f"r={r:g}") + f" ({route})"
            axes[0, 0].errorbar([row["target_eps"] for row in sel], [row["accuracy_mean"] for row in sel],
                                yerr=[row["accuracy_se"] for row in sel], color=c.COLORS[i], label=label, **style)
            axes[0, 1].plot([row["target_eps"] for row in sel], [row["sigma"] for row in sel], color=c.COLORS[i],
                            label=label, **style)
    axes[0, 0].set(xlabel="total eps (delta = 1e-5), tuning + final run", ylabel="test accuracy (mean, +-1 se)",
                   title="Digits, DP-SGD: accuracy at equal total eps")
    axes[0, 1].set(xlabel="total eps (delta = 1e-5)", ylabel="DP-SGD noise multiplier",
                   title="Noise needed at equal total eps")
    axes[0, 1].legend(ncol=2)
    key = {f"{row['tuning']}|{row['calibrated_by']}|eps={row['target_eps']:g}": round(row["accuracy_mean"], 4)
           for row in rows}
    return c.finish(NAME, rows, fig, quick=quick, out_dir=out_dir, key=key, started=started)


if __name__ == "__main__":
    import json
    import sys

    print(json.dumps(run(quick="--quick" in sys.argv[1:]), indent=2))
