"""``python -m experiments NAME [NAME ...] | all | --list [--quick] [--out-dir DIR]``."""

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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m experiments", description=__doc__)
    parser.add_argument("names", nargs="*", help="experiment names, aliases (fig1, fig7, ...) or 'all'")
    parser.add_argument("--list", action="store_true", help="list the experiments and exit")
    parser.add_argument("--quick", action="store_true", help="small grids (seconds); writes to results/quick/")
    parser.add_argument("--out-dir", default=None, help="write CSV/PNG here instead of experiments/results/")
    args = parser.parse_args(argv)
    if args.list or not args.names:
        for name in EXPERIMENTS:
            print(f"{name:<24}{describe(name)}")
        return 0
    names = list(EXPERIMENTS) if "all" in args.names else args.names
    try:
        names = [resolve(n) for n in names]
    except KeyError as exc:
        print(exc.args[0], file=sys.stderr)
        return 2
    for name in dict.fromkeys(names):
        start = time.perf_counter()
        key = run(name, quick=args.quick, out_dir=args.out_dir)
        print(f"== {name} ({time.perf_counter() - start:.1f} s)")
        print(json.dumps(_format(key), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
