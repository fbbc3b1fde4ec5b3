"""Calibration: how many runs, how much noise, and thresholds for candidates whose privacy differs.

* [`largest_mean`][privselect.selection.calibrate.largest_mean]: the largest E[K] (for a chosen family) whose certificate meets a
  target (eps, delta).
* [`smallest_noise_multiplier`][privselect.selection.calibrate.smallest_noise_multiplier]: the smallest DP-SGD noise multiplier (Poisson rate q,
  T steps) such that the whole tuning meets (eps, delta).
* [`cor62_thresholds`][privselect.selection.calibrate.cor62_thresholds] and [`meets_thresholds`][privselect.selection.calibrate.meets_thresholds]: KRW Cor. 6.2 point-wise thresholds
  (eps_1, delta_1) and (eps_hat, delta/m) that every candidate must meet when
  hyperparameters change the privacy of a run (e.g. tuning sigma with T adjusted).

Root finding is Brent's method (``scipy.optimize.brentq``) on a bracket found by doubling;
the answer is always the end of the final bracket on the safe side (its certificate meets
the target), never the midpoint.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np
from scipy import optimize

from .. import _validation as check
from ..accounting import privacy_profile
from ..accounting.profile import CertificationError, PrivacyProfile, gaussian_delta, gaussian_epsilon
from ..mechanisms import Gaussian, Mechanism
from .certificate import certify
from .distributions import Geometric, KDistribution, TruncatedNegativeBinomial

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
            if isinstance(mechanism, Mechanism) and state["profile"].method != "auto":
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


@dataclass(frozen=True)
class Cor62Thresholds:
    """KRW Cor. 6.2: a base run that is (eps1, delta1)-DP and (eps_hat, delta_hat)-DP makes the
    selection (epsilon, delta)-DP, with epsilon = eps_hat + (eta+1) log(e^eps1 + (1-gamma)/gamma delta1)."""

    eps1: float
    delta1: float
    eps_hat: float
    delta_hat: float
    epsilon: float
    delta: float
    k: TruncatedNegativeBinomial
    reference_mu: float


#: Search range of the reference Gaussian's mu in [`cor62_thresholds`][privselect.selection.calibrate.cor62_thresholds].
_REFERENCE_MU_RANGE = (1e-6, 100.0)


def cor62_thresholds(eps_q: float, delta: float, k: TruncatedNegativeBinomial, *, delta_q: float | None = None) -> Cor62Thresholds:
    """Thresholds of KRW Sec. 6.2 from a Gaussian reference profile calibrated to (eps_q, delta_q).

    The reference Gaussian mechanism is (eps_q, delta_q)-DP (delta_q defaults to delta); eps1
    minimises log(e^eps + (1-gamma)/gamma delta_Q(eps)), delta1 = delta_Q(eps1), and eps_hat
    is the reference's eps at delta/m. The guarantee holds for ANY candidate meeting both
    thresholds (and for random mixtures of such candidates), whatever its real profile.
    """
    if not isinstance(k, TruncatedNegativeBinomial):
        raise TypeError("Cor. 6.2 is stated for truncated negative binomial K")
    eps_q = check.positive("eps_q", eps_q)
    delta = check.delta_scalar("delta", delta)
    delta_q = delta if delta_q is None else check.delta_scalar("delta_q", delta_q)
    # mu of the Gaussian that is exactly (eps_q, delta_q)-DP: delta_mu(eps_q) increases in mu.
    gap = lambda mu: float(gaussian_delta(eps_q, mu)) - delta_q  # noqa: E731
    mu_lo, mu_hi = _REFERENCE_MU_RANGE
    if not (gap(mu_lo) < 0 < gap(mu_hi)):  # (also False on NaN)
        raise ValueError(f"eps_q={eps_q:g} and delta_q={delta_q:g}: no reference Gaussian with mu in "
                         f"[{mu_lo:g}, {mu_hi:g}] is exactly (eps_q, delta_q)-DP (the pair is outside the range "
                         "this reference covers)")
    mu = optimize.brentq(gap, mu_lo, mu_hi, xtol=1e-14)
    c = (1 - k.gamma) / k.gamma
    grid = np.linspace(0.0, max(4 * eps_q, 10.0), 40001)
    objective = np.logaddexp(grid, math.log(c) + np.log(np.maximum(gaussian_delta(grid, mu), 1e-320)))
    i = int(np.argmin(objective))
    eps1, delta1 = float(grid[i]), float(gaussian_delta(grid[i], mu))
    m = k.mean
    delta_hat = delta / m
    eps_hat = max(float(gaussian_epsilon(delta_hat, mu)), 0.0)
    epsilon = eps_hat + (k.eta + 1) * math.log(math.exp(eps1) + c * delta1)
    return Cor62Thresholds(eps1=eps1, delta1=delta1, eps_hat=eps_hat, delta_hat=delta_hat, epsilon=epsilon,
                           delta=delta, k=k, reference_mu=mu)


def meets_thresholds(candidate: Mechanism | PrivacyProfile, thresholds: Cor62Thresholds, **accountant_options) -> bool:
    """True if the candidate's certified profile is below both Cor. 6.2 thresholds."""
    profile = privacy_profile(candidate, **accountant_options)
    d = profile.delta(np.array([thresholds.eps1, thresholds.eps_hat]))
    return bool(d[0] <= thresholds.delta1 and d[1] <= thresholds.delta_hat)
