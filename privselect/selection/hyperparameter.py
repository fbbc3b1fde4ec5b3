"""Certificates when the hyperparameters change the privacy of a run.

Two valid bounds, the certificate takes the smaller and names it:

* ``mixture-profile``: the base run's profile is at most the average of the candidates'
  profiles over the space's sampling law, δ_Q(ε) <= E_λ[δ_λ(ε)] (joint convexity,
  [`privselect.accounting.average`][privselect.accounting.average]); that profile goes into the selection bounds like any
  other (KRW 2024 Thm 5.2 and relatives, via [`certify`][privselect.selection.certify.certify]).
* ``cor62``: Koskela, Redberg, Wang 2024 Cor. 6.2: if every candidate meets the thresholds
  derived from a reference (ε_Q, δ)-DP Gaussian, the selection is (ε, δ)-DP with ε given in
  closed form. Without ``base_epsilon`` the smallest ε_Q whose thresholds every candidate
  meets is found by bisection (the thresholds are then checked at the returned ε_Q, so the
  result is valid whatever the bisection does). Needs a truncated negative binomial K.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from ..accounting import privacy_profile
from ..accounting.average import HyperparameterMixture, average_profile
from ..accounting.profile import ErrorBudget, PrivacyProfile
from .distributions import KDistribution, TruncatedNegativeBinomial

if TYPE_CHECKING:
    from .calibrate import Cor62Thresholds

__all__ = ["certify_hyperparameter_mixture", "cor62_certificate", "smallest_cor62_base_epsilon"]

COR62 = "Koskela-Redberg-Wang 2024, Cor. 6.2"
# Bisection range and steps for the smallest eps_Q (relative precision 2^-30 of the bracket).
_EPS_Q_RANGE = (1e-3, 64.0)
_EPS_Q_STEPS = 30


def cor62_certificate(thresholds: "Cor62Thresholds", k: KDistribution, base: str, accountant: str,
                      notes: tuple[str, ...] = ()):
    """The Cor. 6.2 certificate for candidates that all meet ``thresholds``."""
    from .certificate import Certificate

    th = thresholds
    return Certificate(
        epsilon=th.epsilon, delta=th.delta, method="cor62", bound=COR62, alternatives={"cor62": th.epsilon}, k=k,
        base=f"{base}; every candidate ({th.eps1:.6g}, {th.delta1:.3g})-DP and ({th.eps_hat:.6g}, {th.delta_hat:.3g})-DP",
        accountant=accountant, error_budget=ErrorBudget(), notes=notes,
    )


def _all_meet(profiles: list[PrivacyProfile], eps_q: float, delta: float, k) -> "Cor62Thresholds | None":
    from .calibrate import cor62_thresholds, meets_thresholds  # calibrate imports certify

    try:
        th = cor62_thresholds(eps_q, delta, k)
    except ValueError:
        return None
    return th if all(meets_thresholds(p, th) for p in profiles) else None


def smallest_cor62_base_epsilon(profiles: list[PrivacyProfile], delta: float,
                                k: TruncatedNegativeBinomial) -> "Cor62Thresholds | None":
    """Thresholds at (about) the smallest ε_Q that every profile meets; None if none in range does."""
    lo, hi = _EPS_Q_RANGE
    best = _all_meet(profiles, hi, delta, k)
    if best is None:
        return None
    for _ in range(_EPS_Q_STEPS):
        mid = math.sqrt(lo * hi)
        th = _all_meet(profiles, mid, delta, k)
        if th is None:
            lo = mid
        else:
            hi, best = mid, th
    return best


def certify_hyperparameter_mixture(law: HyperparameterMixture, k: KDistribution, delta: float, *,
                                   base_epsilon: float | None = None, accountant: str = "auto",
                                   **accountant_options: Any):
    """Certify the best of K runs whose mechanisms are drawn from ``law``: the smaller of the two bounds."""
    from .certificate import Certificate, certify

    profiles = [privacy_profile(m, accountant=accountant, **accountant_options) for m in law.mechanisms]
    averaged = average_profile(profiles, law.weights, mechanism=law)
    alternatives: dict[str, float] = {}
    notes: list[str] = []
    mixture = certify(averaged, k, delta, bound="profile")
    alternatives["mixture-profile"] = mixture.epsilon
    thresholds = None
    if isinstance(k, TruncatedNegativeBinomial):
        if base_epsilon is None:
            thresholds = smallest_cor62_base_epsilon(profiles, delta, k)
            if thresholds is None:
                notes.append(f"cor62: no eps_Q in {_EPS_Q_RANGE} has thresholds every candidate meets")
        else:
            thresholds = _all_meet(profiles, base_epsilon, delta, k)
            if thresholds is None:
                notes.append(f"cor62: some candidate exceeds the thresholds of base_epsilon={base_epsilon:g}")
        if thresholds is not None:
            alternatives["cor62"] = thresholds.epsilon
    else:
        notes.append(f"cor62: stated for truncated negative binomial K, not {type(k).__name__}")
    if thresholds is not None and thresholds.epsilon < mixture.epsilon:
        cert = cor62_certificate(thresholds, k, repr(law), accountant, tuple(notes))
        return Certificate(**{**cert.__dict__, "alternatives": alternatives, "version": cert.version})
    return Certificate(
        epsilon=mixture.epsilon, delta=mixture.delta, method="mixture-profile",
        bound=f"{mixture.bound} on the averaged profile E_λ[δ_λ] (joint convexity)", alternatives=alternatives,
        k=k, base=repr(law), accountant=mixture.accountant, error_budget=mixture.error_budget,
        notes=mixture.notes + tuple(notes),
    )
