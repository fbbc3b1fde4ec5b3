#!/usr/bin/env python
"""Reference epsilons from the `random-allocation` package (Feldman & Shenfeld,
arXiv 2502.08202), for cross-checking privselect.

Run in its own environment (the package pins its own numpy, numba and dp-accounting), from the repository root:
    python3 -m venv /tmp/ra-venv && /tmp/ra-venv/bin/pip install random-allocation==1.0.5 pandas
    /tmp/ra-venv/bin/python benchmarks/random_allocation_reference.py tests/data/random_allocation_reference.json
(about 10 minutes of CPU). It writes the per-cell summary the tests read; every method's record goes to the
file named by a second argument, if given.

Scheme: one record is placed in exactly k=1 of t steps per epoch (uniformly at random),
Gaussian noise multiplier sigma per step, sensitivity 1, add/remove neighbours,
E epochs (fresh allocation each epoch).
"""
import os

# Keep CPU use modest on a shared 2-core machine (must precede numpy/numba imports).
for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ[_v] = "1"

import contextlib
import io
import json
import math
import platform
import signal
import sys
import time
from importlib import metadata

from random_allocation.comparisons.structs import Direction, PrivacyParams, SchemeConfig, Verbosity
from random_allocation.external_sources.Monte_Carlo_external import BnBAccountant
from random_allocation.other_schemes.local import local_epsilon
from random_allocation.other_schemes.poisson import Poisson_epsilon_PLD, Poisson_epsilon_RDP
from random_allocation.random_allocation_scheme import (
    allocation_epsilon_analytic,
    allocation_epsilon_combined,
    allocation_epsilon_decomposition,
    allocation_epsilon_direct,
    allocation_epsilon_lower_bound,
    allocation_epsilon_RDP_DCO,
    allocation_epsilon_recursive,
)

COMMAND = ("/tmp/ra-venv/bin/python benchmarks/random_allocation_reference.py "
           "tests/data/random_allocation_reference.json")
TIMEOUT_S = 120

# Integer Renyi orders for the 'Direct' remove-direction RDP (package requires them).
# Orders above ~50 never help in these cells: the allocation RDP blows up once
# alpha^2/(2 sigma^2) > (alpha-1) ln t; the package prints an 'alpha overflow'
# warning into the note if the largest order is the minimiser.
DIRECT_ALPHAS = list(range(2, 41)) + [44, 48, 52]
LB_DISCRETIZATION = 1e-5  # for the multi-epoch lower bound PLD (optimistic, floor-rounded)

LARGE = [(s, t, 60, d) for s in (0.8, 1.1, 2.0) for t in (100, 234, 1000) for d in (1e-5, 1e-10)]
SMALL = [(s, t, e, d) for s in (0.5, 1.0, 2.0) for t in (2, 3) for e in (1, 2) for d in (1e-3, 1e-5)]

M_ANALYTIC = "Allocation (Our - Analytic)"
M_DIRECT = "Allocation (Our - Direct)"
M_DECOMP = "Allocation (Our - Decomposition)"
M_RECURSIVE = "Allocation (Our - Recursive)"
M_COMBINED = "Allocation (Our - Combined)"
M_DCO = "Allocation (DCO25 - RDP)"
M_LOCAL = "Local"
M_LB = "Allocation (CGHKKLMSZ24 - Lower Bound)"
M_POIS_PLD = "Poisson (PLD)"
M_POIS_RDP = "Poisson (RDP)"

UPPER_METHODS = [
    (M_ANALYTIC, allocation_epsilon_analytic,
     "random_allocation_scheme/analytic.py::allocation_epsilon_analytic; analytic upper bound "
     "(reduction to Poisson PLD with inflated sampling prob); inf when its condition fails"),
    (M_DIRECT, allocation_epsilon_direct,
     "random_allocation_scheme/direct.py::allocation_epsilon_direct; add: Gaussian_epsilon(sigma*sqrt(t/(kE)))"
     "+(1-1/t)/(2 sigma^2) [shift added ONCE regardless of E]; remove: exact integer-order RDP of allocation "
     "composed kE times, RDP->DP conversion"),
    (M_DECOMP, allocation_epsilon_decomposition,
     "random_allocation_scheme/decomposition.py::allocation_epsilon_decomposition; upper bound via Poisson PLD "
     "(dp_accounting, pessimistic); package supports only num_epochs=1, num_selected=1"),
    (M_RECURSIVE, allocation_epsilon_recursive,
     "random_allocation_scheme/recursive.py::allocation_epsilon_recursive; upper bound via Poisson PLD with "
     "sampling prob e^{2 eps'}/t plus decomposition tail"),
    (M_COMBINED, allocation_epsilon_combined,
     "random_allocation_scheme/combined.py::allocation_epsilon_combined; per direction min of Local, Analytic, "
     "Direct, Recursive, Decomposition(E=1 only)"),
    (M_DCO, allocation_epsilon_RDP_DCO,
     "random_allocation_scheme/RDP_DCO.py::allocation_epsilon_RDP_DCO; RDP upper bound of DCO25 composed E times, "
     "default orders 2..201 + 50 log-spaced to 1e4"),
    (M_LOCAL, local_epsilon,
     "other_schemes/local.py::local_epsilon; no amplification: Gaussian with sigma/sqrt(kE); direction-independent"),
]


class _Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise _Timeout()


signal.signal(signal.SIGALRM, _alarm)


def timed(fn):
    """Run fn() with a wall-clock guard; return (value, cpu_seconds, error, captured stdout)."""
    buf = io.StringIO()
    t0 = time.process_time()
    err = None
    val = None
    signal.alarm(TIMEOUT_S)
    try:
        with contextlib.redirect_stdout(buf):
            val = fn()
    except _Timeout:
        err = f"timeout > {TIMEOUT_S} s (skipped)"
    except Exception as e:  # record failures, do not abort
        err = f"{type(e).__name__}: {e}"
    finally:
        signal.alarm(0)
    cpu = time.process_time() - t0
    return val, cpu, err, buf.getvalue().strip()


def fnum(x):
    if x is None:
        return None
    x = float(x)
    if math.isinf(x):
        return "inf"
    if math.isnan(x):
        return "nan"
    return x


def rec(s, t, e, d, method, kind, direction, eps, cpu, note):
    return dict(sigma=s, steps=t, participations=1, epochs=e, delta=d, method=method, kind=kind,
                direction=direction, epsilon=fnum(eps), cpu_seconds=round(cpu, 3), note=note)


def cfg():
    return SchemeConfig(allocation_direct_alpha_orders=list(DIRECT_ALPHAS), verbosity=Verbosity.WARNINGS)


def do_cell(s, t, e, d):
    out = []
    p = PrivacyParams(sigma=s, num_steps=t, num_selected=1, num_epochs=e, delta=d)
    for name, fn, where in UPPER_METHODS:
        vals = {}
        for dr in (Direction.ADD, Direction.REMOVE):
            v, cpu, err, log = timed(lambda: fn(params=p, config=cfg(), direction=dr))
            note = where
            if err:
                note += f" | FAILED: {err}"
            if log:
                note += f" | package output: {log}"
            if name == M_DIRECT and dr == Direction.ADD and e > 1:
                note += (" | CAVEAT: for E>1 the (1-1/t)/(2 sigma^2) shift is added once, not E times; "
                         "independent Monte Carlo (mc_add_direction_check.py) shows this can UNDERSTATE the "
                         "add-direction epsilon, so treat as not a valid bound for E>1")
            if name == M_COMBINED and e > 1:
                note += " | for E>1 inherits the Direct add-direction caveat"
            vals[dr.value] = (None if err else v, cpu)
            out.append(rec(s, t, e, d, name, "upper", dr.value, None if err else v, cpu, note))
        a, r = vals["add"][0], vals["remove"][0]
        both = None if (a is None or r is None) else max(a, r)
        out.append(rec(s, t, e, d, name, "upper", "both", both, vals["add"][1] + vals["remove"][1],
                       where + " | both = max(add, remove), identical to the package's handle_directions(BOTH)"))

    # Lower bound (remove-direction pair P = mixture_t N(e_t, s^2 I), Q = N(0, s^2 I), max-statistic post-processing).
    if e == 1:
        v, cpu, err, log = timed(lambda: allocation_epsilon_lower_bound(params=p, config=cfg(), direction=Direction.BOTH))
        note = ("random_allocation_scheme/lower_bound.py::allocation_epsilon_lower_bound -> BnBAccountant."
                "get_deltas_lower_bound (ShuffleAccountant(mean_upper=1, mean_lower=0)); direction argument is "
                "ignored by the package: it is the remove-direction pair; brentq inversion rtol 1e-3 on the side "
                "delta_LB(eps) <= delta")
    else:
        v, cpu, err, log = timed(lambda: BnBAccountant().lower_bound_accountant.get_epsilons(
            float(s), (float(d),), int(t), int(e), True, LB_DISCRETIZATION)[0])
        note = ("package wrapper allocation_epsilon_lower_bound refuses num_epochs>1; computed by calling the same "
                "package object directly: BnBAccountant().lower_bound_accountant.get_epsilons(sigma,(delta,),t,E,"
                f"reshuffle=True,discretization={LB_DISCRETIZATION}) (external_sources/Monte_Carlo_external.py, "
                "ShuffleAccountant.get_epsilons, pessimistic_estimate=False = lower bound per its docstring); "
                "remove-direction pair")
    if err:
        note += f" | FAILED: {err}"
    if log:
        note += f" | package output: {log}"
    out.append(rec(s, t, e, d, M_LB, "lower", "remove", None if err else v, cpu, note))

    # Poisson subsampling at rate 1/t, t*E steps.
    pp = PrivacyParams(sigma=s, num_steps=t, num_selected=1, num_epochs=e, delta=d)
    for dr in (Direction.ADD, Direction.REMOVE, Direction.BOTH):
        v, cpu, err, log = timed(lambda: Poisson_epsilon_PLD(params=pp, config=cfg(), sampling_prob=1.0 / t, direction=dr))
        note = ("other_schemes/poisson.py::Poisson_epsilon_PLD, rate 1/t, t*E compositions, dp_accounting PLD "
                "pessimistic, discretization 1e-4" + (f" | FAILED: {err}" if err else ""))
        out.append(rec(s, t, e, d, M_POIS_PLD, "poisson", dr.value, None if err else v, cpu, note))
    v, cpu, err, log = timed(lambda: Poisson_epsilon_RDP(params=pp, config=cfg()))
    note = ("other_schemes/poisson.py::Poisson_epsilon_RDP, rate 1/t, t*E compositions, dp_accounting RdpAccountant "
            "default orders; BOTH only" + (f" | FAILED: {err}" if err else ""))
    out.append(rec(s, t, e, d, M_POIS_RDP, "poisson", "both", None if err else v, cpu, note))
    return out


def summarize(records):
    cells = {}
    for r in records:
        key = (r["sigma"], r["steps"], r["epochs"], r["delta"])
        cells.setdefault(key, []).append(r)
    summ = []
    for (s, t, e, d), rs in cells.items():
        def get(method, kind, direction):
            for r in rs:
                if r["method"] == method and r["kind"] == kind and r["direction"] == direction:
                    return r["epsilon"]
            return None

        def num(x):
            return x if isinstance(x, float) else (math.inf if x == "inf" else None)

        uppers = {m: get(m, "upper", "both") for m, _, _ in UPPER_METHODS}
        valid = {m: num(v) for m, v in uppers.items() if num(v) is not None}
        best = min(valid.items(), key=lambda kv: kv[1]) if valid else (None, None)
        if e > 1:
            strict = {m: v for m, v in valid.items() if m not in (M_DIRECT, M_COMBINED)}
        else:
            strict = valid
        best_strict = min(strict.items(), key=lambda kv: kv[1]) if strict else (None, None)
        lb = num(get(M_LB, "lower", "remove"))
        pois = num(get(M_POIS_PLD, "poisson", "both"))
        # Per-direction bests. For E>1 the Direct add value (and hence Combined add) is excluded
        # because its shift term is not composed over epochs (see caveat / mc_add_direction_check.json).
        excl_add = (M_DIRECT, M_COMBINED) if e > 1 else ()
        adds = {m: num(get(m, "upper", "add")) for m, _, _ in UPPER_METHODS if m not in excl_add}
        rems = {m: num(get(m, "upper", "remove")) for m, _, _ in UPPER_METHODS}
        adds = {m: v for m, v in adds.items() if v is not None}
        rems = {m: v for m, v in rems.items() if v is not None}
        ba = min(adds.items(), key=lambda kv: kv[1])
        br = min(rems.items(), key=lambda kv: kv[1])
        bboth = max(ba[1], br[1])
        summ.append(dict(
            sigma=s, steps=t, epochs=e, delta=d,
            best_upper_both_single_method=fnum(best[1]), best_upper_single_method=best[0],
            best_upper_both_single_method_excluding_direct_for_multi_epoch=fnum(best_strict[1]),
            best_upper_single_method_excluding_direct_for_multi_epoch=best_strict[0],
            best_upper_add=fnum(ba[1]), best_upper_add_method=ba[0],
            best_upper_remove=fnum(br[1]), best_upper_remove_method=br[0],
            best_upper_both=fnum(bboth),
            best_upper_both_note="max(best valid add, best remove) across methods; Direct/Combined add excluded when epochs>1",
            uppers_both={m: uppers[m] for m in uppers},
            lower_remove=fnum(lb), poisson_pld_both=fnum(pois),
            lower_le_all_uppers=(None if lb is None else all(lb <= v + 1e-9 for v in valid.values())),
            lower_le_all_remove_uppers=(None if lb is None else all(lb <= v + 1e-9 for v in rems.values())),
            best_upper_both_over_poisson=(None if (pois is None or pois == 0) else fnum(bboth / pois)),
        ))
    return summ


def main():
    records = []
    for cell in LARGE + SMALL:
        t0 = time.process_time()
        records.extend(do_cell(*cell))
        print(f"done {cell} cpu={time.process_time() - t0:.1f}s", file=sys.stderr, flush=True)
    doc = dict(
        command=COMMAND,
        package="random-allocation",
        package_version=metadata.version("random-allocation"),
        python=sys.version.split()[0] + " (" + platform.platform() + ")",
        dependency_versions={k: metadata.version(k) for k in ("dp_accounting", "numpy", "scipy", "numba", "pandas")},
        install=("python3 -m venv /tmp/ra-venv && /tmp/ra-venv/bin/pip install random-allocation==1.0.5 pandas "
                 "(pandas is imported by the package but not declared as a dependency)"),
        setting=("k=1 random allocation (each record in exactly 1 of t steps per epoch), Gaussian noise multiplier "
                 "sigma, sensitivity 1, add/remove adjacency; epochs composed with fresh allocation"),
        direction_convention=("package Direction enum: 'add' / 'remove' / 'both'=max(add,remove). In the BnB code "
                              "(external_sources/Monte_Carlo_external.py::AdjacencyType) REMOVE means upper measure "
                              "= mixture with the record, lower = N(0, sigma^2 I); ADD is the reverse."),
        direct_alpha_orders=DIRECT_ALPHAS,
        summary=summarize(records),
    )
    with open(sys.argv[1], "w") as f:
        json.dump(doc, f, indent=1)
    if len(sys.argv) > 2:
        with open(sys.argv[2], "w") as f:
            json.dump(dict(doc, records=records), f, indent=1)
    print(f"wrote {sys.argv[1]} ({len(records)} records)", file=sys.stderr)


if __name__ == "__main__":
    main()
