"""A calibration target below what the score noise and the adaptive search cost with no training at all is refused
before any search, with that floor in the message; a target just above it is met.

The floor is checked against certificates computed here independently of the calibration: the score noise alone
certified with the same K law (``ps.certify``), or with the same density ratio (``ps.certify_adaptive``), and
``ps.risk`` of that. "No search" is counted, not timed: the certifier the calibration calls is wrapped.
"""

from __future__ import annotations

import pytest

import privselect as ps
from privselect.selection import calibration_target
from tests.support.calibration import DELTA, FULL_BATCH, RATIO, K

#: Score noise whose certificate is a closed form (Gaussian steps composed with a Gaussian: each certificate is cheap).
GAUSSIAN_SCORE_NOISE = ps.Gaussian(noise_multiplier=3.0)


def _counted(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Count every certificate the calibration asks for (i.i.d. selection, adaptive search, one run's profile)."""
    calls: list[str] = []
    for name in ("certify", "certify_adaptive", "privacy_profile"):
        original = getattr(calibration_target, name)

        def counted(*args, _original=original, _name=name, **kwargs):
            calls.append(_name)
            return _original(*args, **kwargs)
        monkeypatch.setattr(calibration_target, name, counted)
    return calls


def test_epsilon_target_below_the_score_noise_floor_is_refused_with_the_floor_after_one_certificate(monkeypatch):
    floor = ps.certify(GAUSSIAN_SCORE_NOISE, K, DELTA).epsilon  # the score noise alone, the same K law
    calls = _counted(monkeypatch)
    with pytest.raises(ps.UnreachableTargetError, match="target_epsilon=.* is below the floor") as refused:
        ps.calibrate_noise(0.99 * floor, DELTA, k=K, score_noise=GAUSSIAN_SCORE_NOISE, **FULL_BATCH)
    assert refused.value.floor == pytest.approx(floor, rel=1e-12)
    assert f"{floor:.6g}" in str(refused.value) and "score_noise" in str(refused.value)
    assert isinstance(refused.value, ps.CertificationError)
    assert calls == ["certify"]  # the floor itself, no search


def test_epsilon_target_just_above_the_score_noise_floor_is_met():
    floor = ps.certify(GAUSSIAN_SCORE_NOISE, K, DELTA).epsilon
    sigma = ps.calibrate_noise(1.02 * floor, DELTA, k=K, score_noise=GAUSSIAN_SCORE_NOISE, **FULL_BATCH)
    run = ps.dpsgd(noise_multiplier=sigma, **FULL_BATCH)
    assert floor < ps.certify(ps.compose(run, GAUSSIAN_SCORE_NOISE), K, DELTA).epsilon <= 1.02 * floor


def test_risk_target_below_the_score_noise_floor_is_refused_with_the_risk_floor(monkeypatch):
    floor = ps.risk(ps.certify(GAUSSIAN_SCORE_NOISE, K, 1e-6)).tpr(1e-3)
    calls = _counted(monkeypatch)
    with pytest.raises(ps.UnreachableTargetError, match="TPR at FPR 0.001") as refused:
        ps.calibrate_noise(ps.RiskTarget(tpr=0.99 * floor, fpr=1e-3), k=K, score_noise=GAUSSIAN_SCORE_NOISE,
                           **FULL_BATCH)
    assert refused.value.floor == pytest.approx(floor, rel=1e-12)
    assert f"{floor:.6g}" in str(refused.value)
    assert calls == ["certify"]


def test_risk_target_just_above_the_score_noise_floor_is_met():
    floor = ps.risk(ps.certify(GAUSSIAN_SCORE_NOISE, K, 1e-6)).tpr(1e-3)
    target = ps.RiskTarget(tpr=1.05 * floor, fpr=1e-3)
    sigma = ps.calibrate_noise(target, k=K, score_noise=GAUSSIAN_SCORE_NOISE, **FULL_BATCH)
    run = ps.dpsgd(noise_multiplier=sigma, **FULL_BATCH)
    assert ps.risk(ps.certify(ps.compose(run, GAUSSIAN_SCORE_NOISE), K, 1e-6)).tpr(1e-3) <= 1.05 * floor


def test_score_noise_with_an_adaptive_search_is_refused_below_their_joint_floor(monkeypatch):
    floor = ps.certify_adaptive(GAUSSIAN_SCORE_NOISE, K, DELTA, density_ratio=RATIO).epsilon
    calls = _counted(monkeypatch)
    with pytest.raises(ps.UnreachableTargetError, match="score_noise and search cost") as refused:
        ps.calibrate_noise(0.99 * floor, DELTA, k=K, score_noise=GAUSSIAN_SCORE_NOISE, search=RATIO, **FULL_BATCH)
    assert refused.value.floor == pytest.approx(floor, rel=1e-12)
    assert calls == ["certify_adaptive"]


def test_one_run_with_score_noise_is_refused_below_the_score_noise_alone(monkeypatch):
    floor = ps.privacy_profile(GAUSSIAN_SCORE_NOISE).epsilon(DELTA)
    calls = _counted(monkeypatch)
    with pytest.raises(ps.UnreachableTargetError) as refused:
        ps.calibrate_noise(0.99 * floor, DELTA, score_noise=GAUSSIAN_SCORE_NOISE, **FULL_BATCH)
    assert refused.value.floor == pytest.approx(floor, rel=1e-12)
    assert calls == ["privacy_profile"]


def test_the_command_line_names_the_floor(capsys):
    from privselect.cli import main

    floor = ps.certify(GAUSSIAN_SCORE_NOISE, K, DELTA).epsilon
    with pytest.raises(SystemExit):
        main(["calibrate", "--epsilon", f"{0.99 * floor}", "--delta", "1e-5", "--k", "geometric:10",
              "--sample-rate", "1", "--steps", "4", "--score-noise", "gaussian:3"])
    assert f"below the floor {floor:.6g}" in capsys.readouterr().err
