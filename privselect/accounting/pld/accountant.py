"""`PLDAccountant`, registered as "pld": connect-the-dots privacy-loss distributions composed by one FFT.

Each step's loss, in each neighbouring direction, is discretised on the mesh h Z twice (`discretise`): a
pessimistic law whose hockey-stick curve lies above the true one everywhere (Doroshenko, Ghazi, Kamath, Kumar,
Manurangsi 2022, Thm 3.5), and an optimistic law below it (tangent lines, a mean-preserving contraction). The
laws of all steps are composed by one circular convolution (`compose`: float64 FFTs with the low frequencies
recomputed in long double, `fast`), whose wrap-around is bounded by a Chernoff bound and whose floating-point
error is bounded as in the PRV member. The pessimistic law's curve plus those terms is an upper bound on
delta(eps); the optimistic law's curve minus them (divided by its checked rounding factor) a lower bound.

The automatic mesh is the smaller of the window over ``points`` and `MESH_PER_SD` times the steps' rms loss
deviation: the discretisation error of k steps grows like k h^2 against the composed variance k Var L, so the
second term holds the relative error fixed at any number of steps (~0.1% of eps at 1e6-1e7 subsampled steps).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from ... import _validation as check
from ...errors import CertificationError
from ...mechanisms import Mechanism
from ..base import LossAccountant, register_accountant
from ..budget import DEFAULT_MAX_MEMORY, checked_max_memory, require_memory
from ..plrv import readable_losses as plrv_readable_losses
from ..profile import DirectionalCurve, PrivacyProfile
from ..prv.interface import find_tails
from ..threads import one_blas_thread
from .compose import Composed, compose, part_log_mgfs, window
from .curve import PLDCurve
from .discretise import discretise, loss_variance
from .tilted import tilt_for, tilted_curve

__all__ = ["PLDAccountant", "PLD", "pld_profile", "readable_losses"]

#: Composed tail mass allowed above and below the window (Chernoff), and per step beyond its grid. Both are charged:
#: the window's tails to delta (``above``/``below`` of `compose`), each step's tail at +inf in its pessimistic law
#: (and dropped from its optimistic one). 1e-15 is 1% of the plain composition's floating-point floor (~1e-13);
#: 1e-18 widened the window by a single step's heavy tail (q = 1e-6, sigma 0.6: to l = 2.1 instead of 1.1).
_TAIL = 1e-15
#: Largest automatic mesh, in units of the steps' root-mean-square loss deviation (an estimate; it sizes the
#: mesh only): 0.1 puts the upper end within ~0.2% of eps at 1e6-1e7 subsampled Gaussian steps.
MESH_PER_SD = 0.1
#: ... but no finer than the window over this many points (where rare large losses dominate the deviation,
#: e.g. q T ~ 1, the cap would ask for millions of points without making the answer tighter; `_edge_aligned` may
#: ask for up to twice as many).
AUTO_MAX_POINTS = 1 << 20
#: Where the finite edge of a step's support lies within its cell, in mesh steps beyond the grid point inside it
#: (`_edge_aligned`).
EDGE_MESH = 0.5
#: ... unless that asks for a mesh finer than this fraction of the automatic one.
EDGE_MIN_MESH = 0.25
#: Largest finite loss of one step (e^l must stay finite in double precision).
_MAX_LOSS = 700.0
#: Where the mesh is this fine (the edge-aligned mesh of rarely sampled steps), each step's law is built on every
#: point only where its mass is, on every `COARSE_LEVEL`-th point where the mass beyond is below `COARSE_SHARE` /
#: `COARSE_LEVEL`^2, on every `COARSE_LEVEL`^2-th where it is below `COARSE_SHARE` / `COARSE_LEVEL`^4
#: (`coarse_regions`): at q = 1e-6 a step's mesh of 6.7e-7 spans 1.4e6 points, all but ~300 of them in a tail of
#: mass ~1e-5, whose spacing s h matters as (mass) (s h)^2.
COARSE_LEVEL = 4
#: ... each level's second-order error, (mass beyond) (s h)^2, at most this share of the fine region's h^2 ...
COARSE_SHARE = 1e-3
#: ... and the coarse spacing at most this (the relative error of a tail of slope b in log delta is ~(b s h)^2 / 8:
#: below 1e-6 at b = 60, eps 0.056 at delta 1e-10).
COARSE_MESH = 2e-5


def coarse_regions(loss, h: float, lower_end: float, upper_end: float) -> tuple[tuple[tuple[float, float, int], ...], int]:
    """(regions, stride) for `discretise`: every point between the losses where P(L < l) and P(L > l) fall to
    `COARSE_SHARE` / s1^2, every s1-th up to where they fall to `COARSE_SHARE` / s2^2, every s2-th beyond (s1 =
    `COARSE_LEVEL`, s2 = s1^2, both within `COARSE_MESH`; the ends found on a geometric ladder, rounded outwards);
    ((), 1) where no coarser step fits `COARSE_MESH` or the fine region is a quarter of the grid or more. Any grid is
    sound (`discretise`); this one only decides where the mesh may be coarser."""
    steps = [s for s in (COARSE_LEVEL, COARSE_LEVEL ** 2) if s * h <= COARSE_MESH]
    if not steps:
        return (), 1
    ladder = np.geomspace(h, max(abs(lower_end), abs(upper_end), 2 * h), 200)
    with np.errstate(over="ignore", invalid="ignore"):
        above = np.asarray(loss.sf(ladder), dtype=float)
        below = np.asarray(loss.cdf(-ladder), dtype=float)

    def reach(tail: np.ndarray, mass: float) -> float:
        # the ladder point just beyond the last one whose tail exceeds ``mass`` (monotone in exact arithmetic)
        heavy = np.flatnonzero(~(tail <= mass))
        return float(ladder[min(int(heavy[-1]) + 1, ladder.size - 1)]) if heavy.size else float(ladder[0])

    regions = []
    for inner, outer in zip([1] + steps[:-1], steps):
        mass = COARSE_SHARE / outer ** 2
        regions.append((-reach(below, mass), reach(above, mass), inner))
    lo, hi, _ = regions[0]
    if hi - lo >= 0.25 * (upper_end - lower_end):
        return (), 1
    return tuple(regions), steps[-1]


def _edge_aligned(h: float, components, finest: float, finest_if_collapsed: float) -> float:
    """``h``, lowered so that the finite edge of the most composed loss's support (the lower edge log(1 - q) of a
    subsampled remove direction, the upper edge -log(1 - q) of its add direction) lies `EDGE_MESH` of a mesh step
    beyond a grid point k h inside it, k >= 1; unchanged where that needs a mesh below `EDGE_MIN_MESH` h or
    ``finest`` (``finest_if_collapsed`` where h >= |edge|, which would collapse every step).

    Any mesh is sound; this one is tighter. The optimistic law's curve is 1 - x Q(L finite) left of the edge, and a
    line below delta through that value keeps that slope over the cell that holds the edge, so the cell's mass
    collapses onto the grid point inside the support; the next cell's half-grid tangent keeps its mass only if the
    collapsed part outweighs it (else its left-end tangent: a second cell collapses). With the edge just beyond a
    grid point two cells collapsed (0.23 of a step's mass at q = 1e-6), and with no grid point between the edge and
    0 (h >= |log(1 - q)|) the whole step collapsed onto 0: the lower end of eps was 0."""
    loss = max(components, key=lambda c: c[1])[0]
    lo, hi = loss.support
    edge = abs(lo) if math.isfinite(lo) else abs(hi) if math.isfinite(hi) else math.nan
    if not (math.isfinite(edge) and edge > 0):
        return h
    k = max(math.ceil(edge / h - EDGE_MESH), 1)
    aligned = edge / (k + EDGE_MESH)
    floor = finest_if_collapsed if h >= edge else finest
    return aligned if aligned >= max(EDGE_MIN_MESH * h, floor, 1e-7) else h


def readable_losses(mechanism: Mechanism):
    """The mechanism's PLRVs (no numerics); raises UnsupportedMechanismError naming the failing part."""
    return plrv_readable_losses(mechanism, "PLD")


@dataclass(frozen=True)
class PLDAccountant:
    """Connect-the-dots PLD accountant with a certified bracket.

    Parameters
    ----------
    value_discretization_interval:
        The mesh h of the losses. ``None``: the composed window (a Chernoff bound) divided by ``points``.
    points:
        Target size of the composed window when h is chosen automatically (a finer mesh where the steps'
        loss deviation asks for it, up to `AUTO_MAX_POINTS`).
    max_points:
        Largest FFT size and largest grid of one step; past it the accountant declines (CertificationError).
    max_memory:
        Bytes one build may allocate (estimated before allocating); past it it declines. Default 2 GB.
    target_delta:
        ``None``: the plain composition (floor ~1e-13, its floating-point error). A delta: the laws are
        exponentially tilted towards the eps where delta is about this (`tilted`), so the bracket keeps its
        relative precision there, far below the plain floor (1e-15 to 1e-30 and beyond).
    """

    value_discretization_interval: float | None = None
    points: int = 1 << 15
    max_points: int = 1 << 22
    max_memory: float = DEFAULT_MAX_MEMORY
    target_delta: float | None = None

    def __post_init__(self) -> None:
        if self.target_delta is not None:
            target = check.positive("target_delta", self.target_delta)
            if not target < 1.0:
                raise ValueError(f"target_delta must be in (0, 1), got {self.target_delta!r}")
            object.__setattr__(self, "target_delta", target)
        if self.value_discretization_interval is not None:
            h = check.positive("value_discretization_interval", self.value_discretization_interval)
            if not 1e-8 <= h <= 1.0:
                raise ValueError(f"value_discretization_interval must be in [1e-8, 1], got {h!r}")
            object.__setattr__(self, "value_discretization_interval", h)
        for name in ("points", "max_points"):
            value = check.positive_int(name, getattr(self, name))
            if value < 1024:
                raise ValueError(f"{name} must be >= 1024, got {getattr(self, name)!r}")
            object.__setattr__(self, name, value)
        object.__setattr__(self, "max_memory", checked_max_memory(self.max_memory))

    def profile(self, mechanism: Mechanism) -> PrivacyProfile:
        return self.losses_profile(readable_losses(mechanism), mechanism)

    @one_blas_thread
    def losses_profile(self, parts, mechanism: Mechanism, *, optimistic: bool = True) -> PrivacyProfile:
        """The profile of ``parts`` = ((DirectedLosses, count), ...) describing ``mechanism``. With
        ``optimistic=False`` only the pessimistic laws are composed (for losses whose optimistic law would not bound
        the mechanism, e.g. a dominating pair's): the curves' lower ends are then 0."""
        if not optimistic and self.target_delta is not None:
            raise ValueError("target_delta needs both laws (optimistic=True)")
        start = time.perf_counter()
        symmetric = all(losses.is_symmetric for losses, _ in parts)
        directions = ("both",) if symmetric else ("remove", "add")
        curves = []
        mesh = math.nan
        for d in directions:
            components = [(getattr(losses, "remove" if d == "both" else d), int(k)) for losses, k in parts]
            curve, mesh = self._curve(d, components, optimistic)
            curves.append(curve)
        seconds = time.perf_counter() - start
        total = sum(int(k) for _, k in parts)
        return PrivacyProfile(
            curves=tuple(curves), accountant="pld", mechanism=mechanism,
            description=f"connect-the-dots PLD (Doroshenko et al. 2022), {total} compositions, mesh {mesh:.3g}",
            metadata=(("compositions", total), ("mesh", mesh), ("build_seconds", seconds)))

    def _mesh(self, components, tails) -> tuple[float, float]:
        """The given mesh, or the smaller of the Chernoff window of a pilot discretisation (4096 points per step)
        over ``points`` and `MESH_PER_SD` x the steps' root-mean-square loss deviation (the discretisation error
        grows like k h^2 against the composed variance k Var L), kept within ``max_points`` over the window."""
        if self.value_discretization_interval is not None:
            return self.value_discretization_interval, self.value_discretization_interval
        pilot = max((t.upper - t.lower) / 4096 for t in tails)
        laws = [(discretise(loss, pilot, t.lower, t.upper, optimistic=False), k)
                for (loss, k), t in zip(components, tails)]
        a, b = window(part_log_mgfs([(law.upper, law.i0, k) for law, k in laws], pilot), _TAIL)
        if not (math.isfinite(a) and math.isfinite(b) and b > a):
            raise CertificationError("the PLD accountant declines: no finite Chernoff bound sizes the window")
        h = (b - a) / self.points
        total = sum(k for _, k in components)
        variance = sum(k * loss_variance(loss, float(t.lower), float(t.upper))
                       for (loss, k), t in zip(components, tails)) / total
        if math.isfinite(variance) and variance > 0:
            h = min(h, MESH_PER_SD * math.sqrt(variance))
        h = max(h, (b - a) / AUTO_MAX_POINTS, 1.25 * (b - a) / self.max_points)
        h = min(max(h, 1e-7), 1e-2)
        budget = max(2.0 * (b - a) / self.max_points, (b - a) / (2 * AUTO_MAX_POINTS))
        return _edge_aligned(h, components, budget, 1.25 * (b - a) / self.max_points), h

    def _curve(self, direction: str, components, optimistic: bool = True) -> tuple[DirectionalCurve, float]:
        total = sum(k for _, k in components)
        # per-step tail mass beyond the grid (charged at +inf): far below the target of a tilted composition
        tau = (_TAIL if self.target_delta is None else min(_TAIL, 1e-6 * self.target_delta)) / total
        all_tails = [find_tails(loss, tau) for loss, _ in components]
        for (loss, _), tails in zip(components, all_tails):
            extent = max(abs(float(tails.lower)), abs(float(tails.upper)))
            if not extent <= _MAX_LOSS:
                raise CertificationError(f"the PLD accountant declines: one {type(loss).__name__} step has losses "
                                         f"up to {extent:.3g} (> {_MAX_LOSS})")
        h, unaligned = self._mesh(components, all_tails)
        try:
            return self._curve_at(direction, components, all_tails, h, optimistic)
        except CertificationError:
            if h == unaligned:
                raise
            # the edge-aligned mesh (finer) did not fit where the pilot's window said it would: the automatic one
            return self._curve_at(direction, components, all_tails, unaligned, optimistic)

    def _curve_at(self, direction: str, components, all_tails, h: float,
                  optimistic: bool) -> tuple[DirectionalCurve, float]:
        """One direction's curve on the mesh h (`_curve`)."""
        total = sum(k for _, k in components)
        ups, lows, infs, shift, log_excess = [], [], [], 0.0, 0.0
        for (loss, k), tails in zip(components, all_tails):
            lower_end, upper_end = float(tails.lower), float(tails.upper)
            cells = (upper_end - lower_end) / h + 3
            if cells > self.max_points:
                raise CertificationError(f"the PLD accountant declines: one {type(loss).__name__} step needs "
                                         f"{cells:.3g} grid points (> max_points={self.max_points})")
            require_memory("PLD", f"one {type(loss).__name__} step on {int(cells)} points", 8.0 * cells * 24,
                           self.max_memory)
            regions, stride = coarse_regions(loss, h, lower_end, upper_end)
            law = discretise(loss, h, lower_end, upper_end, optimistic=optimistic, regions=regions, stride=stride)
            optimistic = optimistic and law.lower.size > 0  # a part with no lower law: the lower end is 0
            ups.append((law.upper, law.i0, k))
            lows.append((law.lower if optimistic else law.upper, law.i0, k))
            infs.append(law.upper_inf)
            log_excess += k * math.log(law.lower_excess)
            shift += k * 2.3e-16 * max(abs(lower_end), abs(upper_end)) + k * 2.3e-16 * h
        if self.target_delta is not None and not optimistic:
            raise CertificationError("the PLD accountant declines: target_delta needs an optimistic law for every part")
        if not shift < 1e-6:
            raise CertificationError(f"the PLD accountant declines: the grid points' rounding, summed over {total} "
                                     f"steps, moves the composed losses by up to {shift:.3g} (>= 1e-6)")
        mgf_up, mgf_low = part_log_mgfs(ups, h), part_log_mgfs(lows, h)
        details: tuple[tuple[str, float], ...] = (("mesh", h), ("location_shift", shift),
                                                  ("lower_excess_factor", math.exp(log_excess)))
        if self.target_delta is not None:
            lam = tilt_for(mgf_up, self.target_delta)
            return tilted_curve(direction, ups, lows, infs, h, shift, math.exp(log_excess), lam, mgf_up,
                                self.max_points, self.max_memory, details), h
        a_up, b_up = window(mgf_up, _TAIL)
        a_low, b_low = window(mgf_low, _TAIL)
        # mass below the window wraps onto it and only raises the circular convolution (`compose`): the pessimistic
        # law needs no lower end of its own, so with an optimistic law the window starts at that law's (whose
        # ``below`` is charged); the pessimistic law's Chernoff end lies lower, where the leftover mass at each
        # step's lowest grid point composes (add direction, 1e5 steps of q = 1e-6: -2.24 against -1.38)
        a, b = (a_low if optimistic else a_up), max(b_up, b_low)
        trig: dict = {}  # the two laws share their window, and mostly the angles of their direct sums
        upper = compose(ups, infs, h, a, b, self.max_points, self.max_memory, mgf_up, trig)
        if optimistic:
            lower = compose(lows, [0.0] * len(lows), h, a, b, self.max_points, self.max_memory, mgf_low, trig)
        else:  # no lower law: the curve's lower end is 0
            lower = Composed(j0=upper.j0, pmf=np.zeros(upper.pmf.size, dtype=upper.pmf.dtype), inf_mass=0.0,
                             above=0.0, below=0.0, fp=0.0)
        details += (("window_lower", a), ("window_upper", b))
        return PLDCurve(direction, upper, lower, h, shift, details, math.exp(log_excess)), h


def pld_profile(mechanism: Mechanism, **options: Any) -> PrivacyProfile:
    """``PLDAccountant(**options).profile(mechanism)``."""
    return PLDAccountant(**options).profile(mechanism)


@register_accountant("pld")
class PLD(LossAccountant, engine=PLDAccountant, label="PLD", reader=readable_losses):
    """Connect-the-dots PLD accountant (Doroshenko et al. 2022); options go to ``PLDAccountant``."""

    name = "pld"
