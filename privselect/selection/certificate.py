"""Certificates for "run the base mechanism K times, release the best".

:func:`certify` computes every valid bound that applies (the privacy-profile family of
Koskela, Redberg, Wang 2024 and the RDP family of Papernot, Steinke 2022) and returns a
frozen :class:`Certificate` carrying the smallest epsilon, the bound that gave it, the
alternatives, the K distribution, the base mechanism, the accountant's error budget and
the library version. Certificates are data: ``to_dict()`` / ``to_json()``; nothing prints.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

from .. import _validation as check
from ..accounting import privacy_profile
from ..accounting.average import HyperparameterMixture
from ..accounting.profile import CertificationError, ErrorBudget, PrivacyProfile
from ..mechanisms import Mechanism
from .bounds import selection_profile
from .distributions import KDistribution
from .hyperparameter import certify_hyperparameter_mixture
from .rdp_bounds import rdp_selection_epsilon, supports_rdp_selection

__all__ = ["Certificate", "certify", "FAMILIES"]

FAMILIES = ("profile", "rdp")


@dataclass(frozen=True)
class Certificate:
    """A certified (epsilon, delta) guarantee for private selection, and how it was obtained."""

    epsilon: float
    delta: float
    method: str
    bound: str
    alternatives: dict[str, float]
    k: KDistribution
    base: str
    accountant: str
    error_budget: ErrorBudget
    notes: tuple[str, ...] = ()
    version: str = field(default="")

    def __post_init__(self) -> None:
        if not self.version:
            from .. import __version__

            object.__setattr__(self, "version", __version__)

    def to_dict(self) -> dict[str, Any]:
        return {
            "epsilon": self.epsilon,
            "delta": self.delta,
            "method": self.method,
            "bound": self.bound,
            "alternatives": dict(self.alternatives),
            "k": self.k.to_dict(),
            "base": self.base,
            "accountant": self.accountant,
            "error_budget": self.error_budget.to_dict(),
            "notes": list(self.notes),
            "privselect_version": self.version,
        }

    def to_json(self, **kwargs: Any) -> str:
        return json.dumps(self.to_dict(), **kwargs)

    def __str__(self) -> str:
        return f"({self.epsilon:.4g}, {self.delta:.3g})-DP for the best of K ~ {self.k!r} runs [{self.bound}]"


def certify(base: Mechanism | PrivacyProfile, k: KDistribution, delta: float, *, bound: str | None = None,
            accountant: str = "auto", base_epsilon: float | None = None, **accountant_options: Any) -> Certificate:
    """Certify "release the best of K runs of ``base``" at ``delta``: the smallest valid epsilon.

    ``bound=None`` tries every family that applies; ``"profile"`` or ``"rdp"`` forces one
    (and raises if it does not apply). ``accountant`` and its options build the base profile
    when ``base`` is a mechanism description. A :class:`HyperparameterMixture` (the law of a
    run's mechanism when hyperparameters change the privacy) is certified by the smaller of the
    averaged-profile bound and KRW Cor. 6.2 (``base_epsilon`` = ε_Q, searched when None).
    """
    if "method" in accountant_options:
        raise TypeError("certify: the keyword method= was renamed: choose the bound family with bound= "
                        f"(one of {FAMILIES}) and the accountant with accountant=")
    method = bound
    if not isinstance(k, KDistribution):
        raise TypeError(f"k must be a distribution of K (e.g. ps.Geometric(mean=10)), got {type(k).__name__}")
    delta = check.delta_scalar("delta", delta)
    if method is not None and (not isinstance(method, str) or method not in FAMILIES):
        raise ValueError(f"bound must be one of {FAMILIES} or None, got {method!r}")
    if isinstance(base, HyperparameterMixture):  # hyperparameter-dependent privacy (selection/hyperparameter.py)
        return certify_hyperparameter_mixture(base, k, delta, base_epsilon=base_epsilon, accountant=accountant,
                                              **accountant_options)
    mechanism = base.mechanism if isinstance(base, PrivacyProfile) else base
    families = FAMILIES if method is None else (method,)
    results: dict[str, tuple[float, str]] = {}
    notes: list[str] = []
    budget = ErrorBudget()
    accountant_name = accountant

    if "profile" in families:
        try:
            base_profile = privacy_profile(base, accountant=accountant, **accountant_options)
            sel = selection_profile(base_profile, k)
            eps = float(sel.epsilon(delta))
        except CertificationError as exc:
            # delta / E[K] is below what this accountant certifies in floating point: fall back to
            # the characteristic-function accountant (relative precision at tiny delta) and say so.
            if not isinstance(base, Mechanism) or accountant == "cf":
                if method == "profile":
                    raise
                notes.append(f"profile: {exc}")
                base_profile = None
            else:
                notes.append(f"profile[{accountant}]: {exc}; fell back to the cf accountant")
                base_profile = privacy_profile(base, accountant="cf")
                sel = selection_profile(base_profile, k)
                eps = float(sel.epsilon(delta))
        if base_profile is not None:
            results["profile"] = (eps, dict(sel.metadata)["theorem"])
            budget = sel.error_budget
            accountant_name = base_profile.method
    if "rdp" in families:
        reason = supports_rdp_selection(mechanism, k)
        if reason is None:
            theorem = "Papernot-Steinke 2022 (KRW Thm 5.1)" if k.min_k == 1 else "Papernot-Steinke 2022 (KRW Thm 5.6)"
            results["rdp"] = (rdp_selection_epsilon(mechanism, k, delta), theorem)
        elif method == "rdp":
            raise ValueError(f"bound='rdp' does not apply: {reason}")
        else:
            notes.append(f"rdp: {reason}")
    finite = {name: value for name, value in results.items() if math.isfinite(value[0])}
    if not finite:
        raise ValueError(f"no bound certifies this selection at delta={delta:g}: {notes or results}")
    best = min(finite, key=lambda name: finite[name][0])
    return Certificate(
        epsilon=finite[best][0],
        delta=delta,
        method=best,
        bound=finite[best][1],
        alternatives={name: value[0] for name, value in results.items()},
        k=k,
        base=repr(mechanism),
        accountant=accountant_name if best == "profile" else "rdp",
        error_budget=budget if best == "profile" else ErrorBudget(),
        notes=tuple(notes),
    )
