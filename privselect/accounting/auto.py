"""``accountant="auto"``: the tightest certified answer among the accountants it runs.

Every accountant's profile is a certified upper bound (and a lower bound) on the same
true profile, so their pointwise minimum of upper bounds and maximum of lower bounds is
again a certified bracket, for delta(eps) and for eps(delta) alike ("keep every
representation, take the pointwise best", as autodp does). `MinProfile` answers each
query from every member that can certify it and records which member gave the answer.

Which accountants run (chosen cheaply, never all of them blindly):

1. ``exact`` if it supports the mechanism (its profile is the truth up to rounding; alone).
2. otherwise ``prv`` (fast, accurate at moderate delta) and ``rdp`` (cheap, answers every
   delta: the safety net); ``cf`` (relative precision at tiny delta) is built on first use,
   when a query falls below PRV's floating-point floor, when PRV could not be built, or when
   PRV's upper delta at a queried eps is within a factor 1e3 of that floor.

A query is refused only if no accountant supports the mechanism.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ..mechanisms import Mechanism
from .base import Accountant, UnsupportedMechanismError, get_accountant, register_accountant
from .profile import CertificationError, DirectionalCurve, ErrorBudget, PrivacyProfile

__all__ = ["Auto", "MinProfile", "LazyMember"]

logger = logging.getLogger(__name__)

#: Errors that mean "this accountant cannot certify this mechanism here"; the next one is used.
_BUILD_ERRORS = (ValueError, ArithmeticError, MemoryError)
#: target_delta of the PRV profile built on demand for queries below the default PRV floor.
_SMALL_TARGET = 1e-12
#: PRV answers delta(eps) queries alone while its upper bound is above this multiple of its floor.
_FLOOR_MARGIN = 1e3


class LazyMember:
    """One accountant's profile of the mechanism, built on first use (or its build failure)."""

    def __init__(self, name: str, build: Callable[[], PrivacyProfile]) -> None:
        self.name, self._build = name, build
        self._profile: PrivacyProfile | None = None
        self.failure: str | None = None

    @property
    def built(self) -> bool:
        return self._profile is not None or self.failure is not None

    def get(self) -> PrivacyProfile | None:
        if not self.built:
            try:
                self._profile = self._build()
            except _BUILD_ERRORS as exc:  # cannot certify here: the other members answer
                self.failure = f"{type(exc).__name__}: {exc}"
                logger.debug("auto: %s accountant failed: %s", self.name, self.failure)
        return self._profile


def _floor_of(profile: PrivacyProfile) -> float:
    """The member's smallest certifiable delta (1 if even its error budget cannot be computed)."""
    try:  # per curve: CF's error_budget evaluates its terms at reference points (seconds)
        return max(c.min_delta for c in profile.curves)
    except _BUILD_ERRORS:
        return 1.0


class PointwiseMinCurve(DirectionalCurve):
    """min over members of the upper bounds, max of the lower bounds (each member: max over directions).

    ``eager`` members answer every query; ``fallback`` members are built only when a query
    needs them (below an eager member's floor, or where the eager answers are near it).
    """

    direction = "both"

    def __init__(self, eager: list[LazyMember], fallback: list[LazyMember]) -> None:
        self.eager, self.fallback = eager, fallback

    # members that are available now
    def _profiles(self, members: list[LazyMember]) -> list[tuple[str, PrivacyProfile]]:
        # an uncertified profile (an error estimate, e.g. CF's quadrature of a subsampled Laplace) never answers
        return [(m.name, p) for m in members for p in (m.get(),) if p is not None and p.certified]

    @property
    def error_budget(self) -> ErrorBudget:  # type: ignore[override]
        profiles = self._profiles(self.eager) + [(m.name, m.get()) for m in self.fallback if m._profile is not None]
        budgets = []
        for name, p in profiles:
            try:
                budgets.append((name, p.error_budget))
            except _BUILD_ERRORS:
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

    # -- the table of member brackets ------------------------------------------------------

    def _table(self, query: np.ndarray, bracket, trivial, needs_fallback) -> tuple[list[str], np.ndarray, np.ndarray]:
        """Names, lower and upper brackets of the eager members (and the fallback ones if needed).

        A member whose query fails numerically contributes the ``trivial`` bracket (valid, never chosen).
        """
        def row(name: str, prof: PrivacyProfile):
            try:
                return (name, *bracket(prof, query))
            except _BUILD_ERRORS as exc:
                logger.debug("auto: %s accountant failed at query time: %s", name, exc)
                return (name, *trivial(query))

        rows = [row(name, prof) for name, prof in self._profiles(self.eager)]
        eager_ok = all(m.get() is not None for m in self.eager)
        # Pointwise rule (the answer at a point never depends on the other points asked or on the
        # query history): a fallback member counts where needs_fallback(point) holds.
        needed = np.ones(query.shape, dtype=bool) if (not rows or not eager_ok) else needs_fallback(query, rows)
        if needed.any():
            for name, prof in self._profiles(self.fallback):
                _, low, up = row(name, prof)
                t_low, t_up = trivial(query)
                rows.append((name, np.where(needed, low, t_low), np.where(needed, up, t_up)))
        if not rows:
            raise CertificationError("no accountant could build a profile of this mechanism: "
                                     + "; ".join(f"{m.name}: {m.failure}" for m in self.eager + self.fallback))
        names, lows, ups = zip(*rows)
        return list(names), np.stack([np.asarray(x, dtype=float) for x in lows]), \
            np.stack([np.asarray(x, dtype=float) for x in ups])

    @staticmethod
    def _best(table) -> tuple[np.ndarray, np.ndarray]:
        _, lows, ups = table
        upper = np.min(ups, axis=0)
        return np.minimum(np.max(lows, axis=0), upper), upper

    @staticmethod
    def _source(table) -> np.ndarray:
        names, _, ups = table
        return np.asarray(names, dtype=object)[np.argmin(ups, axis=0)]

    def _floor(self) -> float:
        """The lowest positive floating-point floor among the eager members (inf if none has one)."""
        floors = [_floor_of(p) for _, p in self._profiles(self.eager)]
        return min((f for f in floors if f > 0), default=math.inf)

    # -- delta(eps) ---------------------------------------------------------------------

    def _delta_table(self, e: np.ndarray):
        near_floor = lambda q, rows: np.min([r[2] for r in rows], axis=0) <= _FLOOR_MARGIN * self._floor()  # noqa: E731
        return self._table(e, lambda prof, q: prof.delta_bounds(q), lambda q: (np.zeros(q.shape), np.ones(q.shape)),
                           near_floor)

    def delta_bounds(self, eps):
        return self._best(self._delta_table(np.asarray(eps, dtype=float)))

    def delta_sources(self, eps) -> np.ndarray:
        """Name of the accountant whose upper bound on delta(eps) is the smallest, per eps."""
        return self._source(self._delta_table(np.asarray(eps, dtype=float)))

    # -- eps(delta) ---------------------------------------------------------------------

    @staticmethod
    def _eps_of(prof: PrivacyProfile, d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The member's bracket on eps(delta); (-inf, +inf) where delta is at or below its floor."""
        ok = d > _floor_of(prof)
        lower = np.full(d.shape, -np.inf)
        upper = np.full(d.shape, np.inf)
        if ok.any():
            lower[ok], upper[ok] = prof.epsilon_bounds(d[ok])
        return lower, upper

    def _eps_table(self, d: np.ndarray):
        return self._table(d, self._eps_of, lambda q: (np.full(q.shape, -np.inf), np.full(q.shape, np.inf)),
                           lambda q, rows: q <= self._floor())

    def epsilon_bounds(self, delta):
        return self._best(self._eps_table(np.asarray(delta, dtype=float)))

    def epsilon_sources(self, delta) -> np.ndarray:
        """Name of the accountant whose upper bound on eps(delta) is the smallest, per delta."""
        return self._source(self._eps_table(np.asarray(delta, dtype=float)))


@dataclass(frozen=True)
class MinProfile(PrivacyProfile):
    """A [`PrivacyProfile`][privselect.accounting.auto.PrivacyProfile] that is the pointwise best of several accountants' profiles.

    ``epsilon_source(delta)`` / ``delta_source(eps)`` name the accountant that gave each answer.
    """

    def _min_curve(self) -> PointwiseMinCurve:
        return self.curves[0]  # type: ignore[return-value]

    def epsilon_source(self, delta) -> str | np.ndarray:
        """Which accountant gave the upper bound on eps(delta)."""
        out = self._min_curve().epsilon_sources(np.asarray(delta, dtype=float))
        return str(out) if np.ndim(delta) == 0 else out

    def delta_source(self, eps) -> str | np.ndarray:
        """Which accountant gave the upper bound on delta(eps)."""
        out = self._min_curve().delta_sources(np.asarray(eps, dtype=float))
        return str(out) if np.ndim(eps) == 0 else out

    @property
    def members(self) -> dict[str, PrivacyProfile | str]:
        """The members built so far: their profile, or why it could not be built."""
        curve = self._min_curve()
        return {m.name: (m._profile if m._profile is not None else m.failure)
                for m in curve.eager + curve.fallback if m.built}


@register_accountant("auto")
class Auto(Accountant):
    """The tightest certified profile among the accountants it runs (module docstring).

    ``options``: per-accountant option dicts (e.g. ``cf={"rel_tol": 1e-9}``); any other option
    goes to the PRV accountant (``eps_error``, ``delta_error``, ``target_delta``, ...).
    """

    name = "auto"
    order = ("exact", "prv", "cf", "rdp")

    def __init__(self, **options: Any) -> None:
        self.options = options
        per = {name: dict(options.get(name) or {}) for name in self.order}
        per["prv"].update({key: value for key, value in options.items() if key not in self.order})
        self._members = {name: get_accountant(name, **per[name]) for name in self.order}
        # Below the floor of the PRV profile built for target_delta (default 1e-5, floor ~1e-8), a
        # second PRV profile built for tiny deltas (long-double composition, floor ~1e-13) answers
        # where CF cannot certify (e.g. subsampled Laplace, whose CF phi is only an estimate).
        small = dict(per["prv"], target_delta=min(_SMALL_TARGET, per["prv"].get("target_delta", 1.0)))
        small.pop("delta_error", None)
        self._members["prv(small delta)"] = get_accountant("prv", **small)

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
        eager = [LazyMember(n, self._builder(n, mechanism)) for n in ("prv", "rdp") if n in usable]
        fallback = [LazyMember(n, self._builder(n, mechanism)) for n in ("cf",) if n in usable]
        if "prv" in usable:
            cf = fallback[0] if fallback else None
            build_small = self._builder("prv(small delta)", mechanism)

            def small_prv() -> PrivacyProfile:
                # not where CF is certified and tight at tiny delta (then it is exact and cheaper)
                prof = cf.get() if cf is not None else None
                if prof is not None and prof.certified:
                    lo, up = prof.epsilon_bounds(_SMALL_TARGET * 10)
                    if 0 < lo and up <= lo * (1 + 1e-4):
                        raise ValueError("not needed: the CF profile is certified and tight")
                return build_small()

            fallback.append(LazyMember("prv(small delta)", small_prv))
        if not eager:
            eager, fallback = fallback, []
        return MinProfile(curves=(PointwiseMinCurve(eager, fallback),), method="auto", mechanism=mechanism,
                          description="pointwise best of " + ", ".join(m.name for m in eager + fallback),
                          metadata=(("accountants", tuple(m.name for m in eager + fallback)),))

    def _builder(self, name: str, mechanism: Mechanism) -> Callable[[], PrivacyProfile]:
        return lambda: self._members[name].profile(mechanism)
