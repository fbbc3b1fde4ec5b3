"""Bounds when the hyperparameters change the privacy of a run.

Two valid bounds; the certificate ([`certify_hyperparameter_mixture`][privselect.selection.certify.certify_hyperparameter_mixture],
made by ``certify``, which composes the bounds) takes the smaller and names it:

* ``mixture-profile``: the base run's profile is at most the average of the candidates'
  profiles over the space's sampling law, δ_Q(ε) <= E_λ[δ_λ(ε)] (joint convexity,
  [`privselect.accounting.average`][privselect.accounting.average]); that profile goes into the selection bounds like any
  other (KRW 2024 Thm 5.2 and relatives, via [`certify`][privselect.selection.certify.certify]).
* ``cor62``: Koskela, Redberg, Wang 2024 Cor. 6.2 ([`cor62_thresholds`][privselect.selection.bounds.cor62.cor62_thresholds],
  registered for truncated negative binomial K in the bounds table): if every candidate meets the thresholds
  derived from a reference (ε_Q, δ)-DP Gaussian, the selection is (ε, δ)-DP with ε given in
  closed form. Without ``base_epsilon`` the smallest ε_Q whose thresholds every candidate
  meets is found by bisection (the thresholds are then checked at the returned ε_Q, so the
  result is valid whatever the bisection does). Needs a truncated negative binomial K.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ... import _validation as check
from ...accounting import privacy_profile
from ...accounting.gaussian import gaussian_delta, gaussian_epsilon
from ...accounting.profile import PrivacyProfile
from ...mechanisms import Mechanism
from ..distributions import KDistribution, TruncatedNegativeBinomial
from .registry import applicable_bound, register_bound, unsupported_reason

__all__ = ["COR62", "Cor62Thresholds", "cor62_thresholds", "meets_thresholds", "smallest_cor62_base_epsilon",
           "EPS_Q_RANGE", "all_meet"]

COR62 = "Koskela-Redberg-Wang 2024, Cor. 6.2"
#: Bisection range of the smallest eps_Q (`smallest_cor62_base_epsilon`; relative precision 2^-30 of it).
EPS_Q_RANGE = (1e-3, 64.0)
_EPS_Q_STEPS = 30


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


#: Search range of the reference Gaussian's mu in [`cor62_thresholds`][privselect.selection.bounds.cor62.cor62_thresholds].
_REFERENCE_MU_RANGE = (1e-6, 100.0)


@register_bound(TruncatedNegativeBinomial, "cor62", COR62)
def cor62_thresholds(eps_q: float, delta: float, k: TruncatedNegativeBinomial, *, delta_q: float | None = None) -> Cor62Thresholds:
    """Thresholds of KRW Sec. 6.2 from a Gaussian reference profile calibrated to (eps_q, delta_q).

    The reference Gaussian mechanism is (eps_q, delta_q)-DP (delta_q defaults to delta); eps1
    minimises log(e^eps + (1-gamma)/gamma delta_Q(eps)), delta1 = delta_Q(eps1), and eps_hat
    is the reference's eps at delta/m. The guarantee holds for ANY candidate meeting both
    thresholds (and for random mixtures of such candidates), whatever its real profile.
    """
    reason = unsupported_reason(k, "cor62")
    if reason is not None:
        raise TypeError(f"k: {reason} (Cor. 6.2 is stated for truncated negative binomial K)")
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
    from scipy import optimize  # lazily: scipy.optimize is a tenth of a second of import
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


def all_meet(profiles: list[PrivacyProfile], eps_q: float, delta: float, k: KDistribution) -> Cor62Thresholds | None:
    """The Cor. 6.2 thresholds of ``eps_q`` if every profile meets them, else None (also where Cor. 6.2
    does not apply to ``k``)."""
    try:
        th = applicable_bound(k, "cor62").rule(eps_q, delta, k)
    except ValueError:
        return None
    return th if all(meets_thresholds(p, th) for p in profiles) else None


def smallest_cor62_base_epsilon(profiles: list[PrivacyProfile], delta: float,
                                k: KDistribution) -> Cor62Thresholds | None:
    """Thresholds at (about) the smallest ε_Q that every profile meets; None if none in range does."""
    lo, hi = EPS_Q_RANGE
    best = all_meet(profiles, hi, delta, k)
    if best is None:
        return None
    for _ in range(_EPS_Q_STEPS):
        mid = math.sqrt(lo * hi)
        th = all_meet(profiles, mid, delta, k)
        if th is None:
            lo = mid
        else:
            hi, best = mid, th
    return best
