"""K-mixture bound (K released / adaptive runs) against an exact sum for Gaussian bases."""

import numpy as np
import pytest

import privselect as ps
from privselect.selection.bounds import k_mixture_profile
from tests.support.timing import bounded


@pytest.mark.parametrize("k_dist", [ps.Geometric(mean=5), ps.Poisson(4.0), ps.Binomial(20, 0.3)], ids=repr)
def test_mixture_bound_dominates_the_exact_mixture_and_is_close(k_dist):
    mu = 0.3
    ks = np.arange(0, 400)
    pk = k_dist.pmf(ks)
    eps = np.linspace(0.0, 4.0, 41)
    exact = sum(p * (ps.gaussian_delta(eps, mu * np.sqrt(k)) if k > 0 else np.maximum(-np.expm1(-0 * eps), 0))
                for p, k in zip(pk, ks))
    bound = k_mixture_profile(ps.Gaussian(1 / mu), k_dist, accountant="exact").delta(eps)
    assert np.all(bound >= exact - 1e-15)
    assert np.all(bound <= 1.3 * exact + 1e-10)  # buckets beyond k = 32 cost a little


def test_mixture_is_never_below_the_selection_certificate():
    base = ps.Gaussian(4.0)
    for k in (ps.Geometric(mean=10), ps.Logarithmic(mean=10)):
        sel = ps.certify(base, k, 1e-6, accountant="exact").epsilon
        mix = k_mixture_profile(base, k, accountant="exact").epsilon(1e-6)
        assert mix >= sel


def test_mixture_needs_a_mechanism():
    with pytest.raises(TypeError, match="Mechanism"):
        k_mixture_profile(ps.gdp_profile(1.0), ps.Geometric(mean=3))


# -- one discretisation, every k from it (issue 14, Build 8) -----------------------------------------


def _exact_gaussian_mixture(mu, k_dist, eps, k_max):
    """sum_k P[K = k] delta_{sqrt(k) mu}(eps), unbucketed (the quantity the bound must dominate)."""
    ks = np.arange(0, k_max + 1)
    pk = k_dist.pmf(ks)
    zero = pk[0] * np.maximum(-np.expm1(np.minimum(eps, 0.0)), 0.0)
    return zero + sum(p * ps.gaussian_delta(eps, mu * np.sqrt(k)) for p, k in zip(pk[1:], ks[1:]))


def test_53_buckets_come_from_one_closed_form_for_gaussian_bases():
    from privselect.selection.bounds.mixture import _buckets

    k_dist = ps.Geometric(mean=10)
    assert len(_buckets(k_dist, 1e-12, 1.1)[0]) == 53
    prof = k_mixture_profile(ps.Gaussian(4.0), k_dist)
    assert dict(prof.metadata)["buckets"] == 53 and "exact" in dict(prof.metadata)["bucket_profiles"]
    eps = np.array([7.0, 9.0, 12.0])
    assert np.all(prof.delta(eps) >= _exact_gaussian_mixture(0.25, k_dist, eps, 400))
    # eps(delta) from the tabulated inversion: the upper curve is <= delta there, and only just
    for delta in (1e-5, 1e-6, 1e-8):
        e = prof.epsilon(delta)
        assert prof.delta(e) <= delta < prof.delta(e * (1 - 1e-5))


@pytest.mark.parametrize("k_dist", [ps.Geometric(mean=6), ps.Poisson(5.0)], ids=repr)
def test_one_prv_discretisation_dominates_the_exact_mixture_and_is_tight(k_dist):
    """PRV's one-discretisation path on a Gaussian base, against the closed form: never below the
    unbucketed exact mixture; within 1% in eps of the per-bucket exact computation (same buckets)."""
    base = ps.Gaussian(2.0)
    prv = k_mixture_profile(base, k_dist, accountant="prv")
    assert "one discretisation" in dict(prv.metadata)["bucket_profiles"]
    per_bucket = k_mixture_profile(base, k_dist, accountant="exact")
    eps = np.linspace(0.5, 12.0, 47)
    assert np.all(prv.delta(eps) >= _exact_gaussian_mixture(0.5, k_dist, eps, 600))
    for delta in (1e-5, 1e-8):
        ours, reference = prv.epsilon(delta), per_bucket.epsilon(delta)
        assert reference * (1 - 1e-9) <= ours <= 1.01 * reference


@pytest.mark.parametrize("base", [ps.Gaussian(1.0).poisson_subsample(0.2).compose(5), ps.Laplace(3.0)], ids=repr)
def test_one_prv_discretisation_against_one_accountant_per_bucket(base):
    """Non-Gaussian bases (subsampled: asymmetric; Laplace: atoms off the lattice). K <= 12 keeps every
    k its own bucket, so the per-bucket PRV lower bounds are certified lower references of the true
    mixture sum_k P[K = k] delta_k; ours must be above them and within 1% in eps of the per-bucket upper."""
    k_dist = ps.Binomial(12, 0.5)
    ours = k_mixture_profile(base, k_dist)
    assert "one discretisation" in dict(ours.metadata)["bucket_profiles"]
    # an accountant option selects one PRV build per bucket (the former computation)
    per_bucket = k_mixture_profile(base, k_dist, accountant="prv", rel_eps_error=1.5e-3)
    assert dict(per_bucket.metadata)["bucket_profiles"] == "prv per bucket"
    eps = np.linspace(0.0, 6.0, 31)
    assert np.all(ours.delta(eps) >= per_bucket.delta_bounds(eps)[0])
    for delta in (1e-4, 1e-6):
        lower, upper = per_bucket.epsilon_bounds(delta)
        assert lower <= ours.epsilon(delta) <= 1.01 * upper


def test_small_delta_certificate_from_the_shared_discretisation_in_long_double():
    """certify sizes the discretisation for the asked delta (long double below the double floor)
    and K's tail for it; checked against one PRV profile per bucket built for the same delta."""
    base, k_dist, delta = ps.Gaussian(1.0).poisson_subsample(0.2).compose(5), ps.Binomial(12, 0.5), 1e-11
    cert = ps.certify(base, k_dist, delta, bound="mixture")
    assert cert.bound == "mixture" and "one discretisation" in cert.notes[-1]
    ks = np.arange(1, 13)
    profiles = [ps.privacy_profile(base.compose(int(k)), accountant="prv", target_delta=delta) for k in ks]
    pk = k_dist.pmf(ks)

    def per_bucket(eps, side):  # sum_k P[K = k] delta_k(eps): certified lower (0) or upper (1) side
        return sum(p * prof.delta_bounds(eps)[side] for p, prof in zip(pk, profiles))

    assert per_bucket(cert.epsilon, 0) <= delta  # sound: the truth at our eps is at most delta
    assert per_bucket(0.995 * cert.epsilon, 1) > delta  # tight: per-bucket eps is above 0.995 x ours
    with pytest.raises(ps.CertificationError, match="cannot reach delta=1e-15"):
        ps.certify(ps.Gaussian(2.0), ps.Geometric(mean=10), 1e-15, bound="mixture")


def test_k_almost_surely_zero_releases_nothing_private():
    """K ~ Poisson(1e-300): P[K >= 1] ~ 1e-300, so delta(0) <= 1e-300 + the rounding of K's cdf: every
    delta above that certifies eps = 0 (was an IndexError: no bucket at all)."""
    with bounded():
        cert = ps.certify(ps.PureDP(1000.0), ps.Poisson(mean=1e-300), 0.057, bound="mixture")
        profile = k_mixture_profile(ps.PureDP(1000.0), ps.Poisson(mean=1e-300))
    assert cert.epsilon == 0.0
    assert dict(profile.metadata)["k_max"] == 1
    assert profile.delta(0.0) <= 1e-14  # 1e-300 x delta_1(0) + K's tail and rounding (~1e-15)
    assert profile.delta(999.0) == pytest.approx(profile.delta(0.0), abs=1e-300)  # delta_1 is 1 - e^{eps-1000}


def test_delta_below_k_tail_is_declined_before_any_work():
    """K ~ Logarithmic(153.6): its tail beyond k_max and the rounding of its cdf (1.5e-11) sit in every
    delta, so 1e-300 cannot be reached; the library's error says so at once (was a 66 s build)."""
    with bounded():
        with pytest.raises(ps.CertificationError, match="cannot reach delta=1e-300"):
            ps.certify(ps.Laplace(324.18), ps.Logarithmic(mean=153.6), 1e-300, bound="mixture")
