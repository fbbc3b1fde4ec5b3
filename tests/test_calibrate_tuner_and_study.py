"""PrivateTuner.calibrate and PrivateStudy.calibrate are ps.calibrate_noise of the certificate they issue.

Each calibrated sigma is checked with the certificate the front end itself issues after calibration
(``tuner.certificate``, ``study.certificate``, and ``ps.risk`` of it): it meets the target at sigma, and a front end
built the same way at 0.999 sigma issues one that misses it. The sigma is the one ``ps.calibrate_noise`` returns for
the same arguments: K's law, delta, score noise, search and final run read from the front end.
"""

from __future__ import annotations

import pytest

import privselect as ps
from privselect.integrations.optuna import PrivateStudy
from tests.support.calibration import DELTA, FULL_BATCH, RATIO, SCORE_NOISE, SUBSAMPLED, TPR_TARGET, K

SPACE = {"lr": ps.space.Uniform(0.0, 1.0)}


def _train(params, data, rng):
    return 0.0


def _final_run(sigma: float, schedule: dict) -> ps.FinalRun:
    return ps.FinalRun(lambda params, data, rng: None, ps.dpsgd(noise_multiplier=sigma, **schedule))


def _tuner(sigma: float, schedule: dict, **options):
    return ps.PrivateTuner(_train, SPACE, ps.dpsgd(noise_multiplier=sigma, **schedule), K, DELTA, **options)


def _study(sigma: float, schedule: dict, **options):
    return PrivateStudy(ps.dpsgd(noise_multiplier=sigma, **schedule), K, DELTA, **options)


FRONT_ENDS = {"tuner": _tuner, "study": _study}
#: case -> (the front end's options at sigma, calibrate's arguments beyond the schedule, calibrate_noise's, schedule)
CASES = {
    "score_noise": (lambda sigma: {"score_noise": SCORE_NOISE}, {}, {"score_noise": SCORE_NOISE}, FULL_BATCH),
    "final": (lambda sigma: {"final": _final_run(sigma, FULL_BATCH)}, {"final": "same"}, {"final": "same"},
              FULL_BATCH),
}
TARGETS = {"epsilon 3": 3.0, "tpr 0.05 at fpr 1e-3": TPR_TARGET}


def _measured(target, certificate: ps.Certificate) -> float:
    """The certified quantity the target bounds, read from the front end's certificate."""
    return certificate.epsilon if target == 3.0 else ps.risk(certificate).tpr(1e-3)


def _limit(target) -> float:
    return 3.0 if target == 3.0 else 0.05


@pytest.mark.parametrize("target_name", sorted(TARGETS))
@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("front_end", sorted(FRONT_ENDS))
def test_a_calibrated_front_end_issues_a_certificate_meeting_the_target_and_missing_it_just_below(
        front_end, case, target_name):
    build, (options, calibrate_args, noise_args, schedule) = FRONT_ENDS[front_end], CASES[case]
    target = TARGETS[target_name]
    tuned = build(1.0, schedule, **options(1.0))
    sigma = tuned.calibrate(target, **calibrate_args, **schedule)
    assert sigma == ps.calibrate_noise(target, DELTA, k=K, **noise_args, **schedule)  # one path
    assert tuned.noise_multiplier == sigma and tuned.privacy == ps.dpsgd(noise_multiplier=sigma, **schedule)
    assert _measured(target, tuned.certificate) <= _limit(target)
    below = build(0.999 * sigma, schedule, **options(0.999 * sigma))
    assert _measured(target, below.certificate) > _limit(target)


@pytest.mark.parametrize("target_name", sorted(TARGETS))
def test_an_adaptive_study_is_calibrated_for_the_k_mixture_certificate_it_issues(target_name):
    """PrivateStudy(adaptive=True) releases K and every trial: its certificate is the K-mixture bound."""
    target = TARGETS[target_name]
    study = _study(1.0, SUBSAMPLED, adaptive=True)
    sigma = study.calibrate(target, **SUBSAMPLED)
    assert sigma == ps.calibrate_noise(target, DELTA, k=K, bound="mixture", **SUBSAMPLED)
    assert study.certificate.bound == "mixture"
    assert _measured(target, study.certificate) <= _limit(target)
    assert _measured(target, _study(0.999 * sigma, SUBSAMPLED, adaptive=True).certificate) > _limit(target)


@pytest.mark.parametrize("front_end", sorted(FRONT_ENDS))
def test_a_front_end_with_an_adaptive_search_is_calibrated_for_its_search(front_end):
    search = ps.AdaptiveSearch(model="parzen", density_ratio=RATIO)
    options = {"search": search} if front_end == "tuner" else {"search": search, "search_space": SPACE}
    tuned = FRONT_ENDS[front_end](1.0, SUBSAMPLED, **options)
    sigma = tuned.calibrate(3.0, search=RATIO, **SUBSAMPLED)  # the same search named again is accepted
    assert sigma == ps.calibrate_noise(3.0, DELTA, k=K, search=RATIO, **SUBSAMPLED)
    assert tuned.certificate.epsilon <= 3.0
    assert FRONT_ENDS[front_end](0.999 * sigma, SUBSAMPLED, **options).certificate.epsilon > 3.0


def test_a_final_run_kept_as_declared_is_certified_as_declared():
    """Without final='same', the FinalRun keeps its own privacy: the calibration counts that one."""
    final = _final_run(5.0, FULL_BATCH)
    tuner = _tuner(1.0, FULL_BATCH, final=final)
    sigma = tuner.calibrate(3.0, **FULL_BATCH)
    assert sigma == ps.calibrate_noise(3.0, DELTA, k=K, final=final.privacy, **FULL_BATCH)
    assert tuner.final is final and tuner.certificate.epsilon <= 3.0


def test_calibrate_k_mean_keeps_calibrating_the_number_of_runs():
    tuner = _tuner(5.0, FULL_BATCH).calibrate_k_mean(3.0)
    assert tuner.certificate.epsilon <= 3.0 and tuner.k.mean > 1.0


CONFLICTS = [
    ({}, {"score_noise": ps.Laplace(3.0)}, "score_noise"),
    ({"score_noise": SCORE_NOISE}, {"score_noise": ps.Laplace(3.0)}, "score_noise"),
    ({}, {"search": RATIO}, "search"),
    ({}, {"final": "same"}, "final"),
    ({"final": _final_run(2.0, SUBSAMPLED)}, {"final": ps.Gaussian(5.0)}, "final"),
    ({}, {"delta": 1e-6}, "delta"),
]


@pytest.mark.parametrize("own, given, word", CONFLICTS)
@pytest.mark.parametrize("front_end", sorted(FRONT_ENDS))
def test_an_argument_conflicting_with_the_front_end_is_refused_naming_it(front_end, own, given, word):
    tuned = FRONT_ENDS[front_end](1.0, SUBSAMPLED, **own)
    before = tuned.privacy
    with pytest.raises(ValueError, match=rf"^{word}="):
        tuned.calibrate(3.0, **given, **SUBSAMPLED)
    assert tuned.privacy == before and tuned.noise_multiplier is None  # nothing changed


def test_an_adaptive_study_refuses_a_density_ratio_search_naming_search():
    with pytest.raises(ValueError, match="^search=.*adaptive=True"):
        _study(1.0, SUBSAMPLED, adaptive=True).calibrate(3.0, search=RATIO, **SUBSAMPLED)


def test_what_has_no_one_noise_multiplier_is_refused_naming_the_parameter():
    space = {"sigma": ps.space.Choice([1.0, 2.0])}
    callable_privacy = ps.PrivateTuner(_train, space, lambda p: ps.Gaussian(p["sigma"]), K, DELTA)
    with pytest.raises(ValueError, match="^privacy:"):
        callable_privacy.calibrate(3.0, **SUBSAMPLED)
    study = PrivateStudy(lambda p: ps.Gaussian(p["sigma"]), K, DELTA, privacy_space=space)
    with pytest.raises(ValueError, match="^privacy:"):
        study.calibrate(3.0, **SUBSAMPLED)
    with pytest.raises(ValueError, match="^tuning_rate="):
        _tuner(1.0, SUBSAMPLED, tuning_rate=0.5).calibrate(3.0, **SUBSAMPLED)


@pytest.mark.parametrize("target, schedule, word", [
    (-1.0, SUBSAMPLED, "target_epsilon"),
    (3.0, {"sample_rate": 2.0, "steps": 100}, "sample_rate"),
    (3.0, {"sample_rate": 0.01}, "steps or epochs"),
    (3.0, {**SUBSAMPLED, "sampling": "shuffle"}, "shuffl"),
])
@pytest.mark.parametrize("front_end", sorted(FRONT_ENDS))
def test_bad_input_is_refused_naming_the_parameter(front_end, target, schedule, word):
    with pytest.raises(ValueError, match=word):
        FRONT_ENDS[front_end](1.0, SUBSAMPLED).calibrate(target, **schedule)
