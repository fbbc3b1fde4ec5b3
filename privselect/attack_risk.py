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
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import _validation as check
from .accounting import privacy_profile
from .accounting.profile import ErrorBudget, PrivacyProfile
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
    """

    profiles: tuple[PrivacyProfile, ...] = ()
    pairs: tuple[tuple[float, float], ...] = ()
    relation: str = str(NeighbouringRelation.ADD_REMOVE)
    source: str = ""

    def __post_init__(self) -> None:
        if isinstance(self.profiles, PrivacyProfile):
            object.__setattr__(self, "profiles", (self.profiles,))
        object.__setattr__(self, "profiles", tuple(self.profiles))
        object.__setattr__(self, "pairs", tuple((float(e), float(d)) for e, d in self.pairs))
        if not self.profiles and not self.pairs:
            raise ValueError("a Risk needs a profile or at least one (epsilon, delta) pair")
        if not all(isinstance(p, PrivacyProfile) for p in self.profiles):
            raise TypeError("profiles must be PrivacyProfile objects")

    @property
    def profile(self) -> PrivacyProfile | None:
        """The first (main) profile: for a certificate, the tuning's selection profile."""
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
        for profile in self.profiles:
            out = np.minimum(out, _profile_tpr(profile, flat, precise))
        for eps, delta in self.pairs:
            out = np.minimum(out, _pair_tpr(np.array([eps]), np.array([delta]), flat[:, None]).min(axis=1))
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
        bounds.extend(float(p.delta(0.0)) for p in self.profiles)
        for eps, delta in self.pairs:  # the vertex of the (eps, delta) region
            bounds.append((math.expm1(eps) + 2 * delta) / (math.exp(eps) + 1) * (1 + _REL_SLACK))
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
        big, small = np.maximum(p, 1 - p), np.minimum(p, 1 - p)
        out = np.asarray(self.tpr(big), dtype=float)
        if self.relation == str(NeighbouringRelation.REPLACE_ONE):
            eps = np.log(big) - np.log(small)
            for profile in self.profiles:
                d = np.asarray(profile.delta(eps.reshape(-1)), dtype=float).reshape(eps.shape)
                out = np.minimum(out, (big + small * d) * (1 + _REL_SLACK))
        out = np.minimum(out, 1.0)
        return float(out) if np.ndim(prior) == 0 else out

    # -- export ---------------------------------------------------------------------------------------

    def table(self, fprs=QUOTED_FPRS) -> dict[str, float]:
        """{"tpr@<fpr>": bound, ..., "advantage": bound, "attribute_inference@0.5": bound}."""
        out = {f"tpr@{a:g}": float(v) for a, v in zip(fprs, np.atleast_1d(self.tpr(np.asarray(fprs, float))))}
        out["advantage"] = self.advantage
        out["attribute_inference@0.5"] = float(self.attribute_inference(0.5))
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
    deltas are the costly ones to certify)."""
    grids: list[np.ndarray] = []
    values: list[list[np.ndarray]] = [[], []]
    best = np.full(a.size, np.inf)
    start, chunk = 0.0, 32
    while True:
        eps = start + _COARSE_STEP * np.arange(chunk)
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
        start, chunk = last + _COARSE_STEP, min(2 * chunk, 1024)
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
    profile = privacy_profile(x, **options)
    return Risk(profiles=(profile,), relation=str(x.relation), source=f"profile ({profile.accountant}) of {x!r}")


def certificate_risk(x: Any, **accountant_options: Any) -> Risk:
    """``risk`` of a certificate (registered for ``Certificate`` by ``privselect.selection.certify``): the tuning's
    profiles (``tuning_profiles``) and the certificate's (epsilon, delta)."""
    profiles = tuning_profiles(x, **accountant_options)
    pairs = ((float(x.epsilon), float(x.delta)),) if math.isfinite(x.epsilon) else ()
    what = "the certificate's (epsilon, delta)" if not profiles else \
        f"the tuning's profiles ({', '.join(p.accountant for p in profiles)}) and the certificate's (epsilon, delta)"
    return Risk(profiles=profiles, pairs=pairs, relation=x.relation, source=f"{what}: {x}")


def tuning_profile(certificate: Any, **accountant_options: Any) -> PrivacyProfile | None:
    """The profile of the whole procedure a certificate covers: the one it carries (``certificate.profile``),
    else, for a best-of-K certificate on a mechanism, KRW 2024's selection profile rebuilt from its base and K
    law (``accountant="auto"`` unless given); None where only the (epsilon, delta) pair is known (KRW Cor. 6.2,
    a certificate read from JSON whose base is a description)."""
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
    options = {"accountant": "auto", **accountant_options}
    return selection_profile(privacy_profile(certificate.base, **options), certificate.k)


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
    if certificate.bound == "mixture" or not isinstance(certificate.base, Mechanism) or is_pipeline(certificate):
        return out
    from .errors import CertificationError
    from .selection.bounds import applicable_bound

    if unsupported_reason_mixture(certificate.k) is not None:
        return out
    options = {"accountant": "auto", "target_delta": certificate.delta, "tail": _MIXTURE_TAIL, **accountant_options}
    try:
        entry = applicable_bound(certificate.k, "mixture")
        return out + (entry.rule(certificate.base, certificate.k, **options),)
    except (CertificationError, ValueError, MemoryError):  # no K-mixture profile here: the others stand
        return out
