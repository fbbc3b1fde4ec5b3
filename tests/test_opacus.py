"""Real Opacus on digits: the description matches Opacus's own counting and accountant, the tuner and the
study release a state_dict that classifies, runs are reproducible from the seed, and the optimizer cannot leak.

The trainer is the one of examples/opacus_digits.py (imported from the file, so the example is tested).
"""

import importlib.util
import re
from pathlib import Path

import numpy as np
import opacus  # noqa: F401 - in the test extra: these tests run everywhere, never skipped
import pytest
import torch

import privselect as ps
from privselect.integrations import opacus as ps_opacus
from privselect.integrations.optuna import PrivateStudy
from privselect.tuning import AllRunsFailedError, PrivateTuner, RandomnessLeakError
from privselect.tuning.space import Choice, LogUniform

ROOT = Path(__file__).resolve().parents[1]
DELTA = 1e-5
K = ps.Geometric(mean=3)
EPOCHS = 4
SPACE = {"lr": LogUniform(0.2, 1.0), "max_grad_norm": LogUniform(0.5, 2.0), "epochs": Choice([EPOCHS])}


def _load_example():
    spec = importlib.util.spec_from_file_location("opacus_digits", ROOT / "examples" / "opacus_digits.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def example():
    threads = torch.get_num_threads()
    module = _load_example()  # sets one thread (a tiny model)
    yield module
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def digits(example):
    return example.load_data()


def one_run(example):
    return example.privacy({"epochs": EPOCHS})


def state_dicts_equal(a, b):
    return a.keys() == b.keys() and all(torch.equal(a[name], b[name]) for name in a)


# -- the description, counted as Opacus counts ---------------------------------------------------------


@pytest.mark.slow  # seconds per case, measured: the slow tier runs it
@pytest.mark.parametrize("n, batch", [(930, 10), (1000, 50)])  # 93 batches: Opacus's sampler yields 92 per epoch
def test_description_counts_the_steps_opacus_accountant_records(n, batch):
    from opacus import PrivacyEngine
    from torch.utils.data import DataLoader, TensorDataset

    sigma, epochs = 0.9, 2
    dataset = TensorDataset(torch.zeros(n, 3), torch.zeros(n, dtype=torch.long))
    loader = DataLoader(dataset, batch_size=batch, generator=torch.Generator().manual_seed(0))
    expected = ps_opacus.description(sigma, data_loader=loader, epochs=epochs)

    net = torch.nn.Linear(3, 2)
    engine = PrivacyEngine(accountant="prv")
    model, optimizer, dp_loader = engine.make_private(module=net, optimizer=torch.optim.SGD(net.parameters(), lr=0.1),
                                                      data_loader=loader, noise_multiplier=sigma, max_grad_norm=1.0)
    for _ in range(epochs):
        for xb, yb in dp_loader:
            optimizer.zero_grad()
            torch.nn.functional.cross_entropy(model(xb), yb).backward()
            optimizer.step()
    [(noise_multiplier, recorded_rate, steps)] = engine.accountant.history  # Opacus's own record of the run
    # the rate its Poisson sampler draws with; Opacus's accountant records 1 / len(DPDataLoader), which is
    # 1 / 92 > 1 / 93 where floating point drops a batch (an overstatement, safe for Opacus)
    assert dp_loader.sample_rate == 1 / len(loader) and recorded_rate == 1 / len(dp_loader) >= dp_loader.sample_rate
    assert expected == ps.Gaussian(noise_multiplier).poisson_subsample(dp_loader.sample_rate).compose(steps)
    assert ps_opacus.description(sigma, data_loader=dp_loader, epochs=epochs) == expected
    assert ps_opacus.description(sigma, sample_rate=1 / len(loader), steps=steps) == expected
    assert steps == epochs * (len(loader) - (n == 930))  # int(1 / (1 / 93)) = 92
    # the same from the public sizes alone, no loader
    assert ps_opacus.description(sigma, batch_size=batch, dataset_size=n, epochs=epochs) == expected


@pytest.mark.parametrize("n, batch, drop_last", [(930, 10, False), (1001, 50, False), (1001, 50, True), (7, 10, False)])
def test_description_from_batch_size_and_dataset_size_matches_the_loader(n, batch, drop_last):
    from torch.utils.data import DataLoader, TensorDataset

    loader = DataLoader(TensorDataset(torch.zeros(n, 1)), batch_size=batch, drop_last=drop_last)
    from_sizes = ps_opacus.description(1.1, batch_size=batch, dataset_size=n, drop_last=drop_last, epochs=3)
    assert from_sizes == ps_opacus.description(1.1, data_loader=loader, epochs=3)
    # q = 1 / len(loader); int(1 / q) steps per epoch (92 for 93 batches, as Opacus's Poisson loader runs them)
    q = 1 / len(loader)
    assert from_sizes == ps_opacus.description(1.1, sample_rate=q, steps=3 * int(1 / q))


def test_description_from_sizes_refuses_half_given_or_empty():
    with pytest.raises(ValueError, match="batch_size and dataset_size together"):
        ps_opacus.description(1.0, batch_size=10, epochs=1)
    with pytest.raises(ValueError, match="exactly one of sample_rate or data_loader, or batch_size"):
        ps_opacus.description(1.0, sample_rate=0.1, batch_size=10, dataset_size=100, epochs=1)
    with pytest.raises(ValueError, match="leaves no batch"):
        ps_opacus.description(1.0, batch_size=10, dataset_size=5, drop_last=True, epochs=1)
    with pytest.raises(ValueError, match="dataset_size"):
        ps_opacus.description(1.0, batch_size=10, dataset_size=0, epochs=1)


def test_description_refuses_ambiguous_numbers():
    with pytest.raises(ValueError, match="sample_rate or data_loader"):
        ps_opacus.description(1.0, epochs=1)
    with pytest.raises(ValueError, match="epochs or steps"):
        ps_opacus.description(1.0, sample_rate=0.1, epochs=1, steps=10)
    with pytest.raises(ValueError, match="epochs"):
        ps_opacus.description(1.0, sample_rate=0.1, epochs=0)


def test_one_run_privselect_epsilon_is_at_most_opacus_prv_upper_value(example, digits):
    from opacus import PrivacyEngine

    (X_train, y_train, _, _), _ = digits
    engine = PrivacyEngine(accountant="prv")
    example.fit_private({"lr": 0.5, "max_grad_norm": 1.0, "epochs": EPOCHS}, X_train, y_train,
                        np.random.default_rng(0), engine)
    opacus_epsilon = engine.get_epsilon(DELTA)  # the PRV accountant's upper value (eps_upper)
    privselect_epsilon = float(ps.privacy_profile(one_run(example)).epsilon(DELTA))
    print(f"one run, delta={DELTA}: privselect {privselect_epsilon:.6f}, Opacus PRV upper {opacus_epsilon:.6f}")
    assert privselect_epsilon <= opacus_epsilon
    assert privselect_epsilon > 0.97 * opacus_epsilon  # the same mechanism: close, not a different one


# -- seeding --------------------------------------------------------------------------------------------


def test_same_rng_gives_a_bitwise_identical_state_dict_and_another_rng_does_not(example, digits):
    params = {"lr": 0.5, "max_grad_norm": 1.0, "epochs": 2}
    first = example.train_opacus(params, digits[0], np.random.default_rng(11))
    again = example.train_opacus(params, digits[0], np.random.default_rng(11))
    other = example.train_opacus(params, digits[0], np.random.default_rng(12))
    assert first[0] == again[0] and state_dicts_equal(first[1], again[1])
    assert not state_dicts_equal(first[1], other[1])


def test_cpu_generator_state_is_drawn_whole_from_rng_not_a_32_bit_seed():
    # torch's own manual_seed keeps 32 bits on CPU: s and s + 2**32 give the same stream
    low, high = torch.Generator().manual_seed(5), torch.Generator().manual_seed(5 + 2**32)
    assert torch.equal(torch.rand(4, generator=low), torch.rand(4, generator=high))
    rng = np.random.default_rng(3)
    expected_words = np.random.default_rng(3).integers(0, 2**32, size=624, dtype=np.uint64)
    made = ps_opacus.generator(rng)
    words = np.frombuffer(made.get_state().numpy()[24:24 + 8 * 624].tobytes(), "<u8")
    assert np.array_equal(words, expected_words)  # 19,968 bits from rng
    # a valid Mersenne twister in that state: its draws are those of numpy's MT19937 holding the same 624 words
    reference = np.random.MT19937()
    reference.state = {"bit_generator": "MT19937", "state": {"key": expected_words.astype(np.uint32), "pos": 624}}
    assert torch.randint(0, 2**16, (8,), generator=made).tolist() == (reference.random_raw(8) % 2**16).tolist()


def test_generators_refuse_a_seed_instead_of_the_run_generator():
    with pytest.raises(TypeError, match="numpy.random.Generator"):
        ps_opacus.generators(1234)


# -- the front ends -------------------------------------------------------------------------------------


@pytest.mark.slow  # seconds per case, measured: the slow tier runs it
def test_tuner_releases_a_state_dict_that_classifies_with_the_certificate_of_opacus_numbers(example, digits):
    (data, (X_test, y_test)) = digits
    tuner = PrivateTuner(example.train_opacus, SPACE, one_run(example), K, DELTA, score_noise=example.SCORE_NOISE,
                         seed=21)
    result = tuner.run(data)
    assert set(result.best_output) == {"0.weight", "0.bias", "2.weight", "2.bias"}
    accuracy = example.accuracy(result.best_output, X_test, y_test)
    print(f"PrivateTuner: held-out accuracy {accuracy:.3f}, {result.certificate}")
    assert accuracy > 0.6  # chance is 0.1
    description = ps_opacus.description(example.NOISE, sample_rate=1 / 20, epochs=EPOCHS)  # 1000 records, batch 50
    assert result.certificate == ps.certify(ps.compose(description, example.SCORE_NOISE), K, DELTA)

    again = PrivateTuner(example.train_opacus, SPACE, one_run(example), K, DELTA, score_noise=example.SCORE_NOISE,
                         seed=21).run(data)
    assert again.best_params == result.best_params and again.best_score == result.best_score
    assert state_dicts_equal(again.best_output, result.best_output)


@pytest.mark.slow  # seconds per case, measured: the slow tier runs it
def test_study_with_tuned_epochs_releases_a_state_dict_that_classifies(example, digits):
    (data, (X_test, y_test)) = digits
    epochs = [2, EPOCHS]

    def objective(trial):
        params = {"lr": trial.suggest_float("lr", 0.2, 1.0, log=True),
                  "max_grad_norm": trial.suggest_float("max_grad_norm", 0.5, 2.0, log=True),
                  "epochs": trial.suggest_categorical("epochs", epochs)}
        return example.train_opacus(params, data, trial.rng)

    study = PrivateStudy(example.privacy, K, DELTA, privacy_space={"epochs": Choice(epochs)},
                         score_noise=example.SCORE_NOISE, seed=4, accountant="prv")
    result = study.optimize(objective)
    accuracy = example.accuracy(result.best_output, X_test, y_test)
    print(f"PrivateStudy: held-out accuracy {accuracy:.3f}, {result.certificate}")
    assert accuracy > 0.6
    # tuning epochs costs at most what the longest candidate would, and more than the shortest
    fixed = {e: ps.certify(ps.compose(example.privacy({"epochs": e}), example.SCORE_NOISE), K, DELTA,
                           accountant="prv").epsilon for e in epochs}
    assert fixed[2] < result.certificate.epsilon <= fixed[EPOCHS]


# -- the release guard on Opacus objects ----------------------------------------------------------------


def _leaky(example, leak):
    def train(params, data, rng):
        from opacus import PrivacyEngine

        X_train, y_train, X_val, y_val = data
        engine = PrivacyEngine()
        net = example.mlp(ps_opacus.generator(rng))
        noise, sampler = ps_opacus.generators(rng)
        loader = torch.utils.data.DataLoader(
            torch.utils.data.TensorDataset(torch.from_numpy(X_train[:100]), torch.from_numpy(y_train[:100])),
            batch_size=50, generator=sampler)
        model, optimizer, loader = engine.make_private(
            module=net, optimizer=torch.optim.SGD(net.parameters(), lr=0.1), data_loader=loader,
            noise_multiplier=1.0, max_grad_norm=1.0, noise_generator=noise)
        return 1.0, leak(net, optimizer, loader)

    return train


@pytest.mark.parametrize("leak, path", [
    (lambda net, optimizer, loader: optimizer, r"output: opacus\.optimizers\.optimizer\.DPOptimizer is not a release"),
    (lambda net, optimizer, loader: {"weights": net.state_dict(), "opt": optimizer},
     r"output\[key #1\]: opacus\.optimizers\.optimizer\.DPOptimizer is not a release"),
    (lambda net, optimizer, loader: setattr(net, "optimizer", optimizer) or net,
     r"output: torch\.nn\.modules\.container\.Sequential is not a release"),
    (lambda net, optimizer, loader: loader, r"output: opacus\.data_loader\.DPDataLoader is not a release"),
    (lambda net, optimizer, loader: {"noise": optimizer.generator},
     r"output\[key #0\]: torch\._C\.Generator is randomness state"),
])
def test_a_trainer_returning_the_opacus_optimizer_or_loader_scores_worst_and_dry_run_names_it(example, digits, leak,
                                                                                                path):
    tuner = PrivateTuner(_leaky(example, leak), {"x": Choice([0])}, ps.Gaussian(1.0), ps.Geometric(mean=1.5), DELTA,
                         seed=0, accountant="prv")
    with pytest.raises(AllRunsFailedError):  # none is a release value: every run scored worst
        tuner.run(digits[0])
    with pytest.raises(RandomnessLeakError, match=path):
        tuner.dry_run(digits[0])


def test_strip_sets_the_optimizer_generator_to_none(example, digits):
    tuner = PrivateTuner(_leaky(example, lambda net, optimizer, loader: {"weights": ps_opacus.weights(net),
                                                                         "noise": optimizer.generator}),
                         {"x": Choice([0])}, ps.Gaussian(1.0), ps.Geometric(mean=1.5), DELTA, seed=0, release="strip",
                         accountant="prv")
    result = tuner.run(digits[0])
    assert result.best_output["noise"] is None and set(result.best_output["weights"]) == {"0.weight", "0.bias",
                                                                                           "2.weight", "2.bias"}


# -- the docs' complete loop ----------------------------------------------------------------------------


def test_the_docs_complete_opacus_loop_runs_and_releases_a_certified_state_dict(example, digits, monkeypatch):
    # the docs' tuner draws a fresh secret seed; here it is fixed, so K and the winner (and the accuracy) are
    # the same in every run of the suite (with a fresh seed, K = 1 and an unlucky draw gave 0.49 once)
    monkeypatch.setitem(ps.PrivateTuner.__init__.__kwdefaults__, "seed", 0)
    page = (ROOT / "docs" / "trainers.md").read_text(encoding="utf-8")
    section = page[page.index("## A complete Opacus training loop"):]
    code, empty_batches = re.findall(r"```python\n(.*?)```", section[:section.index("\n## ", 4)], re.DOTALL)
    namespace: dict = {"__name__": "docs_trainers_opacus"}
    exec(compile(code, "trainers.md[opacus loop]", "exec"), namespace)
    exec(compile(empty_batches, "trainers.md[empty Poisson batch]", "exec"), namespace)  # runs, NaN loss and all
    assert all(torch.isfinite(p).all() for p in namespace["net"].parameters())  # the noise-only steps are finite
    result, one_run_docs = namespace["result"], namespace["opacus_run"]
    assert set(result.best_output) == {"0.weight", "0.bias", "2.weight", "2.bias"}
    _, (X_test, y_test) = digits
    assert example.accuracy(result.best_output, X_test, y_test) > 0.6
    steps = 5 * 20  # 5 epochs of int(1 / q) = 20 Poisson batches (1000 records, expected batch 50)
    assert one_run_docs == ps.Gaussian(1.0).poisson_subsample(1 / 20).compose(steps)
    assert result.certificate == ps.certify(ps.compose(one_run_docs, ps.Laplace(2.0)), ps.Geometric(mean=3), 1e-5)


@pytest.mark.slow  # seconds per case, measured: the slow tier runs it
def test_the_numbers_docs_state_for_the_example_are_its_certificate_and_one_run_epsilon(example):
    text = " ".join((ROOT / "docs" / "trainers.md").read_text(encoding="utf-8").split())
    shown = re.search(r"ε = (\d+\.\d+) at δ = 1e-5 for K ~ Geometric\(8\), against ε = (\d+\.\d+) for one "
                      r"15-epoch run alone", text)
    assert shown, "trainers.md no longer states the example's certificate"
    tuner = PrivateTuner(example.train_opacus, example.SPACE, example.privacy, example.K, example.DELTA,
                         score_noise=example.SCORE_NOISE)
    assert f"{tuner.certificate.epsilon:.3f}" == shown.group(1)
    assert f"{example.one_run_epsilon():.3f}" == shown.group(2)
