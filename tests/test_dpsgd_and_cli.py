"""The numpy DP-SGD classifier (the demo and the command line: tests/test_cli.py)."""

import numpy as np
import pytest
from sklearn.datasets import load_digits
from sklearn.utils.estimator_checks import parametrize_with_checks

import privselect as ps
from privselect.apps.dpsgd import DPSGDClassifier, dpsgd_steps


# Near-noiseless settings so the generic accuracy checks measure the estimator, not the privacy noise.
@parametrize_with_checks([DPSGDClassifier(noise_multiplier=1e-3, clip_norm=10.0, epochs=20, random_state=0)])
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)


def test_privacy_is_the_poisson_subsampled_gaussian_composition():
    model = DPSGDClassifier(noise_multiplier=1.1, sampling_rate=256 / 60000, epochs=60)
    assert model.privacy == ps.Gaussian(1.1).poisson_subsample(256 / 60000).compose(14063)
    assert dpsgd_steps(60, 256 / 60000) == 14063


def test_dpsgd_learns_digits_and_noise_hurts():
    X, y = load_digits(return_X_y=True)
    X = X / 16 - 0.5
    quiet = DPSGDClassifier(learning_rate=2.0, noise_multiplier=0.5, sampling_rate=0.05, epochs=10, random_state=0)
    loud = DPSGDClassifier(learning_rate=2.0, noise_multiplier=200.0, sampling_rate=0.05, epochs=10, random_state=0)
    assert quiet.fit(X[:1200], y[:1200]).score(X[1200:], y[1200:]) > 0.85
    assert loud.fit(X[:1200], y[:1200]).score(X[1200:], y[1200:]) < 0.5


def test_clipping_bounds_each_examples_influence():
    """With zero noise and a huge outlier, the clipped update equals the sum of clipped gradients."""
    X = np.array([[1.0, 0.0], [1e6, 0.0]])
    y = np.array([0, 1])
    m = DPSGDClassifier(learning_rate=1.0, clip_norm=0.5, noise_multiplier=1e-12, sampling_rate=1.0, epochs=1,
                        fit_intercept=False, random_state=0).fit(X, y)
    # one step from W = 0: each example's gradient has Frobenius norm <= 0.5, so ||W|| <= 2 * 0.5 / 2
    assert np.linalg.norm(m.coef_) <= 0.5 + 1e-9


@pytest.mark.parametrize("param, value", [("noise_multiplier", 0.0), ("sampling_rate", 1.5), ("epochs", -1),
                                          ("clip_norm", float("nan"))])
def test_bad_hyperparameters(param, value):
    with pytest.raises(ValueError, match=param):
        DPSGDClassifier(**{param: value}).fit(np.eye(4), [0, 1, 0, 1])


def test_make_dpsgd_trainer_refuses_privacy_hyperparameters_in_the_space():
    from privselect.apps.dpsgd import make_dpsgd_trainer
    from privselect.tuning import TrainerContractError
    from privselect.tuning.space import Choice

    with pytest.raises(ValueError, match="classes"):
        make_dpsgd_trainer(1.0, 0.1, classes=None)
    train = make_dpsgd_trainer(1.0, 0.1, classes=range(10))
    X, y = load_digits(return_X_y=True)
    data = (X[:100] / 16, y[:100], X[100:150] / 16, y[100:150])
    tuner = ps.PrivateTuner(train, {"noise_multiplier": Choice([0.5, 1.0])}, ps.Gaussian(1.0), ps.Geometric(mean=2),
                            1e-5, seed=0)
    with pytest.raises(TrainerContractError, match="noise_multiplier and sampling_rate set the privacy"):
        tuner.dry_run(data)
    with pytest.raises(ps.AllRunsFailedError, match="dry_run"):  # inside a certified run it scores worst
        tuner.run(data)


def test_classes_fix_the_label_set_and_fit_does_not_store_the_generator():
    X, y = load_digits(return_X_y=True)
    X = X / 16 - 0.5
    few = y < 3
    model = DPSGDClassifier(classes=range(10), epochs=1).fit(X[few], y[few], rng=np.random.default_rng(0))
    assert model.coef_.shape == (65, 10) and list(model.classes_) == list(range(10))
    assert model.random_state is None and model.get_params()["classes"] == range(10)
    with pytest.raises(ValueError, match="distinct"):
        DPSGDClassifier(classes=[1, 1, 2]).fit(X[:20], y[:20])
    with pytest.raises(TypeError, match="rng"):
        DPSGDClassifier(classes=range(10)).fit(X[:20], y[:20], rng=3)
