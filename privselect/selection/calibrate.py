"""Calibration: how many runs, how much noise, and thresholds for candidates whose privacy differs.

* [`largest_mean`][privselect.selection.calibrate.largest_mean]: the largest E[K] (for a chosen family) whose certificate meets a
  target (eps, delta).
* [`smallest_noise_multiplier`][privselect.selection.calibrate.smallest_noise_multiplier]: the smallest DP-SGD noise multiplier (Poisson rate q,
  T steps) such that the whole tuning meets (eps, delta).
* [`cor62_thresholds`][privselect.selection.bounds.cor62.cor62_thresholds] and [`meets_thresholds`][privselect.selection.bounds.cor62.meets_thresholds]: KRW Cor. 6.2 point-wise thresholds
  (eps_1, delta_1) and (eps_hat, delta/m) that every candidate must meet when
  hyperparameters change the privacy of a run (e.g. tuning sigma with T adjusted); they live with
  the Cor. 6.2 bound in [`privselect.selection.bounds.cor62`][privselect.selection.bounds.cor62] and are re-exported here.

Root finding is Brent's method (``scipy.optimize.brentq``) on a bracket found by doubling;
the answer is always the end of the final bracket on the safe side (its certificate meets
the target), never the midpoint.
"""

from __future__ import annotations

import math
from typing import Callable

from scipy import optimize

from .. import _validation as check
from ..accounting import privacy_profile
from ..accounting.profile import CertificationError, PrivacyProfile
from ..mechanisms import Gaussian, Mechanism
from .bounds.cor62 import Cor62Thresholds, cor62_thresholds, meets_thresholds
from .certify import certify
from .distributions import Geometric, KDistribution

__all__ = [
    "largest_mean",
    "smallest_noise_multiplier",
    "Cor62Thresholds",
    "cor62_thresholds",
    "meets_thresholds",
]

_MAX_DOUBLINGS = 60


def _bracket_by_doubling(f: Callable[[float], float], start: float, *, grow: bool) -> tuple[float, float]:
    """Find [a, b] with f(a) <= 0 < f(b) (grow=True) by doubling x = start * 2^j (or halving)."""
    x = start
    for _ in range(_MAX_DOUBLINGS):
        nxt = x * 2 if grow else x / 2
        if (f(nxt) > 0) == grow:
            return (x, nxt) if grow else (nxt, x)
        x = nxt
    raise ValueError("could not bracket the calibration target; the target may be unreachable")


def largest_mean(base: Mechanism | PrivacyProfile, target_epsilon: float, delta: float, *,
                 family: Callable[[float], KDistribution] = lambda m: Geometric(mean=m),
                 min_mean: float = 1.0 + 1e-9, bound: str | None = None, accountant: str = "auto",
                 rtol: float = 1e-6, **accountant_options) -> float:
    """The largest mean m with ``certify(base, family(m), delta).epsilon <= target_epsilon``.

    ``family`` maps a mean to a K distribution (default geometric). The base profile is built
    once with ``accountant``; ``bound`` forces a bound family as in [`certify`][privselect.selection.calibrate.certify]. Raises
    ``ValueError`` when even ``min_mean`` misses the target.
    """
    target = check.positive("target_epsilon", target_epsilon)
    delta = check.delta_scalar("delta", delta)
    state = {"profile": privacy_profile(base, accountant=accountant, **accountant_options)}  # built once

    def excess(mean: float) -> float:
        try:
            return certify(state["profile"], family(mean), delta, bound=bound).epsilon - target
        except CertificationError:
            # delta / mean is below the chosen accountant's floor. With a mechanism at hand, switch to
            # "auto" (answers every delta); otherwise this mean cannot be certified, which counts as
            # missing the target (the answer stays valid).
            mechanism = state["profile"].mechanism
            if isinstance(mechanism, Mechanism) and state["profile"].accountant != "auto":
                state["profile"] = privacy_profile(mechanism, accountant="auto")
                return excess(mean)
            return math.inf

    if excess(min_mean) > 0:
        raise ValueError(f"even mean={min_mean:g} exceeds target_epsilon={target:g} at delta={delta:g}")
    lo, hi = _bracket_by_doubling(lambda m: excess(m), max(min_mean, 1.0), grow=True)
    root = optimize.brentq(lambda m: excess(m), lo, hi, rtol=rtol)
    # Safe side: step down until the certificate meets the target.
    m = root
    while excess(m) > 0:
        m = max(lo, m * (1 - rtol))
    return m


def smallest_noise_multiplier(rate: float, steps: int, target_epsilon: float, delta: float, k: KDistribution, *,
                              bound: str | None = None, rtol: float = 1e-4, **accountant_options) -> float:
    """Smallest sigma such that the best of K runs of DP-SGD (Poisson rate, steps) is (eps, delta)-DP."""
    rate = check.half_open_unit("rate", rate)
    steps = check.positive_int("steps", steps)
    target = check.positive("target_epsilon", target_epsilon)
    delta = check.delta_scalar("delta", delta)

    def excess(sigma: float) -> float:
        mech = Gaussian(sigma).poisson_subsample(rate).compose(steps) if rate < 1 else Gaussian(sigma).compose(steps)
        return certify(mech, k, delta, bound=bound, **accountant_options).epsilon - target

    # excess decreases in sigma: find lo (too little noise) and hi (enough noise).
    sigma = 1.0
    if excess(sigma) > 0:
        hi = sigma
        for _ in range(_MAX_DOUBLINGS):
            hi *= 2
            if excess(hi) <= 0:
                break
        else:
            raise ValueError("no noise multiplier up to 2^60 meets the target")
        lo = hi / 2
    else:
        lo = sigma
        for _ in range(_MAX_DOUBLINGS):
            lo /= 2
            if excess(lo) > 0:
                break
        else:
            return lo
        hi = lo * 2
    root = optimize.brentq(excess, lo, hi, rtol=rtol)
    s = root
    while excess(s) > 0:
        s = min(hi, s * (1 + rtol))
    return s
