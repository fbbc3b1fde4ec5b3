"""One calibration path: the noise multiplier of whatever is certified (score noise, adaptive search, a final run),
to an epsilon or to an attack-risk target met by the risk bound itself.

Each calibrated sigma is checked with the library's public certificate of the same procedure, built here
independently of the calibration (``ps.certify_adaptive``, ``ps.certify`` of the run composed with the score noise,
``ps.certify_pipeline``), and ``ps.risk`` of it: it meets the target at sigma and misses it at 0.999 sigma.
"""

from __future__ import annotations

import json
import math

import pytest

import privselect as ps
from tests.support.calibration import DELTA, FULL_BATCH, RATIO, SCORE_NOISE, SUBSAMPLED, TPR_TARGET, K


def _run(sigma: float, schedule: dict) -> ps.Mechanism:
    return ps.dpsgd(noise_multiplier=sigma, **schedule)


def _certificate(case: str, sigma: float, schedule: dict) -> ps.Certificate:
    run = _run(sigma, schedule)
    if case == "search":
        return ps.certify_adaptive(run, K, DELTA, density_ratio=RATIO)
    if case == "score_noise":
        return ps.certify(ps.compose(run, SCORE_NOISE), K, DELTA)
    return ps.certify_pipeline(run, K, DELTA, final=run)


CASES = {
    "search": ({"search": ps.AdaptiveSearch(model="parzen", density_ratio=RATIO)}, SUBSAMPLED),
    "score_noise": ({"score_noise": SCORE_NOISE}, SUBSAMPLED),
    "final": ({"final": "same"}, FULL_BATCH),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_procedure_calibrated_to_epsilon_meets_it_and_misses_it_just_below(case):
    options, schedule = CASES[case]
    sigma = ps.calibrate_noise(3.0, DELTA, k=K, **options, **schedule)
    assert _certificate(case, sigma, schedule).epsilon <= 3.0
    assert _certificate(case, 0.999 * sigma, schedule).epsilon > 3.0


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_procedure_calibrated_to_a_tpr_target_meets_it_by_the_risk_bound(case):
    options, schedule = CASES[case]
    sigma = ps.calibrate_noise(TPR_TARGET, k=K, **options, **schedule)
    assert ps.risk(_certificate(case, sigma, schedule)).tpr(1e-3) <= 0.05
    assert ps.risk(_certificate(case, 0.999 * sigma, schedule)).tpr(1e-3) > 0.05


def test_score_noise_left_out_of_the_calibration_misses_the_target():
    """The user's mistake the path prevents: calibrate without the score noise, then count it."""
    sigma = ps.calibrate_noise(TPR_TARGET, k=K, **SUBSAMPLED)
    assert ps.risk(ps.certify(_run(sigma, SUBSAMPLED), K, DELTA)).tpr(1e-3) <= 0.05
    assert ps.risk(_certificate("score_noise", sigma, SUBSAMPLED)).tpr(1e-3) > 0.05


def test_an_advantage_target_is_met_within_one_percent_by_the_risk_of_the_certificate():
    """The advantage of the tuning is read from ps.risk(certificate) (its K-mixture profile is far tighter
    near eps = 0 than the selection profile alone): the calibrated sigma's advantage is within 1% below 0.2."""
    sigma = ps.calibrate_noise(ps.RiskTarget(advantage=0.2), k=K, **SUBSAMPLED)
    advantage = ps.risk(ps.certify(_run(sigma, SUBSAMPLED), K, 1e-6)).advantage
    assert 0.198 <= advantage <= 0.2
    assert ps.risk(ps.certify(_run(0.999 * sigma, SUBSAMPLED), K, 1e-6)).advantage > 0.2


def test_calibrating_an_epsilon_without_delta_says_delta_is_required():
    with pytest.raises(ValueError, match="delta is required"):
        ps.calibrate_noise(3.0, sample_rate=0.01, steps=100)


@pytest.mark.parametrize("kwargs, word", [
    ({"search": RATIO}, "pass k"),
    ({"final": "same"}, "pass k"),
    ({"k": K, "search": RATIO, "final": "same"}, "final run"),
    ({"k": K, "score_noise": "laplace"}, "score_noise"),
    ({"k": K, "final": 3.0}, "final"),
])
def test_a_procedure_no_certificate_covers_is_refused_naming_the_parameter(kwargs, word):
    with pytest.raises((ValueError, TypeError), match=word):
        ps.calibrate_noise(3.0, DELTA, **kwargs, **SUBSAMPLED)


def test_progress_counts_certificates_only_after_two_seconds(monkeypatch, capsys):
    from privselect.selection import calibration_target

    clock = iter([0.0, 1.0, 1.5, 2.5, 3.0])
    monkeypatch.setattr(calibration_target.time, "monotonic", lambda: next(clock))
    progress = calibration_target.Progress(True, "privselect calibrate")
    counted = progress.wrap(lambda x: x * 2)
    assert [counted(1), counted(2)] == [2, 4] and progress.bar is None  # 1 s: nothing shown
    counted(3)
    assert progress.bar is not None and progress.bar.n == 3
    counted(4)
    assert progress.bar.n == 4
    progress.close()
    assert "privselect calibrate" in capsys.readouterr().err


def test_a_pipeline_certificate_risk_counts_the_final_run():
    """ps.risk of a certify_pipeline certificate reads the pipeline's profile, not the selection's alone."""
    run = _run(1.0, FULL_BATCH)
    with_final = ps.risk(ps.certify_pipeline(run, K, DELTA, final=run))
    alone = ps.risk(ps.certify(run, K, DELTA))
    one_more = ps.risk(ps.compose(run, run))  # the final run alone already leaks this much
    assert with_final.tpr(1e-3) > alone.tpr(1e-3)
    assert with_final.tpr(1e-3) >= one_more.tpr(1e-3) * (1 - 1e-9)
    assert math.isfinite(with_final.advantage)


def test_the_command_line_calibrates_the_same_procedure(capsys):
    from privselect.cli import main

    assert main(["calibrate", "--epsilon", "3", "--delta", "1e-5", "--k", "geometric:10", "--sample-rate", "0.01",
                 "--steps", "100", "--search-ratio", "1.5", "0.8", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    sigma = ps.calibrate_noise(3.0, DELTA, k=K, search=RATIO, **SUBSAMPLED)
    assert report["noise_multiplier"] == sigma and report["epsilon"] <= 3.0
    assert report["epsilon"] == _certificate("search", sigma, SUBSAMPLED).epsilon
    with pytest.raises(SystemExit):
        main(["calibrate", "--epsilon", "3", "--sample-rate", "0.01", "--steps", "100", "--final"])
    assert "--k" in capsys.readouterr().err
