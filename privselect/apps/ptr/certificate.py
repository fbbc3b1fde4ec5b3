"""The certificate of one private fit: what ``certificate_`` holds on the single-release regressors.

[`TunedOPSPTRRegressor`][privselect.apps.ptr.TunedOPSPTRRegressor] and
[`PrivateRegressorSelection`][privselect.apps.ptr.PrivateRegressorSelection] certify a selection
([`Certificate`][privselect.selection.certify.Certificate]); a regressor that releases once (AdaSSP,
SSP with a private ridge choice, OPS, OPS-PTR, output perturbation, TukeyEM) is certified by its own
mechanism description: epsilon = ``privacy_profile(est.privacy).epsilon(delta)``, the accountant's
certified upper bound (no selection theorem is involved: K = 1, no repetition).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

from ...accounting import privacy_profile
from ...accounting.profile import ErrorBudget
from ...mechanisms import Mechanism, NeighbouringRelation, PureDP
from ...memo import quiet_cache

__all__ = ["ReleaseCertificate", "release_certificate"]


@dataclass(frozen=True)
class ReleaseCertificate:
    """A certified (epsilon, delta) for one fit: the profile of ``base`` at ``delta``.

    Same reading as [`Certificate`][privselect.selection.certify.Certificate] for the fields they
    share (``epsilon``, ``delta``, ``bound``, ``theorem``, ``base``, ``accountant``,
    ``error_budget``, ``version``, ``relation``); there is no K (one release).
    """

    epsilon: float
    delta: float
    base: Any
    accountant: str
    error_budget: ErrorBudget
    bound: str = "profile"
    theorem: str = "the accountant's certified privacy profile of the fit's mechanism description (one release)"
    version: str = field(default="")
    relation: str = ""

    def __post_init__(self) -> None:
        if not self.version:
            from ... import __version__

            object.__setattr__(self, "version", __version__)
        if not self.relation:
            object.__setattr__(self, "relation", str(getattr(self.base, "relation", NeighbouringRelation.ADD_REMOVE)))

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict (non-finite numbers as the strings "inf", "nan")."""
        def number(value: float) -> float | str:
            return float(value) if math.isfinite(value) else str(float(value))

        try:
            base = self.base.to_dict() if isinstance(self.base, Mechanism) else {"description": str(self.base)}
        except TypeError:  # a description with no JSON form: its repr
            base = {"description": repr(self.base)}
        return {"epsilon": number(self.epsilon), "delta": number(self.delta), "bound": self.bound,
                "theorem": self.theorem, "base": base, "neighbouring_relation": self.relation,
                "accountant": self.accountant, "error_budget": self.error_budget.to_dict(),
                "privselect_version": self.version}

    def to_json(self, **kwargs: Any) -> str:
        """Strictly valid JSON (``allow_nan=False``)."""
        return json.dumps(self.to_dict(), allow_nan=False, **kwargs)

    def __str__(self) -> str:
        return f"({self.epsilon:.4g}, {self.delta:.3g})-DP for one fit [{self.accountant}]"


@quiet_cache(maxsize=256)
def release_certificate(mechanism: Mechanism, delta: float) -> ReleaseCertificate:
    """``ReleaseCertificate`` of ``mechanism`` at ``delta`` (data-independent: cached on the description)."""
    if delta == 0 and isinstance(mechanism, PureDP):  # pure DP: epsilon at delta = 0 is its own, exactly
        return ReleaseCertificate(epsilon=float(mechanism.epsilon), delta=0.0, base=mechanism, accountant="exact",
                                  error_budget=ErrorBudget(eps_error=0.0, delta_error=0.0))
    profile = privacy_profile(mechanism)
    epsilon = float(profile.epsilon(delta))
    accountant = profile.accountant
    if hasattr(profile, "epsilon_source"):
        accountant = f"auto[{profile.epsilon_source(min(max(delta, 1e-300), 0.5))}]"
    return ReleaseCertificate(epsilon=epsilon, delta=float(delta), base=mechanism, accountant=accountant,
                              error_budget=profile.error_budget)
