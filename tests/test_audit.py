"""Empirical privacy audits: the auditor itself, and audits of privselect's certificates.

Every audit checks ``empirical lower bound <= certificate``; the broken-tuner audits check
the opposite (the auditor has power). Simulations are vectorised (2e5 draws per side).
The tightness ratios quoted in docs/reliability.md come from ``experiments/audit.py``.
"""


import numpy as np
import pytest
from scipy import stats

import privselect as ps
from privselect import audit as A
from privselect.accounting.profile import discrete_profile
from privselect.selection.rnm import rnm_profile
from tests.support import audit as S
from tests.support.audit import LeakyTuner

N = 200_000


# -- the statistics ---------------------------------------------------------------------


def test_clopper_pearson_matches_scipy_exact_interval():
    n = 37
    x = np.arange(n + 1)
    lo, hi = A.clopper_pearson(x, n, 0.9)
    for xi, l, h in zip(x, lo, hi):
        ci = stats.binomtest(int(xi), n).proportion_ci(0.9, method="exact")
        assert l == pytest.approx(ci.low, abs=1e-12) and h == pytest.approx(ci.high, abs=1e-12)
    assert lo[0] == 0.0 and hi[-1] == 1.0


@pytest.mark.parametrize("kwargs, exc, name", [
    (dict(successes=[1], trials=[0]), ValueError, "trials"),
    (dict(successes=[3], trials=[2]), ValueError, "successes"),
    (dict(successes=[0.5], trials=[2]), ValueError, "successes"),
    (dict(successes=[1], trials=[2], confidence=1.0), ValueError, "confidence"),
    (dict(successes=["a"], trials=[2]), TypeError, "successes"),
])
def test_clopper_pearson_validates(kwargs, exc, name):
    with pytest.raises(exc, match=name):
        A.clopper_pearson(**kwargs)


@pytest.mark.parametrize("kwargs, exc, name", [
    (dict(delta=1.0), ValueError, "delta"),
    (dict(delta=-1e-3), ValueError, "delta"),
    (dict(confidence=0.0), ValueError, "confidence"),
    (dict(thresholds=[]), ValueError, "thresholds"),
    (dict(thresholds=[np.inf]), ValueError, "thresholds"),
    (dict(thresholds=[np.nan]), ValueError, "thresholds"),
    (dict(scores=[]), ValueError, "scores"),
    (dict(scores=[[1.0, 2.0]]), ValueError, "scores"),
    (dict(scores=[np.nan, 1.0]), ValueError, "scores"),
    (dict(scores_neighbour="x"), TypeError, "scores_neighbour"),
])
def test_epsilon_lower_bound_validates(kwargs, exc, name):
    args = dict(scores=[0.0, 1.0, 2.0], scores_neighbour=[0.0, 1.0], delta=0.0, thresholds=[0.5])
    args.update(kwargs)
    with pytest.raises(exc, match=name):
        A.epsilon_lower_bound(**args)


@pytest.mark.parametrize("kwargs, exc, name", [
    (dict(mechanism=3), TypeError, "mechanism"),
    (dict(n_samples=5), ValueError, "n_samples"),
    (dict(n_samples=1.5), ValueError, "n_samples"),
    (dict(n_thresholds=0), ValueError, "n_thresholds"),
    (dict(pilot_fraction=1.0), ValueError, "pilot_fraction"),
    (dict(seed=-1), ValueError, "seed"),
    (dict(statistic="max"), TypeError, "statistic"),
    (dict(statistic=lambda out: out * np.nan), ValueError, "NaN"),
    (dict(statistic=lambda out: out[:1]), ValueError, "statistic returned"),
    (dict(vectorised="yes"), TypeError, "vectorised"),
])
def test_audit_validates(kwargs, exc, name):
    args = dict(mechanism=S.gaussian_sum_mechanism(1.0), data=[0.0], neighbour=[1.0], delta=1e-3, n_samples=1000)
    args.update(kwargs)
    mechanism = args.pop("mechanism")
    with pytest.raises(exc, match=name):
        A.audit(mechanism, **{k: v for k, v in args.items()})


def test_identical_data_sets_give_zero():
    r = A.audit(S.gaussian_sum_mechanism(1.0), [0.0], [0.0], delta=0.0, n_samples=50_000, seed=0)
    assert r.epsilon_lower == 0.0 and r.threshold is None
    assert r.to_dict()["kind"].startswith("empirical lower bound")


@pytest.mark.slow  # seconds per case, measured: the slow tier runs it
def test_coverage_lower_bound_rarely_exceeds_the_truth():
    """300 small audits of the Gaussian mechanism: P[lower > exact eps] <= 1 - confidence (expect ~0)."""
    mu, delta = 1.0, 0.05
    exact = float(ps.gaussian_epsilon(delta, mu))
    rng = np.random.default_rng(1)
    t = np.linspace(-2, 3, 11)
    over = 0
    for _ in range(300):
        a, b = rng.normal(0, 1, 2000), rng.normal(mu, 1, 2000)
        over += A.epsilon_lower_bound(a, b, delta=delta, thresholds=t, confidence=0.9).epsilon_lower > exact
    assert over <= 30  # 10% allowed; Clopper-Pearson + Bonferroni is conservative
    assert over <= 3


def test_fixed_threshold_family_uses_all_samples_and_bonferroni():
    t = [0.0, 1.0, 2.0, 3.0]
    r = A.audit(S.gaussian_sum_mechanism(1.0), [], [1.0], delta=0.01, thresholds=t, n_samples=20_000, seed=3)
    assert r.n_samples == (20_000, 20_000) and r.n_thresholds == 4
    assert 0 < r.epsilon_lower <= ps.gaussian_epsilon(0.01, 1.0)


def test_non_vectorised_mechanism_and_plain_callable():
    calls = []

    def mech(data):  # no rng, no size: called once per draw
        calls.append(1)
        return float(np.sum(data) + np.random.default_rng(len(calls)).normal())

    r = A.audit(mech, [0.0], [1.0], delta=0.05, n_samples=2000, seed=0)
    assert len(calls) == 4000
    assert 0 <= r.epsilon_lower <= ps.gaussian_epsilon(0.05, 1.0)


def test_result_helpers():
    r = A.audit(S.gaussian_sum_mechanism(1.0), [0.0], [1.0], delta=0.01, n_samples=20_000, seed=1)
    assert r.tightness(4.0) == pytest.approx(r.epsilon_lower / 4.0)
    assert not r.violates(10.0) and r.violates(0.0)
    with pytest.raises(ValueError, match="certified_epsilon"):
        r.tightness(0.0)


def test_sample_k_matches_the_law():
    rng = np.random.default_rng(0)
    for k in (ps.Geometric(mean=5), ps.Binomial(8, 0.3), ps.Poisson(4.0), ps.Logarithmic(mean=3)):
        draws = S.sample_k(k, 50_000, rng)
        support = np.arange(k.min_k, draws.max() + 1)
        freq = np.bincount(draws - k.min_k, minlength=support.size) / draws.size
        assert np.max(np.abs(freq - k.pmf(support))) < 0.01
        assert draws.mean() == pytest.approx(k.mean, rel=0.03)


# -- audit 1: the Gaussian mechanism (the lower bound approaches the exact epsilon) ---------


@pytest.mark.parametrize("sigma", [0.5, 1.0, 2.0])
def test_gaussian_mechanism_audit(sigma):
    delta = 1e-2
    exact = float(ps.gaussian_epsilon(delta, 1 / sigma))
    cert = ps.privacy_profile(ps.Gaussian(sigma), accountant="prv").epsilon(delta)
    r = A.audit(S.gaussian_sum_mechanism(sigma), np.zeros(5), np.r_[np.zeros(5), 1.0], delta=delta, n_samples=N,
                seed=10)
    assert r.epsilon_lower <= exact <= cert
    assert r.tightness(cert) > 0.8  # close to the exact value with 2e5 draws


# -- audit 2: Report-Noisy-Max ----------------------------------------------------------------


def gaussian_rnm_pmf(scores, sigma):
    p = S.gaussian_report_noisy_max_pmf(scores, sigma)
    return p / p.sum()


@pytest.mark.parametrize("sigma", [0.5, 1.0])
def test_report_noisy_max_audit(sigma):
    x, x2, delta = np.array([1.0, 0.0, 0.0]), np.array([0.0, 1.0, 1.0]), 1e-2
    cert = rnm_profile(ps.Gaussian(sigma), 3, accountant="exact").epsilon(delta)
    exact = discrete_profile(gaussian_rnm_pmf(x, sigma), gaussian_rnm_pmf(x2, sigma)).epsilon(delta)
    r = A.audit(S.report_noisy_max_mechanism(ps.Gaussian(sigma)), x, x2, delta=delta, n_samples=N, seed=11)
    assert r.epsilon_lower <= exact <= cert
    assert r.epsilon_lower >= 0.9 * exact  # the pair's own epsilon is nearly reached
    # the released index is distributed as the library's report_noisy_max
    rng = np.random.default_rng(0)
    lib = np.bincount([ps.report_noisy_max(x, ps.Gaussian(sigma), rng) for _ in range(3000)], minlength=3)
    assert stats.chisquare(lib, 3000 * gaussian_rnm_pmf(x, sigma)).pvalue > 1e-3


# -- audit 3: the private tuner, synthetic Gaussian base with an exact profile ---------------

SIGMA = 1.0
K_FAMILIES = [ps.Geometric(mean=10), ps.Binomial.from_mean(10, 20), ps.Poisson(10.0)]


def make_train(sigma):
    def train(params, data, rng):
        """A DP 'training run' whose privacy is exactly Gaussian(sigma): its noisy score."""
        return float(data[params["j"]] + rng.normal(0.0, sigma))

    return train


_train = make_train(SIGMA)


def _best_score(out):
    return out["best_score"]


@pytest.mark.parametrize("k", K_FAMILIES, ids=["geometric", "binomial", "poisson"])
def test_tuner_audit_below_certificate(k):
    delta = 1e-2
    cert = ps.PrivateTuner(_train, {"j": ps.space.Choice([0])}, ps.Gaussian(SIGMA), k, delta,
                           accountant="exact").certificate.epsilon
    r = A.audit(S.best_of_k_mechanism(k, ps.Gaussian(SIGMA)), np.array([0.0]), np.array([1.0]), delta=delta,
                statistic=_best_score, n_samples=N, seed=12)
    assert 0.3 * cert < r.epsilon_lower <= cert


@pytest.mark.slow  # seconds per case, measured: the slow tier runs it
@pytest.mark.parametrize("k", [ps.Geometric(mean=3), ps.Poisson(3.0)], ids=["geometric", "poisson"])
def test_simulator_matches_the_real_tuner(k):
    """The vectorised model has the law of PrivateTuner.run's released best score."""
    data = np.array([0.0, 1.0])
    tuner = ps.PrivateTuner(_train, {"j": ps.space.Choice([0, 1])}, ps.Gaussian(SIGMA), k, 1e-3,
                            backend="sequential", accountant="exact")
    real = []
    for seed in range(1200):
        tuner.seed = seed
        res = tuner.run(data)
        real.append(res.best_score if res.selected else -np.inf)
    real = np.array(real)
    sim = S.best_of_k_mechanism(k, ps.Gaussian(SIGMA))(data, np.random.default_rng(0), size=20_000)["best_score"]
    assert abs(np.mean(np.isinf(real)) - np.mean(np.isinf(sim))) < 0.03
    assert stats.ks_2samp(real[np.isfinite(real)], sim[np.isfinite(sim)]).pvalue > 1e-3


# -- the auditor has power: a deliberately broken tuner --------------------------------------


def _transcript_llr(out):
    """Log-likelihood ratio (up to the 1/sigma^2 factor) of everything the leaky tuner releases."""
    return out["best_score"] + out["losers_sum"] - 0.5 * (out["losers_count"] + 1)


@pytest.mark.parametrize("k, sigma", [(ps.Geometric(mean=10), 2.0), (ps.Binomial(10, 0.5), 1.0), (ps.Poisson(5.0), 1.0)],
                         ids=["geometric", "binomial", "poisson"])
def test_auditor_catches_a_tuner_that_leaks_non_winning_scores(k, sigma):
    delta = 1e-2
    cert = ps.certify(ps.Gaussian(sigma), k, delta, accountant="exact").epsilon
    honest = A.audit(S.best_of_k_mechanism(k, ps.Gaussian(sigma)), np.array([0.0]), np.array([1.0]), delta=delta,
                     statistic=_best_score, n_samples=N, seed=13)
    leaky = A.audit(S.best_of_k_mechanism(k, ps.Gaussian(sigma), leak=True), np.array([0.0]), np.array([1.0]),
                    delta=delta, statistic=_transcript_llr, n_samples=N, seed=13)
    assert not honest.violates(cert)
    assert leaky.violates(cert) and leaky.epsilon_lower > cert + 0.5


@pytest.mark.slow
def test_real_leaky_tuner_has_the_simulated_law_and_is_caught():
    k, delta, sigma = ps.Geometric(mean=30), 1e-2, 3.0
    tuner = LeakyTuner(make_train(sigma), {"j": ps.space.Choice([0])}, ps.Gaussian(sigma), k, delta,
                       backend="sequential", accountant="exact")
    cert = tuner.certificate.epsilon

    def run_once(data, rng):
        tuner.seed = int(rng.integers(2**32))
        res = tuner.run(np.asarray(data))
        return {"best_score": np.array([res.best_score]), **{key: np.array([v]) for key, v in res.best_output.items()}}

    # the real code path, audited through the non-vectorised interface
    real = A.audit(run_once, [0.0], [1.0], delta=delta, statistic=lambda o: _transcript_llr(o)[0], n_samples=1500,
                   seed=14)
    sim = S.best_of_k_mechanism(k, ps.Gaussian(sigma), leak=True)
    sample = np.array([_transcript_llr(run_once([1.0], np.random.default_rng(s)))[0] for s in range(500)])
    simulated = _transcript_llr(sim(np.array([1.0]), np.random.default_rng(0), size=20_000))
    assert stats.ks_2samp(sample, simulated).pvalue > 1e-3
    assert real.violates(cert)
