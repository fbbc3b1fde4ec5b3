"""The connect-the-dots PLD accountant ("pld"): its bracket against closed forms (Gaussian compositions), the
peers on the same inputs (dp-accounting's PLD, prv-accountant's certified bounds), and its contracts."""

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy.stats import norm

import privselect as ps
from privselect.accounting import get_accountant
from privselect.accounting.pld.discretise import discretise
from privselect.accounting.plrv import composed_losses
from privselect.errors import CertificationError, UnsupportedMechanismError


def gaussian_delta(mu: float, eps: np.ndarray) -> np.ndarray:
    """delta(eps) of a Gaussian mechanism with mu = sensitivity / sigma (Balle, Wang 2018, Thm 8)."""
    return norm.cdf(mu / 2 - eps / mu) - np.exp(eps) * norm.cdf(-mu / 2 - eps / mu)


def pld(mechanism, **options):
    return get_accountant("pld", **options).profile(mechanism)


@pytest.mark.parametrize("noise, steps", [(1.0, 10), (2.0, 300), (0.7, 3)])
def test_gaussian_composition_bracket_contains_the_closed_form_and_is_tight(noise, steps):
    eps = np.array([0.0, 0.5, 1.0, 3.0, 8.0])
    exact = gaussian_delta(math.sqrt(steps) / noise, eps)
    low, up = pld(ps.Gaussian(noise).compose(steps)).delta_bounds(eps)
    assert np.all(low <= exact) and np.all(exact <= up)
    assert np.all(up - low <= 1e-4 * exact + 1e-15)


@settings(max_examples=12, deadline=None)
@given(st.lists(st.tuples(st.floats(0.5, 4.0), st.integers(1, 400)), min_size=1, max_size=3),
       st.floats(-0.5, 6.0))
def test_heterogeneous_gaussian_bracket_contains_the_closed_form(parts, eps):
    mechanism = ps.compose(*[ps.Gaussian(s).compose(k) for s, k in parts])
    mu = math.sqrt(sum(k / s**2 for s, k in parts))
    exact = float(gaussian_delta(mu, np.array(eps)))
    low, up = pld(mechanism).delta_bounds(eps)
    assert low <= exact <= up


def test_one_step_laws_bracket_the_true_curve_at_and_between_grid_points():
    loss = composed_losses(ps.Gaussian(1.0).poisson_subsample(0.01))[0][0].remove
    h = 1e-3
    law = discretise(loss, h, -0.02, 6.0)
    loc = (law.i0 + np.arange(law.upper.size)) * h
    eps = np.linspace(-0.01, 5.0, 2001) + h / 3  # off the grid
    true = loss.inf_mass + loss.sf(eps) - np.exp(eps) * loss.sf_secondary(eps)
    weights = np.clip(1 - np.exp(eps[:, None] - loc[None, :]), 0, None)
    assert np.all(law.upper >= 0) and np.all(law.lower >= 0)
    assert np.all(weights @ law.upper + law.upper_inf >= true - 1e-18)
    assert np.all(weights @ law.lower <= true + 1e-18)


@pytest.mark.parametrize("noise, rate, steps", [(1.1, 256 / 60000, 14063), (0.8, 1e-3, 20000), (2.0, 0.05, 500)])
def test_subsampled_gaussian_upper_end_is_at_most_dp_accountings_pessimistic_pld(noise, rate, steps):
    pytest.importorskip("dp_accounting")
    from dp_accounting.pld import privacy_loss_distribution as dpl

    one = dpl.from_gaussian_mechanism(noise, sampling_prob=rate, value_discretization_interval=1e-4,
                                      use_connect_dots=True, pessimistic_estimate=True)
    peer = one.self_compose(steps)
    # the optimistic privacy buckets round every loss down: their curve lies below the true one
    optimistic = dpl.from_gaussian_mechanism(noise, sampling_prob=rate, value_discretization_interval=1e-4,
                                             use_connect_dots=False, pessimistic_estimate=False).self_compose(steps)
    profile = pld(ps.Gaussian(noise).poisson_subsample(rate).compose(steps))
    for delta in (1e-5, 1e-8):
        low, up = profile.epsilon_bounds(delta)
        assert up <= peer.get_epsilon_for_delta(delta) * 1.001
        assert up >= optimistic.get_epsilon_for_delta(delta) and low <= up


@pytest.mark.slow  # seconds per case, measured: the slow tier runs it
@pytest.mark.parametrize("noise, rate, steps, delta", [(0.8, 1e-4, 200_000, 1e-7), (1.0, 1e-3, 10_000, 1e-9)])
def test_bracket_meets_prv_accountants_certified_bounds(noise, rate, steps, delta):
    pytest.importorskip("prv_accountant")
    from prv_accountant import PoissonSubsampledGaussianMechanism, PRVAccountant

    peer = PRVAccountant(prvs=[PoissonSubsampledGaussianMechanism(noise_multiplier=noise, sampling_probability=rate)],
                         max_self_compositions=[steps], eps_error=0.01, delta_error=delta / 1000)
    peer_low, _, peer_up = peer.compute_epsilon(delta=delta, num_self_compositions=[steps])
    low, up = pld(ps.Gaussian(noise).poisson_subsample(rate).compose(steps)).epsilon_bounds(delta)
    assert up >= peer_low and low <= peer_up
    assert up <= peer_up  # tighter than the peer's certified end on the same input


def test_both_directions_of_a_subsampled_mechanism_have_their_own_curve():
    profile = pld(ps.Gaussian(1.0).poisson_subsample(0.1).compose(50))
    assert [c.direction for c in profile.curves] == ["remove", "add"]
    remove, add = (c.delta_bounds(np.array([1.0]))[1][0] for c in profile.curves)
    assert remove != add


def test_declines_past_its_memory_budget_and_point_cap():
    mechanism = ps.Gaussian(0.8).poisson_subsample(1e-4).compose(10**6)
    with pytest.raises(CertificationError, match="max_memory"):
        pld(mechanism, max_memory=20_000_000)
    with pytest.raises(CertificationError, match="max_points"):
        pld(mechanism, value_discretization_interval=1e-7, max_points=1 << 20)


def test_supports_is_a_dry_run_and_names_what_it_cannot_read():
    from dataclasses import dataclass

    @dataclass(frozen=True)
    class Unknown(ps.Mechanism):
        pass

    accountant = get_accountant("pld")
    assert accountant.supports(ps.Gaussian(1.0).poisson_subsample(0.01).compose(5)) is None
    assert "Unknown" in accountant.supports(ps.compose(ps.Gaussian(1.0), Unknown()))
    with pytest.raises(UnsupportedMechanismError):
        accountant.profile(ps.compose(ps.Gaussian(1.0), Unknown()))


def exact_atomic_delta(mechanism, steps: int, eps: float) -> float:
    """delta(eps) of ``steps`` compositions of a mechanism whose losses take two values, the larger over the two
    directions: the binomial sum over how many steps took the larger loss (log-space terms)."""
    from scipy.special import gammaln

    out = 0.0
    for loss in (composed_losses(mechanism)[0][0].remove, composed_losses(mechanism)[0][0].add):
        atoms = loss.atoms()
        (l_lo, l_hi), (p_lo, p_hi) = atoms.locations, atoms.primary
        k = np.arange(steps + 1)
        log_w = gammaln(steps + 1) - gammaln(k + 1) - gammaln(steps - k + 1) + k * np.log(p_hi) \
            + (steps - k) * np.log(p_lo)
        total = k * l_hi + (steps - k) * l_lo
        out = max(out, float(np.sum(np.exp(log_w) * np.clip(-np.expm1(eps - total), 0, None))))
    return out


@pytest.mark.slow  # 15 exact binomial sums (~9 s); the fast tier keeps the atom property test of test_cf.py
@settings(max_examples=15, deadline=None)
@given(st.floats(0.55, 0.95), st.one_of(st.just(1.0), st.floats(0.01, 0.5)), st.integers(1, 300),
       st.floats(0.0, 3.0))
def test_atomic_compositions_bracket_the_exact_binomial_sum(p, rate, steps, eps):
    base = ps.RandomizedResponse(p)
    mechanism = base if rate == 1.0 else base.poisson_subsample(rate)
    exact = exact_atomic_delta(mechanism, steps, eps)
    low, up = pld(mechanism.compose(steps)).delta_bounds(eps)
    assert low <= exact * (1 + 1e-9) + 1e-300 and exact <= up * (1 + 1e-9)


def test_optimistic_step_law_keeps_its_mass_and_its_q_mass():
    """The optimistic law is a contraction in e^{-L}: total mass 1 and E[e^{-L}] = Q(L finite) = 1, so composing
    it a million times loses nothing (the old lowered chords lost ~1e-6 per step at q = 1e-4)."""
    for direction in ("remove", "add"):
        loss = getattr(composed_losses(ps.Gaussian(0.8).poisson_subsample(1e-4))[0][0], direction)
        h = 2e-5
        law = discretise(loss, h, -3.0 if direction == "add" else -2e-4, 3.0 if direction == "remove" else 2e-4)
        loc = (law.i0 + np.arange(law.lower.size)) * h
        assert abs(law.lower.sum() - 1.0) < 1e-12
        assert abs(float(np.sum(law.lower * np.exp(-loc))) - 1.0) < 1e-9
        assert 1.0 <= law.lower_excess < 1.0 + 1e-9


def test_fast_composition_agrees_with_the_long_double_one_within_their_error_bounds():
    from privselect.accounting.pld.compose import _compose_long
    from privselect.accounting.pld.fast import compose_fast

    loss = composed_losses(ps.Gaussian(1.0).poisson_subsample(1e-3))[0][0].remove
    law = discretise(loss, 1e-4, -2e-3, 1.5)
    parts = [(law.upper, law.i0, 5000)]
    n = 1 << 15
    fast, long = compose_fast(parts, n), _compose_long(parts, n)
    assert fast is not None
    (pmf_fast, fp_fast), (pmf_long, fp_long) = fast, long
    assert float(np.sum(np.abs(pmf_fast - pmf_long.astype(float)))) <= fp_fast + fp_long + 1e-15
    assert fp_fast < 1e-12


def test_far_part_of_a_law_spectrum_is_within_its_error_bound_of_the_exact_dft():
    # the far part's rotated spectrum e^{i theta_j c} F_j[far] - M_far in long double against a 40-digit DFT
    mp = pytest.importorskip("mpmath")
    from privselect.accounting.pld.fast import far_error, far_part

    mp.mp.dps = 40
    loss = composed_losses(ps.Gaussian(0.8).poisson_subsample(1e-2))[0][0].remove
    masses = discretise(loss, 2e-3, -2e-2, 2.0).upper
    n, centre = 4096, int(np.argmax(masses))
    lo, hi = max(centre - 8, 0), centre + 9
    freqs = np.array([0, 1, 2, 5, 40, 700, 2048])
    value, mass = far_part(masses, lo, hi, centre, freqs, n)
    far = [(i, mp.mpf(float(m))) for i, m in enumerate(masses) if not lo <= i < hi and m > 0]
    exact_mass = mp.fsum(m for _, m in far)
    assert abs(mass - float(exact_mass)) <= 1e-15 * mass

    def exactly(x: np.longdouble):  # a long double as high + low doubles, both exact
        high = float(x)
        return mp.mpf(high) + mp.mpf(float(x - np.longdouble(high)))

    for j, got in zip(freqs, value):
        exact = mp.fsum(m * mp.expjpi(-2 * mp.mpf(int(j)) * (i - centre) / n) for i, m in far) - exact_mass
        error = abs(mp.mpc(exactly(got.real), exactly(got.imag)) - exact)
        assert error <= far_error(n) * mass
    assert far_error(n) < 2e-17  # 2^11 below the float64 FFT's e = 10 u log2 n (1.3e-14 here)


@pytest.mark.parametrize("noise, rate, steps", [(0.8, 1e-4, 1_000_000)])
def test_large_scale_bracket_is_tight_and_below_dp_accountings_pessimistic_pld(noise, rate, steps):
    pytest.importorskip("dp_accounting")
    from dp_accounting.pld import privacy_loss_distribution as dpl

    peer = dpl.from_gaussian_mechanism(noise, sampling_prob=rate, value_discretization_interval=1e-4,
                                       use_connect_dots=True, pessimistic_estimate=True).self_compose(steps)
    profile = pld(ps.Gaussian(noise).poisson_subsample(rate).compose(steps))
    for delta in (1e-5, 1e-8, 1e-10):
        low, up = profile.epsilon_bounds(delta)
        assert low <= up <= peer.get_epsilon_for_delta(delta)
        assert up - low <= 0.005 * up  # no more than the auto tightness window: no other member is needed


def test_ten_million_steps_certify_delta_below_one_in_ten_billion():
    """The floating-point term no longer grows like k u: at 1e7 steps (it was 2.5e-10 in long double) it is far
    below 1e-10, so eps(1e-10) is certified."""
    profile = pld(ps.Gaussian(0.8).poisson_subsample(1e-4).compose(10_000_000))
    for curve in profile.curves:
        assert dict(curve.error_budget.details)["delta_upper_fp_fft"] < 1e-11
    low, up = profile.epsilon_bounds(1e-10)
    assert 0 < low <= up < 1.005 * low


def test_an_overflowing_fast_error_term_leaves_a_finite_bracket_inside_prvs():
    """74 steps of Gaussian(60) at q = 0.136 with a Gaussian(10) score: the fast composition's error term
    overflowed to NaN, pld answered NaN everywhere, and auto's minimum took it (a calibration then failed).
    Now a non-finite bound sends the composition to the long-double FFT (as do so few steps, whose k-fold
    error there is small): pld's bracket is finite and inside PRV's certified one, and so is auto's."""
    m = ps.compose(ps.Gaussian(10.0), ps.Gaussian(60.0).poisson_subsample(0.13577300450808805).compose(74))
    eps = np.array([0.0, 1e-3, 0.1, 1.0])
    low, up = ps.privacy_profile(m, accountant="pld").delta_bounds(eps)
    prv_low, prv_up = ps.privacy_profile(m, accountant="prv").delta_bounds(eps)
    assert np.all(np.isfinite(up)) and np.all(prv_low <= up) and np.all(low <= prv_up)
    assert np.all(up[:3] - low[:3] <= 1e-4 * up[:3])  # 0.0406256 at eps = 0: PRV's bracket is 0.45% wide
    auto_low, auto_up = ps.privacy_profile(m).delta_bounds(eps)
    assert np.all(np.isfinite(auto_up)) and np.all(auto_up <= prv_up * (1 + 1e-9) + 1e-12)
    assert np.all(auto_low <= auto_up)


@settings(max_examples=15, deadline=None)
@given(st.sampled_from(["gaussian", "subsampled", "atomic", "mixed"]), st.integers(1, 3000),
       st.lists(st.floats(-14.0, -0.05), min_size=1, max_size=6))
def test_direct_epsilon_bracket_is_verified_and_matches_bisection_on_the_curve(kind, steps, log_deltas):
    """eps(delta) by the direct solve on the grid segment: its upper end is a point where the upper curve is
    <= delta and its lower end one where the lower curve is > delta (so both are certified), and both agree
    with a bisection on the same curves (the generic `DirectionalCurve.epsilon_bounds`) to a few ulps."""
    from privselect.accounting.profile import DirectionalCurve

    mechanism = {"gaussian": ps.Gaussian(2.0).compose(min(steps, 50)),
                 "subsampled": ps.Gaussian(0.9).poisson_subsample(0.01).compose(steps),
                 "atomic": ps.RandomizedResponse(0.8).poisson_subsample(0.05).compose(min(steps, 300)),
                 "mixed": ps.compose(ps.Laplace(2.0).poisson_subsample(0.02).compose(min(steps, 200)),
                                     ps.Gaussian(3.0).compose(3))}[kind]
    deltas = 10.0 ** np.array(log_deltas)
    for curve in pld(mechanism).curves:
        low, up = curve.epsilon_bounds(deltas)
        ref_low, ref_up = DirectionalCurve.epsilon_bounds(curve, deltas)
        finite = np.isfinite(up)
        assert np.array_equal(finite, np.isfinite(ref_up))
        assert np.all(curve.delta_bounds(up[finite])[1] <= deltas[finite])
        inside = low > -50
        assert np.all(curve.delta_bounds(low[inside])[0] > deltas[inside])
        assert np.allclose(up[finite], ref_up[finite], rtol=1e-13, atol=1e-13)
        assert np.allclose(low, ref_low, rtol=1e-13, atol=1e-13)
