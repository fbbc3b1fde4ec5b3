"""A profile built on first need, with a cheap floor under its answers (``Risk``'s K-mixture profile)."""

from __future__ import annotations

import math
import threading
from collections.abc import Callable

import numpy as np

from .accounting.profile import PrivacyProfile
from .errors import CertificationError

__all__ = ["DeferredProfile"]

#: The floor's eps grid (every eps >= 0 the conversion may try lies in one cell, or beyond the last point).
_FLOOR_GRID = np.arange(0, 30 * 32 + 1) / 32.0
#: Downward rounding of a floor (relative, then absolute): covers its few rounded operations with a wide margin.
_FLOOR_REL, _FLOOR_ABS = 1e-9, 1e-15


class DeferredProfile:
    """A profile built on first need (``build()``: once; None where it cannot be built; ``describe`` names the
    risk's source once it is), with a cheap floor under every answer it would give: ``floor`` builds a profile
    whose LOWER bracket, per direction, lies below the true delta that the built profile's upper delta bounds (the
    same K-mixture on a coarser mesh: the same buckets, hence the same delta). The floors only decide when to build:
    a wrong floor could make an answer looser (a certified profile left out), never optimistic."""

    def __init__(self, build: Callable[[], PrivacyProfile | None], floor: Callable[[], PrivacyProfile | None],
                 describe: Callable[[PrivacyProfile | None], str]) -> None:
        self._build, self._floor, self.describe = build, floor, describe
        self._built: tuple[PrivacyProfile | None] | None = None
        self._lower: np.ndarray | None = None
        self._lock = threading.Lock()
        self._prefetch: threading.Thread | None = None
        self._building: threading.Thread | None = None

    @property
    def is_built(self) -> bool:
        return self._built is not None

    @property
    def will_build(self) -> bool:
        """Built, or being built in the background (``prefetch``): its floor is then never needed."""
        return self._built is not None or self._building is not None

    def prefetch(self) -> None:
        """Start ``build()`` in a background thread, once, for a caller that needs the profile anyway (a report):
        the other profiles' searches run meanwhile. ``build()`` holds the lock while it computes, so a later read
        waits for that very build (the same profile, whatever the timing); where the background build raises, the
        next ``build()`` runs it again in the caller (and raises there)."""
        if self._building is not None or self._built is not None:
            return

        def attempt() -> None:
            try:
                self.build()
            except Exception:  # noqa: BLE001 - re-raised by the caller's own build()
                pass

        self._building = threading.Thread(target=attempt, name="privselect-risk-build", daemon=True)
        self._building.start()

    def build(self) -> PrivacyProfile | None:
        with self._lock:
            if self._built is None:
                self._built = (self._build(),)
            return self._built[0]

    def prefetch_floor(self) -> None:
        """Start ``lower()`` in a background thread, once, unless the floor or the profile is there already: a
        ``tpr`` query needs the floor after the other profiles' answers, and computes those meanwhile. ``lower()``
        holds the lock while it computes, so the query that reads the floor waits for that very computation (the
        same floor, whatever the timing)."""
        if self._prefetch is not None or self._lower is not None or self.will_build:
            return
        self._prefetch = threading.Thread(target=self.lower, name="privselect-risk-floor", daemon=True)
        self._prefetch.start()

    def lower(self) -> np.ndarray:
        """max over the floor's directions of its lower delta on ``_FLOOR_GRID`` (-inf where there is no floor)."""
        with self._lock:
            if self._lower is None:
                try:
                    floor = self._floor()
                except (CertificationError, ValueError, ArithmeticError, MemoryError):
                    floor = None
                if floor is None or not floor.certified:
                    self._lower = np.full(_FLOOR_GRID.size, -np.inf)
                else:
                    self._lower = np.max([c.delta_bounds(_FLOOR_GRID)[0] for c in floor.curves], axis=0)
            return self._lower

    def tpr_floor(self, alpha: np.ndarray) -> np.ndarray:
        """At most ``_profile_tpr`` of the built profile at each alpha: every eps >= 0 it may try lies in a cell
        [e_i, e_i+1] of the grid, where its upper delta D(eps) >= the true delta at eps >= the true delta at e_i+1
        (non-increasing) >= the floor's lower delta G_i+1, so its two branches are at least G_i+1 + e^e_i alpha and
        1 - e^-e_i (1 - G_i+1 - alpha)_+; beyond the last point e_N, with D >= 0, e^e_N alpha and
        1 - e^-e_N (1 - alpha). At alpha = 0 no floor (-inf); at alpha >= 1 the answer is 1 whatever it is."""
        g, e, a = self.lower()[None, 1:], _FLOOR_GRID[None, :-1], alpha[:, None]
        with np.errstate(over="ignore", invalid="ignore"):
            cells = np.minimum(g + np.exp(e) * a, 1.0 - np.exp(-e) * np.maximum(1.0 - g - a, 0.0)).min(axis=1)
            last = float(_FLOOR_GRID[-1])
            beyond = np.minimum(np.exp(last) * alpha, 1.0 - math.exp(-last) * (1.0 - alpha))
        floor = np.minimum(cells, beyond) * (1 - _FLOOR_REL) - _FLOOR_ABS
        floor = np.where(np.isnan(floor), -np.inf, floor)
        return np.where(alpha <= 0, -np.inf, np.where(alpha >= 1, 1.0, floor))
