"""Shared pieces of the experiments: output paths, CSV/PNG writing, figure style, accountant choice.

Every experiment writes ``NAME.csv`` and ``NAME.png`` to ``experiments/results/`` (full
runs) or ``experiments/results/quick/`` (``quick=True``), unless ``out_dir`` is given, so
that the quick runs of the tests never overwrite the full results.
"""

from __future__ import annotations

import csv
import math
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

import privselect as ps
from privselect.accounting import rdp
from privselect.accounting.profile import DirectionalCurve, ErrorBudget, PrivacyProfile
from privselect.accounting.rdp import RdpCurve
from privselect.selection import selection_rdp_curve

RESULTS_DIR = Path(__file__).resolve().parent / "results"

#: Line styles shared by every figure: privacy-profile (KRW) bounds solid, RDP baselines
#: dashed, closed forms dotted.
PROFILE = dict(linestyle="-", linewidth=1.8)
RDP = dict(linestyle="--", linewidth=1.6)
CLOSED_FORM = dict(linestyle=":", linewidth=1.8)
COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf", "#7f7f7f")


# ----------------------------------------------------------------------------------------
# Output
# ----------------------------------------------------------------------------------------


def output_dir(quick: bool, out_dir: str | Path | None = None) -> Path:
    """Where an experiment writes: ``out_dir`` if given, else results/ (or results/quick/)."""
    path = Path(out_dir) if out_dir is not None else (RESULTS_DIR / "quick" if quick else RESULTS_DIR)
    path.mkdir(parents=True, exist_ok=True)
    return path


def _cell(value: Any) -> Any:
    if isinstance(value, (float, np.floating)):
        v = float(value)
        return "" if math.isnan(v) else repr(v) if math.isfinite(v) else str(v)
    if isinstance(value, (np.integer,)):
        return int(value)
    return value


def write_csv(path: Path, rows: Sequence[dict[str, Any]], columns: Sequence[str] | None = None) -> Path:
    """Write ``rows`` (dicts) as CSV; columns default to the union of keys in first-seen order."""
    if columns is None:
        columns = list(dict.fromkeys(key for row in rows for key in row))
    with open(path, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(columns), extrasaction="raise")
        writer.writeheader()
        for row in rows:
            writer.writerow({key: _cell(row.get(key, "")) for key in columns})
    return path


def figure(nrows: int = 1, ncols: int = 1, *, width: float = 5.2, height: float = 3.9):
    """A new figure in the shared style (Agg backend; one panel is width x height inches)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update({"font.size": 9, "axes.titlesize": 10, "legend.fontsize": 8, "axes.grid": True,
                         "grid.alpha": 0.3, "savefig.dpi": 130})
    fig, axes = plt.subplots(nrows, ncols, figsize=(width * ncols, height * nrows), constrained_layout=True,
                             squeeze=False)
    return fig, axes


def save_figure(fig, path: Path) -> Path:
    import matplotlib.pyplot as plt

    fig.savefig(path)
    plt.close(fig)
    return path


def finish(name: str, rows: Sequence[dict[str, Any]], fig, *, quick: bool, out_dir: str | Path | None,
           key: dict[str, Any], started: float, columns: Sequence[str] | None = None) -> dict[str, Any]:
    """Write NAME.csv and NAME.png; return the key numbers with the file paths and run time."""
    directory = output_dir(quick, out_dir)
    csv_path = write_csv(directory / f"{name}.csv", rows, columns)
    png_path = save_figure(fig, directory / f"{name}.png")
    return {**key, "csv": str(csv_path), "png": str(png_path), "seconds": round(time.perf_counter() - started, 2)}


# ----------------------------------------------------------------------------------------
# Accounting helpers
# ----------------------------------------------------------------------------------------


def accountant_profile(mechanism: ps.Mechanism, smallest_delta: float) -> PrivacyProfile:
    """A certified profile good down to ``smallest_delta``: PRV (fast queries) when its
    floating-point floor is at most half of ``smallest_delta``, else CF (relative precision).

    The profile's ``method`` says which accountant was used.
    """
    try:
        prv = ps.privacy_profile(mechanism, accountant="prv", target_delta=min(1e-5, smallest_delta))
        if prv.error_budget.min_delta <= 0.5 * smallest_delta:
            return prv
    except ValueError:  # e.g. the FFT grid would be too large
        pass
    return ps.privacy_profile(mechanism, accountant="cf")


class FunctionCurve(DirectionalCurve):
    """An upper-only curve from any vectorised delta(eps) (e.g. a peer library's accountant).

    Used to feed a profile that privselect did not compute into the selection bounds; the
    result is only as trustworthy as ``delta_fn``.
    """

    direction = "both"

    def __init__(self, delta_fn: Callable[[np.ndarray], np.ndarray], label: str) -> None:
        self.delta_fn = delta_fn
        self.error_budget = ErrorBudget(details=((label, math.nan),))

    def delta_bounds(self, eps):
        e = np.asarray(eps, dtype=float)
        upper = np.clip(np.asarray(self.delta_fn(e.reshape(-1)), dtype=float).reshape(e.shape), 0.0, 1.0)
        return np.zeros_like(upper), upper


def function_profile(delta_fn: Callable[[np.ndarray], np.ndarray], label: str, mechanism=None) -> PrivacyProfile:
    return PrivacyProfile(curves=(FunctionCurve(delta_fn, label),), accountant=label, mechanism=mechanism,
                          description=f"external profile: {label}")


def tabulated_profile(eps_grid: np.ndarray, deltas: np.ndarray, label: str, mechanism=None) -> PrivacyProfile:
    """Upper bound from delta(eps) tabulated on an increasing grid: since delta(.) is
    non-increasing, delta(eps) <= delta(eps_j) for the largest grid point eps_j <= eps (1 left
    of the grid). Costs at most one grid step in eps; queries are a ``searchsorted``."""
    grid, values = np.asarray(eps_grid, dtype=float), np.minimum.accumulate(np.clip(deltas, 0.0, 1.0))

    def delta_fn(e: np.ndarray) -> np.ndarray:
        idx = np.searchsorted(grid, e, side="right") - 1
        return np.where(idx >= 0, values[np.clip(idx, 0, len(grid) - 1)], 1.0)

    return function_profile(delta_fn, label, mechanism)


def rdp_selection_profile(mechanism: ps.Mechanism, k: ps.selection.KDistribution) -> PrivacyProfile:
    """Upper-only profile of "best of K runs" from the RDP baseline (KRW Thm 5.1 / 5.6)."""
    orders = np.asarray(rdp.DEFAULT_ORDERS)
    curve = selection_rdp_curve(mechanism, k, orders)
    return PrivacyProfile(curves=(RdpCurve(orders, curve),), accountant="rdp-selection", mechanism=mechanism,
                          description=f"RDP selection bound, K ~ {k!r}")


def profile_epsilon(profile: PrivacyProfile, k, delta: float) -> float:
    """Certified eps(delta) of the selection from a built base profile (KRW Thm 5.2 / 5.7 / Cor. 5.8)."""
    return float(ps.certify(profile, k, delta, bound="profile").epsilon)


def first_crossing(x: Iterable[float], diff: Iterable[float]) -> float:
    """Smallest x where ``diff`` turns >= 0, log-linearly interpolated between grid points; nan if never."""
    xs, ds = np.asarray(list(x), dtype=float), np.asarray(list(diff), dtype=float)
    for i in range(len(xs)):
        if ds[i] >= 0:
            if i == 0:
                return float(xs[0])
            t = -ds[i - 1] / (ds[i] - ds[i - 1])
            return float(np.exp(np.log(xs[i - 1]) + t * (np.log(xs[i]) - np.log(xs[i - 1]))))
    return math.nan


def tex_number(x: float) -> str:
    """1e-05 -> 10^{-5}; other numbers as %g."""
    exponent = math.log10(x) if x > 0 else math.nan
    if math.isfinite(exponent) and abs(exponent - round(exponent)) < 1e-12:
        return f"10^{{{int(round(exponent))}}}"
    return f"{x:g}"


def plain_log_ticks(axis) -> None:
    """Plain numbers (0.2, 1, 3) instead of 2x10^-1 on a log axis."""
    from matplotlib.ticker import FuncFormatter

    fmt = FuncFormatter(lambda v, _: f"{v:g}")
    axis.set_major_formatter(fmt)
    axis.set_minor_formatter(fmt)


def mechanism_label(sigma: float, q: float, steps: int) -> str:
    return f"Poisson-subsampled Gaussian, sigma={sigma:g}, q={q:.4g}, T={steps}"


# ----------------------------------------------------------------------------------------
# DP-SGD selection comparison shared by KRW Fig. 6 and Fig. 7
# ----------------------------------------------------------------------------------------


def selection_vs_mean(base: ps.Mechanism, profile: PrivacyProfile, means: Sequence[float], delta: float) -> dict:
    """eps(delta) of "best of K runs" vs m = E[K]: geometric K by KRW Thm 5.2 vs Thm 5.1 (RDP),
    Poisson K by KRW Cor. 5.8 vs Thm 5.6 (RDP). Returns arrays keyed by bound."""
    out = {name: [] for name in ("geometric_profile", "geometric_rdp", "poisson_profile", "poisson_rdp")}
    for m in means:
        for family, k in (("geometric", ps.Geometric(mean=m)), ("poisson", ps.Poisson(m))):
            out[f"{family}_profile"].append(profile_epsilon(profile, k, delta))
            out[f"{family}_rdp"].append(float(ps.certify(base, k, delta, bound="rdp").epsilon))
    return {name: np.array(values) for name, values in out.items()}


def plot_selection_vs_mean(axes, means, curves, title: str, delta: float) -> None:
    """Two panels: geometric K (Thm 5.2 vs 5.1) and Poisson K (Cor. 5.8 vs Thm 5.6)."""
    panels = (("geometric", "Thm 5.2", "Thm 5.1", "geometric $K$"), ("poisson", "Cor. 5.8", "Thm 5.6", "Poisson $K$"))
    for ax, (family, thm_profile, thm_rdp, label) in zip(axes, panels):
        ax.plot(means, curves[f"{family}_profile"], color=COLORS[0], label=f"{thm_profile} (privacy profile)",
                **PROFILE)
        ax.plot(means, curves[f"{family}_rdp"], color=COLORS[1], label=f"{thm_rdp} (RDP)", **RDP)
        ax.set_xscale("log")
        ax.set_xlabel(r"expected number of candidates $m=E[K]$")
        ax.set_ylabel(rf"$\varepsilon$ at $\delta={tex_number(delta)}$")
        ax.set_title(f"{title}: {label}")
        ax.legend()


def candidates_factor(profile: PrivacyProfile, base: ps.Mechanism, m_rdp: float, delta: float,
                      family) -> tuple[float, float]:
    """At the eps the RDP bound certifies for E[K] = m_rdp, the largest E[K] the profile bound
    affords (``calibrate_k_mean``), and the ratio ("how many more candidates at equal eps")."""
    from privselect.selection import calibrate_k_mean

    target = float(ps.certify(base, family(m_rdp), delta, bound="rdp").epsilon)
    m_profile = calibrate_k_mean(profile, target, delta, family=family, bound="profile", rtol=1e-4)
    return target, m_profile


def run_dpsgd_comparison(name: str, *, sigma: float, rate: float, steps: int, delta: float, means, factor_means,
                         title: str, quick: bool, out_dir, started: float) -> dict:
    """KRW Fig. 6 / Fig. 7: eps vs m for geometric and Poisson K on a DP-SGD base, and the
    candidates factor profile/RDP at equal eps."""
    base = ps.Gaussian(sigma).poisson_subsample(rate).compose(steps)
    largest = max(list(means) + [10 * m for m in factor_means])
    profile = accountant_profile(base, delta / largest)
    curves = selection_vs_mean(base, profile, means, delta)
    rows = [{"panel": "eps_vs_m", "m": m, "delta": delta, "accountant": profile.accountant,
             **{f"eps_{key}": float(values[i]) for key, values in curves.items()}} for i, m in enumerate(means)]
    factors = {"geometric": [], "poisson": []}
    for m in factor_means:
        for family_name, family in (("geometric", lambda x: ps.Geometric(mean=x)), ("poisson", ps.Poisson)):
            target, m_profile = candidates_factor(profile, base, m, delta, family)
            factors[family_name].append(m_profile / m)
            rows.append({"panel": "candidates_factor", "family": family_name, "m": m, "delta": delta,
                         "accountant": profile.accountant, "target_eps_rdp": target, "m_profile": m_profile,
                         "factor": m_profile / m})

    ncols = 3 if len(factor_means) > 1 else 2
    fig, axes = figure(1, ncols, width=4.6)
    plot_selection_vs_mean(axes[0, :2], means, curves, title, delta)
    if max(curves["poisson_profile"].max(), curves["poisson_rdp"].max()) > 20:
        axes[0, 1].set_yscale("log")
    if ncols == 3:
        ax = axes[0, 2]
        ax.plot(factor_means, factors["geometric"], "o-", color=COLORS[0], label="geometric $K$ (Thm 5.2 / Thm 5.1)")
        ax.plot(factor_means, factors["poisson"], "s-", color=COLORS[3], label="Poisson $K$ (Cor. 5.8 / Thm 5.6)")
        ax.axhline(1.0, color="gray", linewidth=0.8)
        ax.set_xscale("log")
        ax.set_yscale("log")
        plain_log_ticks(ax.yaxis)
        ax.set_xlabel(r"$E[K]$ under the RDP bound")
        ax.set_ylabel(r"$E[K]$ profile / $E[K]$ RDP at equal $\varepsilon$")
        ax.set_title(f"{title}: how many more candidates")
        ax.legend()

    key: dict[str, Any] = {"mechanism": mechanism_label(sigma, rate, steps), "delta": delta,
                           "accountant": profile.accountant, "eps_base": float(profile.epsilon(delta))}
    for m in (10, 100):
        if m in list(means):
            i = list(means).index(m)
            for k_name, values in curves.items():
                key[f"eps_{k_name}_m{m}"] = float(values[i])
    key["min_geometric_rdp_minus_profile"] = float((curves["geometric_rdp"] - curves["geometric_profile"]).min())
    key["poisson_profile_loses_from_m"] = first_crossing(means, curves["poisson_profile"] - curves["poisson_rdp"])
    for family_name, values in factors.items():
        for m, f in zip(factor_means, values):
            key[f"factor_{family_name}_m{m:g}"] = float(f)
    return finish(name, rows, fig, quick=quick, out_dir=out_dir, key=key, started=started)
