"""Soundness and tightness sweep: every privselect accountant and the default against references.

Random mechanisms (``--cases``, default 300; seed ``--seed``), each queried at one delta drawn
log-uniformly from [1e-12, 1e-2]:

* 60%: Poisson-subsampled Gaussian compositions (sigma log-uniform in [0.3, 50], rate q
  log-uniform in [1e-4, 1] with q = 1 in 15% of them, k log-uniform in [1, --max-k], default 5000);
* 20%: Laplace (scale log-uniform in [0.5, 50]), subsampled at q in [1e-4, 1] in half of them;
* 20%: heterogeneous compositions of two or three subsampled Gaussians.

For every mechanism: the default (``ps.privacy_profile(m)``, i.e. ``accountant="auto"``) and
(unless ``--default-only``) each accountant alone (exact where it applies,
PRV built for the query delta, CF when its profile is certified, RDP). References:

* lower: dp-accounting's optimistic PLD (per direction, the max over directions) and the
  exact value where one exists (Gaussian compositions: mu-GDP; adjudication of k <= 2
  candidates by nested quadrature as in ``tests/support/soundness.py``);
* upper: dp-accounting's pessimistic (connect-the-dots) PLD at ``--interval`` (default 1e-4),
  or the exact value.

Both PLDs use ``max(interval, 4 * scale / 2e6)``, ``scale`` the largest epsilon seen (at least 1),
so that a huge loss range keeps dp-accounting's grid near 2e6 points; the interval actually
used is recorded per case (``interval_used``, ``fine_interval_used``).

**Issue 14's goal** (``--fine-interval 1e-5``): the default's eps(delta) against the better of the
exact value and the pessimistic PLD at the fine interval. That PLD costs about eight times the
coarse one at 1e-5 against 1e-4, so it is computed only where needed. The optimistic
PLD's delta(x) is a lower bound on the true delta(x) [dp-accounting's pessimistic/optimistic
discretisation, Meiser & Mohammadi 2018; Doroshenko et al. 2022]; so if it exceeds the query delta
at x = ``_gap_threshold(default, 0.005)``, the true eps(delta) exceeds x, so does every valid
upper bound (the pessimistic PLD at any interval), and the default is within 0.5% of it
(**sandwich**: no fine PLD needed). The check evaluates dp-accounting's delta(eps), not its
eps(delta) search, and needs a margin of ``PLD_FLOOR`` over the query delta. Every other case
without an exact value gets the pessimistic PLD at the fine interval (cheapest first) as its
upper reference; where the default lies more than 0.1% below it, the optimistic PLD at the fine
interval is computed too and checked as a lower reference (a violation, or a reference error,
exactly as above). The summary's ``goal`` block and the printed report say which reference decided
each verdict (exact / sandwich / direct fine PLD / undecided), how many fine intervals were
coarsened and to what, and the 0.5% and 5% fractions; a sandwich case enters the gap
distribution with its gap to the optimistic PLD's eps, capped at 0.5% (an upper bound on its
gap to the fine PLD). ``--deadline HH:MM`` (UTC) starts no fine PLD that would not end by then;
those cases are reported as undecided (within 5% only if the same sandwich proves it). The JSON
file is rewritten after every case, with the phase reached, so a killed run leaves a usable
partial result.

A **violation** is a certified epsilon below a lower reference (beyond float slack). A
candidate resting on the PLD alone is adjudicated by dp-accounting's own optimistic
``delta(eps)`` at the certified eps: if that is not above the query delta (plus its
floating-point noise, ``PLD_FLOOR``), its ``epsilon(delta)`` search was at fault (this
happens near delta ~ 1e-11) and the case counts as a **reference error**. A **refusal** is
the default raising. CF runs with ``max_work=5e6`` per integration line (its few-step,
tiny-rate cases otherwise take minutes; the cap only widens its certified bracket). Printed: counts, and the distribution of
``(certified - best upper reference) / best upper reference`` per accountant and for the
default, with the fraction of queries within 0.5% and 5%.

**Corner modes** (``--mode delta``: delta(eps) queries; ``--mode small-delta``: eps(delta) at delta in
[1e-14, 1e-10], where dp-accounting's PLD is no reference): the default only, against the exact
value, CF with proven terms and dp-accounting's PLD with its tail truncation far below delta;
``benchmarks/soundness_corners.py`` describes their references.

The references (dp-accounting's PLD of a composition, the exact values, CF's certified bracket)
come from ``tests/support/`` (``peers.pld_of_parts``, ``soundness.exact_parts_epsilon``, ...).

    python -m benchmarks.soundness [--cases 300] [--seed 0] [--interval 1e-4] [--max-k 5000] [--json out.json]
                                   [--default-only] [--fine-interval 1e-5] [--deadline HH:MM]
                                   [--mode eps|delta|small-delta]
"""

from __future__ import annotations

import argparse
import datetime
import json
import logging
import math
import os
import time
from dataclasses import asdict, dataclass, field

import numpy as np

import privselect as ps
from benchmarks import soundness_corners as corners
from tests.support.peers import Part, pld_of_parts
from tests.support.soundness import exact_parts_epsilon

RTOL = 1e-9
#: Smallest reference epsilon used as the denominator of a relative gap.
REL_FLOOR = 1e-3
ACCOUNTANTS = ("exact", "prv", "cf", "rdp")
CF_MAX_WORK = 5e6


@dataclass(frozen=True)
class Query:
    parts: tuple[Part, ...]
    delta: float

    def mechanism(self) -> ps.Mechanism:
        if len(self.parts) == 1:
            return self.parts[0].mechanism()
        return ps.compose(*[p.mechanism() for p in self.parts])

    def label(self) -> str:
        return " + ".join(f"{p.steps}x{p.kind[:3]}({p.noise:.3g})@{p.rate:.3g}" for p in self.parts)


@dataclass
class Result:
    query: Query
    default: float = math.nan
    default_accountant: str = ""
    refusal: str | None = None
    accountants: dict = field(default_factory=dict)  # name -> certified eps (or an error string)
    timings: dict = field(default_factory=dict)  # name -> seconds (accountants, "default", "pld")
    pld_optimistic: float | None = None
    pld_pessimistic: float | None = None
    exact: float | None = None
    violations: list = field(default_factory=list)
    reference_errors: list = field(default_factory=list)  # PLD-only candidates refuted by PLD's own delta
    seconds: float = 0.0
    interval_used: float | None = None  # the coarse PLD interval after the loss-range coarsening
    # Fine mode (--fine-interval): which reference decided the default's tightness verdict.
    sandwich: dict = field(default_factory=dict)  # tolerance -> certified by the optimistic PLD's delta
    pld_fine: float | None = None  # pessimistic PLD at the fine interval (computed only if needed)
    pld_fine_optimistic: float | None = None  # optimistic PLD there (only if the default lies well below pld_fine)
    fine_interval_used: float | None = None
    fine_error: str | None = None

    # The closed form, where there is one, decides alone (dp-accounting's optimistic PLD can lie
    # above it at tiny delta: its FFT composition is below its floating-point floor there).
    @property
    def upper_reference(self) -> float | None:
        return self.exact if self.exact is not None else self.pld_pessimistic

    @property
    def lower_reference(self) -> float | None:
        return self.exact if self.exact is not None else self.pld_optimistic


def _log_uniform(rng, lo, hi) -> float:
    return float(math.exp(rng.uniform(math.log(lo), math.log(hi))))


def sample(n: int, rng: np.random.Generator, max_k: int, delta_range: tuple[float, float] = (1e-12, 1e-2)) -> list[Query]:
    out = []
    for _ in range(n):
        u = rng.random()
        if u < 0.6:
            q = 1.0 if rng.random() < 0.15 else _log_uniform(rng, 1e-4, 1.0)
            parts = (Part("gaussian", _log_uniform(rng, 0.3, 50.0), q, max(1, round(_log_uniform(rng, 1, max_k)))),)
        elif u < 0.8:
            q = 1.0 if rng.random() < 0.5 else _log_uniform(rng, 1e-4, 1.0)
            parts = (Part("laplace", _log_uniform(rng, 0.5, 50.0), q, max(1, round(_log_uniform(rng, 1, max_k / 10)))),)
        else:
            parts = tuple(Part("gaussian", _log_uniform(rng, 0.5, 20.0), _log_uniform(rng, 1e-3, 0.3),
                               max(1, round(_log_uniform(rng, 1, max_k / 3)))) for _ in range(int(rng.integers(2, 4))))
        out.append(Query(parts, _log_uniform(rng, *delta_range)))
    return out


def accountant_epsilon(query: Query, name: str) -> float:
    """Certified eps(delta) of one accountant; raises if it does not apply or cannot certify."""
    mech = query.mechanism()
    if name == "prv":
        prof = ps.privacy_profile(mech, accountant="prv", target_delta=query.delta)
    elif name == "cf":  # capped work per integration line: few-step tiny-rate cases cost minutes otherwise
        prof = ps.privacy_profile(mech, accountant="cf", max_work=CF_MAX_WORK)
    else:
        prof = ps.privacy_profile(mech, accountant=name)
    if not getattr(prof, "certified", True):
        raise ValueError("uncertified profile (error estimate only)")
    return max(float(prof.epsilon(query.delta)), 0.0)


def default_epsilon(query: Query) -> tuple[float, str]:
    """The library default (``accountant="auto"``) and the accountant that gave its answer."""
    prof = ps.privacy_profile(query.mechanism())
    eps = max(float(prof.epsilon(query.delta)), 0.0)
    source = getattr(prof, "epsilon_source", None)
    chosen = source(query.delta) if callable(source) else getattr(prof, "accountant", "auto")
    return eps, f"auto:{chosen}"


def pld_distributions(query: Query, interval: float, modes: tuple[bool, ...] = (False, True),
                      tail_mass_truncation: float = 1e-15) -> list:
    """dp-accounting's composed PLDs, one per mode (False: optimistic, True: pessimistic)."""
    return [pld_of_parts(query.parts, interval, pessimistic, tail_mass_truncation) for pessimistic in modes]


#: dp-accounting's composed PLD carries absolute floating-point noise of this order (its delta
#: goes negative near 1e-15): below it, its epsilon(delta) search is not a reference.
PLD_FLOOR = 1e-14


def _below(a: float, b: float) -> bool:
    return a < b - RTOL * max(1.0, abs(b))


def check(query: Query, interval: float, accountants: tuple[str, ...] = ACCOUNTANTS) -> Result:
    start = time.perf_counter()
    res = Result(query)
    for name in accountants:
        t = time.perf_counter()
        try:
            res.accountants[name] = accountant_epsilon(query, name)
        except Exception as exc:  # noqa: BLE001 - "does not apply" or a refusal, recorded
            res.accountants[name] = f"{type(exc).__name__}: {str(exc)[:80]}"
        res.timings[name] = time.perf_counter() - t
    t, cpu = time.perf_counter(), time.process_time()
    try:
        res.default, res.default_accountant = default_epsilon(query)
    except Exception as exc:  # noqa: BLE001
        res.refusal = f"{type(exc).__name__}: {str(exc)[:120]}"
    res.timings["default"] = time.perf_counter() - t
    res.timings["default_cpu"] = time.process_time() - cpu
    res.exact = exact_parts_epsilon(query.parts, query.delta)
    t = time.perf_counter()
    optimistic = None
    try:
        res.interval_used = _coarsened(interval, res)
        (optimistic,) = pld_distributions(query, res.interval_used, (False,))
        t_pess = time.perf_counter()
        (pessimistic,) = pld_distributions(query, res.interval_used, (True,))
        res.timings["pld_pessimistic"] = time.perf_counter() - t_pess
        res.pld_optimistic = max(float(optimistic.get_epsilon_for_delta(query.delta)), 0.0)
        res.pld_pessimistic = max(float(pessimistic.get_epsilon_for_delta(query.delta)), 0.0)
        if _below(res.pld_pessimistic, res.pld_optimistic):  # inconsistent reference: drop it
            res.pld_optimistic = res.pld_pessimistic = None
    except Exception:  # noqa: BLE001 - the reference failing is not privselect's failure
        res.pld_optimistic = res.pld_pessimistic = None
    res.timings["pld"] = time.perf_counter() - t
    if optimistic is not None and res.pld_optimistic is not None and res.exact is None and res.refusal is None:
        res.sandwich = {str(tol): _sandwiched(optimistic, res.default, query.delta, tol) for tol in TOLERANCES}
    lower = res.lower_reference
    if lower is not None:
        for name, value in [("default", res.default)] + list(res.accountants.items()):
            if isinstance(value, float) and math.isfinite(value) and _below(value, lower):
                # Adjudicate a PLD-only candidate by dp-accounting's own delta at the certified eps:
                # a real violation needs the optimistic (lower) delta there above the query delta,
                # by more than its floating-point noise; otherwise its eps search was at fault.
                if res.exact is None and res.pld_optimistic is not None and value > 0:
                    low_delta = float(optimistic.get_delta_for_epsilon(value))
                    if low_delta <= query.delta * (1 + 1e-9) + PLD_FLOOR:
                        res.reference_errors.append(name)
                        continue
                res.violations.append(name)
    res.seconds = time.perf_counter() - start
    return res


def _coarsened(interval: float, res: Result) -> float:
    """The PLD interval actually used: ``interval``, coarsened so that the loss grid up to four times
    the largest epsilon seen stays within about 2e6 points (dp-accounting's memory and time)."""
    scale = max([v for v in [res.default, *res.accountants.values()] if isinstance(v, float) and math.isfinite(v)]
                + [1.0])
    return max(interval, 4 * scale / 2e6)


#: Tightness tolerances of issue 14's goal (relative gap to the upper reference).
TOLERANCES = (0.005, 0.05)


def _gap_threshold(value: float, tol: float) -> float:
    """The smallest reference r with ``_gap(value, r) <= tol`` (``_gap`` decreases in r)."""
    if value / (1 + tol) >= REL_FLOOR:
        return value / (1 + tol)
    return value - tol * REL_FLOOR


def _sandwiched(optimistic, value: float, delta: float, tol: float) -> bool:
    """True if dp-accounting's optimistic PLD proves every upper reference is within ``tol`` of ``value``.

    With x = ``_gap_threshold(value, tol)``: the optimistic PLD's delta(x) is a lower bound on the
    true delta(x); if it exceeds the query delta (beyond ``PLD_FLOOR``), the true eps(delta) > x, so
    any valid upper bound on the truth (the pessimistic PLD at any interval) is > x and ``value`` is
    within ``tol`` of it. This uses dp-accounting's delta(eps), not its eps(delta) search.
    """
    x = _gap_threshold(value, tol)
    if x <= 0:
        return True  # any reference >= 0 will do
    return float(optimistic.get_delta_for_epsilon(x)) > delta * (1 + 1e-9) + PLD_FLOOR


def refine(res: Result, fine_interval: float) -> None:
    """The pessimistic PLD at ``fine_interval`` (coarsened as for the coarse one) as the upper reference."""
    t = time.perf_counter()
    try:
        res.fine_interval_used = _coarsened(fine_interval, res)
        (pessimistic,) = pld_distributions(res.query, res.fine_interval_used, (True,))
        res.pld_fine = max(float(pessimistic.get_epsilon_for_delta(res.query.delta)), 0.0)
        if res.pld_optimistic is not None and _below(res.pld_fine, res.pld_optimistic):
            res.fine_error = f"inconsistent: pessimistic {res.pld_fine!r} < optimistic {res.pld_optimistic!r}"
            res.pld_fine = None
        elif (gap := _gap(res.default, res.pld_fine)) is not None and gap < -FINE_LOWER_CHECK:
            _check_fine_lower(res, res.fine_interval_used)
    except Exception as exc:  # noqa: BLE001 - the reference failing is not privselect's failure
        res.fine_error = f"{type(exc).__name__}: {str(exc)[:120]}"
    res.timings["pld_fine"] = time.perf_counter() - t
    res.seconds += res.timings["pld_fine"]


#: A default more than this (relative gap) below the fine pessimistic PLD is also checked against
#: the optimistic PLD at the fine interval, a tighter lower reference than the coarse one.
FINE_LOWER_CHECK = 1e-3


def _check_fine_lower(res: Result, interval: float) -> None:
    """The optimistic PLD at the fine interval as a lower reference, adjudicated as in ``check``."""
    (optimistic,) = pld_distributions(res.query, interval, (False,))
    res.pld_fine_optimistic = max(float(optimistic.get_epsilon_for_delta(res.query.delta)), 0.0)
    if _below(res.default, res.pld_fine_optimistic):
        low_delta = float(optimistic.get_delta_for_epsilon(res.default)) if res.default > 0 else 1.0
        if low_delta <= res.query.delta * (1 + 1e-9) + PLD_FLOOR:
            res.reference_errors.append("default (fine optimistic PLD)")
        else:
            res.violations.append("default (fine optimistic PLD)")


def verdict(res: Result) -> tuple[str, float | None]:
    """Which reference decides the default's tightness in fine mode, and the gap it gives.

    ``exact``: the closed form; ``pld_fine``: the pessimistic PLD at the fine interval;
    ``sandwich``: decided within 0.5% by the optimistic PLD (the gap given is the one to the
    optimistic PLD's eps, an upper bound on the gap to any valid upper reference, capped at 0.5%);
    ``undecided``: none of these (fine PLD not run or failed).
    """
    if res.refusal is not None:
        return "refused", None
    if res.exact is not None:
        return "exact", _gap(res.default, res.exact)
    if res.pld_fine is not None:
        return "pld_fine", _gap(res.default, res.pld_fine)
    if res.sandwich.get(str(TOLERANCES[0])):
        bound = _gap(res.default, res.pld_optimistic)
        return "sandwich", TOLERANCES[0] if bound is None else min(bound, TOLERANCES[0])
    return "undecided", None


def _gap(value, reference) -> float | None:
    if not isinstance(value, float) or not math.isfinite(value) or reference is None:
        return None
    return (value - reference) / max(reference, REL_FLOOR)


def _dist(values) -> dict:
    if not values:
        return {"n": 0}
    a = np.asarray(values)
    return {"n": int(a.size), "within_0.5%": float(np.mean(a <= 0.005)), "within_5%": float(np.mean(a <= 0.05)),
            **{k: float(np.quantile(a, p)) for k, p in (("min", 0), ("median", 0.5), ("p95", 0.95),
                                                         ("p99", 0.99), ("max", 1))}}


def _cpu_dist(results: list[Result]) -> dict:
    """The default's CPU seconds per query (median, p90, p99, max) and the queries above 2 s."""
    cpu = [r.timings["default_cpu"] for r in results if "default_cpu" in r.timings]
    if not cpu:
        return {"n": 0}
    slow = sorted(((r.timings["default_cpu"], r) for r in results if r.timings.get("default_cpu", 0.0) > 2.0),
                  key=lambda x: -x[0])
    return {"n": len(cpu), **{k: float(np.quantile(cpu, p)) for k, p in (("median", 0.5), ("p90", 0.9),
                                                                         ("p99", 0.99), ("max", 1))},
            "above_2s": [{"cpu": c, "mechanism": r.query.label(), "delta": r.query.delta,
                          "source": r.default_accountant} for c, r in slow]}


def summarise(results: list[Result], fine_interval: float | None = None) -> dict:
    tight = {"default": _dist([g for r in results if (g := _gap(r.default, r.upper_reference)) is not None])}
    for name in ACCOUNTANTS:
        tight[name] = _dist([g for r in results if (g := _gap(r.accountants.get(name), r.upper_reference)) is not None])
    chosen: dict[str, int] = {}
    for r in results:
        chosen[r.default_accountant] = chosen.get(r.default_accountant, 0) + 1
    out = {
        "mechanisms": len(results),
        "violations": sum(len(r.violations) for r in results),
        "reference_errors": sum(len(r.reference_errors) for r in results),
        "violations_by_accountant": {n: sum(v.split()[0] == n for r in results for v in r.violations)
                                     for n in ("default",) + ACCOUNTANTS},
        "refusals": sum(r.refusal is not None for r in results),
        "refusal_messages": sorted({r.refusal for r in results if r.refusal})[:5],
        "answered_by": {n: sum(isinstance(r.accountants.get(n), float) for r in results) for n in ACCOUNTANTS},
        "default_chose": chosen,
        "with_upper_reference": sum(r.upper_reference is not None for r in results),
        "tightness_vs_best_upper_reference": tight,
        "seconds_total": float(sum(r.seconds for r in results)),
        "default_cpu_seconds": _cpu_dist(results),
        "seconds_by_part": {n: round(float(sum(r.timings.get(n, 0.0) for r in results)), 2)
                            for n in ("default",) + ACCOUNTANTS + ("pld", "pld_pessimistic", "pld_fine")},
    }
    if fine_interval is not None:
        out["goal"] = summarise_goal(results, fine_interval)
    return out


def summarise_goal(results: list[Result], fine_interval: float) -> dict:
    """Issue 14's goal: the default against the better of exact and the pessimistic PLD at ``fine_interval``."""
    verdicts = [(r, *verdict(r)) for r in results]
    n = len(results)
    decided_by: dict[str, int] = {}
    for _, source, _ in verdicts:
        decided_by[source] = decided_by.get(source, 0) + 1
    gaps = [g for _, _, g in verdicts if g is not None]
    within = {}
    for tol in TOLERANCES:
        hits = sum(1 for r, source, g in verdicts
                   if (g is not None and g <= tol) or (source == "undecided" and r.sandwich.get(str(tol))))
        within[f"within_{100 * tol:g}%"] = hits / n if n else math.nan
    coarsened = sorted({r.fine_interval_used for r in results
                        if r.fine_interval_used is not None and r.fine_interval_used > fine_interval})
    worst = sorted(((g, r, source) for r, source, g in verdicts if g is not None), key=lambda x: -x[0])[:5]
    return {
        "fine_interval": fine_interval,
        "decided_by": decided_by,
        **within,
        "undecided": [{"mechanism": r.query.label(), "delta": r.query.delta, "default": r.default,
                       "within_5%_by_sandwich": bool(r.sandwich.get(str(TOLERANCES[1]))), "fine_error": r.fine_error}
                      for r, source, _ in verdicts if source == "undecided"],
        "fine_pld_computed": sum(r.pld_fine is not None for r in results),
        "fine_interval_coarsened": sum(r.fine_interval_used is not None and r.fine_interval_used > fine_interval
                                       for r in results),
        "fine_intervals_used_when_coarsened": coarsened,
        "gap": _dist(gaps),
        "worst": [{"gap": g, "source": source, "mechanism": r.query.label(), "parts": [asdict(p) for p in r.query.parts],
                   "delta": r.query.delta, "default": r.default, "default_accountant": r.default_accountant,
                   "exact": r.exact, "pld_fine": r.pld_fine, "fine_interval_used": r.fine_interval_used,
                   "pld_optimistic": r.pld_optimistic, "pld_pessimistic": r.pld_pessimistic} for g, r, source in worst],
    }


def _report(summary: dict) -> str:
    """The human-readable verdict of the goal block, naming the reference of every verdict."""
    g = summary["goal"]
    by = g["decided_by"]
    lines = [
        f"Goal (issue 14): default vs the better of exact and pessimistic PLD at {g['fine_interval']:g}, "
        f"{summary['mechanisms']} mechanisms",
        f"  violations {summary['violations']} (reference errors {summary['reference_errors']}), "
        f"refusals {summary['refusals']}",
        f"  verdict by reference: exact {by.get('exact', 0)}, direct fine PLD {by.get('pld_fine', 0)}, "
        f"sandwich (optimistic PLD at the coarse interval proves <= 0.5%) {by.get('sandwich', 0)}, "
        f"undecided {by.get('undecided', 0)}, refused {by.get('refused', 0)}",
        f"  fine interval coarsened (huge loss range) in {g['fine_interval_coarsened']} cases, to "
        f"{', '.join(f'{v:.3g}' for v in g['fine_intervals_used_when_coarsened']) or '-'}",
        f"  within 0.5%: {100 * g['within_0.5%']:.2f}%   within 5%: {100 * g['within_5%']:.2f}%"
        + ("  (undecided cases count as not within 0.5%, and within 5% only if sandwiched)" if by.get("undecided") else ""),
    ]
    d = g["gap"]
    if d.get("n"):
        lines.append(f"  gap over decided cases: median {100 * d['median']:+.3f}%, p95 {100 * d['p95']:+.3f}%, "
                     f"p99 {100 * d['p99']:+.3f}%, max {100 * d['max']:+.3f}%, min {100 * d['min']:+.3f}%  "
                     "(sandwich cases enter with their bound)")
    for w in g["worst"][:3]:
        lines.append(f"  worst: {100 * w['gap']:+.3f}% [{w['source']}] {w['mechanism']} delta={w['delta']:.4g} "
                     f"default={w['default']:.6g}")
    return "\n".join(lines)


def _write(path: str | None, results: list[Result], args, phase: str, fine_interval: float | None) -> None:
    """Write every case and the summary so far (atomically, so a killed run leaves a usable file)."""
    if not path:
        return
    payload = {"phase": phase, "summary": summarise(results, fine_interval),
               "cases": [asdict(r) for r in results], "args": vars(args)}
    tmp = f"{path}.tmp"
    with open(tmp, "w") as fh:
        json.dump(payload, fh, indent=1, default=str)
    os.replace(tmp, path)


def _deadline(text: str | None) -> float | None:
    """``HH:MM`` UTC today (or tomorrow if already past) as a POSIX time."""
    if text is None:
        return None
    now = datetime.datetime.now(datetime.timezone.utc)
    hh, mm = (int(v) for v in text.split(":"))
    at = now.replace(hour=hh, minute=mm, second=0, microsecond=0)
    return (at if at > now else at + datetime.timedelta(days=1)).timestamp()


#: A fine PLD costs about this many times the coarse pessimistic one per factor 10 of interval
#: (measured: 10x for 1e-4 -> 1e-5); used only to decide whether it still fits before --deadline.
FINE_COST_FACTOR = 12.0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--interval", type=float, default=1e-4, help="dp-accounting PLD value discretisation")
    parser.add_argument("--fine-interval", type=float, default=None,
                        help="issue 14's goal: also decide the default's tightness against the pessimistic PLD at "
                             "this interval, computing it only where the coarse optimistic PLD cannot decide")
    parser.add_argument("--deadline", default=None,
                        help="HH:MM UTC: start no fine PLD that would not end by then (those cases are reported "
                             "as undecided)")
    parser.add_argument("--max-k", type=int, default=5_000)
    parser.add_argument("--json", default=None, help="write every case and the summary here (updated as it goes)")
    parser.add_argument("--quiet", action="store_true")
    parser.add_argument("--default-only", action="store_true",
                        help="check only the default (auto), not each accountant alone (much faster)")
    parser.add_argument("--mode", choices=("eps",) + tuple(corners.CHECKS), default="eps",
                        help="eps: eps(delta) at delta in [1e-12, 1e-2] (this module); delta: delta(eps); small-delta: "
                             "eps(delta) at delta in [1e-14, 1e-10] (both: benchmarks/soundness_corners.py, default only)")
    args = parser.parse_args(argv)
    if args.mode != "eps":
        logging.getLogger().setLevel(logging.ERROR)
        queries = sample(args.cases, np.random.default_rng(args.seed), args.max_k, corners.CHECKS[args.mode][1])
        summary = corners.run(args.mode, queries, args.interval, args.json, args.quiet)
        return 1 if summary["violations"] or summary["refusals"] else 0
    accountants = () if args.default_only else ACCOUNTANTS
    fine = args.fine_interval
    deadline = _deadline(args.deadline)
    logging.getLogger().setLevel(logging.ERROR)  # dp-accounting warns about its optimistic fallback
    results = []
    for i, query in enumerate(sample(args.cases, np.random.default_rng(args.seed), args.max_k)):
        r = check(query, args.interval, accountants)
        results.append(r)
        if not args.quiet:
            gap = _gap(r.default, r.upper_reference)
            flag = (" VIOLATION:" + ",".join(r.violations)) if r.violations else ""
            flag += f" REFUSED {r.refusal}" if r.refusal else ""
            if fine is not None and r.exact is None:
                flag += " sandwich<=0.5%" if r.sandwich.get(str(TOLERANCES[0])) else " needs-fine"
            print(f"[{i + 1:4d}] {query.label():<58} delta={query.delta:8.2g} {r.default_accountant:<10} "
                  f"eps={r.default:10.5g} ref={r.upper_reference if r.upper_reference is not None else float('nan'):10.5g} "
                  f"gap={'-' if gap is None else f'{100 * gap:+.3f}%':>9} {r.seconds:6.2f}s "
                  f"(default {r.timings.get('default_cpu', math.nan):.2f} CPU s){flag}", flush=True)
        _write(args.json, results, args, "coarse", fine)
    if fine is not None:  # cheapest first, so a deadline leaves the fewest cases undecided
        todo = sorted((r for r in results if verdict(r)[0] == "undecided"),
                      key=lambda r: r.timings.get("pld_pessimistic", math.inf))
        for j, r in enumerate(todo):
            cost = FINE_COST_FACTOR * r.timings.get("pld_pessimistic", 0.0) * max(1.0, math.log10(args.interval / fine))
            if deadline is not None and time.time() + cost > deadline:
                r.fine_error = "not run: would end after --deadline"
                continue
            refine(r, fine)
            if not args.quiet:
                source, gap = verdict(r)
                print(f"[fine {j + 1:3d}/{len(todo)}] {r.query.label():<58} delta={r.query.delta:8.2g} "
                      f"eps={r.default:10.5g} pld({r.fine_interval_used or fine:.3g})="
                      f"{r.pld_fine if r.pld_fine is not None else float('nan'):10.5g} "
                      f"gap={'-' if gap is None else f'{100 * gap:+.3f}%':>9} "
                      f"{r.timings['pld_fine']:7.2f}s{' ' + r.fine_error if r.fine_error else ''}"
                      f"{' VIOLATION:' + ','.join(r.violations) if r.violations else ''}", flush=True)
            _write(args.json, results, args, f"fine {j + 1}/{len(todo)}", fine)
    summary = summarise(results, fine)
    print(json.dumps(summary, indent=2))
    if fine is not None:
        print(_report(summary))
    _write(args.json, results, args, "done", fine)
    return 1 if summary["violations"] or summary["refusals"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
