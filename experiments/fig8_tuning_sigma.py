"""KRW Fig. 8: tuning sigma in {2, 3, 4} (q=0.01) with T per candidate from the KRW Cor. 6.2 thresholds.

For each m = E[K] (geometric K), the Cor. 6.2 thresholds (eps1, delta1) and (eps_hat, delta/m)
come from a Gaussian reference profile that is (eps_Q=1.5, delta=1e-6)-DP; every candidate
sigma then runs for the largest T whose certified profile (CF accountant; PRV in quick mode)
meets both; the per-candidate bound uses the same profile. The
figure compares the Cor. 6.2 guarantee, valid for any mixture of such candidates, with the
bound KRW Thm 5.2 gives each candidate on its own.
"""

from __future__ import annotations

import time

import numpy as np

import privselect as ps
from privselect.selection import cor62_thresholds, meets_thresholds

from . import _common as c

NAME = "fig8_tuning_sigma"
RATE, EPS_Q, DELTA = 0.01, 1.5, 1e-6
SIGMAS = (2.0, 3.0, 4.0)
MEANS = (2, 5, 10, 20, 50, 100, 200, 500, 1000)


def candidate(sigma: float, steps: int) -> ps.Mechanism:
    return ps.Gaussian(sigma).poisson_subsample(RATE).compose(steps)


def _profile(mech: ps.Mechanism, accountant: str, smallest_delta: float):
    if accountant == "prv":
        return ps.privacy_profile(mech, accountant="prv", target_delta=smallest_delta)
    return ps.privacy_profile(mech, accountant=accountant)


def largest_steps(sigma: float, thresholds, rel_tol: float, accountant: str) -> int:
    """Largest T with the candidate below both thresholds (meeting them is monotone in T);
    bracket by doubling from 1000, then integer bisection to a relative width ``rel_tol``."""
    def meets(t: int) -> bool:
        return meets_thresholds(_profile(candidate(sigma, t), accountant, thresholds.delta_hat), thresholds)

    lo, hi = 1000, 2000
    if not meets(lo):
        lo, hi = 1, 1000
        if not meets(lo):
            raise ValueError(f"sigma={sigma}: even one step misses the Cor. 6.2 thresholds")
    else:
        while meets(hi):
            lo, hi = hi, 2 * hi
    while hi - lo > max(1, rel_tol * lo):
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if meets(mid) else (lo, mid)
    return lo


def run(quick: bool = False, out_dir=None) -> dict:
    started = time.perf_counter()
    means = (10,) if quick else MEANS
    rel_tol = 0.1 if quick else 2e-3
    # The same accountant checks the thresholds and gives the per-candidate bound (CF: relative
    # precision at delta/m; PRV in quick mode because its delta queries are much faster).
    accountant = "prv" if quick else "cf"
    rows = []
    cor62, per_candidate, steps = [], {s: [] for s in SIGMAS}, {s: [] for s in SIGMAS}
    for m in means:
        k = ps.Geometric(mean=m)
        th = cor62_thresholds(EPS_Q, DELTA, k)
        cor62.append(th.epsilon)
        for s in SIGMAS:
            t = largest_steps(s, th, rel_tol, accountant)
            profile = _profile(candidate(s, t), accountant, th.delta_hat)
            eps = c.profile_epsilon(profile, k, DELTA)
            steps[s].append(t)
            per_candidate[s].append(eps)
            rows.append({"m": m, "sigma": s, "steps": t, "eps_cor62": th.epsilon, "eps_thm52_candidate": eps,
                         "accountant": profile.accountant, "eps1": th.eps1, "delta1": th.delta1, "eps_hat": th.eps_hat,
                         "delta_hat": th.delta_hat, "reference_mu": th.reference_mu})

    fig, axes = c.figure(1, 3, width=4.6)
    ax = axes[0, 0]
    ax.plot(means, cor62, color="black", label="Cor. 6.2 (any candidate meeting the thresholds)", **c.PROFILE)
    for i, s in enumerate(SIGMAS):
        ax.plot(means, per_candidate[s], "o", color=c.COLORS[i], linestyle="--", linewidth=1.2,
                label=rf"Thm 5.2 for $\sigma={s:g}$ alone")
    ax.set_xscale("log")
    ax.set_xlabel(r"expected number of candidates $m=E[K]$ (geometric)")
    ax.set_ylabel(rf"$\varepsilon$ at $\delta={c.tex_number(DELTA)}$")
    ax.set_title(rf"KRW Fig. 8: tuning $\sigma$, $q={RATE:g}$, $\varepsilon_Q={EPS_Q:g}$")
    ax.legend()
    ax = axes[0, 1]
    for i, s in enumerate(SIGMAS):
        ax.plot(means, steps[s], "o-", color=c.COLORS[i], label=rf"$\sigma={s:g}$")
    ax.set_ylim(0, 1.15 * max(max(v) for v in steps.values()))
    ax.set_xscale("log")
    ax.set_xlabel(r"$m=E[K]$")
    ax.set_ylabel("largest T meeting the Cor. 6.2 thresholds")
    ax.set_title("Training length allowed per candidate")
    ax.legend(loc="center right", bbox_to_anchor=(1.0, 0.68))
    ax = axes[0, 2]
    for i, s in enumerate(SIGMAS):
        ax.plot(means, np.array(cor62) - np.array(per_candidate[s]), "o-", color=c.COLORS[i], label=rf"$\sigma={s:g}$")
    ax.axhline(0.0, color="gray", linewidth=0.8)
    ax.set_xscale("log")
    ax.set_xlabel(r"$m=E[K]$")
    ax.set_ylabel(r"$\varepsilon$ (Cor. 6.2) $-$ $\varepsilon$ (Thm 5.2, candidate alone)")
    ax.set_title("The price of one guarantee for all candidates")
    ax.legend()

    i10 = list(means).index(10)
    gaps = [cor62[j] - max(per_candidate[s][j] for s in SIGMAS) for j in range(len(means))]
    key = {"rate": RATE, "eps_q": EPS_Q, "delta": DELTA,
           **{f"steps_sigma{s:g}_m10": steps[s][i10] for s in SIGMAS},
           "eps_cor62_m10": cor62[i10],
           **{f"eps_thm52_sigma{s:g}_m10": per_candidate[s][i10] for s in SIGMAS},
           "min_gap_cor62_minus_best_candidate": float(min(gaps)),
           "max_gap_cor62_minus_best_candidate": float(max(gaps))}
    return c.finish(NAME, rows, fig, quick=quick, out_dir=out_dir, key=key, started=started)
