"""Extreme regimes: delta down to 1e-15, epsilon up to 50, k up to 1e6, q down to 1e-6, sigma 0.3 to 1e3.

Contract: a certified value (never below an exact or lower reference, never NaN) or a clear
error that names the regime (``CertificationError`` saying which delta is below which floor
and what to do). A user's path is followed: the default accountant ("auto"),
whose "auto" accountant uses CF below the PRV floating-point floor.
Bugs found in these regimes (B1, B12) are regression tests at the end.
"""

import itertools
import math

import numpy as np
import pytest

import privselect as ps
from privselect.accounting import CertificationError
from tests.support.soundness import Case, small_k_epsilon


def certified_epsilon(mechanism, delta):
    """(accountant that answered, certified eps) as a user gets it: the default accountant ("auto")."""
    prof = ps.privacy_profile(mechanism)
    eps = prof.epsilon(delta)
    source = prof.epsilon_source(delta) if hasattr(prof, "epsilon_source") else dict(prof.metadata)["accountant"]
    return source, eps


def test_prv_refusal_names_the_regime():
    mechanism = ps.Gaussian(1.1).poisson_subsample(0.01).compose(1000)
    with pytest.raises(CertificationError) as info:
        ps.privacy_profile(mechanism, accountant="prv").epsilon(1e-15)
    msg = str(info.value)
    assert "delta=1e-15" in msg and "smallest delta" in msg and "='cf'" in msg, msg


def assert_certified(eps):
    assert isinstance(eps, float) and not math.isnan(eps) and eps >= 0 and math.isfinite(eps)


GAUSSIAN_CORNERS = list(itertools.product([0.3, 1e3], [1, 10**6], [1e-15, 1e-8, 1e-2]))


@pytest.mark.parametrize("sigma, k, delta", GAUSSIAN_CORNERS)
def test_gaussian_composition_corners_against_exact(sigma, k, delta):
    method, eps = certified_epsilon(ps.Gaussian(sigma).compose(k), delta)
    exact = max(float(ps.gaussian_epsilon(delta, math.sqrt(k) / sigma)), 0.0)
    assert_certified(eps)
    assert eps >= exact * (1 - 1e-12)
    assert eps <= exact * 1.01 + 0.01  # and tight


@pytest.mark.slow  # seconds per case, measured: the slow tier runs it
@pytest.mark.parametrize("sigma, delta", [(1e3, 1e-15), (1e3, 1e-2), (0.3, 1e-2), (0.3, 1e-8)])
def test_one_subsampled_step_at_q_1e_minus_6(sigma, delta):
    case = Case(sigma, 1e-6, 1, delta)
    _, eps = certified_epsilon(case.mechanism(), delta)
    assert_certified(eps)
    exact = max(max(small_k_epsilon(case, d, eps) for d in ("remove", "add")), 0.0)
    assert exact <= eps + 1e-12


@pytest.mark.slow  # seconds per case, measured: the slow tier runs it
@pytest.mark.parametrize("sigma", [0.3, 1e3])
def test_million_subsampled_steps_at_delta_1e_minus_15(sigma):
    """q = 1e-6, k = 1e6: CF below the PRV floor; at least the one-step value, at most RDP."""
    case = Case(sigma, 1e-6, 10**6, 1e-15)
    method, eps = certified_epsilon(case.mechanism(), case.delta)
    assert method in {"cf", "cf(fine)"}
    assert_certified(eps)
    one_step = Case(sigma, 1e-6, 1, 1e-15)
    lower = max(small_k_epsilon(one_step, "remove", 1.0), small_k_epsilon(one_step, "add", 0.0), 0.0)
    rdp = ps.privacy_profile(case.mechanism(), accountant="rdp").epsilon(case.delta)
    assert lower <= eps <= rdp * 1.0001


def test_epsilon_up_to_50():
    """Profiles queried at eps = 50 and mechanisms whose certified eps is ~50."""
    prof = ps.privacy_profile(ps.Gaussian(0.3).compose(3))
    d = prof.delta(50.0)
    assert 0 <= d <= 1 and d >= ps.gaussian_delta(50.0, math.sqrt(3) / 0.3)
    for k in (2, 3):  # exact eps(1e-15) = 47.96 and 61.89
        _, eps = certified_epsilon(ps.Gaussian(0.3).compose(k), 1e-15)
        exact = float(ps.gaussian_epsilon(1e-15, math.sqrt(k) / 0.3))
        assert exact <= eps <= exact * 1.01
    _, pure = certified_epsilon(ps.PureDP(50.0), 1e-15)
    assert pure == pytest.approx(50.0, abs=0.1) and pure >= 50.0 - 1e-12
    cert = ps.certify(ps.PureDP(50.0), ps.Geometric(mean=10), 1e-15)
    assert_certified(cert.epsilon)
    assert 50 <= cert.epsilon <= 3 * 50 + 1  # Papernot-Steinke: 3 eps for geometric K


@pytest.mark.parametrize("k_dist", [ps.Geometric(mean=10), ps.Poisson(10.0), ps.Binomial(20, 0.5)],
                         ids=["geometric", "poisson", "binomial"])
def test_certify_at_delta_1e_minus_15(k_dist):
    """The selection certificate at the smallest delta: the default ("auto") uses the exact accountant."""
    base = ps.Gaussian(1e3).compose(10**6)
    cert = ps.certify(base, k_dist, 1e-15)
    assert_certified(cert.epsilon)
    assert cert.epsilon >= float(ps.gaussian_epsilon(1e-15, 1.0))  # the base run alone
    assert cert.accountant == "exact" or cert.bound == "rdp"


def test_certification_error_names_the_regime():
    prof = ps.privacy_profile(ps.Gaussian(50.0).compose(10**8), accountant="exact")  # prv declines: 2e7 cells
    with pytest.raises(ValueError, match="delta must lie in"):
        prof.epsilon(0.0)


# -- regressions: bugs found in extreme regimes -----------------------------------------------------


def test_bug_exact_profile_epsilon_above_1e4():
    mu = math.sqrt(19907)
    eps = ps.privacy_profile(ps.Gaussian(1.0).compose(19907), accountant="exact").epsilon(math.exp(-1.0))
    assert eps == pytest.approx(float(ps.gaussian_epsilon(math.exp(-1.0), mu)), rel=1e-9)


def test_bug_cf_nan_for_huge_mu():
    d = ps.privacy_profile(ps.Gaussian(0.3).compose(10**6), accountant="cf").delta(np.array([0.0, 60.0]))
    assert not np.isnan(d).any()


def test_bug_certify_huge_mu_tiny_delta():
    try:
        cert = ps.certify(ps.Gaussian(0.3).compose(10**6), ps.Geometric(mean=10), 1e-15)
    except ValueError as exc:
        assert "delta" in str(exc) and "NaN" not in str(exc) and "eps_1" not in str(exc)
        return
    assert cert.epsilon >= float(ps.gaussian_epsilon(1e-15, math.sqrt(10**6) / 0.3))


def test_dpsgd_tiny_deltas_are_answered_by_default():
    """DP-SGD (q=256/60000, sigma=1.1, 14063 steps) at delta 1e-10 and 1e-15: answered by the default
    accountant (no CertificationError), above the lower references, below dp-accounting's PLD."""
    from dp_accounting.pld import privacy_loss_distribution

    mechanism = ps.dpsgd(noise_multiplier=1.1, sample_rate=256 / 60000, steps=14063)
    prof = ps.privacy_profile(mechanism)
    lower, upper = prof.epsilon_bounds(np.array([1e-10, 1e-15]))
    assert np.all(np.isfinite(upper)) and np.all(lower <= upper) and upper[1] > upper[0]
    # prv-accountant (Gopi et al.) brackets eps(1e-10) in [3.72498, 3.74698] with estimate 3.735978
    # (eps_error=0.01, delta_error=1e-12; 8.7 s, so quoted rather than recomputed here)
    assert 3.72498 <= upper[0] <= 3.735978 * (1 + 1e-3)
    # dp-accounting's pessimistic PLD (1e-3 discretisation) at 1e-10: an upper reference, within 0.5%
    pld = privacy_loss_distribution.from_gaussian_mechanism(1.1, sampling_prob=256 / 60000, value_discretization_interval=1e-3)
    reference = pld.self_compose(14063).get_epsilon_for_delta(1e-10)
    assert upper[0] <= reference and upper[0] >= reference * (1 - 5e-3)
    # 1e-15: beyond dp-accounting's truncation (it returns inf); the RDP conversion is an upper reference,
    # and eps(1e-15) >= eps(1e-10) >= the lower references above
    rdp = ps.privacy_profile(mechanism, accountant="rdp").epsilon(1e-15)
    assert upper[0] < lower[1] <= upper[1] <= rdp
    assert set(prof.epsilon_source(np.array([1e-10, 1e-15]))) <= {"pld", "prv", "cf", "cf(fine)"}


def test_no_raw_overflow_at_vanishing_noise_and_extreme_epsilon():
    for name in ("auto", "rdp"):
        assert ps.privacy_profile(ps.Gaussian(1e-200), accountant=name).epsilon(1e-5) == np.inf
    for name in ("prv", "cf", "exact"):
        with pytest.raises(ps.UnsupportedMechanismError, match="overflow|exceeds the double range"):
            ps.privacy_profile(ps.Gaussian(1e-200), accountant=name)
    assert ps.privacy_profile(ps.Gaussian(1e-200).poisson_subsample(0.1)).epsilon(1e-5) == np.inf
    # delta at eps = 1e307, 1e308, inf: non-increasing, tiny, and exactly 0 at inf
    for m in (ps.Gaussian(1.0), ps.Gaussian(1.0).poisson_subsample(0.01).compose(10), ps.RandomizedResponse(0.9)):
        d = ps.privacy_profile(m).delta(np.array([50.0, 1e307, 1e308, np.inf]))
        assert np.all(np.diff(d) <= 0) and d[1] <= 1e-300 and d[3] == 0.0
