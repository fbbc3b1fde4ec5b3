"""KRW Fig. 4: K ~ Bin(n, 10/n) for several n vs K ~ Poisson(10), Gaussian base (sigma=4), and the CDFs of K.

Top: delta(eps) of "best of K runs" by KRW Thm 5.7 (binomial K), Cor. 5.8 (Poisson K, the
n -> inf limit) and the RDP bound KRW Thm 5.6 (Papernot, Steinke 2022, Poisson K). Bottom:
the CDFs of K. The point of the figure: a binomial K with small n is much more concentrated
than Poisson(10) yet, by Thm 5.7, costs no more than Poisson K does under the RDP bound.
"""

from __future__ import annotations

import time

import numpy as np

import privselect as ps
from privselect.accounting import rdp
from privselect.selection import selection_rdp_curve

from . import _common as c

NAME = "fig4_binomial"
SIGMA, DELTA, MEAN = 4.0, 1e-6, 10.0
NS = (12, 15, 20, 50, 100, 1000)


def run(quick: bool = False, out_dir=None) -> dict:
    started = time.perf_counter()
    base = ps.Gaussian(SIGMA)
    orders = np.asarray(rdp.DEFAULT_ORDERS)
    ns = (15, 20, 100) if quick else NS
    eps_grid = np.linspace(0.0, 4.0, 81 if quick else 401)
    ks = np.arange(0, 26)
    rows = []
    fig, axes = c.figure(2, 1, width=6.2, height=3.6)
    top, bottom = axes[0, 0], axes[1, 0]

    dists = [(f"Bin({n}, {MEAN:g}/{n})", ps.Binomial.from_mean(MEAN, n), n) for n in ns]
    poisson = ps.Poisson(MEAN)
    eps_at = {}
    for i, (label, k, n) in enumerate(dists + [(f"Poisson({MEAN:g})", poisson, "inf")]):
        theorem = "Cor. 5.8" if k is poisson else "Thm 5.7"
        prof = ps.selection_profile(base, k, accountant="exact")
        d = prof.delta(eps_grid)
        eps_at[label] = float(prof.epsilon(DELTA))
        top.plot(eps_grid, d, color=c.COLORS[i], label=f"{label}, {theorem}", **c.PROFILE)
        cdf = np.cumsum(k.pmf(ks))
        bottom.step(ks, cdf, where="post", color=c.COLORS[i], label=label, linewidth=1.5)
        for e, v in zip(eps_grid, d):
            rows.append({"panel": "delta_vs_eps", "distribution": label, "n": n, "bound": theorem, "x": e, "y": v})
        for kk, v in zip(ks, cdf):
            rows.append({"panel": "cdf", "distribution": label, "n": n, "bound": "", "x": int(kk), "y": v})
    d_rdp = rdp.delta_from_rdp(orders, selection_rdp_curve(base, poisson, orders), eps_grid)
    eps_rdp = float(rdp.epsilon_from_rdp(orders, selection_rdp_curve(base, poisson, orders), DELTA))
    top.plot(eps_grid, d_rdp, color="black", label=f"Poisson({MEAN:g}), Thm 5.6 (RDP)", **c.RDP)
    for e, v in zip(eps_grid, d_rdp):
        rows.append({"panel": "delta_vs_eps", "distribution": f"Poisson({MEAN:g})", "n": "inf",
                     "bound": "Thm 5.6 (RDP)", "x": e, "y": v})
    for label, value in list(eps_at.items()) + [(f"Poisson({MEAN:g}) RDP", eps_rdp)]:
        rows.append({"panel": "eps_at_delta", "distribution": label, "bound": "", "x": DELTA, "y": value})
    top.axhline(DELTA, color="gray", linewidth=0.8)
    top.set_yscale("log")
    top.set_ylim(1e-10, 1.5)
    top.set_xlabel(r"$\varepsilon$")
    top.set_ylabel(r"$\delta(\varepsilon)$")
    top.set_title(rf"KRW Fig. 4 (top): $E[K]={MEAN:g}$, Gaussian base $\sigma={SIGMA:g}$")
    top.legend(ncol=2, loc="upper right")
    bottom.set_xlabel("k")
    bottom.set_ylabel(r"$P[K \leq k]$")
    bottom.set_title("KRW Fig. 4 (bottom): CDFs of K")
    bottom.legend(ncol=2)

    # The most concentrated binomial (smallest n) whose Thm 5.7 bound is still below the RDP Poisson bound.
    free = [(n, k) for label, k, n in dists if eps_at[label] <= eps_rdp]
    key = {"sigma": SIGMA, "delta": DELTA, "mean": MEAN, "eps_poisson_cor58": eps_at[f"Poisson({MEAN:g})"],
           "eps_poisson_rdp_thm56": eps_rdp,
           **{f"eps_bin_n{n}": eps_at[label] for label, _, n in dists}}
    if free:
        n_free, k_free = min(free, key=lambda t: t[0])
        key.update({"smallest_n_at_most_rdp_poisson": n_free,
                    "P[K<=5]_bin_smallest_n": float(k_free.pmf(np.arange(0, 6)).sum()),
                    "P[K<=5]_poisson": float(poisson.pmf(np.arange(0, 6)).sum()),
                    "P[K>=15]_bin_smallest_n": float(1 - k_free.pmf(np.arange(0, 15)).sum()),
                    "P[K>=15]_poisson": float(1 - poisson.pmf(np.arange(0, 15)).sum())})
    return c.finish(NAME, rows, fig, quick=quick, out_dir=out_dir, key=key, started=started)
