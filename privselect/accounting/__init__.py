"""Accountants: mechanism descriptions in, certified privacy profiles out.

* `base`: the `Accountant` interface and the registry by name.
* `auto`: ``"auto"``, the pointwise best of the accountants it runs (the default).
* `exact`: closed forms (compositions of Gaussian mechanisms).
* `prv`: the PRV accountant (Gopi, Lee, Wutschitz 2021).
* `cf`: the characteristic-function accountant (Zhu, Dong, Wang 2022).
* [`rdp`][privselect.accounting.rdp]: Renyi-DP curves and conversions (the safety net, baselines).
* `plrv`: privacy-loss random variables of each mechanism, both directions.
* [`profile`][privselect.accounting.profile]: [`PrivacyProfile`][privselect.accounting.PrivacyProfile], the currency every later stage consumes.
"""

from __future__ import annotations

from typing import Any

from ..mechanisms import Mechanism

# The registry: importing an accountant's package registers its Accountant subclass
# (@register_accountant in <package>/accountant.py). A new accountant is one folder plus one line here.
from . import (
    allocation as _allocation,  # noqa: F401  (registers "allocation")
    auto as _auto,  # noqa: F401  (registers "auto")
    cf as _cf,  # noqa: F401  (registers "cf")
    exact as _exact,  # noqa: F401  (registers "exact")
    pld as _pld,  # noqa: F401  (registers "pld")
    prv as _prv,  # noqa: F401  (registers "prv")
    rdp as _rdp,  # noqa: F401  (registers "rdp")
)
from .base import (
    ACCOUNTANTS,
    Accountant,
    UnsupportedMechanismError,
    accountant_names,
    get_accountant,
    register_accountant,
)
from .gaussian import gaussian_delta, gaussian_epsilon
from .profile import CertificationError, ErrorBudget, PrivacyProfile, gdp_profile

__all__ = [
    "privacy_profile",
    "Accountant",
    "get_accountant",
    "accountant_names",
    "register_accountant",
    "ACCOUNTANTS",
    "UnsupportedMechanismError",
    "PrivacyProfile",
    "ErrorBudget",
    "CertificationError",
    "gdp_profile",
    "gaussian_delta",
    "gaussian_epsilon",
]


def renamed_method_error(where: str) -> TypeError:
    """The error for the retired ``method=`` keyword (it named the accountant, now ``accountant=``)."""
    return TypeError(f"{where}: the keyword method= was renamed: name the accountant with accountant= "
                     f"(one of {accountant_names()}); a bound family of certify is chosen with bound=")


def privacy_profile(mechanism: Mechanism | PrivacyProfile, accountant: str | Accountant = "auto",
                    **options: Any) -> PrivacyProfile:
    """Certified privacy profile of ``mechanism`` (both neighbouring directions).

    ``accountant`` names it: ``"auto"`` (default: the pointwise best of exact, closed-form bounds, RDP,
    PRV, pld and CF, within a 2 GB ``max_memory`` budget; answers every delta), ``"exact"`` (compositions
    of Gaussian mechanisms), ``"prv"`` (Gopi, Lee, Wutschitz 2021), ``"pld"`` (connect-the-dots PLD,
    Doroshenko et al. 2022), ``"cf"`` (Zhu, Dong, Wang 2022) or ``"rdp"`` (an upper bound only);
    or an `Accountant` instance. ``options`` go to the accountant (e.g. ``eps_error``
    for PRV). A [`PrivacyProfile`][privselect.accounting.PrivacyProfile] passes through unchanged.
    """
    if "method" in options:
        raise renamed_method_error("privacy_profile")
    if isinstance(mechanism, PrivacyProfile):
        if options:
            raise ValueError("accountant options cannot be applied to an already built PrivacyProfile")
        return mechanism
    if not isinstance(mechanism, Mechanism):
        raise TypeError(f"mechanism must be a privselect Mechanism or PrivacyProfile, got {type(mechanism).__name__}")
    return get_accountant(accountant, **options).profile(mechanism)

