"""Certificates for "run the base mechanism K times, release the best".

[`certify`][privselect.selection.certify.certify] computes every valid bound that applies (the privacy-profile family of
Koskela, Redberg, Wang 2024 and the RDP family of Papernot, Steinke 2022; which theorem serves which
K law is the bounds table, [`privselect.selection.bounds.registry`][privselect.selection.bounds.registry]) and returns a
frozen [`Certificate`][privselect.selection.certify.Certificate] carrying the smallest epsilon, the bound that gave it, the
alternatives, the K distribution, the base mechanism, the accountant's error budget and
the library version. Certificates are data: ``to_dict()`` / ``to_json()``; nothing prints.
"""

from __future__ import annotations

import functools
import json
import math
import sys
from dataclasses import dataclass, field
from typing import Any

from .. import _validation as check
from ..accounting import Accountant, privacy_profile
from ..accounting.average import HyperparameterMixture, average_profile
from ..accounting.profile import CertificationError, ErrorBudget, PrivacyProfile
from ..attack_risk import register_certificate_type
from ..mechanisms import Mechanism, NeighbouringRelation, mechanism_from_dict
from .bounds import (
    COR62,
    EPS_Q_RANGE,
    Cor62Thresholds,
    all_meet,
    applicable_bound,
    rdp_selection_epsilon,
    selection_profile,
    smallest_cor62_base_epsilon,
    supports_rdp_selection,
    unsupported_reason,
)
from .distributions import KDistribution, k_from_dict

__all__ = ["Certificate", "certify", "FAMILIES", "RELEASE_ALL", "certify_hyperparameter_mixture", "cor62_certificate",
           "tightest_bound"]

#: Bound families for "release the best of K runs" (K not released), tried by default.
FAMILIES = ("profile", "rdp")
#: "mixture": K runs with everything released (K itself, every run); only on request.
RELEASE_ALL = "mixture"
#: Largest P[K > k_max] the K-mixture certificate adds to delta (at most 1e-3 delta).
_MIXTURE_TAIL = 1e-12


def _json_number(value: float) -> float | str:
    """JSON scheme for numbers: finite floats as numbers; inf, -inf and nan as the strings "inf", "-inf", "nan"."""
    value = float(value)
    return value if math.isfinite(value) else str(value)


def _number(value: float | str) -> float:
    return float(value)  # float("inf"), float("-inf"), float("nan") read the strings back


def _budget_from_dict(data: dict[str, Any]) -> ErrorBudget:
    return ErrorBudget(eps_error=_number(data["eps_error"]), delta_error=_number(data["delta_error"]),
                       min_delta=_number(data["min_delta"]),
                       details=tuple((name, _number(v)) for name, v in data.get("details", {}).items()))


def _base_to_dict(base: Any) -> dict[str, Any]:
    if isinstance(base, Mechanism):
        try:
            return base.to_dict()
        except TypeError:  # a description with no JSON form (e.g. a ProfileMechanism): its repr
            return {"description": repr(base)}
    return {"description": str(base)}


def _base_from_dict(data: dict[str, Any]) -> Mechanism | str:
    return mechanism_from_dict(data) if "type" in data else data["description"]


@dataclass(frozen=True)
class Certificate:
    """A certified (epsilon, delta) guarantee for private selection, and how it was obtained.

    ``bound`` is the bound family that gave ``epsilon`` ("profile", "rdp", "mixture", "cor62", ...;
    the names ``certify(bound=...)`` takes), ``theorem`` its theorem; ``alternatives`` the epsilon
    of every family tried. ``base`` is the
    base mechanism (a [`Mechanism`][privselect.mechanisms.Mechanism], structured in JSON) or a description;
    ``relation`` the neighbouring relation the guarantee holds for; ``accountant`` the accountant
    whose profile gave the answer. JSON (``to_json`` / ``from_json``) is strict: non-finite
    numbers are the strings "inf", "-inf", "nan".
    """

    epsilon: float
    delta: float
    bound: str
    theorem: str
    alternatives: dict[str, float]
    k: KDistribution
    base: Any
    accountant: str
    error_budget: ErrorBudget
    notes: tuple[str, ...] = ()
    version: str = field(default="")
    relation: str = ""
    #: The profile of the whole procedure the epsilon came from (KRW's selection profile; for hyperparameter-
    #: dependent privacy, the one built on the averaged profile), in memory only (not in JSON): plot it or pass
    #: the certificate to ``ps.risk``. None where no profile backs it (Cor. 6.2, RDP alone, read from JSON).
    profile: PrivacyProfile | None = field(default=None, repr=False, compare=False)
    #: The profile of ONE run (for hyperparameter-dependent privacy: the average over the space's law,
    #: joint convexity), in memory only.
    run_profile: PrivacyProfile | None = field(default=None, repr=False, compare=False)

    def __getstate__(self) -> dict[str, Any]:
        """Pickled without ``profile`` and ``run_profile`` (in memory only: they hold accountants' closures)."""
        return {name: value for name, value in self.__dict__.items() if name not in ("profile", "run_profile")}

    def __post_init__(self) -> None:
        if not self.version:
            from .. import __version__

            object.__setattr__(self, "version", __version__)
        if not self.relation:
            relation = getattr(self.base, "relation", NeighbouringRelation.ADD_REMOVE)
            object.__setattr__(self, "relation", str(relation))

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict (strict: no NaN or Infinity tokens)."""
        return {
            "epsilon": _json_number(self.epsilon),
            "delta": _json_number(self.delta),
            "bound": self.bound,
            "theorem": self.theorem,
            "alternatives": {name: _json_number(v) for name, v in self.alternatives.items()},
            "k": self.k.to_dict(),
            "base": _base_to_dict(self.base),
            "neighbouring_relation": self.relation,
            "accountant": self.accountant,
            "error_budget": self.error_budget.to_dict(),
            "notes": list(self.notes),
            "privselect_version": self.version,
        }

    def to_json(self, **kwargs: Any) -> str:
        """Strictly valid JSON (``allow_nan=False``)."""
        return json.dumps(self.to_dict(), allow_nan=False, **kwargs)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Certificate:
        """The certificate a [`to_dict`][privselect.selection.certify.Certificate.to_dict] result describes."""
        bound, theorem = data["bound"], data["theorem"]
        return cls(
            epsilon=_number(data["epsilon"]), delta=_number(data["delta"]), bound=bound,
            theorem=theorem, alternatives={n: _number(v) for n, v in data["alternatives"].items()},
            k=k_from_dict(data["k"]), base=_base_from_dict(data["base"]), accountant=data["accountant"],
            error_budget=_budget_from_dict(data["error_budget"]), notes=tuple(data.get("notes", ())),
            version=data["privselect_version"], relation=data["neighbouring_relation"],
        )

    @classmethod
    def from_json(cls, text: str) -> Certificate:
        """The certificate a [`to_json`][privselect.selection.certify.Certificate.to_json] string describes (round-trips exactly)."""
        return cls.from_dict(json.loads(text))

    def report(self, *, html: bool = False, dataset_size: int | None = None, file: Any = None) -> str:
        """What this certificate means to a reader: the guarantee in words and the certified attack risks
        (``privselect.report``; ``html=True``: a self-contained page with the trade-off curve and profile;
        ``dataset_size``: the public n, to compare delta with 1/n; ``file``: this certificate's file, hashed)."""
        from ..report import Report  # the report layer reads certificates; it imports no certify

        built = Report.of(self, dataset_size=dataset_size, file=file)
        return built.html() if html else built.text()

    def __str__(self) -> str:
        return f"({self.epsilon:.4g}, {self.delta:.3g})-DP for the best of K ~ {self.k!r} runs [{self.theorem}]"


register_certificate_type(Certificate)  # ps.risk of a certificate: the tuning's risk (attack_risk.certificate_risk)


def tightest_bound(epsilons: dict[str, float], no_bound: Exception) -> str:
    """The name of the smallest finite epsilon among the bounds that applied; raises ``no_bound`` if none is finite."""
    finite = {name: value for name, value in epsilons.items() if math.isfinite(value)}
    if not finite:
        raise no_bound
    return min(finite, key=finite.__getitem__)


@functools.singledispatch
def certifiable(base: Any) -> Any:
    """``base`` as ``certify`` reads it: a description, profile or mixture as it is; a dp-accounting ``DpEvent``
    as ``ps.from_dp_event`` describes it (add/remove neighbours). The adapter for ``DpEvent`` is registered at
    the first event seen: an event exists only once dp_accounting is imported, so privselect never imports it."""
    dp_event = sys.modules.get("dp_accounting.dp_event")
    if dp_event is not None and isinstance(base, dp_event.DpEvent):
        from ..dp_events import from_dp_event

        certifiable.register(dp_event.DpEvent, from_dp_event)
        return from_dp_event(base)
    return base


def certify(base: Mechanism | PrivacyProfile | HyperparameterMixture | Any, k: KDistribution, delta: float, *,
            bound: str | None = None, accountant: str | Accountant = "auto", base_epsilon: float | None = None, **accountant_options: Any) -> Certificate:
    """Certify "release the best of K runs of ``base``" at ``delta``: the smallest valid epsilon.

    ``bound=None`` tries every family that applies; ``"profile"`` or ``"rdp"`` forces one
    (and raises if it does not apply). ``bound="mixture"`` certifies a different release: K and
    every run are released (the K-mixture bound, [`privselect.selection.bounds.mixture`][privselect.selection.bounds.mixture]).
    ``accountant`` (default ``"auto"``) and its options build the base profile when ``base`` is a
    mechanism description; the certificate names the accountant that gave the answer. A [`HyperparameterMixture`][privselect.selection.certify.HyperparameterMixture] (the law of a
    run's mechanism when hyperparameters change the privacy) is certified by the smaller of the
    averaged-profile bound and KRW Cor. 6.2 (``base_epsilon`` = ε_Q, searched when None). A dp-accounting
    ``DpEvent`` (``dpsgd_event(...)``, any event ``ps.from_dp_event`` maps) is certified as its description.
    """
    base = certifiable(base)
    if "method" in accountant_options:
        raise TypeError("certify: the keyword method= was renamed: choose the bound family with bound= "
                        f"(one of {FAMILIES}) and the accountant with accountant=")
    method = bound
    if not isinstance(k, KDistribution):
        raise TypeError(f"k must be a distribution of K (e.g. ps.Geometric(mean=10)), got {type(k).__name__}")
    delta = check.delta_scalar("delta", delta)
    if method is not None and (not isinstance(method, str) or method not in FAMILIES + (RELEASE_ALL,)):
        raise ValueError(f"bound must be one of {FAMILIES + (RELEASE_ALL,)} or None, got {method!r}")
    if method == RELEASE_ALL:
        if not isinstance(base, Mechanism):
            raise TypeError("the K-mixture bound composes the base run: give a Mechanism, not a built profile")
        return _k_released_certificate(base, k, delta, accountant, accountant_options)
    if isinstance(base, HyperparameterMixture):  # hyperparameter-dependent privacy (bounds/cor62.py's theorem)
        return certify_hyperparameter_mixture(base, k, delta, base_epsilon=base_epsilon, accountant=accountant,
                                              **accountant_options)
    mechanism = base.mechanism if isinstance(base, PrivacyProfile) else base
    families = FAMILIES if method is None else (method,)
    results: dict[str, tuple[float, str]] = {}
    notes: list[str] = []
    budget = ErrorBudget()
    accountant_name = accountant_label(accountant)
    sel: PrivacyProfile | None = None
    base_profile: PrivacyProfile | None = None

    profile_reason = unsupported_reason(k, "profile")
    if "profile" in families and profile_reason is not None:
        if method == "profile":
            raise ValueError(f"bound='profile' does not apply: {profile_reason}")
        notes.append(f"profile: {profile_reason}")
    elif "profile" in families:
        try:
            base_profile = privacy_profile(base, accountant=accountant, **accountant_options)
            sel = selection_profile(base_profile, k)
            eps = float(sel.epsilon(delta))
        except CertificationError as exc:
            # delta / E[K] is below what the chosen accountant certifies in floating point: fall
            # back to "auto" (which answers every delta) and say so.
            if not isinstance(base, Mechanism) or accountant == "auto":
                if method == "profile":
                    raise
                notes.append(f"profile: {exc}")
                base_profile = None
            else:
                notes.append(f"profile[{accountant_label(accountant)}]: {exc}; fell back to the auto accountant")
                base_profile = privacy_profile(base, accountant="auto")
                sel = selection_profile(base_profile, k)
                eps = float(sel.epsilon(delta))
        if base_profile is not None and sel is not None:
            results["profile"] = (eps, dict(sel.metadata)["theorem"])
            budget = sel.error_budget
            accountant_name = _answering_accountant(base_profile, delta / k.mean)
    if "rdp" in families:
        reason = supports_rdp_selection(mechanism, k)
        if reason is None:
            results["rdp"] = (rdp_selection_epsilon(mechanism, k, delta), applicable_bound(k, "rdp").theorem)
        elif method == "rdp":
            raise ValueError(f"bound='rdp' does not apply: {reason}")
        else:
            notes.append(f"rdp: {reason}")
    best = tightest_bound({name: value[0] for name, value in results.items()},
                          ValueError(f"no bound certifies this selection at delta={delta:g}: {notes or results}"))
    return Certificate(
        epsilon=results[best][0],
        delta=delta,
        bound=best,
        theorem=results[best][1],
        alternatives={name: value[0] for name, value in results.items()},
        k=k,
        base=mechanism,
        accountant=accountant_name if best == "profile" else "rdp",
        error_budget=budget if best == "profile" else ErrorBudget(),
        notes=tuple(notes),
        profile=sel if base_profile is not None else None,
        run_profile=base_profile,
    )


def _answering_accountant(profile: PrivacyProfile, delta: float) -> str:
    """The accountant whose profile answers eps(delta): "auto[<member>]" for the auto accountant."""
    if hasattr(profile, "epsilon_source"):
        return f"auto[{profile.epsilon_source(min(max(delta, 1e-300), 0.5))}]"
    return str(dict(profile.metadata).get("accountant", profile.accountant))


def accountant_label(accountant: str | Accountant) -> str:
    """The accountant's name as a certificate records it (an `Accountant` instance by its registered ``name``)."""
    return accountant.name if isinstance(accountant, Accountant) else accountant


def _k_released_certificate(base: Mechanism, k: KDistribution, delta: float, accountant: str | Accountant,
                            options: dict[str, Any]) -> Certificate:
    """K runs with everything released: the K-mixture bound (joint convexity; [`mixture`][privselect.selection.bounds.mixture])."""
    entry = applicable_bound(k, RELEASE_ALL)
    notes: tuple[str, ...] = ()
    # sized for this delta: the discretisation's accuracy, and K's tail beyond k_max (added to delta) << delta
    options = {"target_delta": delta, "tail": min(_MIXTURE_TAIL, 1e-3 * delta), **options}
    try:
        profile = entry.rule(base, k, accountant=accountant, **options)
        epsilon = float(profile.epsilon(delta))
    except CertificationError as exc:  # delta below its floor: one profile per bucket
        notes = (f"mixture: {exc}; one {accountant_label(accountant)} profile per bucket instead",)
        profile = entry.rule(base, k, accountant=accountant, **{**options, "shared": False})
        epsilon = float(profile.epsilon(delta))
    if not math.isfinite(epsilon):
        raise CertificationError(
            f"the K-mixture certificate cannot reach delta={delta:g}: its delta slack (K's tail beyond k_max, "
            f"the rounding of K's probabilities and the accounting) is {profile.error_budget.delta_error:.3g}; "
            "use a larger delta")
    return Certificate(epsilon=epsilon, delta=delta, bound=RELEASE_ALL, theorem=entry.theorem,
                       alternatives={RELEASE_ALL: epsilon}, k=k, base=base, accountant=accountant_label(accountant),
                       error_budget=profile.error_budget, profile=profile,
                       notes=notes + (f"buckets: {dict(profile.metadata)['bucket_profiles']}",))


# ----------------------------------------------------------------------------------------
# Hyperparameters that change the privacy of a run (the bounds: bounds/cor62.py)
# ----------------------------------------------------------------------------------------


def cor62_certificate(thresholds: Cor62Thresholds, k: KDistribution, base: str, accountant: str | Accountant,
                      notes: tuple[str, ...] = ()) -> Certificate:
    """The Cor. 6.2 certificate (KRW 2024) for candidates that all meet ``thresholds``."""
    th = thresholds
    return Certificate(
        epsilon=th.epsilon, delta=th.delta, bound="cor62", theorem=COR62, alternatives={"cor62": th.epsilon}, k=k,
        base=f"{base}; every candidate ({th.eps1:.6g}, {th.delta1:.3g})-DP and ({th.eps_hat:.6g}, {th.delta_hat:.3g})-DP",
        accountant=accountant_label(accountant), error_budget=ErrorBudget(), notes=notes,
    )


def certify_hyperparameter_mixture(law: HyperparameterMixture, k: KDistribution, delta: float, *,
                                   base_epsilon: float | None = None, accountant: str | Accountant = "auto",
                                   **accountant_options: Any) -> Certificate:
    """Certify the best of K runs whose mechanisms are drawn from ``law``: the smaller of the averaged-profile
    bound (joint convexity, then the profile family) and KRW Cor. 6.2 (``base_epsilon`` = eps_Q, searched when None)."""
    profiles = [privacy_profile(m, accountant=accountant, **accountant_options) for m in law.mechanisms]
    averaged = average_profile(profiles, law.weights, mechanism=law)
    alternatives: dict[str, float] = {}
    notes: list[str] = []
    mixture = certify(averaged, k, delta, bound="profile")
    alternatives["mixture-profile"] = mixture.epsilon
    thresholds = None
    reason = unsupported_reason(k, "cor62")
    if reason is None:
        if base_epsilon is None:
            thresholds = smallest_cor62_base_epsilon(profiles, delta, k)
            if thresholds is None:
                notes.append(f"cor62: no eps_Q in {EPS_Q_RANGE} has thresholds every candidate meets")
        else:
            thresholds = all_meet(profiles, base_epsilon, delta, k)
            if thresholds is None:
                notes.append(f"cor62: some candidate exceeds the thresholds of base_epsilon={base_epsilon:g}")
        if thresholds is not None:
            alternatives["cor62"] = thresholds.epsilon
    else:
        notes.append(f"cor62: {reason}")
    if thresholds is not None and thresholds.epsilon < mixture.epsilon:
        cert = cor62_certificate(thresholds, k, repr(law), accountant, tuple(notes))
        # the averaged-profile bound is valid too (looser at this delta): its profile backs plots and ps.risk
        return Certificate(**{**cert.__dict__, "alternatives": alternatives, "version": cert.version,
                              "profile": mixture.profile, "run_profile": averaged})
    return Certificate(
        epsilon=mixture.epsilon, delta=mixture.delta, bound="mixture-profile",
        theorem=f"{mixture.theorem} on the averaged profile E_λ[δ_λ] (joint convexity)", alternatives=alternatives,
        k=k, base=repr(law), accountant=mixture.accountant, error_budget=mixture.error_budget,
        notes=mixture.notes + tuple(notes), profile=mixture.profile, run_profile=averaged,
    )
