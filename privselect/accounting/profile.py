"""PrivacyProfile: the one currency every later stage consumes.

A privacy profile is the function eps -> delta(eps) such that a mechanism is
(eps, delta(eps))-DP for every eps (Balle, Barthe, Gaboardi 2018). For add/remove
neighbours it is the maximum of two hockey-stick curves, one per direction:

    delta(eps) = max( H_{e^eps}(P_remove^k || Q_remove^k), H_{e^eps}(P_add^k || Q_add^k) ).

Each accountant produces one [`DirectionalCurve`][privselect.accounting.profile.DirectionalCurve] per direction, with a certified
bracket ``lower <= true <= upper`` valid for every eps simultaneously, and an
[`ErrorBudget`][privselect.accounting.profile.ErrorBudget] that says how wide the bracket may be. [`PrivacyProfile`][privselect.accounting.profile.PrivacyProfile] takes
the maximum over directions at query time (never per step) and offers the derived views:
epsilon(delta), trade-off curves (f-DP, Dong, Roth, Su 2022; Su 2024 Thm 5) and ``to_dict``.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .. import _validation as check
from ..errors import CertificationError
from .gaussian import _TINY, _U, _gaussian_delta_side, _invert_gaussian, _like

__all__ = [
    "ErrorBudget",
    "DirectionalCurve",
    "PrivacyProfile",
    "CertificationError",
    "GaussianCurve",
    "gdp_profile",
    "discrete_profile",
    "ScaledShiftedCurve",
    "composed_gaussian_curve",
    "known_error_budget",
    "reflected_delta",
]


@dataclass(frozen=True)
class ErrorBudget:
    """How far a certified bound may sit from the true value.

    ``eps_error`` and ``delta_error`` are the additive slacks of the bracket
    (Gopi, Lee, Wutschitz 2021, eq. (8)); ``min_delta`` is the smallest delta the
    accountant can certify in floating point; ``details`` names each error term.
    """

    eps_error: float = 0.0
    delta_error: float = 0.0
    min_delta: float = 0.0
    details: tuple[tuple[str, float], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe: non-finite numbers become the strings "inf", "-inf" or "nan"."""
        return {
            "eps_error": _json_number(self.eps_error),
            "delta_error": _json_number(self.delta_error),
            "min_delta": _json_number(self.min_delta),
            "details": {name: _json_number(value) for name, value in self.details},
        }


def _json_number(value: float) -> float | str:
    value = float(value)
    return value if math.isfinite(value) else str(value)


class DirectionalCurve(ABC):
    """H_{e^eps}(P^k || Q^k) of ONE neighbouring direction, with a certified bracket.

    Implementations answer vectorised queries from a precomputed representation.
    ``delta_bounds`` must satisfy ``lower <= H <= upper`` for every real eps; both are
    non-increasing in eps and lie in [0, 1]. ``epsilon_bounds`` returns the matching
    bracket on eps(delta) = inf{eps : H_{e^eps} <= delta} (it may be negative; +inf
    where delta is at or below the mass at infinity).
    """

    direction: str
    error_budget: ErrorBudget
    #: False where some term of the bracket is an error *estimate*, not a proven bound (e.g. the CF
    #: accountant's quadrature of a subsampled phi): such a curve must not back a certificate.
    certified: bool = True

    @abstractmethod
    def delta_bounds(self, eps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(lower, upper) bounds on delta at each eps."""

    def epsilon_bounds(self, delta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(lower, upper) bounds on eps(delta). Default: bisection on ``delta_bounds``."""
        delta = np.asarray(delta, dtype=float)
        lower_curve = lambda e: self.delta_bounds(e)[0]  # noqa: E731
        upper_curve = lambda e: self.delta_bounds(e)[1]  # noqa: E731
        return invert_curve(lower_curve, delta, side="lower"), invert_curve(upper_curve, delta, side="upper")

    def delta_upper(self, eps: np.ndarray) -> np.ndarray:
        """The upper end of ``delta_bounds`` alone (curves whose lower side costs more override it)."""
        return self.delta_bounds(eps)[1]

    def epsilon_upper(self, delta: np.ndarray) -> np.ndarray:
        """The upper end of ``epsilon_bounds`` alone (curves whose lower side costs more override it)."""
        return self.epsilon_bounds(delta)[1]

    def delta_estimate(self, eps: np.ndarray) -> np.ndarray:
        """A point estimate (not a bound); default is the upper bound."""
        return self.delta_bounds(eps)[1]

    @property
    def error_budget_known(self) -> bool:
        """False where ``error_budget`` would first have to be computed at reference points (seconds)."""
        return True

    @property
    def min_delta(self) -> float:
        """Smallest delta this curve certifies (``error_budget.min_delta``; curves whose budget is
        costly to compute override this with the constant)."""
        return self.error_budget.min_delta


def invert_curve(curve, delta: np.ndarray, *, side: str, lo: float = -50.0, hi: float = 1.0e4,
                 iterations: int = 200) -> np.ndarray:
    """Vectorised bisection for eps(delta) = inf{eps : curve(eps) <= delta} on a non-increasing curve.

    ``side="upper"`` returns the right end of the final bracket (a point where the curve is
    <= delta, hence a valid upper bound on eps); ``side="lower"`` returns the left end
    (where the curve is > delta, hence a valid lower bound). Returns +inf where the curve
    never drops to delta within [lo, hi] and ``lo`` where it is already below at ``lo``.
    """
    delta = np.asarray(delta, dtype=float)
    flat = delta.reshape(-1)
    a = np.full(flat.shape, lo)
    b = np.full(flat.shape, hi)
    below_at_lo = curve(a) <= flat
    never = curve(b) > flat
    for _ in range(iterations):
        mid = 0.5 * (a + b)
        ok = curve(mid) <= flat
        b = np.where(ok, mid, b)
        a = np.where(ok, a, mid)
        if np.all(b - a <= 4 * np.finfo(float).eps * np.maximum(1.0, np.abs(b))):
            break
    out = b if side == "upper" else a
    out = np.where(below_at_lo, lo, out)
    out = np.where(never, np.inf, out)
    return out.reshape(delta.shape)


@dataclass(frozen=True)
class PrivacyProfile:
    """Certified privacy profile of a (composed) mechanism: the max over its directions.

    Use [`privselect.privacy_profile`][privselect.accounting.privacy_profile] to build one. All queries are vectorised.
    """

    curves: tuple[DirectionalCurve, ...]
    #: The accountant that built it (``"prv"``, ``"auto"``, ``"selection[auto]"``, ...).
    accountant: str
    mechanism: Any = None
    description: str = ""
    metadata: tuple[tuple[str, Any], ...] = field(default=())

    def __post_init__(self) -> None:
        if not self.curves:
            raise ValueError("a privacy profile needs at least one directional curve")

    # -- error budget ------------------------------------------------------------------

    @property
    def certified(self) -> bool:
        """True if every term of every bracket is a proven bound (see ``DirectionalCurve.certified``)."""
        return all(c.certified for c in self.curves)

    @property
    def error_budget(self) -> ErrorBudget:
        """The widest budget over the directions (details from each direction)."""
        budgets = [c.error_budget for c in self.curves]
        details = tuple((f"{c.direction}:{name}", value) for c in self.curves for name, value in c.error_budget.details)
        return ErrorBudget(
            eps_error=max(b.eps_error for b in budgets),
            delta_error=max(b.delta_error for b in budgets),
            min_delta=max(b.min_delta for b in budgets),
            details=details,
        )

    # -- delta(eps) --------------------------------------------------------------------

    def delta_bounds(self, eps) -> tuple[np.ndarray, np.ndarray]:
        """(lower, upper) bounds on delta(eps), the max over both neighbouring directions."""
        e = check.real_array("eps", eps)
        lows, ups = zip(*(c.delta_bounds(e) for c in self.curves))
        lower = np.clip(np.max(np.stack(lows), axis=0), 0.0, 1.0)
        upper = np.clip(np.max(np.stack(ups), axis=0), 0.0, 1.0)
        return _like(eps, lower), _like(eps, upper)

    def delta(self, eps):
        """Certified upper bound on delta(eps) (vectorised): the upper end of ``delta_bounds``, read from each
        direction's ``delta_upper`` (a lower side that costs a build is not built for it)."""
        e = check.real_array("eps", eps)
        upper = np.clip(np.max(np.stack([c.delta_upper(e) for c in self.curves]), axis=0), 0.0, 1.0)
        return _like(eps, upper)

    def delta_estimate(self, eps):
        """Point estimate of delta(eps): max over directions of each accountant's estimate."""
        e = check.real_array("eps", eps)
        return _like(eps, np.clip(np.max(np.stack([c.delta_estimate(e) for c in self.curves]), axis=0), 0.0, 1.0))

    # -- eps(delta) --------------------------------------------------------------------

    def _checked_delta(self, delta) -> np.ndarray:
        """``delta`` as an array, CertificationError where it is at or below a curve's floor."""
        d = check.delta_array("delta", delta)
        floor = max(c.min_delta for c in self.curves)  # not error_budget: CF computes it at reference points
        if floor > 0 and (d <= floor).any():
            raise CertificationError(
                f"delta={float(d.min()):.3g} is below {floor:.3g}, the smallest delta this "
                f"{self.accountant} profile can certify in double precision; use a larger delta "
                "or an accountant with a lower floor (accountant='cf')"
            )
        return d

    def epsilon_bounds(self, delta) -> tuple[np.ndarray, np.ndarray]:
        """(lower, upper) bounds on the smallest eps >= 0 with the mechanism (eps, delta)-DP."""
        d = self._checked_delta(delta)
        lows, ups = zip(*self._direction_epsilon_bounds(d))
        lower = np.maximum(np.max(np.stack(lows), axis=0), 0.0)
        upper = np.maximum(np.max(np.stack(ups), axis=0), 0.0)
        return _like(delta, lower), _like(delta, upper)

    def _direction_epsilon_bounds(self, delta: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
        """Each direction's (lower, upper) eps(delta) bracket (the profile's is their max)."""
        return [c.epsilon_bounds(delta) for c in self.curves]

    def _direction_epsilon_upper(self, delta: np.ndarray) -> list[np.ndarray]:
        """Each direction's upper bound on eps(delta) (the profile's is their max)."""
        return [c.epsilon_upper(delta) for c in self.curves]

    def epsilon(self, delta):
        """Certified upper bound on eps(delta) (vectorised): the upper end of ``epsilon_bounds``, read from each
        direction's ``epsilon_upper`` (a lower side that costs a build is not built for it)."""
        d = self._checked_delta(delta)
        upper = np.maximum(np.max(np.stack(self._direction_epsilon_upper(d)), axis=0), 0.0)
        return _like(delta, upper)

    # -- f-DP ----------------------------------------------------------------------------

    def tradeoff(self, alpha, *, eps_grid=None):
        """Certified lower bound beta(alpha) on the trade-off function (type II error).

        Dong, Roth, Su 2022 Prop. 2.12 / Su 2024 Thm 5: a mechanism that is
        (eps, delta(eps))-DP for all eps >= 0 (both directions) is f-DP with
        f(a) = sup_eps max(0, 1 - delta(eps) - e^eps a, e^-eps (1 - delta(eps) - a)).
        Evaluated on a finite eps grid with the certified upper delta, which can only
        lower f: a valid (conservative) trade-off curve.
        """
        a = check.real_array("alpha", alpha)
        if ((a < 0) | (a > 1)).any():
            raise ValueError("alpha must lie in [0, 1]")
        grid = np.linspace(0.0, 30.0, 3001) if eps_grid is None else check.real_array("eps_grid", eps_grid)
        grid = grid[grid >= 0]
        d = self.delta(grid)
        flat = a.reshape(-1, 1)
        with np.errstate(over="ignore", invalid="ignore"):
            b1 = 1.0 - d[None, :] - np.exp(grid)[None, :] * flat
            b2 = np.exp(-grid)[None, :] * (1.0 - d[None, :] - flat)
        beta = np.maximum(0.0, np.nanmax(np.maximum(b1, b2), axis=1))
        return _like(alpha, beta.reshape(a.shape))

    # -- export --------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        return {
            "accountant": self.accountant,
            "mechanism": repr(self.mechanism),
            "description": self.description,
            "directions": [c.direction for c in self.curves],
            "error_budget": self.error_budget.to_dict(),
            "certified": self.certified,
            "metadata": {k: v for k, v in self.metadata},
        }


def known_error_budget(profile: PrivacyProfile) -> ErrorBudget:
    """``profile.error_budget``, or, where that is infinite because a composite profile (the auto accountant's
    pointwise minimum) leaves out the budgets that cost seconds to compute (CF's reference points), the
    smallest budget of its certified members: the minimum's bracket is no wider than any member's."""
    budget = profile.error_budget
    members = getattr(profile, "members", None)
    if math.isfinite(budget.eps_error) and math.isfinite(budget.delta_error) or not isinstance(members, dict):
        return budget
    found = [(name, p.error_budget) for name, p in members.items() if isinstance(p, PrivacyProfile) and p.certified]
    found = [(name, b) for name, b in found if math.isfinite(b.eps_error) or math.isfinite(b.delta_error)]
    if not found:
        return budget
    return ErrorBudget(eps_error=min(b.eps_error for _, b in found), delta_error=min(b.delta_error for _, b in found),
                       min_delta=min(b.min_delta for _, b in found),
                       details=tuple((f"{name}:{k}", v) for name, b in found for k, v in b.details))


def reflected_delta(profile: PrivacyProfile, eps) -> np.ndarray:
    """Certified upper delta(eps) of ``profile`` at every real eps, each eps < 0 read from the positive side.

    For any P, Q and a > 0, int (p - a q)_+ = int (p - a q) + int (a q - p)_+, so H_a(P || Q) = 1 - a + a H_{1/a}(Q || P)
    (exact). A profile is a supremum over a symmetric neighbouring relation (add/remove: both directions, the one the
    reverse of the other; replace-one), so delta(eps) = 1 - e^eps + e^eps delta(-eps), and an upper bound U on the
    positive side gives -expm1(eps) + e^eps U(-eps) at eps < 0: no evaluation of the profile at a negative eps. Both
    terms are >= 0; the result is rounded up by 8 units of roundoff (exp, expm1, a product and a sum: a few ulps).
    """
    e = np.asarray(eps, dtype=float)
    flat = e.reshape(-1)
    negative = flat < 0
    if not negative.any():
        return np.asarray(profile.delta(e), dtype=float)
    values = np.asarray(profile.delta(np.abs(flat)), dtype=float).reshape(-1)  # one query for both sides
    x = flat[negative]
    out = values.copy()
    out[negative] = np.minimum(1.0, (-np.expm1(x) + np.exp(x) * values[negative]) * (1 + 8 * _U))
    return out.reshape(e.shape)


class ScaledShiftedCurve(DirectionalCurve):
    """delta'(eps) = min(1, scale * delta_base(eps - shift)), an upper bound only.

    The form of every profile bound of Koskela, Redberg, Wang 2024 (Thm 3.2, 3.3, 5.2, 5.7,
    Cor. 5.8). ``delta_base`` is the certified upper side of ``base`` (both directions
    already maximised), read at a negative argument eps - shift from the positive side
    (``reflected_delta``). Where the bound is only proven for eps > 0 (``positive_eps_only``),
    the curve returns the trivial bound 1 at eps <= 0. The lower side is 0.
    """

    direction = "both"

    def __init__(self, base: PrivacyProfile, *, scale: float, shift: float = 0.0,
                 positive_eps_only: bool = False, label: str = "scale") -> None:
        self.base, self.scale, self.shift, self.positive_eps_only = base, float(scale), float(shift), positive_eps_only
        self.label = label
        self.certified = base.certified

    @property
    def error_budget(self) -> ErrorBudget:  # type: ignore[override]
        """The base's budget (read when asked: a composite base knows more once queried), delta scaled."""
        budget = known_error_budget(self.base)
        return ErrorBudget(
            eps_error=budget.eps_error,
            delta_error=self.scale * budget.delta_error,
            min_delta=self.scale * budget.min_delta,
            details=budget.details + ((self.label, self.scale),),
        )

    @property
    def min_delta(self) -> float:
        return self.scale * max(c.min_delta for c in self.base.curves)

    def delta_bounds(self, eps):
        e = np.asarray(eps, dtype=float)
        upper = np.minimum(1.0, self.scale * reflected_delta(self.base, e - self.shift))
        if self.positive_eps_only:
            upper = np.where(e > 0, upper, 1.0)
        return np.zeros_like(upper), upper

    def epsilon_bounds(self, delta):
        d = np.asarray(delta, dtype=float)
        scaled = d / self.scale
        inside = scaled < 1
        base_eps = self.base.epsilon(np.where(inside, scaled, 0.5))
        # scale * delta_base(.) <= scale <= delta: (0, delta) for every eps > 0.
        upper = np.where(inside, np.maximum(base_eps + self.shift, 0.0), 0.0)
        return np.zeros_like(upper), upper


# ----------------------------------------------------------------------------------------
# Exact profiles: the Gaussian mechanism and mu-GDP
# ----------------------------------------------------------------------------------------


class GaussianCurve(DirectionalCurve):
    """Exact curve of the (composed) Gaussian mechanism: mu = sqrt(sum k_i mu_i^2).

    The bracket bounds every rounding of the closed form (see ``_gaussian_delta_side``); mu**2 must
    be a finite double (as in accountant='exact', which composes mu**2), so every eps(delta) is finite.
    ``mu_bounds = (lo, hi)`` (with lo <= mu <= hi) is the certified range of mu when mu itself was
    computed (e.g. composed from per-step values, [`composed_gaussian_curve`][privselect.accounting.profile.composed_gaussian_curve]): delta(eps)
    increases in mu, so the upper side is evaluated at hi and the lower side at lo.
    """

    def __init__(self, mu: float, direction: str = "both", mu_bounds: tuple[float, float] | None = None) -> None:
        self.mu = check.positive("mu", mu)
        if not math.isfinite(self.mu * self.mu):
            raise ValueError(f"mu must satisfy mu**2 < {np.finfo(float).max:.4g} (the variance of the privacy "
                             f"loss of mu-GDP must be a finite double), got mu={mu!r}")
        lo, hi = (self.mu, self.mu) if mu_bounds is None else (float(mu_bounds[0]), float(mu_bounds[1]))
        if not (0 < lo <= self.mu <= hi and math.isfinite(hi * hi)):
            raise ValueError(f"mu_bounds must satisfy 0 < lo <= mu <= hi with hi**2 finite, got {mu_bounds!r}")
        self.mu_lower, self.mu_upper = lo, hi
        self.direction = direction
        # The upper bound is never below 4 * smallest subnormal (its absolute rounding term).
        self.error_budget = ErrorBudget(min_delta=4 * _TINY, details=(("closed_form", 0.0),
                                                                      ("mu_relative_width", hi / lo - 1.0)))

    def delta_bounds(self, eps):
        e = np.asarray(eps, dtype=float)
        return self._side(e, "lower"), self._side(e, "upper")

    def delta_upper(self, eps) -> np.ndarray:
        """The upper end of ``delta_bounds`` alone (half the work: the closed-form member needs no lower end)."""
        return self._side(np.asarray(eps, dtype=float), "upper")

    def _side(self, e: np.ndarray, side: str) -> np.ndarray:
        values = _gaussian_delta_side(e, self.mu_upper if side == "upper" else self.mu_lower, side).reshape(-1)
        if values.size > 1:  # keep each side non-increasing in eps (still valid: delta is non-increasing)
            order = np.argsort(e.reshape(-1), kind="stable")
            values[order] = (np.maximum.accumulate(values[order][::-1])[::-1] if side == "upper"
                             else np.minimum.accumulate(values[order]))
        return values.reshape(e.shape)

    def delta_estimate(self, eps):
        return _gaussian_delta_side(np.asarray(eps, dtype=float), self.mu, "estimate")

    def epsilon_bounds(self, delta):
        d = np.asarray(delta, dtype=float)
        lower = _invert_gaussian(d, self.mu_lower, "lower").reshape(d.shape)
        upper = _invert_gaussian(d, self.mu_upper, "upper").reshape(d.shape)
        return lower, upper


def composed_gaussian_curve(terms, direction: str = "both", *, term_rel_error: float = 2 * _U) -> GaussianCurve:
    """Exact curve of a composition of Gaussian mechanisms, ``terms = ((mu_i, k_i), ...)``.

    mu = sqrt(sum k_i mu_i^2) (Dong, Roth, Su 2022, Cor. 3.3), with the rounding of this
    combination bounded: each mu_i is within ``term_rel_error`` of its true value (default two
    units of roundoff: one division as in ``1 / noise_multiplier``), its square and the product
    with k_i add 3 u, the sum of n terms n u (any order) and the square root u. Returns a
    [`GaussianCurve`][privselect.accounting.profile.GaussianCurve] whose ``mu_bounds`` contain the true mu.
    """
    terms = [(check.positive("mu", m), int(k)) for m, k in terms]
    if not terms or any(k < 1 for _, k in terms):
        raise ValueError("terms must be a non-empty sequence of (mu, count) with count >= 1")
    with np.errstate(over="ignore"):
        total = math.fsum(float(k) * m * m for m, k in terms)
    mu = math.sqrt(total)
    # relative error of total: (1 + r)^2 (1 + u)^3 per term, then the sum; of mu: half of it plus u
    r_total = (1 + term_rel_error) ** 2 * (1 + _U) ** (3 + len(terms)) - 1
    rel = 0.5 * r_total + 2 * _U
    lo = mu * (1 - rel) * (1 - _U)
    hi = mu * (1 + rel) * (1 + _U)
    return GaussianCurve(mu, direction, mu_bounds=(lo, hi))


class DiscretePairCurve(DirectionalCurve):
    """Exact H_{e^eps}(P || Q) = sum_o (p(o) - e^eps q(o))_+ of two pmfs on a finite space."""

    def __init__(self, p: np.ndarray, q: np.ndarray, direction: str) -> None:
        self.p, self.q, self.direction = p, q, direction
        self.error_budget = ErrorBudget(details=(("exact_sum", 0.0),))

    def delta_bounds(self, eps):
        e = np.asarray(eps, dtype=float)
        with np.errstate(over="ignore", invalid="ignore"):
            terms = self.p[None, :] - np.exp(e).reshape(-1, 1) * self.q[None, :]
        terms = np.where(self.q[None, :] == 0, self.p[None, :], terms)
        d = np.clip(np.maximum(terms, 0.0).sum(axis=1), 0.0, 1.0).reshape(e.shape)
        slack = self.p.size * np.finfo(float).eps * np.maximum(d, np.finfo(float).tiny)
        return np.clip(d - slack, 0, 1), np.clip(d + slack, 0, 1)


def discrete_profile(p, q) -> PrivacyProfile:
    """Exact profile max(H(P||Q), H(Q||P)) of two distributions on a finite output space.

    For testing bounds against exact computations (e.g. Report-Noisy-Max, private selection
    with a finite ordered score space) and for mechanisms whose worst-case pair is known.
    """
    pa, qa = check.real_array("p", p), check.real_array("q", q)
    if pa.shape != qa.shape or pa.ndim != 1:
        raise ValueError("p and q must be 1-d arrays of the same length")
    for name, arr in (("p", pa), ("q", qa)):
        if (arr < 0).any() or not math.isclose(float(arr.sum()), 1.0, rel_tol=0, abs_tol=1e-12):
            raise ValueError(f"{name} must be a probability vector (non-negative, summing to 1)")
    curves = (DiscretePairCurve(pa, qa, "p||q"), DiscretePairCurve(qa, pa, "q||p"))
    return PrivacyProfile(curves=curves, accountant="exact", description="discrete pair")


def gdp_profile(mu: float) -> PrivacyProfile:
    """The exact privacy profile of mu-Gaussian DP (Dong, Roth, Su 2022); mu > 0 with mu**2 finite."""
    mu = check.positive("mu", mu)
    return PrivacyProfile(curves=(GaussianCurve(mu),), accountant="exact", description=f"{mu}-GDP")
