"""The soundness sweep's corner modes: delta(eps) queries, and eps(delta) at small delta.

Run through ``python -m benchmarks.soundness --mode delta|small-delta``; the mechanisms are the
sweep's (``benchmarks.soundness.sample``: subsampled Gaussians, Laplace with and without
subsampling, heterogeneous compositions), checked for the default (``accountant="auto"``) only.

``--mode delta``: a target delta* is drawn log-uniformly from [1e-10, 1e-2]; the query point is
eps = the default's eps(delta*) rounded to 4 significant digits (any point will do: it only places
the query where delta is of that size); the default's certified delta(eps) is then checked.
References, both evaluated by dp-accounting's ``get_delta_for_epsilon`` (no eps search):

* lower: the exact value (mu-GDP closed form, unsubsampled Gaussian compositions), else
  dp-accounting's optimistic PLD delta(eps) (a lower bound up to its floating-point noise
  ``PLD_FLOOR``: a candidate within that noise counts as a reference error);
* upper (tightness): the exact value, else the pessimistic (connect-the-dots) PLD delta(eps).
  The gap is the ratio ``default / reference - 1``.

``--mode small-delta``: eps(delta) at delta drawn log-uniformly from [1e-14, 1e-10], where
dp-accounting's PLD stops being a reference (its optimistic eps comes out above its pessimistic one
below ~1e-12: the FFT composition's absolute noise is ~1e-15). References:

* the exact value (mu-GDP) where there is one: decides alone;
* CF with proven terms: privselect's CF accountant alone (``max_work`` capped), used only where
  it marks its profile certified; its lower end (estimate minus its certified aliasing,
  truncation and rounding terms) is a proven lower bound, its upper end a certified upper bound
  (the tightness reference);
* dp-accounting's PLD with ``tail_mass_truncation = 1e-4 delta`` (far below delta; its default
  1e-15 is not), only where its optimistic eps is not above its pessimistic one: the optimistic
  eps as a lower reference, the pessimistic as a second upper reference (dropped where it lies below
  CF's proven lower end: there it is dp-accounting's floating-point floor, not a bound). A default below the
  optimistic eps is adjudicated by dp-accounting's own delta(eps) at the default (within
  ``PLD_FLOOR``: its noise), then by an independent exponentially tilted FFT
  (``tests/support/soundness.tilted_delta``: relative precision where the plain FFT has an absolute
  floor; checked against the closed forms and against the PLD at delta = 1e-6): if the tilted delta at
  the default's eps is within ``TILTED_RTOL`` of delta, the PLD was at fault (a reference error,
  with the tilted value recorded), else it is a violation. Both candidates of the first run
  (seed 0) were dp-accounting's: e.g. 352 Laplace(2.28) steps at 6.3e-14, where its optimistic eps
  is 82.73 and the tilted FFT puts delta(82.73) at 4.84e-14 (default 82.4928: 6.26884e-14 <= 6.26893e-14).

The tightness gap is (default - best upper reference) / max(reference, 1e-3); the best upper
reference is the exact value, else the smaller of CF's certified upper end and the consistent
pessimistic PLD. Cases with neither are "undecided" (e.g. subsampled Laplace, whose CF profile is
an estimate only, where the PLD is inconsistent). Each mode reports violations, reference errors,
refusals, which reference decided, the gap distribution and the default's query times.
"""

from __future__ import annotations

import json
import math
import os
import time
from dataclasses import asdict, dataclass, field

import numpy as np

import privselect as ps
from tests.support.soundness import cf_bracket, exact_parts_delta, exact_parts_epsilon, tilted_delta

#: The delta ranges of the corner modes.
DELTA_MODE_RANGE = (1e-10, 1e-2)
SMALL_DELTA_RANGE = (1e-14, 1e-10)
#: Relative float slack of a comparison; dp-accounting's absolute noise on a composed delta.
RTOL = 1e-9
PLD_FLOOR = 1e-14
REL_FLOOR = 1e-3
CF_MAX_WORK = 5e6
#: Relative slack on the tilted FFT's delta (an estimate good to ~1e-6 relative: midpoint rule, binning).
TILTED_RTOL = 1e-4
MAX_PLD_POINTS = 2e6


@dataclass
class CornerResult:
    label: str
    parts: list
    delta: float  # the query delta (small-delta) or the target delta* (delta mode)
    eps: float | None = None  # the query eps (delta mode)
    default: float = math.nan  # certified eps (small-delta) or delta (delta mode)
    default_accountant: str = ""
    refusal: str | None = None
    lower: dict = field(default_factory=dict)  # reference name -> lower bound on the truth
    upper: dict = field(default_factory=dict)  # reference name -> upper bound on the truth
    violations: list = field(default_factory=list)
    reference_errors: list = field(default_factory=list)
    decided_by: str = "undecided"
    tilted: float | None = None  # tilted-FFT delta at the default's eps (small-delta adjudication only)
    dropped: dict = field(default_factory=dict)  # references refuted by a proven one
    gap: float | None = None
    timings: dict = field(default_factory=dict)


def _interval(interval: float, scale: float) -> float:
    """dp-accounting's mesh, coarsened so that a loss grid up to 4x ``scale`` stays near 2e6 points."""
    return max(interval, 4 * max(scale, 1.0) / MAX_PLD_POINTS)


def _timed(res: CornerResult, name: str, fn):
    start = time.perf_counter()
    try:
        return fn()
    finally:
        res.timings[name] = time.perf_counter() - start


def _source(prof, method: str, x: float) -> str:
    """The member that answered (``auto:<member>``), or the profile's accountant where auto answered alone
    (e.g. the exact accountant for Gaussian compositions)."""
    source = getattr(prof, method, None)
    return f"auto:{source(x)}" if callable(source) else f"auto={prof.accountant}"


def check_delta(query, interval: float) -> CornerResult:
    """delta(eps) mode: the default's certified delta(eps) against exact / dp-accounting PLD delta(eps)."""
    from tests.support.peers import pld_of_parts

    res = CornerResult(query.label(), [asdict(p) for p in query.parts], query.delta)
    mech = query.mechanism()
    try:
        prof = ps.privacy_profile(mech)
        res.eps = float(f"{float(prof.epsilon(query.delta)):.4g}")
        res.default = _timed(res, "default", lambda: float(ps.privacy_profile(mech).delta(res.eps)))
        res.default_accountant = _source(prof, "delta_source", res.eps)
    except Exception as exc:  # noqa: BLE001 - a refusal is counted, not fatal
        res.refusal = f"{type(exc).__name__}: {str(exc)[:120]}"
        return res
    exact = exact_parts_delta(query.parts, res.eps)
    if exact is not None:
        res.lower["exact"] = res.upper["exact"] = exact
    else:
        try:
            h = _interval(interval, res.eps)
            opt, pess = _timed(res, "pld", lambda: [pld_of_parts(query.parts, h, p) for p in (False, True)])
            low, up = float(opt.get_delta_for_epsilon(res.eps)), float(pess.get_delta_for_epsilon(res.eps))
            if low <= up * (1 + RTOL) + PLD_FLOOR:
                res.lower["pld_optimistic"], res.upper["pld_pessimistic"] = low, up
        except Exception:  # noqa: BLE001 - the reference failing is not privselect's failure
            pass
    for name, low in res.lower.items():
        slack = RTOL * low + (PLD_FLOOR if name.startswith("pld") else 0.0)
        if res.default < low - slack:
            res.violations.append(name)
        elif res.default < low * (1 - RTOL):
            res.reference_errors.append(name)  # below the reference only within its noise
    if res.upper:
        res.decided_by, ref = min(res.upper.items(), key=lambda item: item[1])
        res.gap = res.default / ref - 1 if ref > 0 else (0.0 if res.default == 0 else math.inf)
    return res


def check_small_delta(query, interval: float) -> CornerResult:
    """small-delta mode: the default's certified eps(delta) against exact / CF (proven terms) / PLD."""
    from tests.support.peers import pld_of_parts

    res = CornerResult(query.label(), [asdict(p) for p in query.parts], query.delta)
    mech, delta = query.mechanism(), query.delta
    try:
        def default():
            prof = ps.privacy_profile(mech)
            return max(float(prof.epsilon(delta)), 0.0), prof

        res.default, prof = _timed(res, "default", default)
        res.default_accountant = _source(prof, "epsilon_source", delta)
    except Exception as exc:  # noqa: BLE001
        res.refusal = f"{type(exc).__name__}: {str(exc)[:120]}"
        return res
    exact = exact_parts_epsilon(query.parts, delta)
    if exact is not None:
        res.lower["exact"] = res.upper["exact"] = exact
    else:
        cf = _timed(res, "cf", lambda: cf_bracket(mech, delta, CF_MAX_WORK))
        if cf is not None:
            res.lower["cf"], res.upper["cf"] = cf
        optimistic = None
        try:
            h = _interval(interval, res.default)
            tail = 1e-4 * delta
            optimistic, pessimistic = _timed(
                res, "pld", lambda: [pld_of_parts(query.parts, h, p, tail_mass_truncation=tail) for p in (False, True)])
            low = max(float(optimistic.get_epsilon_for_delta(delta)), 0.0)
            up = max(float(pessimistic.get_epsilon_for_delta(delta)), 0.0)
            if low <= up * (1 + RTOL):  # else dp-accounting's known breakdown: no reference at all
                res.lower["pld_optimistic"], res.upper["pld_pessimistic"] = low, up
        except Exception:  # noqa: BLE001
            optimistic = None
        proven = res.lower.get("cf")
        if proven is not None and res.upper.get("pld_pessimistic", math.inf) < proven * (1 - RTOL):
            # below CF's proven lower end: dp-accounting's floor, not an upper bound (kept for the record)
            res.dropped["pld_pessimistic"] = res.upper.pop("pld_pessimistic")
    for name, low in res.lower.items():
        if not res.default < low - RTOL * max(1.0, low):
            continue
        if name == "pld_optimistic":  # adjudicate: dp-accounting's own delta at the candidate, then a tilted FFT
            candidate_delta = float(optimistic.get_delta_for_epsilon(res.default)) if res.default > 0 else 1.0
            if candidate_delta <= delta * (1 + RTOL) + PLD_FLOOR:
                res.reference_errors.append(name)
                continue
            res.tilted = _timed(res, "tilted", lambda: tilted_delta(query.parts, res.default))
            if res.tilted <= delta * (1 + TILTED_RTOL):
                res.reference_errors.append(f"{name} (tilted FFT: {res.tilted:.6g})")
                continue
        res.violations.append(name)
    if res.upper:
        res.decided_by, ref = min(res.upper.items(), key=lambda item: item[1])
        res.gap = (res.default - ref) / max(ref, REL_FLOOR)
    return res


CHECKS = {"delta": (check_delta, DELTA_MODE_RANGE), "small-delta": (check_small_delta, SMALL_DELTA_RANGE)}


def _quantiles(values) -> dict:
    if not values:
        return {"n": 0}
    a = np.asarray(values, dtype=float)
    return {"n": int(a.size), **{k: float(np.quantile(a, p)) for k, p in
                                 (("min", 0), ("median", 0.5), ("p90", 0.9), ("p95", 0.95), ("p99", 0.99), ("max", 1))}}


def summarise(results: list[CornerResult], mode: str) -> dict:
    gaps = [r.gap for r in results if r.gap is not None and math.isfinite(r.gap)]
    decided: dict[str, int] = {}
    chose: dict[str, int] = {}
    for r in results:
        decided[r.decided_by] = decided.get(r.decided_by, 0) + 1
        chose[r.default_accountant] = chose.get(r.default_accountant, 0) + 1
    within = {f"within_{100 * t:g}%": (float(np.mean(np.asarray(gaps) <= t)) if gaps else math.nan)
              for t in (0.005, 0.01, 0.05)}
    worst = sorted((r for r in results if r.gap is not None), key=lambda r: -r.gap)[:5]
    return {
        "mode": mode,
        "mechanisms": len(results),
        "violations": sum(len(r.violations) for r in results),
        "violation_cases": [asdict(r) for r in results if r.violations],
        "reference_errors": sum(len(r.reference_errors) for r in results),
        "refusals": sum(r.refusal is not None for r in results),
        "references_dropped": sum(len(r.dropped) for r in results),
        "refusal_messages": sorted({r.refusal for r in results if r.refusal})[:5],
        "decided_by": decided,
        "default_chose": chose,
        "gap": {**_quantiles(gaps), **within},
        "default_seconds": _quantiles([r.timings["default"] for r in results if "default" in r.timings]),
        "worst": [{"gap": r.gap, "label": r.label, "delta": r.delta, "eps": r.eps, "default": r.default,
                   "default_accountant": r.default_accountant, "lower": r.lower, "upper": r.upper} for r in worst],
    }


def report(summary: dict) -> str:
    s, g, t = summary, summary["gap"], summary["default_seconds"]
    kind = "delta(eps), gap = default/reference - 1" if s["mode"] == "delta" else \
        "eps(delta) at delta in [1e-14, 1e-10], gap = (default - reference)/max(reference, 1e-3)"
    lines = [f"Mode {s['mode']}: {kind}; {s['mechanisms']} mechanisms",
             f"  violations {s['violations']} (reference errors {s['reference_errors']}), refusals {s['refusals']}",
             f"  decided by: {s['decided_by']}"]
    if g.get("n"):
        lines.append(f"  gap: median {100 * g['median']:+.4f}%, p90 {100 * g['p90']:+.4f}%, p95 {100 * g['p95']:+.4f}%, "
                     f"p99 {100 * g['p99']:+.4f}%, max {100 * g['max']:+.4f}%, min {100 * g['min']:+.4f}%; within 0.5%: "
                     f"{100 * g['within_0.5%']:.1f}%, 1%: {100 * g['within_1%']:.1f}%, 5%: {100 * g['within_5%']:.1f}%")
    if t.get("n"):
        lines.append(f"  default query seconds: median {t['median']:.3f}, p90 {t['p90']:.3f}, p99 {t['p99']:.3f}, "
                     f"max {t['max']:.3f}")
    for w in s["worst"][:3]:
        lines.append(f"  worst: {100 * w['gap']:+.3f}% {w['label']} delta={w['delta']:.3g} eps={w['eps']} "
                     f"default={w['default']:.6g} [{w['default_accountant']}] upper refs {w['upper']}")
    return "\n".join(lines)


def run(mode: str, queries, interval: float, json_path: str | None, quiet: bool) -> dict:
    """Check every query in ``mode``; the JSON file (if any) is rewritten after every case."""
    check, _ = CHECKS[mode]
    results = []
    for i, query in enumerate(queries):
        r = check(query, interval)
        results.append(r)
        if not quiet:
            flag = (" VIOLATION:" + ",".join(r.violations)) if r.violations else ""
            flag += f" REFUSED {r.refusal}" if r.refusal else ""
            gap = "-" if r.gap is None else f"{100 * r.gap:+.3f}%"
            at = f"eps={r.eps:<9.4g}" if mode == "delta" else f"delta={r.delta:8.2g}"
            print(f"[{i + 1:4d}] {r.label:<58} {at} {r.default_accountant:<22} value={r.default:10.5g} "
                  f"[{r.decided_by}] gap={gap:>9} {sum(r.timings.values()):6.2f}s{flag}", flush=True)
        if json_path:
            tmp = f"{json_path}.tmp"
            with open(tmp, "w") as fh:
                json.dump({"summary": summarise(results, mode), "cases": [asdict(r) for r in results]}, fh,
                          indent=1, default=str)
            os.replace(tmp, json_path)
    summary = summarise(results, mode)
    print(report(summary))
    return summary
