"""PrivateTuner: release rules, leak tests, reproducibility across backends, K's distribution."""

import asyncio
import json
import logging
import math

import numpy as np
import pytest
from scipy import stats

import privselect as ps
from privselect.tuning import AllRunsFailedError, CandidatePrivacyError, PrivateTuner, TrainerContractError
from privselect.tuning.space import Choice, IntUniform, LogUniform, Uniform

BASE = ps.Gaussian(4.0)
SPACE = {"x": Uniform(0.0, 1.0), "c": Choice(["a", "b"]), "n": IntUniform(1, 5), "lr": LogUniform(1e-3, 1.0)}


def score_by_x(params, data, rng):
    return params["x"], {"x": params["x"]}


def tuner(train=score_by_x, k=None, **kwargs):
    kwargs.setdefault("accountant", "exact")
    return PrivateTuner(train, SPACE, kwargs.pop("privacy", BASE), k or ps.Geometric(mean=10), 1e-6, **kwargs)


def test_certificate_equals_certify_for_the_same_inputs():
    t = tuner(seed=1)
    assert t.run(None).certificate == ps.certify(BASE, ps.Geometric(mean=10), 1e-6, accountant="exact")


def test_winner_is_the_best_candidate_and_direction_is_respected():
    best = tuner(seed=7, reveal_k=True).run(None)
    assert best.best_output == {"x": best.best_params["x"]} and best.best_score == best.best_params["x"]
    worst = tuner(seed=7, direction="minimize", reveal_k=True).run(None)
    assert worst.n_runs == best.n_runs
    if best.n_runs > 1:
        assert worst.best_score < best.best_score


def test_k_is_not_released_by_default():
    calls = []

    def counting(params, data, rng):
        calls.append(1)
        return params["x"], None

    result = tuner(train=counting, seed=9, k=ps.Geometric(mean=20)).run(None)
    k = len(calls)
    assert result.n_runs is None and "n_runs" not in result.to_dict()
    assert f"n_runs={k}" not in repr(result)


def test_revealing_k_switches_to_the_mixture_certificate():
    hidden = tuner(seed=1)
    revealed = tuner(seed=1, reveal_k=True)
    assert revealed.certificate.bound == "mixture"
    assert revealed.certificate.epsilon > hidden.certificate.epsilon
    assert revealed.run(None).n_runs >= 1


@pytest.mark.slow  # seconds per case, measured: the slow tier runs it
def test_k_follows_the_configured_distribution():
    """Chi-square test of K over 3000 tuner runs with a trivial trainer."""
    k = ps.Geometric(mean=3)
    t = tuner(k=k, reveal_k=True)
    draws = []
    for seed in range(3000):
        t.seed = seed
        draws.append(t.run(None).n_runs)
    draws = np.array(draws)
    values = np.arange(1, 9)
    observed = np.array([(draws == v).sum() for v in values] + [(draws > 8).sum()])
    expected = np.append(k.pmf(values), 1 - k.pmf(values).sum()) * draws.size
    assert stats.chisquare(observed, expected).pvalue > 1e-4


def test_poisson_k_zero_releases_nothing():
    t = tuner(k=ps.Poisson(0.05), seed=0, reveal_k=True)
    results = []
    for seed in range(40):
        t.seed = seed
        results.append(t.run(None))
    empty = [r for r in results if r.n_runs == 0]
    assert empty, "Poisson(0.05) should draw K = 0 most of the time"
    r = empty[0]
    assert not r.selected and r.best_params is None and r.best_score is None and r.best_output is None
    assert "nothing selected" in repr(r)
    hidden = tuner(k=ps.Poisson(0.05), seed=r_seed(results)).run(None)
    assert not hidden.selected and hidden.n_runs is None


def r_seed(results):
    return next(seed for seed, r in enumerate(results) if r.n_runs == 0)


MARKER = "LEAKED-"


def marker_trainer(params, data, rng):
    """Every run embeds its own score in its output; the winner's marker is allowed out."""
    tag = f"{MARKER}{params['x']:.12f}"
    logging.getLogger("user.trainer").debug("not from privselect")
    return params["x"], {"tag": tag, "blob": [tag] * 3}


def test_no_non_winning_run_leaks(caplog, capsys):
    caplog.set_level(logging.DEBUG)
    t = tuner(train=marker_trainer, seed=11, k=ps.Geometric(mean=30), progress=True, reveal_k=True)
    result = t.run(None)
    assert result.n_runs > 3
    # reconstruct every candidate's marker from the seed (they are data-independent)
    from privselect.tuning.run import RunSeeds
    from privselect.tuning.space import draw
    _, _, runs_seed = np.random.SeedSequence(11).spawn(3)
    candidates = [draw(SPACE, RunSeeds.of_run(runs_seed, i).params_rng()) for i in range(result.n_runs)]
    losers = [c for c in candidates if c != result.best_params]
    assert len(losers) == result.n_runs - 1
    captured = capsys.readouterr()
    privselect_logs = "\n".join(r.getMessage() for r in caplog.records if r.name.startswith("privselect"))
    surfaces = [repr(result), str(result), json.dumps(result.to_dict()), privselect_logs, captured.out, captured.err,
                repr(result.best_output), repr(vars(result))]
    for loser in losers:
        for text in (f"{MARKER}{loser['x']:.12f}", repr(loser["x"]), f"{loser['x']:.6f}"):
            for surface in surfaces:
                assert text not in surface
    assert f"{MARKER}{result.best_params['x']:.12f}" in repr(result.best_output)
    assert "privselect runs" in captured.err  # the bar was shown, with counts only
    assert captured.out == ""


def raising_trainer(params, data, rng):
    if params["c"] == "a":
        raise RuntimeError(f"SECRET-{params['x']}")
    return params["x"], "ok"


def test_raising_runs_score_worst_and_their_message_does_not_surface(caplog, capsys):
    caplog.set_level(logging.DEBUG)
    result = tuner(train=raising_trainer, seed=5, k=ps.Geometric(mean=20)).run(None)
    captured = capsys.readouterr()
    assert "SECRET" not in repr(result) + captured.out + captured.err + caplog.text
    if result.best_score > -math.inf:
        assert result.best_params["c"] == "b" and result.best_output == "ok"


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_invalid_scores_score_worst(bad):
    def trainer(params, data, rng):
        return (bad if params["x"] > 0.5 else params["x"]), "out"
    result = tuner(train=trainer, seed=3, k=ps.Geometric(mean=30)).run(None)
    assert math.isfinite(result.best_score) and result.best_score <= 0.5


@pytest.mark.parametrize("bad", ["not a number", None, (1.0, 2.0, 3.0), {"score": 1.0}, np.array([1.0]), True])
def test_a_return_that_is_not_a_score_is_a_programming_error_that_dry_run_raises_and_a_run_scores_worst(bad):
    def trainer(params, data, rng):
        return bad
    with pytest.raises(TrainerContractError, match="dry_run"):
        tuner(train=trainer).dry_run(None)
    with pytest.raises(AllRunsFailedError, match="dry_run"):
        tuner(train=trainer, seed=3).run(None)

    def sometimes(params, data, rng):
        return bad if params["x"] > 0.5 else params["x"]
    assert tuner(train=sometimes, seed=3, k=ps.Geometric(mean=30)).run(None).best_score <= 0.5


def test_a_pair_whose_score_has_the_wrong_type_is_told_the_score_type_not_the_tuple_length():
    def trainer(params, data, rng):
        return "3.0", None
    with pytest.raises(TrainerContractError, match=r"pair \(score, output\) whose score is a str") as info:
        tuner(train=trainer).dry_run(None)
    assert "2-tuple" not in str(info.value) and "0-d torch tensor" in str(info.value)
    vector = (np.array([1.0, 2.0]), None)
    with pytest.raises(TrainerContractError, match=r"numpy.ndarray with 1 dimension\(s\) and dtype float64"):
        tuner(train=lambda params, data, rng: vector).dry_run(None)


@pytest.mark.parametrize("make", [lambda x: np.array(x), lambda x: np.array(x, dtype=np.float32),
                                  lambda x: np.array(round(100 * x))])
def test_zero_dimensional_numpy_scores_are_accepted_as_floats(make):
    def trainer(params, data, rng):
        return make(params["x"]), "out"
    result = tuner(train=trainer, seed=3, k=ps.Geometric(mean=5)).run(None)
    assert type(result.best_score) is float and result.best_output == "out"
    assert type(tuner(train=trainer).dry_run(None).best_score) is float


def test_zero_dimensional_torch_scores_are_accepted_and_others_are_told_the_score_type():
    torch = pytest.importorskip("torch")

    def trainer(params, data, rng):
        return torch.tensor(params["x"], requires_grad=True) * 2, None
    result = tuner(train=trainer, seed=3, k=ps.Geometric(mean=5)).run(None)
    assert type(result.best_score) is float and 0.0 <= result.best_score <= 2.0
    def returning(bad):
        return lambda params, data, rng: (bad, None)
    for bad in (torch.tensor([3.0]), torch.tensor(True), torch.tensor(1 + 2j)):
        with pytest.raises(TrainerContractError, match=r"whose score is a torch.Tensor with \d dimension"):
            tuner(train=returning(bad)).dry_run(None)


def test_scores_never_import_torch():
    import subprocess
    import sys

    code = ("import sys, numpy as np; from privselect.tuning.run import split_return; from privselect.errors import TrainerContractError\n"
            "assert split_return((np.array(2.5), 'o')) == (2.5, 'o')\n"
            "try:\n    split_return((object(), None))\nexcept TrainerContractError:\n    pass\n"
            "assert 'torch' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_all_runs_failing_raises_an_error_without_run_data():
    def trainer(params, data, rng):
        raise ValueError(f"boom-{params['x']}")
    for direction in ("maximize", "minimize"):
        with pytest.raises(AllRunsFailedError) as info:
            tuner(train=trainer, seed=3, direction=direction).run(None)
        assert "boom" not in str(info.value) and info.value.__cause__ is None and info.value.__context__ is None


def test_nothing_printed_and_debug_logs_carry_no_scores(caplog, capsys):
    caplog.set_level(logging.DEBUG, logger="privselect")
    result = tuner(seed=2).run(None)
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == ""
    assert str(result.best_score) not in caplog.text
    assert f"{result.best_score:.4f}" not in caplog.text


def _cpu_trainer(params, data, rng):
    x = rng.normal(size=(60, 60))
    for _ in range(5):
        x = np.tanh(x @ x.T / 60)
    return float(x.sum()) + params["x"], params


def test_same_seed_same_result_sequential_loky():
    seq = tuner(train=_cpu_trainer, seed=21, k=ps.Geometric(mean=8)).run(None)
    loky = tuner(train=_cpu_trainer, seed=21, k=ps.Geometric(mean=8), n_jobs=2, backend="loky").run(None)
    assert (seq.best_params, seq.best_score) == (loky.best_params, loky.best_score)


def test_same_seed_same_result_on_a_local_dask_cluster():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as cluster:
        with distributed.Client(cluster):
            dask = tuner(train=_cpu_trainer, seed=21, k=ps.Geometric(mean=8), n_jobs=2, backend="dask").run(None)
    seq = tuner(train=_cpu_trainer, seed=21, k=ps.Geometric(mean=8)).run(None)
    assert (seq.best_params, seq.best_score) == (dask.best_params, dask.best_score)


def test_score_noise_is_added_and_composed_into_the_certificate():
    gaussian_noise = ps.Gaussian(2.0, sensitivity=1.0)
    t = tuner(seed=4, score_noise=gaussian_noise)
    result = t.run(None)
    assert result.best_score != result.best_params["x"]  # noise was added
    assert t.certificate == ps.certify(ps.compose(BASE, gaussian_noise), ps.Geometric(mean=10), 1e-6,
                                       accountant="exact")
    noise = ps.Laplace(2.0, sensitivity=1.0)
    expected = ps.certify(ps.compose(BASE, noise), ps.Geometric(mean=10), 1e-6)
    t_prv = PrivateTuner(score_by_x, SPACE, BASE, ps.Geometric(mean=10), 1e-6, score_noise=noise)
    assert t_prv.certificate.epsilon == pytest.approx(expected.epsilon, rel=1e-12)


def test_callable_privacy_certifies_the_smaller_of_mixture_and_cor62():
    calls = []

    def trainer(params, data, rng):
        calls.append(params)
        return params["s"], None

    space = {"s": Choice([2.0, 3.0, 4.0])}
    privacy = lambda p: ps.Gaussian(p["s"])  # noqa: E731
    ok = PrivateTuner(trainer, space, privacy, ps.Geometric(mean=10), 1e-6, base_epsilon=2.5, seed=0,
                      accountant="exact")
    cert = ok.certificate
    assert cert.alternatives["cor62"] == pytest.approx(ok.thresholds().epsilon)
    assert cert.epsilon == min(cert.alternatives.values())
    assert cert.bound == min(cert.alternatives, key=cert.alternatives.get)
    ok.run(None)
    assert calls
    # base_epsilon is optional: Cor. 6.2 then uses the smallest eps_Q every candidate meets
    auto = PrivateTuner(trainer, space, privacy, ps.Geometric(mean=10), 1e-6, accountant="exact")
    assert set(auto.certificate.alternatives) == {"mixture-profile", "cor62"}
    assert auto.certificate.alternatives["cor62"] <= cert.alternatives["cor62"] + 1e-9
    poisson = PrivateTuner(trainer, space, privacy, ps.Poisson(10), 1e-6, base_epsilon=2.0, accountant="exact")
    assert poisson.certificate.bound == "mixture-profile" and "cor62" not in poisson.certificate.alternatives


def test_continuous_privacy_hyperparameters_need_cor62_and_are_checked_per_candidate():
    calls = []

    def trainer(params, data, rng):
        calls.append(params)
        return params["s"], None

    space = {"s": Uniform(2.0, 4.0), "c": Choice(["a", "b"])}
    privacy = lambda p: ps.Gaussian(p["s"])  # noqa: E731
    with pytest.raises(ValueError, match="'s'.*continuous.*base_epsilon"):  # refused at construction
        PrivateTuner(trainer, space, privacy, ps.Geometric(mean=10), 1e-6, accountant="exact")
    strict = PrivateTuner(trainer, space, privacy, ps.Geometric(mean=10), 1e-6, base_epsilon=0.5, seed=0,
                          accountant="exact")
    assert strict.certificate.bound == "cor62"
    with pytest.raises(CandidatePrivacyError, match="Cor. 6.2 thresholds"):
        strict.run(None)
    assert calls == []  # the candidate is checked before its run trains
    # privacy that reads only the finite hyperparameters is certified exactly, continuous ones aside
    by_c = PrivateTuner(trainer, space, lambda p: ps.Gaussian(2.0 if p["c"] == "a" else 4.0), ps.Geometric(mean=10),
                        1e-6, accountant="exact")
    assert by_c.certificate.alternatives["mixture-profile"] > 0


def test_calibrate_picks_the_calibrate_k_mean_meeting_the_target():
    t = tuner().calibrate_k_mean(3.0)
    assert t.certificate.epsilon <= 3.0
    assert ps.certify(BASE, ps.Geometric(mean=t.k.mean * 1.01), 1e-6, accountant="exact").epsilon > 3.0


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        ({"direction": "up"}, ValueError, "direction"),
        ({"backend": "spark"}, ValueError, "backend"),
        ({"n_jobs": 0}, ValueError, "n_jobs"),
        ({"seed": -1}, ValueError, "seed"),
        ({"score_noise": ps.PureDP(1.0)}, TypeError, "score_noise"),
    ],
)
def test_bad_arguments(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        tuner(**kwargs)


def test_bad_space_privacy_and_k():
    with pytest.raises(TypeError, match="search_space"):
        PrivateTuner(score_by_x, {"x": [0, 1]}, BASE, ps.Geometric(mean=3), 1e-6)
    with pytest.raises(TypeError, match="privacy"):
        PrivateTuner(score_by_x, SPACE, 3.0, ps.Geometric(mean=3), 1e-6)
    with pytest.raises(TypeError, match="k must"):
        PrivateTuner(score_by_x, SPACE, BASE, 10, 1e-6)
    with pytest.raises(ValueError, match="delta"):
        PrivateTuner(score_by_x, SPACE, BASE, ps.Geometric(mean=3), 0.0)


def test_callable_search_space():
    t = PrivateTuner(score_by_x, lambda rng: {"x": float(rng.uniform())}, BASE, ps.Geometric(mean=5), 1e-6, seed=1,
                     accountant="exact")
    assert 0 <= t.run(None).best_params["x"] <= 1


# -- hyperparameter-dependent privacy: the mixture-profile certificate --------------------------


def _gaussian_delta_by_hand(eps, sigma):
    """Balle-Wang 2018 Thm 8: delta(eps) of the Gaussian mechanism with mu = 1/sigma (scipy only)."""
    mu = 1.0 / sigma
    return stats.norm.cdf(-eps / mu + mu / 2) - np.exp(eps) * stats.norm.cdf(-eps / mu - mu / 2)


def _noise_tuner(grid, k=None, **kwargs):
    return PrivateTuner(score_by_x, {"x": Uniform(0.0, 1.0), "sigma": Choice(grid)},
                        lambda p: ps.Gaussian(p["sigma"]), k or ps.Geometric(mean=10), 1e-6, accountant="exact",
                        **kwargs)


def test_mixture_certificate_lies_between_the_most_and_least_private_candidates():
    grid = [1.5, 2.0, 3.0, 5.0]
    cert = _noise_tuner(grid).certificate
    most = ps.certify(ps.Gaussian(max(grid)), ps.Geometric(mean=10), 1e-6, accountant="exact").epsilon
    least = ps.certify(ps.Gaussian(min(grid)), ps.Geometric(mean=10), 1e-6, accountant="exact").epsilon
    assert most < cert.alternatives["mixture-profile"] < least
    assert most < cert.epsilon <= cert.alternatives["mixture-profile"]
    # a one-point grid is the fixed-privacy certificate
    single = _noise_tuner([2.0]).certificate
    assert single.alternatives["mixture-profile"] == pytest.approx(
        ps.certify(ps.Gaussian(2.0), ps.Geometric(mean=10), 1e-6, accountant="exact").epsilon, rel=1e-12)


def test_two_point_grid_matches_the_average_by_hand():
    from scipy import optimize

    from privselect.accounting.average import average_profile
    from privselect.selection.bounds import selection_shift

    profiles = [ps.privacy_profile(ps.Gaussian(s), accountant="exact") for s in (1.0, 4.0)]
    averaged = average_profile(profiles, [0.5, 0.5])
    eps = np.array([0.0, 0.3, 1.0, 2.5, 4.0])
    by_hand = 0.5 * (_gaussian_delta_by_hand(eps, 1.0) + _gaussian_delta_by_hand(eps, 4.0))
    np.testing.assert_allclose(averaged.delta(eps), by_hand, rtol=1e-9)
    assert np.all(averaged.delta(eps) >= by_hand)  # the upper side never undershoots
    # the certificate: KRW Thm 5.2 applied to the hand average (shift s, amplification E[K])
    k = ps.Geometric(mean=10)
    cert = _noise_tuner([1.0, 4.0], k=k).certificate
    shift = selection_shift(averaged, k).shift
    target = 1e-6 / k.mean
    eps_hand = optimize.brentq(lambda e: 0.5 * (_gaussian_delta_by_hand(e, 1.0) + _gaussian_delta_by_hand(e, 4.0))
                               - target, 0.0, 50.0, xtol=1e-13)
    assert cert.alternatives["mixture-profile"] == pytest.approx(shift + eps_hand, rel=1e-8)


def test_non_uniform_finite_laws_weight_by_the_sampling_law():
    from privselect.tuning.space import privacy_law

    law = privacy_law({"s": Choice([1.0, 1.0, 2.0]), "n": IntUniform(1, 2)}, lambda p: ps.Gaussian(p["s"]))
    assert dict((m.noise_multiplier, w) for w, m in law.components) == pytest.approx({1.0: 2 / 3, 2.0: 1 / 3})


# -- memory: constant in K -------------------------------------------------------------------------

_MB = 10 * 2**20


def _big_output(params, data, rng):
    return params["x"], np.empty(_MB // 8)  # 10 MB, allocated (tracemalloc sees it), never touched


@pytest.mark.slow  # seconds per case, measured: the slow tier runs it
def test_memory_is_constant_in_k_with_10mb_outputs():
    import tracemalloc

    calls = []

    def train(params, data, rng):
        calls.append(1)
        return _big_output(params, data, rng)

    t = PrivateTuner(train, {"x": Uniform(0.0, 1.0)}, BASE, ps.Binomial(1000, 1 - 1e-12), 1e-6, seed=0,
                     accountant="exact")
    t.certificate  # noqa: B018 - computed before measuring
    tracemalloc.start()
    try:
        result = t.run(None)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(calls) == 1000 and result.best_output.nbytes == _MB
    # at most: the best run's pickled release value, the current run's release value and its pickle (the trainer's
    # own output is dropped once converted), and a little more; constant over the 1000 runs
    assert peak < 4.5 * _MB, f"peak {peak / _MB:.2f} outputs alive"


def test_trainer_signature_is_checked_before_any_run():
    with pytest.raises(TrainerContractError, match=r"3 positional argument\(s\) \(params, data, rng\)"):
        PrivateTuner(lambda params, data: 1.0, SPACE, BASE, ps.Geometric(mean=3), 1e-6)
    PrivateTuner(lambda *args: args[0]["x"], SPACE, BASE, ps.Geometric(mean=3), 1e-6)  # *args binds


def test_k_zero_still_returns_nothing_selected_and_progress_is_off_by_default(capsys):
    t = tuner(k=ps.Poisson(1e-9), seed=0)
    assert t.progress is False
    result = t.run(None)
    assert not result.selected and result.best_output is None
    assert capsys.readouterr().err == ""


@pytest.mark.slow  # seconds per case, measured: the slow tier runs it
def test_only_the_hyperparameters_privacy_reads_are_enumerated():
    from privselect.tuning.space import privacy_law

    space = {"batch": IntUniform(1, 10**7), "s": Choice([1.0, 2.0]), "lr": LogUniform(1e-3, 1.0)}
    law = privacy_law(space, lambda p: ps.Gaussian(p["s"]))  # 10^7 batch sizes never enumerated
    assert sorted((m.noise_multiplier, w) for w, m in law.components) == [(1.0, 0.5), (2.0, 0.5)]
    # a read that depends on another value is discovered, and weighted by the sampling law
    nested = privacy_law({"a": Choice([0, 1]), "s": Choice([1.0, 3.0, 5.0])},
                         lambda p: ps.Gaussian(2.0 if p["a"] == 0 else p["s"]))
    assert dict((m.noise_multiplier, w) for w, m in nested.components) == pytest.approx(
        {2.0: 0.5, 1.0: 1 / 6, 3.0: 1 / 6, 5.0: 1 / 6})
    with pytest.raises(ValueError, match="batch"):
        privacy_law(space, lambda p: ps.Gaussian(1.0 + p["batch"] * 1e-7))


def test_exceptions_from_outside_the_runs_leave_as_clean_copies():
    from privselect.tuning.engine import clean_copy, released

    def exits(code):
        raise SystemExit(code)

    for code, expected in ((None, None), (3, 3), ("secret 0.731", 1)):
        with pytest.raises(SystemExit) as info:
            released(exits, code)
        assert info.value.code == expected and info.value.__context__ is None
    # a trainer's exception never leaves; one raised by other code (a user split) keeps only its type
    def split(data, keep):
        raise KeyError(f"SECRET {data[0]}")
    with pytest.raises(RuntimeError, match="builtins.KeyError, raised outside the runs") as info:
        tuner(tuning_rate=0.5, split=split, seed=1, accountant="prv").run(np.arange(10.0))
    assert "SECRET" not in str(info.value) and info.value.__context__ is None
    assert isinstance(clean_copy(asyncio.CancelledError("SECRET")), asyncio.CancelledError)
    assert clean_copy(asyncio.CancelledError("SECRET")).args == ()
