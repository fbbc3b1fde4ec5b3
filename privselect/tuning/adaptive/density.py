"""Sampling densities with a bounded ratio to the prior (DP-HyPO, Wang et al. 2023, Sec. 3.2).

A model's density g over the cells of a candidate grid is projected in L2 onto
{f : c π0 <= f <= C π0, Σ f = 1}; the projection is f = clip(g - τ, c π0, C π0) with τ the root of
Σ f(τ) = 1, found by bisection (Σ f(τ) is continuous and non-increasing, Σ f(-inf) = C >= 1,
Σ f(+inf) = c <= 1).

What is sampled is not f but [`IntegerLaw`][privselect.tuning.adaptive.density.IntegerLaw]: integer counts
n_i summing to T = 2^40, drawn with one integer uniform on [0, T) from the run's generator, so cell i has
probability n_i / T exactly. The counts are chosen inside [c π0_i T (1 + m), C π0_i T (1 - m)] with
m = 1e-12 (the relative float error of π0_i and of the products is a few ulps), and the law is checked
before it is used, so the density ratio of what is actually sampled lies in [c, C], rounding included.
Within a cell the candidate is drawn from the prior restricted to the cell, so the ratio is constant
on each cell.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ...errors import DensityRatioError
from ...selection.adaptive import DensityRatio

__all__ = ["RESOLUTION", "DensityRatioError", "IntegerLaw", "project_density"]

#: Total count of an integer law: cell probabilities are multiples of 2^-40.
RESOLUTION = 2**40
_MARGIN = 1e-12
_BISECTION_STEPS = 200


def project_density(g: np.ndarray, prior: np.ndarray, ratio: DensityRatio) -> np.ndarray:
    """The L2 projection clip(g - τ, c π0, C π0) of ``g`` (normalised) with Σ = 1 (DP-HyPO Sec. 3.2)."""
    prior = np.asarray(prior, dtype=float)
    g = np.asarray(g, dtype=float)
    if g.shape != prior.shape or not np.all(np.isfinite(g)) or np.any(g < 0) or g.sum() <= 0:
        raise ValueError("the model's density must be finite, non-negative, not all zero, one value per cell")
    g = g / g.sum()
    low, high = ratio.lower * prior, ratio.upper * prior
    lo_tau, hi_tau = float(np.min(g - high)), float(np.max(g - low))  # sums C >= 1 and c <= 1
    for _ in range(_BISECTION_STEPS):
        mid = 0.5 * (lo_tau + hi_tau)
        if np.clip(g - mid, low, high).sum() > 1.0:
            lo_tau = mid
        else:
            hi_tau = mid
        if hi_tau - lo_tau <= 1e-17 * max(1.0, abs(mid)):
            break
    return np.clip(g - 0.5 * (lo_tau + hi_tau), low, high)


@dataclass(frozen=True, eq=False)
class IntegerLaw:
    """Cell probabilities counts / RESOLUTION whose ratio to ``prior`` lies in [c, C] (checked at construction)."""

    counts: np.ndarray
    prior: np.ndarray
    ratio: DensityRatio
    _edges: np.ndarray = field(init=False, repr=False)  # cumulative counts, set by __post_init__

    def __post_init__(self) -> None:
        lower, upper = _count_bounds(self.prior, self.ratio)
        counts = self.counts
        if counts.dtype != np.int64 or counts.shape != self.prior.shape:
            raise DensityRatioError("an integer law needs int64 counts, one per cell")
        if int(counts.sum()) != RESOLUTION or np.any(counts < lower) or np.any(counts > upper):
            raise DensityRatioError(
                f"a sampling density leaves the declared density_ratio (C={self.ratio.upper:g}, "
                f"c={self.ratio.lower:g}) against the prior; it is refused (DP-HyPO's certificate needs "
                "c <= pi/pi0 <= C everywhere)")
        self.counts.setflags(write=False)
        object.__setattr__(self, "_edges", np.cumsum(counts))

    @classmethod
    def from_density(cls, f: np.ndarray, prior: np.ndarray, ratio: DensityRatio) -> IntegerLaw:
        """Round ``f`` to counts inside the count bounds, summing to RESOLUTION (vectorised greedy repair)."""
        prior = np.asarray(prior, dtype=float)
        lower, upper = _count_bounds(prior, ratio)
        if lower.sum() > RESOLUTION or upper.sum() < RESOLUTION:
            raise DensityRatioError(
                "the candidate grid is too fine for the density ratio: some cell's prior mass is below what "
                "2^-40 resolution can bound; use a coarser grid (fewer cells) or a wider density_ratio")
        counts = np.clip(np.rint(np.asarray(f, dtype=float) * RESOLUTION).astype(np.int64), lower, upper)
        missing = RESOLUTION - int(counts.sum())
        if missing > 0:
            counts = counts + _spread(upper - counts, missing)
        elif missing < 0:
            counts = counts - _spread(counts - lower, -missing)
        return cls(counts, prior, ratio)

    @property
    def probabilities(self) -> np.ndarray:
        """The exact cell probabilities (as floats: counts / 2^40 is exact in double precision)."""
        return self.counts / RESOLUTION

    def effective_ratio(self) -> np.ndarray:
        """π / π0 per cell, for the law actually sampled."""
        return self.counts / (RESOLUTION * self.prior)

    def sample(self, rng: np.random.Generator) -> int:
        """One cell index: an integer uniform on [0, 2^40) from ``rng``."""
        draw = int(rng.integers(0, RESOLUTION))
        return int(np.searchsorted(self._edges, draw, side="right"))


def _count_bounds(prior: np.ndarray, ratio: DensityRatio) -> tuple[np.ndarray, np.ndarray]:
    scaled = np.asarray(prior, dtype=float) * RESOLUTION
    lower = np.ceil(ratio.lower * scaled * (1 + _MARGIN)).astype(np.int64)
    upper = np.floor(np.minimum(ratio.upper * scaled * (1 - _MARGIN), RESOLUTION)).astype(np.int64)
    return lower, upper


def _spread(room: np.ndarray, amount: int) -> np.ndarray:
    """Add ``amount`` units over cells with ``room``, filling them in order (room.sum() >= amount)."""
    cumulative = np.cumsum(room)
    return np.clip(amount - (cumulative - room), 0, room)


def prior_only(ratio: DensityRatio) -> bool:
    """True when c == 1 or C == 1: then c π0 <= f, Σ f = Σ π0 = 1 (or f <= π0) forces f = π0."""
    return ratio.lower >= 1.0 or ratio.upper <= 1.0 or math.isclose(ratio.log_ratio, 0.0)
