"""PrivateTuner pipelines (issue 15): final run, subsampled candidates, and attacks on the new release path."""

import numpy as np
import pytest

import privselect as ps
from privselect.selection.pipeline import certify_pipeline
from privselect.tuning import FinalRunFailedError, space

RUN = ps.Gaussian(2.0).poisson_subsample(0.05).compose(100)
K = ps.Geometric(mean=4)
N = 400


def _data():
    ids = np.arange(N, dtype=float)
    return ids.reshape(-1, 1), (np.arange(N) % 2)


def _candidate(params, data, rng):
    """Score = the learning rate; output = the record ids this candidate saw (to test the split)."""
    X, _ = data
    return params["lr"] + 1e-3 * rng.random(), X[:, 0].astype(int).tolist()


def _final(params, data, rng):
    X, _ = data
    return {"lr": params["lr"], "ids": X[:, 0].astype(int).tolist()}


def _tuner(**kwargs):
    options = dict(seed=7, backend="sequential", k=K, accountant="prv")  # the expected values use PRV
    options.update(kwargs)
    k = options.pop("k")
    return ps.PrivateTuner(_candidate, {"lr": space.Choice([0.1, 0.2, 0.3])}, RUN, k, 1e-5, **options)


def test_final_run_is_released_with_the_winner_and_certified_by_the_selection_layer():
    tuner = _tuner(final=ps.FinalRun(_final, RUN))
    result = tuner.run(_data())
    assert result.final_output["lr"] == result.best_params["lr"]
    assert result.final_output["ids"] == list(range(N))  # full data
    expected = certify_pipeline(RUN, K, 1e-5, final=RUN, accountant="prv")  # the tuner's accountant
    assert result.certificate.epsilon == expected.epsilon
    assert result.certificate.epsilon > ps.certify(RUN, K, 1e-5).epsilon


@pytest.mark.parametrize("final_data", ["full", "complement"])
def test_subsampled_candidates_and_the_final_run_see_the_right_records(final_data):
    rate = 0.3
    tuner = _tuner(final=ps.FinalRun(_final, RUN, data=final_data, extrapolate=lambda p, r: {"lr": p["lr"] * 2}),
                   tuning_rate=rate)
    result = tuner.run(_data())
    seen = set(result.best_output)
    assert 0.15 * N < len(seen) < 0.45 * N  # about rate * N records (Poisson)
    assert result.final_output["lr"] == 2 * result.best_params["lr"]  # the user's extrapolation rule
    final_ids = set(result.final_output["ids"])
    if final_data == "complement":
        assert final_ids.isdisjoint(seen) and final_ids | seen == set(range(N))
    else:
        assert final_ids == set(range(N))
    assert result.certificate.epsilon == certify_pipeline(RUN, K, 1e-5, final=RUN, tuning_rate=rate,
                                                          final_data=final_data, accountant="prv").epsilon


def test_subsample_is_drawn_independently_of_the_data():
    """Same seed and n, different record values: the same records are kept (the mask reads no data)."""
    X, y = _data()
    a = _tuner(tuning_rate=0.3, final=ps.FinalRun(_final, RUN, data="complement")).run((X, y))
    b = _tuner(tuning_rate=0.3, final=ps.FinalRun(_final, RUN, data="complement")).run((X, 1 - y))
    assert a.final_output["ids"] == b.final_output["ids"]


# -- attacks on the release path --------------------------------------------------------------


def _walk(value, seen=None):
    """Every object reachable from ``value`` through attributes, dict values and sequences."""
    seen = set() if seen is None else seen
    if id(value) in seen:
        return
    seen.add(id(value))
    yield value
    children = []
    if isinstance(value, dict):
        children = list(value.values())
    elif isinstance(value, (list, tuple, set)):
        children = list(value)
    elif hasattr(value, "__dict__"):
        children = list(vars(value).values())
    elif hasattr(value, "__dataclass_fields__"):
        children = [getattr(value, f) for f in value.__dataclass_fields__]
    for child in children:
        yield from _walk(child, seen)


def test_result_carries_no_subsample_mask_and_no_randomness_state():
    result = _tuner(tuning_rate=0.3, final=ps.FinalRun(lambda p, d, rng: {"lr": p["lr"]}, RUN)).run(_data())
    for obj in _walk(result):
        assert not isinstance(obj, (np.random.Generator, np.random.BitGenerator, np.random.SeedSequence))
        assert not (isinstance(obj, np.ndarray) and obj.dtype == bool), "a boolean mask left the tuner"
    assert "keep" not in repr(result) and "mask" not in repr(result)


def test_final_output_holding_a_generator_is_refused():
    leaky = ps.FinalRun(lambda p, d, rng: {"model": p, "rng": rng}, RUN)
    with pytest.raises(FinalRunFailedError, match="not released"):  # the fixed text: the final run saw the data
        _tuner(final=leaky).run(_data())


def test_final_run_that_raises_leaks_nothing():
    secret = "record 17 has value 0.123456"

    def failing(params, data, rng):
        raise ValueError(secret)

    with pytest.raises(FinalRunFailedError) as info:
        _tuner(final=ps.FinalRun(failing, RUN)).run(_data())
    assert secret not in str(info.value)
    assert info.value.__cause__ is None and info.value.__context__ is None


def test_pipeline_options_are_validated():
    with pytest.raises(TypeError, match="FinalRun"):
        _tuner(final=_final)
    with pytest.raises(ValueError, match="complement"):
        _tuner(final=ps.FinalRun(_final, RUN, data="complement"))
    with pytest.raises(ValueError, match="tuning_rate"):
        _tuner(tuning_rate=1.5)
    with pytest.raises(TypeError, match="privacy"):
        ps.FinalRun(_final, "DP-SGD")
    with pytest.raises(ValueError, match="reveal_k"):
        _tuner(final=ps.FinalRun(_final, RUN), reveal_k=True)


@pytest.mark.slow  # seconds per case, measured: the slow tier runs it
def test_private_study_final_run():
    from privselect.integrations.optuna import PrivateStudy

    X, y = _data()

    def objective(trial):
        return trial.suggest_categorical("lr", [0.1, 0.2, 0.3])

    final = ps.FinalRun(lambda params, data, rng: {"lr": params["lr"], "rows": len(X)}, RUN)
    result = PrivateStudy(RUN, K, 1e-5, seed=3, backend="sequential", final=final, accountant="prv").optimize(objective)
    assert result.final_output == {"lr": result.best_params["lr"], "rows": N}
    assert result.certificate.epsilon == certify_pipeline(RUN, K, 1e-5, final=RUN, accountant="prv").epsilon
    with pytest.raises(ValueError, match="final"):
        PrivateStudy(RUN, K, 1e-5, final=ps.FinalRun(_final, RUN, data="complement"))
    leaky = ps.FinalRun(lambda params, data, rng: rng, RUN)
    with pytest.raises(FinalRunFailedError, match="not released"):
        PrivateStudy(RUN, K, 1e-5, seed=3, backend="sequential", final=leaky).optimize(objective)
