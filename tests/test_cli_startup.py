"""``privselect --help`` builds the parser without importing the accounting stack (nor numpy or scipy)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

_PROBE = """
import json, sys
from privselect.cli import main
try:
    main({argv!r})
except SystemExit:
    pass
sys.stdout.flush()
print("\\n" + json.dumps(sorted(sys.modules)))
"""
HEAVY = ("privselect.accounting", "privselect.selection", "privselect.mechanisms", "privselect.attack_risk",
         "numpy", "scipy")


def _imported(argv: list[str]) -> tuple[str, set[str]]:
    done = subprocess.run([sys.executable, "-c", _PROBE.format(argv=argv)], capture_output=True, text=True,
                          timeout=120, check=True)
    out, _, modules = done.stdout.rpartition("\n\n")
    return out, set(json.loads(modules))


@pytest.mark.parametrize("argv", [["--help"], ["--version"]])
def test_top_level_help_imports_no_accounting(argv):
    out, modules = _imported(argv)
    assert "certify" in out and "report" in out or "privselect 0." in out
    assert not [m for m in modules if m.split(".")[0] in HEAVY or m.startswith(HEAVY)]


def test_subcommand_help_still_lists_the_registered_accountants():
    out, modules = _imported(["certify", "--help"])
    words = " ".join(out.split())
    assert "one of auto, allocation, cf, exact, pld, prv, rdp, all" in words
    assert "privselect.accounting" in modules  # the names come from the registry, when they are shown


def test_an_unknown_accountant_is_refused_with_the_registered_names(capsys):
    from privselect.accounting import accountant_names
    from privselect.cli import main

    with pytest.raises(SystemExit):
        main(["certify", "--accountant", "bogus"])
    err = capsys.readouterr().err
    assert "argument --accountant: invalid choice: 'bogus'" in err
    assert all(repr(name) in err for name in accountant_names())


_LOAD_CERTIFICATE = """
import json, sys
import privselect.report
from privselect.selection.certify import Certificate
Certificate.from_json(sys.stdin.read())
print(json.dumps(sorted(sys.modules)))
"""


def test_loading_the_accounting_stack_and_a_geometric_certificate_leaves_scipy_optimize_unloaded():
    """scipy.optimize (about 0.1 s of import) loads only where a root finder or isotonic regression runs: importing
    the accounting and report modules does not load it, nor does reading a K ~ Geometric certificate
    (Geometric(mean=m) has gamma = 1/m in closed form)."""
    import privselect as ps

    cert = ps.certify(ps.Gaussian(noise_multiplier=1.1).poisson_subsample(256 / 60000).compose(100),
                      ps.Geometric(mean=10), 1e-5)
    done = subprocess.run([sys.executable, "-c", _LOAD_CERTIFICATE], input=cert.to_json(), capture_output=True,
                          text=True, timeout=120, check=True)
    modules = set(json.loads(done.stdout))
    assert {"privselect.accounting", "privselect.selection.distributions", "scipy.special"} <= modules
    assert not [m for m in modules if m.startswith("scipy.optimize")]
