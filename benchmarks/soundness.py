"""Soundness sweep: privselect's certified epsilon against dp-accounting's PLD bracket.

Random Poisson-subsampled Gaussian compositions (sigma log-uniform in [0.3, 50], sampling
rate q log-uniform in [1e-4, 1] with q = 1 in 15% of the cases, k log-uniform in [1, 1e5],
delta log-uniform in [1e-12, 1e-2]). For each case and each neighbouring direction (remove,
add; one direction when q = 1):

* privselect: the certified upper epsilon(delta) and its own lower bracket, from the PRV
  accountant built for this delta (``target_delta=delta``); below the PRV floating-point
  floor (``CertificationError``) the CF accountant, as ``ps.certify`` does;
* dp-accounting 0.6.0 PLD: the optimistic estimate (``pessimistic_estimate=False``, a lower
  estimate of the true epsilon) and the pessimistic one (connect-the-dots, an upper bound),
  read per direction from ``_pmf_remove`` / ``_pmf_add`` (same direction convention as
  privselect: remove = H(mixture || base));
* q = 1: the exact value (mu-GDP with mu = sqrt(k) / sigma).

A **violation candidate** is a certified epsilon below a lower reference: the PLD optimistic
value (when it is self-consistent, i.e. not above dp-accounting's own pessimistic value) or
the exact value. A candidate is adjudicated against an exact value: the closed form (q = 1)
or, for k <= 2, nested adaptive quadrature of the hockey-stick divergence
(:func:`small_k_epsilon`). If the certificate is at or above the exact value, the candidate
is a **reference error** (dp-accounting's "optimistic" value was above the truth: this
happens at delta ~ 1e-12, where its FFT composition is below its floating-point floor);
otherwise, and whenever no exact value is available, it is a **violation**. Violations must
never happen. Likewise a **bracket disagreement** is privselect's lower bracket above an
upper reference (pessimistic PLD or exact), adjudicated the same way; the unadjudicated ones
are listed with the accountant that produced them. Reported: the distribution of the gap
(certified - pessimistic PLD) and (certified - exact).

The PLD mesh is ``--interval`` (default 1e-4), coarsened for very large epsilon so that the
composed PLD stays below ~2e6 points (a coarser optimistic value is still a lower value).

    python -m benchmarks.soundness [--cases 300] [--seed 0] [--interval 1e-4] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import logging
from dataclasses import asdict

import numpy as np

from tests.support.soundness import CaseResult, check_case, sample_cases, summarise

__all__ = ["run", "main"]


def run(n_cases: int, seed: int, interval: float) -> tuple[list[CaseResult], dict]:
    rng = np.random.default_rng(seed)
    results = [check_case(case, interval) for case in sample_cases(n_cases, rng)]
    return results, summarise(results)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--interval", type=float, default=1e-4)
    parser.add_argument("--json", default=None, help="write every case and the summary here")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    rng = np.random.default_rng(args.seed)
    results = []
    for i, case in enumerate(sample_cases(args.cases, rng)):
        r = check_case(case, args.interval)
        results.append(r)
        flag = " VIOLATION" if r.violations else (" BRACKET" if r.bracket_errors else "")
        if any(d.reference_error for d in r.directions):
            flag += " REFERENCE-ERROR(exact: " + ", ".join(f"{d.direction}={d.exact_small_k:.10g}" for d in r.directions
                                                          if d.exact_small_k is not None) + ")"
        note = r.declined or r.pld_error or ""
        print(f"[{i + 1:4d}] sigma={case.sigma:8.4g} q={case.q:9.3g} k={case.k:6d} delta={case.delta:8.2g} "
              f"{r.method:3s} eps={r.certified:11.5g} "
              + " ".join(f"{d.direction}:pld=[{d.pld_optimistic if d.pld_optimistic is not None else float('nan'):.5g},"
                         f"{d.pld_pessimistic if d.pld_pessimistic is not None else float('nan'):.5g}]"
                         for d in r.directions)
              + f" {r.seconds:6.2f}s{flag} {note}", flush=True)
    summary = summarise(results)
    print(json.dumps(summary, indent=2))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"summary": summary, "cases": [asdict(r) for r in results],
                       "args": vars(args)}, fh, indent=1, default=str)
    return 1 if summary["violations"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
