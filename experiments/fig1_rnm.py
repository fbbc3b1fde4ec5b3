"""KRW Fig. 1: Report-Noisy-Max of m 1-d Gaussian queries (sigma=4, delta=1e-6), eps vs m.

Bounds: KRW Thm 3.2 (m * delta(eps) of the Gaussian mechanism at sensitivity 2, exact
profile), the RDP baseline KRW Thm 3.1 (Zhu, Wang 2022) and the closed form KRW Cor. 3.4.
"""

from __future__ import annotations

import time

import numpy as np

import privselect as ps
from privselect.selection import rnm_epsilon_closed_form, rnm_profile, rnm_rdp_epsilon

from . import _common as c

NAME = "fig1_rnm"
SIGMA, DELTA = 4.0, 1e-6


def run(quick: bool = False, out_dir=None) -> dict:
    started = time.perf_counter()
    ms = [1, 10, 100, 1000] if quick else np.unique(np.round(np.geomspace(1, 1e5, 51)).astype(int)).tolist()
    noise = ps.Gaussian(SIGMA)
    rows = []
    for m in ms:
        rows.append({
            "m": m,
            "eps_thm32_profile": rnm_profile(noise, m, accountant="exact").epsilon(DELTA),
            "eps_thm31_rdp": rnm_rdp_epsilon(noise, m, DELTA),
            "eps_cor34": rnm_epsilon_closed_form(SIGMA, m, DELTA),
        })
    prof = np.array([r["eps_thm32_profile"] for r in rows])
    rdp_ = np.array([r["eps_thm31_rdp"] for r in rows])
    cor = np.array([r["eps_cor34"] for r in rows])

    fig, axes = c.figure()
    ax = axes[0, 0]
    ax.plot(ms, prof, color=c.COLORS[0], label="Thm 3.2 (privacy profile)", **c.PROFILE)
    ax.plot(ms, rdp_, color=c.COLORS[1], label="Thm 3.1 (RDP)", **c.RDP)
    ax.plot(ms, cor, color=c.COLORS[2], label="Cor. 3.4 (closed form)", **c.CLOSED_FORM)
    ax.set_xscale("log")
    ax.set_xlabel("number of candidates m")
    ax.set_ylabel(r"$\varepsilon$ at $\delta=10^{-6}$")
    ax.set_title(r"KRW Fig. 1: RNM, Gaussian queries, $\sigma=4$")
    ax.legend()

    at = {m: i for i, m in enumerate(ms)}
    key = {
        "sigma": SIGMA, "delta": DELTA,
        **{f"eps_thm32_m{m}": float(prof[at[m]]) for m in (10, 100, 1000) if m in at},
        **{f"eps_rdp_m{m}": float(rdp_[at[m]]) for m in (10, 100, 1000) if m in at},
        **{f"eps_cor34_m{m}": float(cor[at[m]]) for m in (10, 100, 1000) if m in at},
        "min_rdp_minus_profile": float((rdp_ - prof).min()),
        "min_cor34_minus_profile": float((cor - prof).min()),
    }
    return c.finish(NAME, rows, fig, quick=quick, out_dir=out_dir, key=key, started=started)
