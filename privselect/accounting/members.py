"""The members of ``accountant="auto"``: each accountant's profile of the mechanism, built on first use."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable

from .profile import PrivacyProfile

__all__ = ["BUILD_ERRORS", "LazyMember", "floor_of"]

logger = logging.getLogger("privselect.accounting.auto")

#: Errors that mean "this accountant cannot certify this mechanism here"; the next one is used.
BUILD_ERRORS = (ValueError, ArithmeticError, MemoryError)


class LazyMember:
    """One accountant's profile of the mechanism, built on first use (or its build failure)."""

    def __init__(self, name: str, build: Callable[[], PrivacyProfile], floor_hint: float = 0.0,
                 floor_only: bool = False, eps_floor_only: bool | None = None) -> None:
        self.name, self._build, self.floor_hint, self.floor_only = name, build, floor_hint, floor_only
        #: for eps(delta) queries: joins only near the earlier floor (default: as for delta(eps))
        self.eps_floor_only = floor_only if eps_floor_only is None else eps_floor_only
        self._profile: PrivacyProfile | None = None
        self._views: dict[str, PrivacyProfile] = {}
        self.failure: str | None = None

    @property
    def built(self) -> bool:
        return self._profile is not None or self.failure is not None

    def get(self) -> PrivacyProfile | None:
        if not self.built:
            try:
                self._profile = self._build()
            except BUILD_ERRORS as exc:  # cannot certify here: the other members answer
                self.failure = f"{type(exc).__name__}: {exc}"
                logger.debug("auto: %s accountant failed: %s", self.name, self.failure)
        return self._profile

    def view(self, direction: str) -> PrivacyProfile | None:
        """The profile restricted to one neighbouring direction, where it has a curve of its own
        (else the whole profile: its max over directions bounds each direction)."""
        profile = self.get()
        if profile is None or direction == "both":
            return profile
        if direction not in self._views:
            curves = tuple(c for c in profile.curves if c.direction == direction)
            self._views[direction] = dataclasses.replace(profile, curves=curves) if curves else profile
        return self._views[direction]


def floor_of(profile: PrivacyProfile) -> float:
    """The member's smallest certifiable delta (1 if even its error budget cannot be computed)."""
    try:  # per curve: CF's error_budget evaluates its terms at reference points (seconds)
        return max(c.min_delta for c in profile.curves)
    except BUILD_ERRORS:
        return 1.0
