"""Trade-off (f-DP) curves of the whole tuning procedure vs one run, on the KRW Fig. 6 DP-SGD base.

A membership test against "best of K runs" has type II error beta(alpha) at least the
trade-off curve of the procedure's privacy profile (Dong, Roth, Su 2022 Prop. 2.12; the
profile of the selection from KRW Thm 5.2 / Cor. 5.8, or converted from the RDP bound KRW
Thm 5.1). Compared: one run, best of K (geometric, E[K] = 10 and 100; Poisson, E[K] = 10),
and releasing all of 10 runs (10-fold composition). Larger beta = more private.
"""

from __future__ import annotations

import math
import time

import numpy as np

import privselect as ps

from . import _common as c

NAME = "tradeoff"
SIGMA, RATE = 1.1, 256 / 60000
STEPS = math.ceil(60 / RATE)
ALPHAS_REPORTED = (1e-3, 1e-2, 1e-1)


def run(quick: bool = False, out_dir=None) -> dict:
    started = time.perf_counter()
    base = ps.Gaussian(SIGMA).poisson_subsample(RATE).compose(STEPS)
    profile = ps.privacy_profile(base, accountant="prv")
    alphas = np.unique(np.concatenate([[0.0], np.logspace(-6, 0, 61 if quick else 301),
                                       np.linspace(0, 1, 51 if quick else 201)]))
    eps_grid = np.linspace(0.0, 30.0, 601 if quick else 3001)
    geo10, geo100, poisson10 = ps.Geometric(mean=10), ps.Geometric(mean=100), ps.Poisson(10)
    curves = [
        ("one run", profile, c.COLORS[7], "-"),
        ("best of K, geometric E[K]=10 (Thm 5.2)", ps.selection_profile(profile, geo10), c.COLORS[0], "-"),
        ("best of K, geometric E[K]=10 (Thm 5.1, RDP)", c.rdp_selection_profile(base, geo10), c.COLORS[0], "--"),
        ("best of K, Poisson E[K]=10 (Cor. 5.8)", ps.selection_profile(profile, poisson10), c.COLORS[3], "-"),
        ("best of K, geometric E[K]=100 (Thm 5.2)", ps.selection_profile(profile, geo100), c.COLORS[2], "-"),
    ]
    if not quick:
        curves.append(("all of 10 runs released (10-fold composition)",
                       ps.privacy_profile(base.compose(10), accountant="prv"), c.COLORS[1], ":"))
    rows, betas = [], {}
    for label, prof, *_ in curves:
        beta = np.asarray(prof.tradeoff(alphas, eps_grid=eps_grid))
        betas[label] = beta
        rows += [{"curve": label, "alpha": a, "beta": b} for a, b in zip(alphas, beta)]

    fig, axes = c.figure(1, 2, width=5.2, height=4.4)
    for label, _, color, style in curves:
        axes[0, 0].plot(alphas, betas[label], color=color, linestyle=style, linewidth=1.6, label=label)
        axes[0, 1].plot(alphas[alphas > 0], 1 - betas[label][alphas > 0], color=color, linestyle=style, linewidth=1.6)
    axes[0, 0].plot([0, 1], [1, 0], color="black", linewidth=0.6, label="perfect privacy: beta = 1 - alpha")
    axes[0, 0].set_xlabel(r"type I error $\alpha$")
    axes[0, 0].set_ylabel(r"type II error $\beta(\alpha)$ (lower bound)")
    axes[0, 0].set_title(f"Trade-off curves, {c.mechanism_label(SIGMA, RATE, STEPS)}", fontsize=8.5)
    axes[0, 0].legend(fontsize=7)
    axes[0, 1].plot([1e-6, 1], [1e-6, 1], color="black", linewidth=0.6)
    axes[0, 1].set_xscale("log")
    axes[0, 1].set_yscale("log")
    axes[0, 1].set_ylim(1e-6, 1.05)
    axes[0, 1].set_xlabel(r"type I error $\alpha$")
    axes[0, 1].set_ylabel(r"largest power $1-\beta(\alpha)$ of any membership test")
    axes[0, 1].set_title("Same curves, log scale (small alpha)")

    key = {"mechanism": c.mechanism_label(SIGMA, RATE, STEPS)}
    short = {curves[0][0]: "one_run", curves[1][0]: "geo10_profile", curves[2][0]: "geo10_rdp",
             curves[3][0]: "poisson10_profile", curves[4][0]: "geo100_profile"}
    if not quick:
        short[curves[5][0]] = "compose10"
    for label, tag in short.items():
        for a in ALPHAS_REPORTED:
            key[f"beta_{tag}_alpha{a:g}"] = float(np.interp(a, alphas, betas[label]))
        key[f"max_power_gap_{tag}"] = float(np.max(1 - alphas - betas[label]))  # = delta(0), a TV bound
    diff = betas[curves[1][0]] - betas[curves[2][0]]
    key["rdp_tradeoff_above_profile_max"] = float(max(0.0, -diff.min()))
    key["rdp_tradeoff_above_profile_alpha_range"] = (
        [float(alphas[diff < -1e-6].min()), float(alphas[diff < -1e-6].max())] if (diff < -1e-6).any() else [])
    if not quick:
        # Where releasing all of 10 fixed runs has a larger beta (is certified more private) than the
        # selection bound for E[K] = 10: the profile bound is loose at small eps / large delta.
        worse = betas[curves[5][0]] - betas[curves[1][0]] > 1e-6
        key["compose10_beta_above_geo10_profile_from_alpha"] = float(alphas[worse].min()) if worse.any() else math.nan
    return c.finish(NAME, rows, fig, quick=quick, out_dir=out_dir, key=key, started=started)
