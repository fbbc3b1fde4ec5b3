"""Calibration: the noise multiplier (or steps, or E[K]) for a target epsilon, one run or a whole tuning.

Sound: the certificate at the answer meets the target (the same certified computation: the run's
profile for one run, ``certify`` for a tuning). Tight: at 0.1% less noise (one step more) it does not.
Checked against closed forms (full-batch DP-SGD is mu-GDP with mu = sqrt(T) / sigma) and against
Opacus's ``get_noise_multiplier`` on the same run.
"""

import math

import pytest
from hypothesis import given, settings, strategies as st
from scipy import optimize

import privselect as ps
from privselect.accounting import gaussian_epsilon

DELTA = 1e-5
MNIST = {"sample_rate": 256 / 60000, "epochs": 60}  # Opacus's MNIST example: 14063 steps


def _epsilon(sigma: float, delta: float = DELTA, k=None, **schedule) -> float:
    run = ps.dpsgd(noise_multiplier=sigma, **schedule)
    return float(ps.privacy_profile(run).epsilon(delta)) if k is None else float(ps.certify(run, k, delta).epsilon)


def _assert_sound_and_tight(sigma, target, delta=DELTA, k=None, **schedule):
    assert _epsilon(sigma, delta, k, **schedule) <= target
    assert _epsilon(sigma * (1 - 1e-3), delta, k, **schedule) > target


def _gdp_sigma(target: float, delta: float, steps: int) -> float:
    """Full batch: T Gaussian steps are mu-GDP with mu = sqrt(T) / sigma (Dong, Roth, Su 2022, Cor. 3.3)."""
    mu = optimize.brentq(lambda m: float(gaussian_epsilon(delta, m)) - target, 1e-9, 1e3, xtol=1e-15, rtol=1e-15)
    return math.sqrt(steps) / mu


@pytest.mark.parametrize("target", [0.01, 0.3, 3.0, 30.0, 100.0])
@pytest.mark.slow
def test_one_run_noise_is_sound_and_tight_from_001_to_100(target):
    sigma = ps.calibrate_noise(target, DELTA, **MNIST)
    _assert_sound_and_tight(sigma, target, **MNIST)


@pytest.mark.parametrize("target", [0.01, 1.0, 10.0, 100.0])
@pytest.mark.slow
def test_tuning_noise_with_geometric_k_is_sound_and_tight_from_001_to_100(target):
    k = ps.Geometric(mean=10)
    schedule = {"sample_rate": 0.01, "steps": 500}
    sigma = ps.calibrate_noise(target, DELTA, **schedule, k=k)
    _assert_sound_and_tight(sigma, target, k=k, **schedule)
    assert sigma > ps.calibrate_noise(target, DELTA, **schedule)  # the tuning costs noise


@pytest.mark.slow  # seconds per case, measured: the slow tier runs it
def test_tuning_noise_on_the_mnist_run_is_sound_and_tight():
    k = ps.Geometric(mean=10)
    sigma = ps.calibrate_noise(3.0, DELTA, **MNIST, k=k)
    _assert_sound_and_tight(sigma, 3.0, k=k, **MNIST)


@pytest.mark.parametrize("k", [ps.Logarithmic(mean=5), ps.TruncatedNegativeBinomial(0.5, mean=5), ps.Poisson(5),
                               ps.Binomial.from_mean(5, 20)], ids=repr)
@pytest.mark.slow
def test_every_k_law_is_calibrated_soundly_and_tightly(k):
    schedule = {"sample_rate": 0.02, "steps": 200}
    sigma = ps.calibrate_noise(2.0, 1e-6, **schedule, k=k)
    _assert_sound_and_tight(sigma, 2.0, 1e-6, k=k, **schedule)


@pytest.mark.slow  # seconds per case, measured: the slow tier runs it
@settings(max_examples=20)
@given(target=st.floats(0.01, 100.0), log_delta=st.floats(-12.0, -2.0), steps=st.integers(1, 10_000))
def test_full_batch_noise_is_the_gdp_closed_form(target, log_delta, steps):
    """q = 1: the answer is sqrt(T) / mu* (mu* the GDP mu with eps(delta) = target), from above, within 0.1%."""
    delta = 10.0 ** log_delta
    sigma = ps.calibrate_noise(target, delta, sample_rate=1.0, steps=steps)
    expected = _gdp_sigma(target, delta, steps)
    assert expected * (1 - 1e-9) <= sigma <= expected * (1 + 1e-3)


@pytest.mark.slow  # seconds per case, measured: the slow tier runs it
def test_sampling_without_replacement_is_calibrated_under_replace_one():
    schedule = {"batch_size": 64, "dataset_size": 6400, "steps": 300, "sampling": "without_replacement"}
    sigma = ps.calibrate_noise(2.0, DELTA, **schedule)
    _assert_sound_and_tight(sigma, 2.0, **schedule)
    # replace-one neighbours move a record's contribution twice: more noise than Poisson's add/remove
    assert sigma > ps.calibrate_noise(2.0, DELTA, sample_rate=0.01, steps=300)


@pytest.mark.slow  # seconds per case, measured: the slow tier runs it
def test_opacus_vocabulary_counts_steps_as_dpsgd_does():
    """batch_size / dataset_size is the rate; epochs give ceil(epochs / rate) steps, as ps.dpsgd counts
    them (Opacus's get_noise_multiplier counts int(epochs / rate): 14062 here, one step fewer)."""
    by_batch = ps.calibrate_noise(3.0, DELTA, batch_size=256, dataset_size=60000, epochs=60)
    by_rate = ps.calibrate_noise(3.0, DELTA, sample_rate=256 / 60000, steps=math.ceil(60 / (256 / 60000)))
    assert math.ceil(60 / (256 / 60000)) == 14063 and int(60 / (256 / 60000)) == 14062
    assert by_batch == by_rate


@pytest.mark.slow  # seconds per case, measured: the slow tier runs it
@pytest.mark.parametrize("accountant", ["prv", "rdp"])
def test_noise_is_at_most_opacus_get_noise_multiplier(accountant):
    """A tighter analysis needs less noise: privselect's sigma is at most Opacus's on the same run (its
    binary search stops with eps within 0.01 below the target; its sigma is on the safe side of its own
    accountant), and the run at Opacus's sigma also meets the target under privselect's certificate."""
    utils = pytest.importorskip("opacus.accountants.utils")
    q, steps = 0.01, 1000
    theirs = utils.get_noise_multiplier(target_epsilon=3.0, target_delta=DELTA, sample_rate=q, steps=steps,
                                        accountant=accountant)
    ours = ps.calibrate_noise(3.0, DELTA, sample_rate=q, steps=steps)
    assert ours <= theirs
    assert _epsilon(theirs, sample_rate=q, steps=steps) <= 3.0
    if accountant == "rdp":  # RDP's conversion is loose: privselect saves several percent of the noise
        assert ours < 0.97 * theirs


@pytest.mark.slow  # seconds per case, measured: the slow tier runs it
def test_noise_answers_where_opacus_refuses_or_stops_far_above():
    """eps = 0.01: Opacus's RDP search raises "The privacy budget is too low"; its PRV search stops at the
    first doubling under the target (its tolerance is an absolute 0.01), 1280 against privselect's 77.1,
    which is sound and tight."""
    utils = pytest.importorskip("opacus.accountants.utils")
    schedule = {"sample_rate": 0.01, "steps": 1000}
    with pytest.raises(ValueError, match="too low"):
        utils.get_noise_multiplier(target_epsilon=0.01, target_delta=DELTA, accountant="rdp", **schedule)
    theirs = utils.get_noise_multiplier(target_epsilon=0.01, target_delta=DELTA, accountant="prv", **schedule)
    ours = ps.calibrate_noise(0.01, DELTA, **schedule)
    _assert_sound_and_tight(ours, 0.01, **schedule)
    assert ours < theirs / 10


@pytest.mark.slow  # seconds per case, measured: the slow tier runs it
def test_steps_are_sound_and_tight_to_the_step():
    schedule = {"sample_rate": 0.01}
    steps = ps.calibrate_steps(1.1, 3.0, DELTA, **schedule)
    assert _epsilon(1.1, steps=steps, **schedule) <= 3.0 < _epsilon(1.1, steps=steps + 1, **schedule)


def test_full_batch_steps_are_the_gdp_closed_form():
    """q = 1: the longest run has floor((mu* sigma)^2) steps."""
    mu = optimize.brentq(lambda m: float(gaussian_epsilon(DELTA, m)) - 2.0, 1e-9, 1e3, xtol=1e-15)
    assert ps.calibrate_steps(20.0, 2.0, DELTA, sample_rate=1.0) == math.floor((mu * 20.0) ** 2)


@pytest.mark.slow  # seconds per case, measured: the slow tier runs it
def test_steps_of_a_tuning_are_sound_and_tight():
    k = ps.Geometric(mean=5)
    steps = ps.calibrate_steps(2.0, 4.0, DELTA, batch_size=100, dataset_size=1000, k=k)
    assert _epsilon(2.0, k=k, sample_rate=0.1, steps=steps) <= 4.0 < _epsilon(2.0, k=k, sample_rate=0.1,
                                                                             steps=steps + 1)


@pytest.mark.slow  # seconds per case, measured: the slow tier runs it
def test_epochs_give_the_calibrated_steps_as_dpsgd_counts_them():
    rate = 256 / 60000
    steps = ps.calibrate_steps(1.0, 2.0, DELTA, sample_rate=rate)
    epochs = ps.calibrate_epochs(1.0, 2.0, DELTA, sample_rate=rate)
    run = ps.dpsgd(noise_multiplier=1.0, sample_rate=rate, epochs=epochs)
    assert list(run.components())[0][1] == steps
    assert float(ps.privacy_profile(run).epsilon(DELTA)) <= 2.0


@pytest.mark.slow  # seconds per case, measured: the slow tier runs it
def test_k_mean_is_exported_and_meets_the_target_tightly():
    base = ps.Gaussian(3.0).poisson_subsample(0.1).compose(100)
    m = ps.calibrate_k_mean(base, 2.5, 1e-6)
    assert ps.certify(base, ps.Geometric(mean=m), 1e-6).epsilon <= 2.5 < ps.certify(
        base, ps.Geometric(mean=m * 1.001), 1e-6).epsilon


@pytest.mark.parametrize("kwargs, error, name", [
    ({"target_epsilon": 0.0}, ValueError, "target_epsilon"),
    ({"target_epsilon": float("nan")}, ValueError, "target_epsilon"),
    ({"target_epsilon": "3"}, TypeError, "target_epsilon"),
    ({"delta": 0.0}, ValueError, "delta"),
    ({"delta": 1.0}, ValueError, "delta"),
    ({"k": 10}, TypeError, "k must be"),
    ({"sample_rate": None}, ValueError, "sample_rate or batch_size"),
    ({"sample_rate": 1.5}, ValueError, "sample_rate"),
    ({"steps": 0}, ValueError, "steps"),
    ({"epochs": 3}, ValueError, "steps or epochs"),
    ({"sampling": "shuffle"}, ValueError, "sampling"),
    ({"accountant": "nope"}, ValueError, "nope"),
])
def test_bad_input_names_the_parameter(kwargs, error, name):
    args = {"target_epsilon": 3.0, "delta": DELTA, "sample_rate": 0.01, "steps": 100, **kwargs}
    with pytest.raises(error, match=name):
        ps.calibrate_noise(args.pop("target_epsilon"), args.pop("delta"), **args)


def test_unreachable_target_is_a_library_error():
    """Full batch, 1e6 steps: even sigma = 1e6 gives eps(1e-5) of about 4.3e-3 > 1e-3."""
    with pytest.raises(ps.CertificationError, match="target_epsilon=0.001"):
        ps.calibrate_noise(1e-3, DELTA, sample_rate=1.0, steps=10**6)
    with pytest.raises(ps.CertificationError, match="even one step"):
        ps.calibrate_steps(0.5, 0.1, DELTA, sample_rate=1.0)


@pytest.mark.parametrize("kwargs, name", [({"noise_multiplier": -1.0}, "noise_multiplier"),
                                          ({"batch_size": 10}, "dataset_size")])
def test_steps_bad_input_names_the_parameter(kwargs, name):
    args = {"noise_multiplier": 1.0, "sample_rate": 0.01, **kwargs}
    if "batch_size" in kwargs:
        args.pop("sample_rate")
    with pytest.raises(ValueError, match=name):
        ps.calibrate_steps(args.pop("noise_multiplier"), 3.0, DELTA, **args)


@pytest.mark.parametrize("kwargs, name", [({"bound": "rdp"}, "bound"), ({"bound": "nope", "k": ps.Geometric(mean=5)},
                                                                          "bound"),
                                          ({"accountant": 3}, "accountant")])
def test_bound_and_accountant_are_checked_at_the_surface(kwargs, name):
    with pytest.raises((ValueError, TypeError), match=name):
        ps.calibrate_noise(3.0, DELTA, sample_rate=0.01, steps=100, **kwargs)


@pytest.mark.slow  # seconds per case, measured: the slow tier runs it
@settings(max_examples=8)
@given(target=st.floats(0.05, 50.0), log_delta=st.floats(-10.0, -3.0), log_rate=st.floats(-3.0, 0.0),
       steps=st.integers(1, 2000), k=st.sampled_from([None, ps.Geometric(mean=3)]))
def test_any_dpsgd_run_is_calibrated_soundly_and_tightly_or_refused_clearly(target, log_delta, log_rate, steps, k):
    delta, rate = 10.0 ** log_delta, 10.0 ** log_rate
    try:
        sigma = ps.calibrate_noise(target, delta, sample_rate=rate, steps=steps, k=k)
    except ps.CertificationError as exc:  # only where the target needs no noise at all in [1e-2, 1e6]
        assert "every noise multiplier down to" in str(exc)
        assert _epsilon(1e-2, delta, k, sample_rate=rate, steps=steps) <= target
        return
    _assert_sound_and_tight(sigma, target, delta, k=k, sample_rate=rate, steps=steps)
