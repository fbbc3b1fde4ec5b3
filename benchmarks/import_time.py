"""Import-time benchmark: ``import privselect`` against importing what it used to load eagerly.

    python -m benchmarks.import_time [--repeat 5]

Each measurement is a fresh interpreter (``python -c``), best of ``--repeat``, so the module
cache never helps. Printed, from one run: the wall time of ``import privselect``, of its first use
(a mechanism; ``certify``, which loads the accountants), of ``import numpy, scipy.special,
scipy.stats`` (the floor any numerical import pays), and of
touching every public name (``from privselect import *``: everything loaded, as before the lazy
table), with the heavy dependencies each one left in ``sys.modules``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

from tests.support import REPO_ROOT

HEAVY = ("sklearn", "optuna", "joblib", "matplotlib", "tqdm", "dask", "scipy")

_PROBE = """
import json, sys, time
start = time.perf_counter()
{statement}
seconds = time.perf_counter() - start
print(json.dumps({{"seconds": seconds, "loaded": sorted({{m.split(".")[0] for m in sys.modules}} & set({heavy!r}))}}))
"""

CASES = {
    "import privselect": "import privselect",
    "import privselect; privselect.Gaussian": "import privselect; privselect.Gaussian",
    "import privselect; privselect.certify": "import privselect; privselect.certify",
    "numpy + scipy.special + scipy.stats (floor)": "import numpy, scipy.special, scipy.stats",
    "from privselect import * (every public name)": "from privselect import *",
}


def measure(statement: str, repeat: int) -> dict:
    """Best wall time over ``repeat`` fresh interpreters, and the heavy modules the statement loaded."""
    runs = []
    for _ in range(repeat):
        done = subprocess.run([sys.executable, "-c", _PROBE.format(statement=statement, heavy=HEAVY)],
                              cwd=REPO_ROOT, capture_output=True, text=True, check=True)
        runs.append(json.loads(done.stdout))
    best = min(runs, key=lambda r: r["seconds"])
    return {"seconds": best["seconds"], "loaded": best["loaded"]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="fresh interpreters per case (best is reported)")
    args = parser.parse_args(argv)
    results = {label: measure(statement, args.repeat) for label, statement in CASES.items()}
    base = results["import privselect"]["seconds"]
    print(f"{'statement':<48}{'seconds':>9}{'/ import privselect':>21}  heavy modules loaded")
    for label, r in results.items():
        print(f"{label:<48}{r['seconds']:>9.3f}{r['seconds'] / base:>20.1f}x  {', '.join(r['loaded']) or '-'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
