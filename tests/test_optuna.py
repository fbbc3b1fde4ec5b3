"""Private Optuna studies: leak tests, samplers, pruning, failures, reproducibility."""

import json
import logging

import numpy as np
import optuna
import pytest

import privselect as ps
from privselect.errors import AllRunsFailedError
from privselect.integrations.optuna import PrivateStudy, PrivateStudyError

BASE = ps.Gaussian(4.0)
K = ps.Geometric(mean=20)
MARK = "MARK-"


def study(**kwargs):
    kwargs.setdefault("accountant", "exact")
    kwargs.setdefault("seed", 0)
    return PrivateStudy(BASE, K, 1e-6, **kwargs)


def objective(trial):
    x = trial.suggest_float("x", -3.0, 3.0)
    c = trial.suggest_categorical("c", ["a", "b"])
    trial.set_user_attr("tag", f"{MARK}{x:.12f}")
    return -(x - 1.0) ** 2 + (c == "a"), {"tag": f"{MARK}{x:.12f}"}


def test_no_losing_trial_leaks(caplog, capsys):
    caplog.set_level(logging.DEBUG)
    seen = []

    def recording(trial):
        value, output = objective(trial)
        seen.append((trial.params["x"], value))
        return value, output

    result = study().optimize(recording)
    assert len(seen) > 3
    captured = capsys.readouterr()
    surfaces = [repr(result), json.dumps(result.to_dict()), repr(result.best_trial), repr(result.best_output),
                caplog.text, captured.out, captured.err]
    winner_x = result.best_params["x"]
    for x, value in seen:
        if x == winner_x:
            continue
        for text in (f"{MARK}{x:.12f}", repr(x), repr(value)):
            assert all(text not in s for s in surfaces)
    assert result.best_trial.params == result.best_params and result.best_trial.number == -1
    assert result.best_trial.user_attrs == {"tag": f"{MARK}{winner_x:.12f}"}
    assert result.n_trials is None


def test_same_seed_same_winner_and_certificate():
    a, b = study(seed=3).optimize(objective), study(seed=3).optimize(objective)
    assert (a.best_params, a.best_value, a.certificate) == (b.best_params, b.best_value, b.certificate)
    assert a.certificate == ps.certify(BASE, K, 1e-6, accountant="exact")


def test_adaptive_samplers_refused_unless_adaptive_and_then_certified_higher():
    with pytest.raises(PrivateStudyError, match="TPESampler"):
        study(sampler=optuna.samplers.TPESampler(seed=0))
    with pytest.raises(PrivateStudyError, match="QMCSampler"):
        study(sampler=optuna.samplers.QMCSampler(seed=0))
    adaptive = study(sampler=optuna.samplers.TPESampler(seed=0), adaptive=True)
    assert adaptive.certificate.epsilon >= study().certificate.epsilon
    result = adaptive.optimize(objective)
    assert result.n_trials >= 1 and result.best_value <= 1.0


def test_grid_sampler_and_storage_refused():
    with pytest.raises(PrivateStudyError, match="without replacement"):
        study(sampler=optuna.samplers.GridSampler({"x": [0.0, 1.0]}))
    with pytest.raises(PrivateStudyError, match="storage"):
        study(storage="sqlite:///trials.db")


def test_pruning_scores_worst_in_a_study_and_is_a_clear_error_in_dry_run():
    def pruning(trial):
        x = trial.suggest_float("x", 0, 1)
        trial.report(x, 1)
        return x

    with pytest.raises(AllRunsFailedError):  # every trial pruned: each scored worst, nothing released
        study().optimize(pruning)
    with pytest.raises(PrivateStudyError, match="pruning is disabled"):
        study().dry_run(pruning)

    def asks_prune(trial):
        trial.suggest_float("x", 0, 1)
        return float(trial.should_prune())

    with pytest.raises(AllRunsFailedError):
        study().optimize(asks_prune)
    with pytest.raises(PrivateStudyError, match="should_prune"):
        study().dry_run(asks_prune)


def test_raising_objective_does_not_stop_the_study(capsys, caplog):
    calls = []

    def flaky(trial):
        x = trial.suggest_float("x", 0, 1)
        calls.append(x)
        if len(calls) % 2:
            raise ValueError(f"SECRET {x}")
        return x

    result = study(seed=5).optimize(flaky)
    assert len(calls) > 2
    assert result.best_params["x"] in calls[1::2]
    captured = capsys.readouterr()
    assert "SECRET" not in captured.out + captured.err + caplog.text + repr(result)


def test_optuna_logging_is_restored():
    optuna.logging.set_verbosity(optuna.logging.INFO)
    study().optimize(objective)
    assert optuna.logging.get_verbosity() == optuna.logging.INFO


def test_trial_does_not_expose_the_study_and_has_its_own_rng():
    def peek(trial):
        assert isinstance(trial.rng, np.random.Generator)
        return trial.study

    with pytest.raises(AllRunsFailedError):  # each trial broke the rule: each scored worst
        study().optimize(peek)
    with pytest.raises(PrivateStudyError, match="does not expose its study"):  # a usage error, raised on public data
        study().dry_run(peek)


@pytest.mark.slow  # seconds per case, measured: the slow tier runs it
def test_optuna_dpsgd_example_runs_and_certifies_the_whole_study():
    """examples/optuna_dpsgd.py (linked from docs/optuna.md): its certificate is certify() of one trial."""
    import pathlib
    import runpy

    path = pathlib.Path(__file__).resolve().parents[1] / "examples" / "optuna_dpsgd.py"
    ns = runpy.run_path(str(path), run_name="example")
    result, one_trial = ns["result"], ns["one_trial"]
    expected = ps.certify(one_trial, ps.Geometric(mean=10), 1e-5)
    assert result.certificate.epsilon == pytest.approx(expected.epsilon, rel=1e-12)
    assert expected.epsilon > ps.privacy_profile(one_trial).epsilon(1e-5)  # tuning costs privacy
    assert set(result.best_params) == {"learning_rate", "clip_norm", "epochs"}
    assert result.best_output.score(ns["X_test"], ns["y_test"]) > 0.5  # a real model (10 classes)


# -- Optuna habits: pointed errors, or they work -------------------------------------------------


def test_n_trials_and_timeout_are_refused_with_the_reason():
    with pytest.raises(PrivateStudyError, match="number of trials is K"):
        study().optimize(objective, n_trials=50)
    with pytest.raises(PrivateStudyError, match="timeout is refused"):
        study().optimize(objective, timeout=10)
    with pytest.raises(PrivateStudyError, match="callbacks"):
        study().optimize(objective, callbacks=[])


def test_study_best_params_points_to_the_result():
    s = study()
    with pytest.raises(AttributeError, match=r"result = study.optimize\(objective\), then result.best_params"):
        s.best_params  # noqa: B018
    with pytest.raises(AttributeError, match="keeps no trials"):
        s.trials  # noqa: B018


def test_trial_number_counts_the_runs():
    numbers = []

    def numbered(trial):
        numbers.append(trial.number)
        return objective(trial)

    from privselect.integrations.optuna import PrivateTrial

    result = study(seed=2).optimize(numbered)
    assert sorted(numbers) == list(range(len(numbers))) and len(numbers) > 1
    assert result.best_trial.number == -1  # not released
    assert isinstance(PrivateTrial(3, np.random.default_rng(0), np.random.default_rng(1)).number, int)


def test_trial_pruned_scores_worst_in_a_run_and_is_reported_by_dry_run():
    def prunes(trial):
        x = trial.suggest_float("x", 0, 1)
        if x > 0.5:  # whether a trial prunes depends on its values: it scores worst instead of stopping the study
            raise optuna.TrialPruned()
        return x

    result = PrivateStudy(BASE, ps.Geometric(mean=20), 1e-6, accountant="exact", seed=3).optimize(prunes)
    assert result.best_value <= 0.5
    with pytest.raises(PrivateStudyError, match=r"raise optuna.TrialPruned\(\) was called: pruning is disabled"):
        study().dry_run(lambda trial: (_ for _ in ()).throw(optuna.TrialPruned()))


def test_study_direction_values_are_accepted():
    maximise = study(direction=optuna.study.StudyDirection.MAXIMIZE).optimize(objective)
    minimise = study(direction=optuna.study.StudyDirection.MINIMIZE).optimize(objective)
    assert maximise.best_params == study(direction="maximize").optimize(objective).best_params
    assert minimise.best_value <= maximise.best_value
    with pytest.raises(ValueError, match="direction"):
        study(direction=optuna.study.StudyDirection.NOT_SET)


def test_objective_signature_and_return_are_checked():
    from privselect.tuning import TrainerContractError

    with pytest.raises(TrainerContractError, match="1 positional argument"):
        study().optimize(lambda trial, data: 1.0)
    with pytest.raises(TrainerContractError, match="3-tuple"):
        study().dry_run(lambda trial: (trial.suggest_float("x", 0, 1), None, None))
    with pytest.raises(ps.AllRunsFailedError, match="dry_run"):  # inside a certified run: scored worst
        study().optimize(lambda trial: (trial.suggest_float("x", 0, 1), None, None))


@pytest.mark.slow  # seconds per case, measured: the slow tier runs it
def test_callable_privacy_in_a_study_needs_and_checks_its_space():
    from privselect.tuning import PrivateTuner, TrainerContractError
    from privselect.tuning.space import Choice

    privacy = lambda p: ps.Gaussian(p["sigma"])  # noqa: E731
    with pytest.raises(ValueError, match="privacy_space"):
        PrivateStudy(privacy, K, 1e-6)
    with pytest.raises(TypeError, match="privacy_space must be a dict"):  # a callable space has no enumerable law
        PrivateStudy(privacy, K, 1e-6, privacy_space=lambda rng: {"sigma": 2.0})
    s = PrivateStudy(privacy, K, 1e-6, privacy_space={"sigma": Choice([2.0, 4.0])}, accountant="exact", seed=1)

    def noisy(trial):
        sigma = trial.suggest_categorical("sigma", [2.0, 4.0])
        return -sigma + trial.rng.normal(), sigma

    result = s.optimize(noisy)
    tuner = PrivateTuner(lambda p, d, rng: (-p["sigma"] + rng.normal(), p["sigma"]), {"sigma": Choice([2.0, 4.0])},
                         privacy, K, 1e-6, accountant="exact", seed=1)
    assert s.certificate == tuner.certificate and s.certificate.bound in ("mixture-profile", "cor62")
    released = tuner.run(None)
    assert (result.best_params, result.best_value) == (released.best_params, released.best_score)
    # usage errors score worst inside optimize (they can depend on the data) and raise in dry_run
    for misuse, message in ((lambda trial: trial.suggest_categorical("sigma", [2.0, 8.0]), "privacy_space declares"),
                            (lambda trial: 1.0, "did not suggest")):
        with pytest.raises(AllRunsFailedError):
            s.optimize(misuse)
        with pytest.raises(TrainerContractError, match=message):
            s.dry_run(misuse)


def test_threading_backend_gives_the_sequential_winner():
    a = study(seed=6).optimize(objective)
    b = study(seed=6, n_jobs=2, backend="threading").optimize(objective)
    assert (a.best_params, a.best_value) == (b.best_params, b.best_value)


@pytest.mark.filterwarnings("ignore::optuna.exceptions.ExperimentalWarning")
def test_optuna_habits_get_errors_that_say_why_and_what_instead():
    s = study()
    pytest.importorskip("matplotlib")  # the plot extra (plotly, for optuna.visualization itself, is not a dependency)
    from optuna.visualization import matplotlib as plots

    for plot in (plots.plot_optimization_history, plots.plot_param_importances, plots.plot_slice):
        with pytest.raises((TypeError, AttributeError), match="keeps no trials by design.*result.best_trial"):
            plot(s)
    with pytest.raises(AttributeError, match="keeps no trials by design"):
        s.trials_dataframe()
    with pytest.raises(PrivateStudyError, match="pruner= is refused: pruning is disabled.*Remove pruner="):
        study(pruner=optuna.pruners.MedianPruner())
    with pytest.raises(PrivateStudyError, match="directions= with 2 objectives.*ONE score.*direction='maximize'"):
        study(directions=["maximize", "minimize"])
    assert study(directions=["minimize"]).direction == "minimize"
    assert study(pruner=optuna.pruners.NopPruner()).direction == "maximize"  # no pruning asked: nothing to refuse
    with pytest.raises(PrivateStudyError, match=r"n_jobs=: parallelism is a constructor option here: "
                                                r"PrivateStudy\(\.\.\., n_jobs=4, backend='loky'\)"):
        s.optimize(objective, n_jobs=2)
    with pytest.raises(PrivateStudyError, match=r"show_progress_bar=: .*PrivateStudy\(\.\.\., progress=True\).*K"):
        s.optimize(objective, show_progress_bar=True)
    with pytest.raises(PrivateStudyError, match="callbacks=: callbacks would see every trial"):
        s.optimize(objective, callbacks=[print])


@pytest.mark.parametrize("flags", [{"adaptive": True}, {"reveal_k": True}])
def test_composed_trials_with_a_callable_privacy_say_what_to_do_and_name_only_the_flag_passed(flags):
    from privselect.tuning.space import Choice

    def privacy(p):
        return ps.Gaussian(p["sigma"])
    with pytest.raises(ValueError) as info:
        PrivateStudy(privacy, K, 1e-6, privacy_space={"sigma": Choice([2.0, 4.0])}, **flags)
    message = str(info.value)
    (passed,) = flags
    other = "reveal_k" if passed == "adaptive" else "adaptive"
    assert f"{passed}=True" in message and f"{other}=True" not in message
    assert "privacy is a callable" in message and "adaptive=False" in message
    assert "smallest noise multiplier" in message  # the other way out: one dominating Mechanism


@pytest.mark.filterwarnings("ignore::optuna.exceptions.ExperimentalWarning")
def test_optuna_visualization_explains_a_private_study_or_result_even_without_plotly():
    import optuna.visualization as vis

    s = study()
    result = s.optimize(objective)
    names = [n for n in dir(vis) if n.startswith("plot_")]
    assert "plot_optimization_history" in names
    for name in names:
        for target in (s, result, [result]):
            with pytest.raises(TypeError, match=f"{name}: a PrivateStudy keeps no trials by design"):
                getattr(vis, name)(target)
    # an ordinary Optuna study still reaches Optuna's own function (its plotly check, or a figure)
    plain = optuna.create_study()
    plain.optimize(lambda t: t.suggest_float("x", 0, 1), n_trials=3)
    try:
        figure = vis.plot_optimization_history(plain)
    except ImportError as exc:
        assert "plotly" in str(exc)
    else:
        assert figure is not None
