"""KRW Fig. 6: DP-SGD base (q=256/60000, sigma=1.1, T=ceil(60/q)), Thm 5.2 and Cor. 5.8 vs Thm 5.1 and 5.6.

eps at delta=1e-5 of "best of K runs" against m = E[K], for geometric K (KRW Thm 5.2 vs the
RDP bound Thm 5.1) and Poisson K (KRW Cor. 5.8 vs RDP Thm 5.6), with the base profile from a
certified accountant (PRV, or CF below PRV's floating-point floor). The parameters are the
MNIST example of Papernot and Steinke (2022). delta=1e-5 is our choice (KRW do not state it).
"""

from __future__ import annotations

import math
import time

import numpy as np

from . import _common as c

NAME = "fig6_dpsgd"
SIGMA, RATE, DELTA = 1.1, 256 / 60000, 1e-5
STEPS = math.ceil(60 / RATE)  # 14063


def run(quick: bool = False, out_dir=None) -> dict:
    started = time.perf_counter()
    if quick:
        means, factor_means = [2, 10, 300], []
    else:
        means = sorted(set(np.round(np.geomspace(2, 1000, 25), 3).tolist()) | {10.0, 100.0})
        factor_means = [10]
    return c.run_dpsgd_comparison(NAME, sigma=SIGMA, rate=RATE, steps=STEPS, delta=DELTA, means=means,
                                  factor_means=factor_means, title="KRW Fig. 6", quick=quick, out_dir=out_dir,
                                  started=started)
