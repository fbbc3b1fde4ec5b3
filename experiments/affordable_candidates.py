"""How many candidates can I afford? The largest E[K] per distribution family for a target (eps, delta), profile vs RDP.

For the DP-SGD bases of KRW Fig. 6 and Fig. 7 and delta=1e-5, ``calibrate_k_mean`` finds the
largest mean of K (logarithmic, geometric, Poisson) whose certificate meets each target eps:
by the privacy-profile bounds (KRW Thm 5.2, Cor. 5.8) and by the RDP bounds (KRW Thm 5.1,
5.6; Papernot, Steinke 2022). Means above 1e6 are reported as inf.
"""

from __future__ import annotations

import math
import time

import numpy as np

import privselect as ps
from privselect.accounting import CertificationError
from privselect.selection import calibrate_k_mean

from . import _common as c

NAME = "affordable_candidates"
DELTA = 1e-5
MEAN_CAP = 1e6
BASES = (
    ("DP-SGD, KRW Fig. 6", 1.1, 256 / 60000, math.ceil(60 / (256 / 60000)),
     (2.5, 3.0, 3.5, 4.0, 5.0, 6.0, 7.0, 8.0, 12.0, 16.0, 24.0)),
    ("large batch, KRW Fig. 7", 21.1, 16384 / 50000, 250, (1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 6.0, 8.0, 12.0)),
)
FAMILIES = (
    ("logarithmic", lambda m: ps.Logarithmic(mean=m)),
    ("geometric", lambda m: ps.Geometric(mean=m)),
    ("Poisson", ps.Poisson),
)


def _largest(profiles, target: float, family, method: str) -> tuple[float, str]:
    """calibrate_k_mean from the fast PRV profile; from the CF profile when the search reaches
    delta / E[K] below PRV's floating-point floor. inf when even E[K] = MEAN_CAP meets the target."""
    (_, prv), (_, cf) = profiles
    if method == "rdp":
        if ps.certify(prv(), family(MEAN_CAP), DELTA, bound="rdp").epsilon <= target:
            return math.inf, "rdp"
        return calibrate_k_mean(prv(), target, DELTA, family=family, bound="rdp", rtol=1e-4), "rdp"
    try:
        return calibrate_k_mean(prv(), target, DELTA, family=family, bound="profile", rtol=1e-4), "prv"
    except CertificationError:
        if ps.certify(cf(), family(MEAN_CAP), DELTA, bound="profile").epsilon <= target:
            return math.inf, "cf"
        return calibrate_k_mean(cf(), target, DELTA, family=family, bound="profile", rtol=1e-4), "cf"


def run(quick: bool = False, out_dir=None) -> dict:
    started = time.perf_counter()
    bases = [(BASES[1][0], *BASES[1][1:4], (2.0,))] if quick else list(BASES)
    families = [f for f in FAMILIES if f[0] != "logarithmic"] if quick else list(FAMILIES)
    rows, key = [], {"delta": DELTA}
    fig, axes = c.figure(1, len(bases), width=5.4)
    for b, (label, sigma, rate, steps, targets) in enumerate(bases):
        base = ps.Gaussian(sigma).poisson_subsample(rate).compose(steps)
        cache = {}

        def lazy(method, cache=cache, base=base):
            def get():
                if method not in cache:
                    opts = {"target_delta": 1e-9} if method == "prv" else {}
                    cache[method] = ps.privacy_profile(base, accountant=method, **opts)
                return cache[method]
            return get

        profiles = [("prv", lazy("prv")), ("cf", lazy("cf"))]
        ax = axes[0, b]
        for f, (fam, family) in enumerate(families):
            found = {"profile": [], "rdp": []}
            for target in targets:
                for method in ("profile", "rdp"):
                    try:
                        m, accountant = _largest(profiles, target, family, method)
                    except ValueError:  # even the smallest mean misses the target
                        m, accountant = math.nan, ""
                    found[method].append(m)
                    rows.append({"base": label, "family": fam, "target_eps": target, "delta": DELTA, "bound": method,
                                 "calibrate_k_mean": m, "accountant": accountant})
                ratio = found["profile"][-1] / found["rdp"][-1]
                tag = f"{'fig6' if '6' in label else 'fig7'}_{fam}_eps{target:g}"
                key[f"m_profile_{tag}"] = found["profile"][-1]
                key[f"m_rdp_{tag}"] = found["rdp"][-1]
                key[f"ratio_{tag}"] = ratio
            color = c.COLORS[(0, 3, 2)[f]]
            shown = {k: np.where(np.isfinite(v), v, np.nan) for k, v in found.items()}  # > MEAN_CAP not drawn
            ax.plot(targets, shown["profile"], "o", color=color, label=f"{fam}, profile", **c.PROFILE)
            ax.plot(targets, shown["rdp"], "s", color=color, label=f"{fam}, RDP", markerfacecolor="none", **c.RDP)
        ax.set_yscale("log")
        ax.set_ylim(1, MEAN_CAP * 2)
        ax.set_xlabel(rf"target $\varepsilon$ (at $\delta={c.tex_number(DELTA)}$)")
        ax.set_ylabel(r"largest $E[K]$ (values above $10^6$ not drawn)")
        ax.set_title(f"{label}\n{c.mechanism_label(sigma, rate, steps)}", fontsize=9)
        ax.legend(fontsize=7)
    return c.finish(NAME, rows, fig, quick=quick, out_dir=out_dir, key=key, started=started)
