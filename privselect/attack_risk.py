"""Certified attack-risk bounds: what a privacy profile means for membership, attribute and reconstruction attacks.

[`risk`][privselect.attack_risk.risk] turns a certificate, a profile or a mechanism into a frozen
[`Risk`][privselect.attack_risk.Risk] whose every number is an UPPER bound on an attacker's success:

* ``tpr(fpr)``: the largest true-positive rate of any membership test at false-positive rate alpha,
  ``1 - f(alpha)`` for the f-DP trade-off curve implied by the profile (Dong, Roth, Su 2022, Prop. 2.12;
  Su 2024, Thm 5). A profile delta(eps) holding for both neighbouring directions gives, for every eps >= 0,
  ``TPR <= delta(eps) + e^eps alpha`` and ``TPR <= 1 - e^-eps (1 - delta(eps) - alpha)``; the bound is the
  smallest of these over finitely many eps, each evaluated with the certified UPPER delta. Any finite set
  of eps gives a valid bound (fewer constraints only loosen it), so the search over eps affects tightness,
  never soundness; the arithmetic is rounded upwards.
* ``advantage``: max TPR - FPR = delta(0), the total-variation distance (Kulynych et al. 2024, Sec. 3).
* ``reconstruction(kappa)``: an informed attacker's chance of rebuilding a record whose baseline
  success (without the record in the data) is kappa is at most ``1 - f(kappa)`` (Hayes, Mahloujifar,
  Balle 2023, Thm 2; Kaissis et al. 2023, Thm 1).
* ``attribute_inference(prior)``: guessing a sensitive bit with prior p succeeds with probability at most
  ``1 - f(max(p, 1 - p))`` (the reconstruction bound with baseline max(p, 1 - p)); for the replace-one
  relation also ``max(p, 1-p) + min(p, 1-p) delta(|log(p / (1-p))|)`` (the Bayes success of the two-point
  test, Kulynych et al. 2025, Prop. D.1), and the smaller is returned.

A selection certificate's risk is the tuning's risk: the profile of the whole procedure (KRW 2024's
selection profile, or the one a tuner's certificate carries), and the certificate's own (eps, delta)
pair, whichever is tighter at each point.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import _validation as check
from .accounting import privacy_profile
from .accounting.profile import ErrorBudget, PrivacyProfile
from .deferred_profile import DeferredProfile
from .errors import CertificationError
from .mechanisms import Mechanism, NeighbouringRelation

__all__ = ["QUOTED_FPRS", "Risk", "RiskTarget", "risk", "tuning_profile", "tuning_profiles"]

#: The false-positive rates people quote (the report's table).
QUOTED_FPRS = (1e-4, 1e-3, 1e-2, 0.1)
#: Coarse eps grid of the conversion (refined around each answer; any grid is sound).
_COARSE_STEP = 1.0 / 16
_REFINE_POINTS = 9
_REFINE_ROUNDS = 6
#: A branch is refined only where its coarse minimum is within this factor of the other's (else it cannot win).
_REFINE_MARGIN = 1.05
#: K's tail beyond the K-mixture's k_max, added to its delta.
_MIXTURE_TAIL = 1e-10
#: eps accuracy (relative) of the coarse K-mixture whose LOWER bracket floors the K-mixture's answers (30x the
#: K-mixture's own: a mesh about 30x coarser, well below the margin by which KRW's profile wins at small FPRs).
_FLOOR_EPS_ERROR = 0.05
_U = 2.0**-53
#: Upward rounding of ``delta + e^eps alpha`` (relative) and of ``1 - e^-eps (1 - delta - alpha)`` (absolute).
_REL_SLACK = 8 * _U
_ABS_SLACK = 8 * _U


@dataclass(frozen=True)
class Risk:
    """Certified upper bounds on attack success implied by a privacy profile (and optional (eps, delta) pairs).

    ``profile`` may be None (only ``pairs`` are known, e.g. a KRW Cor. 6.2 certificate); ``pairs`` are
    extra (eps, delta) guarantees of the same mechanism. ``certified`` is False where the profile carries
    an error *estimate* (then every number is an estimate too). ``source`` says what was converted.
    ``deferred``: one more profile, built on first need (`DeferredProfile`): reading ``profiles`` (or ``source``,
    which names it) builds it, and every answer is the one with it included (it is skipped only where its floor
    proves that it cannot lower the answer).
    """

    profiles: tuple[PrivacyProfile, ...] = ()
    pairs: tuple[tuple[float, float], ...] = ()
    relation: str = str(NeighbouringRelation.ADD_REMOVE)
    source: str = ""
    deferred: DeferredProfile | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        known = self._known()
        if isinstance(known, PrivacyProfile):
            known = (known,)
        object.__setattr__(self, "profiles", tuple(known))
        object.__setattr__(self, "pairs", tuple((float(e), float(d)) for e, d in self.pairs))
        if not self._known() and not self.pairs and self.deferred is None:
            raise ValueError("a Risk needs a profile or at least one (epsilon, delta) pair")
        if not all(isinstance(p, PrivacyProfile) for p in self._known()):
            raise TypeError("profiles must be PrivacyProfile objects")

    def __getattribute__(self, name: str) -> Any:
        """``profiles`` with the deferred profile (built on this first read) where there is one; ``source`` as it
        reads once that profile is built (or found impossible)."""
        value = object.__getattribute__(self, name)
        if name in ("profiles", "source"):
            deferred = object.__getattribute__(self, "deferred")
            if deferred is not None:
                built = deferred.build()
                if name == "source":
                    return deferred.describe(built)
                return value if built is None else value + (built,)
        return value

    def _known(self) -> tuple[PrivacyProfile, ...]:
        """The profiles given (without the deferred one)."""
        return object.__getattribute__(self, "profiles")

    def _needed(self, floor: Callable[[DeferredProfile], Any], current: Any) -> PrivacyProfile | None:
        """The deferred profile where it is built or may lower ``current`` (its ``floor`` is not >= it), else None."""
        d = self.deferred
        if d is None or (not d.will_build and bool(np.all(floor(d) >= current))):
            return None
        return d.build()

    @property
    def profile(self) -> PrivacyProfile | None:
        """The first (main) profile: for a certificate, the tuning's selection profile."""
        known = self._known()
        if known:
            return known[0]
        return self.profiles[0] if self.profiles else None

    # -- what it rests on --------------------------------------------------------------------------

    @property
    def certified(self) -> bool:
        """True if every number is a proven bound (False: the profile's error terms are estimates)."""
        return all(p.certified for p in self.profiles)

    @property
    def error_budget(self) -> ErrorBudget:
        """The main profile's error budget; it is already inside every number (the upper delta is used)."""
        return ErrorBudget() if self.profile is None else self.profile.error_budget

    # -- membership ---------------------------------------------------------------------------------

    def tpr(self, fpr, *, precise: bool = True):
        """Upper bound on the true-positive rate of any membership test at false-positive rate ``fpr``
        (vectorised): 1 - f(fpr) for the trade-off curve the profile implies (DRS 2022, Prop. 2.12).

        ``precise=False`` skips the local refinement in eps (for plotting many points): still an upper
        bound, up to a few percent looser."""
        a = check.real_array("fpr", fpr)
        if ((a < 0) | (a > 1) | np.isnan(a)).any():
            raise ValueError(f"fpr must lie in [0, 1], got {fpr!r}")
        flat = a.reshape(-1)
        out = np.ones_like(flat)
        if self.deferred is not None:
            self.deferred.prefetch_floor()  # its floor is computed while the other profiles answer (below)
        for profile in self._known():
            out = np.minimum(out, _profile_tpr(profile, flat, precise))
        for eps, delta in self.pairs:
            out = np.minimum(out, _pair_tpr(np.array([eps]), np.array([delta]), flat[:, None]).min(axis=1))
        extra = self._needed(lambda d: d.tpr_floor(flat), out)
        if extra is not None:
            out = np.minimum(out, _profile_tpr(extra, flat, precise))
        out = np.maximum(out, flat)  # never below the trivial test's alpha (1 - f(alpha) >= alpha always)
        out = out.reshape(a.shape)
        return float(out) if np.ndim(fpr) == 0 else out

    def fnr(self, fpr):
        """Lower bound f(fpr) on the false-negative rate (type II error) of any membership test."""
        t = self.tpr(fpr)
        return 1.0 - t if np.ndim(fpr) == 0 else 1.0 - np.asarray(t)

    @property
    def advantage(self) -> float:
        """Upper bound on max TPR - FPR of any membership test: delta(0), the total-variation distance."""
        bounds = [1.0]
        bounds.extend(float(p.delta(0.0)) for p in self._known())
        for eps, delta in self.pairs:  # the vertex of the (eps, delta) region
            bounds.append((math.expm1(eps) + 2 * delta) / (math.exp(eps) + 1) * (1 + _REL_SLACK))
        # no floor here: the K-mixture profile is the tight one near eps = 0, so it would only delay the build
        extra = None if self.deferred is None else self.deferred.build()
        if extra is not None:
            bounds.append(float(extra.delta(0.0)))
        return min(bounds)

    # -- other attacks --------------------------------------------------------------------------------

    def reconstruction(self, baseline):
        """Upper bound on an informed attacker's reconstruction success when the baseline success (the
        record not in the data) is ``baseline``: 1 - f(baseline) (Hayes, Mahloujifar, Balle 2023, Thm 2;
        Kaissis et al. 2023, Thm 1)."""
        kappa = check.real_array("baseline", baseline)
        if ((kappa < 0) | (kappa > 1) | np.isnan(kappa)).any():
            raise ValueError(f"baseline must lie in [0, 1], got {baseline!r}")
        return self.tpr(baseline)

    def attribute_inference(self, prior):
        """Upper bound on the probability of guessing a sensitive bit with prior P[bit = 1] = ``prior``.

        1 - f(max(p, 1-p)) (the reconstruction bound: without the record the best guess succeeds with
        max(p, 1-p)); for the replace-one relation also the Bayes success of the two-point test,
        max(p, 1-p) + min(p, 1-p) delta(|logit p|) (Kulynych et al. 2025, Prop. D.1).
        """
        p = check.real_array("prior", prior)
        if ((p <= 0) | (p >= 1) | np.isnan(p)).any():
            raise ValueError(f"prior must lie in (0, 1), got {prior!r}")
        out = self._attribute(p, np.asarray(self.tpr(np.maximum(p, 1 - p)), dtype=float))
        return float(out) if np.ndim(prior) == 0 else out

    def _attribute(self, p: np.ndarray, out: np.ndarray) -> np.ndarray:
        """``attribute_inference`` at priors ``p`` from ``out``, the tpr bound at max(p, 1 - p)."""
        big, small = np.maximum(p, 1 - p), np.minimum(p, 1 - p)
        if self.relation == str(NeighbouringRelation.REPLACE_ONE):
            eps = np.log(big) - np.log(small)
            for profile in self.profiles:
                d = np.asarray(profile.delta(eps.reshape(-1)), dtype=float).reshape(eps.shape)
                out = np.minimum(out, (big + small * d) * (1 + _REL_SLACK))
        return np.minimum(out, 1.0)

    def summary(self, fprs=QUOTED_FPRS, *, prior: float = 0.5,
                baseline: float = 1e-3) -> tuple[np.ndarray, float, float, float]:
        """``tpr(fprs)``, ``advantage``, ``attribute_inference(prior)`` and ``reconstruction(baseline)`` from ONE
        search over eps for every FPR they need (fprs, max(prior, 1 - prior) and baseline; each a bound as the
        separate calls give it: ``tpr`` is a minimum over valid constraints per FPR, whatever else is asked)."""
        a = check.real_array("fprs", fprs).reshape(-1)
        p, kappa = check.real_array("prior", prior), check.real_array("baseline", baseline)
        if not 0 < float(p) < 1 or not 0 <= float(kappa) <= 1:
            raise ValueError(f"prior must lie in (0, 1) and baseline in [0, 1], got {prior!r} and {baseline!r}")
        values = np.atleast_1d(self.tpr(np.concatenate([a, [max(float(p), 1 - float(p)), float(kappa)]])))
        attribute = float(self._attribute(p, values[a.size:a.size + 1]).reshape(-1)[0])
        return values[:a.size], float(self.advantage), attribute, float(values[-1])

    # -- export ---------------------------------------------------------------------------------------

    def table(self, fprs=QUOTED_FPRS) -> dict[str, float]:
        """{"tpr@<fpr>": bound, ..., "advantage": bound, "attribute_inference@0.5": bound}."""
        quoted, advantage, attribute, _ = self.summary(fprs, prior=0.5, baseline=0.5)
        out = {f"tpr@{a:g}": float(v) for a, v in zip(fprs, quoted)}
        out["advantage"] = advantage
        out["attribute_inference@0.5"] = attribute
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"source": self.source, "relation": self.relation, "certified": self.certified,
                "pairs": [list(p) for p in self.pairs], "bounds": self.table(),
                "error_budget": self.error_budget.to_dict()}

    def __repr__(self) -> str:
        quoted = ", ".join(f"{k}={v:.4g}" for k, v in self.table().items())
        return f"Risk({quoted}; {self.source or 'profile'})"


def _profile_tpr(profile: PrivacyProfile, alpha: np.ndarray, precise: bool) -> np.ndarray:
    """min over eps >= 0 of both (eps, delta(eps)) constraints: a coarse grid of step 1/16 from 0 up to where no
    larger eps can win (``_coarse_scan``), then local refinement around each branch's minimiser. Every eps
    tried is a valid constraint: the search decides tightness, never soundness."""
    best = np.ones_like(alpha)
    zero = alpha <= 0
    if zero.any():
        best[zero] = _profile_zero(profile)
    live = (alpha > 0) & (alpha < 1)
    if not live.any():
        return best
    a = alpha[live]
    grid, values = _coarse_scan(profile, a)
    coarse = [v.min(axis=1) for v in values]
    found = np.minimum(coarse[0], coarse[1])
    if precise:
        rows = np.arange(a.size)
        for b in (0, 1):
            todo = coarse[b] <= _REFINE_MARGIN * coarse[1 - b]
            if not todo.any():
                continue
            idx = rows[todo]
            centre = grid[np.argmin(values[b][todo], axis=1)]
            width = np.full(idx.size, _COARSE_STEP)
            for _ in range(_REFINE_ROUNDS):
                eps = np.maximum(centre[:, None] + np.linspace(-1.0, 1.0, _REFINE_POINTS)[None, :] * width[:, None], 0.0)
                dv = np.asarray(profile.delta(eps.reshape(-1)), dtype=float).reshape(eps.shape)
                v = _branch(b, eps, dv, a[idx][:, None])
                j = np.argmin(v, axis=1)
                found[idx] = np.minimum(found[idx], v[np.arange(idx.size), j])
                centre = eps[np.arange(idx.size), j]
                width = width * 2.0 / (_REFINE_POINTS - 1)
    best[live] = np.minimum(found, 1.0)
    return best


def _coarse_scan(profile: PrivacyProfile, a: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
    """Both branches on the grid 0, 1/16, 2/16, ... in chunks, stopping once no larger eps can win: branch 0 is
    at least e^eps alpha and branch 1 at least 1 - e^-eps, both increasing in eps, so once min(e^eps alpha,
    1 - e^-eps) exceeds the best value found for every alpha the rest of the grid is useless (and its tiny
    deltas are the costly ones to certify). Each chunk is cut where that floor passes the best value so far
    (a suffix: the floor is non-decreasing): the points cut could not lower any alpha's minimum."""
    grids: list[np.ndarray] = []
    values: list[list[np.ndarray]] = [[], []]
    best = np.full(a.size, np.inf)
    start, chunk = 0.0, 32
    while True:
        eps = start + _COARSE_STEP * np.arange(chunk)
        with np.errstate(over="ignore"):
            useless = np.all(np.minimum(np.exp(eps)[None, :] * a[:, None], -np.expm1(-eps)[None, :]) >= best[:, None],
                             axis=0)
        eps = eps[~useless]
        if not eps.size:
            break
        d = np.asarray(profile.delta(eps), dtype=float)
        for b in (0, 1):
            v = _branch(b, eps[None, :], d[None, :], a[:, None])
            values[b].append(v)
            best = np.minimum(best, v.min(axis=1))
        grids.append(eps)
        last = eps[-1]
        with np.errstate(over="ignore"):
            floor = np.minimum(np.exp(last) * a, -np.expm1(-last))
        if np.all(floor >= best) or last > 745.0:
            break
        # chunks of 32 up to eps = 6 (where the optima of the quoted FPRs lie: the cut above then stops the scan
        # within a chunk of them), doubling beyond (few calls for a profile whose optima lie far out)
        start, chunk = last + _COARSE_STEP, 32 if last < 6.0 else min(2 * chunk, 1024)
    return np.concatenate(grids), [np.concatenate(v, axis=1) for v in values]


def _profile_zero(profile: PrivacyProfile) -> float:
    """TPR at FPR 0: at most delta(eps) for every eps; the profile's delta at a large eps (rounded up)."""
    return float(np.min(profile.delta(np.array([0.0, 10.0, 50.0, 200.0])))) * (1 + _REL_SLACK)


@dataclass(frozen=True)
class RiskTarget:
    """A bound on attack success to calibrate to, in place of epsilon (Kulynych et al., NeurIPS 2024):
    ``RiskTarget(tpr=0.05, fpr=1e-3)`` (no membership test reaches TPR 0.05 at FPR 1e-3) or
    ``RiskTarget(advantage=0.1)`` (no test's TPR - FPR exceeds 0.1)."""

    tpr: float | None = None
    fpr: float | None = None
    advantage: float | None = None

    def __post_init__(self) -> None:
        if self.advantage is not None:
            if self.tpr is not None or self.fpr is not None:
                raise ValueError("RiskTarget takes either tpr with fpr, or advantage, not both")
            check.open_unit("advantage", self.advantage)
            return
        if self.tpr is None or self.fpr is None:
            raise ValueError("RiskTarget needs tpr and fpr (e.g. tpr=0.05, fpr=1e-3), or advantage")
        check.open_unit("fpr", self.fpr)
        check.open_unit("tpr", self.tpr)
        if not self.tpr > self.fpr:
            raise ValueError(f"tpr must exceed fpr (guessing at random already reaches TPR = FPR), got tpr={self.tpr!r} "
                             f"at fpr={self.fpr!r}")

    @property
    def bound(self) -> float:
        """The largest allowed value of the quantity."""
        if self.advantage is not None:
            return float(self.advantage)
        assert self.tpr is not None  # __post_init__: tpr with fpr, or advantage
        return float(self.tpr)

    def value(self, r: Risk) -> float:
        """The certified quantity the target bounds: ``r.tpr(fpr)`` or ``r.advantage``."""
        return float(r.advantage) if self.advantage is not None else float(r.tpr(self.fpr))

    def met(self, r: Risk) -> bool:
        return self.value(r) <= self.bound

    def __str__(self) -> str:
        if self.advantage is not None:
            return f"advantage <= {self.advantage:g}"
        return f"TPR <= {self.tpr:g} at FPR {self.fpr:g}"


def _branch(which: int, eps: np.ndarray, delta: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    """TPR <= delta + e^eps alpha (0) or TPR <= 1 - e^-eps (1 - delta - alpha) (1), rounded upwards."""
    with np.errstate(over="ignore", invalid="ignore"):
        if which == 0:
            v = (delta + np.exp(eps) * alpha) * (1 + _REL_SLACK)
        else:
            v = 1.0 - np.exp(-eps) * (1.0 - delta - alpha) + _ABS_SLACK
    return np.where(np.isnan(v), np.inf, v)


def _pair_tpr(eps: np.ndarray, delta: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    return np.minimum(_branch(0, eps, delta, alpha), _branch(1, eps, delta, alpha))


# ---------------------------------------------------------------------------------------------------
# ps.risk: one entry point, dispatched on what it is given
# ---------------------------------------------------------------------------------------------------


@functools.singledispatch
def risk(x: Any, **accountant_options: Any) -> Risk:
    """Certified attack-risk bounds for a [`Certificate`][privselect.selection.certify.Certificate] (the
    tuning's risk), a [`PrivacyProfile`][privselect.accounting.profile.PrivacyProfile] or a
    [`Mechanism`][privselect.mechanisms.Mechanism] (its certified profile, ``accountant="auto"``)."""
    raise TypeError(f"risk needs a Certificate, a PrivacyProfile or a Mechanism, got {type(x).__name__}")


@risk.register
def _(x: PrivacyProfile, **accountant_options: Any) -> Risk:
    if accountant_options:
        raise TypeError(f"accountant options {sorted(accountant_options)} apply to a mechanism, not to a built profile")
    relation = str(getattr(x.mechanism, "relation", NeighbouringRelation.ADD_REMOVE))
    return Risk(profiles=(x,), relation=relation, source=f"profile ({x.accountant}) {x.description}".strip())


@risk.register
def _(x: Mechanism, **accountant_options: Any) -> Risk:
    options = {"accountant": "auto", **accountant_options}
    return mechanism_risk(x, privacy_profile(x, **options))


def mechanism_risk(x: Mechanism, profile: PrivacyProfile) -> Risk:
    """``risk(x)`` from a profile of ``x`` already built (``privacy_profile(x, ...)``): a report shares one."""
    return Risk(profiles=(profile,), relation=str(x.relation), source=f"profile ({profile.accountant}) of {x!r}")


_CERTIFICATE_TYPES: list[type] = []


def register_certificate_type(kind: type) -> type:
    """``ps.risk`` of a ``kind`` instance is ``certificate_risk`` (the tuning's risk). Called by the module that
    defines ``kind`` (``privselect.selection.certify``), so this module imports no selection code."""
    risk.register(kind, lambda x, **accountant_options: certificate_risk(x, **accountant_options))
    _CERTIFICATE_TYPES.append(kind)
    return kind


def is_certificate(x: Any) -> bool:
    """Whether ``ps.risk(x)`` is ``certificate_risk(x)`` (``x``'s type was given to `register_certificate_type`)."""
    return isinstance(x, tuple(_CERTIFICATE_TYPES))


def certificate_risk(x: Any, *, base_profile: PrivacyProfile | None = None, **accountant_options: Any) -> Risk:
    """``risk`` of a certificate (registered for ``Certificate`` by ``privselect.selection.certify``): the tuning's
    profiles (``tuning_profiles``) and the certificate's (epsilon, delta). ``base_profile``: see ``tuning_profile``."""
    pairs = ((float(x.epsilon), float(x.delta)),) if math.isfinite(x.epsilon) else ()
    main = tuning_profile(x, base_profile=base_profile, **accountant_options)
    mixture = _mixture_builder(x, **accountant_options)
    if main is None or mixture is None or accountant_options:  # nothing to defer: every profile now (tuning_profiles)
        built = None if mixture is None else mixture()
        profiles = tuple(p for p in (main, built) if p is not None)
        return Risk(profiles=profiles, pairs=pairs, relation=x.relation, source=_certificate_source(x, profiles))
    # the K-mixture profile (the costly one) is built when an answer needs it (or its profiles or source are read)
    deferred = DeferredProfile(lambda: mixture(), lambda: mixture(shared_eps_error=_FLOOR_EPS_ERROR),
                               lambda built: _certificate_source(x, (main,) if built is None else (main, built)))
    return Risk(profiles=(main,), pairs=pairs, relation=x.relation, source=_certificate_source(x, (main,)),
                deferred=deferred)


def _certificate_source(x: Any, profiles: tuple[PrivacyProfile, ...]) -> str:
    what = "the certificate's (epsilon, delta)" if not profiles else \
        f"the tuning's profiles ({', '.join(p.accountant for p in profiles)}) and the certificate's (epsilon, delta)"
    return f"{what}: {x}"


def tuning_profile(certificate: Any, *, base_profile: PrivacyProfile | None = None,
                   **accountant_options: Any) -> PrivacyProfile | None:
    """The profile of the whole procedure a certificate covers: the one it carries (``certificate.profile``),
    else, for a best-of-K certificate on a mechanism, KRW 2024's selection profile rebuilt from its base and K
    law (``accountant="auto"`` unless given); None where only the (epsilon, delta) pair is known (KRW Cor. 6.2,
    a certificate read from JSON whose base is a description). ``base_profile``: the base's ``"auto"`` profile,
    built already (``privacy_profile(certificate.base)``, shared with the run's risk by a report), used in place of
    a new one."""
    if base_profile is not None and (accountant_options or base_profile.mechanism != certificate.base):
        raise ValueError("base_profile must be privacy_profile(certificate.base) (accountant 'auto'), without "
                         "accountant options")
    carried = certificate.profile
    if carried is not None:
        return carried
    if is_pipeline(certificate):  # a final run or a subsample: the selection profile alone would leave them out
        return None
    if certificate.bound not in ("profile", "rdp") or not isinstance(certificate.base, Mechanism):
        return None
    from .selection.bounds import selection_profile, unsupported_reason

    if unsupported_reason(certificate.k, "profile") is not None:
        return None
    if base_profile is None:
        base_profile = privacy_profile(certificate.base, **{"accountant": "auto", **accountant_options})
    return selection_profile(base_profile, certificate.k)


def is_pipeline(certificate: Any) -> bool:
    """A ``certify_pipeline`` certificate (a final run or a subsampled tuning): only its own profile bounds it."""
    return any(str(note).startswith("pipeline:") for note in certificate.notes)


def unsupported_reason_mixture(k) -> str | None:
    """Why the K-mixture bound does not apply to ``k`` (None: it does)."""
    from .selection.bounds import unsupported_reason

    return unsupported_reason(k, "mixture")


def tuning_profiles(certificate: Any, **accountant_options: Any) -> tuple[PrivacyProfile, ...]:
    """Every profile that bounds the procedure: ``tuning_profile`` and, for a best-of-K release of a mechanism,
    the K-mixture profile of releasing K and every run (the best is a post-processing of them; tighter than
    KRW's selection bound near eps = 0, hence for the advantage and large FPRs)."""
    main = tuning_profile(certificate, **accountant_options)
    out = () if main is None else (main,)
    mixture = _mixture_builder(certificate, **accountant_options)
    built = None if mixture is None else mixture()
    return out if built is None else out + (built,)


def _mixture_builder(certificate: Any, **accountant_options: Any) -> Callable[..., PrivacyProfile | None] | None:
    """For a best-of-K release of a mechanism, a builder of its K-mixture profile (keyword options go to
    ``k_mixture_profile``; None where it cannot be built); None where the K-mixture bound does not apply."""
    if certificate.bound == "mixture" or not isinstance(certificate.base, Mechanism) or is_pipeline(certificate):
        return None
    if unsupported_reason_mixture(certificate.k) is not None:
        return None
    from .selection.bounds import applicable_bound

    options = {"accountant": "auto", "target_delta": certificate.delta, "tail": _MIXTURE_TAIL, **accountant_options}

    def build(**extra: Any) -> PrivacyProfile | None:
        try:
            entry = applicable_bound(certificate.k, "mixture")
            return entry.rule(certificate.base, certificate.k, **options, **extra)
        except (CertificationError, ValueError, MemoryError):  # no K-mixture profile here: the others stand
            return None

    return build
