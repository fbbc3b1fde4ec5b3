"""The ``report`` and ``demo`` subcommands of ``privselect`` (loaded only when one runs: ``--help`` stays light)."""

from __future__ import annotations

import argparse
import json

__all__ = ["report_command", "demo_command"]


def report_command(args: argparse.Namespace) -> int:
    from .report import Provenance, Report
    from .selection.certify import Certificate

    try:
        with open(args.certificate, "rb") as handle:
            data = handle.read()
    except OSError as exc:
        raise ValueError(f"argument CERT: cannot read {args.certificate!r} ({exc.strerror})") from None
    try:
        cert = Certificate.from_json(data.decode("utf-8"))
    except (ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"argument CERT: {args.certificate!r} is not a certificate as Certificate.to_json() writes it "
                         f"({type(exc).__name__}: {exc})") from None
    built = Report.of(cert, dataset_size=args.dataset_size, provenance=Provenance.of_bytes(data, f"file {args.certificate}"))
    provenance = built.provenance
    if args.html is not None:
        try:
            with open(args.html, "w", encoding="utf-8") as handle:
                handle.write(built.html())
        except OSError as exc:
            raise ValueError(f"argument --html: cannot write {args.html!r} ({exc.strerror})") from None
    if args.json:
        made = {"made": provenance.made, "certificate_sha256": provenance.sha256} if provenance else {}
        print(json.dumps({"certificate": cert.to_dict(), "risk": built.tuning.to_dict(), "dataset_size": args.dataset_size,
                          "one_run_risk": None if built.run is None else built.run.to_dict(), **made}, indent=2))
        return 0
    print(built.text(), end="")
    if args.html is not None:
        print(f"\nwrote {args.html}")
    return 0


# -- demo --------------------------------------------------------------------------------


def demo_command(args: argparse.Namespace) -> int:
    from .apps.demo import run_demo

    report = run_demo(seed=args.seed, n_jobs=args.n_jobs)
    cert = report["certificate"]
    if args.json:
        print(json.dumps(cert, indent=2))
        return 0
    print("privselect demo: DP-SGD softmax regression on scikit-learn's digits, tuned privately")
    print(f"  K ~ Geometric(mean={report['mean_k']:g}) runs (K itself is not released), delta = {report['delta']:g}")
    print("\nbest hyperparameters (the only run released):")
    for name, value in report["best_params"].items():
        print(f"  {name:<15}{value:.4g}" if isinstance(value, float) else f"  {name:<15}{value}")
    print(f"  noisy validation score (correct of {report['n_val']}): {report['best_score']:.1f}")
    print(f"  held-out test accuracy: {report['test_accuracy']:.3f}")
    print("\nprivacy of the whole tuning procedure at delta = {:g}:".format(report["delta"]))
    for label, value in report["comparison"]:
        print(f"  {label:<58}{value:>8.3f}")
    print(f"\ncertified: ({cert['epsilon']:.3f}, {cert['delta']:g})-DP by {cert['theorem']}")
    return 0
