"""PrivateTuner(search=) and PrivateStudy(search=): the adaptive search end to end, its certificate, its refusals,
and what leaves (only the winner; the search's history dies with the selection)."""

import gc
import pickle

import numpy as np
import optuna
import pytest

import privselect as ps
from privselect.errors import CandidatePrivacyError, TrainerContractError
from privselect.integrations.optuna import PrivateStudy
from privselect.tuning.adaptive import AdaptiveRun
from privselect.tuning.space import Choice, LogUniform

SECRET = 987654.321  # a score value that must never be found in anything released


def _train(params, data, rng):
    return float(-((np.log10(params["lr"]) + 2.0) ** 2) + data + rng.normal(0, 0.01))


def _tuner(**kwargs):
    options = {"seed": 5, "search": ps.AdaptiveSearch(model="parzen", density_ratio=(2.0, 0.75), grid=16)}
    options.update(kwargs)
    return ps.PrivateTuner(_train, {"lr": LogUniform(1e-4, 1.0)}, ps.Gaussian(4.0), ps.Geometric(mean=8), 1e-5,
                           **options)


def test_tuner_certificate_is_certify_adaptive_of_the_run():
    tuner = _tuner()
    expected = ps.certify_adaptive(ps.Gaussian(4.0), ps.Geometric(mean=8), 1e-5, density_ratio=(2.0, 0.75))
    assert tuner.certificate == expected
    assert tuner.certificate.epsilon > ps.certify(ps.Gaussian(4.0), ps.Geometric(mean=8), 1e-5).epsilon


def test_tuner_runs_are_reproducible_and_release_the_winner_only():
    first, second = _tuner().run(0.0), _tuner().run(0.0)
    assert first.best_params == second.best_params and first.best_score == second.best_score
    assert first.n_runs is None and set(first.to_dict()) == {"best_params", "best_score", "selected", "certificate"}
    assert 1e-4 <= first.best_params["lr"] <= 1.0


def test_score_noise_is_composed_into_the_adaptive_certificate():
    tuner = _tuner(score_noise=ps.Laplace(0.5))
    expected = ps.certify_adaptive(ps.compose(ps.Gaussian(4.0), ps.Laplace(0.5)), ps.Geometric(mean=8), 1e-5,
                                   density_ratio=(2.0, 0.75))
    assert tuner.certificate.epsilon == pytest.approx(expected.epsilon)


def test_no_history_survives_the_selection():
    tuner = _tuner()
    result = tuner.run(SECRET)
    gc.collect()
    assert not [obj for obj in gc.get_objects() if isinstance(obj, AdaptiveRun)]
    blob = pickle.dumps((tuner.search, result.certificate, result.best_params))
    assert repr(SECRET).encode() not in blob


@pytest.mark.slow  # seconds per case, measured: the slow tier runs it
def test_callable_privacy_takes_the_supremum_and_checks_candidates():
    space = {"lr": LogUniform(1e-4, 1.0), "sigma": Choice([2.0, 4.0])}
    tuner = ps.PrivateTuner(_train, space, lambda p: ps.Gaussian(p["sigma"]), ps.Geometric(mean=8), 1e-5, seed=1,
                            search=ps.AdaptiveSearch(model="gp", density_ratio=(2.0, 0.75), grid=8))
    worst = ps.certify_adaptive(ps.Gaussian(2.0), ps.Geometric(mean=8), 1e-5, density_ratio=(2.0, 0.75))
    assert tuner.certificate.epsilon == pytest.approx(worst.epsilon)
    assert tuner.run(0.0).best_params["sigma"] in (2.0, 4.0)


@pytest.mark.parametrize("kwargs, word", [({"n_jobs": 2}, "n_jobs=1"), ({"reveal_k": True}, "reveal_k"),
                                          ({"search": "gp"}, "AdaptiveSearch")])
def test_tuner_refuses_what_the_adaptive_certificate_does_not_cover(kwargs, word):
    with pytest.raises((ValueError, TypeError), match=word):
        _tuner(**kwargs)


def test_tuner_refuses_poisson_k_with_the_library_error():
    tuner = ps.PrivateTuner(_train, {"lr": LogUniform(1e-4, 1.0)}, ps.Gaussian(4.0), ps.Poisson(mean=8), 1e-5,
                            search=ps.AdaptiveSearch(density_ratio=(1.5, 0.8)))
    with pytest.raises(ps.CertificationError, match="truncated negative binomial"):
        tuner.run(0.0)


def _objective(trial):
    lr = trial.suggest_float("lr", 1e-4, 1.0, log=True)
    act = trial.suggest_categorical("act", ["relu", "tanh"])
    extra = trial.suggest_float("extra", 0.0, 1.0)  # not declared: drawn from its own law
    trial.set_user_attr("act", act)
    return -((np.log10(lr) + 2.0) ** 2) + (0.1 if act == "relu" else 0.0) + 0.0 * extra + trial.rng.normal(0, 0.01)


SPACE = {"lr": optuna.distributions.FloatDistribution(1e-4, 1.0, log=True),
         "act": optuna.distributions.CategoricalDistribution(["relu", "tanh"])}


def _study(**kwargs):
    options = {"seed": 2, "search": ps.AdaptiveSearch(model="gp", density_ratio=(1.5, 0.8), grid=16),
               "search_space": SPACE}
    options.update(kwargs)
    return PrivateStudy(ps.Gaussian(4.0), ps.Geometric(mean=6), 1e-5, **options)


@pytest.mark.slow  # seconds per case, measured: the slow tier runs it
def test_study_with_suggest_vocabulary_releases_a_frozen_winner():
    result = _study().optimize(_objective)
    assert set(result.best_params) == {"lr", "act", "extra"} and result.n_trials is None
    assert result.best_trial.number == -1 and result.best_trial.params == result.best_params
    assert result.certificate == ps.certify_adaptive(ps.Gaussian(4.0), ps.Geometric(mean=6), 1e-5,
                                                     density_ratio=(1.5, 0.8))
    again = _study().optimize(_objective)
    assert again.best_params == result.best_params


def test_study_refuses_a_suggestion_whose_law_differs_from_the_declared_one():
    def objective(trial):
        return trial.suggest_float("lr", 1e-3, 1.0, log=True)

    with pytest.raises(TrainerContractError, match="search_space declares"):
        _study().dry_run(objective)  # on public data the usage error is raised with its message
    with pytest.raises(TrainerContractError, match=r"'lr' from LogUniform\(low=0.001.*search_space declares "
                       r"LogUniform\(low=0.0001.*before any trial"):
        _study().optimize(objective)  # the law is the code's: named before any trial runs


def test_the_law_probe_stops_the_objective_before_it_trains():
    trained = []

    def objective(trial):
        lr = trial.suggest_float("lr", 1e-4, 1.0, log=True)
        act = trial.suggest_categorical("act", ["relu", "tanh"])
        trained.append(trial.number)  # "training": only the K certified trials reach it
        return -abs(np.log10(lr) + 2) + (act == "relu")

    from privselect.integrations.optuna import check_declared_laws

    check_declared_laws(objective, {"lr": LogUniform(1e-4, 1.0), "act": Choice(["relu", "tanh"])}, None)
    assert trained == []


@pytest.mark.parametrize("kwargs, word", [({"n_jobs": 2}, "n_jobs=1"), ({"search_space": None}, "search_space"),
                                          ({"adaptive": True}, "adaptive=True"),
                                          ({"sampler": optuna.samplers.TPESampler(), "adaptive": True}, "sampler=")])
def test_study_refuses_what_the_adaptive_certificate_does_not_cover(kwargs, word):
    with pytest.raises((ValueError, TypeError), match=word):
        _study(**kwargs)


def test_tpe_refusal_points_to_the_adaptive_search():
    with pytest.raises(ps.PrivateStudyError, match="AdaptiveSearch") as info:
        PrivateStudy(ps.Gaussian(4.0), ps.Geometric(mean=6), 1e-5, sampler=optuna.samplers.TPESampler())
    assert "docs/adaptive.md" in str(info.value) and "adaptive=True" in str(info.value)


def test_composition_with_adaptive_true_stays():
    study = PrivateStudy(ps.Gaussian(4.0), ps.Geometric(mean=6), 1e-5, sampler=optuna.samplers.TPESampler(seed=0),
                         adaptive=True)
    assert study.certificate.bound == "mixture"
    assert study.certificate.epsilon > _study().certificate.epsilon


def test_a_candidate_whose_privacy_leaves_the_declared_law_is_never_trained():
    calls, trained = {"n": 0, "drift": False}, []

    def drifting_privacy(params):  # declares sigma in {2, 4}, then answers a weaker run
        calls["n"] += 1
        return ps.Gaussian(0.5 if calls["drift"] else params["sigma"])

    def train(params, data, rng):
        trained.append(params)
        return 1.0

    space = {"lr": LogUniform(1e-4, 1.0), "sigma": Choice([2.0, 4.0])}
    tuner = ps.PrivateTuner(train, space, drifting_privacy, ps.Geometric(mean=8), 1e-5, seed=1,
                            search=ps.AdaptiveSearch(model="gp", density_ratio=(2.0, 0.75), grid=8))
    assert tuner.certificate.epsilon > 0  # built before the drift
    calls["drift"] = True
    with pytest.raises(CandidatePrivacyError, match="0.5"):  # dry_run names the problem
        tuner.dry_run(0.0)
    with pytest.raises(ps.AllRunsFailedError):  # inside the selection each such run scores worst, untrained
        tuner.run(0.0)
    assert trained == []
