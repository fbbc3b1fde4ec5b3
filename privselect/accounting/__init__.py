"""Accountants: mechanism descriptions in, certified privacy profiles out.

* :mod:`.plrv`: privacy-loss random variables of each mechanism, both directions.
* :mod:`.prv`: the PRV accountant (Gopi, Lee, Wutschitz 2021).
* :mod:`.cf`: the characteristic-function accountant (Zhu, Dong, Wang 2022).
* :mod:`.rdp`: Renyi-DP curves and conversions (baselines and domain sizing).
* :mod:`.profile`: :class:`PrivacyProfile`, the currency every later stage consumes.
"""

from __future__ import annotations

from typing import Any, Callable

from ..mechanisms import Mechanism
from .profile import CertificationError, ErrorBudget, PrivacyProfile, gaussian_delta, gaussian_epsilon, gdp_profile

__all__ = [
    "privacy_profile",
    "PrivacyProfile",
    "ErrorBudget",
    "CertificationError",
    "gdp_profile",
    "gaussian_delta",
    "gaussian_epsilon",
    "METHODS",
]


def _prv(mechanism: Mechanism, **options: Any) -> PrivacyProfile:
    from .prv import PRVAccountant

    return PRVAccountant(**options).profile(mechanism)


def _cf(mechanism: Mechanism, **options: Any) -> PrivacyProfile:
    from .cf import CFAccountant

    return CFAccountant(**options).profile(mechanism)


def _rdp(mechanism: Mechanism, **options: Any) -> PrivacyProfile:
    from .rdp import rdp_profile

    return rdp_profile(mechanism, **options)


def _exact(mechanism: Mechanism, **options: Any) -> PrivacyProfile:
    """Closed form for compositions of Gaussian mechanisms: mu = sqrt(sum k_i mu_i^2)."""
    from ..mechanisms import Gaussian
    from .profile import composed_gaussian_curve

    if options:
        raise ValueError(f"method='exact' takes no options, got {sorted(options)}")
    terms = []
    for part, count in mechanism.components():
        if not isinstance(part, Gaussian):
            raise ValueError(
                f"method='exact' supports compositions of Gaussian mechanisms only; got {type(part).__name__}"
            )
        terms.append((part.mu, count))
    curve = composed_gaussian_curve(terms)  # certified range of mu: the rounding of combining the steps
    return PrivacyProfile(curves=(curve,), method="exact", mechanism=mechanism,
                          description=f"{curve.mu:.6g}-GDP (exact)")


#: The accountants ``privacy_profile`` can use, by name.
METHODS: dict[str, Callable[..., PrivacyProfile]] = {"prv": _prv, "cf": _cf, "rdp": _rdp, "exact": _exact}


def privacy_profile(mechanism: Mechanism | PrivacyProfile, method: str = "prv", **options: Any) -> PrivacyProfile:
    """Certified privacy profile of ``mechanism`` (both neighbouring directions).

    ``method`` picks the accountant: ``"prv"`` (Gopi, Lee, Wutschitz 2021; default),
    ``"cf"`` (Zhu, Dong, Wang 2022), ``"rdp"`` (an upper bound only, for baselines) or
    ``"exact"`` (closed form, compositions of Gaussian mechanisms only).
    ``options`` go to the accountant (e.g. ``eps_error``, ``delta_error`` for PRV).
    A :class:`PrivacyProfile` passes through unchanged.
    """
    if isinstance(mechanism, PrivacyProfile):
        if options:
            raise ValueError("accountant options cannot be applied to an already built PrivacyProfile")
        return mechanism
    if not isinstance(mechanism, Mechanism):
        raise TypeError(f"mechanism must be a privselect Mechanism or PrivacyProfile, got {type(mechanism).__name__}")
    try:
        build = METHODS[method]
    except (KeyError, TypeError):
        raise ValueError(f"method must be one of {sorted(METHODS)}, got {method!r}") from None
    return build(mechanism, **options)
