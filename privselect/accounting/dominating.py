"""Any privacy profile as a composable mechanism: a discrete dominating pair by connecting the dots.

Koskela, Redberg, Wang (2024, Sec. 6.2) remark that a dominating pair can be built numerically
from a privacy profile with the method of Doroshenko, Ghazi, Kamath, Kumar, Manurangsi
("Connect the dots: tighter discrete approximations of privacy loss distributions", PETS 2022),
and then composed. [`ProfileMechanism`][privselect.accounting.dominating.ProfileMechanism] does this for any [`PrivacyProfile`][privselect.accounting.dominating.PrivacyProfile] (a
mechanism's, a selection procedure's, a K-mixture's, one restored from a certificate), so a
selection certificate composes with the rest of a pipeline.

Why it is sound (the proof the construction relies on)
------------------------------------------------------
Write ``x = e^eps`` and, for a pair (P, Q), ``f(x) = H_x(P || Q) = sup_S P(S) - x Q(S)``.

1. *Hockey-stick curves.* ``f`` is a hockey-stick curve of some pair if and only if it is
   convex and non-increasing on [0, inf), with ``f(0) = 1`` and ``f(x) >= 1 - x``. Necessity:
   ``f(x) = P[q = 0] + E_Q[(R - x)_+]`` with ``R = p/q``, a convex, non-increasing function
   with ``f(0) = 1`` and ``-f'(x+) = Q[R > x] <= 1``. Sufficiency: let ``Q[R > x] = -f'(x+)``
   (a survival function of an ``R >= 0``; ``Q[R = 0] = 1 + f'(0+)``), give P the density
   ``R`` against Q plus an atom ``f(inf) = lim f`` where Q has no mass; then
   ``E_Q[R] = f(0) - f(inf)``, P has mass 1 and ``H_x(P || Q) = f(inf) + int_x^inf Q[R > t] dt
   = f(x)``. The privacy loss ``log R`` then has atoms at ``+inf`` (P-mass ``f(inf)``) and
   ``-inf`` (Q-mass ``1 + f'(0+)``).
2. *Envelopes stay upper bounds.* Let ``U >= f`` pointwise (any certified upper curve). The
   lower convex envelope ``conv U`` is the largest convex function below ``U``; ``f`` is one of
   them, so ``f <= conv U <= U``: the envelope is still an upper bound, and it is tighter than
   ``U``. It is a hockey-stick curve by 1: convex by construction; ``conv U (0) = 1`` because
   ``f(0) = 1 <= conv U (0) <= U(0) = 1``; non-increasing, because a convex function bounded
   above on [0, inf) cannot increase; ``conv U (x) >= f(x) >= 1 - x``.
3. *Connecting the dots on a finite grid.* Only finitely many values ``U(x_j)`` are used, with
   ``U = +inf`` elsewhere. The envelope of the points is the piecewise-linear function through
   its vertices; every chord of the convex ``f`` lies ABOVE ``f`` between its end points, so
   ``f <= conv{(x_j, U(x_j))}`` on [x_min, x_max]: the discretisation over-approximates and is
   sound by construction (it needs no added error term; it costs only tightness, which the grid
   spacing controls). Left of the grid the envelope runs to ``(0, 1)``; right of the largest
   grid point it continues flat at ``U(x_max)``, which bounds ``f`` there since ``f`` is
   non-increasing. That flat tail is the atom at ``+inf`` privacy loss with P-mass ``U(x_max)``.
   Before the envelope, ``U`` on ``x >= 1`` is replaced by its running minimum (still an upper
   bound, as ``f`` is non-increasing).
4. *Both neighbouring directions.* For neighbouring data sets with outputs (A, B) (remove
   direction: A = with the record), ``H_x(A || B) = 1 - x + x H_{1/x}(B || A)``. So the remove
   curve on ``eps < 0`` is fixed by the add curve on ``-eps > 0``. The points used are
   ``U(e^eps) = delta_remove(eps)`` for ``eps >= 0`` and ``U(e^eps) = 1 - e^eps + e^eps
   delta_add(-eps)`` for ``eps < 0`` (at ``eps = 0`` the smaller of the two: TV is symmetric).
   The pair (P, Q) built from them dominates the remove direction on the whole line, and its
   swap (Q, P) dominates the add direction. A symmetric bound (one curve for both directions)
   gives a symmetric pair (the grid is symmetric in eps), used for both directions;
   direction-specific curves (``remove`` and ``add``) give one pair per direction, each other's
   swap. Dominating in every hockey-stick divergence on the whole line is what the composition
   theorem (Zhu, Dong, Wang 2022, Thm 10) and the subsampling theorem (their Thm 11(1): the
   Poisson-subsampled pairs are ``(q P + (1-q) Q, Q)`` for remove and its swap for add) need.

Rounding. The envelope, its slopes and the masses are computed in extended precision
(``np.longdouble``, a 64-bit significand on x86) in a representation that keeps relative
accuracy in both tails: the Q-CDF on the negative side (from ``U - (1 - x)``), the Q-survival
function on the positive side (from ``U``). The float64 masses and their cumulative sums (also
summed in extended precision) are within a few units in the last place of the exact pair's.
The input values are raised by a relative 1e-12 before the envelope is taken (still upper
bounds), which covers that rounding with a wide margin: the float pair's curve is on or above
the input curve at every vertex of the envelope.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy import special

from .. import _validation as check
from ..mechanisms import POISSON_BASES, Mechanism
from .plrv import Atoms, DirectedLosses, PrivacyLoss, privacy_losses, subsampled_loss
from .profile import PrivacyProfile

__all__ = ["ProfileMechanism", "PoissonSplit", "DiscreteLoss", "connect_the_dots_grid", "dominating_loss",
           "split_losses"]

_LD = np.longdouble
#: Grid points per side (eps > 0 and eps < 0) of the connect-the-dots grid.
DEFAULT_POINTS = 1000
#: The grid ends where the profile's upper curve drops to this (or stops decreasing).
DEFAULT_TAIL = 1e-30
#: The grid is dense up to where the upper curve drops to this; beyond it (deltas that matter
#: only after very many compositions) a quarter as many points reach the tail.
_DENSE_TAIL = 1e-12
#: Relative margin added to the upper curve before the envelope: it absorbs the rounding of the
#: construction (~1e-16 relative), so the float pair's curve is >= the input at every vertex.
_MARGIN = 1e-12
#: Longest grid: eps beyond this is never needed (e^eps overflows long before).
_MAX_EPS = 700.0


@dataclass(frozen=True, eq=False)
class DiscreteLoss(PrivacyLoss):
    """Privacy loss ``L = log(p/q)`` of a pair of discrete distributions with atoms at +-inf.

    ``locations`` (ascending, finite) carry P-masses ``primary`` and Q-masses ``secondary``;
    P puts ``inf_mass`` at ``L = +inf`` (where Q has none) and Q puts ``neg_inf_mass`` at
    ``L = -inf`` (where P has none). Exact hockey-stick curve:
    ``H_{e^eps}(P || Q) = inf_mass + sum_i p_i (1 - e^{eps - l_i})_+``.
    """

    locations: np.ndarray
    primary: np.ndarray
    secondary: np.ndarray
    inf_mass: float = 0.0
    neg_inf_mass: float = 0.0
    # cumulative sums of the masses, set by __post_init__: P and Q cdf (from the left) and sf (from the right)
    _cdf_p: np.ndarray = field(init=False, repr=False)
    _cdf_q: np.ndarray = field(init=False, repr=False)
    _sf_p: np.ndarray = field(init=False, repr=False)
    _sf_q: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        for name in ("locations", "primary", "secondary"):
            arr = np.array(getattr(self, name), dtype=float)
            arr.setflags(write=False)
            object.__setattr__(self, name, arr)
        # cumulative sums in extended precision, then rounded once: cdf from the left, sf from the right
        for name, masses in (("_cdf_p", self.primary), ("_cdf_q", self.secondary)):
            object.__setattr__(self, name, np.concatenate([[0.0], np.cumsum(masses.astype(_LD)).astype(float)]))
        for name, masses in (("_sf_p", self.primary), ("_sf_q", self.secondary)):
            tail = np.cumsum(masses[::-1].astype(_LD))[::-1].astype(float)
            object.__setattr__(self, name, np.concatenate([tail, [0.0]]))

    @property
    def secondary_neg_inf_mass(self) -> float:
        return self.neg_inf_mass

    @property
    def support(self) -> tuple[float, float]:
        if not self.locations.size:
            return (0.0, 0.0)
        return (float(self.locations[0]), float(self.locations[-1]))

    def _index(self, x) -> np.ndarray:
        return np.searchsorted(self.locations, np.asarray(x, dtype=float), side="right")

    def cdf(self, x):
        return self._cdf_p[self._index(x)]

    def sf(self, x):
        return self._sf_p[self._index(x)]

    def cdf_secondary(self, x):
        return self._cdf_q[self._index(x)]

    def sf_secondary(self, x):
        return self._sf_q[self._index(x)]

    def atoms(self) -> Atoms:
        return Atoms(self.locations, self.primary, self.secondary)

    def log_phi(self, z):
        z = np.asarray(z, dtype=complex)
        keep = self.primary > 0
        if not keep.any():
            return np.full(z.shape, -np.inf + 0j)
        terms = np.log(self.primary[keep])[None, :] + 1j * z.reshape(-1, 1) * self.locations[keep][None, :]
        return special.logsumexp(terms, axis=1).reshape(z.shape)

    def continuous_variation(self) -> float:
        """Purely atomic: no continuous part."""
        return 0.0

    def log_fourier_envelope(self, v, u):
        """Purely atomic: no continuous part."""
        return np.full(np.shape(u), -np.inf)

    # -- exact views ----------------------------------------------------------------------

    def delta(self, eps) -> np.ndarray:
        """Exact H_{e^eps}(P || Q) of this pair (vectorised; rounding of the float sum only)."""
        e = np.asarray(eps, dtype=float)
        with np.errstate(over="ignore"):
            gain = -np.expm1(np.minimum(e.reshape(-1, 1) - self.locations[None, :], 0.0))
        return (self.inf_mass + (self.primary[None, :] * gain).sum(axis=1)).reshape(e.shape)

    def swapped(self) -> DiscreteLoss:
        """The loss of the swapped pair (Q, P): ``-L``, primary and secondary exchanged."""
        return DiscreteLoss(-self.locations[::-1], self.secondary[::-1], self.primary[::-1],
                            inf_mass=self.neg_inf_mass, neg_inf_mass=self.inf_mass)

    def renyi(self, orders: np.ndarray) -> np.ndarray:
        """Renyi divergence D_a(P || Q) at each order a > 1 (+inf if P has mass at +inf)."""
        a = np.asarray(orders, dtype=float)
        if self.inf_mass > 0:
            return np.full(a.shape, np.inf)
        keep = (self.primary > 0) & (self.secondary > 0)
        logp, logq = np.log(self.primary[keep]), np.log(self.secondary[keep])
        flat = a.reshape(-1, 1)
        log_moment = special.logsumexp(flat * logp[None, :] + (1 - flat) * logq[None, :], axis=1)
        return (np.maximum(log_moment, 0.0) / (a.reshape(-1) - 1)).reshape(a.shape)

    def poisson_subsampled(self, rate: float, direction: str) -> DiscreteLoss:
        """Exact loss of the Poisson-subsampled pair (Zhu, Dong, Wang 2022, Thm 11(1)).

        remove: ``(M, Q)`` with ``M = rate P + (1 - rate) Q``, loss ``log(1 - rate + rate e^L)``
        (the atom at ``-inf`` moves to ``log(1 - rate)``); add: the swap ``(Q, M)``.
        """
        q = float(rate)
        if q == 1.0:
            return self if direction == "remove" else self.swapped()
        with np.errstate(over="ignore"):
            locs = np.logaddexp(math.log1p(-q), math.log(q) + self.locations)
        mixed = q * self.primary + (1 - q) * self.secondary
        locs = np.concatenate([[math.log1p(-q)], locs])
        prim = np.concatenate([[(1 - q) * self.neg_inf_mass], mixed])
        sec = np.concatenate([[self.neg_inf_mass], self.secondary])
        keep = (prim > 0) | (sec > 0)
        remove = DiscreteLoss(locs[keep], prim[keep], sec[keep], inf_mass=q * self.inf_mass, neg_inf_mass=0.0)
        return remove if direction == "remove" else remove.swapped()


@subsampled_loss.register
def _(base: DiscreteLoss, rate: float, direction: str) -> PrivacyLoss:
    return base.poisson_subsampled(rate, direction)


# ----------------------------------------------------------------------------------------
# Profile -> dominating pair
# ----------------------------------------------------------------------------------------


def _lower_hull(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> list[int]:
    """Indices of the lower convex hull of the points (x_i, y_i), x ascending (monotone chain).

    ``w = y - (1 - x)`` is the same point set minus a linear function, used for the turn test
    when all three points lie at x <= 1 (where y is close to 1 - x and the test needs the
    small part); subtracting a linear function does not change which points are vertices.
    """
    xs, ys, ws = x.tolist(), y.tolist(), w.tolist()
    hull: list[int] = []
    for k in range(len(xs)):
        while len(hull) >= 2:
            i, j = hull[-2], hull[-1]
            vals = ws if xs[k] <= 1 else ys
            # j is not a vertex if it lies on or above the chord from i to k
            if (vals[j] - vals[i]) * (xs[k] - xs[i]) >= (vals[k] - vals[i]) * (xs[j] - xs[i]):
                hull.pop()
            else:
                break
        hull.append(k)
    return hull


def _grid_end(upper, tail: float) -> float:
    """The smallest eps on a fine ladder where ``upper`` is <= tail or has stopped decreasing."""
    ladder = np.concatenate([np.linspace(0.01, 1.0, 100), np.geomspace(1.0, _MAX_EPS, 400)[1:]])
    values = np.minimum.accumulate(np.asarray(upper(ladder), dtype=float))
    floor = values[-1]
    done = (values <= tail) | (values <= floor * (1 + 1e-9))
    return float(ladder[int(np.argmax(done))])


def connect_the_dots_grid(upper_remove, upper_add, *, points: int = DEFAULT_POINTS,
                          tail: float = DEFAULT_TAIL) -> np.ndarray:
    """The eps >= 0 grid of the construction: ``points`` uniform steps up to where both upper
    curves drop to 1e-12 (or stop decreasing), then ``points // 4`` uniform steps on to where
    they drop to ``tail``. Any ascending grid from 0 is sound; a finer one is tighter where
    the deltas that a composition or a certificate reads lie."""
    def end(level: float) -> float:
        return max(_grid_end(upper_remove, level), _grid_end(upper_add, level))

    eps_max = end(tail)
    dense_end = min(end(max(_DENSE_TAIL, tail)), eps_max)
    dense = np.linspace(0.0, dense_end, points + 1)
    if eps_max <= dense_end * (1 + 1e-12):
        return dense
    return np.concatenate([dense, np.linspace(dense_end, eps_max, max(points // 4, 1) + 1)[1:]])


def dominating_loss(upper_remove, upper_add, eps: np.ndarray) -> DiscreteLoss:
    """The privacy loss of a discrete pair dominating the remove direction (module docstring).

    ``upper_remove`` / ``upper_add``: vectorised certified upper curves delta(eps), eps >= 0, of
    the two directions (the same function for a symmetric bound), connected on the grid
    ``-eps[::-1], eps`` (``eps`` ascending from 0, e.g. [`connect_the_dots_grid`][privselect.accounting.dominating.connect_the_dots_grid]).
    """
    eps = np.asarray(eps, dtype=float)
    if eps.ndim != 1 or eps.size < 2 or eps[0] != 0.0 or np.any(np.diff(eps) <= 0):
        raise ValueError("eps must be an ascending grid starting at 0")
    points = eps.size - 1
    u_r = np.minimum.accumulate(np.clip(np.asarray(upper_remove(eps), dtype=float), 0.0, 1.0))
    u_a = np.minimum.accumulate(np.clip(np.asarray(upper_add(eps), dtype=float), 0.0, 1.0))
    u_r[0] = u_a[0] = min(u_r[0], u_a[0])  # both bound TV = H_1
    # a relative margin far above the rounding of the construction (see the module docstring)
    u_r, u_a = np.minimum(u_r * (1 + _MARGIN), 1.0), np.minimum(u_a * (1 + _MARGIN), 1.0)
    # points: (0, 1), then eps = -eps_max..eps_max; w = U - (1 - x)
    le = np.concatenate([-eps[:0:-1], eps]).astype(_LD)
    x = np.exp(le)
    x_left = x[:points]
    w_left = x_left * u_a[:0:-1].astype(_LD)
    y_left = (1 - x_left) + w_left
    y_right = u_r.astype(_LD)
    w_right = y_right - (1 - x[points:])
    xs = np.concatenate([np.zeros(1, dtype=_LD), x])
    ys = np.concatenate([np.ones(1, dtype=_LD), y_left, y_right])
    ws = np.concatenate([np.zeros(1, dtype=_LD), w_left, w_right])
    hull = np.asarray(_lower_hull(xs, ys, ws))
    hx, hy, hw = xs[hull], ys[hull], ws[hull]
    dx = np.diff(hx)
    # Slope s of each edge, kept as the Q-CDF t = 1 + s (accurate where t is small: edges ending
    # at x <= 1, from w) and the Q-survival S = -s (accurate where S is small: elsewhere, from y).
    left_edge = hx[1:] <= 1
    slope = np.diff(hy) / dx
    t = np.where(left_edge, np.diff(hw) / dx, 1 + slope)
    surv = np.where(left_edge, 1 - t, -slope)
    t, surv = np.clip(t, 0, 1), np.clip(surv, 0, 1)
    # Q-mass at each interior hull vertex: the jump of the slope, from the accurate side.
    vertex_left = hx[1:-1] < 1
    q_mass = np.where(vertex_left, np.diff(t), -np.diff(surv))
    q_last = surv[-1]  # the final flat piece has slope 0
    q_all = np.maximum(np.concatenate([q_mass, [q_last]]), 0)
    locs = np.log(hx[1:])
    p_all = hx[1:] * q_all
    keep = (q_all > 0) | (p_all > 0)
    return DiscreteLoss(
        locations=locs[keep].astype(float),
        primary=p_all[keep].astype(float),
        secondary=q_all[keep].astype(float),
        inf_mass=float(hy[-1]),
        neg_inf_mass=float(t[0]),
    )


def _direction_curves(profile: PrivacyProfile):
    """(upper remove, upper add, symmetric?): the direction-specific curves where the profile has them."""
    by_direction = {c.direction: c for c in profile.curves}
    if len(profile.curves) == 2 and set(by_direction) == {"remove", "add"}:
        up = lambda c: (lambda e: c.delta_bounds(np.asarray(e, dtype=float))[1])  # noqa: E731
        return up(by_direction["remove"]), up(by_direction["add"]), False
    both = lambda e: profile.delta(np.asarray(e, dtype=float))  # noqa: E731
    return both, both, True


@dataclass(frozen=True, eq=False)
class ProfileMechanism(Mechanism):
    """A mechanism known only through a certified privacy profile, as a composable description.

    Its dominating pair is a discrete pair built from the profile's certified upper curve by
    connecting the dots (Doroshenko, Ghazi, Kamath, Kumar, Manurangsi, PETS 2022) on the lower
    convex envelope in the e^eps coordinate; the pair's hockey-stick curve lies on or above the
    profile's upper curve everywhere (proof in [`privselect.accounting.dominating`][privselect.accounting.dominating]). It
    composes (``compose``, [`privselect.compose`][privselect.mechanisms.compose]), Poisson-subsamples (the record-level
    subsample of the whole procedure the profile describes; add/remove neighbours) and is read
    by the accountants like any other mechanism (PRV and RDP; the CF accountant composes at
    most two atoms and declines it).

    ``points`` uniform grid steps per side of eps = 0 up to where the upper curve drops to 1e-12,
    then ``points // 4`` more up to ``eps_max`` (an attribute), where it drops to ``tail`` (or stops
    decreasing); ``grid`` holds the eps >= 0 points. A finer grid is tighter; every grid is sound.

    >>> import privselect as ps
    >>> step = ProfileMechanism(ps.gdp_profile(0.5))
    >>> eps = ps.privacy_profile(step.compose(4)).epsilon(1e-5)
    >>> bool(ps.gdp_profile(1.0).epsilon(1e-5) <= eps < 1.005 * ps.gdp_profile(1.0).epsilon(1e-5))
    True
    """

    profile: PrivacyProfile
    points: int = DEFAULT_POINTS
    tail: float = DEFAULT_TAIL
    losses: DirectedLosses = field(init=False, repr=False)
    eps_max: float = field(init=False, repr=False)
    grid: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.profile, PrivacyProfile):
            raise TypeError(f"profile must be a PrivacyProfile, got {type(self.profile).__name__}")
        points = check.positive_int("points", self.points)
        if points < 16:
            raise ValueError(f"points must be >= 16, got {self.points!r}")
        object.__setattr__(self, "points", points)
        tail = check.real("tail", self.tail)
        if not 0 < tail < 1:
            raise ValueError(f"tail must be in (0, 1), got {self.tail!r}")
        object.__setattr__(self, "tail", tail)
        remove, add, symmetric = _direction_curves(self.profile)
        grid = connect_the_dots_grid(remove, add, points=points, tail=tail)
        loss = dominating_loss(remove, add, grid)
        object.__setattr__(self, "grid", grid)
        object.__setattr__(self, "eps_max", float(grid[-1]))
        losses = DirectedLosses(loss, loss) if symmetric else DirectedLosses(loss, loss.swapped())
        object.__setattr__(self, "losses", losses)

    @property
    def discrete_losses(self) -> tuple[DiscreteLoss, DiscreteLoss]:
        """``losses`` (remove, add) as built: the dominating pair's discrete privacy losses."""
        remove, add = self.losses.remove, self.losses.add
        assert isinstance(remove, DiscreteLoss) and isinstance(add, DiscreteLoss)  # __post_init__ builds them
        return remove, add

    @property
    def is_symmetric(self) -> bool:
        return self.losses.is_symmetric

    def __repr__(self) -> str:
        label = self.profile.description or self.profile.accountant
        return f"ProfileMechanism({label!r})"


@privacy_losses.register
def _(mechanism: ProfileMechanism) -> DirectedLosses:
    return mechanism.losses


POISSON_BASES.append(ProfileMechanism)


# ----------------------------------------------------------------------------------------
# Splitting the records between two mechanisms
# ----------------------------------------------------------------------------------------


def _rounded_up(loss: np.ndarray, prim: np.ndarray, sec: np.ndarray, inf_mass: float, neg_inf_mass: float,
                mesh: float) -> DiscreteLoss:
    """The atoms' losses rounded UP to ``mesh Z``, P-masses kept, each cell's Q-mass ``P e^{-loss}``.

    That Q-mass is at most the exact one; the rest goes to -inf. The curve ``P[inf] + E_P[(1 -
    e^{eps - L})_+]`` only grows, for every real eps, so the rounded pair dominates the exact one
    in this direction (the pessimistic rounding of Meiser, Mohammadi 2018; at most ``mesh`` in eps).
    """
    finite = np.isfinite(loss) & (prim > 0)
    neg_inf = neg_inf_mass + float(sec[~finite].sum())
    cell = np.ceil(loss[finite] / mesh).astype(np.int64)
    lo = int(cell.min())
    p_cells = np.bincount(cell - lo, weights=prim[finite])
    q_exact = np.bincount(cell - lo, weights=sec[finite])
    locations = (lo + np.arange(p_cells.size)) * mesh
    keep = p_cells > 0
    q_cells = np.minimum(p_cells * np.exp(-locations), q_exact)[keep]
    neg_inf += float(q_exact.sum() - q_cells.sum())
    return DiscreteLoss(locations[keep], p_cells[keep], q_cells, inf_mass=inf_mass, neg_inf_mass=neg_inf)


def split_losses(first: DiscreteLoss, second: DiscreteLoss, rate: float, mesh: float) -> DirectedLosses:
    """Losses of the pair ``(r P1 x Q2 + (1-r) Q1 x P2, Q1 x Q2)`` (r = ``rate``) and of its swap.

    Pair i is ``(P_i, Q_i)`` (its loss ``first`` / ``second``). With likelihood ratios R1, R2,
    independent under Q1 x Q2, the loss is ``log(r R1 + (1-r) R2)``; P-masses at +inf combine to
    ``r P1[inf] + (1-r) P2[inf]``. Each direction is then rounded up to ``mesh`` on its own (see
    `_rounded_up`: rounding one direction's losses up is the other's rounded down).
    """
    r = float(rate)
    lr, l1r = math.log(r), math.log1p(-r)
    # states of each side: its atoms, then the atom at -inf (P-mass 0); +inf is carried apart
    loc1 = np.append(first.locations, -np.inf)
    p1, q1 = np.append(first.primary, 0.0), np.append(first.secondary, first.neg_inf_mass)
    loc2 = np.append(second.locations, -np.inf)
    p2, q2 = np.append(second.primary, 0.0), np.append(second.secondary, second.neg_inf_mass)
    loss = np.logaddexp.outer(lr + loc1, l1r + loc2).ravel()
    prim = (r * np.outer(p1, q2) + (1 - r) * np.outer(q1, p2)).ravel()
    sec = np.outer(q1, q2).ravel()
    inf_mass = r * first.inf_mass + (1 - r) * second.inf_mass
    remove = _rounded_up(loss, prim, sec, inf_mass, 0.0, mesh)
    with np.errstate(invalid="ignore"):
        add = _rounded_up(-loss, sec, prim, 0.0, inf_mass, mesh)
    return DirectedLosses(remove, add)


@dataclass(frozen=True, eq=False)
class PoissonSplit(Mechanism):
    """Each record joins the data of ``first`` with probability ``rate``, otherwise that of ``second``.

    The split is drawn once, independently of the data; ``second`` may depend on ``first``'s
    output (e.g. tune on a subsample, then train the final model on the complement, Koskela,
    Kulkarni 2023). Under add/remove neighbours the added record changes exactly one part, so
    with dominating pairs (P1, Q1), (P2, Q2) of the two parts (built from their profiles as in
    [`ProfileMechanism`][privselect.accounting.dominating.ProfileMechanism]) the pair ``(r P1 x Q2 + (1-r) Q1 x P2, Q1 x Q2)`` dominates the
    remove direction and its swap the add direction: if ``(A1, B1)`` and every ``(A2^t, B2^t)``
    are post-processings of the pairs by Markov kernels K1 and K2^t (Blackwell), then the kernel
    "t ~ K1, then K2^t" maps the mixture pair to the mechanism's output pair for a fixed split
    of the other records, and joint convexity of the hockey-stick divergence covers the average
    over those splits. Losses are rounded up to ``mesh`` (see [`split_losses`][privselect.accounting.dominating.split_losses]).
    """

    first: PrivacyProfile
    second: PrivacyProfile
    rate: float
    points: int = 600
    mesh: float = 1e-3
    losses: DirectedLosses = field(init=False, repr=False)

    def __post_init__(self) -> None:
        for name in ("first", "second"):
            if not isinstance(getattr(self, name), PrivacyProfile):
                raise TypeError(f"{name} must be a PrivacyProfile, got {type(getattr(self, name)).__name__}")
        rate = check.open_unit("rate", self.rate)
        object.__setattr__(self, "rate", rate)
        object.__setattr__(self, "mesh", check.positive("mesh", self.mesh))
        first, second = (ProfileMechanism(p, points=self.points).discrete_losses[0] for p in (self.first, self.second))
        object.__setattr__(self, "losses", split_losses(first, second, rate, self.mesh))

    @property
    def is_symmetric(self) -> bool:
        return False

    def __repr__(self) -> str:
        labels = [p.description or p.accountant for p in (self.first, self.second)]
        return f"PoissonSplit({labels[0]!r}, {labels[1]!r}, rate={self.rate:g})"


@privacy_losses.register
def _(mechanism: PoissonSplit) -> DirectedLosses:
    return mechanism.losses
