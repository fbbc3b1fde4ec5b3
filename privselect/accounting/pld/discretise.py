"""Connect-the-dots discretisation of one privacy loss on the mesh h Z (Doroshenko, Ghazi, Kamath, Kumar,
Manurangsi 2022, Sec. 3): a pessimistic law, whose hockey-stick curve lies above the true one at every eps,
and an optimistic law, whose curve lies below it.

For masses w_l >= 0 on finite losses l and w_inf at +inf, write
delta_w(eps) = w_inf + sum_l w_l (1 - e^{eps - l})_+; as a function of x = e^eps it is convex and piecewise
linear, with a kink of w_l e^{-l} at x = e^l. The true curve delta(x) of the pair is convex, equals 1 at
x = 0 and is constant beyond the largest loss.

* Pessimistic: the piecewise-linear interpolation in x of upper values v_i >= delta(e^{l_i}) on the grid,
  constant (w_inf = v_n) beyond the last point, and a line to (0, >= 1) before the first (the leftover
  mass sits at l_0, where it changes delta only below l_0). Slopes are made non-decreasing from the right
  (each value only rises), so every kink, i.e. every mass, is >= 0; by convexity the chords lie above
  delta (DGKKM22, Thm 3.5).
* Optimistic: values u_i = delta(e^{l_i}) - max(o_i, o_{i+1}), with o_i the largest gap between the chord of
  segment i and the larger of the tangents at its ends (delta lies above both; o_i <= (x_i - x_{i-1})
  Q(l_{i-1} < L <= l_i) / 4); a convex curve through or below (x_i, max(u_i, 0)) (1 at x = 0, 0 beyond l_n) lies below
  the chords lowered by the gap, hence below delta. The convex curve taken below the points: slopes
  made non-decreasing from the left (`_below_masses`), each value only falls.

Composition keeps both relations (the composed delta is E_{L_1}[delta_2(eps - L_1)] with non-negative weights,
monotone in each factor's curve: Zhu, Dong, Wang 2022, Lemma 7).
The single-step values use ``sf`` and ``sf_secondary`` of the loss, whose relative error is taken to be at most
`SF_REL_ERROR` (the same assumption as the PRV accountant's cell masses); it is added (upper) or subtracted (lower).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..plrv import PrivacyLoss

#: Assumed relative error of a loss's ``sf``/``sf_secondary`` (scipy's ndtr/log_ndtr: a few ulp; 450 ulp here).
SF_REL_ERROR = 1e-13


@dataclass(frozen=True)
class Discretised:
    """Masses on l = (i0 + j) h, j = 0..n-1, and at +inf, of the pessimistic (``upper``) and optimistic law."""

    i0: int
    upper: np.ndarray
    upper_inf: float
    lower: np.ndarray
    lower_inf: float


def grid_delta(loss: PrivacyLoss, eps: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(lower, upper) bounds on delta(eps) of one step at each eps, and Q(L > eps)."""
    with np.errstate(over="ignore", invalid="ignore"):
        sf_p = np.asarray(loss.sf(eps), dtype=float)
        sf_q = np.asarray(loss.sf_secondary(eps), dtype=float)
        scaled = np.exp(eps) * sf_q
        value = loss.inf_mass + sf_p - scaled
        slack = SF_REL_ERROR * (sf_p + scaled + loss.inf_mass) + 1e-300
    scaled_ok = np.isfinite(scaled)
    upper = np.where(scaled_ok, np.minimum(value + slack, 1.0), 1.0)
    lower = np.where(scaled_ok, np.maximum(value - slack, 0.0), 0.0)
    return np.maximum(lower, 1.0 - np.exp(eps)), np.maximum(upper, 1.0 - np.exp(eps)), sf_q


def discretise(loss: PrivacyLoss, h: float, lower_end: float, upper_end: float) -> Discretised:
    """Connect-the-dots laws of ``loss`` on the grid h Z between ``lower_end`` and ``upper_end`` (module docstring)."""
    i0 = int(math.floor(lower_end / h))
    i1 = max(int(math.ceil(upper_end / h)), i0 + 2)
    grid = np.arange(i0, i1 + 1) * h
    low, up, q_tail = grid_delta(loss, grid)
    x = np.exp(grid)
    dx = x[:-1] * math.expm1(h)  # x_i - x_{i-1} without cancellation
    # pessimistic: slopes s_i on (x_{i-1}, x_i], made non-decreasing from the right (values only rise)
    slopes = np.diff(up) / dx
    slopes = np.minimum.accumulate(np.minimum(slopes, 0.0)[::-1])[::-1]
    kinks = np.diff(np.concatenate([slopes, [0.0]]))  # s_{i+1} - s_i at x_1..x_n (s_{n+1} = 0)
    upper = np.zeros(grid.size)
    upper[1:] = x[1:] * np.maximum(kinks, 0.0)
    v0 = up[-1] - float(np.sum(slopes * dx))  # the rebuilt value at x_0 (>= up[0])
    # the line left of x_0 must reach >= 1 at x = 0: the kink at x_0 supplies it
    upper[0] = max(0.0, 1.0 - v0 + slopes[0] * x[0])
    upper_inf = float(up[-1])
    # optimistic: lowered values, their lower convex hull
    # the largest gap between a segment's chord and delta, which lies above both tangents at its ends
    # (slopes a = -Q(L > l_{i-1}) <= b = -Q(L > l_i), subgradients of the convex delta(x)): with chord slope c,
    # it is W (c - a)(b - c) / (b - a) <= W (b - a) / 4, plus the values' and the slopes' rounding margins
    a, b = -q_tail[:-1], -q_tail[1:]
    chord = np.clip(np.diff(0.5 * (low + up)) / dx, a, b)
    spread = b - a
    with np.errstate(invalid="ignore", divide="ignore"):
        gap = np.where(spread > 0, dx * (chord - a) * (b - chord) / spread, 0.0)
    gap = np.minimum(gap, dx * np.maximum(spread, 0.0) / 4) * (1 + 1e-12)
    gap += (up - low)[1:] + (up - low)[:-1] + dx * 4 * SF_REL_ERROR * (np.abs(a) + np.abs(b)) + 1e-300
    worst = np.argsort(gap)[-_REFINED:]
    gap[worst] = np.minimum(gap[worst], _refined_gaps(loss, grid, h, low, worst))
    lowered = low.copy()
    lowered[1:] -= np.maximum(gap, np.concatenate([gap[1:], [0.0]]))
    lowered[0] -= gap[0]
    lowered = np.maximum(lowered, 0.0)
    lowered[-1] = 0.0  # beyond the grid the optimistic law has no mass (its curve is 0 there)
    # before x_0 the curve is the line from (0, 1): it lies below delta if its slope is at most the steepest
    # slope of delta, -Q(L finite) >= -1, i.e. if its value at x_0 is at most 1 - x_0 (and delta >= 1 - x)
    lowered[0] = max(0.0, min(lowered[0], 1.0 - x[0]))
    lower = _below_masses(x, lowered)
    return Discretised(i0, upper, upper_inf, lower, 0.0)


#: Segments (the widest gaps) where the gap is recomputed against the tangents at `_SUBPOINTS` inner points.
_REFINED, _SUBPOINTS = 512, 32


def _refined_gaps(loss: PrivacyLoss, grid: np.ndarray, h: float, low: np.ndarray, segments: np.ndarray) -> np.ndarray:
    """The largest excess of each segment's chord through the lower values over the maximum of the tangents at
    its ends and `_SUBPOINTS` inner points (delta lies above every tangent; the excess of a line over a convex
    piecewise-linear function is largest at one of its vertices, the tangents' intersections). Where a
    segment holds a spike of mass (the lower end of a subsampled mechanism's loss) this is far below W V / 4."""
    frac = np.linspace(0.0, 1.0, _SUBPOINTS + 2)
    z = grid[segments, None] + h * frac[None, :]  # (segments, points): tangent points in eps
    lo_z, _, q_z = grid_delta(loss, z.reshape(-1))
    lo_z, q_z = lo_z.reshape(z.shape), q_z.reshape(z.shape)
    xz = np.exp(z)
    slope = -q_z * (1 + 4 * SF_REL_ERROR)  # subgradients of delta(x) (rounded steeper: the tangent stays below
    # on the right of its point by the slope margin; the margin is added to the gap below)
    lo_z[:, 0], lo_z[:, -1] = low[segments], low[segments + 1]
    # vertices between consecutive tangents k, k+1
    a, b = slope[:, :-1], slope[:, 1:]
    with np.errstate(invalid="ignore", divide="ignore"):
        xv = (lo_z[:, 1:] - lo_z[:, :-1] + a * xz[:, :-1] - b * xz[:, 1:]) / (a - b)
    xv = np.where(np.isfinite(xv), np.clip(xv, xz[:, :-1], xz[:, 1:]), xz[:, :-1])
    x0, x1 = xz[:, :1], xz[:, -1:]
    # on [z_k, z_{k+1}] the bound used is max(T_k, T_{k+1}) (<= delta), convex there: the chord's excess over
    # it is largest at its kink (if inside) or at an end: all three are checked
    excess = np.full(segments.size, -np.inf)
    for point in (xv, xz[:, :-1], xz[:, 1:]):
        env = np.maximum(lo_z[:, :-1] + a * (point - xz[:, :-1]), lo_z[:, 1:] + b * (point - xz[:, 1:]))
        chord = lo_z[:, :1] + (lo_z[:, -1:] - lo_z[:, :1]) * (point - x0) / (x1 - x0)
        excess = np.maximum(excess, np.max(chord - env, axis=1))
    width = (x1 - x0)[:, 0]
    return np.maximum(excess, 0.0) * (1 + 1e-9) + width * 8 * SF_REL_ERROR * np.abs(slope[:, 0]) + 1e-300


def _below_masses(x: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Masses at the grid points of a convex piecewise-linear curve at most ``values`` at every x_i, at most 1
    at x = 0, and 0 from x_n on.

    Anchored at (x_n, 0), with slopes t_i = max_{j <= i} r_j of the chords r_j through (0, 1), (x_i, values_i):
    t is non-decreasing (so every kink, a mass, is >= 0) and t >= r, so the curve, rebuilt from the right,
    lies at or below each point."""
    xs = np.concatenate([[0.0], x])
    ys = np.concatenate([[1.0], values])
    chords = np.diff(ys) / np.diff(xs)
    slopes = np.minimum(np.maximum.accumulate(chords), 0.0)
    kinks = np.diff(np.concatenate([slopes, [0.0]]))  # at x_0..x_n
    return x * np.maximum(kinks, 0.0)
