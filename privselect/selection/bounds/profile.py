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
import weakref
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ...accounting import privacy_profile
from ...accounting.profile import PrivacyProfile, ScaledShiftedCurve
from ..distributions import Binomial, KDistribution, Poisson, TruncatedNegativeBinomial
from .registry import applicable_bound, register_bound, unsupported_reason

__all__ = ["SelectionShift", "selection_shift", "selection_shifts", "selection_profile", "selection_epsilons"]

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


class _GridTable:
    """The base profile's upper delta on `_EPS1_GRID`, point by point as the searches need it.

    Kept per built profile (profiles are immutable and answer each point alike whatever else a
    query holds), so that many K laws on one profile evaluate each grid point once.
    """

    def __init__(self) -> None:
        self.values = np.full(_EPS1_GRID.shape, np.nan)  # no reference to the profile: it may be collected

    def at(self, base: PrivacyProfile, index: np.ndarray) -> np.ndarray:
        missing = index[np.isnan(self.values[index])]
        if missing.size:
            self.values[missing] = base.delta(_EPS1_GRID[missing])
        return self.values[index]


#: The tables of the profiles still alive, by id (a finaliser drops a profile's table with it).
_TABLES: dict[int, tuple[weakref.ref, _GridTable]] = {}


def _grid_table(base: PrivacyProfile) -> _GridTable:
    entry = _TABLES.get(id(base))
    if entry is not None and entry[0]() is base:
        return entry[1]
    table = _GridTable()
    try:
        ref = weakref.ref(base)
    except TypeError:  # not weakly referenceable: no reuse across calls
        return table
    _TABLES[id(base)] = (ref, table)
    weakref.finalize(base, _TABLES.pop, id(base), None)
    return table


#: Local refinement around the best grid point: rounds of evenly spaced points, each round narrowing
#: the bracket to two of its cells (a factor (_ZOOM_POINTS - 1) / 2 = 10 per round, from the grid's two
#: cells, ~6% of eps_1). A law stops once the objective at both neighbours of its best point is within
#: _ZOOM_STOP (relative) of the best: flat to that precision across the next bracket (a smooth minimum:
#: 4-6 rounds). At a kink of the objective (a pure-DP base, Thm 5.7's feasibility boundary) a neighbour
#: stays far above, and the rounds go on to _ZOOM_MAX_ROUNDS, a bracket of ~1e-15 eps_1 (the old
#: search: 8 rounds of 201 points).
_ZOOM_POINTS = 21
_ZOOM_MAX_ROUNDS = 14
_ZOOM_STOP = 1e-14


def selection_shifts(base: PrivacyProfile, laws: Sequence[KDistribution]) -> list[SelectionShift]:
    """s* of each law's theorem from one base profile (see `selection_shift`), vectorised over the laws:
    the grid of the base profile's delta is shared (and kept with the profile), and each refinement
    round is one delta call for all the laws."""
    entries = []
    for k_dist in laws:
        reason = unsupported_reason(k_dist, "profile")
        if reason is not None:
            raise TypeError(reason if reason.startswith("k ") else f"k: {reason}")
        entries.append(applicable_bound(k_dist, "profile"))
    table = _grid_table(base)
    lows, highs, best_eps1, best_shift = [], [], [], []
    for k_dist, entry in zip(laws, entries):
        # Every objective is non-decreasing in delta, so objective(eps_1, 0) is a lower bound at eps_1, and
        # it increases with eps_1: grid points whose lower bound is not below the best value found so far
        # cannot win and are never queried (they lie in the profile's far tail, the costly part).
        floor_values = entry.rule(k_dist, _EPS1_GRID, np.zeros_like(_EPS1_GRID))
        values = np.full(_EPS1_GRID.shape, np.inf)
        for start in range(0, _EPS1_GRID.size, _EPS1_CHUNK):
            index = np.arange(start, min(start + _EPS1_CHUNK, _EPS1_GRID.size))
            index = index[floor_values[index] < np.min(values)]
            if not index.size:
                break
            values[index] = entry.rule(k_dist, _EPS1_GRID[index], table.at(base, index))
        if not np.isfinite(values).any():
            raise ValueError(f"no eps_1 >= 0 satisfies the condition of {entry.theorem} for this base profile")
        best = int(np.argmin(values))
        best_eps1.append(float(_EPS1_GRID[best]))
        best_shift.append(float(values[best]))
        lows.append(_EPS1_GRID[max(best - 1, 0)])
        highs.append(_EPS1_GRID[min(best + 1, _EPS1_GRID.size - 1)])
    # Zoom in around each best grid point (the objective can have kinks, e.g. where a pure-DP profile
    # reaches 0, so no smoothness is assumed); every law's local grid goes into one delta call.
    lo, hi = np.array(lows), np.array(highs)
    steps = np.linspace(0.0, 1.0, _ZOOM_POINTS)
    active = np.arange(len(entries))
    for _ in range(_ZOOM_MAX_ROUNDS):
        local = lo[active, None] + (hi - lo)[active, None] * steps[None, :]
        deltas = base.delta(local.reshape(-1)).reshape(local.shape)
        local_values = np.stack([entries[j].rule(laws[j], local[r], deltas[r]) for r, j in enumerate(active.tolist())])
        i = np.argmin(local_values, axis=1)
        rows = np.arange(active.size)
        neighbours = np.maximum(local_values[rows, np.maximum(i - 1, 0)],
                                local_values[rows, np.minimum(i + 1, _ZOOM_POINTS - 1)])
        values = local_values[rows, i]
        keep = ~(neighbours - values <= _ZOOM_STOP * np.maximum(np.abs(values), 1e-300))
        for r, j in enumerate(active):
            if values[r] < best_shift[j]:
                best_eps1[j], best_shift[j] = float(local[r, i[r]]), float(values[r])
        lo[active] = local[rows, np.maximum(i - 1, 0)]
        hi[active] = local[rows, np.minimum(i + 1, _ZOOM_POINTS - 1)]
        active = active[keep]
        if not active.size:
            break
    return [SelectionShift(shift=s, epsilon1=e, mean=float(k_dist.mean), theorem=entry.theorem)
            for s, e, k_dist, entry in zip(best_shift, best_eps1, laws, entries)]


def selection_shift(base: PrivacyProfile, k_dist: KDistribution) -> SelectionShift:
    """s* = min over eps_1 >= 0 of the theorem's shift, from the certified upper profile."""
    return selection_shifts(base, [k_dist])[0]


def selection_epsilons(base, laws: Sequence[KDistribution], delta: float, **accountant_options) -> np.ndarray:
    """eps(delta) of the selection profile (`selection_profile`) of each K law, from one base profile.

    The same values as ``selection_profile(base, k).epsilon(delta)`` per law, answered together: the
    shifts by `selection_shifts`, then one vectorised query eps_base(delta / m) of the base profile
    (KRW 2024 Thm 5.2, Thm 5.7, Cor. 5.8: eps_A(delta) <= eps_base(delta / m) + s*).
    """
    base_profile = privacy_profile(base, **accountant_options)
    shifts = np.array([sel.shift for sel in selection_shifts(base_profile, laws)])
    scaled = float(delta) / np.array([float(k.mean) for k in laws])
    inside = scaled < 1  # else m * delta_base <= m <= delta: every eps > 0 (as ScaledShiftedCurve.epsilon_bounds)
    base_eps = np.asarray(base_profile.epsilon(np.where(inside, scaled, 0.5)), dtype=float)
    return np.where(inside, np.maximum(base_eps + shifts, 0.0), 0.0)


def _shifted_curve(base_profile: PrivacyProfile, k_dist: KDistribution, sel: SelectionShift) -> ScaledShiftedCurve:
    # Thm 5.2 holds for every eps; Thm 5.7 and Cor. 5.8 are stated for eps > 0 (the table says which).
    return ScaledShiftedCurve(base_profile, scale=sel.mean, shift=sel.shift,
                              positive_eps_only=not applicable_bound(k_dist, "profile").every_eps,
                              label="selection_mean_amplification")


def selection_profile(base, k_dist: KDistribution, **accountant_options) -> PrivacyProfile:
    """The whole selection procedure's privacy profile (KRW Thm 5.2, Thm 5.7, Cor. 5.8).

    ``base`` is a mechanism (accounted with ``privacy_profile``) or a built PrivacyProfile.
    """
    base_profile = privacy_profile(base, **accountant_options)
    sel = selection_shift(base_profile, k_dist)
    curve = _shifted_curve(base_profile, k_dist, sel)
    return PrivacyProfile(
        curves=(curve,),
        accountant=f"selection[{base_profile.accountant}]",
        mechanism=base_profile.mechanism,
        description=f"best of K ~ {k_dist!r} runs; {sel.theorem}, eps_1 = {sel.epsilon1:.6g}, shift = {sel.shift:.6g}",
        metadata=(("theorem", sel.theorem), ("epsilon1", sel.epsilon1), ("shift", sel.shift), ("mean_k", sel.mean)),
    )
