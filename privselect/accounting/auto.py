"""``accountant="auto"``: the tightest certified answer among the accountants it runs.

Every accountant's profile is a certified upper bound (and a lower bound) on the same
true profile, so their pointwise minimum of upper bounds and maximum of lower bounds is
again a certified bracket, for delta(eps) and for eps(delta) alike ("keep every
representation, take the pointwise best", as autodp does). `MinProfile` answers each
query from every member that can certify it and records which member gave the answer.

Members: ``exact``, ``closed`` (pure- and approximate-DP composition of amplified steps), ``rdp``,
``prv`` (Gopi, Lee, Wutschitz 2021) and a second ``prv(small delta)`` profile composed for tiny deltas,
``pld`` (connect-the-dots privacy-loss distributions composed by one long-double FFT: Doroshenko, Ghazi,
Kamath, Kumar, Manurangsi 2022; its floor is its floating-point error, ~1e-12), ``cf`` (Zhu, Dong, Wang 2022) at a work cap and ``cf(fine)`` at
CF's own cap. Which of them run (chosen cheaply, never all of them blindly):

1. ``exact`` if it supports the mechanism (its profile is the truth up to rounding; alone).
2. otherwise ``closed`` and ``rdp`` answer every point first, in microseconds (from 1e3 compositions on,
   ``rdp`` answers eps(delta) last: it is 5-10% looser there, and costs 15-20 ms); a point they settle exactly
   (delta = 0, eps = 0) is asked of no other member. Their answer never ends the search by itself: it is
   a loose bracket (lower end 0) wherever they do not settle the point, so the numerical members are asked
   in tiers, each built on first use by a query that the earlier tiers answer loosely or at or near their
   floating-point floor (or everywhere, if an earlier member could not be built or declined).

**Order: the member that will win is asked first.** The tiers follow each member's cost and tightness
model, read off the mechanism before anything is built (compositions, sum of count x sampling rate,
closed-form or atomic characteristic functions):

   ============================================  =====================================================
   mechanism                                     tiers (delta(eps) | eps(delta))
   ============================================  =====================================================
   >= 1e5 compositions                           pld, cf, prv + prv(small delta), cf(fine) (both; then
                                                 rdp, for eps(delta))
   >= 1e3 compositions                           cf, pld, prv, prv(small delta), cf(fine) | pld, cf, prv,
                                                 prv(small delta), cf(fine), rdp
   closed-form CF                                cf, pld, prv, prv(small delta), cf(fine) (both)
   purely atomic (RR, pure DP; < 1e3)            cf, pld, prv, ... | as the rows below
   sum of count x rate < 1 (few sampled steps)   prv, pld, prv(small delta), cf | pld, prv,
                                                 prv(small delta), cf, cf(fine)
   otherwise                                     prv, pld, prv(small delta), cf | pld, prv, cf,
                                                 prv(small delta), cf(fine)
   ============================================  =====================================================

   Every row ends with ``pld(small delta)`` (pld tilted towards delta ~ 1e-15: relative precision far below
   the other floors), asked only near the earlier members' floor.

   Why this order (each member's cost, floor and where it is tight), and what "near" and "loose" mean in
   numbers: docs/design.md, "The default accountant". A later direction is refined by later tiers only where
   it can decide the max (``MinProfile._eps_tables``). Without PRV, every supported accountant runs at once.

**Memory and time are contracts.** Every numerical member estimates its peak memory before allocating
and declines with `CertificationError` past ``max_memory`` (bytes; default 2 GB,
`privselect.accounting.budget.DEFAULT_MAX_MEMORY`), an option of the accountant that reaches every member:
``get_accountant("auto", max_memory=4e9)`` or ``ps.privacy_profile(m, max_memory=4e9)``. PRV and CF also cap
their FFT size and work. A member that declines, or raises ``ValueError``, ``MemoryError`` or
``OverflowError`` (``ArithmeticError``), at build or query time is skipped: the other members answer.

A query is refused only if no accountant supports the mechanism.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from ..mechanisms import Mechanism
from .base import Accountant, UnsupportedMechanismError, get_accountant, register_accountant
from .cf import CF
from .closed import ClosedBounds
from .members import BUILD_ERRORS, LazyMember, floor_of
from .profile import CertificationError, DirectionalCurve, ErrorBudget, PrivacyProfile

__all__ = ["Auto", "MinProfile", "LazyMember"]

logger = logging.getLogger(__name__)

#: target_delta of the PRV profile built on demand for queries below the default PRV floor.
_SMALL_TARGET = 1e-12
#: delta(eps): tier i > 0 joins where the best upper delta of the earlier tiers is within
#: _DELTA_MARGINS[i - 1] times their floor (PRV's additive delta error is below its floor, so above
#: 1e3 floors its relative error is below 1e-3); below that CF joins (DP-SGD's plot from eps = 4.3 on,
#: where the small-delta PRV handed over to RDP before: a seam of 6-11x).
_DELTA_MARGINS = (1e3, 1e3)
#: ... or where the best delta bracket so far is wider than this part of its upper end (the tightness
#: goal for delta(eps) is 1% of the best member: PRV's eps_error alone widens its bracket by ~0.5-2%).
_DELTA_LOOSE_REL = 0.005
#: delta(eps): a later-tier member is asked only where the best upper delta so far exceeds this multiple
#: of its floor hint (its additive delta error): below, its bracket is more than 1% wide.
_DELTA_HINT_RATIO = 100.0
#: eps(delta): tier i > 0 joins where delta is within this multiple of the earlier floor (the delta
#: error then moves the eps bracket by at most the curve's change over a 5% change of delta).
_EPS_FLOOR_MARGIN = 1e1
#: ... or where the best eps bracket so far is wider than this (relative, plus absolute) part of it:
#: below the tightness goal (0.5%, relative to max(eps, 1e-3)), so an answer that stops at a tier
#: is within 0.4% of the true eps(delta), and the next tier is tried wherever it might not be.
_EPS_LOOSE_REL, _EPS_LOOSE_ABS = 0.004, 4e-6
#: CF inside auto (CF alone: max_work 2e8, rel_tol 1e-11). The work cap per integration line: on 1e6
#: subsampled steps it costs 0.15% of bracket width and saves 70% of the time (a bracket it leaves loose
#: brings the PRVs in). The relative delta precision: 1e-6 moves eps by about 1e-6 / v, far below the
#: 0.4% above, and a 200-fold Laplace needs a 2,000-point grid instead of the 131,072-point cap (0.05 s
#: instead of 0.25 s; the same eps to 7 digits).
#: The quadrature cap: a subsampled Gaussian with noise below ~0.035 (mu = 1/sigma above ~28; 2e4 nodes per
#: phi value) took 15-35 s in CF for a bracket like [12, 27376]: CF declines there, and the closed-form
#: bounds, RDP and PRV answer (CF alone: 2^19 nodes).
_CF_OPTIONS = {"max_work": 2e7, "rel_tol": 1e-6, "max_quadrature_nodes": 1 << 14}
#: PRV's FFT size cap inside auto (PRV alone: 2^24): 66 subsampled Laplace steps at delta 1e-21 needed
#: 1.2e7 points per direction and 25-32 s to build; past 2^22 PRV declines and the other members answer.
_PRV_MAX_POINTS = 1 << 22
#: Compositions from which CF runs before PRV (``Auto.many_compositions``).
_CF_FIRST_FROM = 100_000
#: Compositions from which CF answers eps(delta) queries before PRV (``Auto.eps_tiers_many``).
_CF_FIRST_FOR_EPS_FROM = 1_000
#: Expected sampled steps (sum of count x rate) below which the small-delta PRV answers eps(delta)
#: before CF (``Auto.eps_tiers_few``).
_CF_LAST_FOR_EPS_BELOW = 1.0
#: Compositions below which the small-delta PRV also joins eps(delta) where the bracket is loose: it costs 0.1-0.5 s
#: there, and is tightest for a subsampled Laplace at small delta (164 steps, q = 1.5e-4, delta = 2.7e-12: 0.5 s,
#: 0.2% below pld). From 1e3 steps on its build costs seconds (10^6 steps: 9 s, 0.9 GB): only near the floor.
_SMALL_PRV_LOOSE_BELOW = 1_000
#: target_delta of the tilted pld member (``PLDAccountant(target_delta=...)``), asked below the other floors.
_PLD_SMALL_TARGET = 1e-15
#: Work cap of the fine CF member (CF alone's default), tried last where the capped CF's bracket is loose.
_CF_FINE_MAX_WORK = 2e8


class PointwiseMinCurve(DirectionalCurve):
    """min over members of the upper bounds, max of the lower bounds, in one neighbouring direction
    (``"both"``: each member's max over directions).

    ``tiers[0]`` members answer every query. A member of a later tier is built only when a query
    needs it: where every earlier member is at or near its floating-point floor (delta(eps): the
    best upper delta is within ``_DELTA_MARGINS`` of the lowest earlier floor; eps(delta): delta is
    within ``_EPS_FLOOR_MARGIN`` of it), or everywhere if an earlier member could not be built.
    The rule is pointwise: the answer at a point never depends on the other points asked.
    """

    def __init__(self, delta_tiers: list[list[LazyMember]], eps_tiers: list[list[LazyMember]],
                 direction: str = "both", first: Sequence[LazyMember] = (),
                 eps_first: Sequence[LazyMember] | None = None) -> None:
        self.direction = direction
        self.first = list(first)
        #: the members that answer every eps(delta) point first (default: ``first``)
        self.eps_first = self.first if eps_first is None else list(eps_first)
        self.delta_tiers = [list(tier) for tier in delta_tiers if tier]
        self.eps_tiers = [list(tier) for tier in eps_tiers if tier]
        self._hints = {m.name: m.floor_hint for m in self.members}

    @property
    def members(self) -> list[LazyMember]:
        return list(dict.fromkeys(m for tier in [self.first] + self.delta_tiers + self.eps_tiers for m in tier))

    def _profiles(self, members: list[LazyMember]) -> list[tuple[str, PrivacyProfile]]:
        # an uncertified profile (an error estimate, e.g. CF's quadrature of a subsampled Laplace) never answers
        return [(m.name, p) for m in members for p in (m.view(self.direction),) if p is not None and p.certified]

    @property
    def error_budget(self) -> ErrorBudget:  # type: ignore[override]
        built = [m for m in self.members if m._profile is not None or m in self.first]
        budgets = []
        for name, p in self._profiles(built):
            # a budget computed at reference points (CF: seconds of grids) is left out until it is known:
            # the minimum over fewer members is larger, so still a valid budget
            if not all(c.error_budget_known for c in p.curves):
                continue
            try:
                budgets.append((name, p.error_budget))
            except BUILD_ERRORS:
                continue
        if not budgets:
            return ErrorBudget(eps_error=math.inf, delta_error=math.inf, min_delta=1.0)
        # The min/max bracket is no wider than any member's bracket; the floor is the lowest one.
        return ErrorBudget(
            eps_error=min(b.eps_error for _, b in budgets),
            delta_error=min(b.delta_error for _, b in budgets),
            min_delta=min(b.min_delta for _, b in budgets),
            details=tuple((f"{name}:{k}", v) for name, b in budgets for k, v in b.details),
        )

    @property
    def min_delta(self) -> float:
        """The lowest floor among the members, unbuilt ones by their hint (RDP and CF: 0), without
        building any: the smallest delta this curve answers."""
        return min((self._effective_floor(m.name, m._profile) if m._profile is not None else m.floor_hint)
                   for m in self.members)

    # -- the table of member brackets ------------------------------------------------------

    def _table(self, first, tiers, query: np.ndarray, bracket, trivial, near_floor, settled,
               skip_below_hint: bool = False) -> tuple[list[str], np.ndarray, np.ndarray]:
        """Names, lower and upper brackets of the members that the query needs, tier by tier.

        The closed-form members (``first``, microseconds) answer every point first; a point whose
        bracket they already settle (``settled``: e.g. delta = 0 beyond the pure epsilon, or eps = 0)
        is asked of no other member, and where every point is settled no other member is built.
        A member is evaluated only at the points that need it; elsewhere, and where its query fails
        numerically, it contributes the ``trivial`` bracket (valid, never chosen).
        ``near_floor(query, rows, floor, i)`` says where the rows so far are at or near ``floor``
        (tier ``i`` is being considered). With ``skip_below_hint`` (eps(delta) queries), a first-tier
        member is not built when every delta asked is at or below its ``floor_hint``.
        """
        shape, flat = query.shape, query.reshape(-1)

        def row(name: str, prof: PrivacyProfile, mask: np.ndarray):
            low, up = trivial(flat)
            if mask.any():
                try:
                    sub_low, sub_up = bracket(name, prof, flat[mask], mask)
                    low, up = np.array(low, dtype=float), np.array(up, dtype=float)
                    low[mask], up[mask] = np.reshape(sub_low, -1), np.reshape(sub_up, -1)
                except BUILD_ERRORS as exc:
                    logger.debug("auto: %s accountant failed at query time: %s", name, exc)
            return name, low, up

        everywhere = np.ones(flat.shape, bool)
        rows: list[tuple[str, np.ndarray, np.ndarray]] = [row(name, prof, everywhere)
                                                          for name, prof in self._profiles(first)]
        open_ = ~settled(rows) if rows else everywhere
        earlier: list[LazyMember] = []
        skipped = False
        for i, tier in enumerate(tiers):
            if not open_.any():
                break
            if skip_below_hint and i == 0 and len(tiers) > 1:
                # A member answers eps(delta) only above its floor (at least its hint): one that would
                # answer at no point asked is not built (e.g. PRV built for delta 1e-5, asked eps(1e-10)).
                unused = [m for m in tier if not m.built and np.all(flat[open_] <= m.floor_hint)]
                if unused:
                    tier = [m for m in tier if m not in unused]
                    rows.extend(row(name, prof, open_) for name, prof in self._profiles(tier))
                    earlier.extend(tier)
                    skipped = True  # the next tier answers everywhere
                    continue
            if earlier:
                asked = [m for m in earlier if m.built]  # members passed over (floor above the answer) are not built
                complete = len(rows) > len(first) and not skipped and all(m.get() is not None for m in asked)
                skipped = False
                needed = (near_floor(flat, rows, self._floor(asked), i) if complete else everywhere) & open_
                if not np.any(needed):
                    break
                if not skip_below_hint:
                    # delta(eps): a member whose additive delta error (about its floor hint) is more than 1% of
                    # the best answer so far cannot tighten it: it is not asked there (nor built for it).
                    # A member that only lowers the floor (``LazyMember.floor_only``: the small-delta PRV, the same
                    # discretisation composed in long double) is asked only near the earlier floor, not where the
                    # bracket is merely loose: there it costs 10x the first PRV for a bracket ~0.2% narrower.
                    best = np.min([r[2] for r in rows], axis=0)
                    near = best <= _DELTA_MARGINS[0] * self._floor(asked)

                    def wanted(m: LazyMember, needed=needed, best=best, near=near) -> np.ndarray:
                        mask = needed & (best > _DELTA_HINT_RATIO * m.floor_hint)
                        return mask & near if m.floor_only else mask

                    useful = [m for m in tier if np.any(wanted(m))]
                    for m in useful:
                        for name, prof in self._profiles([m]):
                            rows.append(row(name, prof, wanted(m)))
                    earlier.extend(tier)
                    continue
                # eps(delta): a floor-only member joins only near the earlier floor (not where merely loose)
                near_eps = flat <= _EPS_FLOOR_MARGIN * self._floor(asked)
                tier = [m for m in tier if not m.eps_floor_only or np.any(needed & near_eps)]
                for m in tier:
                    for name, prof in self._profiles([m]):
                        rows.append(row(name, prof, needed & near_eps if m.eps_floor_only else needed))
                earlier.extend(tier)
                continue
            else:
                rows.extend(row(name, prof, open_) for name, prof in self._profiles(tier))
                skipped = False
            earlier.extend(tier)
        if not rows:
            raise CertificationError("no accountant could build a profile of this mechanism: "
                                     + "; ".join(f"{m.name}: {m.failure}" for m in self.members))
        names, lows, ups = zip(*rows)
        return list(names), np.stack([np.asarray(x, dtype=float).reshape(shape) for x in lows]), \
            np.stack([np.asarray(x, dtype=float).reshape(shape) for x in ups])

    @staticmethod
    def _best(table) -> tuple[np.ndarray, np.ndarray]:
        _, lows, ups = table
        ups = np.where(np.isnan(ups), np.inf, ups)  # a member's NaN bounds nothing: the others answer
        lows = np.where(np.isnan(lows), -np.inf, lows)
        upper = np.min(ups, axis=0)
        return np.minimum(np.max(lows, axis=0), upper), upper

    @staticmethod
    def _source(table) -> np.ndarray:
        names, _, ups = table
        return np.asarray(names, dtype=object)[np.argmin(np.where(np.isnan(ups), np.inf, ups), axis=0)]

    def _effective_floor(self, name: str, prof: PrivacyProfile) -> float:
        """The member's floating-point floor, and at least its hint (so that whether it answers at a
        delta never depends on whether an earlier query built it)."""
        return max(floor_of(prof), self._hints.get(name, 0.0))

    def _floor(self, members: list[LazyMember]) -> float:
        """The lowest positive floor among ``members`` (inf if none has one)."""
        floors = [self._effective_floor(name, p) for name, p in self._profiles(members)]
        return min((f for f in floors if f > 0), default=math.inf)

    # -- delta(eps) ---------------------------------------------------------------------

    def _delta_table(self, e: np.ndarray):
        def near_floor(q, rows, floor, i):
            """Near the earlier floor, or where the best delta bracket so far is loose (wider than
            _DELTA_LOOSE_REL of its upper end): the next tier joins."""
            margin = _DELTA_MARGINS[min(i, len(_DELTA_MARGINS)) - 1]
            ups = np.min([r[2] for r in rows], axis=0)
            lows = np.max([r[1] for r in rows], axis=0)
            loose = ups - np.maximum(lows, 0.0) > _DELTA_LOOSE_REL * ups
            return (ups <= margin * floor) | loose

        def settled(rows):  # delta = 0 (e.g. beyond the pure epsilon): no member can say less
            return np.min([r[2] for r in rows], axis=0) <= 0.0

        return self._table(self.first, self.delta_tiers, e, lambda name, prof, q, mask: prof.delta_bounds(q),
                           lambda q: (np.zeros(q.shape), np.ones(q.shape)), near_floor, settled)

    def delta_bounds(self, eps):
        return self._best(self._delta_table(np.asarray(eps, dtype=float)))

    def delta_sources(self, eps) -> np.ndarray:
        """Name of the accountant whose upper bound on delta(eps) is the smallest, per eps."""
        return self._source(self._delta_table(np.asarray(eps, dtype=float)))

    # -- eps(delta) ---------------------------------------------------------------------

    def _eps_of(self, name: str, prof: PrivacyProfile, d: np.ndarray,
                decided_above: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The member's bracket on eps(delta); (-inf, +inf) where delta is at or below its floor.

        Where ``decided_above`` (a certified lower bound on another direction's eps(delta)) is positive
        and this member's upper delta there is at most delta, (-inf, decided_above] is returned without
        a search: one delta(eps) evaluation shows that this direction cannot decide the max."""
        shape, d = d.shape, d.reshape(-1)
        ok = d > self._effective_floor(name, prof)
        lower = np.full(d.shape, -np.inf)
        upper = np.full(d.shape, np.inf)
        if decided_above is not None:
            above = np.broadcast_to(decided_above, shape).reshape(-1)
            settled = ok & np.isfinite(above) & (above > 0)
            if settled.any():
                settled[settled] = prof.delta_bounds(above[settled])[1] <= d[settled]
                upper[settled] = above[settled]
                ok &= ~settled
        if ok.any():
            lower[ok], upper[ok] = prof.epsilon_bounds(d[ok])
        return lower.reshape(shape), upper.reshape(shape)

    def _eps_table(self, d: np.ndarray, decided_above: np.ndarray | None = None):
        """The member brackets on eps(delta). ``decided_above``: a certified lower bound on another
        direction's eps(delta); where this direction's upper bound is at or below it, the max over
        directions does not depend on this direction: its members only check that (``_eps_of``), and
        no later tier refines it."""
        above = None if decided_above is None else np.broadcast_to(decided_above, d.shape).reshape(-1)

        def needs_next(q, rows, floor, i):
            needed = self._eps_needs_next(q, rows, floor, i)
            if above is not None:
                needed &= np.min([r[2] for r in rows], axis=0) > above
            return needed

        def settled(rows):  # eps = 0 proven (e.g. a record almost never sampled): no member can say less
            return np.min([r[2] for r in rows], axis=0) <= np.maximum(np.max([r[1] for r in rows], axis=0), 0.0)

        def bracket(name, prof, q, mask):
            return self._eps_of(name, prof, q, None if above is None else above[mask])

        return self._table(self.eps_first, self.eps_tiers, d, bracket, lambda q: (np.full(q.shape, -np.inf), np.full(q.shape, np.inf)),
                           needs_next, settled, skip_below_hint=True)

    @staticmethod
    def _eps_needs_next(q, rows, floor, i) -> np.ndarray:
        """Near the earlier floor, or where the best bracket so far is loose (CF's truncation can be,
        for few subsampled steps): the next tier joins."""
        lows = np.max([r[1] for r in rows], axis=0)
        ups = np.min([r[2] for r in rows], axis=0)
        with np.errstate(invalid="ignore"):
            loose = ~(ups - np.maximum(lows, 0.0) <= _EPS_LOOSE_REL * ups + _EPS_LOOSE_ABS) | ~np.isfinite(ups)
        return (q <= _EPS_FLOOR_MARGIN * floor) | loose

    def epsilon_bounds(self, delta):
        return self._best(self._eps_table(np.asarray(delta, dtype=float)))

    def epsilon_sources(self, delta) -> np.ndarray:
        """Name of the accountant whose upper bound on eps(delta) is the smallest, per delta."""
        return self._source(self._eps_table(np.asarray(delta, dtype=float)))


@dataclass(frozen=True)
class MinProfile(PrivacyProfile):
    """A [`PrivacyProfile`][privselect.accounting.auto.PrivacyProfile] that is the pointwise best of several accountants' profiles.

    One curve per neighbouring direction (each the pointwise best in that direction; the profile
    is their max), or one ``"both"`` curve for a symmetric mechanism.
    ``epsilon_source(delta)`` / ``delta_source(eps)`` name the accountant that gave each answer
    (in the direction that decides it).
    """

    @property
    def min_curves(self) -> tuple[PointwiseMinCurve, ...]:
        """The curves, as the pointwise minima `Auto` built them with."""
        return cast("tuple[PointwiseMinCurve, ...]", self.curves)

    @staticmethod
    def _deciding(tables) -> np.ndarray:
        """Per point, the source of the direction with the largest upper value."""
        names = np.stack([PointwiseMinCurve._source(t) for t in tables])
        uppers = np.stack([PointwiseMinCurve._best(t)[1] for t in tables])
        return np.take_along_axis(names, np.argmax(uppers, axis=0)[None], axis=0)[0]

    def _eps_tables(self, d: np.ndarray) -> list:
        """Per direction, the member brackets on eps(delta). A direction after the first is refined by
        later tiers only where it can decide the max over directions: where its upper bound lies above
        the earlier directions' certified lower bounds (a subsampled mechanism's add direction, often
        far below the remove direction, would otherwise bring in CF's quadrature for nothing). The
        profile's bracket is the same as if every direction were refined everywhere."""
        tables, decided_above = [], None
        for curve in self.min_curves:
            table = curve._eps_table(d, decided_above)
            lower = PointwiseMinCurve._best(table)[0]
            decided_above = lower if decided_above is None else np.maximum(decided_above, lower)
            tables.append(table)
        return tables

    def _direction_epsilon_bounds(self, delta: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
        return [PointwiseMinCurve._best(table) for table in self._eps_tables(np.asarray(delta, dtype=float))]

    def _direction_epsilon_upper(self, delta: np.ndarray) -> list[np.ndarray]:
        """The upper ends of `_direction_epsilon_bounds` (the tiers decide by the lower ends too)."""
        return [up for _, up in self._direction_epsilon_bounds(delta)]

    def epsilon_source(self, delta) -> str | np.ndarray:
        """Which accountant gave the upper bound on eps(delta)."""
        d = np.asarray(delta, dtype=float)
        out = self._deciding(self._eps_tables(d))
        return str(out) if np.ndim(delta) == 0 else out

    def delta_source(self, eps) -> str | np.ndarray:
        """Which accountant gave the upper bound on delta(eps)."""
        e = np.asarray(eps, dtype=float)
        out = self._deciding([c._delta_table(e) for c in self.min_curves])
        return str(out) if np.ndim(eps) == 0 else out

    @property
    def members(self) -> dict[str, PrivacyProfile | str]:
        """The members built so far: their profile, or why it could not be built."""
        return {m.name: (m._profile if m._profile is not None else str(m.failure))
                for m in self.min_curves[0].members if m.built}


@register_accountant("auto")
class Auto(Accountant):
    """The tightest certified profile among exact, closed, RDP, PRV, pld and CF (module docstring: the
    members and the order in which they are asked).

    ``options``: ``max_memory`` (bytes one member's build or query may allocate, estimated before
    allocating; default 2 GB; past it the member declines and the others answer), per-accountant option
    dicts (e.g. ``cf={"rel_tol": 1e-9}``, ``pld={"points": 1 << 19}``); any other option goes to the PRV
    accountant (``eps_error``, ``delta_error``, ``target_delta``, ...).
    """

    name = "auto"
    order = ("exact", "prv", "cf", "rdp", "pld")
    #: Members by tier (after ``exact``, which answers alone when it supports the mechanism). delta(eps)
    #: queries come in large vectors (plots, selection bounds): the vectorised small-delta PRV first,
    #: CF (per-point saddle points) last. eps(delta) queries are few: CF and the small-delta PRV together.
    #: Evaluated first at every point, in microseconds (never built otherwise): the closed-form pure- and
    #: approximate-DP composition bounds and RDP. A point they settle exactly (delta = 0 beyond the pure
    #: epsilon, eps = 0) is asked of no other member.
    first = ("closed", "rdp")
    #: Members that lower the floor but hardly narrow a bracket above it: for delta(eps) they are asked
    #: only near the earlier members' floor (``PointwiseMinCurve._table``).
    floor_only = ("prv(small delta)", "pld(small delta)")
    delta_tiers = (("prv",), ("pld",), ("prv(small delta)",), ("cf",))
    #: eps(delta) otherwise: pld first (one FFT per law and a direct solve; the pessimistic laws make it the
    #: tightest member), PRV and CF where its bracket is loose or near its floor. The seed-112828 sweep's
    #: slowest cases were PRV-first: 851 steps at q = 1.5e-4 took 3.9 s in PRV, 1.7 s in pld (0.14% tighter).
    eps_tiers = (("pld",), ("prv",), ("cf",), ("prv(small delta)",), ("cf(fine)",))
    #: From this many compositions on, PRV's grid (which grows with the count) costs more than CF
    #: (whose cost barely does): CF answers first, and the PRV profiles are the fallback tier.
    many_compositions = (("pld",), ("cf",), ("prv", "prv(small delta)"), ("cf(fine)",))
    #: eps(delta) queries from 1e3 compositions on: PRV's grid (and build time) grows with the count (DP-SGD,
    #: 14063 steps: 0.8 s); pld's barely does (one FFT; its mesh follows the loss deviation) and its query is a
    #: direct solve: DP-SGD in 0.05 s, within 0.04% of CF (0.10-0.15 s for its two directions), which joins
    #: where pld's bracket is loose or near its floor, and the PRVs after it.
    eps_tiers_many = (("pld",), ("cf",), ("prv",), ("prv(small delta)",), ("cf(fine)",))
    #: eps(delta) queries for closed-form characteristic functions (fewer than 1e3 compositions): CF first (its
    #: relative precision makes it the tightest there; 200 x Laplace in 0.05 s), the others where it is loose.
    eps_tiers_closed_form = (("cf",), ("pld",), ("prv",), ("prv(small delta)",), ("cf(fine)",))
    #: eps(delta) queries where a record takes part in fewer than one step on average: the composed phi
    #: barely decays, so CF's grids are long (10-20 s for 1-10 steps at q <= 0.01, and its bracket is
    #: loose): pld, then the PRVs (the small-delta one 0.01-0.3 s), CF where their brackets are loose.
    eps_tiers_few = (("pld",), ("prv",), ("prv(small delta)",), ("cf",), ("cf(fine)",))
    #: delta(eps) queries where CF is cheap and tight (from 1e3 compositions on: DP-SGD's 101-point plot in
    #: 0.27 s, 0.5-2% tighter than PRV; closed-form characteristic functions; purely atomic mechanisms,
    #: randomized response or pure DP subsampled or not, whose delta is an exact sum over the enumerated
    #: atoms): CF first, the PRVs where its bracket is loose.
    delta_tiers_cf_first = (("cf",), ("pld",), ("prv",), ("prv(small delta)",), ("cf(fine)",))

    def __init__(self, **options: Any) -> None:
        self.options = options
        per = {name: dict(options.get(name) or {}) for name in self.order}
        # the memory budget binds every numerical member; any other option goes to PRV
        if "max_memory" in options:
            for name in ("prv", "cf", "pld"):
                per[name].setdefault("max_memory", options["max_memory"])
        per["prv"].update({key: value for key, value in options.items() if key not in self.order + ("max_memory",)})
        per["prv"].setdefault("max_points", _PRV_MAX_POINTS)
        per["cf"] = {**_CF_OPTIONS, **per["cf"]}
        self._members = {name: get_accountant(name, **per[name]) for name in self.order}
        # Below the floor of the PRV profile built for target_delta (default 1e-5, floor ~1e-8), a
        # second PRV profile built for tiny deltas (long-double composition, floor ~1e-13) answers
        # where CF cannot certify (e.g. subsampled Laplace, whose CF phi is only an estimate).
        small = dict(per["prv"], target_delta=min(_SMALL_TARGET, per["prv"].get("target_delta", 1.0)))
        small.pop("delta_error", None)
        self._members["prv(small delta)"] = get_accountant("prv", **small)
        # pld with its laws tilted towards delta ~ 1e-15: relative precision far below every other floor, asked
        # last and only there (ApproxDP with subsampled Laplace at delta 1e-15: 3.536 against closed's 25.0)
        self._members["pld(small delta)"] = get_accountant("pld", **{**per["pld"], "target_delta": _PLD_SMALL_TARGET})
        # CF at its own default work cap, where the capped CF above leaves a loose bracket (few subsampled
        # steps at small delta: 560 steps at q = 0.0017, delta = 1e-14, bracket [0.14, 1.75] -> [0.9586, 0.9588]).
        fine = {**per["cf"], "max_work": max(_CF_FINE_MAX_WORK, per["cf"]["max_work"])}
        self._members["cf(fine)"] = get_accountant("cf", **fine)
        self._members["closed"] = ClosedBounds()
        self._members["allocation"] = get_accountant("allocation")

    def _walk(self, mechanism: Mechanism, *, dry: bool) -> PrivacyProfile | None:
        reasons = {name: acc.supports(mechanism) for name, acc in self._members.items()}
        usable = [name for name, reason in reasons.items() if reason is None]
        if not usable:
            raise UnsupportedMechanismError(
                "no accountant supports this mechanism: " + "; ".join(f"{n}: {r}" for n, r in reasons.items()))
        if dry:
            return None
        if "exact" in usable:
            return self._members["exact"].profile(mechanism)
        if "allocation" in usable:  # random allocation: its own accountant alone (no other member reads it)
            return self._members["allocation"].profile(mechanism)
        compositions = sum(count for _, count in mechanism.components())
        lazy = {name: self._lazy(name, mechanism, compositions) for name in usable}

        def tiers(names_by_tier: tuple[tuple[str, ...], ...]) -> list[list[LazyMember]]:
            names_by_tier = names_by_tier + (("pld(small delta)",),)
            if "prv" not in usable:  # no PRV: every supported accountant at once (the fine CF and tilted pld last)
                last = ("cf(fine)", "pld(small delta)")
                merged = tuple(dict.fromkeys(n for n in sum(names_by_tier, ()) if n not in last))
                names_by_tier = (merged,) + tuple((n,) for n in last)
            return [[lazy[name] for name in tier if name in lazy] for tier in names_by_tier]

        member = self._members.get("cf") if "cf" in usable else None
        cf = member if isinstance(member, CF) else None
        closed_form = cf is not None and cf.closed_form(mechanism)
        if compositions >= _CF_FIRST_FROM:
            delta_tiers, eps_tiers = tiers(self.many_compositions), tiers(self.many_compositions)
        elif compositions >= _CF_FIRST_FOR_EPS_FROM:
            delta_tiers, eps_tiers = tiers(self.delta_tiers), tiers(self.eps_tiers_many)
        elif closed_form:
            delta_tiers, eps_tiers = tiers(self.delta_tiers), tiers(self.eps_tiers_closed_form)
        elif cf is not None and cf.sampled_steps(mechanism) < _CF_LAST_FOR_EPS_BELOW:
            delta_tiers, eps_tiers = tiers(self.delta_tiers), tiers(self.eps_tiers_few)
        else:
            delta_tiers, eps_tiers = tiers(self.delta_tiers), tiers(self.eps_tiers)
        if cf is not None and compositions < _CF_FIRST_FROM and (
                compositions >= _CF_FIRST_FOR_EPS_FROM or closed_form or cf.atomic(mechanism)):
            delta_tiers = tiers(self.delta_tiers_cf_first)
        first = [lazy[name] for name in self.first if name in lazy]
        eps_first = None
        if compositions >= _CF_FIRST_FOR_EPS_FROM and "rdp" in lazy:
            # From 1e3 compositions on, RDP's eps is 5-10% above the numerical members' and its curve costs
            # 15-20 ms on a subsampled Gaussian (a third of DP-SGD's whole query): it answers eps(delta) last.
            eps_first = [m for m in first if m.name != "rdp"]
            eps_tiers = eps_tiers + [[lazy["rdp"]]]
        directions = ("both",) if mechanism.is_symmetric else ("remove", "add")
        curves = tuple(PointwiseMinCurve(delta_tiers, eps_tiers, direction, first, eps_first)
                       for direction in directions)
        names = tuple(m.name for m in curves[0].members)
        return MinProfile(curves=curves, accountant="auto", mechanism=mechanism,
                          description="pointwise best of " + ", ".join(names),
                          metadata=(("accountants", names),))

    def _lazy(self, name: str, mechanism: Mechanism, compositions: int) -> LazyMember:
        accountant = self._members[name]
        floor_only = name in self.floor_only
        return LazyMember(name, lambda: accountant.profile(mechanism), accountant.floor_hint(),
                          floor_only=floor_only,
                          eps_floor_only=floor_only and (name != "prv(small delta)" or compositions >= _SMALL_PRV_LOOSE_BELOW))
