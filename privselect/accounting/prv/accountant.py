"""The PRV accountant: `PRVAccountant` (accuracy options, refinement) and `PRV`, its `Accountant`
(registered as "prv")."""

from __future__ import annotations

import logging
import math
import sys
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from ... import _validation as check
from ...mechanisms import Mechanism
from ..base import LossAccountant, register_accountant
from ..budget import DEFAULT_MAX_MEMORY, checked_max_memory
from ..plrv import readable_losses as plrv_readable_losses
from ..profile import PrivacyProfile
from .bounds import _epsilon_scale
from .compose import _FP_PER_COMPOSITION, MAX_COMPOSITIONS, _build_curve
from .curve import PRVCurve

logger = logging.getLogger(__name__)

#: Documented ranges of the accuracy options (``PRVAccountant``), all in double precision:
#: eps_error / rel_eps_error >= machine epsilon (a smaller slack is below the rounding of an
#: epsilon of order 1; relative accuracy below it is not representable); eps_error <= log of
#: the largest double (~709.8: an additive slack beyond it makes the bracket vacuous, e^eps
#: overflows); target_delta, delta_error >= 1e-300 (far below the floating-point floor ~1e-14
#: of any PRV bracket, and the internal splits delta_error / 8 / MAX_COMPOSITIONS of the
#: default delta_error = target_delta / 1000 stay positive doubles: ~3e-319 > 5e-324).
EPS_ERROR_RANGE = (float(np.finfo(float).eps), math.log(sys.float_info.max))
REL_EPS_ERROR_RANGE = (float(np.finfo(float).eps), 1.0)  # [lo, 1)
#: When the first build at rel_eps_error needs more than max_points points, it is retried at this
#: relative accuracy (then refined as far as max_points allows).
_FALLBACK_REL_EPS_ERROR = 1.5e-3
DELTA_OPTION_MIN = 1e-300  # target_delta and delta_error in [DELTA_OPTION_MIN, 1)

#: Compose in long double when target_delta < this x the number of compositions.
_EXTENDED_BELOW_PER_STEP = 5e-12
#: Largest FFT size the relative refinement aims for (unless the first build was larger).
_REFINE_POINTS = 1 << 20
#: Smallest eps scale the relative refinement sizes eps_error from (answers of exactly 0).
_MIN_EPS_SCALE = 1e-9


def readable_losses(mechanism: Mechanism):
    """The mechanism's PLRVs (no numerics); raises UnsupportedMechanismError naming the failing part.

    The registry's "prv" accountant runs this as its dry walk (``supports``).
    """
    return plrv_readable_losses(mechanism, "PRV")


@dataclass(frozen=True)
class PRVAccountant:
    """PRV accountant (Gopi, Lee, Wutschitz 2021) with a certified two-sided bracket.

    Both neighbouring directions are composed separately (remove: GLW App. B.2's pair
    ``(P0, (1-q) P0 + q P1)``, add: its swap) and the profile takes their maximum at query
    time; symmetric mechanisms are computed once.

    At most `MAX_COMPOSITIONS` (~3.9e14) compositions in total: the floating-point error
    bound grows by at least 23 u (~2.6e-15) per composition, so beyond that count every delta
    bound is 1 (in practice the floor reaches delta ~ 1e-5 near 1e8 compositions).

    Examples
    --------
    >>> import privselect as ps
    >>> step = ps.Gaussian(1.1).poisson_subsample(256 / 60000)
    >>> prof = PRVAccountant().profile(step.compose(1000))
    >>> lower, upper = prof.epsilon_bounds(1e-5)   # certified bracket on eps(1e-5)
    >>> bool(0.0 < lower < upper < lower + 0.01)
    True

    Parameters
    ----------
    eps_error:
        Additive eps slack of the bracket (GLW eq. (8)); the achieved value (reported in the
        profile's [`ErrorBudget`][privselect.accounting.ErrorBudget]) never exceeds it. ``None``: ``rel_eps_error`` times
        an RDP upper bound on eps(``target_delta``) (at least 0.1), which keeps the relative
        accuracy and the cost roughly independent of the mechanism. Range: [2.2e-16 (machine
        epsilon), 709.78 (log of the largest double)].
    delta_error:
        Additive delta slack for truncation, coupling and wrap-around (GLW Thm 5.5's
        ``delta_err``); floating-point error is added on top. ``None``: ``target_delta / 1000``.
        Range: [1e-300, 1).
    target_delta:
        The delta the profile will mostly be queried at; sets the defaults above. Range:
        [1e-300, 1) (queries below the profile's floating-point floor, ~1e-14 and growing
        with the number of compositions, raise ``CertificationError``).
    rel_eps_error:
        Relative eps accuracy used when ``eps_error`` is None. Range: [2.2e-16, 1).
    max_points:
        Largest FFT size; a larger requirement declines with ``CertificationError``.
    max_memory:
        Bytes one build may allocate (estimated before allocating, per grid and per composition);
        past it the accountant declines with ``CertificationError``. Default 2 GB.

    """

    eps_error: float | None = None
    delta_error: float | None = None
    target_delta: float = 1e-5
    rel_eps_error: float = 5e-4
    max_points: int = 1 << 24
    max_memory: float = DEFAULT_MAX_MEMORY

    def __post_init__(self) -> None:
        if self.eps_error is not None:
            lo, hi = EPS_ERROR_RANGE
            object.__setattr__(self, "eps_error", check.in_range("eps_error", self.eps_error, lo, hi))
        if self.delta_error is not None:
            object.__setattr__(self, "delta_error",
                               check.in_range("delta_error", self.delta_error, DELTA_OPTION_MIN, 1.0, high_open=True))
        object.__setattr__(self, "target_delta",
                           check.in_range("target_delta", self.target_delta, DELTA_OPTION_MIN, 1.0, high_open=True))
        lo, hi = REL_EPS_ERROR_RANGE
        object.__setattr__(self, "rel_eps_error",
                           check.in_range("rel_eps_error", self.rel_eps_error, lo, hi, high_open=True))
        max_points = check.positive_int("max_points", self.max_points)
        if max_points < 1024:
            raise ValueError(f"max_points must be >= 1024, got {self.max_points!r}")
        object.__setattr__(self, "max_points", max_points)
        object.__setattr__(self, "max_memory", checked_max_memory(self.max_memory))

    # -- build -------------------------------------------------------------------------

    def profile(self, mechanism: Mechanism) -> PrivacyProfile:
        """Certified [`PrivacyProfile`][privselect.accounting.PrivacyProfile] (method ``"prv"``): both directions, max at query time."""
        start = time.perf_counter()
        parts = readable_losses(mechanism)
        total = sum(count for _, count in parts)
        if total > MAX_COMPOSITIONS:
            raise ValueError(
                f"the PRV accountant supports at most {MAX_COMPOSITIONS:.3g} compositions, got "
                f"{_count_text(total)}: its floating-point error bound grows by at least "
                f"{_FP_PER_COMPOSITION:.2g} per composition, so every delta bound would be 1 (and the smallest "
                "certifiable delta exceeds 1e-5 from ~1e8 compositions on); use fewer compositions (k, steps, "
                "rounds) or accountant='rdp' or the default accountant='auto'")
        delta_error = self.delta_error if self.delta_error is not None else self.target_delta / 1000
        symmetric = all(losses.is_symmetric for losses, _ in parts)
        eps_target, eps_source = self._eps_target(mechanism, parts, symmetric)
        directions = ("both",) if symmetric else ("remove", "add")
        components = {d: [(getattr(losses, "remove" if d == "both" else d), count) for losses, count in parts]
                      for d in directions}
        # double precision's floating-point floor is ~5e-14 per composition (FFT error amplified by
        # the powering): compose in long double where it would exceed 1% of target_delta
        extended = self.target_delta < _EXTENDED_BELOW_PER_STEP * total

        def build(eps_wanted: float) -> list[PRVCurve]:
            return [_build_curve(components[d], d, eps_wanted, delta_error, self.max_points, extended,
                                 self.max_memory)
                    for d in directions]

        try:
            curves = build(eps_target)
        except ValueError:  # too many points at the relative default: a coarser pilot, refined below
            coarser = eps_target * _FALLBACK_REL_EPS_ERROR / self.rel_eps_error
            if self.eps_error is not None or coarser <= eps_target:
                raise
            eps_target = coarser
            curves = build(eps_target)
        if self.target_delta < max(c.error_budget.min_delta for c in curves):
            # the double-precision floor is above the target: compose in long double instead
            extended = True
            curves = build(eps_target)
        if self.eps_error is None:
            # Size the slack relative to the answer: the scale above is an upper bound on
            # eps(target_delta) that can be far too large (RDP conversion of a small loss, the
            # 0.1 floor); rebuild at rel_eps_error times the estimate read off this build.
            first_points = max(c.n for c in curves)
            for _ in range(3):
                # the answer at target_delta, or one decade above it where that is smaller (and > 0):
                # queries near target_delta keep ~rel_eps_error relative accuracy
                estimate = max(float(np.abs(c.epsilon_estimate(self.target_delta))) for c in curves)
                above = max(float(c.epsilon_estimate(min(10 * self.target_delta, 0.5))) for c in curves)
                if 0 < above < estimate:
                    estimate = above
                wanted = self.rel_eps_error * max(estimate, _MIN_EPS_SCALE)
                # the cost grows like 1/eps_error: at most _REFINE_POINTS points (or 8x the first build)
                points = max(c.n for c in curves)
                wanted = max(wanted, eps_target * points / max(8 * first_points, _REFINE_POINTS))
                if not (math.isfinite(estimate) and wanted < 0.5 * eps_target):
                    break
                try:
                    curves = build(wanted)
                except ValueError as exc:  # too many points: keep the coarser (still certified) build
                    logger.debug("prv: relative refinement to eps_error=%.3g declined (%s)", wanted, exc)
                    break
                eps_target, eps_source = wanted, f"{self.rel_eps_error:g} x eps estimate({self.target_delta:g})"
        seconds = time.perf_counter() - start
        logger.debug("prv profile (%d compositions, %d distinct) built in %.3fs", total, len(parts), seconds)
        return PrivacyProfile(
            curves=tuple(curves),
            accountant="prv",
            mechanism=mechanism,
            description=(f"PRV accountant (Gopi, Lee, Wutschitz 2021), {total} compositions, "
                         f"eps_error <= {eps_target:.3g}, delta_error ~ {delta_error:.3g}"),
            metadata=(
                ("compositions", total),
                ("distinct_components", len(parts)),
                ("eps_error_requested", eps_target),
                ("eps_error_source", eps_source),
                ("delta_error_requested", delta_error),
                ("target_delta", self.target_delta),
                ("build_seconds", seconds),
                ("float", "longdouble" if extended else "float64"),
            ),
        )

    def _eps_target(self, mechanism: Mechanism, parts, symmetric: bool) -> tuple[float, str]:
        if self.eps_error is not None:
            return self.eps_error, "given"
        scale, source = _epsilon_scale(mechanism, parts, symmetric, self.target_delta)
        return self.rel_eps_error * max(scale, 0.1), f"{self.rel_eps_error:g} x eps_{source}({self.target_delta:g})"


def _count_text(count: int) -> str:
    """A composition count for messages (Python ints may exceed the float range)."""
    digits = str(count)
    return digits if len(digits) <= 15 else f"~{digits[0]}.{digits[1:3]}e{len(digits) - 1}"


def prv_profile(mechanism: Mechanism, **options: Any) -> PrivacyProfile:
    """Certified privacy profile of ``mechanism`` from [`PRVAccountant`][privselect.accounting.prv.PRVAccountant] (``options`` go to it)."""
    return PRVAccountant(**options).profile(mechanism)


@register_accountant("prv")
class PRV(LossAccountant, engine=PRVAccountant, label="PRV", reader=readable_losses):
    """PRV accountant (Gopi, Lee, Wutschitz 2021) with a certified bracket; options go to ``PRVAccountant``."""

    name = "prv"

    def floor_hint(self) -> float:
        """The requested delta error: the floor is twice the achieved one (GLW Thm 5.5), about this."""
        impl = self._impl
        return impl.delta_error if impl.delta_error is not None else impl.target_delta / 1000
