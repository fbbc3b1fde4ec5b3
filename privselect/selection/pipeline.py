"""Certificates for tuning inside a pipeline: tune (possibly on a subsample), then train a final model.

The selection profile of "best of K runs" (KRW Thm 5.2 / 5.7 / Cor. 5.8) becomes a mechanism
([`ProfileMechanism`][privselect.accounting.dominating.ProfileMechanism], a dominating pair by connecting the
dots), which then composes and subsamples like any other:

* **tune then train**: the selection, then one final run with the winner's hyperparameters on the
  full data: ``compose(ProfileMechanism(selection), final)`` (adaptive composition; the final run
  may depend on the winner).
* **subsampled tuning** (Koskela, Kulkarni 2023): the K candidates all run on one Poisson subsample
  of rate r, drawn once and independently of the data, then the final run on the full data:
  ``compose(ProfileMechanism(selection).poisson_subsample(r), final)`` (Zhu, Dong, Wang 2022,
  Thm 11(1) applied to the whole selection, whose add/remove profile on the subsample is
  ``selection``); or the final run on the complement of the subsample (Koskela and Kulkarni's
  second variant): ``PoissonSplit(selection, profile(final), r)``, each record in exactly one part.

The RDP route, kept as an alternative and reported: the Papernot-Steinke selection RDP (KRW Thm
5.1 / 5.6), amplified by Poisson subsampling with the general bound of Zhu, Wang (2019, Thm 6)
when r < 1 (as Koskela and Kulkarni do), plus the final run's RDP. A certificate takes the
smaller epsilon of the two routes.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy import special

from .. import _validation as check
from ..accounting import get_accountant, privacy_profile, rdp
from ..accounting.dominating import PoissonSplit, ProfileMechanism
from ..accounting.profile import CertificationError, ErrorBudget, PrivacyProfile
from ..mechanisms import Mechanism, compose
from .bounds import selection_profile, selection_rdp_curve, supports_rdp_selection
from .certify import Certificate, tightest_bound
from .distributions import KDistribution

__all__ = ["pipeline_mechanism", "pipeline_profile", "pipeline_rdp_epsilon", "certify_pipeline",
           "poisson_subsampled_rdp"]

#: Where the final run trains: on the full data, or on the records outside the tuning subsample.
FINAL_DATA = ("full", "complement")
#: Integer Renyi orders for the RDP route (Zhu-Wang's bound needs integers >= 2).
PIPELINE_ORDERS = np.arange(2, 257, dtype=float)


def _rate(tuning_rate: object) -> float:
    return check.half_open_unit("tuning_rate", tuning_rate)


def _final(final: object) -> Mechanism | None:
    if final is not None and not isinstance(final, Mechanism):
        raise TypeError(f"final must be a Mechanism describing the final training run, or None, "
                        f"got {type(final).__name__}")
    return final


def _final_data(final_data: object, rate: float, final: Mechanism | None) -> str:
    if final_data not in FINAL_DATA:
        raise ValueError(f"final_data must be one of {FINAL_DATA}, got {final_data!r}")
    if final_data == "complement" and (final is None or rate == 1.0):
        raise ValueError("final_data='complement' needs a final run and tuning_rate < 1 (the final run sees the "
                         "records outside the tuning subsample)")
    return final_data


def pipeline_mechanism(selection: PrivacyProfile, *, final: Mechanism | None = None, tuning_rate: float = 1.0,
                       final_data: str = "full", **accountant_options: Any) -> Mechanism:
    """The pipeline as a mechanism: the selection (subsampled at ``tuning_rate``), then ``final``.

    ``final_data="complement"``: the final run sees only the records outside the tuning subsample
    ([`PoissonSplit`][privselect.accounting.dominating.PoissonSplit]).
    """
    rate, final = _rate(tuning_rate), _final(final)
    if _final_data(final_data, rate, final) == "complement" and final is not None:  # "complement" needs a final run
        return PoissonSplit(selection, privacy_profile(final, **accountant_options), rate)
    tuning: Mechanism = ProfileMechanism(selection)
    if rate < 1:
        tuning = tuning.poisson_subsample(rate)
    return tuning if final is None else compose(tuning, final)


def pipeline_profile(base: Mechanism | PrivacyProfile, k: KDistribution, *, final: Mechanism | None = None,
                     tuning_rate: float = 1.0, final_data: str = "full", **accountant_options: Any) -> PrivacyProfile:
    """Privacy profile of the pipeline; with no final run and ``tuning_rate=1`` the selection profile itself."""
    selection = selection_profile(base, k, **accountant_options)
    if final is None and _rate(tuning_rate) == 1.0:
        return selection
    return privacy_profile(pipeline_mechanism(selection, final=final, tuning_rate=tuning_rate, final_data=final_data,
                                              **accountant_options), **accountant_options)


def poisson_subsampled_rdp(rdp_curve: np.ndarray, orders: np.ndarray, rate: float) -> np.ndarray:
    """Upper bound on the RDP of a mechanism run on a Poisson subsample (Zhu, Wang 2019, Thm 6).

    ``rdp_curve[i]`` is the mechanism's RDP at ``orders[i]``; ``orders`` must be the integers
    2, 3, ..., A. For each integer order a:

        (a-1) eps'(a) <= log[(1-r)^{a-1} (a r - r + 1) + C(a,2) r^2 (1-r)^{a-2} e^{eps(2)}
                             + 3 sum_{l=3}^a C(a,l) r^l (1-r)^{a-l} e^{(l-1) eps(l)}],

    capped by eps(a) (subsampling never increases RDP, by joint convexity).
    """
    orders = np.asarray(orders, dtype=float)
    eps = np.asarray(rdp_curve, dtype=float)
    if not np.array_equal(orders, np.arange(2, orders.size + 2)):
        raise ValueError("poisson_subsampled_rdp needs the integer orders 2, 3, ..., A")
    if rate == 1.0:
        return eps.copy()
    out = np.empty_like(eps)
    log_r, log_1mr = math.log(rate), math.log1p(-rate)
    for i, a in enumerate(orders.astype(int)):
        ell = np.arange(2, a + 1)
        log_binom = special.gammaln(a + 1) - special.gammaln(ell + 1) - special.gammaln(a - ell + 1)
        terms = log_binom + ell * log_r + (a - ell) * log_1mr + (ell - 1) * eps[ell - 2]
        terms[1:] += math.log(3.0)
        head = (a - 1) * log_1mr + math.log1p((a - 1) * rate)
        total = special.logsumexp(np.concatenate([[head], terms]))
        out[i] = min(total / (a - 1), eps[i])
    return out


def pipeline_rdp_epsilon(base: Mechanism, k: KDistribution, delta: float, *, final: Mechanism | None = None,
                         tuning_rate: float = 1.0) -> float:
    """The RDP route: Papernot-Steinke selection RDP, Zhu-Wang subsampling, plus the final run's RDP."""
    reason = supports_rdp_selection(base, k)
    if reason:
        raise ValueError(reason)
    curve = selection_rdp_curve(base, k, PIPELINE_ORDERS)
    curve = poisson_subsampled_rdp(curve, PIPELINE_ORDERS, _rate(tuning_rate))
    final = _final(final)
    if final is not None:
        curve = curve + rdp.rdp_curve(final, PIPELINE_ORDERS)
    return float(rdp.epsilon_from_rdp(PIPELINE_ORDERS, curve, delta))


def certify_pipeline(base: Mechanism | PrivacyProfile, k: KDistribution, delta: float, *,
                     final: Mechanism | None = None, tuning_rate: float = 1.0, final_data: str = "full",
                     **accountant_options: Any) -> Certificate:
    """Certify a tuning pipeline at ``delta``: the smaller epsilon of the profile and RDP routes.

    ``base`` describes one candidate run (on the tuning subsample when ``tuning_rate < 1``);
    ``final`` the final training run (None: no final run), on the full data or, with
    ``final_data="complement"``, on the records outside the tuning subsample (profile route only).
    """
    if not isinstance(k, KDistribution):
        raise TypeError(f"k must be a distribution of K (e.g. ps.Geometric(mean=10)), got {type(k).__name__}")
    delta = check.delta_scalar("delta", delta)
    rate, final = _rate(tuning_rate), _final(final)
    final_data = _final_data(final_data, rate, final)
    mechanism = base.mechanism if isinstance(base, PrivacyProfile) else base
    results: dict[str, float] = {}
    notes: list[str] = []
    budget = ErrorBudget()
    accountant = "rdp"
    profile: PrivacyProfile | None = None
    try:
        profile = pipeline_profile(base, k, final=final, tuning_rate=rate, final_data=final_data,
                                   **accountant_options)
        results["profile"] = float(profile.epsilon(delta))
        budget, accountant = profile.error_budget, profile.accountant
    except CertificationError as exc:
        notes.append(f"profile: {exc}")
    if final_data == "complement":
        notes.append("rdp: no RDP route for a final run on the complement of the tuning subsample")
    elif isinstance(mechanism, Mechanism) and supports_rdp_selection(mechanism, k) is None \
            and (final is None or get_accountant("rdp").supports(final) is None):
        results["rdp"] = pipeline_rdp_epsilon(mechanism, k, delta, final=final, tuning_rate=rate)
    else:
        notes.append("rdp: no RDP route for this base, K law or final run")
    best = tightest_bound(results, ValueError(f"no route certifies this pipeline at delta={delta:g}: {notes or results}"))
    steps = ["best of K runs"] + ([f"on a Poisson subsample of rate {rate:g}"] if rate < 1 else []) \
        + ([f"then the final run {final!r} on the {final_data} data"] if final is not None else [])
    if best == "rdp":
        bound = "Papernot-Steinke 2022 selection RDP, Zhu-Wang 2019 Thm 6 subsampling, RDP composition"
    elif final_data == "complement":
        bound = ("KRW 2024 selection profile as a dominating pair (connect the dots), records split between "
                 "the tuning subsample and the final run (mixture pair, PoissonSplit)")
    else:
        bound = ("KRW 2024 selection profile as a dominating pair (connect the dots), subsampled (Zhu-Dong-Wang "
                 "2022 Thm 11) and composed")
    return Certificate(epsilon=results[best], delta=delta, bound=best, theorem=bound, alternatives=results, k=k,
                       base=mechanism, accountant=accountant if best == "profile" else "rdp",
                       error_budget=budget if best == "profile" else ErrorBudget(),
                       notes=tuple(["pipeline: " + ", ".join(steps)] + notes),
                       profile=profile)  # the whole pipeline's profile: ps.risk reads it (not the selection alone)
