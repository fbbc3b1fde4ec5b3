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
* Optimistic (`_tangent_law`): on each segment [x_{i-1}, x_i] a line below delta, the tangent at the half-grid
  point (the Neyman-Pearson line P(L > m) - x Q(L > m) of the test {L > m}), or the tangent at -inf,
  1 - x Q(L finite), where the half-grid tangent would fall below it at x_{i-1}; values
  v_i = min of the two adjacent segments' lines at x_i, so every chord lies below its segment's line; the law is
  the greatest convex minorant of (0, 1) and the (x_i, v_i). It keeps the mass and Q-mass of the true law (its
  curve starts as 1 - x Q(L finite)), so it is a mean-preserving contraction in e^{-L} and its error is of second
  order in h, as the pessimistic law's (lowering values by a chord gap, as before, lost mass to -inf: ~1e-6
  per step of a Poisson-subsampled Gaussian at q = 1e-4, which composed 1e6 times left a third of the mass).

Composition keeps both relations (the composed delta is E_{L_1}[delta_2(eps - L_1)] with non-negative weights,
monotone in each factor's curve: Zhu, Dong, Wang 2022, Lemma 7).
The single-step values use ``sf`` and ``sf_secondary`` of the loss, evaluated at arguments moved to the safe side by
the loss's backward error (``PrivacyLoss.argument_error``: the subsampled loss's inverse map), with a forward
relative error of at most `SF_REL_ERROR` added (upper) or subtracted (lower).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
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
    #: The optimistic law's curve is at most ``lower_excess`` x delta (1 up to the checked rounding).
    lower_excess: float = 1.0


def tails(loss: PrivacyLoss, at: np.ndarray, side: str) -> tuple[np.ndarray, np.ndarray]:
    """(P(L > m), Q(L > m)) at m = ``at`` as computed, moved by the loss's argument error to the safe side: both
    rounded up in P and down in Q (``side="upper"``: an upper bound on P(L > m) - x Q(L > m)), or the reverse."""
    move = loss.argument_error(at)
    sign = -1.0 if side == "upper" else 1.0
    with np.errstate(over="ignore", invalid="ignore"):
        p = np.asarray(loss.sf(at + sign * move), dtype=float)
        q = np.asarray(loss.sf_secondary(at - sign * move), dtype=float)
    return p, q


def grid_delta(loss: PrivacyLoss, eps: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(lower, upper) bounds on delta(eps) = P(L = inf) + P(L > eps) - e^eps Q(L > eps) of one step at each eps,
    and the tails P(L > eps) (rounded down) and Q(L > eps) (rounded up) at the lower bound."""
    # sf and sf_secondary at eps - move are P and Q rounded up, at eps + move both rounded down (as in `tails`)
    move = loss.argument_error(eps)
    with np.errstate(over="ignore", invalid="ignore"):
        p_up, q_up = (np.asarray(t, dtype=float) for t in loss.tail_pair(eps - move))
        p_down, q_down = p_up, q_up
        if np.any(move):
            p_down, q_down = (np.asarray(t, dtype=float) for t in loss.tail_pair(eps + move))
        scaled_up, scaled_down = np.exp(eps) * q_up, np.exp(eps) * q_down
        upper = loss.inf_mass + p_up - scaled_down + SF_REL_ERROR * (p_up + scaled_down + loss.inf_mass) + 1e-300
        lower = loss.inf_mass + p_down - scaled_up - SF_REL_ERROR * (p_down + scaled_up + loss.inf_mass) - 1e-300
    upper = np.where(np.isfinite(scaled_down), np.minimum(upper, 1.0), 1.0)
    lower = np.where(np.isfinite(scaled_up), np.maximum(lower, 0.0), 0.0)
    return np.maximum(lower, 1.0 - np.exp(eps)), np.maximum(upper, 1.0 - np.exp(eps)), p_down, q_up


def loss_variance(loss: PrivacyLoss, lower_end: float, upper_end: float) -> float:
    """An estimate (not a bound; it sizes the mesh) of Var_P(L) on its finite part, by the trapezoid rule in
    log l of E L^2 = int_0^inf 2 l (P(L > l) + P(L < -l)) dl and E L = int_0^inf (P(L > l) - P(L < -l)) dl."""
    extent = max(abs(lower_end), abs(upper_end), 1e-300)
    ell = np.geomspace(extent * 1e-12, extent, 600)
    with np.errstate(over="ignore", invalid="ignore"):
        above = np.asarray(loss.sf(ell), dtype=float)
        below = np.asarray(loss.cdf(-ell), dtype=float)
    log_ell = np.log(ell)
    second = float(np.trapezoid(2 * ell * ell * (above + below), log_ell))
    first = float(np.trapezoid(ell * (above - below), log_ell))
    return second - first * first


def grid_indices(h: float, lower_end: float, upper_end: float, regions: Sequence[tuple[float, float, int]] = (),
                 stride: int = 1) -> np.ndarray:
    """The integers i of the grid points i h covering [``lower_end``, ``upper_end``]: the two ends, the multiples of
    ``stride`` between them, and within each region (lo, hi, step) of ``regions`` the multiples of its step (every
    point where ``stride`` is 1)."""
    i0 = int(math.floor(lower_end / h))
    i1 = max(int(math.ceil(upper_end / h)), i0 + 2)
    if stride <= 1:
        return np.arange(i0, i1 + 1, dtype=np.int64)
    keep = np.zeros(i1 - i0 + 1, dtype=bool)  # by point, relative to i0
    keep[[0, -1]] = True
    keep[(-i0) % stride::stride] = True
    for lo, hi, step in regions:
        a, b = max(int(math.floor(lo / h)), i0), min(int(math.ceil(hi / h)), i1)
        if a <= b:
            keep[a - i0 + (-a) % step:b - i0 + 1:step] = True
    return i0 + np.flatnonzero(keep)


def discretise(loss: PrivacyLoss, h: float, lower_end: float, upper_end: float, optimistic: bool = True,
               regions: Sequence[tuple[float, float, int]] = (), stride: int = 1) -> Discretised:
    """Connect-the-dots laws of ``loss`` on the grid h Z between ``lower_end`` and ``upper_end`` (module docstring);
    the optimistic one from the tangent lines of ``loss.optimistic_loss()`` (none where it is None).

    With ``stride`` > 1 the laws are built on the points of `grid_indices`: every ``stride``-th point of h Z, and
    within each of ``regions`` every step-th (the masses returned on all of h Z, 0 at the points skipped). Both
    constructions hold on any increasing grid (DGKKM22, Thm 3.5: chords of a convex curve through points above
    it lie above it; the tangent lines below it, whatever the segments), so the laws bound the loss as on the
    full grid; the coarser segments only add their second-order error (where the step's mass beyond each region is
    small, little of it)."""
    index = grid_indices(h, lower_end, upper_end, regions, stride)
    i0 = int(index[0])
    grid = index * h
    _, up, sf_p, sf_q = grid_delta(loss, grid)
    x = np.exp(grid)
    steps = np.diff(index) * h
    dx = x[:-1] * np.expm1(steps)  # x_i - x_{i-1} without cancellation
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
    lower_loss = loss.optimistic_loss() if optimistic else None
    if lower_loss is None:
        return Discretised(i0, _spread(upper, index), upper_inf, np.zeros(0), 0.0)
    if lower_loss is not loss:
        _, _, sf_p, sf_q = grid_delta(lower_loss, grid)
    lower, excess = _tangent_law(lower_loss, grid, x, dx, steps, sf_p, sf_q)
    return Discretised(i0, _spread(upper, index), upper_inf, _spread(lower, index), 0.0, excess)


def _spread(masses: np.ndarray, index: np.ndarray) -> np.ndarray:
    """The masses at the grid points ``index`` h, on every point of h Z from the first to the last (0 between)."""
    if index.size == int(index[-1] - index[0]) + 1:
        return masses
    out = np.zeros(int(index[-1] - index[0]) + 1)
    out[index - index[0]] = masses
    return out


def _tangent_values(loss: PrivacyLoss, grid: np.ndarray, x: np.ndarray, steps: np.ndarray, sf_p: np.ndarray,
                    sf_q: np.ndarray) -> np.ndarray:
    """Values v_i <= delta(x_i) such that the chord of every segment lies below a line that lies below delta.

    Every test {L > m} gives such a line, t_m(x) = P(L > m) + P(L = inf) - x Q(L > m) (Neyman-Pearson), and so
    does r(x) = 1 - x Q(L finite) (m = -inf). Segment i = [x_{i-1}, x_i] takes, in this order, the first line
    that is >= r at x_{i-1} (no mass is lost to -inf) and >= 0 at x_i (the values stay >= 0): t at the half-grid
    point, t at l_{i-1} (always >= r at x_{i-1}), r; else the first that is >= 0 at x_i: t at l_i, the zero line.
    Then v_i = min(line_i(x_i), line_{i+1}(x_i)) puts both ends of each chord below that segment's line."""
    p_mid, q_mid = tails(loss, grid[:-1] + 0.5 * steps, "lower")
    inf = float(loss.inf_mass)
    finite = 1.0 - float(loss.secondary_neg_inf_mass)

    def tangent(p: np.ndarray, q: np.ndarray, at: np.ndarray) -> np.ndarray:
        # rounded down: SF_REL_ERROR on each tail, a few ulp on the sum; an unknown tail only lowers the line
        p, q = np.where(np.isfinite(p), p, 0.0), np.where(np.isfinite(q), q, 1.0)
        value = inf + p - at * q
        return value - (SF_REL_ERROR + 1e-15) * (inf + p + at * q) - 1e-300

    def reference(at: np.ndarray) -> np.ndarray:
        value = -np.expm1(np.log(at)) if finite == 1.0 else 1.0 - at * finite
        return value - 1e-15 * (np.abs(value) + at) - 1e-300

    xl, xr = x[:-1], x[1:]
    ref_l, ref_r = reference(xl), reference(xr)
    candidates = [(tangent(p_mid, q_mid, xl), tangent(p_mid, q_mid, xr)),
                  (tangent(sf_p[:-1], sf_q[:-1], xl), tangent(sf_p[:-1], sf_q[:-1], xr)),
                  (ref_l, ref_r)]
    left, right = np.zeros(xl.size), np.zeros(xl.size)  # the zero line unless a candidate is taken
    chosen = np.zeros(xl.size, dtype=bool)
    for cand_l, cand_r in candidates:  # mass-keeping candidates first
        take = ~chosen & (cand_l >= ref_l) & (cand_r >= 0)
        left, right, chosen = np.where(take, cand_l, left), np.where(take, cand_r, right), chosen | take
    cand_l, cand_r = tangent(sf_p[1:], sf_q[1:], xl), tangent(sf_p[1:], sf_q[1:], xr)
    take = ~chosen & (cand_r >= 0)
    left, right = np.where(take, cand_l, left), np.where(take, cand_r, right)
    values = np.empty(grid.size)
    values[0] = min(float(ref_l[0]), float(left[0]))
    values[1:-1] = np.minimum(right[:-1], left[1:])
    values[-1] = 0.0  # the zero line beyond the grid (delta >= 0): the last chord ends at 0
    return values


def _tangent_law(loss: PrivacyLoss, grid: np.ndarray, x: np.ndarray, dx: np.ndarray, steps: np.ndarray,
                 sf_p: np.ndarray, sf_q: np.ndarray) -> tuple[np.ndarray, float]:
    """The optimistic law: masses of the greatest convex minorant of (0, 1), (x_i, v_i) (`_tangent_values`),
    its slopes the weighted isotonic regression of the chords' slopes (pool adjacent violators), and the
    relative excess of its curve over the values (rounding), checked at every grid point in long double.

    The minorant is convex, at most each value and 1 at x = 0, and linear between grid points, so it lies
    below the chords, below the segments' lines, below delta (up to the checked excess). Where the values
    follow r(x) up to the first mass, its slope at 0 is -Q(L finite): no mass is lost to -inf, so composing
    it does not drift (the old lowered chords lost ~1e-6 of mass per step of a subsampled Gaussian at
    q = 1e-4, i.e. all but e^{-1} of the composed mass at 1e6 steps)."""
    values = _tangent_values(loss, grid, x, steps, sf_p, sf_q)
    ys = np.concatenate([[1.0], values])
    widths = np.concatenate([[x[0]], dx])
    chords = np.diff(ys) / widths
    from scipy.optimize import isotonic_regression  # lazily: scipy.optimize is a tenth of a second of import
    slopes = isotonic_regression(chords, weights=widths, increasing=True).x
    slopes = np.maximum.accumulate(np.minimum(slopes, 0.0))
    kinks = np.diff(np.concatenate([slopes, [0.0]]))
    masses = x * np.maximum(kinks, 0.0)
    # the curve of the masses at each grid point, without cancellation: with S1_m = sum_{k > m} w_k / x_k (the
    # slope's modulus on (x_m, x_{m+1}]), curve_i = sum_{m >= i} S1_m (x_{m+1} - x_m), sums of non-negative
    # terms in long double (relative error <= (2 n + 6) u), the widths and the x_i within a few double ulps
    w = masses.astype(np.longdouble)
    s1 = np.cumsum((w / x.astype(np.longdouble))[::-1])[::-1][1:]  # S1_m, m = 0..n-1
    curve = np.concatenate([np.cumsum((s1 * dx.astype(np.longdouble))[::-1])[::-1], [np.longdouble(0)]])
    unit = float(np.finfo(np.longdouble).eps) / 2
    bound = curve.astype(float) * (1 + (2 * x.size + 6) * unit + 16 * 2.0 ** -53)
    over = bound > values
    if not np.any(over):
        return masses, 1.0
    if np.any(over & ~(values > 0)):
        raise ValueError("the optimistic PLD law exceeds its values where they are 0")
    return masses, float(np.max(bound[over] / values[over]))
