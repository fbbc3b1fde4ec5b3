"""ProfileMechanism: connect-the-dots dominating pairs from privacy profiles (issue 15).

References: closed-form GDP composition (mu adds in quadrature), dp-accounting's PLD in both
modes, exact hockey-stick sums of small discrete pairs, exact Renyi divergences of randomized
response, and the lower convex envelope of the input curve by brute force.
"""

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import privselect as ps
from privselect.accounting import rdp
from privselect.accounting.dominating import DiscreteLoss, ProfileMechanism
from privselect.accounting.profile import DirectionalCurve, ErrorBudget, PrivacyProfile, discrete_profile
from privselect.accounting.prv import PRVAccountant
from privselect.selection.bounds import selection_profile
from privselect.selection.distributions import Binomial, Geometric, Poisson


def _rr_profile(eps0):
    p = math.exp(eps0) / (1 + math.exp(eps0))
    return discrete_profile([p, 1 - p], [1 - p, p])


def _pair_curve(mechanism: ProfileMechanism, eps):
    """max over both directions of the constructed pair's exact hockey-stick curve."""
    losses = mechanism.losses
    return np.maximum(losses.remove.delta(eps), losses.add.delta(eps))


# ---------------------------------------------------------------------------------------------
# Must show 1: exact oracle
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("sigma", [4.0, 20.0])
@pytest.mark.parametrize("delta", [1e-5, 1e-10])
def test_gdp_profile_composed_100_times_matches_the_exact_gaussian(sigma, delta):
    """100 x ProfileMechanism(mu-GDP) is (10 mu)-GDP: within 0.5% of the closed form, never below."""
    composed = ProfileMechanism(ps.gdp_profile(1 / sigma)).compose(100)
    got = ps.privacy_profile(composed).epsilon(delta)  # the default accountant
    exact = ps.gaussian_epsilon(delta, 10 / sigma)  # Gaussian with noise sigma / 10
    assert exact <= got <= 1.005 * exact


# ---------------------------------------------------------------------------------------------
# Must show 2: subsampling
# ---------------------------------------------------------------------------------------------


def _pld_epsilon(sigma, q, steps, delta, pessimistic):
    dp_accounting = pytest.importorskip("dp_accounting")
    from dp_accounting.pld import pld_privacy_accountant

    accountant = pld_privacy_accountant.PLDAccountant(value_discretization_interval=1e-4)
    event = dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(sigma))
    if not pessimistic:
        from dp_accounting.pld import privacy_loss_distribution as pld

        dist = pld.from_gaussian_mechanism(sigma, sampling_prob=q, value_discretization_interval=1e-4,
                                           pessimistic_estimate=False).self_compose(steps)
        return dist.get_epsilon_for_delta(delta)
    accountant.compose(dp_accounting.SelfComposedDpEvent(event, steps))
    return accountant.get_epsilon(delta)


@pytest.mark.parametrize("sigma, q, steps", [(1.1, 0.01, 1000), (2.0, 0.05, 300)])
def test_subsampled_profile_mechanism_matches_the_subsampled_gaussian(sigma, q, steps):
    delta = 1e-5
    ours = ps.privacy_profile(ProfileMechanism(ps.gdp_profile(1 / sigma)).poisson_subsample(q).compose(steps))
    library = ps.privacy_profile(ps.Gaussian(sigma).poisson_subsample(q).compose(steps))
    eps = ours.epsilon(delta)
    lib_lower, lib_upper = library.epsilon_bounds(delta)
    truth_lower = max(lib_lower, _pld_epsilon(sigma, q, steps, delta, pessimistic=False))
    truth_upper = min(lib_upper, _pld_epsilon(sigma, q, steps, delta, pessimistic=True))
    assert truth_lower <= truth_upper
    assert eps >= truth_lower  # never below the true value
    assert eps <= 1.01 * lib_upper  # within 1% of the library's own subsampled Gaussian
    assert eps <= 1.01 * truth_upper


def test_subsampled_discrete_pair_is_exact():
    """Poisson subsampling of a discrete pair: (qP + (1-q)Q, Q) for remove, the swap for add."""
    p = np.array([0.5, 0.3, 0.15, 0.05, 0.0])
    q_ = np.array([0.1, 0.2, 0.3, 0.25, 0.15])
    rate = 0.3
    finite = q_ > 0
    loss = DiscreteLoss(np.log(p[finite & (p > 0)] / q_[finite & (p > 0)]), p[p > 0], q_[p > 0],
                        inf_mass=0.0, neg_inf_mass=float(q_[p == 0].sum()))
    mix = rate * p + (1 - rate) * q_
    exact = discrete_profile(mix, q_)
    remove, add = exact.curves
    eps = np.linspace(-2, 3, 301)
    np.testing.assert_allclose(loss.poisson_subsampled(rate, "remove").delta(eps), remove.delta_bounds(eps)[1],
                               rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(loss.poisson_subsampled(rate, "add").delta(eps), add.delta_bounds(eps)[1],
                               rtol=1e-12, atol=1e-15)


# ---------------------------------------------------------------------------------------------
# Must show 3: tune then train on DP-SGD
# ---------------------------------------------------------------------------------------------


@pytest.mark.slow  # seconds per case, measured: the slow tier runs it
def test_tune_then_train_beats_basic_composition():
    """Selection (Geometric K, mean 10) of DP-SGD runs, then one final DP-SGD run, at delta = 1e-5.

    The certificate comes from the selection layer (``certify_pipeline``)."""
    delta = 1e-5
    run = ps.Gaussian(1.1).poisson_subsample(256 / 60000).compose(3000)
    k = Geometric(mean=10)
    cert = ps.certify_pipeline(run, k, delta, final=run, accountant="prv")
    total = cert.epsilon
    base = PRVAccountant(target_delta=1e-8).profile(run)
    selection = selection_profile(base, k)
    eps_selection, eps_final = ps.certify(run, k, delta).epsilon, base.epsilon(delta)
    assert total >= max(eps_selection, eps_final)
    # basic composition: eps_1(delta_1) + eps_2(delta - delta_1), best split on a fine grid
    floor = selection.error_budget.min_delta
    splits = np.geomspace(floor * 1.01, delta * (1 - 1e-4), 2000)
    basic = float(np.min(selection.epsilon(splits) + base.epsilon(delta - splits)))
    assert total <= basic
    assert total <= 0.95 * basic
    assert cert.bound == "profile" and cert.alternatives["rdp"] > total


# ---------------------------------------------------------------------------------------------
# Must show 4: the pair's curve lies on or above the input
# ---------------------------------------------------------------------------------------------

_DENSE = np.concatenate([np.linspace(0.0, 2.0, 801), np.linspace(2.0, 40.0, 1521)[1:]])


def _mechanisms():
    gaussian = st.floats(0.5, 20.0).map(ps.Gaussian)
    laplace = st.floats(0.3, 20.0).map(ps.Laplace)
    sampled = st.builds(lambda s, q: ps.Gaussian(s).poisson_subsample(q), st.floats(0.6, 5.0), st.floats(1e-3, 0.5))
    sampled_laplace = st.builds(lambda b, q: ps.Laplace(b).poisson_subsample(q), st.floats(0.5, 5.0),
                                st.floats(1e-2, 0.5))
    base = st.one_of(gaussian, laplace, sampled, sampled_laplace)
    return st.builds(lambda m, k: m.compose(k), base, st.integers(1, 50))


def _envelope(x, y, queries):
    """Lower convex envelope of the points (x_i, y_i) at each query, by brute force: the smallest
    chord value over all pairs of points on either side of the query (Caratheodory in 1-d)."""
    out = np.empty(queries.shape)
    for n, xq in enumerate(queries):
        left, right = x <= xq, x >= xq
        xl, yl, xr, yr = x[left][:, None], y[left][:, None], x[right][None, :], y[right][None, :]
        with np.errstate(invalid="ignore", divide="ignore"):
            chord = np.where(xr > xl, yl + (yr - yl) * (xq - xl) / (xr - xl), np.minimum(yl, yr))
        out[n] = chord.min()
    return out


def _assert_dominates(profile, points, pointwise_tail=True):
    """Each direction's pair curve is on or above the lower convex envelope in e^eps of the input
    (its direction for eps >= 0, the other direction reflected to eps < 0, and (0, 1)) over a dense
    grid joined with the construction's grid, an envelope that still bounds the true curve (module
    proof, steps 2 and 4); and on or above the input itself in the tail (delta <= 1e-4), where the
    input is convex (below its clip at 1 and past the tangent from (0, 1))."""
    pm = ProfileMechanism(profile, points=points)
    curves = {c.direction: c for c in profile.curves}
    if set(curves) == {"remove", "add"}:
        up = {d: (lambda e, c=c: c.delta_bounds(e)[1]) for d, c in curves.items()}
        low = {d: (lambda e, c=c: c.delta_bounds(e)[0]) for d, c in curves.items()}
    else:
        up = {"remove": profile.delta, "add": profile.delta}
        low = {d: (lambda e: profile.delta_bounds(e)[0]) for d in ("remove", "add")}
    eps = np.union1d(pm.grid, np.linspace(0.0, 1.5 * pm.eps_max, 150))
    x = np.concatenate([[0.0], np.exp(-eps[:0:-1]), np.exp(eps)])
    for direction, other in (("remove", "add"), ("add", "remove")):
        loss = getattr(pm.losses, direction)
        left = np.exp(-eps[:0:-1])
        right = up[direction](eps)
        right[0] = min(right[0], up[other](eps[:1])[0])  # both bound H_1 = TV, which is symmetric
        y = np.concatenate([[1.0], 1 - left + left * up[other](eps[:0:-1]), right])
        assert np.all(loss.delta(eps) >= _envelope(x, y, np.exp(eps)) * (1 - 1e-13))
        # Never below the true curve: above the accountant's certified LOWER bound everywhere.
        assert np.all(loss.delta(_DENSE) >= low[direction](_DENSE))
        if pointwise_tail:
            upper = up[direction](_DENSE)
            tail = upper <= 1e-4
            assert np.all(loss.delta(_DENSE)[tail] >= upper[tail])


@pytest.mark.slow  # seconds per case, measured: the slow tier runs it
@settings(max_examples=12)
@given(_mechanisms(), st.sampled_from([64, 150]))
def test_pair_curve_dominates_mechanism_profiles(mechanism, points):
    """PRV's upper curve (a shifted, padded bound) need not be convex near the end of a finite
    support (e.g. composed Laplace), so only its envelope is dominated there; the pair is also
    checked against PRV's certified lower bound on the true curve."""
    _assert_dominates(ps.privacy_profile(mechanism, accountant="prv"), points, pointwise_tail=False)


@pytest.mark.parametrize("mechanism", [ps.Laplace(1.0).poisson_subsample(0.2).compose(20)])
def test_pair_curve_dominates_the_envelope_of_auto_profiles(mechanism):
    """The default profile is the pointwise minimum of several accountants' bounds: not convex, so
    only its envelope (still a bound on the true curve) is dominated."""
    _assert_dominates(ps.privacy_profile(mechanism), 150, pointwise_tail=False)


@pytest.mark.slow  # seconds per case, measured: the slow tier runs it
@settings(max_examples=10)
@given(st.floats(0.05, 3.0), st.sampled_from(["geometric", "poisson", "binomial"]), st.floats(2.0, 300.0),
       st.sampled_from([64, 150]))
def test_pair_curve_dominates_selection_bounds(mu, law, mean, points):
    """Selection bounds min(1, m delta(eps - s)) are not convex where clipped at 1."""
    n = int(math.ceil(mean)) + 5
    k = {"geometric": Geometric(mean=mean), "poisson": Poisson(mean), "binomial": Binomial(n, mean / n)}[law]
    _assert_dominates(selection_profile(ps.gdp_profile(mu), k), points)


def test_pair_curve_is_above_gdp_profile_everywhere():
    profile = ps.gdp_profile(0.7)
    pm = ProfileMechanism(profile)
    eps = np.linspace(0, 20, 4001)
    assert np.all(pm.losses.remove.delta(eps) >= profile.curves[0].delta_bounds(eps)[1])
    # eps < 0: values near 1, compared up to the rounding of the float sum in DiscreteLoss.delta
    eps = np.linspace(-5, 0, 1001)
    assert np.all(pm.losses.remove.delta(eps) >= profile.curves[0].delta_bounds(eps)[1] * (1 - 1e-13))
    assert pm.is_symmetric


# ---------------------------------------------------------------------------------------------
# Directions, exact discrete cases, RDP
# ---------------------------------------------------------------------------------------------


def test_direction_specific_profiles_give_one_pair_per_direction():
    """A subsampled mechanism's remove and add curves: the add pair is the remove pair's swap."""
    profile = ps.privacy_profile(ps.Gaussian(1.0).poisson_subsample(0.1).compose(10), accountant="prv")
    assert {c.direction for c in profile.curves} == {"remove", "add"}
    pm = ProfileMechanism(profile)
    assert not pm.is_symmetric
    eps = np.linspace(0, 5, 501)
    # PRV's padded upper curve is not convex near its tail, so the pairs are checked against what
    # soundness needs: above each direction's certified LOWER bound, and above the envelope.
    lower = {c.direction: c.delta_bounds(eps)[0] for c in profile.curves}
    for direction in ("remove", "add"):
        assert np.all(getattr(pm.losses, direction).delta(eps) >= lower[direction])
    _assert_dominates(profile, 150, pointwise_tail=False)
    np.testing.assert_array_equal(pm.losses.add.locations, -pm.losses.remove.locations[::-1])


def test_two_fold_composition_of_a_discrete_pair_against_enumeration():
    """A symmetric discrete pair (Q is P reversed): the profile's pair composes like the pair itself."""
    p = np.array([0.6, 0.25, 0.1, 0.05])
    q = p[::-1]
    composed = ps.privacy_profile(ProfileMechanism(discrete_profile(p, q)).compose(2), target_delta=1e-3)
    exact = discrete_profile(np.outer(p, p).ravel(), np.outer(q, q).ravel())
    for delta in (1e-1, 1e-2, 1e-3):
        truth = exact.epsilon(delta)
        assert truth <= composed.epsilon(delta) <= 1.005 * truth


class _RandomizedResponseCurve(DirectionalCurve):
    """Exact curve of eps0-randomized response, delta(eps) = (p - e^eps (1 - p))_+, exactly 0 past eps0."""

    direction = "both"
    error_budget = ErrorBudget()

    def __init__(self, eps0):
        self.p = math.exp(eps0) / (1 + math.exp(eps0))

    def delta_bounds(self, eps):
        d = np.maximum(self.p - np.exp(np.asarray(eps, dtype=float)) * (1 - self.p), 0.0)
        return d, d


def test_rdp_of_a_pure_dp_profile_is_randomized_response():
    """No mass at +-inf: the pair's exact Renyi divergences, at or above randomized response's."""
    eps0 = 0.8
    pm = ProfileMechanism(PrivacyProfile(curves=(_RandomizedResponseCurve(eps0),), accountant="exact"))
    assert pm.losses.remove.inf_mass == 0.0
    orders = np.array([1.5, 2.0, 8.0, 64.0])
    exact = rdp.rdp_curve(ps.RandomizedResponse(math.exp(eps0) / (1 + math.exp(eps0))), orders)
    ours = rdp.rdp_curve(pm, orders)
    assert np.all(ours >= exact * (1 - 1e-12))
    np.testing.assert_allclose(ours, exact, rtol=1e-3)


def test_rdp_is_infinite_with_mass_at_infinity():
    pm = ProfileMechanism(ps.gdp_profile(0.5))
    assert np.all(np.isinf(rdp.rdp_curve(pm, [2.0, 10.0])))


def test_subsampled_pure_dp_profile_matches_subsampled_randomized_response():
    eps0, rate, steps = 1.0, 0.05, 50
    pm = ProfileMechanism(_rr_profile(eps0))
    ours = PRVAccountant(target_delta=1e-6).profile(pm.poisson_subsample(rate).compose(steps))
    ref = PRVAccountant(target_delta=1e-6).profile(ps.PureDP(eps0).poisson_subsample(rate).compose(steps))
    lower, upper = ref.epsilon_bounds(1e-6)
    assert lower <= ours.epsilon(1e-6) <= 1.01 * upper


# ---------------------------------------------------------------------------------------------
# Bad input and description semantics
# ---------------------------------------------------------------------------------------------


def test_bad_input_names_the_parameter():
    with pytest.raises(TypeError, match="profile"):
        ProfileMechanism(ps.Gaussian(1.0))
    with pytest.raises(ValueError, match="points"):
        ProfileMechanism(ps.gdp_profile(1.0), points=3)
    with pytest.raises(ValueError, match="tail"):
        ProfileMechanism(ps.gdp_profile(1.0), tail=0.0)
    with pytest.raises(ValueError, match="sample_without_replacement"):
        ProfileMechanism(ps.gdp_profile(1.0)).sample_without_replacement(0.1)


def test_description_is_frozen_and_composes():
    pm = ProfileMechanism(ps.gdp_profile(1.0))
    with pytest.raises(AttributeError):
        pm.points = 10
    assert ps.compose(pm, pm) == pm.compose(2)
    assert "ProfileMechanism" in repr(pm.compose(3))
    assert ps.ProfileMechanism is ProfileMechanism
