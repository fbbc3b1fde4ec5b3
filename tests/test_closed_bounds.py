"""The closed-form members of "auto": pure-DP and approximate-DP composition (accounting/closed.py),
against closed forms, exact enumeration and peers."""

import math

import pytest
from hypothesis import given, settings, strategies as st

import privselect as ps
from privselect.accounting.closed import ClosedBounds
from privselect.accounting.gaussian import gaussian_delta


def _closed(m):
    return ClosedBounds().profile(m)


@pytest.mark.parametrize("eps", [0.0, 0.3, 1.0, 2.5])
def test_one_gaussian_step_is_its_exact_profile(eps):
    """No subsampling, one step: the approximate-DP bound is the Gaussian profile itself (Balle, Wang 2018)."""
    assert _closed(ps.Gaussian(0.8)).delta(eps) == pytest.approx(float(gaussian_delta(eps, 1 / 0.8)), rel=1e-9)


@pytest.mark.parametrize("b, eps", [(0.5, 0.3), (1.0, 0.5), (3.0, 0.1), (3.0, 0.4)])
def test_one_laplace_step_is_its_exact_profile(b, eps):
    """1 - e^{(eps - 1/b)/2} on [0, 1/b] (Koskela et al. 2021), checked against CF's closed form."""
    value = _closed(ps.Laplace(b)).delta(eps)
    assert value == pytest.approx(-math.expm1((eps - 1 / b) / 2) if eps < 1 / b else 0.0, rel=1e-9)
    low, up = ps.privacy_profile(ps.Laplace(b), accountant="cf").delta_bounds(eps)
    assert low * (1 - 1e-9) <= value <= up * (1 + 1e-6)


@pytest.mark.parametrize("p, eps", [(0.7, 0.1), (0.9, 1.0), (0.9, 2.5)])
def test_one_randomized_response_step_is_its_exact_profile(p, eps):
    e0 = math.log(p / (1 - p))
    exact = max(p - math.exp(eps) * (1 - p), 0.0)  # H_{e^eps} of (p, 1-p) vs (1-p, p)
    assert _closed(ps.RandomizedResponse(p)).delta(eps) == pytest.approx(exact, rel=1e-9, abs=1e-300)
    assert _closed(ps.PureDP(e0)).delta(eps) == pytest.approx(exact, rel=1e-9, abs=1e-300)


@pytest.mark.slow  # seconds per case, measured: the slow tier runs it
@pytest.mark.parametrize("rate, eps", [(0.01, 0.5), (0.001, 1.0), (0.2, 2.0)])
def test_one_subsampled_gaussian_step_equals_the_remove_direction_and_bounds_the_pld(rate, eps):
    """Balle, Barthe, Gaboardi 2018, Thm 8 is an equality in the remove direction:
    H_{1 + q(a - 1)}((1-q)P + qQ || P) = q H_a(Q || P), so one step's bound is q delta_mu(eps_0). It must
    lie between dp-accounting's optimistic and pessimistic PLD (both directions) and 1% of the latter."""
    pld = pytest.importorskip("dp_accounting.pld.privacy_loss_distribution")
    sigma = 0.5
    e0 = math.log1p(math.expm1(eps) / rate)
    value = _closed(ps.Gaussian(sigma).poisson_subsample(rate)).delta(eps)
    assert value == pytest.approx(rate * float(gaussian_delta(e0, 1 / sigma)), rel=1e-9)
    refs = [pld.from_gaussian_mechanism(sigma, sampling_prob=rate, value_discretization_interval=1e-4,
                                        pessimistic_estimate=pess, use_connect_dots=pess).get_delta_for_epsilon(eps)
            for pess in (False, True)]  # mesh 1e-4: 1.5-2 s a case (1e-5: 13-19 s, the same verdicts)
    assert refs[0] * (1 - 1e-9) <= value <= refs[1] * 1.01


def test_pure_dp_composition_is_zero_beyond_the_total_and_exact_at_the_edge():
    """k steps of Laplace(b): S = k/b; delta(S) = 0, while just below S the exact delta (CF, closed form)
    is positive, so the threshold is the right one. Subsampled: S = k log(1 + q(e^{1/b} - 1))."""
    m = ps.Laplace(2.0).compose(10)
    assert _closed(m).delta(5.0 * (1 + 1e-9)) == 0.0
    assert ps.privacy_profile(m, accountant="cf").delta_bounds(5.0 * (1 - 1e-6))[0] > 0
    q = 0.01
    sampled = ps.Laplace(2.0).poisson_subsample(q).compose(10)
    total = 10 * math.log1p(q * math.expm1(0.5))
    assert _closed(sampled).delta(total * (1 + 1e-9)) == 0.0
    assert _closed(sampled).epsilon(1e-300) <= total * (1 + 1e-9)
    assert _closed(sampled).delta(total * 0.999) > 0


def test_a_record_almost_never_sampled_gives_epsilon_zero():
    """1e6 steps at rate 1e-200: delta(0) <= 1e6 x 1e-200 x TV (basic composition of amplified steps);
    auto answers eps = 0 without building any numerical accountant (this query hung for 50 s)."""
    m = ps.SampledWithoutReplacement(ps.Gaussian(0.00247), 1e-200).compose(10**6)
    assert _closed(m).epsilon(6.5e-7) == 0.0
    prof = ps.privacy_profile(m)
    assert prof.epsilon(6.5e-7) == 0.0
    assert set(prof.members) <= {"closed", "rdp"}


_bases = st.one_of(
    st.builds(ps.Gaussian, st.floats(0.3, 5.0)),
    st.builds(ps.Laplace, st.floats(0.3, 5.0)),
    st.builds(ps.RandomizedResponse, st.floats(0.55, 0.95)),
)


@pytest.mark.slow  # seconds per case, measured: the slow tier runs it
@settings(max_examples=25, deadline=None, derandomize=True)
@given(base=_bases, rate=st.floats(0.01, 1.0), how=st.sampled_from(["poisson", "wor"]), k=st.integers(1, 50),
       eps=st.floats(0.0, 4.0))
def test_closed_bounds_never_fall_below_a_certified_lower_bound(base, rate, how, k, eps):
    """Soundness against peers: the closed bound is above PRV's certified lower bound (and CF's, where
    CF is certified) for random subsampled compositions, at every eps."""
    step = base if rate == 1.0 else (base.poisson_subsample(rate) if how == "poisson"
                                     else base.sample_without_replacement(rate))
    m = step.compose(k)
    value = _closed(m).delta(eps)
    assert 0.0 <= value <= 1.0
    try:  # PRV declines (CertificationError) where one step needs more cells than its cap
        lower = ps.privacy_profile(m, accountant="prv").delta_bounds(eps)[0]
    except ps.CertificationError:
        lower = 0.0
    assert value >= lower * (1 - 1e-9)
    cf = ps.privacy_profile(m, accountant="cf")
    if cf.certified:
        assert value >= cf.delta_bounds(eps)[0] * (1 - 1e-9)
