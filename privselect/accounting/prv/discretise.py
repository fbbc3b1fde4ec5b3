"""Steps 1-2 of the PRV accountant: truncate each privacy-loss law to whole cells and discretise it
on the lattice h Z with exact CDF differences, mean-preserving shift and proven coupling terms
(Gopi, Lee, Wutschitz 2021, Alg. 2, Lemma C.1, C.5)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..budget import DEFAULT_MAX_MEMORY, require_memory
from ..plrv import PrivacyLoss
from ..profile import CertificationError

_U = np.finfo(float).eps / 2  # unit roundoff of IEEE double
#: Assumed accuracy of ``PrivacyLoss.cdf``/``sf``: absolute error <= _CDF_ULPS * u * max|F|.
_CDF_ULPS = 64.0

#: Sub-cells per cell for the variance bound, and how many of the heaviest cells get them.
_SUBCELLS = 16
_REFINED_CELLS = 2048


@dataclass
class _Tails:
    """Where one law is truncated, found once (independent of the mesh)."""

    lower: float  # G(lower) <= tau * finite  (or the finite support end)
    upper: float  # S(upper) <= tau * finite
    median: float
    breakpoints: np.ndarray  # atoms and finite support ends


@dataclass
class _Cells:
    """Discretised law: pmf on cells lo..lo+N-1 of the lattice h Z, shifted by ``shift``."""

    loss: PrivacyLoss
    count: int
    lo: int
    pmf: np.ndarray
    shift: float
    tail: float  # P[Y outside the cells | Y finite]
    second_moment: float  # bound on E[(Y - c(Y))^2 | cells]
    mean_error: float  # proven bound on |E[Y - c(Y)] - shift| (density variation)
    pmf_error: float  # absolute part of the per-step rounding bound on delta~ (see _pmf_error)
    pmf_rel_error: float  # relative part
    extra: dict = field(default_factory=dict)


def _first_crossing(fn, level: float, start: float, direction: float) -> float:
    """A point y = start + direction * d (d >= 0) with fn(y) <= level, near the smallest such d.

    ``fn`` is monotone and decreases along ``direction``. Bracket on a geometric ladder, then
    refine the bracket three times on 33-point grids; the returned end satisfies the test.
    """
    offsets = np.concatenate([[0.0], np.geomspace(1e-12, 1e4, 97)])
    ys = start + direction * offsets
    vals = np.asarray(fn(ys), dtype=float)
    ok = np.nonzero(vals <= level)[0]
    if ok.size == 0:
        raise ValueError(f"privacy-loss tail does not fall below {level:.3g} within 1e4 of {start:.6g}")
    k = int(ok[0])
    if k == 0:
        return float(start)
    a, b = ys[k - 1], ys[k]
    for _ in range(3):
        grid = np.linspace(a, b, 33)
        vals = np.asarray(fn(grid), dtype=float)
        j = int(np.nonzero(vals <= level)[0][0]) if (vals <= level).any() else 32
        if j == 0:
            return float(grid[0])
        a, b = grid[j - 1], grid[j]
    return float(b)


def _find_tails(loss: PrivacyLoss, tau: float) -> _Tails:
    """Truncation points with ``P[Y < lower]``, ``P[Y > upper] <= tau`` (given finite) and a median."""
    finite = 1.0 - loss.inf_mass
    lo, hi = loss.support
    median = _median(loss, lo, hi, finite)
    lower = lo if math.isfinite(lo) else _first_crossing(loss.cdf, tau * finite, median, -1.0)
    upper = hi if math.isfinite(hi) else _first_crossing(loss.sf, tau * finite, median, +1.0)
    points = [p for p in (lo, hi) if math.isfinite(p)] + list(np.asarray(loss.atoms().locations, dtype=float))
    return _Tails(lower=float(lower), upper=float(upper), median=float(median),
                  breakpoints=np.unique(np.asarray(points, dtype=float)))


def _median(loss: PrivacyLoss, lo: float, hi: float, finite: float) -> float:
    """A point near the median of the finite part (only steers where cdf or sf is used)."""
    centre = 0.0 if not (math.isfinite(lo) and math.isfinite(hi)) else 0.5 * (lo + hi)
    ladder = np.geomspace(1e-12, 1e4, 97)
    ys = np.unique(np.clip(np.concatenate([centre - ladder, [centre], centre + ladder]), lo, hi))
    for _ in range(4):
        vals = np.asarray(loss.cdf(ys), dtype=float)
        j = int(np.searchsorted(vals, finite / 2))
        j = min(max(j, 1), ys.size - 1)
        ys = np.linspace(ys[j - 1], ys[j], 33)
    return float(ys[-1])


def _edges_values(loss: PrivacyLoss, edges: np.ndarray, split: int) -> tuple[np.ndarray, np.ndarray]:
    """G = cdf at edges[:split+1] and S = sf at edges[split:]."""
    g = np.asarray(loss.cdf(edges[: split + 1]), dtype=float)
    s = np.asarray(loss.sf(edges[split:]), dtype=float)
    return g, s


def _discretise(loss: PrivacyLoss, count: int, h: float, tails: _Tails, max_points: int,
                max_memory: float = DEFAULT_MAX_MEMORY) -> _Cells:
    """Cell-centred, mean-preserving discretisation on h Z (GLW Alg. 2, Lemma C.5)."""
    finite = 1.0 - loss.inf_mass
    # Cell j is (c_j - h/2, c_j + h/2] with c_j = j h; one extra cell on each side of a finite
    # support end guards against rounding in j = ceil(y/h - 1/2).
    lo_support, hi_support = loss.support
    j_lo = int(math.floor(tails.lower / h + 0.5)) - (1 if math.isfinite(lo_support) else 0)
    j_hi = int(math.ceil(tails.upper / h - 0.5)) + (1 if math.isfinite(hi_support) else 0)
    n_cells = j_hi - j_lo + 1
    if n_cells > max_points:
        raise CertificationError(
            f"the PRV accountant declines: one {type(loss).__name__} step needs {float(n_cells):.4g} cells of width {h:.3g} (> max_points="
            f"{max_points}); use a larger eps_error or a smaller number of compositions")
    # edges, cdf/sf values, raw masses and the (cells x sub-cells) refinement arrays (x, full, diff)
    require_memory("PRV", f"one {type(loss).__name__} step on {n_cells} cells",
                   8.0 * n_cells * (6 + 3 * (_SUBCELLS + 1)), max_memory)
    edges = (np.arange(j_lo, j_hi + 2) - 0.5) * h  # n_cells + 1 edges
    # the cell that holds the median goes to the sf side: where the median is an atom at the top of
    # the support (the add direction of a subsampled Laplace), rounding would put every cell on the
    # cdf side, and the rounding bound would become absolute (_pmf_error: 10 c per step)
    split = int(np.clip(math.floor((tails.median - edges[0]) / h), 0, n_cells))
    g, s = _edges_values(loss, edges, split)
    raw = np.empty(n_cells)
    raw[:split] = np.diff(g)
    raw[split:] = -np.diff(s)
    clipped = float(-np.sum(raw[raw < 0]))
    np.maximum(raw, 0.0, out=raw)
    mass = float(raw.sum())  # pairwise summation: relative error <= (log2 N + 20) u
    if not mass > 0:
        raise ValueError(f"{type(loss).__name__}: no probability mass on [{edges[0]:.6g}, {edges[-1]:.6g}]")
    tail = (float(g[0]) + float(s[-1])) / finite
    pmf_rel_error, pmf_error = _pmf_error(g, s, clipped, mass, n_cells)

    # Mean shift (GLW Alg. 2), with a proven error. Per cell, the continuous part contributes
    # b_j = int_0^{h/2} t (f(c + t) - f(c - t)) dt, and |f(c + t) - f(c - t)| <= V_j, the variation
    # of the density f over the cell, so |sum_j b_j| <= (h^2 / 8) TV(f). Atoms contribute exactly
    # p_a (a - c(a)); the shift is their part and mean_error bounds the rest (no quadrature).
    shift_atoms = 0.0
    at = loss.atoms()
    if at.locations.size:
        inside = (at.locations > edges[0]) & (at.locations <= edges[-1])
        cell = np.searchsorted(edges, at.locations[inside], side="left") - 1
        offsets = at.locations[inside] - (j_lo + cell) * h
        shift_atoms = math.fsum(at.primary[inside] * offsets)
    shift = shift_atoms / mass
    variation = float(loss.continuous_variation())
    mean_error = (variation * h * h / 8 + 8 * _U * (abs(shift_atoms) + h)) / mass * (1 + 1e-9)
    if not abs(shift) < h / 2:
        raise ValueError(f"mean shift {shift:.3g} of {type(loss).__name__} is not below h/2 = {h / 2:.3g}; "
                         "the CDF is inaccurate")

    second_moment = _second_moment_bound(loss, edges, g, s, raw, split, h, mass)
    return _Cells(loss=loss, count=count, lo=j_lo, pmf=raw / mass, shift=shift, tail=tail,
                  second_moment=second_moment, mean_error=mean_error, pmf_error=pmf_error,
                  pmf_rel_error=pmf_rel_error)


def _pmf_error(g: np.ndarray, s: np.ndarray, clipped: float, mass: float, n_cells: int) -> tuple[float, float]:
    """(relative, absolute) bound on the change of any composed delta~(eps) per step from rounding.

    Each CDF value carries ``|dF| <= c F`` with ``c = _CDF_ULPS u (1 + |log F|)`` (assumption on
    plrv's CDFs: relative accuracy, degraded by the argument's rounding in far tails, where
    ``|log F| ~ t^2 / 2``). The composed delta is ``sum_j q_j w_j`` with ``w_j`` the delta of the
    other factors at ``eps - t_j``: non-decreasing in j, in [0, 1]. Summation by parts over the
    telescoping differences bounds the change by ``c (2 G_s w_s + delta~ + 2 S_end)`` (cdf G below
    the split s, sf S above), and ``delta~ >= w_s (S_s - S_end)``: a *relative* error
    ``c (1 + 2 G_s / (S_s - S_end))`` plus an absolute ``2 c S_end``. The clipped negative
    differences add their sum and the normalisation (pairwise sum, one division) a relative
    ``(log2 N + 22) u``. A hybrid argument (swap one factor at a time) composes these over the
    K factors: ``delta^ <= (1 + rho)^K delta + sum a`` and conversely.
    """
    values = np.concatenate([g, s])
    values = values[values > 0]
    log_span = float(np.max(np.abs(np.log(values)))) if values.size else 0.0
    c = _CDF_ULPS * _U * (1 + log_span)
    g_split = float(g[-1]) if g.size else 0.0
    s_split, s_end = (float(s[0]), float(s[-1])) if s.size else (0.0, 0.0)
    normalisation = (math.log2(n_cells + 1) + 22) * _U
    above = s_split - s_end
    if above > 1e-3 * g_split:
        rel = c * (1 + 2 * g_split / above) + normalisation
        return rel, (2 * c * s_end + 2 * clipped) / mass
    # no mass above the split: the absolute bound (3 |dF| per segment, summation by parts)
    peak = max(float(np.max(np.abs(g))) if g.size else 0.0, float(np.max(np.abs(s))) if s.size else 0.0)
    return normalisation, (10 * c * peak + 2 * clipped) / mass


def _second_moment_bound(loss: PrivacyLoss, edges: np.ndarray, g: np.ndarray, s: np.ndarray, raw: np.ndarray,
                         split: int, h: float, mass: float) -> float:
    """Upper bound on E[(Y - c(Y))^2 | cells]: sub-cell masses times the largest squared offset.

    The heaviest cells are split into _SUBCELLS sub-cells (CDF values at the interior points);
    every other cell is bounded by (h/2)^2. Exact for atoms at sub-cell edges, ~0.1 h^2 for
    smooth laws (the uniform value is h^2/12).
    """
    n_cells = raw.size
    at = loss.atoms()
    finite = 1.0 - loss.inf_mass
    if at.locations.size and float(np.sum(at.primary)) >= finite * (1 - 1e-12):
        # Purely atomic law: exact. An atom on a cell edge is h/2 from either centre.
        offs = at.locations - np.round(at.locations / h) * h
        return min(float(np.sum(at.primary * np.minimum(offs**2, (h / 2) ** 2))) / mass * (1 + 1e-12), (h / 2) ** 2)
    m = min(_REFINED_CELLS, n_cells)
    heavy = np.argpartition(raw, n_cells - m)[n_cells - m:] if m < n_cells else np.arange(n_cells)
    frac = np.arange(_SUBCELLS + 1) / _SUBCELLS  # sub-cell edges within a cell
    offsets = (frac - 0.5) * h
    weight = np.maximum(offsets[:-1] ** 2, offsets[1:] ** 2)  # max (y - c)^2 per sub-cell
    bound = 0.0
    left = heavy[heavy < split]
    right = heavy[heavy >= split]
    # Atoms clearly inside a sub-cell of a refined cell contribute their exact (x - c)^2 instead
    # of the sub-cell's maximum (an atom within rounding of a sub-cell edge keeps the maximum).
    atom_cell = np.ceil(at.locations / h - 0.5).astype(np.int64) - int(round(edges[0] / h + 0.5))
    position = (at.locations - edges[0]) / h * _SUBCELLS - atom_cell * _SUBCELLS  # in (0, _SUBCELLS]
    atom_sub = np.clip(np.ceil(position) - 1, 0, _SUBCELLS - 1).astype(np.intp)
    # only atoms clearly inside a sub-cell (rounding could put an edge atom in the neighbour)
    clear = np.abs(position - np.round(position)) > 1e-6
    atom_cell = np.where(clear, atom_cell, -1)
    for cells, fn, ends, sign in ((left, loss.cdf, (g[left], g[left + 1]), 1.0),
                                  (right, loss.sf, (s[right - split], s[right + 1 - split]), -1.0)):
        if cells.size == 0:
            continue
        x = edges[cells][:, None] + frac[None, 1:-1] * h
        full = np.empty((cells.size, _SUBCELLS + 1))
        full[:, 0], full[:, -1] = ends
        full[:, 1:-1] = np.asarray(fn(x.reshape(-1)), dtype=float).reshape(x.shape)
        sub = np.maximum(sign * np.diff(full, axis=1), 0.0)
        if at.locations.size:
            order = np.argsort(cells)
            row = order[np.minimum(np.searchsorted(cells, atom_cell, sorter=order), cells.size - 1)]
            hit = cells[row] == atom_cell
            for r, j, w, loc, cell in zip(row[hit], atom_sub[hit], at.primary[hit], at.locations[hit],
                                          atom_cell[hit]):
                take = min(w, sub[r, j])
                sub[r, j] -= take
                bound += take * (loc - (edges[cell] + h / 2)) ** 2
        bound += float(np.sum(sub @ weight))
    rest = max(mass - float(raw[heavy].sum()), 0.0)
    bound += rest * (h / 2) ** 2
    # each computed sub-cell mass may be off by 2 max|dF| (see _pmf_error)
    peak = max(float(np.max(np.abs(g))) if g.size else 0.0, float(np.max(np.abs(s))) if s.size else 0.0)
    bound += heavy.size * _SUBCELLS * 2 * _CDF_ULPS * _U * peak * (h / 2) ** 2
    return min(bound / mass * (1 + 1e-9), (h / 2) ** 2)
