"""Private linear regression (KRW Sec. 6.1, Fig. 5): tuned OPS-PTR under two certificates vs baselines, test MSE vs eps.

Data: scikit-learn's diabetes and UCI regression sets read with :func:`privselect.ptr.load_uci`
from ``experiments/data/uci`` (``--data-dir`` elsewhere). Protocol (design notes Sec. 7.4):

* preprocessing by per-record maps with public constants only: each feature is mapped affinely
  from its public range [lo, hi] to [-1, 1], a constant 1 is appended (the intercept), and every
  row is divided by sqrt(d + 1), so ||x|| <= 1 = B_x; the target (after the log transform of
  the UCI README) is mapped from its public range to [-1, 1], so |y| <= 1 = B_y. The "public
  range" of a column is its min and max over the whole file rounded outward to two significant
  digits: a stand-in for the data dictionary a real deployment would take them from (no z-scoring,
  no centring, no max|y| from the training data; see experiments/README.md);
* 10-fold cross-validation x 5 seeds (full run), one private fit per (fold, seed); test MSE on
  the [-1, 1] label scale; median and inter-quartile range over the 50 fits;
* eps in {0.1, 0.3, 1, 3, 10}, delta = 1e-6, add/remove neighbours, every method (eps, delta)-DP;
* methods: OPS-PTR tuned with K ~ Geometric(mean 10) and certified by KRW Thm 5.2 ("profile"),
  the same tuning certified by Liu & Talwar's bound, output perturbation (Gaussian), AdaOPS and
  AdaSSP (corrected calibrations), OPS with a data-independent calibration (Wang's OPS-Balanced
  ridge rule with exact gamma; KRW's non-adaptive baseline), non-private least squares and the
  trivial predictor 0.

``python -m experiments.linear_regression [--quick] [--data-dir DIR] [--out-dir DIR]``.
"""

from __future__ import annotations

import argparse
import json
import math
import time
import zlib
from pathlib import Path

import numpy as np
from sklearn.model_selection import KFold

from privselect.ptr import (
    AdaOPSRegressor,
    AdaSSPRegressor,
    NonPrivateRidge,
    OPSRegressor,
    OutputPerturbationRegressor,
    TunedOPSPTRRegressor,
    liu_talwar_certificate,
    liu_talwar_run_budget,
    load_uci,
    output_perturbation_alpha,
    profile_run_budget,
)
from privselect.ptr.data import load_diabetes_raw
from privselect.selection import Geometric

from . import _common as c

NAME = "linear_regression"
DATASETS = ("diabetes", "airfoil", "bike", "concrete", "elevators", "skillcraft", "wine")
QUICK_DATASETS = ("diabetes", "airfoil")
EPSILONS = (0.1, 0.3, 1.0, 3.0, 10.0)
DELTA = 1e-6
MEAN_K = 10.0
THETA_BOUND = 2.0  # output perturbation's public ball (the ridge solutions here have norm ~1.5-4)
METHODS = ("OPS-PTR tuned (Thm 5.2)", "OPS-PTR tuned (Liu-Talwar)", "output perturbation", "AdaOPS", "AdaSSP",
           "OPS (data-independent)", "non-private OLS", "trivial (0)")
STYLE = {
    "OPS-PTR tuned (Thm 5.2)": dict(color=c.COLORS[0], marker="o", **c.PROFILE),
    "OPS-PTR tuned (Liu-Talwar)": dict(color=c.COLORS[1], marker="s", **c.RDP),
    "output perturbation": dict(color=c.COLORS[2], marker="^", linestyle="-", linewidth=1.2),
    "AdaOPS": dict(color=c.COLORS[3], marker="v", linestyle="-", linewidth=1.2),
    "AdaSSP": dict(color=c.COLORS[4], marker="D", linestyle="-", linewidth=1.2),
    "OPS (data-independent)": dict(color=c.COLORS[5], marker="x", linestyle="-", linewidth=1.2),
    "non-private OLS": dict(color="black", linestyle=":", linewidth=1.4),
    "trivial (0)": dict(color=c.COLORS[7], linestyle="--", linewidth=1.0),
}


def default_data_dir() -> Path:
    """The UCI files vendored in the repository (sources and licences in its README)."""
    return Path(__file__).resolve().parent / "data" / "uci"


def public_range(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Column min/max rounded outward to two significant digits of the span (the stand-in public range)."""
    lo, hi = np.min(values, axis=0), np.max(values, axis=0)
    step = 10.0 ** (np.floor(np.log10(np.maximum(hi - lo, 1e-300))) - 1)
    return np.floor(lo / step) * step, np.ceil(hi / step) * step


def preprocess(X: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-record maps with public constants: features to [-1, 1] + intercept, rows / sqrt(d+1); y to [-1, 1]."""
    lo, hi = public_range(X)
    span = np.where(hi > lo, hi - lo, 1.0)
    Z = (2 * X - (lo + hi)) / span
    Z = np.hstack([Z, np.ones((len(Z), 1))]) / math.sqrt(X.shape[1] + 1)
    ylo, yhi = public_range(y)
    return Z, (2 * y - (ylo + yhi)) / (yhi - ylo)


def load(name: str, data_dir: Path) -> tuple[np.ndarray, np.ndarray]:
    if name == "diabetes":
        X, y = load_diabetes_raw()
    else:
        data = load_uci(name, data_dir)
        X, y = data.X, data.y
    return preprocess(X, y)


def estimators(eps: float, n_public: int, d: int, n_max: int) -> dict:
    """Every method at (eps, DELTA); all hyperparameters are functions of public quantities only."""
    return {
        "OPS-PTR tuned (Thm 5.2)": TunedOPSPTRRegressor(epsilon=eps, delta=DELTA, mean_k=MEAN_K, accounting="profile"),
        "OPS-PTR tuned (Liu-Talwar)": TunedOPSPTRRegressor(epsilon=eps, delta=DELTA, mean_k=MEAN_K,
                                                           accounting="liu-talwar"),
        "output perturbation": OutputPerturbationRegressor(
            epsilon=eps, delta=DELTA, theta_bound=THETA_BOUND,
            alpha=output_perturbation_alpha(n_public, d, eps, DELTA, theta_bound=THETA_BOUND)),
        "AdaOPS": AdaOPSRegressor(epsilon=eps, delta=DELTA),
        "AdaSSP": AdaSSPRegressor(epsilon=eps, delta=DELTA),
        "OPS (data-independent)": OPSRegressor(epsilon=eps, delta=DELTA, n_max=n_max),
    }


def budgets(epsilons) -> list[dict]:
    """Per-run budgets of the tuned OPS-PTR under both certificates (data-independent)."""
    rows = []
    k = Geometric(mean=MEAN_K)
    for eps in epsilons:
        prof = profile_run_budget(float(eps), DELTA, MEAN_K, 0.1)
        eps_lt, delta_lt, delta2 = liu_talwar_run_budget(float(eps), DELTA, k)
        lt = liu_talwar_certificate(eps_lt, delta_lt, k, delta2)
        rows.append({"epsilon": eps, "delta": DELTA, "mean_k": MEAN_K,
                     "profile_eps_q": prof.epsilon, "profile_delta_q": prof.delta,
                     "profile_certificate_eps": prof.certificate_epsilon,
                     "lt_eps_q": eps_lt, "lt_delta_q": delta_lt, "lt_certificate_eps": lt.epsilon,
                     "lt_certificate_delta": lt.delta, "lt_horizon": lt.horizon})
    return rows


def run(quick: bool = False, out_dir=None, data_dir=None) -> dict:
    started = time.perf_counter()
    data_dir = Path(data_dir) if data_dir is not None else default_data_dir()
    names = QUICK_DATASETS if quick else DATASETS
    epsilons = (0.3, 3.0) if quick else EPSILONS
    folds, seeds = (3, 1) if quick else (10, 5)
    raw, rows = [], []
    for name in names:
        if name != "diabetes" and not data_dir.is_dir():
            raise FileNotFoundError(f"UCI data folder not found: {data_dir} (pass --data-dir)")
        X, y = load(name, data_dir)
        n, d = X.shape
        results: dict[tuple[str, float], list[float]] = {}
        extra: dict[tuple[str, float], list[float]] = {}
        for seed in range(seeds):
            for fold, (tr, te) in enumerate(KFold(folds, shuffle=True, random_state=1000 + seed).split(X)):
                Xtr, ytr, Xte, yte = X[tr], y[tr], X[te], y[te]
                ols = float(np.mean((NonPrivateRidge().fit(Xtr, ytr).predict(Xte) - yte) ** 2))
                trivial = float(np.mean(yte ** 2))
                for eps in epsilons:
                    fits = {"non-private OLS": ols, "trivial (0)": trivial}
                    for label, est in estimators(eps, len(tr), d, n).items():
                        est.set_params(random_state=zlib.crc32(f"{name}|{seed}|{fold}|{eps}|{label}".encode()))
                        est.fit(Xtr, ytr)
                        fits[label] = float(np.mean((est.predict(Xte) - yte) ** 2))
                        if label.startswith("OPS-PTR"):
                            extra.setdefault((label, eps), []).append(float(est.refused_))
                    for label, mse in fits.items():
                        results.setdefault((label, eps), []).append(mse)
                        raw.append({"dataset": name, "method": label, "epsilon": eps, "seed": seed, "fold": fold,
                                    "mse": f"{mse:.6g}"})
        for (label, eps), values in results.items():
            v = np.asarray(values)
            rows.append({"dataset": name, "n": n, "d": d, "method": label, "epsilon": eps, "delta": DELTA,
                         "median_mse": float(np.median(v)), "q25_mse": float(np.quantile(v, 0.25)),
                         "q75_mse": float(np.quantile(v, 0.75)), "mean_mse": float(v.mean()), "fits": len(v),
                         "refused_rate": float(np.mean(extra[(label, eps)])) if (label, eps) in extra else ""})
    fig = _plot(rows, names, epsilons)
    directory = c.output_dir(quick, out_dir)
    c.write_csv(directory / f"{NAME}_runs.csv", raw)
    budget_rows = budgets(epsilons)
    c.write_csv(directory / f"{NAME}_budgets.csv", budget_rows)
    key = {"datasets": list(names), "epsilons": list(epsilons), "folds": folds, "seeds": seeds,
           "wins": _wins(rows, names, epsilons), "budgets": budget_rows}
    return c.finish(NAME, rows, fig, quick=quick, out_dir=out_dir, key=key, started=started)


def _wins(rows, names, epsilons) -> dict:
    """For each (dataset, eps): the private method with the lowest median MSE."""
    private = [m for m in METHODS if m not in ("non-private OLS", "trivial (0)")]
    out = {}
    for name in names:
        for eps in epsilons:
            cell = [r for r in rows if r["dataset"] == name and r["epsilon"] == eps and r["method"] in private]
            best = min(cell, key=lambda r: r["median_mse"])
            out[f"{name}@{eps:g}"] = best["method"]
    return out


def _plot(rows, names, epsilons):
    from matplotlib.ticker import NullLocator

    ncols = 4 if len(names) > 3 else len(names)
    nrows = math.ceil(len(names) / ncols)
    fig, axes = c.figure(nrows, ncols, width=3.6, height=3.0)
    for i, name in enumerate(names):
        ax = axes[i // ncols, i % ncols]
        for method in METHODS:
            cell = sorted((r for r in rows if r["dataset"] == name and r["method"] == method),
                          key=lambda r: r["epsilon"])
            if not cell:
                continue
            eps = [r["epsilon"] for r in cell]
            med = [r["median_mse"] for r in cell]
            ax.plot(eps, med, label=method, markersize=3.5, **STYLE[method])
            if method not in ("non-private OLS", "trivial (0)"):
                ax.fill_between(eps, [r["q25_mse"] for r in cell], [r["q75_mse"] for r in cell],
                                color=STYLE[method]["color"], alpha=0.10, linewidth=0)
        n, d = next((r["n"], r["d"]) for r in rows if r["dataset"] == name)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xticks(list(epsilons), [f"{e:g}" for e in epsilons])
        ax.xaxis.set_minor_locator(NullLocator())
        ax.set_title(f"{name} (n={n}, d={d})")
        ax.set_xlabel("epsilon (delta = 1e-6)")
        ax.set_ylabel("test MSE (labels in [-1, 1])")
    for j in range(len(names), nrows * ncols):
        axes[j // ncols, j % ncols].axis("off")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    if len(names) < nrows * ncols:
        axes[-1, -1].legend(handles, labels, loc="center", fontsize=8)
    else:
        fig.legend(handles, labels, loc="outside lower center", ncols=4, fontsize=8)
    return fig


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m experiments.linear_regression", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2 data sets, 3 folds, 1 seed, eps in {0.3, 3}")
    parser.add_argument("--data-dir", default=None, help="folder with the UCI files (default: experiments/data/uci)")
    parser.add_argument("--out-dir", default=None, help="write here instead of experiments/results/")
    args = parser.parse_args(argv)
    out = run(quick=args.quick, out_dir=args.out_dir, data_dir=args.data_dir)
    print(json.dumps(out, indent=1, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
