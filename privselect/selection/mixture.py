"""The K-mixture bound: K runs, K drawn independently of the data, everything released.

When the number of runs K is released with the result, or the runs are chosen adaptively
(e.g. an Optuna TPE sampler), the selection theorems do not apply. What does apply: given
K = k, the whole transcript is a post-processing of the adaptive k-fold composition of the
base run, and K is independent of the data, so by joint convexity of the hockey-stick
divergence (the output law is the same K-mixture on both neighbours)

    delta(eps) <= sum_k P[K = k] delta_k(eps),   delta_k the profile of the k-fold composition.

(K = 0 releases a data-independent output: delta_0(eps) = (1 - e^eps)_+.)

Computation: delta_k is non-decreasing in k (k-fold is a post-processing of k'-fold for
k <= k'), so K is grouped into buckets (k_{j-1}, k_j] charged at delta_{k_j}; the tail
P[K > k_max] is added as a delta error. Both steps only increase the bound.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..accounting import get_accountant, privacy_profile
from ..accounting.profile import DirectionalCurve, ErrorBudget, PrivacyProfile
from ..mechanisms import Mechanism
from .distributions import KDistribution

__all__ = ["k_mixture_profile", "KMixtureCurve"]


def _buckets(k_dist: KDistribution, tail: float, ratio: float,
             exact_up_to: int = 32) -> tuple[np.ndarray, np.ndarray, float]:
    """Bucket ends k_j, their probabilities P[k_{j-1} < K <= k_j], and the tail mass beyond."""
    cumulative, k_max, chunk = 0.0, 0, 4096
    start = k_dist.min_k
    while True:
        ks = np.arange(start, start + chunk)
        cdf = cumulative + np.cumsum(k_dist.pmf(ks))
        hit = np.flatnonzero(1.0 - cdf <= tail)
        if hit.size:
            k_max = int(ks[hit[0]])
            break
        cumulative, start = float(cdf[-1]), start + chunk
        if start > 10**7:
            raise ValueError("K's tail is too heavy to bound with the mixture bound (k_max > 1e7)")
    ends = list(range(1, min(k_max, exact_up_to) + 1))
    while ends[-1] < k_max:
        ends.append(min(k_max, max(ends[-1] + 1, int(math.ceil(ends[-1] * ratio)))))
    ends = np.array(ends)
    cdf_at = np.cumsum(k_dist.pmf(np.arange(0, k_max + 1)))[ends]
    probs = np.diff(np.concatenate([[k_dist.pmf(0) if k_dist.min_k == 0 else 0.0], cdf_at]))
    tail_mass = max(0.0, 1.0 - float(cdf_at[-1]))
    return ends, probs, tail_mass


class KMixtureCurve(DirectionalCurve):
    """sum_j P[K in bucket j] delta_{k_j}(eps) + P[K = 0] (1 - e^eps)_+ + P[K > k_max]."""

    direction = "both"

    def __init__(self, profiles: list[PrivacyProfile], probs: np.ndarray, p_zero: float, tail: float) -> None:
        self.profiles, self.probs, self.p_zero, self.tail = profiles, probs, p_zero, tail
        budgets = [p.error_budget for p in profiles]
        self.error_budget = ErrorBudget(
            eps_error=max(b.eps_error for b in budgets),
            delta_error=max(b.delta_error for b in budgets) + tail,
            min_delta=max(b.min_delta for b in budgets),
            details=(("k_tail_mass", tail), ("buckets", float(len(profiles)))),
        )

    def delta_bounds(self, eps):
        e = np.asarray(eps, dtype=float)
        upper = sum(p * prof.delta(e) for p, prof in zip(self.probs, self.profiles))
        upper = upper + self.p_zero * np.maximum(-np.expm1(np.minimum(e, 0.0)), 0.0) + self.tail
        upper = np.minimum(1.0, upper)
        return np.zeros_like(upper), upper


def _bucket_profile(mechanism: Mechanism, accountant: str, options: dict[str, Any]) -> PrivacyProfile:
    """One bucket's profile: "auto" means exact where it applies, else PRV (else the full auto)."""
    if accountant != "auto" or options:
        return privacy_profile(mechanism, accountant=accountant, **options)
    if get_accountant("exact").supports(mechanism) is None:
        return privacy_profile(mechanism, accountant="exact")
    try:
        return privacy_profile(mechanism, accountant="prv")
    except (ValueError, ArithmeticError):
        return privacy_profile(mechanism, accountant="auto")


def k_mixture_profile(base: Mechanism, k_dist: KDistribution, *, tail: float = 1e-12, bucket_ratio: float = 1.1,
                      accountant: str = "auto", **accountant_options: Any) -> PrivacyProfile:
    """Profile of K runs of ``base`` with everything released (K, every run, adaptive choices).

    ``tail`` bounds P[K > k_max] (added to delta); every k up to 32 is its own bucket, then
    ``bucket_ratio`` sets the bucket growth. With ``accountant="auto"`` each bucket uses the exact
    accountant where it applies and PRV otherwise (a sum of delta upper bounds needs no answer
    below PRV's floor: any certified upper bound is valid there), falling back to "auto" for a
    bucket PRV cannot build.
    """
    if not isinstance(base, Mechanism):
        raise TypeError("the K-mixture bound composes the base run: give a Mechanism, not a built profile")
    if not isinstance(k_dist, KDistribution):
        raise TypeError(f"k must be a distribution of K, got {type(k_dist).__name__}")
    ends, probs, tail_mass = _buckets(k_dist, tail, bucket_ratio)
    profiles = [_bucket_profile(base.compose(int(k)), accountant, accountant_options) for k in ends]
    p_zero = float(k_dist.pmf(0)) if k_dist.min_k == 0 else 0.0
    curve = KMixtureCurve(profiles, probs, p_zero, tail_mass)
    return PrivacyProfile(curves=(curve,), method=f"k-mixture[{accountant}]", mechanism=base,
                          description=f"K ~ {k_dist!r} adaptive runs, all released (mixture of k-fold compositions)",
                          metadata=(("bound", "mixture of k-fold compositions (K independent of the data)"),
                                    ("k_max", int(ends[-1])), ("buckets", len(ends))))
