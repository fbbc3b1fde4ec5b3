"""A public prior (ps.space.from_public) is a search-space law: fit before the selection from public samples, drawn
i.i.d. by each run, certified by the i.i.d. certificate unchanged; and the search-space module's public surface."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import pytest

import privselect as ps
from privselect.tuning.space import Choice, LogUniform, PublicPrior, from_public

SPACE = {"lr": LogUniform(1e-4, 1.0), "act": Choice(["relu", "tanh"])}
PUBLIC = [{"lr": 1e-2, "act": "relu"}, {"lr": 2e-2, "act": "relu"}, {"lr": 5e-3, "act": "tanh"}]


def test_a_public_prior_concentrates_on_the_public_samples_and_keeps_the_declared_range():
    prior = from_public(PUBLIC, SPACE, bandwidth=0.05, floor=0.1)
    rng = np.random.default_rng(0)
    lrs = np.array([prior["lr"].sample(rng) for _ in range(20_000)])
    assert lrs.min() >= 1e-4 and lrs.max() <= 1.0
    t = (np.log(lrs) - math.log(1e-4)) / (math.log(1.0) - math.log(1e-4))
    centres = (np.log([1e-2, 2e-2, 5e-3]) - math.log(1e-4)) / (-math.log(1e-4))
    near = np.min(np.abs(t[:, None] - centres[None, :]), axis=1) < 2 * 0.05
    # mass within 2 bandwidths of a sample: 0.9 * P(|N(0,1)| < 2) (truncation only adds) + floor's share
    assert near.mean() >= 0.9 * 0.9545 - 0.01
    assert prior["act"].support() == (("relu", 0.05 + 0.9 * 2 / 3), ("tanh", 0.05 + 0.9 / 3))
    # the density integrates to one over the (scaled log) range: midpoint rule on 10^5 cells
    grid = np.exp(math.log(1e-4) + (np.arange(100_000) + 0.5) / 100_000 * -math.log(1e-4))
    assert float(prior["lr"].density(grid).mean()) == pytest.approx(1.0, abs=1e-6)


def test_a_public_prior_is_fit_from_an_optuna_study_on_proxy_data():
    optuna = pytest.importorskip("optuna")
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(direction="maximize", sampler=optuna.samplers.RandomSampler(seed=1))
    study.optimize(lambda t: -abs(math.log10(t.suggest_float("lr", 1e-4, 1.0, log=True)) + 2), n_trials=40)
    prior = from_public(study, {"lr": LogUniform(1e-4, 1.0)}, top=0.25)
    assert isinstance(prior["lr"], PublicPrior) and len(prior["lr"].points) == 10
    best = sorted(study.trials, key=lambda t: t.value)[-10:]  # the best quarter of the 40 trials
    expected = sorted((math.log(t.params["lr"]) - math.log(1e-4)) / -math.log(1e-4) for t in best)
    assert sorted(prior["lr"].points) == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("source, word", [(42, "from_public needs"), ([{"lr": 5.0}], "outside"),
                                          ([{"act": "gelu"}], "outside")])
def test_bad_public_sources_are_refused_naming_the_problem(source, word):
    with pytest.raises((TypeError, ValueError), match=word):
        from_public(source, SPACE)


def test_the_tuner_runs_a_public_prior_with_the_iid_certificate_unchanged():
    prior = from_public(PUBLIC, SPACE)
    run, k = ps.Gaussian(3.0), ps.Geometric(mean=5)
    tuner = ps.PrivateTuner(lambda p, d, rng: -abs(math.log10(p["lr"]) + 2), prior, run, k, 1e-5, seed=3)
    plain = ps.PrivateTuner(lambda p, d, rng: 0.0, SPACE, run, k, 1e-5, seed=3)
    assert tuner.certificate.epsilon == plain.certificate.epsilon == ps.certify(run, k, 1e-5).epsilon
    result = tuner.run(None)
    assert 1e-4 <= result.best_params["lr"] <= 1.0
    with pytest.raises(AttributeError, match="keeps no runs"):
        result.trials  # noqa: B018


def test_a_private_study_draws_its_declared_hyperparameters_from_a_public_prior():
    pytest.importorskip("optuna")
    from privselect.integrations.optuna import PrivateStudy

    prior = from_public([{"lr": 1e-2}], {"lr": LogUniform(1e-4, 1.0)}, bandwidth=0.02, floor=0.05)
    study = PrivateStudy(ps.Gaussian(3.0), ps.Geometric(mean=20), 1e-5, seed=5, search_space=prior)
    result = study.optimize(lambda trial: trial.suggest_float("lr", 1e-4, 1.0, log=True) * 0 + 1.0)
    assert study.certificate.epsilon == ps.certify(ps.Gaussian(3.0), ps.Geometric(mean=20), 1e-5).epsilon
    assert result.best_params is None or 1e-4 <= result.best_params["lr"] <= 1.0
    with pytest.raises(AttributeError, match="keeps no trials"):
        result.trials  # noqa: B018


def test_the_search_space_module_lists_only_its_public_names():
    names = dir(ps.space)
    assert {"Any", "np", "math", "Mapping"}.isdisjoint(names)
    assert {"Choice", "LogUniform", "Uniform", "IntUniform", "from_public", "PublicPrior"} <= set(names)
    assert set(names) == set(ps.space.__all__)


def test_certify_adaptive_reads_a_callable_privacy_without_importing_the_tuning_layer():
    code = ("import json, sys\n"
            "from privselect.selection.adaptive import certify_adaptive\n"
            "from privselect.selection.laws import Choice\n"
            "from privselect.mechanisms import Gaussian\n"
            "from privselect.selection.distributions import Geometric\n"
            "cert = certify_adaptive(lambda p: Gaussian(p['s']), Geometric(mean=5), 1e-5, density_ratio=(1.5, 0.8),\n"
            "                        space={'s': Choice([2.0, 4.0])})\n"
            "worst = certify_adaptive(Gaussian(2.0), Geometric(mean=5), 1e-5, density_ratio=(1.5, 0.8))\n"
            "print(json.dumps([cert.epsilon == worst.epsilon,\n"
            "                  sorted(m for m in sys.modules if m.startswith('privselect.tuning'))]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert json.loads(out) == [True, []]  # the sup over the space is the smallest noise's certificate
