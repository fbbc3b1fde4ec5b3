"""The bounded-density sampler: projection, the exact integer law actually sampled, grids, models, batches."""

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import privselect as ps
from privselect.selection.adaptive import DensityRatio
from privselect.tuning.adaptive import (
    RESOLUTION,
    CandidateGrid,
    DensityRatioError,
    IntegerLaw,
    Parzen,
    project_density,
)
from privselect.tuning.space import (
    Choice,
    IntLogUniform,
    IntUniform,
    LogUniform,
    Uniform,
)

ratios = st.tuples(st.floats(1.0001, 50.0), st.floats(0.01, 0.9999))
masses = st.lists(st.floats(1e-3, 1.0), min_size=1, max_size=60)


@settings(max_examples=200, deadline=None)
@given(ratio=ratios, prior=masses, g=st.lists(st.floats(0.0, 1e6), min_size=60, max_size=60),
       spike=st.integers(0, 59))
def test_sampled_law_respects_the_ratio_exactly_rounding_included(ratio, prior, g, spike):
    prior = np.array(prior) / np.sum(prior)
    g = np.array(g[:prior.size])
    g[spike % prior.size] += 1.0  # never all zero
    r = DensityRatio(*ratio)
    f = project_density(g, prior, r)
    # the projection: sums to 1, inside the bounds (float accuracy)
    assert f.sum() == pytest.approx(1.0, abs=1e-9)
    assert np.all(f >= r.lower * prior * (1 - 1e-12)) and np.all(f <= r.upper * prior * (1 + 1e-12))
    law = IntegerLaw.from_density(f, prior, r)
    assert int(law.counts.sum()) == RESOLUTION
    # exact rational check of what is sampled: counts / 2^40 against c * pi0 and C * pi0
    for count, p in zip(law.counts.tolist(), prior.tolist()):
        q = Fraction(count, RESOLUTION)
        assert Fraction(r.lower) * Fraction(p) <= q <= Fraction(r.upper) * Fraction(p)
    # the law is the projection up to rounding
    np.testing.assert_allclose(law.probabilities, f, atol=len(f) * 2.0 / RESOLUTION + 1e-12)


def test_projection_is_the_l2_projection_on_a_case_by_hand():
    prior = np.full(4, 0.25)
    g = np.array([0.7, 0.2, 0.1, 0.0])
    f = project_density(g, prior, DensityRatio(2.0, 0.5))
    # C pi0 = 0.5 caps the first; the rest solve clip(g - tau, 0.125, 0.5) summing to 0.5: tau = -0.0583..
    tau = (0.2 + 0.1 + 0.125 - 0.5 + 0.0) / 2  # cells 2, 3 free, cell 4 at the floor 0.125
    expected = np.array([0.5, 0.2 - tau, 0.1 - tau, 0.125])
    np.testing.assert_allclose(f, expected, atol=1e-12)
    assert f.sum() == pytest.approx(1.0)


def test_a_law_outside_the_bounds_is_refused():
    prior = np.full(3, 1 / 3)
    counts = np.array([RESOLUTION - 2, 1, 1], dtype=np.int64)  # ratio ~3 on the first cell, ~0 on the others
    with pytest.raises(DensityRatioError, match="density_ratio"):
        IntegerLaw(counts, prior, DensityRatio(1.5, 0.6))


def test_sampling_follows_the_integer_law():
    prior = np.full(3, 1 / 3)
    law = IntegerLaw.from_density(np.array([0.5, 0.3, 0.2]), prior, DensityRatio(1.5, 0.6))
    rng = np.random.default_rng(1)
    draws = np.bincount([law.sample(rng) for _ in range(30000)], minlength=3) / 30000
    np.testing.assert_allclose(draws, law.probabilities, atol=0.015)


def test_grid_cells_and_prior_mass():
    grid = CandidateGrid({"lr": LogUniform(1e-4, 1e-1), "units": Choice([16, 32]), "depth": IntUniform(1, 3),
                          "k": IntLogUniform(1, 4), "drop": Uniform(0.0, 0.5)}, points=8)
    assert grid.shape == (8, 2, 3, 4, 8)
    assert grid.prior.sum() == pytest.approx(1.0)
    k_mass = np.diff(np.log([0.5, 1.5, 2.5, 3.5, 4.5])) / np.log(9.0)  # Optuna's rounded log-uniform integer law
    np.testing.assert_allclose(grid.axes[3].mass, k_mass)
    rng = np.random.default_rng(0)
    params = grid.draw(grid.size - 1, rng)
    assert 10 ** -1.375 <= params["lr"] <= 1e-1 and params["units"] == 32 and params["depth"] == 3 and params["k"] == 4
    assert np.all((grid.coordinates(params) >= 0) & (grid.coordinates(params) <= 1))


def test_grid_refuses_too_many_cells_and_callable_spaces():
    with pytest.raises(ValueError, match="grid="):
        CandidateGrid({f"x{i}": Uniform(0, 1) for i in range(4)}, points=64)
    with pytest.raises(TypeError, match="dict"):
        CandidateGrid(lambda rng: {"x": 1})


def _landscape(params):
    return -((np.log10(params["lr"]) + 2.0) ** 2) - 0.5 * (params["width"] - 0.3) ** 2


@pytest.mark.slow  # seconds per case, measured: the slow tier runs it
@pytest.mark.parametrize("model", ["gp", Parzen()])
def test_models_concentrate_on_the_good_region_within_the_ratio(model):
    space = {"lr": LogUniform(1e-4, 1.0), "width": Uniform(0.0, 1.0)}
    search = ps.AdaptiveSearch(model=model, density_ratio=(4.0, 0.25), grid=16)
    state = search.start(space)
    rng = np.random.default_rng(3)
    for i in range(25):
        params = state.draw(i, rng)
        state.observe(i, _landscape(params) + 0.01 * rng.normal())
    law = state.law(25)
    ratio = law.effective_ratio()
    assert ratio.max() <= 4.0 and ratio.min() >= 0.25
    good = np.array([_landscape(state.grid.draw(c, np.random.default_rng(0))) for c in range(state.grid.size)])
    top = good >= np.quantile(good, 0.9)
    assert law.probabilities[top].sum() > 1.5 * state.grid.prior[top].sum()  # learnt: more mass on the best decile


def test_batches_share_the_density_of_the_results_before_them():
    space = {"x": Uniform(0.0, 1.0)}
    state = ps.AdaptiveSearch(model=Parzen(min_observations=2), density_ratio=(3.0, 0.3), grid=8,
                              batch_size=4).start(space)
    rng = np.random.default_rng(0)
    for i in range(4):
        state.draw(i, rng)
    first = state.law(0)
    np.testing.assert_array_equal(first.counts, state.law(3).counts)
    for i in range(4):
        state.observe(i, float(i))
    assert state.law(4) is state.law(7)
    assert not np.array_equal(state.law(4).counts, first.counts)  # the batch after sees the four results


def test_failed_runs_are_left_out_and_the_model_sees_noisy_scores_only():
    state = ps.AdaptiveSearch(model="parzen", density_ratio=(2.0, 0.5), grid=4).start({"x": Uniform(0, 1)})
    rng = np.random.default_rng(0)
    state.draw(0, rng)
    state.observe(0, float("nan"))
    state.draw(1, rng)
    state.observe(1, 0.5)
    assert state._y == [0.5] and state._seen == [1]


def test_without_room_the_search_is_the_prior():
    state = ps.AdaptiveSearch(model="parzen", density_ratio=(1.0, 1.0), grid=4).start({"x": Uniform(0, 1)})
    assert state.law(10) is None


@pytest.mark.parametrize("kwargs, word", [({"grid": 0}, "grid"), ({"batch_size": 1.5}, "batch_size"),
                                          ({"model": "tpe"}, "model"), ({"density_ratio": (0.5, 0.2)}, "density_ratio"),
                                          ({"density_ratio": None}, "density_ratio=\\(C, c\\)")])
def test_bad_search_options_name_the_parameter(kwargs, word):
    with pytest.raises((ValueError, TypeError), match=word):
        ps.AdaptiveSearch(**{"density_ratio": (1.5, 0.8), **kwargs})


def test_a_grid_too_fine_for_the_resolution_is_refused_before_any_run():
    space = {"x": Choice(list(range(200_000)))}
    with pytest.raises(DensityRatioError, match="coarser grid"):
        ps.AdaptiveSearch(model="parzen", density_ratio=(1 + 1e-9, 1 - 1e-9)).start(space)
