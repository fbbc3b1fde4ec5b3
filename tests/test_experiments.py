"""Every experiment runs in quick mode (seconds), writes its CSV and PNG, and reproduces KRW's claims."""

import csv
import math
import re
import shlex
import subprocess
import sys
import time

import pytest

from tests.support import REPO_ROOT, UCI_DIR, project_files

pytest.importorskip("matplotlib")

import experiments  # noqa: E402
from experiments.__main__ import main as experiments_main  # noqa: E402


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """Run each experiment once (quick) into a temporary directory; keep key numbers and times."""
    out = tmp_path_factory.mktemp("experiments")
    found = {}
    for name in experiments.EXPERIMENTS:
        start = time.perf_counter()
        key = experiments.run(name, quick=True, out_dir=out)
        found[name] = (key, time.perf_counter() - start)
    return found


def test_uci_data_is_vendored_and_nothing_reads_outside_the_repository():
    from experiments.linear_regression import default_data_dir

    assert default_data_dir() == UCI_DIR and UCI_DIR.is_relative_to(REPO_ROOT)
    assert (UCI_DIR / "README.md").is_file() and (UCI_DIR / "airfoil" / "airfoil_self_noise.dat.txt").is_file()
    outside = re.compile(r"\.\./shared|[\"'/]shared[\"']?\s*/\s*[\"']?data|parents\[2\]\s*/\s*\"shared\"")
    offenders = [str(p.relative_to(REPO_ROOT)) for p in project_files(".py", ".toml", ".yml", ".cfg", "run")
                 if outside.search(p.read_text(errors="replace"))]
    assert offenders == []


def test_registry_and_aliases():
    assert set(experiments.EXPERIMENTS) == {
        "fig1_rnm", "fig2_3_geometric", "fig4_binomial", "fig6_dpsgd", "fig7_large_batch", "fig8_tuning_sigma",
        "accountants", "affordable_candidates", "tradeoff", "linear_regression", "subsampled_tuning",
        "narrow_landscape"}
    assert experiments.resolve("fig3") == "fig2_3_geometric"
    with pytest.raises(KeyError):
        experiments.resolve("fig5")


@pytest.mark.slow  # runs every experiment once (quick, ~65 s): the slow tier runs it
@pytest.mark.parametrize("name", list(experiments.EXPERIMENTS))
def test_each_experiment_writes_csv_and_png(results, name):
    key, _ = results[name]  # no timing assertion: the machine is shared (times are in the quick run's log)
    with open(key["csv"]) as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) >= 3
    with open(key["png"], "rb") as fh:
        assert fh.read(8) == b"\x89PNG\r\n\x1a\n"


@pytest.mark.slow  # runs every experiment once (quick, ~65 s): the slow tier runs it
def test_fig1_profile_beats_rdp_and_closed_form(results):
    key, _ = results["fig1_rnm"]
    assert key["min_rdp_minus_profile"] > 0.1  # Thm 3.2 < Thm 3.1 for every m
    assert key["min_cor34_minus_profile"] > 0  # Cor. 3.4 relaxes Thm 3.2
    assert 2.6 < key["eps_thm32_m100"] < 2.8 < key["eps_rdp_m100"] < 2.95


@pytest.mark.slow  # runs every experiment once (quick, ~65 s): the slow tier runs it
def test_fig2_3_geometric_rdp_is_never_below_profile(results):
    key, _ = results["fig2_3_geometric"]
    assert key["min_rdp_minus_profile"] > 0.2
    assert key["min_cor55_minus_profile"] > 0
    assert key["eps_thm52_m30"] < key["eps_thm52_m300"] < key["eps_thm52_m3000"]
    # The delta(eps) curves cross only where delta is large (> 0.3): irrelevant for certificates.
    assert 0.3 < key["profile_looser_than_rdp_above_delta_m300"] < 0.5


@pytest.mark.slow  # seconds per case, measured: the slow tier runs it
def test_fig4_binomial_gives_concentrated_k_for_free(results):
    key, _ = results["fig4_binomial"]
    assert key["eps_poisson_cor58"] < key["eps_poisson_rdp_thm56"]
    assert key["smallest_n_at_most_rdp_poisson"] == 20
    assert key["P[K<=5]_bin_smallest_n"] < key["P[K<=5]_poisson"] / 3


@pytest.mark.slow  # runs every experiment once (quick, ~65 s): the slow tier runs it
def test_fig6_profile_wins_for_geometric_loses_for_poisson_at_large_m(results):
    key, _ = results["fig6_dpsgd"]
    assert key["min_geometric_rdp_minus_profile"] > 0.5
    assert key["eps_poisson_profile_m10"] < key["eps_poisson_rdp_m10"]
    # Cor. 5.8's shift grows linearly in m: at m=300 it loses to RDP Thm 5.6.
    assert math.isfinite(key["poisson_profile_loses_from_m"]) and key["poisson_profile_loses_from_m"] < 300


@pytest.mark.slow  # runs every experiment once (quick, ~65 s): the slow tier runs it
def test_fig7_candidates_factor(results):
    key, _ = results["fig7_large_batch"]
    assert 2.4 < key["factor_geometric_m10"] < 3.5  # KRW: "approximately 3 times as many"
    assert key["min_geometric_rdp_minus_profile"] > 0.2
    assert key["eps_poisson_profile_m100"] > key["eps_poisson_rdp_m100"]  # the profile bound loses here


@pytest.mark.slow  # runs every experiment once (quick, ~65 s): the slow tier runs it
def test_fig8_cor62_close_to_per_candidate_bounds(results):
    key, _ = results["fig8_tuning_sigma"]
    # KRW: about 4000, 10000 and 18000 steps.
    assert 3500 <= key["steps_sigma2_m10"] <= 4500
    assert 8000 <= key["steps_sigma3_m10"] <= 11000
    assert 15000 <= key["steps_sigma4_m10"] <= 20000
    assert 0 <= key["min_gap_cor62_minus_best_candidate"] < 0.1


@pytest.mark.slow  # runs every experiment once (quick, ~65 s): the slow tier runs it
def test_accountants_agree(results):
    key, _ = results["accountants"]
    ref = key["eps_fig7_privselect_CF"]
    assert abs(key["eps_fig7_dp_accounting_PLD_0.0001"] - ref) < 2e-3
    assert 0 <= key["eps_fig7_privselect_PRV"] - ref < 5e-3
    assert key["eps_fig7_privselect_RDP"] > ref + 0.05
    assert key["sel_eps_fig7_privselect_RDP_to_profile"] < key["sel_eps_fig7_privselect_RDP"]
    assert abs(key["sel_eps_fig7_dp_accounting_RDP"] - key["sel_eps_fig7_privselect_RDP"]) < 5e-3
    assert key["sel_eps_fig7_privselect_CF"] < key["sel_eps_fig7_privselect_RDP"] - 0.2


@pytest.mark.slow  # runs every experiment once (quick, ~65 s): the slow tier runs it
def test_affordable_candidates(results):
    key, _ = results["affordable_candidates"]
    assert key["ratio_fig7_geometric_eps2"] > 2
    assert key["ratio_fig7_Poisson_eps2"] > 1


@pytest.mark.slow  # runs every experiment once (quick, ~65 s): the slow tier runs it
def test_tradeoff_selection_costs_power_and_profile_dominates_rdp(results):
    key, _ = results["tradeoff"]
    assert key["beta_one_run_alpha0.01"] > key["beta_geo10_profile_alpha0.01"] > key["beta_geo100_profile_alpha0.01"]
    assert key["beta_geo10_profile_alpha0.01"] > key["beta_geo10_rdp_alpha0.01"]
    assert key["rdp_tradeoff_above_profile_max"] < 1e-6


def test_command_line_lists_experiments_and_names_a_bad_one(capsys):
    assert experiments_main(["list"]) == 0
    assert "fig7_large_batch" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exc:
        experiments_main(["run", "fig5"])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "fig5" in err and "usage: python -m experiments run" in err


def _readme_commands() -> list[str]:
    """The experiments commands in the README's code blocks, exactly as written."""
    text = (REPO_ROOT / "README.md").read_text()
    blocks = re.findall(r"```(\w*)\n(.*?)```", text, flags=re.S)
    return [line.split("  #")[0].strip() for language, block in blocks if language in ("bash", "sh", "")
            for line in block.splitlines() if " -m experiments" in line]


@pytest.mark.slow  # seconds per case, measured: the slow tier runs it
def test_readme_experiments_commands_run_from_the_checkout_root():
    commands = _readme_commands()
    assert len(commands) >= 2 and any(" list" in c for c in commands) and any(" run " in c for c in commands)
    for command in commands:
        argv = shlex.split(command)
        if argv[0] in ("python", "python3") or not (REPO_ROOT / argv[0]).exists():
            argv[0] = sys.executable  # the README's interpreter (.venv/bin/python) when the test runs elsewhere
        done = subprocess.run(argv, cwd=REPO_ROOT, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, (command, done.stderr[-2000:])
        assert done.stdout.strip()
