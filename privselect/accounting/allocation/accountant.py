"""`Allocation`, registered as "allocation": a certified bracket for compositions of random-allocation epochs.

One epoch (`RandomAllocation`: a Gaussian with noise multiplier sigma run on t steps, each record in exactly k
of them, chosen uniformly without replacement) is bracketed by two Gaussian mechanisms, both directions:

* **Upper (revealing the allocation).** Releasing the record's k steps along with the t outputs is a
  mechanism the epoch is a post-processing of; given the steps, the record moves k coordinates of a
  sigma-Gaussian by its clipped contribution: a Gaussian with mu = sqrt(k) / sigma (Dong, Roth, Su 2022,
  Thm 2.7 and Cor. 3.3). So every epoch is mu-GDP with mu^2 = k / sigma^2.
* **Lower (summing the steps).** The sum of the t outputs is a post-processing of the epoch; for the worst-case
  pair (a record whose contribution is the unit vector in every step it joins) it is N(k, t sigma^2) against
  N(0, t sigma^2): a Gaussian with mu = k / (sigma sqrt t). Composing the same post-processing over epochs
  gives a pair the composed epochs dominate (composition keeps the trade-off order: Dong, Roth, Su 2022, Sec. 3).

Composed over epochs (and with other random-allocation parts) the mu^2 add (Dong, Roth, Su 2022, Cor. 3.3).

**The tight ends (k = 1).** Each epoch is replaced by a law of its likelihood ratio that dominates it (`epoch`:
the t-fold sum of a mean-preserving spread of the lognormal term on a linear mesh, every floating-point and
truncation term at +inf) and by one it dominates (`lower`: the t-fold sum of a contraction of the term onto a
mesh twice as coarse, masses rounded down); pld composes the epochs' dominating laws for the upper end and the dominated laws
for the lower end, with the other parts. Each direction's curve is the intersection of those ends with the
Gaussian bracket: upper = the smaller upper bound, lower = the larger lower bound. Where a tight end declines
(k > 1, a mesh past its budget) the bracket stands for it and the profile's description says so.
"""

from __future__ import annotations

import math
import threading
import time

import numpy as np

from ...errors import CertificationError, UnsupportedMechanismError
from ...mechanisms import ADD_REMOVE, Composition, Gaussian, Mechanism, RandomAllocation
from ..base import Accountant, register_accountant
from ..budget import DEFAULT_MAX_MEMORY, checked_max_memory
from ..pld import PLDAccountant
from ..plrv import DirectedLosses, privacy_losses
from ..profile import DirectionalCurve, ErrorBudget, GaussianCurve, PrivacyProfile
from ..threads import one_blas_thread
from .epoch import MAX_MESH_POINTS, EpochLoss, epoch_law, epoch_meshes
from .lower import EpochLowerLoss, epoch_lower_law

__all__ = ["Allocation", "allocation_mu_bracket", "IntersectedCurve", "LowerEnds"]


def _parts(mechanism: Mechanism) -> list[tuple[Mechanism, int]]:
    """The (part, count) pairs: random-allocation epochs, and add/remove Gaussian mechanisms composed with them
    (e.g. a noisy score); UnsupportedMechanismError naming any other part, or a mechanism with no allocation."""
    parts = mechanism.parts if isinstance(mechanism, Composition) else ((mechanism, 1),)
    out: list[tuple[Mechanism, int]] = []
    for part, count in parts:
        if not isinstance(part, (RandomAllocation, Gaussian)) or part.relation is not ADD_REMOVE:
            raise UnsupportedMechanismError(f"the allocation accountant reads RandomAllocation epochs and add/remove "
                                            f"Gaussian mechanisms only, got {type(part).__name__}")
        out.append((part, int(count)))
    if not any(isinstance(part, RandomAllocation) for part, _ in out):
        raise UnsupportedMechanismError("the allocation accountant reads mechanisms with a RandomAllocation epoch")
    return out


def allocation_mu_bracket(mechanism: Mechanism) -> tuple[float, float]:
    """(mu_lower, mu_upper): the composition is dominated by mu_upper-GDP and dominates the mu_lower-GDP pair
    (module docstring; a Gaussian part adds 1 / sigma^2 to both); both directions."""
    upper_sq = lower_sq = 0.0
    for part, count in _parts(mechanism):
        if isinstance(part, RandomAllocation):
            sigma, t, k = part.base.noise_multiplier, part.steps, part.participations  # type: ignore[attr-defined]
            upper_sq += count * k / sigma ** 2
            lower_sq += count * k * k / (sigma ** 2 * t)
        else:
            upper_sq += count / part.noise_multiplier ** 2  # type: ignore[attr-defined]
            lower_sq += count / part.noise_multiplier ** 2  # type: ignore[attr-defined]
    return math.sqrt(lower_sq), math.sqrt(upper_sq)


class LowerEnds:
    """The composition's lower ends (pld's optimistic composition of the epochs' dominated laws, `lower`), built
    once, on the first query that reads a lower bound: a certificate (an upper bound) never pays for them. None
    where the dominated laws decline (their budget; `reason` says why)."""

    def __init__(self, mechanism: Mechanism, max_memory: float) -> None:
        self.mechanism, self.max_memory = mechanism, max_memory
        self._profile: PrivacyProfile | None = None
        self._built = False
        self.reason = ""
        self._lock = threading.Lock()

    @property
    def is_built(self) -> bool:
        return self._built

    def curve(self, index: int) -> DirectionalCurve | None:
        with self._lock:
            if not self._built:
                try:
                    self._profile = _epoch_profile(self.mechanism, self.max_memory, coarse=False, lower=True)
                except (CertificationError, MemoryError) as exc:
                    self.reason = str(exc)
                self._built = True
        return None if self._profile is None else self._profile.curves[index]


class IntersectedCurve(DirectionalCurve):
    """Certified brackets of one direction intersected: the largest lower end (``lower``'s curve too, built on
    the first lower query), the smallest upper end."""

    def __init__(self, curves: tuple[DirectionalCurve, ...], direction: str, lower: LowerEnds | None = None,
                 index: int = 0) -> None:
        self.curves, self.direction, self.lower, self.index = curves, direction, lower, index
        budgets = [c.error_budget for c in curves]
        self.error_budget = ErrorBudget(eps_error=min(b.eps_error for b in budgets),
                                        delta_error=min(b.delta_error for b in budgets),
                                        min_delta=min(b.min_delta for b in budgets),
                                        details=tuple(d for b in budgets for d in b.details))

    def _lower_curves(self) -> tuple[DirectionalCurve, ...]:
        extra = None if self.lower is None else self.lower.curve(self.index)
        return self.curves + (() if extra is None else (extra,))

    def delta_bounds(self, eps):
        lows = [c.delta_bounds(eps)[0] for c in self._lower_curves()]
        return np.max(lows, axis=0), self.delta_upper(eps)

    def delta_upper(self, eps):
        return np.min([c.delta_upper(eps) for c in self.curves], axis=0)

    def epsilon_bounds(self, delta):
        # the dominated laws' curve (where built) first: the tightest lower end; another curve is asked only where
        # its lower delta at the largest lower eps so far is above delta (elsewhere its lower eps is no larger)
        curves = self._lower_curves()[::-1]
        return _tightest(curves, delta, lambda c, d: c.epsilon_bounds(d)[0], lambda c, e: c.delta_bounds(e)[0],
                         np.maximum, lambda value, target: value <= target), self.epsilon_upper(delta)

    def epsilon_upper(self, delta):
        # another curve is asked only where its upper delta at the smallest eps so far is below delta (elsewhere
        # its upper eps is no smaller): the Gaussian bracket's inversion is skipped where the tight end answers
        return _tightest(self.curves, delta, lambda c, d: c.epsilon_upper(d), lambda c, e: c.delta_upper(e),
                         np.minimum, lambda value, target: value >= target)


def _tightest(curves, delta, eps_of, delta_of, better, beaten) -> np.ndarray:
    """``better`` (np.maximum or np.minimum) over ``curves`` of ``eps_of(curve, delta)``, each curve after the first
    asked only at the deltas where ``beaten(delta_of(curve, eps so far), delta)`` does not already show that its
    eps cannot improve on the one so far (delta is monotone in eps: the result equals the full maximum/minimum)."""
    shape = np.shape(delta)
    target = np.atleast_1d(np.asarray(delta, dtype=float)).ravel()
    best = np.array(np.atleast_1d(eps_of(curves[0], target)), dtype=float).ravel()
    for curve in curves[1:]:
        open_ = ~np.isfinite(best)
        with np.errstate(invalid="ignore"):
            open_ |= ~beaten(np.atleast_1d(delta_of(curve, np.where(open_, 0.0, best))).ravel(), target)
        if np.any(open_):
            best[open_] = better(best[open_], np.atleast_1d(eps_of(curve, target[open_])).ravel())
    return best.reshape(shape)


def _checked_parts(mechanism: Mechanism) -> list[tuple[Mechanism, int]]:
    parts = _parts(mechanism)
    for part, _ in parts:
        if isinstance(part, RandomAllocation) and part.participations != 1:
            raise CertificationError(f"the tight random-allocation profile is for one participation per epoch; "
                                     f"got participations={part.participations}")
    return parts


@one_blas_thread
def _epoch_profile(mechanism: Mechanism, max_memory: float, coarse: bool, lower: bool) -> PrivacyProfile:
    """pld's composition of each k = 1 epoch's dominating law (`epoch`, on its fine or ``coarse`` mesh) with the
    Gaussian parts; with ``lower``, of the dominated laws (`lower`) as well, for the lower end (else it is 0)."""
    losses = []
    for part, count in _checked_parts(mechanism):
        if isinstance(part, RandomAllocation):
            key = (float(part.base.noise_multiplier), int(part.steps))  # type: ignore[attr-defined]
            law = epoch_law(*key, max_memory, coarse)
            dominated = epoch_lower_law(*key, max_memory) if lower else None
            directed = {d: EpochLoss(law, d, None if dominated is None else EpochLowerLoss(dominated, d))
                        for d in ("remove", "add")}
            losses.append((DirectedLosses(**directed), count))
        else:
            losses.append((privacy_losses(part), count))
    return PLDAccountant(max_memory=max_memory).losses_profile(tuple(losses), mechanism, optimistic=lower)


def tight_profiles(mechanism: Mechanism, max_memory: float = DEFAULT_MAX_MEMORY) -> tuple[list[PrivacyProfile], bool]:
    """The upper ends: pld's composition of each k = 1 epoch's dominating law with the Gaussian parts, and where an
    epoch's term does not fit its fine mesh (small sigma), on the coarser mesh as well (its truncation floor is
    lower); and whether the fine mesh answered (the dominated laws' meshes derive from it: without it there is no tight
    lower end). CertificationError where an epoch has k > 1 or an upper law exceeds its budget."""
    parts = _checked_parts(mechanism)
    try:
        fine = _epoch_profile(mechanism, max_memory, coarse=False, lower=False)
    except CertificationError:  # the fine mesh cut the term inside its bulk: the coarse one alone
        return [_epoch_profile(mechanism, max_memory, coarse=True, lower=False)], False
    keys = [(float(p.base.noise_multiplier), int(p.steps)) for p, _ in parts if isinstance(p, RandomAllocation)]  # type: ignore[attr-defined]
    # the coarse mesh as well where a term was cut by the budget and the coarse mesh differs
    cut = any(epoch_meshes(*key).n_bins >= MAX_MESH_POINTS and epoch_meshes(*key, coarse=True) != epoch_meshes(*key)
              for key in keys)
    return ([fine, _epoch_profile(mechanism, max_memory, coarse=True, lower=False)] if cut else [fine]), True


@register_accountant("allocation")
class Allocation(Accountant):
    """Random allocation (balls-in-bins, redrawn per epoch): the tight ends (k = 1) within the bracket of two
    Gaussian-DP curves.

    Parameters
    ----------
    tight:
        Compose the epochs' dominating and dominated laws for the two ends (k = 1); False: the Gaussian bracket
        alone.
    max_memory:
        Bytes one build may allocate (estimated first); past it the tight end declines to the bracket.
    """

    name = "allocation"

    def __init__(self, tight: bool = True, max_memory: float = DEFAULT_MAX_MEMORY) -> None:
        if not isinstance(tight, bool):
            raise TypeError(f"tight must be a bool, got {type(tight).__name__}")
        self.tight, self.max_memory = tight, checked_max_memory(max_memory)
        self.options: dict = {"tight": tight, "max_memory": self.max_memory}

    def _walk(self, mechanism: Mechanism, *, dry: bool) -> PrivacyProfile | None:
        _parts(mechanism)
        if dry:
            return None
        start = time.perf_counter()
        lo, hi = allocation_mu_bracket(mechanism)
        bracket = {d: GaussianCurve(hi, d, mu_bounds=(lo, hi)) for d in ("remove", "add")}
        how = f"between {lo:.4g}-GDP (steps summed) and {hi:.4g}-GDP (allocation revealed)"
        declined = "not asked (tight=False)"
        curves: tuple[DirectionalCurve, ...] = tuple(bracket.values())
        if self.tight:
            try:
                tight, fine = tight_profiles(mechanism, self.max_memory)
                lower = LowerEnds(mechanism, self.max_memory) if fine else None
                curves = tuple(IntersectedCurve(tuple(u.curves[i] for u in tight) + (bracket[c.direction],),
                                                c.direction, lower, i) for i, c in enumerate(tight[0].curves))
                how = ("upper end by dominating epoch laws composed by pld; lower end "
                       + (f"by dominated epoch laws composed by pld when a lower end is first asked (where they "
                          f"fit their budget), at least {lo:.4g}-GDP (steps summed)" if fine
                          else f"{lo:.4g}-GDP (steps summed; the fine mesh declined)"))
                declined = ""
            except (CertificationError, MemoryError) as exc:
                declined = str(exc)
        return PrivacyProfile(
            curves=curves, accountant="allocation", mechanism=mechanism,
            description=f"random allocation: {how}" + (f" (tight end declined: {declined})" if declined else ""),
            metadata=(("mu_lower", lo), ("mu_upper", hi), ("tight", not declined),
                      ("build_seconds", time.perf_counter() - start)))
