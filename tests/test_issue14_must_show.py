"""Issue 14, "Must show" items of the structural half (the default accountant, certify, the WOR trap,
JSON and interop are in test_mechanisms.py, test_certify.py and test_interop.py)."""

import numpy as np
import pytest
from scipy import optimize, stats

import privselect as ps

Q = 256 / 60000


def test_certify_default_matches_krw_thm_5_2_on_the_exact_profile():
    """Gaussian sigma=4, Geometric(mean=300), delta=1e-6: the default certify is within 0.05% of KRW
    Thm 5.2 evaluated here on the closed-form Gaussian profile with scipy (2.794 per the issue; the
    former default gave 2.846)."""
    k = ps.Geometric(300)
    mu, gamma, m = 0.25, k.gamma, k.mean

    def delta(e):  # Balle-Wang 2018 Thm 8
        return stats.norm.cdf(-e / mu + mu / 2) - np.exp(e) * stats.norm.cdf(-e / mu - mu / 2)

    def shift(e1):  # KRW Thm 5.2 with eta = 1
        return 2 * np.log(np.exp(e1) + (1 - gamma) / gamma * delta(e1))

    grid = np.linspace(0.0, 5.0, 50001)
    i = int(np.argmin(shift(grid)))
    best = optimize.minimize_scalar(shift, bracket=(grid[max(i - 1, 0)], grid[i], grid[i + 1]))
    eps_base = optimize.brentq(lambda e: delta(e) - 1e-6 / m, 0.0, 50.0, xtol=1e-14)
    krw = eps_base + best.fun
    assert krw == pytest.approx(2.794, abs=5e-4)
    cert = ps.certify(ps.Gaussian(4.0), k, 1e-6)
    assert cert.epsilon >= krw * (1 - 1e-12)
    assert cert.epsilon <= krw * (1 + 5e-4)
    assert cert.accountant == "exact" and cert.theorem == "Koskela-Redberg-Wang 2024, Thm 5.2"


def test_dpsgd_tiny_deltas_are_answered_by_default():
    """DP-SGD (q=256/60000, sigma=1.1, 14063 steps) at delta 1e-10 and 1e-15: answered by the default
    accountant (no CertificationError), above the lower references, below dp-accounting's PLD."""
    from dp_accounting.pld import privacy_loss_distribution

    mechanism = ps.dpsgd(noise_multiplier=1.1, sample_rate=Q, steps=14063)
    prof = ps.privacy_profile(mechanism)
    lower, upper = prof.epsilon_bounds(np.array([1e-10, 1e-15]))
    assert np.all(np.isfinite(upper)) and np.all(lower <= upper) and upper[1] > upper[0]
    # prv-accountant (Gopi et al.) brackets eps(1e-10) in [3.72498, 3.74698] with estimate 3.735978
    # (eps_error=0.01, delta_error=1e-12; 8.7 s, so quoted rather than recomputed here)
    assert 3.72498 <= upper[0] <= 3.735978 * (1 + 1e-3)
    # dp-accounting's pessimistic PLD (1e-3 discretisation) at 1e-10: an upper reference, within 0.5%
    pld = privacy_loss_distribution.from_gaussian_mechanism(1.1, sampling_prob=Q, value_discretization_interval=1e-3)
    reference = pld.self_compose(14063).get_epsilon_for_delta(1e-10)
    assert upper[0] <= reference and upper[0] >= reference * (1 - 5e-3)
    # 1e-15: beyond dp-accounting's truncation (it returns inf); the RDP conversion is an upper reference,
    # and eps(1e-15) >= eps(1e-10) >= the lower references above
    rdp = ps.privacy_profile(mechanism, accountant="rdp").epsilon(1e-15)
    assert upper[0] < lower[1] <= upper[1] <= rdp
    assert set(prof.epsilon_source(np.array([1e-10, 1e-15]))) <= {"prv", "cf", "cf(fine)"}


def test_default_is_auto_everywhere():
    import inspect

    from privselect.selection import calibrate, mixture, rnm

    for fn in (ps.privacy_profile, ps.certify, calibrate.largest_mean, mixture.k_mixture_profile, rnm.rnm_profile):
        assert inspect.signature(fn).parameters["accountant"].default == "auto", fn


# -- bad input (issue 14, Build 10) ------------------------------------------------------------------


def test_text_is_rejected_the_same_way_everywhere():
    prof = ps.privacy_profile(ps.Gaussian(1.0))
    calls = [lambda: prof.epsilon("1e-5"), lambda: prof.epsilon(["1e-5"]), lambda: prof.delta("1.0"),
             lambda: ps.certify(ps.Gaussian(1.0), ps.Geometric(10), "1e-5"), lambda: ps.Gaussian("1.0"),
             lambda: ps.Geometric("10"), lambda: ps.dpsgd(noise_multiplier="1.1", sample_rate=0.01, steps=3)]
    for call in calls:
        with pytest.raises(TypeError, match="must be (a )?real number"):
            call()


def test_no_raw_overflow_and_extreme_epsilon():
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
