"""Command line: ``privselect certify`` (privacy of a DP-SGD-style run, or of the best of K runs), ``privselect
calibrate`` (the noise multiplier, or the steps, for a target epsilon or attack risk), ``privselect report``
(what a certificate means: the guarantee in words and certified attack risks) and ``privselect demo``.

The flags of ``certify`` speak the Opacus / TF-Privacy vocabulary: a noise multiplier, a Poisson
sampling rate (``--sample-rate``, or ``--batch-size`` with ``--dataset-size``), a length
(``--steps`` or ``--epochs``), a target delta and an accountant; ``--k geometric:10`` certifies
releasing the best of K ~ Geometric(mean 10) such runs. Every error names the flag it comes from.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any

from . import __version__

#: The DP-SGD example of the docs: batch 256 of 60000, noise multiplier 1.1, 60 epochs, delta 1e-5.
DEFAULT_NOISE_MULTIPLIER = 1.1
DEFAULT_RATE = 256 / 60000
DEFAULT_EPOCHS = 60
DEFAULT_DELTA = 1e-5

_DESCRIPTION = "privselect: certified privacy for differentially private training and hyperparameter selection."

_CERTIFY_DESCRIPTION = """\
Certify the privacy of one noisy-training run described as in Opacus / TF-Privacy, or
(with --k) of releasing the best of K such runs. Prints epsilon at --delta."""

_CERTIFY_EPILOG = """\
examples:
  privselect certify                                      the DP-SGD example (batch 256 of 60000, sigma 1.1, 60 epochs)
  privselect certify --noise-multiplier 1.0 --batch-size 4096 --dataset-size 50000 --epochs 100
  privselect certify --noise-multiplier 1.0 --sample-rate 4096/50000 --steps 1221 --accountant prv
  privselect certify --noise-multiplier 2 --sample-rate 0.01 --epochs 50 --k geometric:10 --json

K laws for --k (mean first; extra parameters after commas):
  geometric:MEAN   logarithmic:MEAN   poisson:MEAN   tnb:MEAN,eta=ETA   binomial:MEAN,n=N

One run is Gaussian(noise multiplier).poisson_subsample(rate).compose(steps), as in Opacus and
TF-Privacy: their accountants assume Poisson sampling (each record joins a batch independently
with probability rate), add/remove neighbours, and noise std = noise multiplier x clipping norm.
"""


_CALIBRATE_DESCRIPTION = """\
The smallest noise multiplier whose certificate meets --epsilon at --delta, for one run or (with
--k) for the whole tuning, the best of K runs (Opacus's get_noise_multiplier, tuning included).
With --tpr and --fpr (or --advantage) instead of --epsilon: the smallest noise multiplier at
which the certified membership-attack risk meets that target.
With --noise-multiplier instead: the largest number of steps that meets the --epsilon target."""

_CALIBRATE_EPILOG = """\
examples:
  privselect calibrate --epsilon 3                          one run of the DP-SGD example (batch 256 of 60000, 60 epochs)
  privselect calibrate --epsilon 3 --k geometric:10         the best of K ~ Geometric(mean 10) such runs
  privselect calibrate --epsilon 8 --batch-size 4096 --dataset-size 50000 --epochs 100 --json
  privselect calibrate --epsilon 3 --noise-multiplier 1.1 --sample-rate 0.01      the most steps at sigma 1.1
  privselect calibrate --tpr 0.05 --fpr 1e-3 --k geometric:10   no membership attack on the tuning reaches
                                                                TPR 0.05 at FPR 1e-3 (a risk target)

The answer is checked with the certificate itself: at the printed noise multiplier the certificate
meets the target, and at 0.1% less noise it does not.
"""


# -- flag values -------------------------------------------------------------------------
# argparse parses and range-checks every value with the library's own checks, so an error names
# the flag ("argument --steps: ...") and prints the usage of this subcommand only. Constraints
# that tie several flags together are checked after parsing and reported with the flags' names.


def _number(text: str) -> float:
    """A real number; also a fraction ``4096/50000``."""
    try:
        return float(Fraction(text.strip())) if "/" in text else float(text)
    except (ValueError, ZeroDivisionError):
        raise argparse.ArgumentTypeError(f"expected a number or a fraction such as 4096/50000, got {text!r}") from None


def _integer(text: str) -> int | float:
    """An integer; also '1e3' (checked to be integral by the range check)."""
    try:
        return int(text)
    except ValueError:
        return _number(text)


def _flag(parse: Callable[[str], object], validate: Callable[[str, object], object] | str) -> Callable[[str], object]:
    """argparse ``type=``: parse, then validate with a check (a function, or a ``_validation`` check's name: no numpy yet)."""

    def convert(text: str) -> object:
        value = parse(text)
        from . import _validation

        check = getattr(_validation, validate) if isinstance(validate, str) else validate
        try:
            return check("value", value)
        except (TypeError, ValueError) as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    convert.__name__ = validate if isinstance(validate, str) else getattr(validate, "__name__", "value")
    return convert


def _nonnegative_int(name: str, value: object) -> int:
    value = int(value) if isinstance(value, float) and value.is_integer() else value
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{name} must be an integer >= 0, got {value!r}")
    return value


def _jobs(name: str, value: object) -> int:
    value = int(value) if isinstance(value, float) and value.is_integer() else value
    if isinstance(value, bool) or not isinstance(value, int) or not (value >= 1 or value == -1):
        raise ValueError(f"{name} must be an integer >= 1, or -1 (all cores), got {value!r}")
    return value


_POSITIVE = _flag(_number, "positive")
_POSITIVE_INT = _flag(_integer, "positive_int")


# -- K laws: name:MEAN[,key=value] --------------------------------------------------------


def _k_laws() -> dict[str, tuple[Callable[..., Any], tuple[str, ...]]]:
    """K law name -> (constructor from the mean and keyword parameters, the parameters it needs)."""
    from .selection import Binomial, Geometric, Logarithmic, Poisson, TruncatedNegativeBinomial

    return {
        "geometric": (lambda mean: Geometric(mean=mean), ()),
        "logarithmic": (lambda mean: Logarithmic(mean=mean), ()),
        "poisson": (lambda mean: Poisson(mean), ()),
        "tnb": (lambda mean, eta: TruncatedNegativeBinomial(eta, mean=mean), ("eta",)),
        "binomial": (lambda mean, n: Binomial.from_mean(mean, n), ("n",)),
    }


_K_NAMES = ("geometric", "logarithmic", "poisson", "tnb", "binomial")


def _k_spec(text: str) -> tuple[str, float, dict[str, float]]:
    """``geometric:10`` -> ("geometric", 10.0, {}); ``tnb:10,eta=0.5`` -> ("tnb", 10.0, {"eta": 0.5})."""
    name, sep, rest = text.strip().partition(":")
    name = name.lower()
    if name not in _K_NAMES or not sep or not rest:
        raise argparse.ArgumentTypeError(f"expected NAME:MEAN with NAME one of {', '.join(_K_NAMES)} "
                                         f"(e.g. geometric:10), got {text!r}")
    mean_text, *params = rest.split(",")
    mean = _number(mean_text)
    options: dict[str, float] = {}
    for item in params:
        key, eq, value = item.partition("=")
        if not eq:
            raise argparse.ArgumentTypeError(f"expected key=value after the mean (e.g. tnb:10,eta=0.5), got {item!r}")
        options[key.strip()] = _integer(value) if key.strip() == "n" else _number(value)
    return name, mean, options


def _k_from_spec(spec: tuple[str, float, dict[str, float]]) -> Any:
    name, mean, options = spec
    build, needs = _k_laws()[name]
    if set(options) != set(needs):
        wanted = ", ".join(f"{p}=..." for p in needs) or "no parameters after the mean"
        raise ValueError(f"argument --k: {name} takes {wanted}, got {sorted(options) or 'none'}")
    try:
        return build(mean, **options)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"argument --k {name}:{mean:g}: {exc}") from None


# -- certify -----------------------------------------------------------------------------


def _accountants() -> tuple[str, ...]:
    """The registered accountant names ("auto" first), from the accounting registry."""
    from .accounting import accountant_names

    return accountant_names()


class _AccountantChoices(Sequence[str]):
    """``choices=`` of --accountant: the registry's names (and ``extra``), read when argparse first checks or
    lists them, so that building the parser (``privselect --help``) imports no accounting."""

    def __init__(self, *extra: str) -> None:
        self.extra = extra

    def __getitem__(self, index):
        return (*_accountants(), *self.extra)[index]

    def __len__(self) -> int:
        return len(_accountants()) + len(self.extra)


def _schedule(args: argparse.Namespace) -> tuple[dict[str, Any], dict[str, Any], float, int]:
    """The sampling and length flags as ``ps.dpsgd`` keywords, and the rate and steps they resolve to."""
    if (args.batch_size is None) != (args.dataset_size is None):
        given, missing = ("--batch-size", "--dataset-size") if args.batch_size is not None else ("--dataset-size",
                                                                                                 "--batch-size")
        raise ValueError(f"argument {given}: needs {missing} too (the sampling rate is batch size / data set size)")
    if args.batch_size is not None and args.batch_size > args.dataset_size:
        raise ValueError(f"argument --batch-size: must be at most --dataset-size ({args.dataset_size}), "
                         f"got {args.batch_size}")
    if args.batch_size is not None:
        sampling = {"batch_size": args.batch_size, "dataset_size": args.dataset_size}
        rate = args.batch_size / args.dataset_size
    else:
        rate = args.sample_rate if args.sample_rate is not None else DEFAULT_RATE
        sampling = {"sample_rate": rate}
    if args.steps is not None:
        length = {"steps": args.steps}
    else:
        length = {"epochs": args.epochs if args.epochs is not None else DEFAULT_EPOCHS}
    steps = args.steps if args.steps is not None else max(1, math.ceil(length["epochs"] / rate))
    return sampling, length, rate, steps

def _one_run(args: argparse.Namespace) -> tuple[Any, dict[str, Any]]:
    """The mechanism of one run from the flags (``ps.dpsgd`` for Gaussian noise), and the values they resolved to."""
    from .mechanisms import Laplace, Mechanism, dpsgd

    sampling, length, rate, steps = _schedule(args)
    resolved = {"mechanism": args.mechanism, "sample_rate": rate, "steps": steps, "sampling": args.sampling}
    if args.mechanism == "laplace":
        if args.noise_multiplier is not None:
            raise ValueError("argument --noise-multiplier: applies to --mechanism gaussian; use --scale for laplace")
        scale = args.scale if args.scale is not None else 1.0
        step: Mechanism = Laplace(scale)
        if rate < 1.0:
            step = step.poisson_subsample(rate) if args.sampling == "poisson" else step.sample_without_replacement(rate)
        return step.compose(steps), {**resolved, "scale": scale}
    if args.scale is not None:
        raise ValueError("argument --scale: applies to --mechanism laplace; use --noise-multiplier for gaussian")
    sigma = args.noise_multiplier if args.noise_multiplier is not None else DEFAULT_NOISE_MULTIPLIER
    mechanism = dpsgd(noise_multiplier=sigma, **sampling, **length, sampling=args.sampling)
    return mechanism, {**resolved, "noise_multiplier": sigma}


def _certify(args: argparse.Namespace) -> int:
    mechanism, resolved = _one_run(args)
    if args.k is not None:
        return _certify_selection(args, mechanism, resolved)
    from .accounting import CertificationError, privacy_profile

    explicit = args.accountant != "all"
    accountants = (args.accountant or "auto",) if explicit else tuple(n for n in _accountants() if n != "auto")
    rows = []
    for name in accountants:
        try:
            profile = privacy_profile(mechanism, accountant=name)
            lower, upper = profile.epsilon_bounds(args.delta)
        except (CertificationError, ValueError, NotImplementedError) as exc:
            if explicit:
                raise ValueError(f"argument --accountant {name}: {exc}") from None
            rows.append({"accountant": name, "error": str(exc)})
            continue
        rows.append({"accountant": name, "epsilon_lower": float(lower) if lower > 0 else None,
                     "epsilon": float(upper), "certified": bool(profile.certified), "how": profile.description,
                     "error_budget": profile.error_budget.to_dict()})
    certified = [r for r in rows if r.get("certified")]
    if not certified:
        raise ValueError("no accountant certifies this run: "
                         + "; ".join(f"{r['accountant']}: {r.get('error', 'an estimate, not a bound')}" for r in rows))
    best = min(certified, key=lambda r: r["epsilon"])
    report = {"epsilon": best["epsilon"], "delta": args.delta, "accountant": best["accountant"],
              "mechanism": repr(mechanism), "one_run": resolved, "results": rows,
              "privselect_version": __version__}
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"one run:   {mechanism!r}")
    print(f"delta:     {args.delta:g}")
    print(f"{'accountant':<12}{'eps lower':>12}{'eps upper':>12}")
    for r in rows:
        if "error" in r:
            print(f"{r['accountant']:<12}  not certified: {r['error']}")
            continue
        low = "-" if r["epsilon_lower"] is None else f"{r['epsilon_lower']:.4f}"
        print(f"{r['accountant']:<12}{low:>12}{r['epsilon']:>12.4f}" + ("" if r["certified"] else
                                                                        "  (an estimate: not certified)"))
    how = f" ({best['how']})" if best["accountant"] == "auto" and best["how"] else ""
    print(f"certified: ({best['epsilon']:.4f}, {args.delta:g})-DP by the {best['accountant']} accountant{how}")
    return 0


def _certify_selection(args: argparse.Namespace, mechanism: Any, resolved: dict[str, Any]) -> int:
    from .selection import certify

    if args.accountant == "all":
        raise ValueError("argument --accountant: 'all' compares accountants for one run; with --k choose one")
    k = _k_from_spec(args.k)
    options = {} if args.accountant is None else {"accountant": args.accountant}
    try:
        cert = certify(mechanism, k, args.delta, **options)
    except ValueError as exc:
        raise ValueError(f"arguments --k/--delta: {exc}") from None
    if args.json:
        print(cert.to_json(indent=2))
        return 0
    print(f"one run:   {mechanism!r}")
    print(f"K:         {cert.k!r} (mean {cert.k.mean:g}); only the best run is released, K is not")
    for family, value in cert.alternatives.items():
        print(f"  {family:<10}{value:>10.4f}")
    for note in cert.notes:
        print(f"  note: {note}")
    print(f"certified: ({cert.epsilon:.4f}, {args.delta:g})-DP by {cert.theorem}")
    return 0


# -- calibrate ---------------------------------------------------------------------------


def _risk_target(args: argparse.Namespace) -> Any:
    """The RiskTarget of --tpr/--fpr or --advantage (None: --epsilon)."""
    from .attack_risk import RiskTarget

    if args.epsilon is not None:
        if args.fpr is not None:
            raise ValueError("argument --fpr: goes with --tpr (a risk target), not with --epsilon")
        return None
    if args.tpr is not None:
        if args.fpr is None:
            raise ValueError("argument --tpr: needs --fpr, the false-positive rate the TPR bound applies at")
        try:
            return RiskTarget(tpr=args.tpr, fpr=args.fpr)
        except ValueError as exc:
            raise ValueError(f"argument --tpr: {exc}") from None
    if args.fpr is not None:
        raise ValueError("argument --fpr: goes with --tpr")
    return RiskTarget(advantage=args.advantage)


def _procedure_options(args: argparse.Namespace) -> dict[str, Any]:
    """--score-noise, --search-ratio, --final and --no-progress as calibrate_noise's arguments."""
    from .mechanisms import Gaussian, Laplace

    options: dict[str, Any] = {"progress": not args.no_progress}
    if args.score_noise is not None:
        kind, _, value = args.score_noise.partition(":")
        laws = {"laplace": Laplace, "gaussian": Gaussian}
        try:
            options["score_noise"] = laws[kind.lower()](float(value))
        except (KeyError, ValueError, TypeError):
            raise ValueError(f"argument --score-noise: expected laplace:SCALE or gaussian:NOISE_MULTIPLIER (each run's "
                             f"score noise, sensitivity 1), got {args.score_noise!r}") from None
    if args.search_ratio is not None:
        options["search"] = tuple(args.search_ratio)
    if args.final:
        options["final"] = "same"
    if len(options) > 1 and args.k is None:
        raise ValueError("argument --k: --score-noise, --search-ratio and --final describe a tuning: give --k")
    return options


def _calibrate(args: argparse.Namespace) -> int:
    from .accounting import privacy_profile
    from .mechanisms import dpsgd
    from .selection import calibrate_noise, calibrate_steps
    from .selection.calibration_target import Procedure

    target = _risk_target(args)
    if target is not None:
        return _calibrate_risk(args, target)

    if args.mechanism != "gaussian":
        raise ValueError("argument --mechanism: calibrate finds a Gaussian noise multiplier (DP-SGD); "
                         "certify a Laplace run with privselect certify")
    if args.scale is not None:
        raise ValueError("argument --scale: applies to --mechanism laplace; calibrate finds a noise multiplier")
    sampling, length, rate, steps = _schedule(args)
    k = _k_from_spec(args.k) if args.k is not None else None
    accountant = args.accountant or "auto"
    options = {"k": k, "sampling": args.sampling, "accountant": accountant}
    extra = _procedure_options(args)
    if args.noise_multiplier is None:
        solved, sigma = "noise_multiplier", calibrate_noise(args.epsilon, args.delta, **sampling, **length, **options,
                                                            **extra)
    else:
        if len(extra) > 1:
            raise ValueError("argument --noise-multiplier: the steps are calibrated for the plain best of K; "
                             "--score-noise, --search-ratio and --final calibrate the noise multiplier")
        if args.steps is not None or args.epochs is not None:
            raise ValueError("argument --noise-multiplier: with --steps or --epochs nothing is left to calibrate "
                             "(give the noise multiplier to calibrate the steps, or the length to calibrate the noise)")
        solved, sigma = "steps", args.noise_multiplier
        steps = calibrate_steps(sigma, args.epsilon, args.delta, **sampling, **options)
        length = {"steps": steps}
    mechanism = dpsgd(noise_multiplier=sigma, **sampling, **length, sampling=args.sampling)
    if k is None:
        epsilon = float(privacy_profile(mechanism, accountant=accountant).epsilon(args.delta))
    else:
        procedure = {name: value for name, value in extra.items() if name != "progress"}
        epsilon = Procedure(k, args.delta, accountant=accountant, **procedure).epsilon(mechanism)
    report = {"solved_for": solved, "noise_multiplier": sigma, "steps": steps, "epochs": steps * rate,
              "sample_rate": rate, "sampling": args.sampling, "target_epsilon": args.epsilon, "delta": args.delta,
              "epsilon": epsilon, "k": None if k is None else k.to_dict(), "accountant": accountant,
              "mechanism": repr(mechanism), "privselect_version": __version__}
    if _printed_json_or_header(args, report, mechanism, k):
        return 0
    print(f"target:    ({args.epsilon:g}, {args.delta:g})-DP")
    if solved == "steps":
        print(f"steps:     {steps} (epochs {steps * rate:.6g}) at noise multiplier {sigma:g}")
    else:
        print(f"noise multiplier: {sigma:.6f}")
    print(f"certified: ({epsilon:.4f}, {args.delta:g})-DP by the {accountant} accountant"
          + ("" if k is None else " and the best-of-K certificate"))
    return 0


def _printed_json_or_header(args: argparse.Namespace, report: dict, mechanism: Any, k: Any) -> bool:
    """Print the calibration ``report`` as JSON (True), or the text report's first lines (False)."""
    if args.json:
        print(json.dumps(report, indent=2))
        return True
    print(f"one run:   {mechanism!r}")
    if k is not None:
        print(f"K:         {k!r} (mean {k.mean:g}); the whole tuning is calibrated (only the best run is released)")
    return False


def _calibrate_risk(args: argparse.Namespace, target: Any) -> int:
    """calibrate with a risk target: the smallest noise multiplier whose certified risk meets it."""
    from .mechanisms import dpsgd
    from .selection import calibrate_noise
    from .selection.calibration_target import Procedure

    if args.mechanism != "gaussian" or args.scale is not None:
        raise ValueError("argument --mechanism: calibrate finds a Gaussian noise multiplier (DP-SGD)")
    if args.noise_multiplier is not None:
        raise ValueError("argument --noise-multiplier: a risk target (--tpr/--advantage) calibrates the noise "
                         "multiplier; calibrating the steps needs --epsilon")
    sampling, length, rate, steps = _schedule(args)
    k = _k_from_spec(args.k) if args.k is not None else None
    accountant = args.accountant or "auto"
    extra = _procedure_options(args)
    sigma = calibrate_noise(target, **sampling, **length, k=k, sampling=args.sampling, accountant=accountant, **extra)
    mechanism = dpsgd(noise_multiplier=sigma, **sampling, **length, sampling=args.sampling)
    procedure = {name: value for name, value in extra.items() if name != "progress"}
    achieved = Procedure(k, None, accountant=accountant, **procedure).risk_value(target, mechanism)  # ps.risk of it
    report = {"solved_for": "noise_multiplier", "noise_multiplier": sigma, "steps": steps, "epochs": steps * rate,
              "sample_rate": rate, "sampling": args.sampling, "target": str(target),
              "target_tpr": target.tpr, "target_fpr": target.fpr, "target_advantage": target.advantage,
              "certified_value": achieved, "k": None if k is None else k.to_dict(), "accountant": accountant,
              "mechanism": repr(mechanism), "privselect_version": __version__}
    if _printed_json_or_header(args, report, mechanism, k):
        return 0
    print(f"target:    {target} for any membership attack")
    print(f"noise multiplier: {sigma:.6f}")
    quantity = "advantage" if target.advantage is not None else f"TPR at FPR {target.fpr:g}"
    print(f"certified: {quantity} <= {achieved:.4g} by the {accountant} accountant"
          + ("" if k is None else " and KRW's selection profile"))
    return 0


# -- report ------------------------------------------------------------------------------


def _command(name: str) -> Callable[[argparse.Namespace], int]:
    """A subcommand whose code (``privselect.cli_commands``) is imported only when it runs."""
    def run(args: argparse.Namespace) -> int:
        from . import cli_commands

        return int(getattr(cli_commands, name)(args))
    return run


# -- parser ------------------------------------------------------------------------------


def _sampling(value: str) -> str:
    """--sampling: a shuffling sampler is refused with the reason (not certified) and the certified samplers."""
    from .mechanisms import refuse_uncertified_sampling

    try:
        refuse_uncertified_sampling(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return value


def _add_run_flags(parser: argparse.ArgumentParser, sigma_help: str) -> None:
    """The flags describing one run (Opacus / TF-Privacy vocabulary) and --delta, shared by certify and calibrate."""
    run = parser.add_argument_group("one run")
    run.add_argument("--mechanism", choices=["gaussian", "laplace"], default="gaussian",
                     help="noise of each step (default: gaussian)")
    run.add_argument("--noise-multiplier", type=_POSITIVE, metavar="SIGMA", help=sigma_help)
    run.add_argument("--scale", type=_POSITIVE, help="Laplace scale / sensitivity (--mechanism laplace; default: 1)")
    rate = run.add_mutually_exclusive_group()
    rate.add_argument("--sample-rate", "--rate", type=_flag(_number, "half_open_unit"), metavar="Q",
                      help="Poisson sampling rate, a number or a fraction such as 4096/50000; 1 = full batch "
                           "(default: 256/60000)")
    rate.add_argument("--batch-size", type=_POSITIVE_INT, metavar="B",
                      help="expected batch size; with --dataset-size, the rate is B / N")
    run.add_argument("--dataset-size", type=_POSITIVE_INT, metavar="N", help="number of records (with --batch-size)")
    run.add_argument("--sampling", type=_sampling, choices=["poisson", "without_replacement"], default="poisson",
                     help="how batches are drawn: poisson (Opacus; the DP-SGD accountants' assumption) or "
                          "without_replacement (a fixed-size batch drawn afresh at every step, replace-one "
                          "neighbours); shuffling is refused (not certified)")
    length = run.add_mutually_exclusive_group()
    length.add_argument("--steps", type=_POSITIVE_INT, metavar="T", help="number of noisy steps")
    length.add_argument("--epochs", type=_POSITIVE, metavar="E",
                        help=f"passes over the data: steps = ceil(E / rate) (default: {DEFAULT_EPOCHS})")
    parser.add_argument("--delta", type=_flag(_number, "open_unit"), default=DEFAULT_DELTA,
                        help=f"target delta (default: {DEFAULT_DELTA:g})")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="privselect", description=_DESCRIPTION)
    parser.add_argument("--version", action="version", version=f"privselect {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="{certify,calibrate,report,demo}")

    cert = sub.add_parser("certify", help="certify one DP-SGD-style run, or the best of K runs",
                          description=_CERTIFY_DESCRIPTION, epilog=_CERTIFY_EPILOG,
                          formatter_class=argparse.RawDescriptionHelpFormatter)
    _add_run_flags(cert, f"Gaussian noise std / clipping norm, as in Opacus (default: {DEFAULT_NOISE_MULTIPLIER})")
    cert.add_argument("--accountant", choices=_AccountantChoices("all"), default=None, metavar="NAME",
                      help="accountant of the run's privacy profile, one of %(choices)s (default: auto, the smallest "
                           "certified bound of those it runs; 'all' prints every accountant's answer for one run)")
    cert.add_argument("--k", type=_k_spec, metavar="LAW:MEAN",
                      help="certify releasing the best of K runs, K ~ LAW with that mean (e.g. geometric:10)")
    cert.add_argument("--json", action="store_true", help="print the certificate as JSON (and nothing else)")
    cert.set_defaults(run=_certify, parser=cert)

    calib = sub.add_parser("calibrate", help="the smallest noise multiplier (or the most steps) meeting a target "
                                             "epsilon, for one run or the best of K runs",
                           description=_CALIBRATE_DESCRIPTION, epilog=_CALIBRATE_EPILOG,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
    goal = calib.add_mutually_exclusive_group(required=True)
    goal.add_argument("--epsilon", type=_POSITIVE, metavar="EPS",
                      help="target epsilon of one run, or (with --k) of the whole tuning")
    goal.add_argument("--tpr", type=_flag(_number, "open_unit"), metavar="TPR",
                      help="risk target instead of epsilon: no membership attack reaches this true-positive rate "
                           "at --fpr (Kulynych et al. 2024)")
    goal.add_argument("--advantage", type=_flag(_number, "open_unit"), metavar="ADV",
                      help="risk target instead of epsilon: no membership attack's TPR - FPR exceeds ADV")
    calib.add_argument("--fpr", type=_flag(_number, "open_unit"), metavar="FPR",
                       help="the false-positive rate of --tpr (e.g. 1e-3)")
    _add_run_flags(calib, "calibrate the number of steps at this noise multiplier instead (no --steps/--epochs)")
    calib.add_argument("--accountant", choices=_AccountantChoices(), default=None, metavar="NAME",
                       help="accountant whose certificate meets the target, one of %(choices)s (default: auto)")
    calib.add_argument("--k", type=_k_spec, metavar="LAW:MEAN",
                       help="calibrate the whole tuning: the best of K runs, K ~ LAW with that mean (e.g. geometric:10)")
    calib.add_argument("--score-noise", metavar="LAW:SCALE",
                       help="each run's score noise, composed with the run (laplace:B or gaussian:SIGMA)")
    calib.add_argument("--search-ratio", type=float, nargs=2, metavar=("C", "c"),
                       help="calibrate an adaptive search with density ratio c <= pi/pi0 <= C (ps.certify_adaptive)")
    calib.add_argument("--final", action="store_true",
                       help="the winner is trained once more on the full data with the same run (ps.certify_pipeline)")
    calib.add_argument("--no-progress", action="store_true",
                       help="no progress count on stderr (shown once a calibration takes over 2 s)")
    calib.add_argument("--json", action="store_true", help="print the answer as JSON (and nothing else)")
    calib.set_defaults(run=_calibrate, parser=calib)

    rep = sub.add_parser("report", help="what a certificate means: the guarantee in words and certified attack risks",
                         description="Read a certificate written by Certificate.to_json() (or privselect certify --json) "
                                     "and print the guarantee in words with the certified bounds on membership, "
                                     "attribute-inference and reconstruction attacks.",
                         epilog="example:\n  privselect certify --k geometric:10 --json > cert.json\n"
                                "  privselect report cert.json --html report.html",
                         formatter_class=argparse.RawDescriptionHelpFormatter)
    rep.add_argument("certificate", metavar="CERT", help="certificate JSON file")
    rep.add_argument("--html", metavar="FILE", default=None,
                     help="also write a self-contained HTML page (trade-off curve, profile, alternatives, what is public)")
    rep.add_argument("--dataset-size", type=_POSITIVE_INT, metavar="N", default=None,
                     help="the public number of records n, to compare delta with 1/n (never read from the data)")
    rep.add_argument("--json", action="store_true", help="print the certificate and its risk bounds as JSON")
    rep.set_defaults(run=_command("report_command"), parser=rep)

    demo = sub.add_parser("demo", help="tune DP-SGD on scikit-learn's digits privately and print the certificate",
                          description="Tune DP-SGD softmax regression on scikit-learn's digits with K ~ "
                                      "Geometric(mean 10) private runs; print the winner and the certificate.")
    demo.add_argument("--seed", type=_flag(_integer, _nonnegative_int), default=None,
                      help="secret seed of the tuner (draws K, the candidates and the noise; default: fresh entropy)")
    demo.add_argument("--n-jobs", type=_flag(_integer, _jobs), default=1,
                      help="parallel runs (1 = sequential, -1 = all cores; default: 1)")
    demo.add_argument("--json", action="store_true", help="print the certificate as JSON (and nothing else)")
    demo.set_defaults(run=_command("demo_command"), parser=demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except ValueError as exc:  # a constraint between flags, or the library refusing their values
        args.parser.error(str(exc))
        return 2  # pragma: no cover


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
