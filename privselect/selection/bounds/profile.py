"""Privacy-profile bounds for private selection (Koskela, Redberg, Wang 2024, Sec. 5).

"Run the base mechanism K times and release the best" is bounded from the base mechanism's
privacy profile delta(.) by KRW Thm 5.2 (truncated negative binomial K), Thm 5.7 (binomial K)
and Cor. 5.8 (Poisson K). Each has the form

    H_{e^eps}(A || A') <= m * delta(eps - s(eps_1))     for every eps_1 >= 0 (m = E[K]),

where the shift s depends on eps_1 but not on eps. Since delta(.) is non-increasing, the best
eps_1 is the one minimising s, whatever eps is asked for, and the whole tuning procedure has

    delta_A(eps) <= min(1, m * delta(eps - s*)),      eps_A(delta) <= eps_base(delta / m) + s*,

with s* = min over eps_1 of s(eps_1). [`selection_shift`][privselect.selection.bounds.profile.selection_shift] finds s* (grid plus local
refinement; any eps_1 gives a valid bound, so the search only affects tightness) and
[`selection_profile`][privselect.selection.bounds.profile.selection_profile] returns the procedure's profile as a [`PrivacyProfile`][privselect.accounting.profile.PrivacyProfile].
The three theorems are registered by K law in the bounds table
([`registry`][privselect.selection.bounds.registry]), family ``"profile"``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...accounting import privacy_profile
from ...accounting.profile import PrivacyProfile, ScaledShiftedCurve
from ..distributions import Binomial, KDistribution, Poisson, TruncatedNegativeBinomial
from .registry import law_bound, register_bound, unsupported_reason

__all__ = ["SelectionShift", "selection_shift", "selection_profile"]

#: eps_1 search grid: 0, then log-spaced from 1e-6 to 60 (beyond ~60 every shift term is
#: dominated by e^{eps_1}, so larger eps_1 never helps).
_EPS1_GRID = np.concatenate([[0.0], np.logspace(-6, math.log10(60.0), 600)])
#: The grid is evaluated in chunks of this size, in increasing eps_1 (see selection_shift).
_EPS1_CHUNK = 100


@dataclass(frozen=True)
class SelectionShift:
    """The optimised shift s* of a profile bound, the eps_1 attaining it, and the theorem used."""

    shift: float
    epsilon1: float
    mean: float
    theorem: str


@register_bound(TruncatedNegativeBinomial, "profile", "Koskela-Redberg-Wang 2024, Thm 5.2")
def _tnb_objective(dist: TruncatedNegativeBinomial, eps1: np.ndarray, d: np.ndarray) -> np.ndarray:
    """KRW Thm 5.2: s(eps_1) = (eta+1) log(e^{eps_1} + (1-gamma)/gamma * delta(eps_1))."""
    c = (1 - dist.gamma) / dist.gamma
    return (dist.eta + 1) * np.logaddexp(eps1, np.log(c) + np.log(np.maximum(d, 1e-320)))


@register_bound(Binomial, "profile", "Koskela-Redberg-Wang 2024, Thm 5.7", every_eps=False)
def _binomial_objective(dist: Binomial, eps1: np.ndarray, d: np.ndarray) -> np.ndarray:
    """KRW Thm 5.7: s(eps_1) = (n-1) log(1 + p(e^{eps_1} - 1) + p delta(eps_1)), where
    eps_1 >= log(1 + p/(1-p) delta(eps_1)); infeasible eps_1 get +inf."""
    p = dist.p
    s = (dist.n - 1) * np.log1p(p * np.expm1(eps1) + p * d)
    feasible = eps1 >= np.log1p(p / (1 - p) * d)
    return np.where(feasible, s, np.inf)


@register_bound(Poisson, "profile", "Koskela-Redberg-Wang 2024, Cor. 5.8", every_eps=False)
def _poisson_objective(dist: Poisson, eps1: np.ndarray, d: np.ndarray) -> np.ndarray:
    """KRW Cor. 5.8: s(eps_1) = m (e^{eps_1} - 1) + m delta(eps_1)."""
    return dist.mean * (np.expm1(eps1) + d)


def selection_shift(base: PrivacyProfile, k_dist: KDistribution) -> SelectionShift:
    """s* = min over eps_1 >= 0 of the theorem's shift, from the certified upper profile."""
    reason = unsupported_reason(k_dist, "profile")
    if reason is not None:
        raise TypeError(reason if reason.startswith("k ") else f"k: {reason}")
    entry = law_bound(k_dist, "profile")
    theorem, objective = entry.theorem, entry.rule
    f = lambda e1: objective(k_dist, np.asarray(e1, dtype=float), base.delta(np.asarray(e1, dtype=float)))  # noqa: E731
    # Every objective is non-decreasing in delta, so objective(eps_1, 0) is a lower bound at eps_1, and
    # it increases with eps_1: grid points whose lower bound exceeds the best value found so far
    # cannot win and are never queried (they lie in the profile's far tail, the costly part).
    floor_values = objective(k_dist, _EPS1_GRID, np.zeros_like(_EPS1_GRID))
    values = np.full(_EPS1_GRID.shape, np.inf)
    for start in range(0, _EPS1_GRID.size, _EPS1_CHUNK):
        best_so_far = np.min(values)
        if floor_values[start] >= best_so_far:
            break
        chunk = slice(start, start + _EPS1_CHUNK)
        values[chunk] = f(_EPS1_GRID[chunk])
    if not np.isfinite(values).any():
        raise ValueError(f"no eps_1 >= 0 satisfies the condition of {theorem} for this base profile")
    best = int(np.argmin(values))
    eps1, shift = float(_EPS1_GRID[best]), float(values[best])
    # Zoom in around the best grid point with vectorised local grids (the objective can have
    # kinks, e.g. where a pure-DP profile reaches 0, so no smoothness is assumed).
    lo = _EPS1_GRID[max(best - 1, 0)]
    hi = _EPS1_GRID[min(best + 1, len(_EPS1_GRID) - 1)]
    for _ in range(8):
        local = np.linspace(lo, hi, 201)
        local_values = f(local)
        i = int(np.argmin(local_values))
        if local_values[i] < shift:
            eps1, shift = float(local[i]), float(local_values[i])
        lo, hi = local[max(i - 1, 0)], local[min(i + 1, 200)]
    return SelectionShift(shift=shift, epsilon1=eps1, mean=float(k_dist.mean), theorem=theorem)


def selection_profile(base, k_dist: KDistribution, **accountant_options) -> PrivacyProfile:
    """The whole selection procedure's privacy profile (KRW Thm 5.2, Thm 5.7, Cor. 5.8).

    ``base`` is a mechanism (accounted with ``privacy_profile``) or a built PrivacyProfile.
    """
    base_profile = privacy_profile(base, **accountant_options)
    sel = selection_shift(base_profile, k_dist)
    # Thm 5.2 holds for every eps; Thm 5.7 and Cor. 5.8 are stated for eps > 0 (the table says which).
    curve = ScaledShiftedCurve(base_profile, scale=sel.mean, shift=sel.shift,
                               positive_eps_only=not law_bound(k_dist, "profile").every_eps,
                               label="selection_mean_amplification")
    return PrivacyProfile(
        curves=(curve,),
        accountant=f"selection[{base_profile.accountant}]",
        mechanism=base_profile.mechanism,
        description=f"best of K ~ {k_dist!r} runs; {sel.theorem}, eps_1 = {sel.epsilon1:.6g}, shift = {sel.shift:.6g}",
        metadata=(("theorem", sel.theorem), ("epsilon1", sel.epsilon1), ("shift", sel.shift), ("mean_k", sel.mean)),
    )
