"""The command line: Opacus / TF-Privacy flags, --json, errors that name the flag, the demo."""

import json
import math
import subprocess
import sys

import pytest

import privselect as ps
from privselect.cli import main
from tests.support import REPO_ROOT


def _run(argv, capsys):
    code = main(argv)
    return code, capsys.readouterr().out


def _error(argv, capsys) -> str:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    return capsys.readouterr().err


@pytest.mark.slow  # seconds per case, measured: the slow tier runs it
def test_default_accountant_is_the_librarys(capsys):
    code, out = _run(["certify", "--steps", "200", "--json"], capsys)
    report = json.loads(out)
    expected = ps.privacy_profile(ps.Gaussian(1.1).poisson_subsample(256 / 60000).compose(200))
    assert code == 0 and report["accountant"] == "auto"
    assert report["epsilon"] == pytest.approx(float(expected.epsilon_bounds(1e-5)[1]), rel=1e-12)


def test_certify_defaults_to_the_dpsgd_example(capsys):
    code, out = _run(["certify", "--accountant", "rdp", "--json"], capsys)
    report = json.loads(out)
    assert code == 0 and report["delta"] == 1e-5 and report["one_run"]["steps"] == math.ceil(60 / (256 / 60000))
    expected = ps.privacy_profile(ps.Gaussian(1.1).poisson_subsample(256 / 60000).compose(14063), accountant="rdp")
    assert report["epsilon"] == pytest.approx(float(expected.epsilon(1e-5)), rel=1e-12)


@pytest.mark.parametrize("flags", [
    ["--batch-size", "4096", "--dataset-size", "50000", "--epochs", "2"],
    ["--sample-rate", "4096/50000", "--steps", "25"],
    ["--rate", "0.08192", "--epochs", "2"],
])
def test_opacus_vocabulary_gives_the_same_mechanism(flags, capsys):
    """rate = B / N = 4096/50000 and steps = ceil(epochs / rate) = 25, however the flags say it."""
    code, out = _run(["certify", "--noise-multiplier", "2", *flags, "--accountant", "rdp", "--json"], capsys)
    report = json.loads(out)
    assert code == 0 and report["one_run"] == {"mechanism": "gaussian", "noise_multiplier": 2.0,
                                               "sample_rate": 4096 / 50000, "steps": 25, "sampling": "poisson"}
    expected = ps.dpsgd(noise_multiplier=2.0, sample_rate=4096 / 50000, steps=25)
    assert report["epsilon"] == pytest.approx(float(ps.privacy_profile(expected, accountant="rdp").epsilon(1e-5)),
                                              rel=1e-12)


def test_sampling_without_replacement_is_the_librarys(capsys):
    code, out = _run(["certify", "--sampling", "without_replacement", "--batch-size", "64", "--dataset-size", "6400",
                      "--steps", "50", "--accountant", "rdp", "--json"], capsys)
    report = json.loads(out)
    expected = ps.dpsgd(noise_multiplier=1.1, batch_size=64, dataset_size=6400, steps=50, sampling="without_replacement")
    assert code == 0 and report["one_run"]["sampling"] == "without_replacement"
    assert report["epsilon"] == pytest.approx(float(ps.privacy_profile(expected, accountant="rdp").epsilon(1e-5)),
                                              rel=1e-12)


def test_certify_with_k_prints_the_certificate_json_equal_to_the_library(capsys):
    code, out = _run(["certify", "--noise-multiplier", "4", "--rate", "1", "--steps", "1", "--delta", "1e-6",
                      "--k", "geometric:30", "--json"], capsys)
    cert = json.loads(out)
    expected = ps.certify(ps.Gaussian(4.0).compose(1), ps.Geometric(mean=30), 1e-6)
    assert code == 0 and cert == json.loads(expected.to_json())


def test_certify_with_k_human_output(capsys):
    code, out = _run(["certify", "--noise-multiplier", "4", "--rate", "1", "--steps", "1", "--k", "binomial:5,n=50"],
                     capsys)
    last = out.strip().splitlines()[-1]
    assert code == 0 and "only the best run is released" in out and last.startswith("certified:")
    assert last.endswith("by Koskela-Redberg-Wang 2024, Thm 5.7")  # the theorem, not the family's name


@pytest.mark.parametrize("argv, flag", [
    (["--noise-multiplier", "-1"], "--noise-multiplier"),
    (["--rate", "4096/0"], "--sample-rate"),
    (["--rate", "2"], "--sample-rate"),
    (["--steps", "0"], "--steps"),
    (["--delta", "1"], "--delta"),
    (["--batch-size", "10"], "--batch-size"),
    (["--dataset-size", "10"], "--dataset-size"),
    (["--batch-size", "100", "--dataset-size", "10"], "--batch-size"),
    (["--steps", "10", "--epochs", "2"], "--epochs"),
    (["--rate", "0.1", "--batch-size", "2", "--dataset-size", "20"], "--batch-size"),
    (["--k", "geometric"], "--k"),
    (["--k", "tnb:10"], "--k"),
    (["--k", "geometric:10,n=3"], "--k"),
    (["--k", "geometric:-1"], "--k"),
    (["--k", "geometric:10", "--accountant", "all"], "--accountant"),
    (["--scale", "2"], "--scale"),
    (["--mechanism", "laplace", "--noise-multiplier", "2"], "--noise-multiplier"),
    (["--accountant", "exact"], "--accountant exact"),
])
def test_errors_name_the_flag_and_print_only_the_subcommand_usage(argv, flag, capsys):
    err = _error(["certify", *argv], capsys)
    assert flag in err and "usage: privselect certify" in err
    assert "{certify,calibrate,demo}" not in err  # not the top-level usage


def _pld_bracket(kind, noise, rate, steps, delta):
    """dp-accounting's optimistic and pessimistic PLD eps(delta) (mesh 1e-4): a lower and an upper reference."""
    from dp_accounting.pld import privacy_loss_distribution as pld

    build = pld.from_gaussian_mechanism if kind == "gaussian" else pld.from_laplace_mechanism
    return [float(build(noise, sampling_prob=rate, value_discretization_interval=1e-4, pessimistic_estimate=p,
                        use_connect_dots=p).self_compose(steps).get_epsilon_for_delta(delta)) for p in (False, True)]


@pytest.mark.slow  # seconds per case, measured: the slow tier runs it
@pytest.mark.parametrize("mechanism, noise_flag", [("gaussian", "--noise-multiplier"), ("laplace", "--scale")])
@pytest.mark.parametrize("rate, steps", [(None, 300), (0.05, 100), (1.0, 10)])
def test_every_mechanism_flag_certifies_at_every_rate_between_dp_accountings_plds(mechanism, noise_flag, rate, steps,
                                                                                 capsys):
    """--mechanism gaussian and laplace, at the default rate (256/60000), a larger one and the full batch:
    the certified eps lies between dp-accounting's optimistic and pessimistic PLD on the same run."""
    pytest.importorskip("dp_accounting")
    rate_flags = [] if rate is None else ["--sample-rate", str(rate)]
    code, out = _run(["certify", "--mechanism", mechanism, noise_flag, "2", *rate_flags, "--steps", str(steps),
                      "--json"], capsys)
    report = json.loads(out)
    optimistic, pessimistic = _pld_bracket(mechanism, 2.0, rate or 256 / 60000, steps, 1e-5)
    assert code == 0 and report["one_run"]["mechanism"] == mechanism
    assert report["one_run"]["scale" if mechanism == "laplace" else "noise_multiplier"] == 2.0
    assert optimistic * (1 - 1e-6) <= report["epsilon"] <= pessimistic * (1 + 1e-3)


@pytest.mark.slow  # seconds per case, measured: the slow tier runs it
def test_laplace_at_the_default_rate_runs_as_the_issue_wrote_it(capsys):
    """`privselect certify --mechanism laplace --scale 2` (the DP-SGD example's 14063 steps at rate 256/60000)
    certifies below pure DP's composition bound, 14063 x log(1 + q (e^(1/2) - 1))."""
    code, out = _run(["certify", "--mechanism", "laplace", "--scale", "2", "--json"], capsys)
    report = json.loads(out)
    pure = 14063 * math.log1p(256 / 60000 * math.expm1(0.5))
    assert code == 0 and report["one_run"]["scale"] == 2.0 and report["one_run"]["steps"] == 14063
    assert 0 < report["epsilon"] < pure


def test_laplace_without_replacement_is_the_replace_one_description(capsys):
    """Fixed-size batches drawn afresh at every step of a Laplace run: the library's replace-one description, which costs
    more than Poisson sampling's add/remove at the same rate."""
    flags = ["certify", "--mechanism", "laplace", "--scale", "2", "--batch-size", "64", "--dataset-size", "6400",
             "--steps", "50", "--json"]
    code, out = _run([*flags, "--sampling", "without_replacement"], capsys)
    fixed = json.loads(out)
    expected = ps.Laplace(2.0).sample_without_replacement(0.01).compose(50)
    assert code == 0 and fixed["one_run"]["sampling"] == "without_replacement"
    assert fixed["epsilon"] == pytest.approx(float(ps.privacy_profile(expected).epsilon(1e-5)), rel=1e-12)
    code, out = _run(flags, capsys)
    assert code == 0 and fixed["epsilon"] > json.loads(out)["epsilon"]


@pytest.mark.slow  # seconds per case, measured: the slow tier runs it
def test_calibrate_prints_the_librarys_noise_multiplier_and_its_certificate(capsys):
    code, out = _run(["calibrate", "--epsilon", "2", "--sample-rate", "0.01", "--steps", "500", "--json"], capsys)
    report = json.loads(out)
    sigma = ps.calibrate_noise(2.0, 1e-5, sample_rate=0.01, steps=500)
    run = ps.dpsgd(noise_multiplier=report["noise_multiplier"], sample_rate=0.01, steps=500)
    assert code == 0 and report["solved_for"] == "noise_multiplier" and report["noise_multiplier"] == sigma
    assert report["epsilon"] == float(ps.privacy_profile(run).epsilon(1e-5)) <= 2.0
    code, out = _run(["calibrate", "--epsilon", "2", "--sample-rate", "0.01", "--steps", "500"], capsys)
    assert code == 0 and f"noise multiplier: {sigma:.6f}" in out and out.strip().splitlines()[-1].startswith("certified:")


@pytest.mark.slow  # seconds per case, measured: the slow tier runs it
def test_calibrate_with_k_and_a_noise_multiplier_gives_the_most_steps(capsys):
    code, out = _run(["calibrate", "--epsilon", "4", "--noise-multiplier", "2", "--batch-size", "100",
                      "--dataset-size", "1000", "--k", "geometric:5", "--json"], capsys)
    report = json.loads(out)
    k = ps.Geometric(mean=5)
    at = lambda t: ps.certify(ps.dpsgd(noise_multiplier=2.0, sample_rate=0.1, steps=t), k, 1e-5).epsilon  # noqa: E731
    assert code == 0 and report["solved_for"] == "steps" and report["k"] == k.to_dict()
    assert at(report["steps"]) <= 4.0 < at(report["steps"] + 1)


@pytest.mark.parametrize("argv, flag", [
    ([], "--epsilon"),
    (["--epsilon", "0"], "--epsilon"),
    (["--epsilon", "3", "--mechanism", "laplace"], "--mechanism"),
    (["--epsilon", "3", "--scale", "2"], "--scale"),
    (["--epsilon", "3", "--noise-multiplier", "1", "--steps", "10"], "--noise-multiplier"),
    (["--epsilon", "3", "--k", "geometric:0.5"], "--k"),
    (["--epsilon", "3", "--accountant", "all"], "--accountant"),
])
def test_calibrate_errors_name_the_flag(argv, flag, capsys):
    err = _error(["calibrate", *argv], capsys)
    assert flag in err and "usage: privselect calibrate" in err


def test_help_has_no_raw_markup_and_every_flag_has_help(capsys):
    for argv in (["--help"], ["certify", "--help"], ["calibrate", "--help"], ["demo", "--help"]):
        with pytest.raises(SystemExit):
            main(argv)
        text = capsys.readouterr().out
        assert "``" not in text and ":class:" not in text and ":func:" not in text
    from privselect.cli import build_parser

    parser = build_parser()
    subparsers = next(a for a in parser._actions if a.dest == "command").choices
    for name, sub in subparsers.items():
        for action in sub._actions:
            assert action.help, (name, action.option_strings)


@pytest.mark.slow  # seconds per case, measured: the slow tier runs it
def test_demo_json_is_the_certificate(capsys):
    code, out = _run(["demo", "--json"], capsys)
    cert = json.loads(out)
    assert code == 0 and cert["theorem"] == "Koskela-Redberg-Wang 2024, Thm 5.2"
    assert 0 < cert["epsilon"] < 20 and cert["delta"] == 1e-5


@pytest.mark.slow  # seconds per case, measured: the slow tier runs it
def test_console_script_module_entry_point():
    done = subprocess.run([sys.executable, "-m", "privselect", "certify", "--accountant", "rdp", "--steps", "10"],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "certified:" in done.stdout, done.stderr


@pytest.mark.slow  # seconds per case, measured: the slow tier runs it
def test_one_run_table_reports_the_smallest_certified_bound_only(capsys):
    code, out = _run(["certify", "--steps", "200", "--accountant", "all", "--json"], capsys)
    report = json.loads(out)
    rows = [r for r in report["results"] if "epsilon" in r]
    assert code == 0 and {r["accountant"] for r in report["results"]} == {"allocation", "prv", "pld", "cf", "rdp", "exact"}
    assert report["epsilon"] == min(r["epsilon"] for r in rows if r["certified"])
    assert all(r["certified"] for r in rows if r["accountant"] == report["accountant"])


@pytest.mark.slow  # seconds per case, measured: the slow tier runs it
def test_readme_certify_commands_run_as_written():
    """Every `privselect certify` line of the README's shell blocks exits 0 (run through this interpreter)."""
    import re
    import shlex

    text = (REPO_ROOT / "README.md").read_text()
    lines = [line.strip() for language, block in re.findall(r"```(\w*)\n(.*?)```", text, flags=re.S)
             if language in ("bash", "sh", "") for line in block.splitlines() if "privselect certify" in line]
    assert len(lines) >= 2
    for line in lines:
        argv = shlex.split(line)
        assert argv[0].endswith("privselect")
        done = subprocess.run([sys.executable, "-m", "privselect", *argv[1:]], cwd=REPO_ROOT, capture_output=True,
                              text=True, timeout=600)
        assert done.returncode == 0, (line, done.stderr[-2000:])
        if "--json" in argv:
            assert json.loads(done.stdout)["epsilon"] > 0
