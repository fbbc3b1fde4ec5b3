"""One random-allocation epoch (k = 1) as a privacy loss *dominated by* it: the t-fold sum of a contraction.

In the notation of `epoch` (S = Y_1 + ... + Y_t, lognormal terms of mean 1, remove: E_Q[(S/t - e^eps)_+], an
increasing convex function of S; add: E_Q[(1 - e^eps S/t)_+], a decreasing convex one, both non-negative):

**The contraction.** Cut the term's range into cells C_j and put each cell's mass at its conditional mean
m_j = E[Y | Y in C_j]: a law below mu in the convex order (Jensen, cell by cell). Moving an atom down keeps it
below mu in the increasing convex order, moving it up in the decreasing convex order, and deleting mass lowers the
mean of every non-negative function; the three orders are closed under sums of independent terms (Mueller,
Stoyan 2002, Thm 1.5.3, 1.5.7 and 1.5.9). So with atoms at mesh points at or below m_j (remove) or at or above it
(add), and masses at most the cells', the t-fold sum has E[phi(S)] at most the epoch's: its curve lies below the
epoch's at every eps (the formula delta(x) = sum over atoms of (P - x Q)_+ holds for sub-probability laws, and
pld's composition is monotone in each factor's curve: Zhu, Dong, Wang 2022, Lemma 7).

**Atoms on the mesh by merging.** The midpoint cells' atoms sit at m_i = y_i + d_i, off their mesh point by
~ g^2 (log f)' / 12, and rounding each to the mesh would cost a first-order bias wherever d_i has the wrong sign.
Instead atom i (its kept part r_i) is merged with a part x_i of its neighbour's atom on the other side of y_i,
x_i = r_i |d_i| / D_i (D_i the neighbour's distance to y_i), so the merged mean is y_i: a contraction again, and
exactly on the mesh. The kept parts solve r = a - (parts taken by neighbours), by fixed-point sweeps; where
neighbours would take more than an atom holds, they merge only their share and move the rest. Only the result
is held to the proofs: every m_i is bracketed from the closed forms (P(C_i) = Phi(z_{i+1}) - Phi(z_i),
E[Y; C_i] = Phi(z_{i+1} - s) - Phi(z_i - s) at the boundaries' computed z, with ndtr's relative error and the
rounding of z - s counted), each x_i is taken from the bracket's worst end so the merged mean lies on y_i or
past it on the side the order allows, an atom with nothing to merge with moves to the mesh point on that side
(cell 0 does, where there is no steep head), and every mass is rounded down.

**The sum.** pld's `compose` in long double, as for the upper law; its l1 error and the mass outside its window
are charged to both tails of the loss (`EpochLowerLoss`), so every tangent line it gives lies below the epoch's
curve, which is what pld's optimistic discretisation needs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import special

from ...memo import quiet_cache
from ..budget import DEFAULT_MAX_MEMORY, require_memory
from ..plrv import PrivacyLoss
from .epoch import MAX_MESH_POINTS, EpochMeshes, EpochSide, base_mesh, epoch_meshes, summed_law

__all__ = ["EpochLowerLaw", "EpochLowerLoss", "epoch_lower_law", "lower_meshes", "term_contraction",
           "LOWER_MESH_FACTOR"]

#: The dominated law's mesh, in units of `epoch.base_mesh` (the dominating law's before a long tail coarsens
#: it): its gap to the term is of second order (a merged cell spans at most two meshes), so a mesh twice as
#: coarse keeps the bracket (upper over lower) within 0.5% on benchmarks/random_allocation.py's grid.
LOWER_MESH_FACTOR = 2
#: P-mass (and t x Q-mass) of one term beyond the dominated law's last mesh point, where its cells end (deleting
#: mass only lowers the curve; the dominating law's floor is 1e-14, so the lower end stays below it anyway).
_LOWER_TRUNCATION = 1e-13

#: Atoms whose mean is bracketed to within this many meshes merge; the others are moved to the mesh.
_TIGHT = 1e-6
#: The head's cells are cut one by one while a midpoint cell would sit this many meshes off its point.
_HEAD_SLACK = 0.02
_HEAD_CELLS = 256
#: How far past its mesh point a head cell's mean is aimed: its side is then certain within the bracket.
_HEAD_AIM = 1e-6
#: Fixed-point sweeps for the kept masses r = a - pulled(r).
_SWEEPS = 30
_NDTR_REL = 1e-13
_U = 2.0 ** -53


def _cells(s: float, z: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(mass, E[Y; cell]) of the cells between consecutive boundaries z (in Z = (ln Y + s^2/2)/s), each with a
    bound on its absolute error: differences from the side where both values are small."""
    out = []
    for u in (z, z - s):
        lo, hi = u[:-1], u[1:]
        right = lo > 0
        below, above = special.ndtr(u), special.ndtr(-u)  # Phi(u), Phi(-u) at each boundary, once
        a = np.where(right, above[:-1], below[1:])
        b = np.where(right, above[1:], below[:-1])
        # ndtr's relative error; for z - s the rounding of its argument, |u| phi(u) 2^-53 <= (u^2 + 1) Phi(-|u|) 2^-53
        rel_a = _NDTR_REL + 4 * _U + _U * np.where(right, lo * lo + 1, hi * hi + 1)
        rel_b = _NDTR_REL + 4 * _U + _U * np.where(right, hi * hi + 1, lo * lo + 1)
        value = a - b
        with np.errstate(invalid="ignore"):
            err = np.nan_to_num(rel_a * np.abs(a)) + np.nan_to_num(rel_b * np.abs(b)) + _U * np.abs(value)
        out += [np.maximum(value, 0.0), 2 * err]
    return out[0], out[1], out[2], out[3]


def _z(y: np.ndarray, s: float) -> np.ndarray:
    with np.errstate(divide="ignore"):
        return (np.log(y) + s * s / 2) / s


def _cell_mean(s: float, lo: float, hi: float) -> float:
    """E[Y | lo < Y <= hi] (a float estimate: it only places cuts, the brackets are computed afterwards)."""
    (mass, _, first, _) = _cells(s, _z(np.array([lo, hi]), s))
    return float(first[0] / mass[0]) if mass[0] > 0 else (lo + hi) / 2


def _head_cells(s: float, g: float, n_bins: int, up: bool) -> tuple[np.ndarray, np.ndarray, int]:
    """(cuts from 0 up, the mesh index of each cell between them, the first midpoint cell's index) of the head:
    cells cut one after the other so each mean is the next mesh point above its lower cut, off it by `_HEAD_AIM`
    meshes on the side the order allows (Brent's method on the closed forms): the first always (cell 0 = [0, g/2]
    moved to 0 would lose its mean, a first-order gap), the others for as long as a midpoint cell there would sit
    more than `_HEAD_SLACK` meshes off its point (the steep rise or fall of the density next to 0, where merging
    with a small neighbour cannot place it); at most `_HEAD_CELLS` cells."""
    from scipy import optimize  # lazily: scipy.optimize is a tenth of a second of import

    cuts: list[float] = [0.0]  # cell 0 = [0, 0]: the head's first cell starts at 0
    index: list[int] = []
    lo = 0.0
    for _ in range(_HEAD_CELLS):
        j = int(math.floor(lo / g)) + 1
        if j > n_bins - 2 or (index and abs(_cell_mean(s, max(lo, (j - 0.5) * g), (j + 0.5) * g) - j * g)
                              <= _HEAD_SLACK * g):
            break
        if not _cell_mean(s, lo, j * g + 64 * g) > j * g:
            break
        aim = (j + (-_HEAD_AIM if up else _HEAD_AIM)) * g
        cuts.append(optimize.brentq(lambda b, lo=lo, aim=aim: _cell_mean(s, lo, b) - aim, aim, j * g + 64 * g,
                                    xtol=1e-12 * g))
        index.append(j)
        lo = cuts[-1]
    if not index:  # no steep head: cell 0 = [0, g/2] (moved to 0 or g), midpoint cells from 1
        return np.array([g / 2]), np.zeros(0, dtype=np.int64), 1
    # the first midpoint cell (lo, y_j + g/2] with y_j > lo: between g/2 and 3g/2 wide
    return np.array(cuts), np.array(index, dtype=np.int64), int(math.floor(lo / g)) + 1


def term_contraction(s: float, g: float, n_bins: int, up: bool, max_memory: float) -> np.ndarray:
    """Masses on g {0..n_bins} below the term in the increasing (``up=False``) or decreasing (``up=True``) convex
    order (module docstring): the midpoint cells' atoms at their means m_i, each merged with a part x_i of a
    neighbour's atom so that the merged mean lies on its mesh point y_i, or past it on the side the order allows;
    an atom with no neighbour to merge with moves to the mesh point on that side."""
    require_memory("allocation", f"one epoch's contraction on {n_bins} points", 8.0 * n_bins * 40, max_memory)
    # the steep head's cells, cut from 0 so their means sit on mesh points (`_head_cells`; or cell 0 = [0, g/2],
    # whose mass moves to 0 or g), then midpoint cells (y_i - g/2, y_i + g/2]
    cuts, head_index, next_j = _head_cells(s, g, n_bins, up)
    index = np.concatenate([[0], head_index, np.arange(next_j, n_bins + 1)])
    y = index * g
    edges = np.concatenate([[0.0], cuts, y[1 + head_index.size:] + g / 2])
    mass, mass_err, first, first_err = _cells(s, _z(edges, s))
    a = np.maximum(mass - mass_err, 0.0) * (1 - 4 * _U)
    with np.errstate(divide="ignore", invalid="ignore"):
        m_lo = np.maximum((first - first_err) / (mass + mass_err) * (1 - 8 * _U), 0.0)
        m_hi = np.where(mass > mass_err, (first + first_err) / (mass - mass_err) * (1 + 8 * _U), np.inf)
    source = (a > 0) & np.isfinite(m_hi)  # an atom others may take a part of: its mean in [m_lo, m_hi]
    inf = np.array([np.inf])
    with np.errstate(invalid="ignore"):
        below_lo, below_hi = np.concatenate([inf, y[1:] - m_hi[:-1]]), np.concatenate([inf, y[1:] - m_lo[:-1]])
        above_lo, above_hi = np.concatenate([m_lo[1:] - y[:-1], inf]), np.concatenate([m_hi[1:] - y[:-1], inf])
    src_below, src_above = np.concatenate([[False], source[:-1]]), np.concatenate([source[1:], [False]])
    # merged mean - y_i is proportional to r d - x D (a part x from below, at distance D) or r d + x D' (above)
    with np.errstate(divide="ignore", invalid="ignore"):
        if up:  # merged mean <= y_i for every d <= d_hi and D >= D_lo (below), D' <= D'_hi (above)
            d = m_hi - y
            from_below = d > 0
            ratio = np.where(from_below, d / below_lo, -d / above_hi)
            ok = np.where(from_below, src_below & (below_lo > 0), src_above & (above_hi > 0))
        else:  # merged mean >= y_i for every d >= d_lo and D <= D_hi (below), D' >= D'_lo (above)
            d = m_lo - y
            from_below = d >= 0
            ratio = np.where(from_below, d / below_hi, -d / above_lo)
            ok = np.where(from_below, src_below & (below_hi > 0), src_above & (above_lo > 0))
    ratio = np.where(ok & source & np.isfinite(ratio), np.maximum(ratio, 0.0), 0.0)
    merged = ratio > 0
    take_below, take_above = np.where(from_below, ratio, 0.0), np.where(from_below, 0.0, ratio)

    def pulled(r: np.ndarray) -> np.ndarray:  # the parts of each atom its neighbours take
        return np.concatenate([(r * take_below)[1:], [0.0]]) + np.concatenate([[0.0], (r * take_above)[:-1]])

    r = a.copy()
    for _ in range(_SWEEPS):  # r = a - pulled(r), a contraction where the ratios are small
        swept = np.maximum(a - pulled(r), 0.0)
        if np.array_equal(swept, r):  # a fixed point: the sweeps left would not move it
            break
        r = swept
    # where neighbours would take more than an atom holds, each merges only that share of its r (the merged mean
    # stays), and the rest of its r is left unmerged
    taken = pulled(r)
    factor = np.where(taken > a, a / np.where(taken > 0, taken, 1.0), 1.0)
    share = np.where(merged, np.where(from_below, np.concatenate([[1.0], factor[:-1]]),
                                      np.concatenate([factor[1:], [1.0]])), 0.0)
    r_merged = r * share
    r = np.maximum(a - (np.concatenate([(r_merged * take_below)[1:], [0.0]])
                        + np.concatenate([[0.0], (r_merged * take_above)[:-1]])), 0.0)
    r_merged = np.minimum(r_merged, r)
    # unmerged mass: to the mesh point at or below m_lo (increasing order) or at or above m_hi (decreasing)
    moved = np.ceil(m_hi / g) if up else np.floor(m_lo / g)
    moved = np.where(np.isfinite(moved), moved, -1.0).astype(np.int64)
    keep = (r - r_merged > 0) & (moved >= 0) & (moved <= n_bins)
    out = np.bincount(moved[keep], weights=(r - r_merged)[keep], minlength=n_bins + 1).astype(float)
    out += np.bincount(index, weights=r_merged * (1 + ratio), minlength=n_bins + 1)
    return out * (1 - 64 * _U)  # the rounding of the few operations above, on the safe side


@dataclass(frozen=True, eq=False)
class EpochLowerLaw:
    """The remove direction's dominated law of S under P (``p`` on s = (p_j0 + j) g: the sum weighted by S/t)
    and the add direction's under Q (``add_q`` on (add_j0 + j) add_g), each with ``*_err`` bounding its l1
    distance to an exact law whose curve lies below the epoch's (compose's l1 bound, the weighting's rounding and
    the mass outside its window)."""

    sigma: float
    steps: int
    g: float
    p_j0: int
    p: np.ndarray
    p_err: float
    add_g: float
    add_j0: int
    add_q: np.ndarray
    add_err: float


def lower_meshes(sigma: float, steps: int) -> EpochMeshes:
    """The dominated laws' meshes: `LOWER_MESH_FACTOR` times `epoch.base_mesh`, the remove direction's term cut
    where its P-mass beyond (and t times its Q-mass) is `_LOWER_TRUNCATION` or at `MAX_MESH_POINTS`; the add
    direction's, `LOWER_MESH_FACTOR` times the dominating law's, over the same range."""
    fine = epoch_meshes(sigma, steps, coarse=False)
    s, t = fine.s, steps
    z_p, z_q = -special.ndtri(_LOWER_TRUNCATION), -special.ndtri(_LOWER_TRUNCATION / t)
    y_max = math.exp(max(s * s / 2 + s * z_p, -s * s / 2 + s * z_q))
    g, add_g = LOWER_MESH_FACTOR * base_mesh(fine.sd), LOWER_MESH_FACTOR * fine.add_g
    return EpochMeshes(s, fine.sd, g, min(max(int(math.ceil(y_max / g)), 4), MAX_MESH_POINTS), add_g,
                       max(int(math.ceil(fine.add_bins * fine.add_g / add_g)), 4))


@quiet_cache(maxsize=2)
def epoch_lower_law(sigma: float, steps: int, max_memory: float = DEFAULT_MAX_MEMORY) -> EpochLowerLaw:
    """The dominated laws of S of one epoch (module docstring), on `lower_meshes`."""
    t, mesh = steps, lower_meshes(sigma, steps)
    nu = term_contraction(mesh.s, mesh.g, mesh.n_bins, False, max_memory)
    weighted = nu * (np.arange(nu.size) * mesh.g)
    weight_err = 2 * _U * float(np.sum(weighted))
    h = 64.0 / max(nu.size, 4096)
    p_j0, p, p_fp, p_out = summed_law([(weighted, 0, 1)] + ([(nu, 0, t - 1)] if t > 1 else []), h, max_memory)
    add_nu = term_contraction(mesh.s, mesh.add_g, mesh.add_bins, True, max_memory)
    a_j0, a_q, a_fp, a_out = summed_law([(add_nu, 0, t)], 64.0 / max(add_nu.size, 4096), max_memory)
    return EpochLowerLaw(float(sigma), int(steps), mesh.g, p_j0, p, (p_fp + p_out + weight_err) * (1 + 1e-9),
                         mesh.add_g, a_j0, a_q, (a_fp + a_out) * (1 + 1e-9))


class EpochLowerLoss(PrivacyLoss):
    """One direction of an `EpochLowerLaw` as a privacy loss for pld's optimistic discretisation only: its tails
    P(L > x) rounded down and Q(L > x) rounded up, each moved by the law's l1 error (by err and e^{-x} err: on
    {L > x} the secondary law is e^{-L} < e^{-x} times the primary, atom by atom), so every line
    P(L > m) - e^x Q(L > m) lies below the epoch's curve. Q puts no mass at L = -inf in the true epoch, so the reference line 1 - e^x holds."""

    def __init__(self, law: EpochLowerLaw, direction: str) -> None:
        if direction not in ("remove", "add"):
            raise ValueError(f"direction must be 'remove' or 'add', got {direction!r}")
        self.law, self.direction = law, direction
        t = float(law.steps)
        if direction == "remove":
            self._primary, self._secondary = EpochSide.pair(law.p_j0, law.p, law.g, t, direction)
            self._err = law.p_err
        else:
            self._primary, self._secondary = EpochSide.pair(law.add_j0, law.add_q, law.add_g, t, direction)
            self._err = law.add_err

    @property
    def secondary_neg_inf_mass(self) -> float:
        return 0.0

    @property
    def support(self) -> tuple[float, float]:
        return (float(self._primary.loss[0]), float(self._primary.loss[-1]))

    def sf(self, x):
        return np.maximum(self._primary.tail(x, -1) - self._err, 0.0)

    def sf_secondary(self, x):
        with np.errstate(over="ignore"):
            moved = self._secondary.tail(x, +1) + np.exp(-np.asarray(x, dtype=float)) * self._err
        return np.minimum(moved, 1.0)

    def cdf(self, x):
        return np.maximum(self._primary.total - self._primary.tail(x, -1), 0.0)

    def cdf_secondary(self, x):
        return np.maximum(self._secondary.total - self._secondary.tail(x, -1), 0.0)

    def log_phi(self, z):
        z = np.asarray(z, dtype=complex)
        with np.errstate(divide="ignore"):
            terms = (np.log(self._primary.mass.astype(float))[None, :]
                     + 1j * z.reshape(-1, 1) * self._primary.loss[None, :])
        return special.logsumexp(terms, axis=1).reshape(z.shape)
