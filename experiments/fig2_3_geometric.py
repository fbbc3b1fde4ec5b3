"""KRW Fig. 2 and 3: geometric K (eta=1) around a Gaussian base (sigma=4): delta(eps) and eps vs m.

Left (Fig. 2): delta(eps) of "best of K runs" for m = E[K] in {30, 300, 3000}, KRW Thm 5.2
(privacy profile, exact Gaussian base) against the RDP bound KRW Thm 5.1 (Papernot, Steinke
2022). Right (Fig. 3): eps at delta=1e-6 against m, with the closed form KRW Cor. 5.5 and,
for reference, Report-Noisy-Max of m fixed candidates (KRW Thm 3.2, Fig. 1).
"""

from __future__ import annotations

import math
import time

import numpy as np

import privselect as ps
from privselect.accounting import rdp
from privselect.selection import rnm_profile, selection_rdp_curve

from . import _common as c

NAME = "fig2_3_geometric"
SIGMA, DELTA, ETA = 4.0, 1e-6, 1.0
FIG2_MEANS = (30, 300, 3000)


def cor55_epsilon(sigma: float, k: ps.TruncatedNegativeBinomial, delta: float) -> float:
    """KRW Cor. 5.5 (GDP base): eps = (eta+2)(1/(2 sigma^2) + sqrt(2 log(1/(gamma delta)))/sigma) + delta."""
    return (k.eta + 2) * (1 / (2 * sigma**2) + math.sqrt(2 * math.log(1 / (k.gamma * delta))) / sigma) + delta


def _profile_worse_above(eps: np.ndarray, d_prof: np.ndarray, d_rdp: np.ndarray) -> float:
    """The delta above which the profile bound is looser than RDP (the two delta(eps) curves
    cross once: the profile bound m * delta(eps - s*) saturates at 1 for eps below the shift
    s*, where RDP still gives delta < 1). 0.0 if the profile bound is never looser."""
    worse = (d_prof > d_rdp) & (d_rdp < 1)
    if not worse.any():
        return 0.0
    i = int(np.flatnonzero(worse)[-1])
    return float(d_rdp[min(i + 1, len(eps) - 1)])


def run(quick: bool = False, out_dir=None) -> dict:
    started = time.perf_counter()
    base = ps.Gaussian(SIGMA)
    orders = np.asarray(rdp.DEFAULT_ORDERS)
    eps_grid = np.linspace(0.0, 5.0, 101 if quick else 501)
    means = [2, 10, 100, 1000, 10000] if quick else np.geomspace(2, 1e5, 41).tolist()
    rows = []
    crossings = {}
    fig, axes = c.figure(1, 2)

    # Fig. 2: delta(eps) curves.
    ax = axes[0, 0]
    for i, m in enumerate(FIG2_MEANS):
        k = ps.Geometric(mean=m)
        d_prof = ps.selection_profile(base, k, accountant="exact").delta(eps_grid)
        d_rdp = rdp.delta_from_rdp(orders, selection_rdp_curve(base, k, orders), eps_grid)
        for eps, dp, dr in zip(eps_grid, d_prof, d_rdp):
            rows.append({"panel": "fig2_delta_vs_eps", "m": m, "eps": eps, "delta_thm52_profile": dp,
                         "delta_thm51_rdp": dr})
        crossings[m] = _profile_worse_above(eps_grid, d_prof, d_rdp)
        ax.plot(eps_grid, d_prof, color=c.COLORS[i], label=f"m={m}, Thm 5.2", **c.PROFILE)
        ax.plot(eps_grid, d_rdp, color=c.COLORS[i], label=f"m={m}, Thm 5.1 (RDP)", **c.RDP)
    ax.set_yscale("log")
    ax.set_ylim(1e-12, 1.5)
    ax.set_xlabel(r"$\varepsilon$")
    ax.set_ylabel(r"$\delta(\varepsilon)$")
    ax.set_title(r"KRW Fig. 2: geometric $K$, Gaussian base $\sigma=4$")
    ax.legend(ncol=2)

    # Fig. 3: eps at delta = 1e-6 vs m.
    prof, rdp_, cor, rnm = [], [], [], []
    for m in means:
        k = ps.Geometric(mean=m)
        cert = ps.certify(base, k, DELTA, accountant="exact")
        prof.append(cert.alternatives["profile"])
        rdp_.append(cert.alternatives["rdp"])
        cor.append(cor55_epsilon(SIGMA, k, DELTA))
        rnm.append(rnm_profile(base, max(1, int(round(m))), accountant="exact").epsilon(DELTA))
        rows.append({"panel": "fig3_eps_vs_m", "m": m, "delta": DELTA, "eps_thm52_profile": prof[-1],
                     "eps_thm51_rdp": rdp_[-1], "eps_cor55": cor[-1], "eps_rnm_thm32_fixed_m": rnm[-1]})
    prof, rdp_, cor, rnm = map(np.array, (prof, rdp_, cor, rnm))
    ax = axes[0, 1]
    ax.plot(means, prof, color=c.COLORS[0], label="Thm 5.2 (privacy profile)", **c.PROFILE)
    ax.plot(means, rdp_, color=c.COLORS[1], label="Thm 5.1 (RDP)", **c.RDP)
    ax.plot(means, cor, color=c.COLORS[2], label="Cor. 5.5 (closed form)", **c.CLOSED_FORM)
    ax.plot(means, rnm, color=c.COLORS[7], label="RNM, m fixed candidates (Thm 3.2)", linestyle="-.", linewidth=1.2)
    ax.set_xscale("log")
    ax.set_xlabel(r"expected number of candidates $m=E[K]$")
    ax.set_ylabel(r"$\varepsilon$ at $\delta=10^{-6}$")
    ax.set_title(r"KRW Fig. 3: $\varepsilon$ growth, geometric $K$")
    ax.legend()

    key = {"sigma": SIGMA, "delta": DELTA}
    for m in FIG2_MEANS:
        k = ps.Geometric(mean=m)
        cert = ps.certify(base, k, DELTA, accountant="exact")
        key[f"eps_thm52_m{m}"] = cert.alternatives["profile"]
        key[f"eps_rdp_m{m}"] = cert.alternatives["rdp"]
        key[f"eps_cor55_m{m}"] = cor55_epsilon(SIGMA, k, DELTA)
        key[f"profile_looser_than_rdp_above_delta_m{m}"] = crossings[m]
    key["min_rdp_minus_profile"] = float((rdp_ - prof).min())
    key["min_cor55_minus_profile"] = float((cor - prof).min())
    key["max_m"] = float(means[-1])
    return c.finish(NAME, rows, fig, quick=quick, out_dir=out_dir, key=key, started=started)
