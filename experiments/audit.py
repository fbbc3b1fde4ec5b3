"""Empirical privacy audits: lower bounds on epsilon against privselect's certificates.

For each mechanism the auditor ([`privselect.audit`][privselect.audit]: Clopper-Pearson at 95% with a
Bonferroni correction over the thresholds, Jagielski et al. 2020, Nasr et al. 2021) returns an
empirical LOWER bound on epsilon(delta); the certificate is an UPPER bound. Every audit checks
``lower <= certified`` and reports the tightness ratio ``lower / certified`` (and
``lower / exact`` where the exact epsilon of the audited pair is known):

* the Gaussian mechanism, draws n = 1e4 .. 1e7 (the lower bound approaches the exact epsilon);
* Report-Noisy-Max (3 candidates), certificate KRW Thm 3.2, exact pair epsilon by quadrature;
* the private tuner (vectorised model, checked against ``PrivateTuner`` in the tests) with a
  synthetic Gaussian base whose profile is exact, for geometric, binomial and Poisson K;
* a deliberately broken tuner that also releases the non-winning scores: the auditor must
  find ``lower > certified`` (power);
* the real ``PrivateTuner`` code path through the non-vectorised interface;
* the adaptive tuner (``PrivateTuner(search=ps.AdaptiveSearch(...))``, DP-HyPO): randomized-response runs
  whose candidate decides which bit they report, a Parzen model learning from earlier released scores;
  the released (candidate, score) pair is audited against ``ps.certify_adaptive``;
* a full-tuner distinguishing test: the real ``PrivateTuner`` (engine, seeds, release) with
  randomized-response runs, each exactly ``PureDP(1)``, on D = {1} and D' = {0}, for
  K ~ Geometric(10) and Geometric(50). The released best score is a bit, so the exact epsilon
  of the whole tuner is known in closed form (``full_tuner_exact_epsilon``): the audit's lower
  bound must lie below it, and both below the certificate.

    python -m experiments.audit [--quick]        (full: ~6-8 min on one core)

Writes ``audit.csv`` (one row per audit) to ``experiments/results/`` (``quick/`` when quick).
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import numpy as np

import privselect as ps
from privselect import audit as A
from privselect.accounting.profile import discrete_profile
from privselect.selection.rnm import rnm_profile
from tests.support import audit as S
from tests.support.audit import LeakyTuner

NAME = "audit"
CONFIDENCE = 0.95


def _results_dir(quick: bool, out_dir) -> Path:
    base = Path(out_dir) if out_dir is not None else Path(__file__).resolve().parent / "results"
    path = base / "quick" if (quick and out_dir is None) else base
    path.mkdir(parents=True, exist_ok=True)
    return path


def _row(audit, mechanism, params, result: A.AuditResult, certified, exact=None, expect_violation=False):
    return {
        "audit": audit,
        "mechanism": mechanism,
        "params": params,
        "delta": result.delta,
        "n_per_side": result.n_samples[0],
        "n_thresholds": result.n_thresholds,
        "eps_lower": result.epsilon_lower,
        "eps_point_estimate": result.epsilon_estimate,
        "eps_exact": exact,
        "eps_certified": certified,
        "tightness_vs_certificate": result.epsilon_lower / certified if certified > 0 else math.nan,
        "tightness_vs_exact": (result.epsilon_lower / exact) if exact else None,
        "violation": result.epsilon_lower > certified,
        "expected_violation": expect_violation,
        "ok": (result.epsilon_lower > certified) == expect_violation,
        "rejection_set": f"{result.rejection_set} ({result.ordering})",
    }


# -- the audited mechanisms ------------------------------------------------------------------------


def gaussian_rnm_pmf(scores, sigma):
    """The exact RNM output law, normalised (quadrature error aside it sums to 1)."""
    p = S.gaussian_report_noisy_max_pmf(scores, sigma)
    return p / p.sum()


def best_score(out):
    return out["best_score"]


def transcript_llr(out):
    """Log-likelihood ratio (up to a positive factor) of everything the leaky tuner releases."""
    return out["best_score"] + out["losers_sum"] - 0.5 * (out["losers_count"] + 1)


def audit_gaussian(ns, sigmas, deltas, seed):
    rows = []
    for sigma in sigmas:
        mech = S.gaussian_sum_mechanism(sigma)
        for delta in deltas:
            exact = float(ps.gaussian_epsilon(delta, 1 / sigma))
            cert = ps.privacy_profile(ps.Gaussian(sigma), accountant="prv").epsilon(delta)
            for n in ns:
                r = A.audit(mech, np.zeros(5), np.r_[np.zeros(5), 1.0], delta=delta, n_samples=n, seed=seed,
                            confidence=CONFIDENCE)
                rows.append(_row("gaussian", f"Gaussian({sigma})", f"sigma={sigma}", r, cert, exact))
    return rows


def audit_rnm(n, sigmas, delta, seed):
    rows = []
    pairs = [((1.0, 0.0, 0.0), (0.0, 1.0, 1.0)), ((1.0, 0.0), (0.0, 1.0))]
    for sigma in sigmas:
        for x, x2 in pairs:
            m = len(x)
            cert = rnm_profile(ps.Gaussian(sigma), m, accountant="exact").epsilon(delta)
            exact = discrete_profile(gaussian_rnm_pmf(x, sigma), gaussian_rnm_pmf(x2, sigma)).epsilon(delta)
            r = A.audit(S.report_noisy_max_mechanism(ps.Gaussian(sigma)), np.array(x), np.array(x2), delta=delta,
                        n_samples=n, seed=seed, confidence=CONFIDENCE)
            rows.append(_row("report_noisy_max", f"RNM(Gaussian({sigma}), m={m})", f"x={x}, x'={x2}", r, cert,
                             exact))
    return rows


def k_families(mean):
    return [("geometric", ps.Geometric(mean=mean)), ("binomial", ps.Binomial.from_mean(mean, 2 * mean)),
            ("poisson", ps.Poisson(float(mean)))]


def audit_tuner(n, sigmas, deltas, seed):
    rows = []
    for sigma in sigmas:
        for label, k in k_families(10):
            for delta in deltas:
                cert = ps.certify(ps.Gaussian(sigma), k, delta, accountant="exact").epsilon
                r = A.audit(S.best_of_k_mechanism(k, ps.Gaussian(sigma)), np.array([0.0]), np.array([1.0]),
                            delta=delta, statistic=best_score, n_samples=n, seed=seed, confidence=CONFIDENCE)
                rows.append(_row("tuner", f"best of K ~ {label}(10), Gaussian({sigma}) runs", repr(k), r, cert))
    return rows


#: (K, sigma) where leaking the non-winning scores is clearly beyond the certificate.
BROKEN = [("geometric", ps.Geometric(mean=10), 2.0), ("binomial", ps.Binomial(10, 0.5), 1.0),
          ("poisson", ps.Poisson(5.0), 1.0), ("geometric", ps.Geometric(mean=30), 3.0)]


def audit_broken_tuner(n, delta, seed):
    rows = []
    for label, k, sigma in BROKEN:
        cert = ps.certify(ps.Gaussian(sigma), k, delta, accountant="exact").epsilon
        r = A.audit(S.best_of_k_mechanism(k, ps.Gaussian(sigma), leak=True), np.array([0.0]), np.array([1.0]),
                    delta=delta, statistic=transcript_llr, n_samples=n, seed=seed, confidence=CONFIDENCE)
        rows.append(_row("broken_tuner", f"LEAKY best of K ~ {label}, Gaussian({sigma}) runs", repr(k), r, cert,
                         expect_violation=True))
    return rows


def audit_real_tuner(n, seed):
    """The real PrivateTuner (honest and leaky) through the non-vectorised interface."""
    sigma, k, delta = 3.0, ps.Geometric(mean=30), 1e-2

    def train(params, data, rng):
        return float(data[params["j"]] + rng.normal(0.0, sigma))

    rows = []
    for label, cls, statistic, expect in (("real_tuner", ps.PrivateTuner, lambda o: o["best_score"][0], False),
                                          ("real_broken_tuner", LeakyTuner, lambda o: transcript_llr(o)[0], True)):
        tuner = cls(train, {"j": ps.space.Choice([0])}, ps.Gaussian(sigma), k, delta, backend="sequential",
                    accountant="exact")

        def run_once(data, rng, tuner=tuner):
            tuner.seed = int(rng.integers(2**32))
            res = tuner.run(np.asarray(data))
            out = {"best_score": np.array([res.best_score])}
            if isinstance(res.best_output, dict):
                out.update({key: np.array([v]) for key, v in res.best_output.items()})
            return out

        r = A.audit(run_once, [0.0], [1.0], delta=delta, statistic=statistic, n_samples=n, seed=seed,
                    confidence=CONFIDENCE)
        rows.append(_row(label, f"{cls.__name__}, K ~ geometric(30), Gaussian({sigma}) runs", repr(k), r,
                         tuner.certificate.epsilon, expect_violation=expect))
    return rows


def randomized_response_trainer(epsilon: float):
    """One run is exactly ``PureDP(epsilon)``: the record's bit, kept with probability e^eps / (1 + e^eps)."""
    keep = math.exp(epsilon) / (1.0 + math.exp(epsilon))

    def train(params, data, rng):
        bit = float(data[0])
        return bit if rng.random() < keep else 1.0 - bit

    return train


def full_tuner_exact_epsilon(k, epsilon: float, delta: float) -> float:
    """Exact epsilon(delta) of best-of-K randomized response on D = {1} vs D' = {0}.

    The winner's score is 0 only if every run output 0: P_D[0] = E[q^K], P_D'[0] = E[p^K] with
    p = e^eps / (1 + e^eps), q = 1 - p. For a two-point output the hockey-stick divergence is
    max(P_D'[0] - e^eps' P_D[0], P_D[1] - e^eps' P_D'[1]), so eps'(delta) is the larger log-ratio
    after taking delta off the larger side (both directions).
    """
    p = math.exp(epsilon) / (1.0 + math.exp(epsilon))
    ks = np.arange(k.min_k, 200_000)
    pmf = k.pmf(ks)
    zero_d, zero_d2 = float(np.sum(pmf * (1 - p) ** ks)), float(np.sum(pmf * p ** ks))
    pairs = [(zero_d2, zero_d), (1 - zero_d, 1 - zero_d2), (zero_d, zero_d2), (1 - zero_d2, 1 - zero_d)]
    return max(0.0, *(math.log((a - delta) / b) for a, b in pairs if a > delta))


FULL_TUNER_MEANS = (10, 50)


def audit_full_tuner(n, delta, seed, means=FULL_TUNER_MEANS, epsilon: float = 1.0):
    """The real PrivateTuner end to end (seeds drawn by the auditor's generator), randomized-response runs."""
    rows = []
    for mean in means:
        k = ps.Geometric(mean=mean)
        tuner = ps.PrivateTuner(randomized_response_trainer(epsilon), {"j": ps.space.Choice([0])},
                                ps.PureDP(epsilon), k, delta, backend="sequential")

        def run_once(data, rng, tuner=tuner):
            tuner.seed = int(rng.integers(2**63))
            return tuner.run(np.asarray(data)).best_score

        r = A.audit(run_once, [1.0], [0.0], delta=delta, thresholds=[0.5], n_samples=n, seed=seed,
                    confidence=CONFIDENCE)
        rows.append(_row("full_tuner", f"PrivateTuner, K ~ geometric({mean}), PureDP({epsilon}) randomized response",
                         repr(k), r, tuner.certificate.epsilon, full_tuner_exact_epsilon(k, epsilon, delta)))
    return rows


def adaptive_rr_trainer(epsilon: float):
    """Candidate j = 0 reports the record's bit, j = 1 its complement, each by randomized response (PureDP(eps))."""
    keep = math.exp(epsilon) / (1.0 + math.exp(epsilon))

    def train(params, data, rng):
        bit = float(data[0]) if params["j"] == 0 else 1.0 - float(data[0])
        return bit if rng.random() < keep else 1.0 - bit

    return train


def audit_adaptive_tuner(n, delta, seed, mean: float = 10, epsilon: float = 1.0, ratio=(2.0, 0.75)):
    """The real PrivateTuner with an adaptive search (Parzen, DP-HyPO densities), randomized-response runs:
    the statistic is the released pair (candidate, score) as 2 j + score; certificate ps.certify_adaptive."""
    k = ps.Geometric(mean=mean)
    search = ps.AdaptiveSearch(model=ps.Parzen(min_observations=2, gamma=0.5), density_ratio=ratio)
    tuner = ps.PrivateTuner(adaptive_rr_trainer(epsilon), {"j": ps.space.Choice([0, 1])}, ps.PureDP(epsilon), k,
                            delta, search=search)

    def run_once(data, rng, tuner=tuner):
        tuner.seed = int(rng.integers(2**63))
        result = tuner.run(np.asarray(data))
        return 2.0 * result.best_params["j"] + result.best_score

    r = A.audit(run_once, [1.0], [0.0], delta=delta, thresholds=[0.5, 1.5, 2.5], n_samples=n, seed=seed,
                confidence=CONFIDENCE)
    return [_row("adaptive_tuner", f"PrivateTuner(search=Parzen, C/c={ratio[0]:g}/{ratio[1]:g}), K ~ geometric({mean}), "
                 f"PureDP({epsilon}) randomized response", repr(k), r, tuner.certificate.epsilon)]


def run(quick: bool = False, out_dir=None) -> dict:
    started = time.perf_counter()
    seed = 2024
    if quick:
        rows = (audit_gaussian([10**4, 10**5], [1.0], [1e-2], seed) + audit_rnm(10**5, [1.0], 1e-2, seed)
                + audit_tuner(10**5, [1.0], [1e-2], seed) + audit_broken_tuner(2 * 10**5, 1e-2, seed)
                + audit_real_tuner(1000, seed) + audit_full_tuner(1000, 1e-3, seed)
                + audit_adaptive_tuner(200, 1e-3, seed))
    else:
        rows = (audit_gaussian([10**4, 10**5, 10**6, 10**7], [0.5, 1.0, 2.0], [1e-2, 1e-3], seed)
                + audit_rnm(10**6, [0.5, 1.0, 2.0], 1e-2, seed)
                + audit_tuner(10**6, [1.0, 2.0], [1e-2, 1e-3], seed)
                + audit_broken_tuner(10**6, 1e-2, seed)
                + audit_real_tuner(3000, seed) + audit_full_tuner(10_000, 1e-3, seed)
                + audit_adaptive_tuner(3000, 1e-3, seed))
    path = _results_dir(quick, out_dir) / f"{NAME}.csv"
    columns = list(rows[0])
    with open(path, "w") as fh:
        fh.write(",".join(columns) + "\n")
        fh.writelines(",".join(json.dumps(row[c]) if isinstance(row[c], str) else repr(row[c]) for c in columns) + "\n" for row in rows)
    honest = [r for r in rows if not r["expected_violation"]]
    broken = [r for r in rows if r["expected_violation"]]
    tight = np.array([r["tightness_vs_certificate"] for r in honest])
    summary = {
        "audits": len(rows),
        "honest_audits": len(honest),
        "violations_of_certificates": sum(r["violation"] for r in honest),
        "broken_tuner_audits": len(broken),
        "broken_tuner_caught": sum(r["violation"] for r in broken),
        "tightness_vs_certificate": {
            audit: {"min": float(np.min(v)), "median": float(np.median(v)), "max": float(np.max(v))}
            for audit in sorted({r["audit"] for r in honest})
            for v in [np.array([r["tightness_vs_certificate"] for r in honest if r["audit"] == audit])]
        },
        "tightness_vs_exact": {
            audit: {"min": float(np.min(v)), "median": float(np.median(v)), "max": float(np.max(v))}
            for audit in sorted({r["audit"] for r in honest if r["tightness_vs_exact"] is not None})
            for v in [np.array([r["tightness_vs_exact"] for r in honest
                                if r["audit"] == audit and r["tightness_vs_exact"] is not None])]
        },
        "overall_tightness_median": float(np.median(tight)),
        "all_ok": all(r["ok"] for r in rows),
        "csv": str(path),
        "seconds": time.perf_counter() - started,
    }
    return {"summary": summary, "rows": rows}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out-dir", default=None)
    args = parser.parse_args(argv)
    result = run(quick=args.quick, out_dir=args.out_dir)
    for r in result["rows"]:
        exact = f"{r['eps_exact']:.3f}" if r["eps_exact"] else "  -  "
        print(f"{r['audit']:<17} {r['mechanism']:<52} delta={r['delta']:<7g} n={r['n_per_side']:<9d} "
              f"lower={r['eps_lower']:7.3f} exact={exact:>6} cert={r['eps_certified']:7.3f} "
              f"lower/cert={r['tightness_vs_certificate']:.3f}{'  CAUGHT' if r['violation'] else ''}"
              f"{'' if r['ok'] else '  <-- UNEXPECTED'}")
    print(json.dumps(result["summary"], indent=2))
    return 0 if result["summary"]["all_ok"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
