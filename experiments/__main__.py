"""Reproduce the paper's figures from a checkout: ``python -m experiments list | run NAME ... [--quick]``.

Run from the checkout's root (``python -m`` puts it on ``sys.path``). ``run all`` runs every
experiment; ``--quick`` uses small grids (seconds each) and writes to ``experiments/results/quick/``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from . import EXPERIMENTS, describe, resolve, run


def _format(value):
    if isinstance(value, float):
        return float(f"{value:.6g}")
    if isinstance(value, dict):
        return {k: _format(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_format(v) for v in value]
    return value


def _list(args: argparse.Namespace) -> int:
    for name in EXPERIMENTS:
        print(f"{name:<24}{describe(name)}")
    return 0


def _run(args: argparse.Namespace) -> int:
    names = list(EXPERIMENTS) if "all" in args.names else [resolve(n) for n in args.names]
    for name in dict.fromkeys(names):
        start = time.perf_counter()
        key = run(name, quick=args.quick, out_dir=args.out_dir)
        print(f"== {name} ({time.perf_counter() - start:.1f} s)")
        print(json.dumps(_format(key), indent=2))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m experiments", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="list the experiments").set_defaults(action=_list)
    run_parser = sub.add_parser("run", help="run experiments and print their key numbers")
    run_parser.add_argument("names", nargs="+", metavar="NAME",
                            help="experiment names, aliases (fig1, fig7, ...) or 'all'")
    run_parser.add_argument("--quick", action="store_true", help="small grids (seconds); writes to results/quick/")
    run_parser.add_argument("--out-dir", default=None, help="write CSV/PNG here instead of experiments/results/")
    run_parser.set_defaults(action=_run, parser=run_parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.action(args)
    except KeyError as exc:
        args.parser.error(exc.args[0])
        return 2  # pragma: no cover


if __name__ == "__main__":
    sys.exit(main())
