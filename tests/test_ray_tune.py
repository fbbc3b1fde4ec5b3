"""Ray Tune, certified (privselect.integrations.ray_tune): a real local Ray Tune against PrivateTuner, the
refusals, what a trial's metrics, checkpoint and log can reach, and what a result's repr says it covers.

One local ray (num_cpus=2) per module, as tests/test_scaleout.py starts it; its workers import this checkout
(PYTHONPATH), so the trainables below run as written. The tests that start ray are in the slow tier (~35 s).
"""

from __future__ import annotations

import logging
import os
import pickle
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pytest
from ray import tune
from ray.tune.schedulers import (
    ASHAScheduler,
    FIFOScheduler,
    HyperBandScheduler,
    MedianStoppingRule,
    PopulationBasedTraining,
)
from ray.tune.search import BasicVariantGenerator

import privselect as ps
from privselect.errors import AllRunsFailedError
from privselect.integrations.coverage import covers
from privselect.integrations.optuna import PrivateStudy
from privselect.integrations.ray_tune import SCORE_KEY, SEED_KEY, RayDomainLaw, RayTuneRefusal, Tuner
from privselect.tuning import PrivateTuner
from privselect.tuning.space import Choice, IntUniform, LogUniform, Uniform
from tests.support import REPO_ROOT
from tests.support.scaleout import local_ray_session

BASE = ps.Gaussian(5.0)
K_LAW = ps.Geometric(mean=4)
DELTA = 1e-5
SEED = 7  # K = 5 under K_LAW, one of its configurations failing (asserted below)
MARK = "SECRET-7d1f"
MARK_VALUE = 912873.25
SPACE = {"lr": tune.loguniform(1e-4, 1e-1), "opt": {"m": tune.choice([0.0, 0.5, 0.9])}, "epochs": 3}
LAWS = {"lr": LogUniform(1e-4, 1e-1), "opt/m": Choice([0.0, 0.5, 0.9])}  # the same laws, in PrivateTuner's words


def drawn_k(seed: int, law=K_LAW) -> int:
    """K as the engine draws it (its first child seed)."""
    k_seed = np.random.SeedSequence(seed).spawn(3)[0]
    return int(law.sample(np.random.Generator(np.random.PCG64(k_seed))))


def score(lr: float, m: float) -> float:
    return -(np.log10(lr) + 2.0) ** 2 + 0.1 * m


def fails(lr: float, m: float) -> bool:
    return m == 0.5  # a deterministic failure: the run scores worst


def trainable(config):
    if fails(config["lr"], config["opt"]["m"]):
        raise RuntimeError("this configuration diverged")
    for epoch in range(config["epochs"]):
        tune.report({"accuracy": score(config["lr"], config["opt"]["m"]) - 0.01 * (2 - epoch)})


def reference_train(params, data, rng):
    if fails(params["lr"], params["opt/m"]):
        raise RuntimeError("this configuration diverged")
    return score(params["lr"], params["opt/m"])


def tuner(train=trainable, space=None, **kwargs) -> Tuner:
    # reuse_actors: a trial's actor runs the next trial (4x faster here); each run is seeded afresh all the same
    kwargs.setdefault("tune_config", tune.TuneConfig(metric="accuracy", mode="max", reuse_actors=True))
    return Tuner(train, param_space=SPACE if space is None else space, privacy=BASE, k=K_LAW, delta=DELTA,
                 seed=SEED, **kwargs)


# pytest imports this file as the top-level module ``test_ray_tune`` (tests/ has no __init__.py): the workers
# unpickle the trainables below by that name, and privselect from this checkout
PYTHONPATH = (str(REPO_ROOT), str(REPO_ROOT / "tests"))


@pytest.fixture(scope="module")
def local_ray():
    with local_ray_session(runtime_env={"env_vars": {"PYTHONPATH": os.pathsep.join(PYTHONPATH)}}) as ray:
        yield ray


# -- a real local Ray Tune ------------------------------------------------------------------------------------


@pytest.mark.slow  # starts a local ray (~6 s) and runs Ray Tune experiments (~3 s each): the slow tier runs them
def test_ray_tune_selects_what_private_tuner_selects_for_the_same_seed(local_ray):
    assert 3 <= drawn_k(SEED) <= 8  # several trials, a few of them failing (m = 0.5)
    result = tuner().fit()
    reference = PrivateTuner(reference_train, LAWS, BASE, K_LAW, DELTA, seed=SEED, backend="sequential").run(None)
    assert result.selected and reference.selected
    assert result.best_params == {"lr": reference.best_params["lr"], "opt": {"m": reference.best_params["opt/m"]},
                                  "epochs": 3}
    assert result.best_score == pytest.approx(reference.best_score, abs=0, rel=1e-15)  # the last report's metric
    assert result.certificate == ps.certify(BASE, K_LAW, DELTA) == reference.certificate
    assert result.best_output is None  # no checkpoint_loader
    # the winner is the best of the K configurations drawn from the seed, the failing ones scored worst
    params_rngs = [np.random.Generator(np.random.PCG64(seeds.params)) for seeds in _run_seeds(SEED, drawn_k(SEED))]
    candidates = [{name: law.sample(rng) for name, law in LAWS.items()} for rng in params_rngs]
    scores = [-np.inf if fails(c["lr"], c["opt/m"]) else score(c["lr"], c["opt/m"]) for c in candidates]
    assert any(np.isneginf(scores)) and result.best_score == max(scores)


def _run_seeds(seed: int, n: int):
    from privselect.tuning.run import RunSeeds

    runs = np.random.SeedSequence(seed).spawn(3)[2]
    return [RunSeeds.of_run(runs, index) for index in range(n)]


def seeded_trainable(config):
    rng = np.random.default_rng(config[SEED_KEY])  # the trial's own seed, from privselect's seed tree
    tune.report({"accuracy": float(rng.normal()), "seed": config[SEED_KEY]})


@pytest.mark.slow
def test_a_trial_lost_with_its_worker_is_rerun_by_ray_with_the_same_seeds(local_ray, tmp_path):
    flags = tmp_path / "flags"
    flags.mkdir()

    def dies_once(config):
        flag = flags / str(config[SEED_KEY])
        if not flag.exists():
            flag.touch()
            os._exit(1)  # the worker dies mid-trial (a lost node, as Ray sees it)
        seeded_trainable(config)

    retried = tuner(dies_once).fit()
    assert len(list(flags.iterdir())) == drawn_k(SEED)  # every trial died once, then ran again
    expected = [float(np.random.default_rng(int(s.train.generate_state(1, np.uint32)[0])).normal())
                for s in _run_seeds(SEED, drawn_k(SEED))]
    assert retried.best_score == max(expected)


def test_every_refused_option_is_refused_with_its_reason():
    refused = {
        "scheduler": (dict(tune_config=tune.TuneConfig(metric="accuracy", mode="max", scheduler=ASHAScheduler())),
                      "intermediate results"),
        "hyperband": (dict(tune_config=tune.TuneConfig(metric="accuracy", mode="max",
                                                       scheduler=HyperBandScheduler())), "intermediate results"),
        "median": (dict(tune_config=tune.TuneConfig(metric="accuracy", mode="max",
                                                    scheduler=MedianStoppingRule())), "intermediate results"),
        "pbt": (dict(tune_config=tune.TuneConfig(metric="accuracy", mode="max",
                                                 scheduler=PopulationBasedTraining(hyperparam_mutations={"lr": [0.1]}))), "copies weights"),
        "search_alg": (dict(tune_config=tune.TuneConfig(metric="accuracy", mode="max",
                                                        search_alg=BasicVariantGenerator())), "max_concurrent_trials"),
        "num_samples": (dict(tune_config=tune.TuneConfig(metric="accuracy", mode="max", num_samples=20)),
                        "K, drawn"),
        "time_budget": (dict(tune_config=tune.TuneConfig(metric="accuracy", mode="max", time_budget_s=60)),
                        "how long"),
        "stopper": (dict(run_config=tune.RunConfig(stop={"training_iteration": 2})), "intermediate results"),
        "callbacks": (dict(run_config=tune.RunConfig(callbacks=[tune.Callback()])), "every trial"),
        "reporter": (dict(run_config=tune.RunConfig(progress_reporter=tune.CLIReporter())), "counts K"),
        "checkpoints": (dict(run_config=tune.RunConfig(checkpoint_config=tune.CheckpointConfig(num_to_keep=2))),
                        "checkpoint_loader"),
        "fail_fast": (dict(run_config=tune.RunConfig(failure_config=tune.FailureConfig(fail_fast=True))),
                      "scores worst"),
        "grid": (dict(space={"lr": tune.grid_search([0.1, 0.01])}), "without replacement"),
        "sample_from": (dict(space={"lr": tune.sample_from(lambda spec: 0.1)}), "sample_from"),
    }
    for name, (kwargs, reason) in refused.items():
        with pytest.raises(RayTuneRefusal, match=reason):
            tuner(**kwargs)
        assert issubclass(RayTuneRefusal, ps.errors.PrivateStudyError), name
    with pytest.raises(RayTuneRefusal, match="function trainable"):
        tuner(tune.Trainable)
    with pytest.raises(ValueError, match="metric"):
        tuner(tune_config=None)
    with pytest.raises(ValueError, match="mode"):
        tuner(tune_config=tune.TuneConfig(metric="accuracy"))
    with pytest.raises(ValueError, match="reserved"):
        tuner(space={SEED_KEY: 1})
    # what changes nothing in the selection is kept
    tuner(tune_config=tune.TuneConfig(metric="accuracy", mode="min", scheduler=FIFOScheduler(),
                                      max_concurrent_trials=2),
          run_config=tune.RunConfig(name="kept", failure_config=tune.FailureConfig(max_failures=1)))


def test_param_space_domains_become_the_same_laws():
    from privselect.integrations.ray_tune import ParamLayout

    layout = ParamLayout.of({"a": tune.uniform(-1, 2), "b": tune.loguniform(1e-3, 1),
                             "c": {"d": tune.randint(2, 5), "e": tune.choice(["x", "y"])}, "f": "const",
                             "g": tune.qrandint(1, 10, 3)})
    assert layout.laws == {"a": Uniform(-1, 2), "b": LogUniform(1e-3, 1), "c/d": IntUniform(2, 4),
                           "c/e": Choice(["x", "y"]), "g": layout.laws["g"]}
    assert isinstance(layout.laws["g"], RayDomainLaw)  # quantized: Ray's law, privselect's generator
    draws = {layout.laws["g"].sample(np.random.default_rng(s)) for s in range(200)}
    assert draws == {3, 6, 9}  # tune.qrandint(1, 10, 3): multiples of 3 in [1, 10]
    assert layout.config({"a": 0.5, "b": 0.1, "c/d": 3, "c/e": "y", "g": 6}) == {
        "a": 0.5, "b": 0.1, "c": {"d": 3, "e": "y"}, "f": "const", "g": 6}


# -- what a trial's metrics, checkpoint and log can reach --------------------------------------------------------


def leaky_trainable(config):
    import tempfile as temporary

    rng = np.random.default_rng(config[SEED_KEY])
    weight = float(rng.normal())
    print(MARK, flush=True)
    logging.getLogger("ray").error(MARK)
    warnings.warn(MARK, stacklevel=1)
    for epoch in range(2):
        with temporary.TemporaryDirectory() as folder:
            np.save(os.path.join(folder, "weight.npy"), np.array([weight + epoch]))
            Path(folder, "notes.txt").write_text(MARK)
            tune.report({"accuracy": weight, "leaked_metric": MARK_VALUE, "leaked_note": MARK},
                        checkpoint=tune.Checkpoint.from_directory(folder))


def load_weight(checkpoint):
    with checkpoint.as_directory() as folder:
        return {"weight": float(np.load(os.path.join(folder, "weight.npy"))[0])}


@pytest.mark.slow
def test_a_trials_metrics_checkpoint_and_log_do_not_reach_the_release_value(local_ray, tmp_path, capsys, caplog):
    caplog.set_level(logging.DEBUG)
    temporary = set(Path(tempfile.gettempdir()).glob("privselect-ray-tune-*"))
    result = tuner(leaky_trainable, checkpoint_loader=load_weight).fit()
    assert set(Path(tempfile.gettempdir()).glob("privselect-ray-tune-*")) == temporary  # Ray's storage removed
    # the winner's last checkpoint, through the loader, and nothing else of the trial
    assert result.best_output == {"weight": result.best_score + 1.0}
    released = [repr(result), str(result.to_dict()), pickle.dumps(result)]
    for shown in (MARK, repr(MARK_VALUE), "leaked_"):
        assert all(shown not in str(text) for text in released)
    for grid_api in ("get_best_result", "get_dataframe", "metrics", "checkpoint", "errors"):
        with pytest.raises(AttributeError, match="not a ResultGrid"):
            getattr(result, grid_api)
    with pytest.raises(TypeError, match="not a ResultGrid"):
        list(result)
    captured = capsys.readouterr()
    assert MARK not in captured.out + captured.err + caplog.text
    # the operator names the storage: Ray keeps it, and it holds one score per trial and no report of the trainable
    kept = tuner(leaky_trainable, checkpoint_loader=load_weight,
                 run_config=tune.RunConfig(storage_path=str(tmp_path), name="kept")).fit()
    assert (kept.best_params, kept.best_output) == (result.best_params, result.best_output)
    stored = [path for path in tmp_path.rglob("*") if path.is_file()]
    assert any(path.name == "result.json" and SCORE_KEY in path.read_text() for path in stored)
    assert all(MARK.encode() not in path.read_bytes() and b"leaked_" not in path.read_bytes() for path in stored)
    # nor does the trial's output reach its worker's log files (the run is silenced inside the trial)
    import ray._private.worker

    logs = Path(ray._private.worker._global_node.get_logs_dir_path())
    assert all(MARK.encode() not in path.read_bytes() for path in logs.rglob("*") if path.is_file())


def returns_a_generator(checkpoint):
    return np.random.default_rng(0)


@pytest.mark.slow
def test_a_loader_that_returns_what_the_allowlist_refuses_scores_worst(local_ray):
    with pytest.raises(AllRunsFailedError) as error:
        tuner(leaky_trainable, checkpoint_loader=returns_a_generator).fit()
    assert error.value.__cause__ is None and error.value.__context__ is None  # raised from a clean frame
    frames = []
    tb = error.value.__traceback__
    while tb is not None:
        frames.append(tb.tb_frame.f_code.co_name)
        tb = tb.tb_next
    assert "_select" not in frames and MARK not in str(error.value)


# -- what a result says its certificate covers ------------------------------------------------------------------


def test_results_say_the_certificate_covers_the_whole_selection_not_one_run():
    certificate = ps.certify(BASE, K_LAW, DELTA)
    sentence = covers(certificate)
    assert sentence == (f"certificate covers the whole selection: ε={certificate.epsilon:.4g} at δ=1e-05 for the "
                        "best of K ~ Geometric(mean=4) runs, each Gaussian(noise_multiplier=5.0); one run's ε is not "
                        "the tuning's")
    one_run = ps.privacy_profile(BASE).epsilon(DELTA)
    assert certificate.epsilon > one_run  # the sentence's ε is the selection's, larger than one run's
    from privselect.integrations.ray_tune import TuneResult

    result = TuneResult({"lr": 0.01}, 0.5, None, True, certificate)
    assert repr(result) == f"TuneResult(best_params={{'lr': 0.01}}, best_score=0.5; {sentence})"
    study = PrivateStudy(BASE, K_LAW, DELTA, seed=SEED).optimize(lambda trial: trial.suggest_float("x", 0, 1))
    assert repr(study).endswith(f"; {sentence})") and f"{one_run:.4g}" not in repr(study)
    revealed = PrivateStudy(BASE, K_LAW, DELTA, seed=SEED, reveal_k=True).optimize(
        lambda trial: trial.suggest_float("x", 0, 1))
    assert "K and every run released" in repr(revealed) and f"ε={revealed.certificate.epsilon:.4g}" in repr(revealed)


def test_a_callable_privacy_reads_nested_keys_by_their_joined_names_and_is_certified_as_private_tuner_does():
    def privacy(params):
        return ps.Gaussian(4.0 + params["opt/m"])

    ours = Tuner(trainable, param_space=SPACE, privacy=privacy, k=K_LAW, delta=DELTA,
                 tune_config=tune.TuneConfig(metric="accuracy", mode="max"))
    reference = PrivateTuner(reference_train, LAWS, privacy, K_LAW, DELTA)
    assert ours.certificate == reference.certificate
    assert ours.certificate.epsilon < ps.certify(ps.Gaussian(4.0), K_LAW, DELTA).epsilon  # the law's average
    with pytest.raises(ValueError, match="continuous"):  # lr's law is continuous: the mixture cannot enumerate it
        Tuner(trainable, param_space=SPACE, privacy=lambda params: ps.Gaussian(params["lr"] * 100), k=K_LAW,
              delta=DELTA, tune_config=tune.TuneConfig(metric="accuracy", mode="max"))
