"""Report-Noisy-Max: exact output distributions against KRW Thm 3.2, 3.3 and Cor. 3.4."""

import math

import numpy as np
import pytest
from scipy import special, stats

import privselect as ps
from privselect.selection.rnm import (
    report_noisy_max,
    rnm_epsilon_closed_form,
    rnm_noise_mechanism,
    rnm_profile,
)
from tests.support.audit import gaussian_report_noisy_max_pmf as gaussian_rnm_pmf


def hockey(a, b, eps):
    return np.maximum(a[None, :] - np.exp(eps)[:, None] * b[None, :], 0).sum(axis=1)


def product_pmf(p, rounds):
    out = p
    for _ in range(rounds - 1):
        out = np.outer(out, p).ravel()
    return out


@pytest.mark.parametrize("sigma", [0.7, 2.0])
def test_single_round_bound_dominates_exact_rnm(sigma):
    """KRW Thm 3.2 with sensitivity 2 for non-monotone scores; 3 candidates, adversarial neighbours."""
    x, x2 = np.array([1.0, 0.0, 0.5]), np.array([0.0, 1.0, -0.5])  # every score moves by <= 1
    a, a2 = gaussian_rnm_pmf(x, sigma), gaussian_rnm_pmf(x2, sigma)
    eps = np.linspace(0, 8, 81)
    exact = np.maximum(hockey(a, a2, eps), hockey(a2, a, eps))
    bound = rnm_profile(ps.Gaussian(sigma), 3, accountant="exact").delta(eps)
    assert np.all(exact <= bound + 1e-12)
    assert exact[0] > 0.05  # a non-trivial pair (total variation)


def test_monotone_scores_use_sensitivity_one():
    sigma = 1.0
    x, x2 = np.array([1.0, 0.0, 0.5]), np.array([0.0, 0.0, 0.0])  # all scores move down
    a, a2 = gaussian_rnm_pmf(x, sigma), gaussian_rnm_pmf(x2, sigma)
    eps = np.linspace(0, 5, 51)
    exact = np.maximum(hockey(a, a2, eps), hockey(a2, a, eps))
    bound = rnm_profile(ps.Gaussian(sigma), 3, monotone=True, accountant="exact").delta(eps)
    assert np.all(exact <= bound + 1e-12)
    assert rnm_noise_mechanism(ps.Gaussian(sigma), monotone=True).sensitivity == 1.0


def test_adaptive_composition_uses_k_fold_not_m_wise():
    """KRW Thm 3.3: m^k delta_k(eps) with delta_k the k-FOLD composition (App. A.2's proof).

    Counterexample to the printed 'm-wise' reading: m = 2 candidates, k = 40 rounds,
    sigma = 0.5. Each round is a two-point output; the exact 40-round divergence at
    eps = 90 is about 0.04, while m^k times the m-wise (2-fold) profile is ~1e-27.
    """
    sigma, m, k = 0.5, 2, 40
    x, x2 = np.array([1.0, 0.0]), np.array([0.0, 1.0])
    p = special.ndtr((x[0] - x[1]) / (sigma * math.sqrt(2)))
    q = special.ndtr((x2[0] - x2[1]) / (sigma * math.sqrt(2)))
    # k independent rounds of a two-point output: the loss is a binomial count (exact).
    c = math.log(p / (1 - p)) - math.log(q / (1 - q))
    j = np.arange(k + 1)
    log_loss = j * math.log(p / q) + (k - j) * math.log((1 - p) / (1 - q))
    pj = stats.binom.pmf(j, k, p)
    exact_90 = float(np.sum(pj * np.maximum(1 - np.exp(90 - log_loss), 0)))
    assert exact_90 > 0.01
    m_wise = m**k * ps.gaussian_delta(90.0, 2 * math.sqrt(m) / sigma)
    assert m_wise < exact_90  # the m-wise reading would certify less than the truth
    k_fold = rnm_profile(ps.Gaussian(sigma), m, rounds=k, accountant="exact").delta(90.0)
    assert k_fold >= exact_90
    assert c > 0


def test_two_rounds_exact_composition_below_bound():
    sigma = 1.0
    x, x2 = np.array([1.0, 0.0, 0.5]), np.array([0.0, 1.0, -0.5])
    a, a2 = product_pmf(gaussian_rnm_pmf(x, sigma), 2), product_pmf(gaussian_rnm_pmf(x2, sigma), 2)
    eps = np.linspace(0, 10, 101)
    exact = np.maximum(hockey(a, a2, eps), hockey(a2, a, eps))
    bound = rnm_profile(ps.Gaussian(sigma), 3, rounds=2, accountant="exact").delta(eps)
    assert np.all(exact <= bound + 1e-12)


@pytest.mark.parametrize("m", [2, 10, 1000])
def test_closed_form_corollary_3_4_is_looser_than_thm_3_2(m):
    sigma, delta = 4.0, 1e-6
    cor = rnm_epsilon_closed_form(sigma, m, delta)
    assert cor == pytest.approx(2 / 16 + 0.5 * math.sqrt(2 * math.log(m / delta)), rel=1e-14)
    thm = rnm_profile(ps.Gaussian(sigma), m, accountant="exact").epsilon(delta)
    assert thm < cor


def test_report_noisy_max_picks_the_clear_winner_and_is_unbiased():
    rng = np.random.default_rng(0)
    assert report_noisy_max([0.0, 100.0, 1.0], ps.Gaussian(0.1), rng) == 1
    # two equal scores: each wins half the time
    wins = [report_noisy_max([0.0, 0.0], ps.Laplace(1.0), rng) for _ in range(4000)]
    assert abs(np.mean(wins) - 0.5) < 0.04


@pytest.mark.parametrize("bad, exc", [([], ValueError), ([[1.0, 2.0]], ValueError), ([1.0, float("nan")], ValueError),
                                      ([1.0, float("inf")], ValueError)])
def test_report_noisy_max_rejects_bad_scores(bad, exc):
    with pytest.raises(exc, match="scores"):
        report_noisy_max(bad, ps.Gaussian(1.0), np.random.default_rng(0))


def test_report_noisy_max_rejects_bad_noise_and_rng():
    with pytest.raises(TypeError, match="noise"):
        report_noisy_max([1.0], ps.PureDP(1.0), np.random.default_rng(0))
    with pytest.raises(TypeError, match="rng"):
        report_noisy_max([1.0], ps.Gaussian(1.0), 0)
