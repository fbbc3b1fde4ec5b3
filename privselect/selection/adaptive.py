"""Certificates for adaptive private search with a bounded density ratio (DP-HyPO).

The procedure (Wang, Gao, Zhang, Su, Shen, NeurIPS 2023, "DP-HyPO", Sec. 3): K is drawn once from a
truncated negative binomial law D_{θ,γ}; candidate j + 1 is drawn from a density π^(j+1) that may depend
on everything runs 1..j released, provided c <= π^(j+1)(λ) / π^(0)(λ) <= C for every λ (0 < c <= 1 <= C,
π^(0) the prior); only the best run is released (K is not).

* DP-HyPO Thm 1 (RDP): if every candidate is (α, ε)- and (α̂, ε̂)-RDP, the procedure is (α, ε')-RDP with

      ε' = ε + (1+θ)(1 - 1/α̂) ε̂ + (α/(α-1) + 1 + θ) log(C/c) + (1+θ) log(1/γ)/α̂ + log E[K]/(α-1).

  [`certify_adaptive`][privselect.selection.adaptive.certify_adaptive] minimises over α̂ >= 1 per α (α̂ = 1
  contributes (1+θ) log(1/γ), as in the i.i.d. bound of the library, KRW Thm 5.1), replaces the curve by
  its running minimum from the right (RDP is non-decreasing in the order), and converts with the
  library's tightest RDP -> (ε, δ) rule (Canonne, Kamath, Steinke 2020, Prop. 12 = KRW Lemma D.1).
  With C = c = 1 it is Papernot and Steinke's Thm 2, the library's i.i.d. "rdp" bound, exactly.
* DP-HyPO Thm 2 (pure DP): if every candidate is ε-DP, the procedure is ((2+θ)(ε + log(C/c)), 0)-DP,
  hence (·, δ)-DP for every δ.
* Composition (any adaptive search, whatever C/c): the K-mixture of k-fold compositions, the certificate of
  releasing K and every run (``certify(..., bound="mixture")``, what ``PrivateStudy(adaptive=True)`` states).
  Releasing only the best is a post-processing of that, so it is valid here too; it wins for wide ratios
  (DP-SGD, E[K] = 10, C/c = 4/0.5: 6.22 against Thm 1's 8.58).

``certify_adaptive`` returns the smallest of the three and lists the others as alternatives.

When hyperparameters change the privacy, the density may put up to C times the prior's mass on any
candidate, so the theorems are applied to the supremum over the space: the pointwise maximum of the
candidates' RDP curves (each candidate is (α, max_λ ε_λ(α))-RDP) and the largest pure ε.

K laws: only the truncated negative binomial family (TruncatedNegativeBinomial, Geometric, Logarithmic)
is certified. DP-HyPO's Lemma A.5 turns the generating function into the bound for other laws, but the
Poisson and binomial cases need a separate derivation that is not in this module: they are refused with
[`CertificationError`][privselect.errors.CertificationError] (docs/adaptive.md, "K laws").
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import _validation as check
from ..accounting import rdp
from ..accounting.average import HyperparameterMixture
from ..accounting.closed import pure_epsilon_total, step_bound
from ..accounting.profile import ErrorBudget, PrivacyProfile
from ..errors import CertificationError, UnsupportedMechanismError
from ..mechanisms import Mechanism
from .certify import Certificate, certify, tightest_bound
from .distributions import KDistribution, TruncatedNegativeBinomial
from .laws import ContinuousDependence, privacy_law

__all__ = [
    "THEOREM_PURE",
    "THEOREM_RDP",
    "DensityRatio",
    "adaptive_pure_epsilon",
    "adaptive_rdp_curve",
    "certify_adaptive",
]

THEOREM_RDP = "Wang et al. 2023 (DP-HyPO), Thm 1"
THEOREM_PURE = "Wang et al. 2023 (DP-HyPO), Thm 2"


@dataclass(frozen=True)
class DensityRatio:
    """The bounds c <= π^(j)(λ) / π^(0)(λ) <= C of every sampling density against the prior (DP-HyPO Sec. 3)."""

    upper: float  # C
    lower: float  # c

    def __post_init__(self) -> None:
        upper = check.real("density_ratio C", self.upper)
        lower = check.real("density_ratio c", self.lower)
        if not (math.isfinite(upper) and upper >= 1.0):
            raise ValueError(f"density_ratio=(C, c) needs a finite C >= 1, got C={self.upper!r}")
        if not (0.0 < lower <= 1.0):
            raise ValueError(f"density_ratio=(C, c) needs 0 < c <= 1, got c={self.lower!r}")
        object.__setattr__(self, "upper", float(upper))
        object.__setattr__(self, "lower", float(lower))

    @classmethod
    def of(cls, value: Any) -> DensityRatio:
        """A DensityRatio from itself or a pair (C, c)."""
        if isinstance(value, DensityRatio):
            return value
        if not (isinstance(value, (tuple, list)) and len(value) == 2):
            raise TypeError(f"density_ratio must be a pair (C, c) with c <= 1 <= C, got {value!r}")
        return cls(value[0], value[1])

    @property
    def log_ratio(self) -> float:
        """log(C/c) >= 0: what adaptivity costs in the theorems."""
        return math.log(self.upper) - math.log(self.lower)


def _candidate_mechanisms(privacy: Any, space: Any) -> tuple[Mechanism, ...]:
    """Every mechanism a candidate may run (the sup of the theorems is over these)."""
    if isinstance(privacy, PrivacyProfile):
        privacy = privacy.mechanism
    if isinstance(privacy, Mechanism):
        return (privacy,)
    if isinstance(privacy, HyperparameterMixture):
        mechanisms = privacy.mechanisms
    elif callable(privacy):
        if space is None:
            raise ValueError("privacy is a callable params -> Mechanism: pass space= (its search space) so the "
                             "supremum over the space can be taken")
        try:
            mechanisms = privacy_law(space, privacy).mechanisms
        except ContinuousDependence as exc:
            name = exc.args[0] if exc.args else "?"
            raise ValueError(f"privacy(params) reads the hyperparameter {name!r}, whose law is continuous: the "
                             "adaptive certificate takes the supremum over the space and needs a finite set of "
                             "mechanisms (use Choice over a grid of values)") from None
    elif isinstance(privacy, Sequence) and not isinstance(privacy, str):
        mechanisms = tuple(privacy)
    else:
        raise TypeError("privacy must be a Mechanism, a PrivacyProfile built from one, a HyperparameterMixture, a "
                        f"sequence of Mechanisms or a callable params -> Mechanism, got {type(privacy).__name__}")
    if not mechanisms or not all(isinstance(m, Mechanism) for m in mechanisms):
        raise TypeError("privacy must describe at least one candidate mechanism (ps.Mechanism instances)")
    return tuple(dict.fromkeys(mechanisms))


def _tnb(k: KDistribution) -> TruncatedNegativeBinomial:
    if not isinstance(k, KDistribution):
        raise TypeError(f"k must be a distribution of K (e.g. ps.Geometric(mean=10)), got {type(k).__name__}")
    if not isinstance(k, TruncatedNegativeBinomial):
        raise CertificationError(
            f"no adaptive certificate for K ~ {type(k).__name__}: DP-HyPO's Theorems 1 and 2 hold for a truncated "
            "negative binomial K; use ps.Geometric, ps.Logarithmic or ps.TruncatedNegativeBinomial "
            "(docs/adaptive.md, 'K laws')")
    return k


def _sup_rdp(mechanisms: tuple[Mechanism, ...], orders: np.ndarray) -> np.ndarray:
    curves = []
    for mechanism in mechanisms:
        reason = rdp.unsupported_part(mechanism)
        if reason is not None:
            raise UnsupportedMechanismError(f"certify_adaptive: no RDP curve for {reason} (in {mechanism!r})")
        curves.append(rdp.rdp_curve(mechanism, orders))
    return np.max(np.vstack(curves), axis=0)


def adaptive_rdp_curve(privacy: Any, k: KDistribution, density_ratio: Any, *, space: Any = None,
                       orders: np.ndarray | None = None) -> np.ndarray:
    """ε'(α) of DP-HyPO Thm 1 at ``orders`` (minimised over α̂ in ``orders`` and α̂ = 1), made non-decreasing."""
    k = _tnb(k)
    ratio = DensityRatio.of(density_ratio)
    a = rdp.DEFAULT_ORDERS if orders is None else np.asarray(orders, dtype=float)
    eps = _sup_rdp(_candidate_mechanisms(privacy, space), a)
    theta, log_inv_gamma = k.eta, -math.log(k.gamma)
    finite = np.isfinite(eps)
    hat_terms = np.concatenate([(1 - 1 / a[finite]) * eps[finite] + log_inv_gamma / a[finite], [log_inv_gamma]])
    hat = (1 + theta) * float(hat_terms.min())
    with np.errstate(invalid="ignore"):
        curve = eps + hat + (a / (a - 1) + 1 + theta) * ratio.log_ratio + math.log(k.mean) / (a - 1)
    curve = np.where(np.isfinite(curve), curve, np.inf)
    return np.minimum.accumulate(curve[::-1])[::-1]


def adaptive_pure_epsilon(privacy: Any, k: KDistribution, density_ratio: Any, *, space: Any = None) -> float:
    """DP-HyPO Thm 2: (2+θ)(ε + log(C/c)) with ε the largest pure ε of a candidate (inf if one is not pure)."""
    k = _tnb(k)
    ratio = DensityRatio.of(density_ratio)
    largest = 0.0
    for mechanism in _candidate_mechanisms(privacy, space):
        try:
            pure = pure_epsilon_total([(step_bound(part), count) for part, count in mechanism.components()])
        except (UnsupportedMechanismError, TypeError, NotImplementedError):
            return math.inf
        largest = max(largest, pure)
    return (2 + k.eta) * (largest + ratio.log_ratio) if math.isfinite(largest) else math.inf


def _composition(mechanisms: tuple[Mechanism, ...], k: KDistribution, delta: float,
                 notes: list[str]) -> Certificate | None:
    """The K-mixture of k-fold compositions (K and every run released; ``certify(..., bound="mixture")``).

    Valid for ANY adaptive search, whatever its density ratio: given K = k the transcript is an adaptive
    composition of k runs, K has the same law on neighbours, the hockey-stick divergence is jointly convex, and
    releasing only the best is a post-processing (privselect.selection.bounds.mixture). It is the certificate of
    ``PrivateStudy(adaptive=True)``. Offered for one mechanism (every candidate runs the same privacy).
    """
    from .bounds import unsupported_reason

    if len(mechanisms) != 1:
        notes.append("composition: offered when every candidate runs the same mechanism")
        return None
    reason = unsupported_reason(k, "mixture")
    if reason is not None:
        notes.append(f"composition: {reason}")
        return None
    try:
        return certify(mechanisms[0], k, delta, bound="mixture")
    except (CertificationError, UnsupportedMechanismError, ValueError, MemoryError) as exc:
        notes.append(f"composition: {type(exc).__name__}: {exc}")
        return None


def certify_adaptive(privacy: Any, k: KDistribution, delta: float, *, density_ratio: Any,
                     space: Any = None, orders: np.ndarray | None = None) -> Certificate:
    """Certify adaptive search: the smallest of DP-HyPO Thm 1 (RDP, converted at ``delta``), Thm 2 (pure DP) and
    the K-mixture of compositions (K and every run released; what ``PrivateStudy(adaptive=True)`` certifies, valid
    for any adaptive search). The others are listed in ``alternatives``.

    ``privacy`` is the privacy of one run: a Mechanism, a HyperparameterMixture or a sequence of
    Mechanisms, or a callable ``params -> Mechanism`` with its ``space`` (the supremum over the
    candidates is taken). ``density_ratio=(C, c)`` bounds every sampling density against the prior.
    ``k`` must be a truncated negative binomial law (Geometric, Logarithmic, TruncatedNegativeBinomial);
    other laws raise [`CertificationError`][privselect.errors.CertificationError].
    The certificate carries the whole procedure's profile (``ps.risk`` reads it): that of the bound that won
    (Thm 1's RDP curve converted at every δ; the composition's K-mixture profile).
    """
    ratio = DensityRatio.of(density_ratio)
    k = _tnb(k)
    delta = check.delta_scalar("delta", delta)
    mechanisms = _candidate_mechanisms(privacy, space)
    a = rdp.DEFAULT_ORDERS if orders is None else np.asarray(orders, dtype=float)
    alternatives: dict[str, float] = {}
    profiles: dict[str, PrivacyProfile] = {}
    notes = [f"density ratio C={ratio.upper:g}, c={ratio.lower:g} (log(C/c) = {ratio.log_ratio:.6g})"]
    try:
        curve = adaptive_rdp_curve(mechanisms, k, ratio, orders=a)
        alternatives["adaptive-rdp"] = float(rdp.epsilon_from_rdp(a, curve, delta))
        profiles["adaptive-rdp"] = PrivacyProfile(
            curves=(rdp.RdpCurve(a, curve),), accountant="adaptive-rdp", mechanism=None,
            description=f"adaptive search (DP-HyPO Thm 1 RDP curve), K ~ {k}, C/c = {ratio.upper:g}/{ratio.lower:g}")
    except UnsupportedMechanismError as exc:
        notes.append(f"adaptive-rdp: {exc}")
    pure = adaptive_pure_epsilon(mechanisms, k, ratio)
    if math.isfinite(pure):
        alternatives["adaptive-pure"] = pure
    else:
        notes.append("adaptive-pure: a candidate is not pure DP")
    composed = _composition(mechanisms, k, delta, notes)
    if composed is not None:
        alternatives["composition"] = float(composed.epsilon)
        if composed.profile is not None:
            profiles["composition"] = composed.profile
    best = tightest_bound(alternatives, CertificationError(
        f"no adaptive bound certifies this search at delta={delta:g}: {'; '.join(notes)}"))
    base = mechanisms[0] if len(mechanisms) == 1 else f"sup over {len(mechanisms)} candidate mechanisms: {mechanisms!r}"
    theorem = {"adaptive-rdp": THEOREM_RDP, "adaptive-pure": THEOREM_PURE,
               "composition": composed.theorem if composed is not None else ""}[best]
    accountant = {"adaptive-rdp": "rdp", "adaptive-pure": "closed",
                  "composition": composed.accountant if composed is not None else ""}[best]
    return Certificate(
        epsilon=alternatives[best], delta=delta, bound=best, theorem=theorem,
        alternatives=alternatives, k=k, base=base, accountant=accountant,
        error_budget=composed.error_budget if best == "composition" and composed is not None else ErrorBudget(),
        notes=tuple(notes), relation="" if len(mechanisms) == 1 else str(mechanisms[0].relation),
        profile=profiles.get(best),
    )
