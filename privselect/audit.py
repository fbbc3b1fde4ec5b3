"""Empirical privacy auditing: statistical LOWER bounds on epsilon, never guarantees.

An audit runs a mechanism many times on two neighbouring data sets ``D`` and ``D'``, counts
how often a scalar statistic of the output lands in each rejection set
``S_t = {statistic >= t}`` or its complement ``{statistic < t}``, and turns the counts into a
lower bound on the epsilon of any (epsilon, delta) guarantee the mechanism could have
(Jagielski, Ullman, Oprea 2020, "Auditing Differentially Private Machine Learning: How
Private is Private SGD?", Sec. 3; Nasr, Song, Thakurta, Papernot, Carlini 2021, "Adversary
Instantiation: Lower Bounds for Differentially Private Machine Learning", Sec. 3.2):

    (epsilon, delta)-DP  =>  P[M(D) in S] <= e^epsilon P[M(D') in S] + delta   for every S,

so with a lower confidence bound ``p1_lo`` on ``P[M(D) in S]`` and an upper one ``p2_hi`` on
``P[M(D') in S]``,

    epsilon >= log((p1_lo - delta) / p2_hi),

and the same with ``D`` and ``D'`` swapped. The probabilities are bracketed with exact
Clopper-Pearson intervals (Clopper, Pearson 1934) from ``scipy.stats.beta``; a Bonferroni
correction over the thresholds tried makes every interval hold simultaneously, so the
reported bound (the maximum over thresholds, both set sides and both orderings) is
below the true epsilon(delta) with probability at least ``confidence``.

What an audit is not: a proof of privacy. It can only show that a mechanism is *less*
private than some number; a small empirical epsilon says nothing about what a better
attack (another statistic, other neighbours) would find. Compare it with a certificate:
``lower <= certified`` is the expected outcome, ``lower > certified`` is evidence (at the
stated confidence) that the certificate or the implementation is wrong.

Thresholds. When ``thresholds`` is not given, [`audit`][privselect.audit.audit] first draws an independent pilot
sample, places a pool of candidate thresholds at its quantiles (logit-spaced, so both tails
are covered), keeps the ``n_thresholds`` candidates whose pilot lower bound is largest, and
only then draws the evaluation samples. The pilot is never reused for counting, so the
Bonferroni factor is the number of thresholds evaluated, ``n_thresholds``.

The vectorised reference mechanisms that the audit tests and ``experiments/audit.py`` use
(Gaussian sum, Report-Noisy-Max, best-of-K selection with a deliberate leak, a leaky
``PrivateTuner``) are test scaffolding: they live in ``tests/support/audit.py`` of the
repository, not in the installed package.
"""

from __future__ import annotations

import inspect
import math
import numbers
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

from . import _validation as check

__all__ = [
    "AuditResult",
    "audit",
    "clopper_pearson",
    "epsilon_lower_bound",
]

#: Candidate thresholds placed on the pilot sample before the best ``n_thresholds`` are kept.
_POOL = 256
#: Bounded work: at most this many draws per data set, pilots of at most _MAX_PILOT draws,
#: batches of at most _MAX_BATCH outputs (memory is O(pilot + batch), never O(n_samples)).
MAX_SAMPLES = 10**10
_MAX_PILOT = 2_000_000
_MAX_BATCH = 10**7


# ----------------------------------------------------------------------------------------
# Statistics
# ----------------------------------------------------------------------------------------


def clopper_pearson(successes, trials, confidence: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Exact two-sided Clopper-Pearson interval for a binomial proportion (vectorised).

    ``lower = Beta(alpha/2; x, n - x + 1)`` (0 when x = 0) and
    ``upper = Beta(1 - alpha/2; x + 1, n - x)`` (1 when x = n), alpha = 1 - confidence
    (Clopper, Pearson 1934). Each side fails with probability at most alpha / 2.
    """
    conf = _confidence(confidence)
    x = np.asarray(successes)
    n = np.asarray(trials)
    for name, arr in (("successes", x), ("trials", n)):
        if arr.dtype == bool or not np.issubdtype(arr.dtype, np.number):
            raise TypeError(f"{name} must be integer counts")
        if not np.all(np.isfinite(arr)) or not np.all(arr == np.floor(arr)):
            raise ValueError(f"{name} must be integer counts")
    if (n < 1).any() or (x < 0).any() or (x > n).any():
        raise ValueError("clopper_pearson needs trials >= 1 and 0 <= successes <= trials")
    x = x.astype(float)
    n = n.astype(float)
    alpha = 1.0 - conf
    with np.errstate(invalid="ignore", divide="ignore"):
        lower = np.where(x > 0, stats.beta.ppf(alpha / 2, x, n - x + 1), 0.0)
        upper = np.where(x < n, stats.beta.ppf(1 - alpha / 2, x + 1, n - x), 1.0)
    return lower, upper


@dataclass(frozen=True)
class AuditResult:
    """An empirical lower bound on epsilon at ``delta``, valid with probability >= ``confidence``.

    ``epsilon_lower`` is the bound (0 when no rejection set gives a positive one); the other
    fields describe the rejection set and counts that attained it. ``epsilon_estimate`` is the
    same formula with the raw frequencies: a point estimate, NOT a bound. Never read either
    number as a privacy guarantee.
    """

    epsilon_lower: float
    delta: float
    confidence: float
    n_samples: tuple[int, int]
    n_thresholds: int
    threshold: float | None
    rejection_set: str
    ordering: str
    counts: tuple[int, int]
    probability_bounds: tuple[float, float]
    epsilon_estimate: float

    def tightness(self, certified_epsilon: float) -> float:
        """``epsilon_lower / certified_epsilon``: 1 means the audit meets the certificate."""
        cert = check.positive("certified_epsilon", certified_epsilon)
        return self.epsilon_lower / cert

    def violates(self, certified_epsilon: float) -> bool:
        """True if the empirical lower bound exceeds ``certified_epsilon`` (evidence of a bug)."""
        cert = check.real("certified_epsilon", certified_epsilon)
        if cert < 0:
            raise ValueError(f"certified_epsilon must be >= 0, got {certified_epsilon!r}")
        return self.epsilon_lower > cert

    def to_dict(self) -> dict[str, Any]:
        estimate = self.epsilon_estimate if math.isfinite(self.epsilon_estimate) else str(self.epsilon_estimate)
        return {
            "epsilon_lower": self.epsilon_lower,
            "delta": self.delta,
            "confidence": self.confidence,
            "n_samples": list(self.n_samples),
            "n_thresholds": self.n_thresholds,
            "threshold": self.threshold,
            "rejection_set": self.rejection_set,
            "ordering": self.ordering,
            "counts": list(self.counts),
            "probability_bounds": list(self.probability_bounds),
            "epsilon_estimate": estimate,
            "kind": "empirical lower bound (not a guarantee)",
        }


def _confidence(confidence: object) -> float:
    c = check.real("confidence", confidence)
    if not 0 < c < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    return c


def _audit_delta(delta: object) -> float:
    d = check.real("delta", delta)
    if not 0 <= d < 1:
        raise ValueError(f"delta must be in [0, 1), got {delta!r}")
    return d


def _scores(name: str, values: object) -> np.ndarray:
    arr = check.real_array(name, values)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-d array of statistic values")
    return arr


def _thresholds(values: object) -> np.ndarray:
    arr = check.real_array("thresholds", values).reshape(-1)
    if arr.size == 0:
        raise ValueError("thresholds must contain at least one value")
    if not np.isfinite(arr).all():
        raise ValueError("thresholds must be finite")
    return np.unique(arr)


def _count_at_least(sorted_values: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    """#{values >= t} for each threshold t (values sorted ascending)."""
    return sorted_values.size - np.searchsorted(sorted_values, thresholds, side="left")


def _candidates(count_a, n_a, count_b, n_b, delta, confidence_each):
    """All (epsilon bound, set, ordering, p_lo, p_hi, counts) candidates, as arrays over thresholds.

    Four rejection rules per threshold: {>= t} and {< t}, each with D or D' first.
    """
    lo_a, hi_a = clopper_pearson(count_a, n_a, confidence_each)
    lo_b, hi_b = clopper_pearson(count_b, n_b, confidence_each)
    # (p_first_lower, p_second_upper, count_first, count_second, set, ordering)
    rules = [
        (lo_a, hi_b, count_a, count_b, ">=", "D, D'"),
        (lo_b, hi_a, count_b, count_a, ">=", "D', D"),
        (1 - hi_a, 1 - lo_b, n_a - count_a, n_b - count_b, "<", "D, D'"),
        (1 - hi_b, 1 - lo_a, n_b - count_b, n_a - count_a, "<", "D', D"),
    ]
    out = []
    for p1, p2, c1, c2, side, order in rules:
        with np.errstate(divide="ignore", invalid="ignore"):
            eps = np.where((p1 > delta) & (p2 > 0), np.log(np.maximum(p1 - delta, 1e-300)) - np.log(p2), -np.inf)
        out.append((eps, p1, p2, c1, c2, side, order))
    return out


def _point_estimate(count_a, n_a, count_b, n_b, delta) -> float:
    """max log((p1 - delta)/p2) with raw frequencies (inf when p2 = 0 < p1 - delta). Not a bound."""
    fa, fb = count_a / n_a, count_b / n_b
    best = -np.inf
    for p1, p2 in ((fa, fb), (fb, fa), (1 - fa, 1 - fb), (1 - fb, 1 - fa)):
        with np.errstate(divide="ignore", invalid="ignore"):
            eps = np.where(p1 > delta, np.log(np.maximum(p1 - delta, 1e-300)) - np.log(p2), -np.inf)
        best = max(best, float(np.max(eps)))
    return max(best, 0.0)


def epsilon_lower_bound(scores, scores_neighbour, *, delta: float, thresholds, confidence: float = 0.95) -> AuditResult:
    """Empirical lower bound on epsilon(delta) from statistic samples on ``D`` and ``D'``.

    ``scores`` and ``scores_neighbour`` are i.i.d. draws of the statistic on each data set
    (+-inf allowed, NaN not). ``thresholds`` is a fixed family chosen WITHOUT looking at these
    samples; every threshold counts towards the Bonferroni correction. With alpha =
    1 - confidence, each of the 2 T proportions gets a two-sided Clopper-Pearson interval at
    level 1 - alpha / (2 T), so all hold at once with probability >= confidence and the
    returned bound is valid for every rule considered (Jagielski et al. 2020; Nasr et al. 2021).
    """
    a = _scores("scores", scores)
    b = _scores("scores_neighbour", scores_neighbour)
    d = _audit_delta(delta)
    conf = _confidence(confidence)
    t = _thresholds(thresholds)
    return _bound_from_sorted(np.sort(a), np.sort(b), t, d, conf)


def _bound_from_sorted(a: np.ndarray, b: np.ndarray, t: np.ndarray, delta: float, confidence: float) -> AuditResult:
    return _bound_from_counts(_count_at_least(a, t), a.size, _count_at_least(b, t), b.size, t, delta, confidence)


def _bound_from_counts(count_a: np.ndarray, n_a: int, count_b: np.ndarray, n_b: int, t: np.ndarray, delta: float,
                       confidence: float) -> AuditResult:
    each = 1.0 - (1.0 - confidence) / (2 * t.size)
    # (epsilon, (threshold, set, ordering, count_first, count_second, p_first_lower, p_second_upper))
    best: tuple[float, tuple[float, str, str, int, int, float, float] | None] = (-np.inf, None)
    for eps, p1, p2, c1, c2, side, order in _candidates(count_a, n_a, count_b, n_b, delta, each):
        i = int(np.argmax(eps))
        if eps[i] > best[0]:
            best = (float(eps[i]), (float(t[i]), side, order, int(c1[i]), int(c2[i]), float(p1[i]), float(p2[i])))
    estimate = _point_estimate(count_a, n_a, count_b, n_b, delta)
    if best[1] is None or best[0] <= 0:
        return AuditResult(0.0, delta, confidence, (n_a, n_b), int(t.size), None, "none", "", (0, 0), (0.0, 1.0),
                           estimate)
    thr, side, order, c1, c2, p1, p2 = best[1]
    return AuditResult(best[0], delta, confidence, (n_a, n_b), int(t.size), thr, f"statistic {side} {thr:.6g}", order,
                       (c1, c2), (p1, p2), estimate)


# ----------------------------------------------------------------------------------------
# Running a mechanism
# ----------------------------------------------------------------------------------------


def _signature_flags(mechanism: Callable[..., Any]) -> tuple[bool, bool]:
    """(accepts rng, accepts size) from the mechanism's signature (False, False if unknown)."""
    try:
        params = inspect.signature(mechanism).parameters
    except (TypeError, ValueError):
        return False, False
    return "rng" in params, "size" in params


def _batches(mechanism, statistic, data, n: int, rng: np.random.Generator, *, vectorised: bool, takes_rng: bool,
             batch_size: int):
    """Yield arrays of statistic values of ``mechanism(data)``, ``n`` in total (memory: one batch)."""
    done = 0
    while done < n:
        b = min(batch_size, n - done)
        kwargs: dict[str, Any] = {"rng": rng} if takes_rng else {}
        if vectorised:
            raw = [statistic(mechanism(data, size=b, **kwargs))]
        else:
            raw = [statistic(mechanism(data, **kwargs)) for _ in range(b)]
        try:
            values = np.concatenate([np.asarray(v, dtype=float).reshape(-1) for v in raw])
        except (TypeError, ValueError) as exc:
            raise TypeError(f"statistic must return real numbers: {exc}") from None
        if values.size != b:
            raise ValueError(f"statistic returned {values.size} values for {b} outputs (one per output expected)")
        if np.isnan(values).any():
            raise ValueError("statistic returned NaN; map failures to +-inf or a sentinel value")
        yield values
        done += b


def _draw(mechanism, statistic, data, n: int, rng: np.random.Generator, **kwargs) -> np.ndarray:
    """All n statistic values (used for the pilot, whose size is capped)."""
    return np.concatenate(list(_batches(mechanism, statistic, data, n, rng, **kwargs)))


def _count(mechanism, statistic, data, n: int, rng: np.random.Generator, thresholds: np.ndarray,
           **kwargs) -> np.ndarray:
    """#{statistic >= t} for each threshold over n draws, streamed batch by batch."""
    counts = np.zeros(thresholds.size, dtype=np.int64)
    for values in _batches(mechanism, statistic, data, n, rng, **kwargs):
        counts += _count_at_least(np.sort(values), thresholds)
    return counts


def _default_statistic(output: Any) -> np.ndarray:
    return np.asarray(output, dtype=float)


def _pilot_thresholds(a: np.ndarray, b: np.ndarray, keep: int, delta: float, confidence: float,
                      scale: float) -> np.ndarray:
    """Keep the ``keep`` pooled-quantile thresholds with the best pilot bound.

    Pilot counts are rescaled to the evaluation size (``scale``) so the ranking reflects the
    Clopper-Pearson widths the evaluation will have.
    """
    pooled = np.sort(np.concatenate([a, b]))
    finite = pooled[np.isfinite(pooled)]
    if finite.size == 0:
        return np.array([0.0])
    z = np.linspace(-1, 1, _POOL)
    m = finite.size
    levels = 1 / (1 + np.exp(-z * math.log(m)))  # logit-spaced from ~1/m to ~1 - 1/m
    cand = np.unique(np.concatenate([np.quantile(finite, levels, method="inverted_cdf"), finite[:1], finite[-1:]]))
    # Also the midpoints between neighbouring candidates (useful for discrete statistics).
    cand = np.unique(np.concatenate([cand, (cand[1:] + cand[:-1]) / 2])) if cand.size > 1 else cand
    sa, sb = np.sort(a), np.sort(b)
    ca = np.round(_count_at_least(sa, cand) * scale).astype(np.int64)
    cb = np.round(_count_at_least(sb, cand) * scale).astype(np.int64)
    na, nb = max(int(round(sa.size * scale)), 1), max(int(round(sb.size * scale)), 1)
    ca, cb = np.minimum(ca, na), np.minimum(cb, nb)
    each = 1.0 - (1.0 - confidence) / (2 * keep)
    score = np.full(cand.size, -np.inf)
    for eps, *_ in _candidates(ca, na, cb, nb, delta, each):
        score = np.maximum(score, eps)
    order = np.argsort(-score, kind="stable")
    return np.sort(cand[order[:keep]])


def audit(mechanism: Callable[..., Any], data: Any, neighbour: Any, *, delta: float,
          statistic: Callable[[Any], Any] | None = None, thresholds=None, n_samples: int = 200_000,
          confidence: float = 0.95, n_thresholds: int = 16, pilot_fraction: float = 0.1,
          batch_size: int = 100_000, vectorised: bool | None = None, seed: int | None = None) -> AuditResult:
    """Empirical lower bound on epsilon(delta) of ``mechanism`` from neighbours ``data``, ``neighbour``.

    Parameters
    ----------
    mechanism : callable
        ``mechanism(data)``; it also gets ``rng=`` (a ``numpy.random.Generator``) if its
        signature has an ``rng`` parameter, and ``size=`` if it has a ``size`` parameter, in
        which case it must return ``size`` independent outputs at once (vectorised).
    data, neighbour
        the two neighbouring data sets (anything the mechanism accepts).
    delta
        the delta at which epsilon is lower-bounded, in [0, 1).
    statistic : callable, optional
        Maps what ONE call of ``mechanism`` returns to its scalar statistic (for a vectorised
        call, the batch to an array of ``size`` values). Default: the output as a float.
        +-inf is allowed, NaN is not.
    thresholds : array, optional
        A fixed family of thresholds; otherwise chosen on a pilot sample (see the module doc).
    n_samples
        draws per data set, at most ``MAX_SAMPLES`` (the pilot, if any, is
        ``pilot_fraction`` of them, at most 2e6). Memory is one batch plus the pilot.
    confidence
        probability that the returned bound holds (Clopper-Pearson + Bonferroni).
    n_thresholds
        thresholds kept from the pilot (the Bonferroni factor).
    vectorised
        force (True) or forbid (False) ``size=`` calls; None detects it.
    seed
        seeds the generator that drives every draw (pilot and evaluation).

    Returns
    -------
    AuditResult
        The bound is statistical and one-sided: it is never a privacy guarantee
        (Jagielski, Ullman, Oprea 2020; Nasr et al. 2021).
    """
    if not callable(mechanism):
        raise TypeError("mechanism must be callable: mechanism(data[, rng=...][, size=...])")
    if statistic is None:
        statistic = _default_statistic
    elif not callable(statistic):
        raise TypeError("statistic must be callable")
    d = _audit_delta(delta)
    conf = _confidence(confidence)
    n = check.positive_int("n_samples", n_samples)
    if not 10 <= n <= MAX_SAMPLES:
        raise ValueError(f"n_samples must be in [10, {MAX_SAMPLES:.0e}], got {n_samples!r}")
    keep = check.positive_int("n_thresholds", n_thresholds)
    if keep > _POOL:
        raise ValueError(f"n_thresholds must be in [1, {_POOL}], got {n_thresholds!r}")
    batch = check.positive_int("batch_size", batch_size)
    if batch > _MAX_BATCH:
        raise ValueError(f"batch_size must be in [1, {_MAX_BATCH:.0e}], got {batch_size!r}")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0):
        raise ValueError(f"seed must be a non-negative integer or None, got {seed!r}")
    takes_rng, takes_size = _signature_flags(mechanism)
    if vectorised is None:
        vectorised = takes_size
    elif not isinstance(vectorised, bool):
        raise TypeError(f"vectorised must be True, False or None, got {vectorised!r}")
    pilot_a, pilot_b, eval_a, eval_b = (np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(4))

    options = dict(vectorised=vectorised, takes_rng=takes_rng, batch_size=batch)
    if thresholds is None:
        frac = check.real("pilot_fraction", pilot_fraction)
        if not 0 < frac < 1:
            raise ValueError(f"pilot_fraction must be in (0, 1), got {pilot_fraction!r}")
        n_pilot = min(max(int(round(frac * n)), 5), _MAX_PILOT)
        n_eval = n - n_pilot
        if n_eval < 5:
            raise ValueError(f"n_samples={n} leaves too few evaluation draws after the pilot")
        pa = _draw(mechanism, statistic, data, n_pilot, pilot_a, **options)
        pb = _draw(mechanism, statistic, neighbour, n_pilot, pilot_b, **options)
        t = _pilot_thresholds(pa, pb, keep, d, conf, n_eval / n_pilot)
    else:
        t = _thresholds(thresholds)
        n_eval = n
    count_a = _count(mechanism, statistic, data, n_eval, eval_a, t, **options)
    count_b = _count(mechanism, statistic, neighbour, n_eval, eval_b, t, **options)
    return _bound_from_counts(count_a, n_eval, count_b, n_eval, t, d, conf)

