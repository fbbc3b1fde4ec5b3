"""KRW selection bounds against closed forms, the paper's corollaries and exact computations."""

import math

import numpy as np
import pytest

import privselect as ps
from privselect.accounting.profile import discrete_profile
from privselect.selection.bounds import selection_epsilons, selection_profile, selection_shift, selection_shifts
from privselect.selection.distributions import Binomial, Geometric, Logarithmic, Poisson, TruncatedNegativeBinomial


def pure_dp_profile(eps0):
    """Exact profile of eps0-DP randomized response (the worst case of pure DP)."""
    p = math.exp(eps0) / (1 + math.exp(eps0))
    return discrete_profile([p, 1 - p], [1 - p, p])


def approx_dp_profile(eps0, delta0):
    """Exact profile of the (eps0, delta0) worst case (Gopi et al. 2021 App. B.1; accounting-cf.md §3.4)."""
    p = math.exp(eps0) / (1 + math.exp(eps0))
    return discrete_profile([delta0, (1 - delta0) * p, (1 - delta0) * (1 - p), 0.0],
                            [0.0, (1 - delta0) * (1 - p), (1 - delta0) * p, delta0])


@pytest.mark.parametrize("eta", [-0.5, 0.0, 1.0, 3.0])
@pytest.mark.parametrize("eps0", [0.1, 1.0])
def test_pure_dp_base_gives_eta_plus_two_eps(eta, eps0):
    """KRW Cor. 5.3: an eps-DP base gives an (eta+2) eps-DP selection (eta = 1: Liu-Talwar's 3 eps)."""
    k = TruncatedNegativeBinomial(eta, mean=20)
    cert = selection_profile(pure_dp_profile(eps0), k)
    assert cert.epsilon(1e-14) == pytest.approx((eta + 2) * eps0, abs=1e-9)
    assert cert.epsilon(1e-14) <= (eta + 2) * eps0 + 1e-12


@pytest.mark.parametrize("eta", [0.0, 1.0, 2.0])
def test_approx_dp_base_corollary_5_4(eta):
    """KRW Cor. 5.4 as derived in its proof (App. C.2): ((eta+2) eps + (eta+1) delta/gamma, m delta).

    The printed statement has delta/gamma without the factor (eta+1); the proof's last line
    carries it. Our bound (the proof's first line, optimised) must sit below the derived form.
    """
    eps0, delta0 = 0.5, 1e-7
    k = TruncatedNegativeBinomial(eta, mean=50)
    cert = selection_profile(approx_dp_profile(eps0, delta0), k)
    derived = (eta + 2) * eps0 + (eta + 1) * delta0 / k.gamma
    assert cert.epsilon(k.mean * delta0 * (1 + 1e-9)) <= derived + 1e-12


@pytest.mark.parametrize("m", [30, 300, 3000])
def test_gaussian_base_is_below_corollary_5_5(m):
    """KRW Cor. 5.5 (Chernoff bound on Thm 5.2) is an upper bound on our optimised Thm 5.2."""
    sigma, delta = 4.0, 1e-6
    k = Geometric(mean=m)
    cert = selection_profile(ps.gdp_profile(1 / sigma), k).epsilon(delta)
    cor = 3 * (1 / (2 * sigma**2) + (1 / sigma) * math.sqrt(2 * math.log(1 / (k.gamma * delta)))) + delta
    assert cert < cor


def test_binomial_approaches_poisson_and_decreases_in_n():
    """KRW Sec. 5.2: Bin(n, m/n) -> Poisson(m); Thm 5.7's eps decreases in n towards Cor. 5.8."""
    base = ps.gdp_profile(1 / 4)
    eps = [selection_profile(base, Binomial.from_mean(10, n)).epsilon(1e-6) for n in (20, 50, 100, 300, 1000)]
    poisson = selection_profile(base, Poisson(10)).epsilon(1e-6)
    assert all(a > b for a, b in zip(eps, eps[1:]))
    assert eps[-1] > poisson
    assert eps[-1] - poisson < 0.02 * poisson


def test_shift_is_optimised_over_eps1():
    """Every eps_1 gives a valid shift; the optimiser must not be worse than a dense scan."""
    base = ps.gdp_profile(1 / 4)
    k = Geometric(mean=300)
    sel = selection_shift(base, k)
    e1 = np.linspace(0, 5, 20001)
    scan = 2 * np.log(np.exp(e1) + (1 - k.gamma) / k.gamma * base.delta(e1))
    assert sel.shift <= scan.min() + 1e-9
    assert sel.shift == pytest.approx(scan.min(), abs=1e-6)


def test_shifts_of_many_laws_match_a_dense_scan_of_each_theorem():
    """The vectorised search (shared grid, one delta call per refinement round) against a dense scan of
    Thm 5.2 (geometric), Thm 5.7 (binomial) and Cor. 5.8 (Poisson) on the exact mu-GDP profile."""
    base = ps.gdp_profile(1 / 4)
    laws = [Geometric(mean=300), Binomial(50, 0.2), Poisson(8), Logarithmic(mean=20)]
    e1 = np.linspace(0, 5, 200001)
    d = base.delta(e1)
    scans = [
        2 * np.log(np.exp(e1) + (1 - laws[0].gamma) / laws[0].gamma * d),
        np.where(e1 >= np.log1p(0.2 / 0.8 * d), 49 * np.log1p(0.2 * np.expm1(e1) + 0.2 * d), np.inf),
        8 * (np.expm1(e1) + d),
        np.log(np.exp(e1) + (1 - laws[3].gamma) / laws[3].gamma * d),  # eta = 0
    ]
    # the binomial optimum sits on Thm 5.7's feasibility boundary (a kink): there the scan itself is only
    # good to its step times the slope, 49 * 0.2 * 2.5e-5 ~ 2.5e-4
    tolerances = [1e-9, 5e-4, 1e-9, 1e-9]
    for sel, scan, law, tol in zip(selection_shifts(base, laws), scans, laws, tolerances):
        assert sel.mean == pytest.approx(law.mean)
        assert sel.shift <= scan.min() + 1e-9  # never worse than the scan (any eps_1 is valid)
        assert sel.shift == pytest.approx(scan.min(), rel=1e-7, abs=tol)


@pytest.mark.slow  # seconds per case, measured: the slow tier runs it
def test_selection_epsilons_of_100_means_equal_the_certificates():
    """One built profile, 100 K means at once: exactly the eps of each law's certificate (bound="profile")."""
    profile = ps.privacy_profile(ps.Gaussian(1.1).poisson_subsample(256 / 60000).compose(2000))
    laws = [Geometric(mean=m) for m in np.geomspace(2, 300, 100)]
    eps = selection_epsilons(profile, laws, 1e-5)
    for i in (0, 37, 99):
        assert eps[i] == pytest.approx(ps.certify(profile, laws[i], 1e-5, bound="profile").epsilon, rel=1e-12)
    assert np.all(np.diff(eps) > 0)  # more runs cost more


def test_selection_epsilons_answer_delta_above_the_mean_with_zero():
    """delta >= m * delta_base(eps) for every eps > 0 when delta / m >= 1 (ScaledShiftedCurve's rule)."""
    eps = selection_epsilons(ps.gdp_profile(0.5), [Poisson(0.5), Poisson(5)], 0.9)
    assert eps[0] == 0.0 and eps[1] > 0
    assert eps[1] == pytest.approx(selection_profile(ps.gdp_profile(0.5), Poisson(5)).epsilon(0.9), rel=1e-12)


# -- exact check (KRW App. B, eq. (B.1)) ---------------------------------------------

SCORES_X = np.array([0.10, 0.20, 0.30, 0.25, 0.15])
TILT = np.array([0.35, -0.1, 0.2, -0.3, 0.1])
SCORES_X2 = SCORES_X * np.exp(TILT) / (SCORES_X * np.exp(TILT)).sum()


def selection_output_pmf(q, k_dist):
    """A(y) = phi(Q(<=y)) - phi(Q(<y)) on the ordered scores, plus A(bottom) = phi(0) for K = 0."""
    cdf = np.concatenate([[0.0], np.cumsum(q)])
    cdf[-1] = 1.0
    phi = k_dist.pgf(np.clip(cdf, 0, 1))
    return np.concatenate([[phi[0]], np.diff(phi)])


def hockey_stick(a, b, eps):
    return np.maximum(a[None, :] - np.exp(eps)[:, None] * b[None, :], 0).sum(axis=1)


@pytest.mark.parametrize(
    "k_dist",
    [Geometric(mean=5), Geometric(mean=50), Logarithmic(mean=20), TruncatedNegativeBinomial(-0.5, mean=10),
     TruncatedNegativeBinomial(2.0, mean=10), Binomial(30, 0.2), Binomial(200, 0.05), Poisson(8)],
    ids=repr,
)
def test_certificate_dominates_exact_selection_divergence(k_dist):
    a, a2 = selection_output_pmf(SCORES_X, k_dist), selection_output_pmf(SCORES_X2, k_dist)
    assert a.sum() == pytest.approx(1.0) and a2.sum() == pytest.approx(1.0)
    eps = np.linspace(0.0, 6.0, 121)[1:]
    exact = np.maximum(hockey_stick(a, a2, eps), hockey_stick(a2, a, eps))
    cert = selection_profile(discrete_profile(SCORES_X, SCORES_X2), k_dist).delta(eps)
    assert np.all(exact <= cert + 1e-15)
    assert exact.max() > 0.01  # the pair is far from trivial


def test_selection_profile_of_a_mechanism_uses_the_accountant():
    cert = selection_profile(ps.Gaussian(4.0), Geometric(mean=30), accountant="exact")
    ref = selection_profile(ps.gdp_profile(0.25), Geometric(mean=30))
    assert cert.epsilon(1e-6) == pytest.approx(ref.epsilon(1e-6), rel=1e-12)


def test_bad_k_distribution_type():
    with pytest.raises(TypeError, match="distribution"):
        selection_profile(ps.gdp_profile(1.0), 10)


# -- the one table of bounds by K law (issue 14 Build 7, issue 17 item 5) ----------------------------


def test_the_bounds_table_names_each_theorem_once_per_law():
    from privselect.selection.bounds import registered_bounds

    assert registered_bounds() == {
        ("TruncatedNegativeBinomial", "profile"): "Koskela-Redberg-Wang 2024, Thm 5.2",
        ("Binomial", "profile"): "Koskela-Redberg-Wang 2024, Thm 5.7",
        ("Poisson", "profile"): "Koskela-Redberg-Wang 2024, Cor. 5.8",
        ("TruncatedNegativeBinomial", "rdp"): "Papernot-Steinke 2022 (KRW Thm 5.1)",
        ("Poisson", "rdp"): "Papernot-Steinke 2022 (KRW Thm 5.6)",
        ("TruncatedNegativeBinomial", "cor62"): "Koskela-Redberg-Wang 2024, Cor. 6.2",
        ("KDistribution", "mixture"): "mixture of k-fold compositions (K released; joint convexity)",
    }


def test_laws_inherit_their_bounds_and_certify_reads_the_theorem_from_the_table():
    from privselect.selection.bounds import law_bound, unsupported_reason

    for k in (ps.Geometric(10), ps.Logarithmic(10), ps.TruncatedNegativeBinomial(0.5, mean=10)):
        assert law_bound(k, "profile").theorem.endswith("Thm 5.2") and law_bound(k, "profile").every_eps
        assert unsupported_reason(k, "cor62") is None
    assert law_bound(ps.Poisson(3.0), "profile").every_eps is False  # Cor. 5.8 is stated for eps > 0
    assert "no rdp bound for K ~ Binomial" in unsupported_reason(ps.Binomial(10, 0.5), "rdp")
    assert "mean >= 1" in unsupported_reason(ps.Poisson(0.5), "rdp")
    assert "no cor62 bound for K ~ Poisson" in unsupported_reason(ps.Poisson(3.0), "cor62")
    assert "distribution of K" in unsupported_reason(10, "profile")
    cert = ps.certify(ps.Gaussian(2.0), ps.Poisson(4.0), 1e-6, bound="rdp", accountant="exact")
    assert cert.theorem == "Papernot-Steinke 2022 (KRW Thm 5.6)"
    cert = ps.certify(ps.Gaussian(2.0), ps.Binomial(10, 0.4), 1e-6, accountant="exact")
    assert cert.theorem.endswith("Thm 5.7") and any("no rdp bound for K ~ Binomial" in n for n in cert.notes)
    with pytest.raises(ValueError, match="no rdp bound"):
        ps.certify(ps.Gaussian(2.0), ps.Binomial(10, 0.4), 1e-6, bound="rdp")
    from privselect.selection.calibrate import cor62_thresholds

    with pytest.raises(TypeError, match="Cor. 6.2"):
        cor62_thresholds(1.0, 1e-6, ps.Poisson(3.0))


def test_a_bound_is_registered_once_and_reached_through_its_family_module():
    from privselect.selection import bounds, calibrate

    with pytest.raises(ValueError, match="already registered"):
        bounds.register_bound(ps.Poisson, "profile", "again")(lambda *a: None)
    with pytest.raises(TypeError, match="KDistribution class"):
        bounds.register_bound(int, "profile", "no law")
    assert calibrate.cor62_thresholds is bounds.cor62.cor62_thresholds
    assert bounds.selection_profile is bounds.profile.selection_profile


@pytest.mark.slow  # seconds per case, measured: the slow tier runs it
def test_binomial_k_of_tiny_rate_costs_rate_times_total_variation():
    """Binomial(2, 1e-6) over a WOR-subsampled Gaussian (ZDW 2022 Thm 11(2)): delta / m = 0.85 exceeds
    delta_base(0), so eps = s* of Thm 5.7, which with the exact profile is ~ p TV (eps_1 at the
    feasibility boundary). TV = rate (2 Phi(1/sigma) - 1) for the replace-one pair (shift 2/sigma)."""
    from scipy.stats import norm

    sigma, rate, p = 0.4616, 0.2553, 1e-6
    # the grid search queries eps_1 only up to ~0.22, where the floor p (e^eps_1 - 1) passes s* (it used to
    # query up to 2.9, in CF's costly tier); most of the remaining ~10 s is the base profile's error budget
    cert = ps.certify(ps.Gaussian(sigma).sample_without_replacement(rate), Binomial(n=2, p=p), 1.7e-6)
    exact_shift = p * rate * (2 * norm.cdf(1 / sigma) - 1)
    assert cert.bound == "profile"
    assert exact_shift <= cert.epsilon <= 1.02 * exact_shift  # the base profile's upper delta(0) is within 2% of TV


def test_the_kept_delta_grid_does_not_keep_its_profile_alive():
    """selection_shift keeps the base profile's delta grid for later laws, but not the profile itself."""
    import gc
    import weakref

    from privselect.selection.bounds import profile as profile_bounds

    base = ps.gdp_profile(0.5)
    first = selection_shift(base, Geometric(mean=10))
    assert selection_shift(base, Geometric(mean=10)) == first  # answered from the kept grid alike
    ref, key = weakref.ref(base), id(base)
    assert key in profile_bounds._TABLES
    del base
    gc.collect()
    assert ref() is None and key not in profile_bounds._TABLES
