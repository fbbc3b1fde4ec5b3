"""Private linear regression (KRW Sec. 6.1, Fig. 5): which private regressor to use, test MSE vs eps, two protocols.

Data: the nine UCI regression sets of Wang (2018)'s size table, from ``experiments/data/uci``
(``--data-dir`` elsewhere); scikit-learn's diabetes with ``--datasets diabetes``. Two preprocessing protocols:

* ``public`` (every private quantity private; read with [`privselect.apps.ptr.load_table`][privselect.apps.ptr.load_table]):
  each feature is mapped affinely from its public
  range [lo, hi] to [-1, 1], a constant 1 is appended (the intercept), and every row is divided by
  sqrt(d + 1), so ||x|| <= 1 = B_x; the target is mapped from its public range to [-1, 1]. The
  "public range" is the column's min/max over the whole file rounded outward to two significant
  digits: a stand-in for a data dictionary;
* ``wang`` (Wang 2018's ``exp_uci.m``, for comparison with the literature): y centred and
  divided by max|y|, features z-scored (constant columns -> 0), rows scaled to unit norm. These
  statistics are computed on the whole file, i.e. NOT privately (design notes Sec. 9.6).

Every estimator is (eps, delta)-DP end to end given its preprocessed input, tuning included,
and every hyperparameter is a function of public quantities: the public bound on the number of
records is the size of the distributed file (UCI's "number of instances"), never the private
training-set size. 10-fold CV x ``seeds`` seeds; median test MSE on the label scale of the protocol.

``python -m experiments.linear_regression [--quick] [--suite ssp|all] [--seeds S] [--datasets a,b] [--data-dir DIR] [--out-dir DIR] [--methods A,B]``.
Suite ``ssp`` (default) writes ``linear_regression_ssp*``; ``all`` writes ``linear_regression*``.
"""

from __future__ import annotations

import argparse
import json
import math
import time
import warnings
import zlib
from pathlib import Path

import numpy as np
from joblib import Parallel, delayed
from sklearn.model_selection import KFold
from threadpoolctl import threadpool_limits

from privselect.apps.ptr import (
    AdaOPSRegressor,
    AdaSSPRegressor,
    AdaSSPWangRegressor,
    NonPrivateRidge,
    OPSPTRRegressor,
    OPSRegressor,
    OutputPerturbationRegressor,
    PrivateRegressorSelection,
    SSPRidgeSelectionRegressor,
    TrivialRegressor,
    TukeyEMRegressor,
    TunedOPSPTRRegressor,
    liu_talwar_certificate,
    liu_talwar_run_budget,
    load_table,
    load_uci,
    output_perturbation_alpha,
    profile_run_budget,
)
from privselect.apps.ptr.data import UCI_DATASETS, load_diabetes_raw
from privselect.selection import Geometric

from . import _common as c

NAME = "linear_regression"
#: The 9 UCI sets of Wang (2018)'s size table vendored in experiments/data/uci (diabetes: --datasets diabetes).
DATASETS = ("airfoil", "autompg", "bike", "concrete", "elevators", "energy", "housing", "wine", "yacht")
QUICK_DATASETS = ("yacht",)
#: "ssp": the fast suite (SSP family, Wang's printed AdaSSP, output perturbation, OPS-DI, trivial) for
#: many seeds; "all": every method, including the tuned OPS-PTR variants and the selection among
#: regressors (seconds per fit on elevators: run with one seed).
SUITES = ("ssp", "all")
PROTOCOLS = ("public", "wang")
EPSILONS = (0.1, 1.0, 10.0)
DELTA = 1e-6
MEAN_K = 10.0
THETA_BOUND = 2.0  # output perturbation's public ball (the ridge solutions here have norm ~1.5-4)
SSP_PRIVATE = ("SSP ridge selection", "AdaSSP (2 releases)", "AdaSSP (3 releases)", "AdaSSP (Wang, printed)",
               "output perturbation", "OPS (data-independent)", "trivial (0)", "TukeyEM (no bounds)")
OPS_PRIVATE = ("OPS-PTR (default)", "OPS-PTR tuned (default K)", "OPS-PTR tuned (Thm 5.2)", "OPS-PTR tuned (Liu-Talwar)",
               "private selection", "AdaOPS")
PRIVATE = SSP_PRIVATE + OPS_PRIVATE
REFERENCES = ("oracle ridge (test set)", "non-private OLS")
METHODS = PRIVATE + REFERENCES
SHORT = {"OPS-PTR (default)": "PTR", "OPS-PTR tuned (default K)": "PTR-T", "OPS-PTR tuned (Thm 5.2)": "PTR-5.2", "OPS-PTR tuned (Liu-Talwar)": "PTR-LT",
         "private selection": "Select", "output perturbation": "OutPert", "AdaOPS": "AdaOPS",
         "SSP ridge selection": "SSP-sel", "AdaSSP (2 releases)": "AdaSSP-2", "AdaSSP (3 releases)": "AdaSSP-3",
         "AdaSSP (Wang, printed)": "Wang", "oracle ridge (test set)": "oracle",
         "OPS (data-independent)": "OPS-DI", "non-private OLS": "OLS", "trivial (0)": "0",
         "TukeyEM (no bounds)": "Tukey"}
STYLE = {
    "OPS-PTR (default)": dict(color=c.COLORS[6], marker="*", linestyle="-", linewidth=1.2),
    "OPS-PTR tuned (default K)": dict(color="tab:olive", marker="h", linestyle="-", linewidth=1.4),
    "OPS-PTR tuned (Thm 5.2)": dict(color=c.COLORS[0], marker="o", **c.PROFILE),
    "OPS-PTR tuned (Liu-Talwar)": dict(color=c.COLORS[1], marker="s", **c.RDP),
    "private selection": dict(color="tab:brown", marker="P", linestyle="-", linewidth=1.6),
    "output perturbation": dict(color=c.COLORS[2], marker="^", linestyle="-", linewidth=1.2),
    "AdaOPS": dict(color=c.COLORS[3], marker="v", linestyle="-", linewidth=1.2),
    "SSP ridge selection": dict(color="tab:red", marker="o", linestyle="-", linewidth=1.8),
    "AdaSSP (2 releases)": dict(color=c.COLORS[4], marker="D", linestyle="-", linewidth=1.2),
    "AdaSSP (3 releases)": dict(color=c.COLORS[4], marker="d", linestyle="--", linewidth=1.0),
    "AdaSSP (Wang, printed)": dict(color="tab:gray", marker="s", linestyle="-.", linewidth=1.0),
    "oracle ridge (test set)": dict(color="black", linestyle="--", linewidth=1.0),
    "OPS (data-independent)": dict(color=c.COLORS[5], marker="x", linestyle="-", linewidth=1.2),
    "non-private OLS": dict(color="black", linestyle=":", linewidth=1.4),
    "trivial (0)": dict(color=c.COLORS[7], linestyle="--", linewidth=1.0),
    "TukeyEM (no bounds)": dict(color="tab:purple", marker="X", linestyle=":", linewidth=1.2),
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
    """Protocol "public" on arrays (diabetes): the maps of `privselect.apps.ptr.load_table` with the stand-in ranges."""
    lo, hi = public_range(X)
    span = np.where(hi > lo, hi - lo, 1.0)
    Z = (2 * X - (lo + hi)) / span
    Z = np.hstack([Z, np.ones((len(Z), 1))]) / math.sqrt(X.shape[1] + 1)
    ylo, yhi = public_range(y)
    return Z, (2 * y - (ylo + yhi)) / (yhi - ylo)


def load_public(name: str, data_dir: Path) -> tuple[np.ndarray, np.ndarray]:
    """Protocol "public" for a UCI set: `privselect.apps.ptr.load_table` on its files with the stand-in public ranges.

    The ranges (column min/max of the file rounded outward, `public_range`) stand in for a data
    dictionary; load_table itself never reads a bound from the data. A column constant in the file
    gets the range [v - 1, v + 1].
    """
    spec = UCI_DATASETS[name]
    raw = load_uci(name, data_dir)  # the column ranges of the stand-in data dictionary
    files = [data_dir / f for f in spec.files]
    width = raw.X.shape[1] + 1 + len(spec.drop)
    target = spec.target - 1 if spec.target > 0 else width + spec.target
    drop = {c - 1 if c > 0 else width + c for c in spec.drop}
    features = [c for c in range(width) if c != target and c not in drop]
    lo, hi = public_range(raw.X)
    ylo, yhi = public_range(raw.y)
    bounds = {c: ((a, b) if b > a else (a - 1, a + 1)) for c, a, b in zip(features, lo, hi)}
    bounds[target] = (ylo, yhi)
    table = load_table(files, target=target, header=False, sep=spec.separator, features=features,
                       target_transform=spec.transform, bounds=bounds)
    return table.X, table.y


def wang_protocol(X: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Protocol "wang" (Wang 2018, ``exp_uci.m``): y centred, / max|y|; X z-scored (constant columns -> 0), rows / ||x||.

    Uses means, standard deviations and max|y| of the whole file: NOT private; for comparison only.
    """
    y = y - y.mean()
    y = y / np.abs(y).max()
    std = X.std(axis=0)
    Z = (X - X.mean(axis=0)) / np.where(std > 0, std, 1.0)
    norms = np.linalg.norm(Z, axis=1, keepdims=True)
    return Z / np.where(norms > 0, norms, 1.0), y


PREPROCESS = {"public": preprocess, "wang": wang_protocol}


def load(name: str, data_dir: Path | None = None, protocol: str = "public") -> tuple[np.ndarray, np.ndarray]:
    """Data set ``name`` preprocessed by ``protocol`` (see the module docstring)."""
    data_dir = data_dir if data_dir is not None else default_data_dir()
    if name == "diabetes":
        X, y = load_diabetes_raw()
    elif protocol == "public":
        return load_public(name, Path(data_dir))
    else:
        data = load_uci(name, data_dir)
        X, y = data.X, data.y
    return PREPROCESS[protocol](X, y)


#: Both protocols map rows into the unit ball and labels into [-1, 1] with public constants (`Table.bounds`).
BOUNDS = {"x_bound": 1.0, "y_bound": 1.0}


def estimators(eps: float, n_public: int, d: int, suite: str = "all") -> dict:
    """Every private method of ``suite`` at (eps, DELTA); hyperparameters use public quantities only (``n_public``:
    a public upper bound on the number of records, the size of the distributed file)."""
    ssp = {
        "SSP ridge selection": SSPRidgeSelectionRegressor(**BOUNDS, epsilon=eps, delta=DELTA, n_max=n_public),
        "AdaSSP (2 releases)": AdaSSPRegressor(**BOUNDS, epsilon=eps, delta=DELTA, release_lambda_min=False),
        "AdaSSP (3 releases)": AdaSSPRegressor(**BOUNDS, epsilon=eps, delta=DELTA, release_lambda_min=True),
        "AdaSSP (Wang, printed)": AdaSSPWangRegressor(**BOUNDS, epsilon=eps, delta=DELTA),
        "output perturbation": OutputPerturbationRegressor(
            **BOUNDS,
            epsilon=eps, delta=DELTA, theta_bound=THETA_BOUND,
            alpha=output_perturbation_alpha(n_public, d, eps, DELTA, theta_bound=THETA_BOUND)),
        "OPS (data-independent)": OPSRegressor(**BOUNDS, epsilon=eps, delta=DELTA, n_max=n_public),
        "trivial (0)": TrivialRegressor(**BOUNDS),
        # no feature or label bounds; m from the public size of a training part of 10-fold CV
        "TukeyEM (no bounds)": TukeyEMRegressor(epsilon=eps, delta=DELTA, n_min=9 * n_public // 10),
    }
    if suite == "ssp":
        return ssp
    return ssp | {
        "OPS-PTR (default)": OPSPTRRegressor(**BOUNDS, epsilon=eps, delta=DELTA, n_max=n_public),
        "OPS-PTR tuned (default K)": TunedOPSPTRRegressor(**BOUNDS, epsilon=eps, delta=DELTA, n_max=n_public),
        "OPS-PTR tuned (Thm 5.2)": TunedOPSPTRRegressor(**BOUNDS, epsilon=eps, delta=DELTA, k=Geometric(mean=MEAN_K),
                                                        accounting="profile", n_max=n_public),
        "OPS-PTR tuned (Liu-Talwar)": TunedOPSPTRRegressor(**BOUNDS, epsilon=eps, delta=DELTA, k=Geometric(mean=MEAN_K),
                                                           accounting="liu-talwar", n_max=n_public),
        "private selection": PrivateRegressorSelection(**BOUNDS, epsilon=eps, delta=DELTA, n_max=n_public),
        "AdaOPS": AdaOPSRegressor(**BOUNDS, epsilon=eps, delta=DELTA),
    }


def oracle_ridge_mse(eps: float, random_state: int, Xtr, ytr, Xte, yte) -> float:
    """Not private: two-release AdaSSP with the ridge multiplier (or the trivial predictor) best on the test set.

    One release of the statistics (the same noise as ``AdaSSPRegressor(**BOUNDS, release_lambda_min=False,
    random_state=random_state)``, whose ridge scale does not enter the noise), then every ridge.
    """
    from privselect.apps.ptr.ops import clip_records
    from privselect.apps.ptr.ssp import DEFAULT_RIDGE_MULTIPLIERS, ssp_ridge

    est = AdaSSPRegressor(**BOUNDS, epsilon=eps, delta=DELTA, release_lambda_min=False)
    Xc, yc = clip_records(Xtr, ytr, est.x_bound, est.y_bound)
    d = Xc.shape[1]
    _, gram, xty = est.release_statistics(Xc, yc, np.random.default_rng(random_state))
    ridge = ssp_ridge(d, est.noise_scales(d)[1], est.rho)
    Xt, _ = clip_records(Xte, None, est.x_bound, est.y_bound)
    thetas = np.column_stack([np.linalg.solve(gram + m * ridge * np.eye(d), xty) for m in DEFAULT_RIDGE_MULTIPLIERS])
    mses = np.mean((np.clip(Xt @ thetas, -est.y_bound, est.y_bound) - yte[:, None]) ** 2, axis=0)
    return float(min(mses.min(), np.mean(yte ** 2)))


def budgets(epsilons) -> list[dict]:
    """Per-run budgets of the tuned OPS-PTR under both certificates (data-independent)."""
    rows = []
    k = Geometric(mean=MEAN_K)
    for eps in epsilons:
        prof = profile_run_budget(float(eps), DELTA, MEAN_K, 0.1)
        eps_lt, delta_lt, delta2 = liu_talwar_run_budget(float(eps), DELTA, k)
        lt = liu_talwar_certificate(eps_lt, delta_lt, k, delta2)
        select = PrivateRegressorSelection(**BOUNDS, epsilon=float(eps), delta=DELTA).run_budget()
        tuned = TunedOPSPTRRegressor(**BOUNDS, epsilon=float(eps), delta=DELTA).run_budget()
        rows.append({"epsilon": eps, "delta": DELTA, "mean_k": MEAN_K,
                     "profile_eps_q": prof.epsilon, "profile_delta_q": prof.delta,
                     "profile_certificate_eps": prof.certificate_epsilon,
                     "lt_eps_q": eps_lt, "lt_delta_q": delta_lt, "lt_certificate_eps": lt.epsilon,
                     "lt_certificate_delta": lt.delta, "lt_horizon": lt.horizon,
                     "selection_eps_q": select.epsilon, "selection_delta_q": select.delta,
                     "selection_certificate_eps": select.certificate_epsilon,
                     "tuned_default_k_eps_q": tuned.epsilon, "tuned_default_k_delta_q": tuned.delta,
                     "tuned_default_k_certificate_eps": tuned.certificate_epsilon})
    return rows


def _run_data_set(protocol: str, name: str, data_dir: Path, epsilons, folds: int, seeds: int, suite: str,
                  methods=None):
    """All fits of one (protocol, data set): summary rows and raw per-fit rows (only ``methods`` if given)."""
    raw, rows = [], []
    with threadpool_limits(1), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # refusals are counted in refused_rate instead
        X, y = load(name, data_dir, protocol)
        n, d = X.shape
        results: dict[tuple[str, float], list[float]] = {}
        refused: dict[tuple[str, float], list[float]] = {}
        for seed in range(seeds):
            for fold, (tr, te) in enumerate(KFold(folds, shuffle=True, random_state=1000 + seed).split(X)):
                Xtr, ytr, Xte, yte = X[tr], y[tr], X[te], y[te]
                for eps in epsilons:
                    # the SSP family shares one noise seed per fit (common random numbers: the
                    # selection differs from two-release AdaSSP only by its budget split and choice)
                    ssp_seed = zlib.crc32(f"{protocol}|{name}|{seed}|{fold}|{eps}|ssp".encode())
                    fits = {}
                    if methods is None or "non-private OLS" in methods:
                        fits["non-private OLS"] = float(np.mean((NonPrivateRidge(**BOUNDS).fit(Xtr, ytr).predict(Xte) - yte) ** 2))
                    if methods is None or "oracle ridge (test set)" in methods:
                        fits["oracle ridge (test set)"] = oracle_ridge_mse(eps, ssp_seed, Xtr, ytr, Xte, yte)
                    for label, est in estimators(eps, n, d, suite).items():
                        if methods is not None and label not in methods:
                            continue
                        est_seed = ssp_seed if label in ("SSP ridge selection", "AdaSSP (2 releases)") else \
                            zlib.crc32(f"{protocol}|{name}|{seed}|{fold}|{eps}|{label}".encode())
                        if "random_state" in est.get_params():
                            est.set_params(random_state=est_seed)
                        est.fit(Xtr, ytr)
                        fits[label] = float(np.mean((est.predict(Xte) - yte) ** 2))
                        if hasattr(est, "refused_"):
                            refused.setdefault((label, eps), []).append(float(est.refused_))
                    for label, mse in fits.items():
                        results.setdefault((label, eps), []).append(mse)
                        raw.append({"protocol": protocol, "dataset": name, "method": label, "epsilon": eps,
                                    "seed": seed, "fold": fold, "mse": f"{mse:.6g}"})
    for (label, eps), values in results.items():
        v = np.asarray(values)
        rows.append({"protocol": protocol, "dataset": name, "n": n, "d": d, "method": label, "epsilon": eps,
                     "delta": DELTA, "median_mse": float(np.median(v)), "q25_mse": float(np.quantile(v, 0.25)),
                     "q75_mse": float(np.quantile(v, 0.75)), "mean_mse": float(v.mean()), "fits": len(v),
                     "refused_rate": float(np.mean(refused[(label, eps)])) if (label, eps) in refused else ""})
    return rows, raw


def _read_rows(path: Path, drop) -> list[dict]:
    """Rows of a CSV this module wrote, numbers parsed, without the methods in ``drop``."""
    import csv

    def parse(key, value):
        if key in ("protocol", "dataset", "method") or value == "":
            return value
        return int(value) if key in ("n", "d", "fits", "seed", "fold") else float(value)

    with open(path, newline="") as fh:
        return [{k: parse(k, v) for k, v in row.items()} for row in csv.DictReader(fh) if row["method"] not in drop]


def run(quick: bool = False, out_dir=None, data_dir=None, seeds: int | None = None, datasets=None,
        n_jobs: int = 1, suite: str = "ssp", methods=None) -> dict:
    """Run ``suite``; with ``methods``, fit only those and merge them into the suite's existing CSVs
    (the other methods' rows are kept as they were: same folds, seeds and noise seeds)."""
    if suite not in SUITES:
        raise ValueError(f"suite must be one of {SUITES}, got {suite!r}")
    started = time.perf_counter()
    data_dir = Path(data_dir) if data_dir is not None else default_data_dir()
    names = tuple(datasets) if datasets else (QUICK_DATASETS if quick else DATASETS)
    if any(name != "diabetes" for name in names) and not data_dir.is_dir():
        raise FileNotFoundError(f"UCI data folder not found: {data_dir} (pass --data-dir)")
    epsilons = (1.0,) if quick else EPSILONS
    folds = 2 if quick else 10
    seeds = 1 if seeds is None else int(seeds)
    tasks = [(p, name) for name in names for p in PROTOCOLS]
    tasks.sort(key=lambda t: t[1] != "elevators")  # the largest first, for load balance
    outputs = Parallel(n_jobs=n_jobs)(delayed(_run_data_set)(p, name, data_dir, epsilons, folds, seeds, suite, methods)
                                      for p, name in tasks)
    rows = [r for p in PROTOCOLS for name in names for (rs, _), t in zip(outputs, tasks) if t == (p, name) for r in rs]
    raw = [r for _, rr in outputs for r in rr]
    directory = c.output_dir(quick, out_dir)
    out_name = NAME if suite == "all" else f"{NAME}_{suite}"
    if methods is not None:  # merge into the existing results of the suite
        kept = _read_rows(directory / f"{out_name}.csv", set(methods))
        rows = [r for p in PROTOCOLS for name in names
                for r in [q for q in kept if (q["protocol"], q["dataset"]) == (p, name)]
                + [q for q in rows if (q["protocol"], q["dataset"]) == (p, name)]]
        raw = _read_rows(directory / f"{out_name}_runs.csv", set(methods)) + raw
    fig = _plot(rows, names, epsilons)
    c.write_csv(directory / f"{out_name}_runs.csv", raw)
    key = {"suite": suite, "datasets": list(names), "epsilons": list(epsilons), "folds": folds, "seeds": seeds,
           "protocols": list(PROTOCOLS)}
    if suite == "all":
        key["budgets"] = budgets(epsilons)
        c.write_csv(directory / f"{NAME}_budgets.csv", key["budgets"])
    wins = _wins(rows, names, epsilons)
    key |= {"wins": wins, "win_counts": win_counts(wins, rows), "default_vs": default_ratios(rows)}
    (directory / f"{out_name}_table.md").write_text(markdown_tables(rows, names, epsilons, wins))
    return c.finish(out_name, rows, fig, quick=quick, out_dir=out_dir, key=key, started=started)


def default_ratios(rows) -> dict:
    """Median MSE of the recommended default (SSP ridge selection) over two-release AdaSSP and Wang's printed AdaSSP, per cell."""
    out = {}
    for r in rows:
        if r["method"] != "SSP ridge selection":
            continue
        cell = {q["method"]: q["median_mse"] for q in rows if (q["protocol"], q["dataset"], q["epsilon"])
                == (r["protocol"], r["dataset"], r["epsilon"])}
        out[f"{r['protocol']}:{r['dataset']}@{r['epsilon']:g}"] = {
            "vs_two_release": r["median_mse"] / cell["AdaSSP (2 releases)"],
            "vs_wang_printed": r["median_mse"] / cell["AdaSSP (Wang, printed)"]}
    return out


def _wins(rows, names, epsilons) -> dict:
    """For each (protocol, dataset, eps): the private method(s) with the lowest median MSE (ties joined by " = ")."""
    out = {}
    for protocol in PROTOCOLS:
        for name in names:
            for eps in epsilons:
                cell = [r for r in rows if r["protocol"] == protocol and r["dataset"] == name
                        and r["epsilon"] == eps and r["method"] in PRIVATE]
                if cell:
                    best = min(r["median_mse"] for r in cell)
                    out[f"{protocol}:{name}@{eps:g}"] = " = ".join(r["method"] for r in cell if r["median_mse"] == best)
    return out


def _present(rows, methods) -> list[str]:
    have = {r["method"] for r in rows}
    return [m for m in methods if m in have]


def win_counts(wins: dict, rows) -> dict:
    """Cells won per private method (present in ``rows``) and protocol; a tie counts for every tied method."""
    counts = {p: {m: 0 for m in _present(rows, PRIVATE)} for p in PROTOCOLS}
    for cell, methods in wins.items():
        for method in methods.split(" = "):
            counts[cell.split(":")[0]][method] += 1
    return counts


def markdown_tables(rows, names, epsilons, wins) -> str:
    """The README tables: median test MSE per (protocol, data set, eps); bold = best private method(s)."""
    out = []
    methods = _present(rows, METHODS)
    ptr = _present(rows, OPS_PRIVATE[:4] + ("TukeyEM (no bounds)",))  # methods that can refuse
    for protocol in PROTOCOLS:
        out.append(f"#### Protocol `{protocol}`\n")
        for name in names:
            cell = [r for r in rows if r["protocol"] == protocol and r["dataset"] == name]
            if not cell:
                continue
            out.append(f"{name} (n={cell[0]['n']}, d={cell[0]['d']})\n")
            out.append("| eps | " + " | ".join(SHORT[m] for m in methods) + (" | ⊥ " + "/".join(SHORT[m] for m in ptr) + " |" if ptr else " |"))
            out.append("|---" * (len(methods) + 1 + bool(ptr)) + "|")
            for eps in epsilons:
                by = {r["method"]: r for r in cell if r["epsilon"] == eps}
                best = wins[f"{protocol}:{name}@{eps:g}"]
                vals = [f"**{by[m]['median_mse']:.4f}**" if m in best.split(" = ") else f"{by[m]['median_mse']:.4f}"
                        for m in methods]
                ref = " | " + "/".join(f"{by[m]['refused_rate']:.2f}" for m in ptr) if ptr else ""
                out.append(f"| {eps:g} | " + " | ".join(vals) + f"{ref} |")
            out.append("")
        counts = win_counts(wins, rows)[protocol]
        out.append("Cells won: " + ", ".join(f"{SHORT[m]} {k}" for m, k in counts.items()) + "\n")
    return "\n".join(out)


def _plot(rows, names, epsilons):
    """One panel per (protocol, data set): median test MSE vs eps with inter-quartile bands."""
    from matplotlib.ticker import NullLocator

    ncols = len(names)
    fig, axes = c.figure(len(PROTOCOLS), ncols, width=3.2, height=2.8)
    for row, protocol in enumerate(PROTOCOLS):
        for col, name in enumerate(names):
            ax = axes[row, col]
            panel = [r for r in rows if r["protocol"] == protocol and r["dataset"] == name]
            for method in METHODS:
                cell = sorted((r for r in panel if r["method"] == method), key=lambda r: r["epsilon"])
                if not cell:
                    continue
                eps = [r["epsilon"] for r in cell]
                ax.plot(eps, [r["median_mse"] for r in cell], label=method, markersize=3.5, **STYLE[method])
                if method in PRIVATE:
                    ax.fill_between(eps, [r["q25_mse"] for r in cell], [r["q75_mse"] for r in cell],
                                    color=STYLE[method]["color"], alpha=0.08, linewidth=0)
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xticks(list(epsilons), [f"{e:g}" for e in epsilons])
            ax.xaxis.set_minor_locator(NullLocator())
            ax.set_title(f"{name} ({protocol})", fontsize=9)
            ax.set_xlabel("epsilon (delta = 1e-6)")
            if col == 0:
                ax.set_ylabel("test MSE")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncols=5, fontsize=8)
    return fig


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m experiments.linear_regression", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="yacht only, 2 folds, eps = 1")
    parser.add_argument("--suite", choices=SUITES, default="ssp",
                        help="ssp: the fast methods (many seeds); all: every method (slow: one seed)")
    parser.add_argument("--n-jobs", type=int, default=1, help="processes, one (protocol, data set) each")
    parser.add_argument("--seeds", type=int, default=None, help="CV repetitions (default 1: 10 fits per cell)")
    parser.add_argument("--datasets", default=None, help="comma-separated subset of the data sets")
    parser.add_argument("--data-dir", default=None, help="folder with the UCI files (default: experiments/data/uci)")
    parser.add_argument("--out-dir", default=None, help="write here instead of experiments/results/")
    parser.add_argument("--methods", default=None,
                        help="comma-separated method labels: fit only these and merge into the suite's existing CSVs")
    args = parser.parse_args(argv)
    out = run(quick=args.quick, out_dir=args.out_dir, data_dir=args.data_dir, seeds=args.seeds,
              datasets=None if args.datasets is None else args.datasets.split(","), n_jobs=args.n_jobs,
              suite=args.suite, methods=None if args.methods is None else args.methods.split(","))
    print(json.dumps(out, indent=1, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
