"""PrivacyProfile: the one currency every later stage consumes.

A privacy profile is the function eps -> delta(eps) such that a mechanism is
(eps, delta(eps))-DP for every eps (Balle, Barthe, Gaboardi 2018). For add/remove
neighbours it is the maximum of two hockey-stick curves, one per direction:

    delta(eps) = max( H_{e^eps}(P_remove^k || Q_remove^k), H_{e^eps}(P_add^k || Q_add^k) ).

Each accountant produces one :class:`DirectionalCurve` per direction, with a certified
bracket ``lower <= true <= upper`` valid for every eps simultaneously, and an
:class:`ErrorBudget` that says how wide the bracket may be. :class:`PrivacyProfile` takes
the maximum over directions at query time (never per step) and offers the derived views:
epsilon(delta), trade-off curves (f-DP, Dong, Roth, Su 2022; Su 2024 Thm 5) and ``to_dict``.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import special

from .. import _validation as check

__all__ = [
    "ErrorBudget",
    "DirectionalCurve",
    "PrivacyProfile",
    "CertificationError",
    "gaussian_delta",
    "gaussian_epsilon",
    "GaussianCurve",
    "gdp_profile",
    "discrete_profile",
    "ScaledShiftedCurve",
]


class CertificationError(ValueError):
    """A query asks for a value that cannot be certified (e.g. delta below the float floor)."""


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

    @abstractmethod
    def delta_bounds(self, eps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(lower, upper) bounds on delta at each eps."""

    def epsilon_bounds(self, delta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(lower, upper) bounds on eps(delta). Default: bisection on ``delta_bounds``."""
        delta = np.asarray(delta, dtype=float)
        lower_curve = lambda e: self.delta_bounds(e)[0]  # noqa: E731
        upper_curve = lambda e: self.delta_bounds(e)[1]  # noqa: E731
        return invert_curve(lower_curve, delta, side="lower"), invert_curve(upper_curve, delta, side="upper")

    def delta_estimate(self, eps: np.ndarray) -> np.ndarray:
        """A point estimate (not a bound); default is the upper bound."""
        return self.delta_bounds(eps)[1]


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

    Use :func:`privselect.privacy_profile` to build one. All queries are vectorised.
    """

    curves: tuple[DirectionalCurve, ...]
    method: str
    mechanism: Any = None
    description: str = ""
    metadata: tuple[tuple[str, Any], ...] = field(default=())

    def __post_init__(self) -> None:
        if not self.curves:
            raise ValueError("a privacy profile needs at least one directional curve")

    # -- error budget ------------------------------------------------------------------

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
        """Certified upper bound on delta(eps) (vectorised)."""
        return self.delta_bounds(eps)[1]

    def delta_estimate(self, eps):
        """Point estimate of delta(eps): max over directions of each accountant's estimate."""
        e = check.real_array("eps", eps)
        return _like(eps, np.clip(np.max(np.stack([c.delta_estimate(e) for c in self.curves]), axis=0), 0.0, 1.0))

    # -- eps(delta) --------------------------------------------------------------------

    def epsilon_bounds(self, delta) -> tuple[np.ndarray, np.ndarray]:
        """(lower, upper) bounds on the smallest eps >= 0 with the mechanism (eps, delta)-DP."""
        d = check.delta_array("delta", delta)
        floor = self.error_budget.min_delta
        if floor > 0 and (d <= floor).any():
            raise CertificationError(
                f"delta={float(d.min()):.3g} is below {floor:.3g}, the smallest delta this "
                f"{self.method} profile can certify in double precision; use a larger delta "
                "or an accountant with a lower floor (method='cf')"
            )
        lows, ups = zip(*(c.epsilon_bounds(d) for c in self.curves))
        lower = np.maximum(np.max(np.stack(lows), axis=0), 0.0)
        upper = np.maximum(np.max(np.stack(ups), axis=0), 0.0)
        return _like(delta, lower), _like(delta, upper)

    def epsilon(self, delta):
        """Certified upper bound on eps(delta) (vectorised)."""
        return self.epsilon_bounds(delta)[1]

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
            "method": self.method,
            "mechanism": repr(self.mechanism),
            "description": self.description,
            "directions": [c.direction for c in self.curves],
            "error_budget": self.error_budget.to_dict(),
            "metadata": {k: v for k, v in self.metadata},
        }


def _like(template, values: np.ndarray):
    """Return a Python float for scalar input, an array otherwise."""
    if np.ndim(template) == 0:
        return float(np.asarray(values).reshape(-1)[0])
    return values


class ScaledShiftedCurve(DirectionalCurve):
    """delta'(eps) = min(1, scale * delta_base(eps - shift)), an upper bound only.

    The form of every profile bound of Koskela, Redberg, Wang 2024 (Thm 3.2, 3.3, 5.2, 5.7,
    Cor. 5.8). ``delta_base`` is the certified upper side of ``base`` (both directions
    already maximised). Where the bound is only proven for eps > 0 (``positive_eps_only``),
    the curve returns the trivial bound 1 at eps <= 0. The lower side is 0.
    """

    direction = "both"

    def __init__(self, base: "PrivacyProfile", *, scale: float, shift: float = 0.0,
                 positive_eps_only: bool = False, label: str = "scale") -> None:
        self.base, self.scale, self.shift, self.positive_eps_only = base, float(scale), float(shift), positive_eps_only
        budget = base.error_budget
        self.error_budget = ErrorBudget(
            eps_error=budget.eps_error,
            delta_error=self.scale * budget.delta_error,
            min_delta=self.scale * budget.min_delta,
            details=budget.details + ((label, self.scale),),
        )

    def delta_bounds(self, eps):
        e = np.asarray(eps, dtype=float)
        upper = np.minimum(1.0, self.scale * self.base.delta(e - self.shift))
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


def gaussian_delta(eps, mu: float) -> np.ndarray:
    """Exact profile of mu-GDP / the Gaussian mechanism with mu = sensitivity/sigma.

    delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2) for every real eps
    (Balle, Wang 2018, Thm 8; Dong, Roth, Su 2022, Cor. 2.13). Evaluated in log space
    so that values far below 1e-300 are not lost to cancellation before they underflow.
    """
    e = np.asarray(eps, dtype=float)
    a = special.log_ndtr(-e / mu + mu / 2)
    b = e + special.log_ndtr(-e / mu - mu / 2)
    with np.errstate(divide="ignore", invalid="ignore"):
        # log(e^a - e^b) = a + log1p(-e^{b-a}); b < a always for mu > 0.
        out = np.exp(a) * -np.expm1(np.minimum(b - a, 0.0))
    return np.clip(np.where(np.isneginf(e), 1.0, out), 0.0, 1.0)


def gaussian_epsilon(delta, mu: float) -> np.ndarray:
    """Exact eps(delta) of mu-GDP by bisection on the exact profile (may be negative)."""
    d = np.asarray(delta, dtype=float)
    upper = invert_curve(lambda e: gaussian_delta(e, mu), d, side="upper", lo=-50.0, hi=50.0 + 50.0 * mu * mu)
    return upper


class GaussianCurve(DirectionalCurve):
    """Exact curve of the (composed) Gaussian mechanism: mu = sqrt(sum k_i mu_i^2)."""

    def __init__(self, mu: float, direction: str = "both") -> None:
        self.mu = check.positive("mu", mu)
        self.direction = direction
        # Relative rounding of the closed form is a few ulps; report it as a delta error.
        self.error_budget = ErrorBudget(details=(("closed_form", 0.0),))

    def delta_bounds(self, eps):
        d = gaussian_delta(eps, self.mu)
        slack = 8 * np.finfo(float).eps * d
        return np.clip(d - slack, 0, 1), np.clip(d + slack, 0, 1)

    def delta_estimate(self, eps):
        return gaussian_delta(eps, self.mu)


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
    return PrivacyProfile(curves=curves, method="exact", description="discrete pair")


def gdp_profile(mu: float) -> PrivacyProfile:
    """The exact privacy profile of mu-Gaussian DP (Dong, Roth, Su 2022)."""
    mu = check.positive("mu", mu)
    return PrivacyProfile(curves=(GaussianCurve(mu),), method="exact", description=f"{mu}-GDP")
