"""Averaged privacy profiles: the privacy of a run whose mechanism is drawn at random.

When the hyperparameters of a run are drawn from a data-independent law λ ~ Λ and released with
the run, the run's output on D is the mixture E_λ[M_λ(D)] (with λ attached). The hockey-stick
divergence is jointly convex, so for every ε and each neighbouring direction

    H_{e^ε}(E_λ P_λ || E_λ Q_λ) <= E_λ H_{e^ε}(P_λ || Q_λ),

hence δ_Q(ε) <= E_λ[δ_λ(ε)]: the average of the candidates' profiles is a valid profile of
the base run. Because λ is released, the components have disjoint supports and the inequality
is an equality in each direction; the only slack is taking the maximum over directions inside
the average. For a finite space (``Choice``, ``IntUniform``) the weights are the exact
sampling law, so nothing is approximated. [`average_profile`][privselect.accounting.average.average_profile] builds that average
from certified profiles; [`HyperparameterMixture`][privselect.accounting.average.HyperparameterMixture] describes the law of the mechanism.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..mechanisms import Mechanism
from .profile import DirectionalCurve, ErrorBudget, PrivacyProfile, known_error_budget

__all__ = ["HyperparameterMixture", "AveragedCurve", "average_profile"]

# Weights must sum to 1 within this tolerance (they come from products of 1/n).
_WEIGHT_TOLERANCE = 1e-9


@dataclass(frozen=True)
class HyperparameterMixture:
    """The law of a run's mechanism: ``components`` are (probability, Mechanism) pairs summing to 1."""

    components: tuple[tuple[float, Mechanism], ...]

    def __post_init__(self) -> None:
        if not self.components:
            raise ValueError("a hyperparameter mixture needs at least one component")
        weights = np.array([w for w, _ in self.components], dtype=float)
        if not (np.all(np.isfinite(weights)) and np.all(weights > 0)):
            raise ValueError(f"mixture weights must be positive and finite, got {weights.tolist()}")
        if abs(weights.sum() - 1.0) > _WEIGHT_TOLERANCE:
            raise ValueError(f"mixture weights must sum to 1, got {weights.sum()!r}")

    @property
    def weights(self) -> np.ndarray:
        return np.array([w for w, _ in self.components], dtype=float)

    @property
    def mechanisms(self) -> tuple[Mechanism, ...]:
        return tuple(m for _, m in self.components)

    def __repr__(self) -> str:
        parts = ", ".join(f"{w:.4g}: {m!r}" for w, m in self.components[:4])
        more = f", ... ({len(self.components)} mechanisms)" if len(self.components) > 4 else ""
        return f"HyperparameterMixture({parts}{more})"


class AveragedCurve(DirectionalCurve):
    """ε -> Σ_i w_i δ_i(ε) of profiles (each already the max over its directions).

    Upper side: Σ w_i upper_i, an upper bound on the average (hence on the mixture, by joint
    convexity). Lower side: Σ w_i lower_i, a lower bound on the AVERAGE curve (not on the
    mixture's own profile, which may be smaller).
    """

    direction = "both"

    def __init__(self, profiles: Sequence[PrivacyProfile], weights: np.ndarray) -> None:
        self.profiles, self.weights = tuple(profiles), np.asarray(weights, dtype=float)

    @property
    def error_budget(self) -> ErrorBudget:  # type: ignore[override]
        """Weighted delta errors, the largest eps error (each component's budget as known when asked: an
        auto profile's CF member reports its budget once built, ``known_error_budget``)."""
        budgets = [known_error_budget(p) for p in self.profiles]
        return ErrorBudget(
            eps_error=max(b.eps_error for b in budgets),
            delta_error=float(np.dot(self.weights, [b.delta_error for b in budgets])),
            min_delta=float(np.dot(self.weights, [b.min_delta for b in budgets])),
            details=tuple((f"component {i} (weight {w:.4g}): {name}", value)
                          for i, (w, b) in enumerate(zip(self.weights, budgets)) for name, value in b.details),
        )

    @property
    def min_delta(self) -> float:
        """Weighted floors of the components (each the largest floor of its curves), without computing budgets."""
        return float(np.dot(self.weights, [max(c.min_delta for c in p.curves) for p in self.profiles]))

    def delta_bounds(self, eps):
        e = np.asarray(eps, dtype=float)
        lows, ups = zip(*(p.delta_bounds(e) for p in self.profiles))
        lower = np.tensordot(self.weights, np.stack([np.asarray(x, dtype=float) for x in lows]), axes=1)
        upper = np.tensordot(self.weights, np.stack([np.asarray(x, dtype=float) for x in ups]), axes=1)
        # Rounding of the weighted sum: at most (n + 1) ulps relative; push the upper side up.
        slack = (len(self.profiles) + 1) * np.finfo(float).eps
        return np.clip(lower * (1 - slack), 0.0, 1.0), np.clip(upper * (1 + slack), 0.0, 1.0)


def average_profile(profiles: Sequence[PrivacyProfile], weights: Sequence[float] | np.ndarray, *,
                    mechanism: object = None) -> PrivacyProfile:
    """The profile ε -> Σ_i w_i δ_i(ε) of a run whose mechanism is drawn with probabilities ``weights``.

    An upper bound on the mixture's profile by joint convexity of the hockey-stick divergence
    (module docstring); error budgets combine as the weighted sum of δ errors and the largest
    ε error.
    """
    profiles = tuple(profiles)
    w = np.asarray(weights, dtype=float)
    if not profiles or w.shape != (len(profiles),):
        raise ValueError(f"average_profile needs one weight per profile, got {len(profiles)} profiles and "
                         f"weights of shape {w.shape}")
    if not all(isinstance(p, PrivacyProfile) for p in profiles):
        raise TypeError("average_profile needs PrivacyProfile objects")
    if not (np.all(np.isfinite(w)) and np.all(w >= 0) and math.isclose(w.sum(), 1.0, abs_tol=_WEIGHT_TOLERANCE)):
        raise ValueError(f"weights must be non-negative and sum to 1, got {w.tolist()}")
    if len(profiles) == 1:
        return profiles[0]
    methods = sorted({p.accountant for p in profiles})
    return PrivacyProfile(
        curves=(AveragedCurve(profiles, w),),
        accountant="average[" + ",".join(methods) + "]",
        mechanism=mechanism,
        description=f"average of {len(profiles)} profiles (joint convexity)",
        metadata=(("components", len(profiles)),),
    )
