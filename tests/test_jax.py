"""JAX: the example DP-SGD loop (examples/jax_dpsgd.py) tuned through PrivateTuner, jax.Array release as numpy,
typed keys refused, and jax-privacy's events read as the descriptions they state."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest

import privselect as ps
from privselect.errors import AllRunsFailedError
from privselect.tuning.release import ReleaseRefusedError, release_value

jax = pytest.importorskip("jax")
jnp = jax.numpy
ROOT = Path(__file__).resolve().parents[1]


def _load_example():
    spec = importlib.util.spec_from_file_location("jax_dpsgd", ROOT / "examples" / "jax_dpsgd.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_jax_arrays_are_released_as_numpy_arrays():
    released = release_value({"w": jnp.arange(6.0).reshape(2, 3), "s": jnp.float32(0.5), "i": [jnp.int32(3)]})
    assert type(released["w"]) is np.ndarray and np.array_equal(released["w"], np.arange(6.0).reshape(2, 3))
    assert type(released["s"]) is np.ndarray and released["s"] == np.float32(0.5)
    assert type(released["i"][0]) is np.ndarray and released["i"][0] == 3


def test_typed_prng_keys_are_refused_in_a_release():
    with pytest.raises(ReleaseRefusedError, match="key"):
        release_value({"weights": jnp.ones(2), "key": jax.random.key(0)})


def test_a_run_returning_its_typed_key_is_refused_by_the_tuner():
    def train(params, data, rng):
        return 1.0, {"key": jax.random.key(int(rng.integers(0, 2**31)))}

    tuner = ps.PrivateTuner(train, {"x": ps.Choice([1])}, ps.Gaussian(5.0), ps.Geometric(2), 1e-5, seed=3)
    with pytest.raises(AllRunsFailedError) as exc:  # every run's output refused: nothing released
        tuner.run(None)
    assert "PRNGKey" not in str(exc.value) and exc.value.__cause__ is None


@pytest.mark.slow  # about 20 s on CPU: JAX compiles the loop in each run
def test_jax_example_tunes_and_certifies_its_dp_accounting_event():
    example = _load_example()
    # the event a jax-privacy user writes is Poisson-sampled DP-SGD: sigma 1, q = 50/1000, 10 epochs = 200 steps
    assert example.PRIVACY == ps.dpsgd(noise_multiplier=1.0, sample_rate=0.05, steps=200)
    data, (X_test, y_test) = example.load_data()
    result = example.tune(data, seed=11)
    weights = result.best_output
    assert set(weights) == {"w", "b"} and all(type(v) is np.ndarray for v in weights.values())
    assert weights["w"].shape == (64, 10)
    assert example.accuracy(weights, X_test, y_test) > 0.6  # ten classes: chance is 0.1
    expected = ps.certify(ps.compose(example.PRIVACY, example.SCORE_NOISE), example.K, example.DELTA)
    assert result.certificate.epsilon == pytest.approx(expected.epsilon, rel=1e-9)


def test_jax_privacy_events_read_as_the_descriptions_they_state():
    accounting = pytest.importorskip("jax_privacy.experimental.accounting")
    q, n = 256 / 60000, 60000
    assert ps.from_dp_event(accounting.dpsgd_event(1.1, 1000, sampling_prob=q)) == \
        ps.dpsgd(noise_multiplier=1.1, sample_rate=q, steps=1000)
    fixed = accounting.fixed_dpsgd_event(1.1, 1000, dataset_size=n, batch_size=256, replace=False)
    assert ps.from_dp_event(fixed) == ps.Gaussian(1.1, relation="replace_one").sample_without_replacement(q).compose(1000)
    with pytest.raises(ValueError, match="SampledWithReplacementDpEvent"):
        ps.from_dp_event(accounting.fixed_dpsgd_event(1.1, 1000, dataset_size=n, batch_size=256, replace=True))
    untruncated = accounting.truncated_dpsgd_event(1.1, 1000, sampling_prob=q, num_examples=n,
                                                   truncated_batch_size=n + 1)
    assert ps.from_dp_event(untruncated) == ps.dpsgd(noise_multiplier=1.1, sample_rate=q, steps=1000)


def test_a_dp_keras_config_run_is_the_poisson_description_jax_privacy_accounts():
    """jax-privacy's DPKerasConfig (Poisson sampling in fit): one run (sigma, steps, effective batch) is
    ps.dpsgd's description; its epsilon matches jax-privacy's own DP-SGD accountant (PLD) within 1%."""
    import os

    os.environ.setdefault("KERAS_BACKEND", "jax")
    keras_api = pytest.importorskip("jax_privacy.keras_api")
    from jax_privacy.accounting import accountants, analysis

    config = keras_api.DPKerasConfig(epsilon=3.0, delta=1e-5, clipping_norm=1.0, batch_size=128,
                                     gradient_accumulation_steps=2, train_steps=2000, train_size=60000,
                                     noise_multiplier=1.1, poisson_sampling_in_fit=True)
    run = ps.dpsgd(noise_multiplier=config.noise_multiplier, batch_size=config.effective_batch_size,
                   dataset_size=config.train_size, steps=config.train_steps)
    assert run == ps.Gaussian(1.1).poisson_subsample(256 / 60000).compose(2000)
    accountant = analysis.DpsgdTrainingAccountant(
        dp_accountant_config=accountants.PldAccountantConfig(value_discretization_interval=1e-4))
    params = analysis.DpParams(noise_multipliers=1.1, num_samples=60000, delta=1e-5, batch_size=256)
    peer = accountant.compute_epsilon(num_updates=2000, dp_params=params)
    assert float(ps.privacy_profile(run).epsilon(1e-5)) == pytest.approx(peer, rel=1e-2)
