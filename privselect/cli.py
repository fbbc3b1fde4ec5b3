"""The ``privselect`` command line.

``privselect certify`` computes a certified epsilon for a mechanism described by flags;
with no flags it certifies the DP-SGD example of the docs (MNIST-scale: batch 256 of
60000, noise multiplier 1.1, 60 epochs, delta 1e-5).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from typing import Callable, Sequence

from . import __version__
from . import _validation as check
from .accounting import METHODS, CertificationError, privacy_profile
from .mechanisms import Gaussian, Laplace, Mechanism

DEFAULT_RATE = 256 / 60000
DEFAULT_STEPS = math.ceil(60 / DEFAULT_RATE)  # 60 epochs = 14063 steps


# -- flag values -------------------------------------------------------------------------
# Every numeric flag is parsed and range-checked by argparse with the library's own checks, so
# an error names the flag ("argument --steps: ...") rather than the library parameter it feeds
# (--steps is ``k`` of ``Mechanism.compose``). Constraints that tie several flags together are
# checked by the library; those errors are prefixed with the flags involved (``_flag_context``).


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None


def _integer(text: str) -> int | float:
    """An integer; also '1e3' (checked to be integral by the range check)."""
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None


def _flag(parse: Callable[[str], object], validate: Callable[[str, object], object]) -> Callable[[str], object]:
    """argparse ``type=``: parse the text, then validate it with a ``privselect._validation`` check."""

    def convert(text: str) -> object:
        value = parse(text)
        try:
            return validate("value", value)
        except (TypeError, ValueError) as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    convert.__name__ = getattr(validate, "__name__", "value")
    return convert


def _finite(name: str, value: object) -> float:
    v = check.real(name, value)
    if not math.isfinite(v):
        raise ValueError(f"{name} must be finite, got {value!r}")
    return v


def _whole(value: object) -> object:
    return int(value) if isinstance(value, float) and value.is_integer() else value


def _nonnegative_int(name: str, value: object) -> int:
    value = _whole(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{name} must be an integer >= 0, got {value!r}")
    return value


def _jobs(name: str, value: object) -> int:
    value = _whole(value)
    if isinstance(value, bool) or not isinstance(value, int) or not (value >= 1 or value == -1):
        raise ValueError(f"{name} must be an integer >= 1, or -1 (all cores), got {value!r}")
    return value


_POSITIVE = _flag(_number, check.positive)
_FLAG_TYPES = {
    "noise_multiplier": _POSITIVE,
    "scale": _POSITIVE,
    "rate": _flag(_number, check.half_open_unit),
    "steps": _flag(_integer, check.positive_int),
    "delta": _flag(_number, check.open_unit),
    "mean": _flag(_number, check.positive),
    "eta": _flag(_number, _finite),
    "n": _flag(_integer, check.positive_int),
    "seed": _flag(_integer, _nonnegative_int),
    "n_jobs": _flag(_integer, _jobs),
}


def _flag_context(flags: str, action: Callable[[], object]) -> object:
    """Run ``action``; a ValueError/TypeError from the library is re-raised prefixed with ``flags``."""
    try:
        return action()
    except (TypeError, ValueError) as exc:
        if isinstance(exc, CertificationError):
            raise
        raise ValueError(f"{flags}: {exc}") from None


def _mechanism_from_args(args: argparse.Namespace) -> Mechanism:
    if args.mechanism == "gaussian":
        step: Mechanism = Gaussian(args.noise_multiplier)
    else:
        step = Laplace(args.scale)
    if args.rate != 1.0:
        step = step.poisson_subsample(args.rate)
    return step.compose(args.steps)


def _certify(args: argparse.Namespace) -> int:
    noise = f"--noise-multiplier {args.noise_multiplier:g}" if args.mechanism == "gaussian" else f"--scale {args.scale:g}"
    mechanism = _flag_context(f"--mechanism {args.mechanism} {noise} --rate {args.rate:g} --steps {args.steps}",
                              lambda: _mechanism_from_args(args))
    if args.k != "none":
        return _certify_selection(args, mechanism)
    methods = list(METHODS) if args.method == "all" else [args.method]
    methods = [m for m in methods if m != "exact" or args.mechanism == "gaussian" and args.rate == 1.0]
    rows = []
    for method in methods:
        start = time.perf_counter()
        try:
            profile = privacy_profile(mechanism, method=method)
            lower, upper = profile.epsilon_bounds(args.delta)
        except (CertificationError, ValueError, NotImplementedError) as exc:
            rows.append({"method": method, "error": str(exc)})
            continue
        rows.append({
            "method": method,
            "epsilon_lower": None if method == "rdp" else lower,
            "epsilon": upper,
            "seconds": time.perf_counter() - start,
            "error_budget": profile.error_budget.to_dict(),
        })
    certified = [r for r in rows if "epsilon" in r]
    if not certified:
        print("no accountant could certify this mechanism:", file=sys.stderr)
        for r in rows:
            print(f"  {r['method']}: {r['error']}", file=sys.stderr)
        return 2
    best = min(certified, key=lambda r: r["epsilon"])
    report = {
        "privselect_version": __version__,
        "mechanism": repr(mechanism),
        "delta": args.delta,
        "epsilon": best["epsilon"],
        "method": best["method"],
        "results": rows,
    }
    print(f"mechanism: {mechanism!r}")
    print(f"delta:     {args.delta:g}")
    print(f"{'method':<8}{'eps lower':>12}{'eps upper':>12}{'seconds':>10}")
    for r in rows:
        if "error" in r:
            print(f"{r['method']:<8}  not certified: {r['error']}")
            continue
        low = "-" if r["epsilon_lower"] is None else f"{r['epsilon_lower']:.4f}"
        print(f"{r['method']:<8}{low:>12}{r['epsilon']:>12.4f}{r['seconds']:>10.2f}")
    print(f"certified: ({best['epsilon']:.4f}, {args.delta:g})-DP by {best['method']}")
    _write_json(args.json, report)
    return 0


def _write_json(path: str | None, payload: dict) -> None:
    if path:
        with open(path, "w", encoding="utf-8") as fh:
            json.dump(payload, fh, indent=2)
        print(f"wrote {path}")


def _k_from_args(args: argparse.Namespace):
    from .selection import Binomial, Geometric, Logarithmic, Poisson, TruncatedNegativeBinomial

    if args.k == "geometric":
        return Geometric(mean=args.mean)
    if args.k == "logarithmic":
        return Logarithmic(mean=args.mean)
    if args.k == "tnb":
        return TruncatedNegativeBinomial(args.eta, mean=args.mean)
    if args.k == "poisson":
        return Poisson(args.mean)
    return Binomial.from_mean(args.mean, args.n)


def _certify_selection(args: argparse.Namespace, mechanism: Mechanism) -> int:
    from .selection import certify

    extra = {"tnb": f" --eta {args.eta:g}", "binomial": f" --n {args.n}"}.get(args.k, "")
    k = _flag_context(f"--k {args.k} --mean {args.mean:g}{extra}", lambda: _k_from_args(args))
    cert = certify(mechanism, k, args.delta)
    print(f"mechanism of one run: {mechanism!r}")
    print(f"K: {cert.k!r} (mean {cert.k.mean:g}); only the best run is released")
    for family, value in cert.alternatives.items():
        print(f"  {family:<8}{value:>10.4f}")
    for note in cert.notes:
        print(f"  note: {note}")
    print(f"certified: ({cert.epsilon:.4f}, {args.delta:g})-DP by {cert.bound}")
    _write_json(args.json, cert.to_dict())
    return 0


def _demo(args: argparse.Namespace) -> int:
    from .demo import run_demo

    report = run_demo(seed=args.seed, n_jobs=args.n_jobs)
    rows = report["comparison"]
    print("privselect demo: DP-SGD softmax regression on scikit-learn's digits, tuned privately")
    print(f"  K ~ Geometric(mean={report['mean_k']:g}) runs (K itself is not released), delta = {report['delta']:g}")
    print("\nbest hyperparameters (the only run released):")
    for name, value in report["best_params"].items():
        print(f"  {name:<15}{value:.4g}" if isinstance(value, float) else f"  {name:<15}{value}")
    print(f"  noisy validation score (correct of {report['n_val']}): {report['best_score']:.1f}")
    print(f"  held-out test accuracy: {report['test_accuracy']:.3f}")
    print("\nprivacy of the whole tuning procedure at delta = {:g}:".format(report["delta"]))
    for label, value in rows:
        print(f"  {label:<58}{value:>8.3f}")
    cert = report["certificate"]
    print(f"\ncertified: ({cert['epsilon']:.3f}, {cert['delta']:g})-DP by {cert['bound']}")
    _write_json(args.json, cert)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="privselect", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"privselect {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    cert = sub.add_parser("certify", help="certify the privacy of a mechanism (default: the DP-SGD example)")
    cert.add_argument("--mechanism", choices=["gaussian", "laplace"], default="gaussian")
    cert.add_argument("--noise-multiplier", type=_FLAG_TYPES["noise_multiplier"], default=1.1,
                      help="Gaussian noise multiplier (sigma)")
    cert.add_argument("--scale", type=_FLAG_TYPES["scale"], default=1.0, help="Laplace scale")
    cert.add_argument("--rate", type=_FLAG_TYPES["rate"], default=DEFAULT_RATE,
                      help="Poisson sampling rate (1 = no sampling)")
    cert.add_argument("--steps", type=_FLAG_TYPES["steps"], default=DEFAULT_STEPS, help="number of composed steps")
    cert.add_argument("--delta", type=_FLAG_TYPES["delta"], default=1e-5)
    cert.add_argument("--method", choices=[*METHODS, "all"], default="all")
    cert.add_argument("--k", choices=["none", "geometric", "logarithmic", "tnb", "poisson", "binomial"],
                      default="none", help="certify the best of K runs (default: one run)")
    cert.add_argument("--mean", type=_FLAG_TYPES["mean"], default=10.0, help="mean of K")
    cert.add_argument("--eta", type=_FLAG_TYPES["eta"], default=1.0, help="eta of the truncated negative binomial")
    cert.add_argument("--n", type=_FLAG_TYPES["n"], default=100, help="n of the binomial")
    cert.add_argument("--json", metavar="PATH", help="write the certificate as JSON")
    cert.set_defaults(run=_certify)
    demo = sub.add_parser("demo", help="tune DP-SGD on the digits data set privately and print the certificate")
    demo.add_argument("--seed", type=_FLAG_TYPES["seed"], default=0)
    demo.add_argument("--n-jobs", type=_FLAG_TYPES["n_jobs"], default=1)
    demo.add_argument("--json", metavar="PATH", help="write the certificate as JSON")
    demo.set_defaults(run=_demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.run(args)
    except ValueError as exc:
        parser.error(str(exc))
        return 2  # pragma: no cover


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
