"""Random allocation (balls-in-bins redrawn per epoch): its description, and its certified bracket against the
exact delta(eps) of one epoch by adaptive quadrature, a Monte Carlo interval, and closed forms."""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy import integrate, special

import privselect as ps
from privselect.accounting import gaussian_delta
from privselect.accounting.allocation.epoch import base_mesh, epoch_meshes
from privselect.accounting.allocation.lower import lower_meshes, term_contraction
from privselect.errors import UnsupportedMechanismError
from privselect.mechanisms import RandomAllocation


def _phi(z: float) -> float:
    return math.exp(-0.5 * z * z) / math.sqrt(2 * math.pi)


def _lognormal(z: float, sigma: float) -> float:
    """X = exp(Z / sigma - 1 / (2 sigma^2)): the likelihood ratio of one step (mean 1)."""
    return math.exp(z / sigma - 0.5 / sigma ** 2)


def _inner(c: float, sigma: float, direction: str) -> float:
    """E[(X - c)_+] (remove: mixture first) or E[(c - X)_+] (add), closed forms of the lognormal X."""
    if direction == "remove":
        if c <= 0:
            return 1.0 - c
        lc = math.log(c)
        return special.ndtr(-(sigma * lc - 0.5 / sigma)) - c * special.ndtr(-(sigma * lc + 0.5 / sigma))
    if c <= 0:
        return 0.0
    lc = math.log(c)
    return c * special.ndtr(sigma * lc + 0.5 / sigma) - special.ndtr(sigma * lc - 0.5 / sigma)


def exact_delta(sigma: float, t: int, eps: float, direction: str, tol: float = 1e-12) -> float:
    """delta(eps) of one epoch (k = 1) by nested adaptive quadrature over t - 1 standard normals and the closed
    form over the last: remove E[(W - e^eps)_+], add E[(1 - e^eps W)_+], W = mean of t i.i.d. X."""
    x = math.exp(eps)

    threshold = t * x if direction == "remove" else t / x  # where the closed form's argument crosses 0

    def level(partial: float, depth: int) -> float:
        if depth == t - 1:
            if direction == "remove":
                return _inner(t * x - partial, sigma, direction) / t
            return x / t * _inner(t / x - partial, sigma, direction)
        # the integrand has a kink where partial + X(z) reaches the threshold: integrate either side of it
        lo, hi = -12.0, 12 + 1.0 / sigma
        room = threshold - partial
        kink = sigma * (math.log(room) + 0.5 / sigma ** 2) if room > 0 else None
        ends = [lo] + ([kink] if kink is not None and lo < kink < hi else []) + [hi]
        return sum(integrate.quad(lambda z: _phi(z) * level(partial + _lognormal(z, sigma), depth + 1),
                                  a, b, epsabs=0.0, epsrel=tol, limit=200)[0] for a, b in zip(ends[:-1], ends[1:]))

    return level(0.0, 0)


@functools.cache
def converged_delta(sigma: float, t: int, eps: float, direction: str) -> float:
    """`exact_delta` with its convergence checked: two tolerances agree to 8 digits (computed once per case:
    a t = 3 case is a nested adaptive quadrature of tens of seconds)."""
    fine, coarse = exact_delta(sigma, t, eps, direction, 1e-12), exact_delta(sigma, t, eps, direction, 1e-10)
    assert abs(fine - coarse) <= 1e-8 * abs(fine) + 1e-14
    return fine


@pytest.mark.parametrize("sigma", [0.8, 2.0])
@pytest.mark.parametrize("eps", [0.0, 0.5, 1.0])
def test_quadrature_at_one_step_is_the_gaussian_closed_form(sigma, eps):
    # t = 1: the epoch is the Gaussian mechanism itself (checks the integrand and the closed forms)
    for direction in ("remove", "add"):
        got = exact_delta(sigma, 1, eps, direction)
        assert got == pytest.approx(float(gaussian_delta(eps, 1 / sigma)), rel=1e-9, abs=1e-15)


@functools.cache
def _one_epoch_profile(sigma: float, t: int) -> ps.PrivacyProfile:
    """One epoch's profile, built once per (sigma, t) for the four eps asked of it (sigma 0.5: about 16 s a build)."""
    return ps.privacy_profile(ps.Gaussian(sigma).random_allocation(steps=t))


@pytest.mark.parametrize("sigma", [0.5, 1.0, 2.0])
@pytest.mark.parametrize("t", [2, 3])
@pytest.mark.parametrize("eps", [0.1, 0.5, 1.0, 2.0])
def test_bracket_contains_the_exact_delta_of_one_epoch(sigma, t, eps):
    profile = _one_epoch_profile(sigma, t)
    assert profile.accountant == "allocation"
    for curve in profile.curves:
        exact = converged_delta(sigma, t, eps, curve.direction)
        lower, upper = curve.delta_bounds(np.array([eps]))
        assert lower[0] <= exact <= upper[0]
        assert upper[0] <= 1.05 * exact  # the tight upper end (dominating epoch laws), within 5%
        assert lower[0] >= 0.95 * exact  # the tight lower end (dominated epoch laws), within 5%
    # the epoch amplifies: below the single Gaussian step, above the summed steps (both exact ends)
    both = max(converged_delta(sigma, t, eps, d) for d in ("remove", "add"))
    assert both < float(gaussian_delta(eps, 1 / sigma))
    assert both > float(gaussian_delta(eps, 1 / (sigma * math.sqrt(t))))


@pytest.mark.parametrize("sigma, t, eps", [(1.0, 2, 0.3), (1.0, 5, 0.5), (0.8, 10, 1.0), (2.0, 3, 0.1),
                                           (1.5, 100, 0.2)])
def test_monte_carlo_interval_lies_below_the_certified_upper_bound(sigma, t, eps):
    # each direction's delta is the mean of a variable in [0, 1]: add (1 - e^eps W)_+ under Q, remove
    # (1 - e^eps / W)_+ under P (the record in step 1), so Hoeffding's interval at 1e-6 holds (1e6 samples)
    rng = np.random.default_rng(20260)
    n, level = 1_000_000, 1e-6
    curves = {c.direction: c for c in ps.privacy_profile(ps.Gaussian(sigma).random_allocation(steps=t)).curves}
    for direction in ("add", "remove"):
        total = np.zeros(n)
        for step in range(t):
            shift = 1.0 if direction == "remove" and step == 0 else 0.0
            total += np.exp((rng.standard_normal(n) + shift / sigma) / sigma - 0.5 / sigma ** 2)
        w = total / t
        values = 1 - math.exp(eps) * w if direction == "add" else 1 - math.exp(eps) / w
        estimate = float(np.mean(np.maximum(values, 0.0)))
        low_end = estimate - math.sqrt(math.log(2 / level) / (2 * n))
        lower, upper = (float(end[0]) for end in curves[direction].delta_bounds(np.array([eps])))
        high_end = estimate + math.sqrt(math.log(2 / level) / (2 * n))
        assert low_end <= upper and lower <= high_end
        assert estimate - 0.01 <= lower and upper <= estimate + 0.01  # tight: within the interval's width


def _two_epochs_of_two_steps(sigma: float, eps: float, direction: str, tol: float) -> float:
    """delta(eps) of two composed epochs of t = 2 by nested adaptive quadrature: remove E_QxQ[(W1 W2 - x)_+] =
    E_W1[W1 E[(W2 - x / W1)_+]], add E_QxQ[(1 - x W1 W2)_+] = E_W1[x W1 E[(1 / (x W1) - W2)_+]], the inner
    expectation over W2 = (X + X') / 2 as one quadrature and the closed form."""
    x = math.exp(eps)

    def inner(a: float) -> float:  # E[(W2 - a)_+] (remove) or E[(a - W2)_+] (add)
        value, _ = integrate.quad(lambda z: _phi(z) * _inner(2 * a - _lognormal(z, sigma), sigma, direction),
                                  -12, 12 + 1 / sigma, epsabs=tol, epsrel=tol, limit=200)
        return value / 2

    def given(z1: float) -> float:
        def term(z2: float) -> float:
            w1 = (_lognormal(z1, sigma) + _lognormal(z2, sigma)) / 2
            return _phi(z2) * (w1 * inner(x / w1) if direction == "remove" else x * w1 * inner(1 / (x * w1)))
        value, _ = integrate.quad(term, -12, 12 + 1 / sigma, epsabs=tol, epsrel=tol, limit=200)
        return value

    value, _ = integrate.quad(lambda z1: _phi(z1) * given(z1), -12, 12 + 1 / sigma, epsabs=tol, epsrel=tol,
                              limit=200)
    return value


@pytest.mark.parametrize("direction, eps", [("remove", 1.0), ("add", 0.5)])
def test_two_epochs_of_two_steps_lie_inside_the_certified_bracket_within_five_percent(direction, eps):
    sigma = 1.0
    fine, coarse = (_two_epochs_of_two_steps(sigma, eps, direction, tol) for tol in (1e-10, 1e-8))
    assert abs(fine - coarse) <= 1e-8 * fine  # converged to 8 digits
    profile = ps.privacy_profile(ps.Gaussian(sigma).random_allocation(steps=2).compose(2))
    curve = next(c for c in profile.curves if c.direction == direction)
    lower, upper = curve.delta_bounds(np.array([eps]))
    assert 0.95 * fine <= lower[0] <= fine <= upper[0] <= 1.05 * fine


def test_epochs_compose_and_the_bracket_is_the_gdp_pair():
    sigma, t, epochs = 1.1, 100, 60
    mechanism = ps.Gaussian(sigma).random_allocation(steps=t).compose(epochs)
    gdp = ps.privacy_profile(mechanism, accountant="allocation", tight=False)
    lower, upper = gdp.delta_bounds(1.0)
    assert upper == pytest.approx(float(gaussian_delta(1.0, math.sqrt(epochs) / sigma)), rel=1e-12)
    assert lower == pytest.approx(float(gaussian_delta(1.0, math.sqrt(epochs / t) / sigma)), rel=1e-12)
    # the tight ends lie inside the bracket, far below the revealed allocation's, within 1% of each other
    tight_lower, tight_upper = ps.privacy_profile(mechanism).delta_bounds(1.0)
    assert lower < tight_lower <= tight_upper < upper / 10
    assert tight_upper <= 1.01 * tight_lower


def test_a_certificate_never_builds_the_lower_end_and_the_bracket_then_contains_it():
    sigma, t, epochs = 2.0, 50, 3
    mechanism = ps.Gaussian(sigma).random_allocation(steps=t).compose(epochs)
    profile = ps.privacy_profile(mechanism)
    lazy = {id(c.lower): c.lower for c in profile.curves}
    assert len(lazy) == 1  # both directions share one build
    (lower_ends,) = lazy.values()
    eps, delta = profile.epsilon(1e-6), profile.delta([0.1, 0.5])
    assert not lower_ends.is_built  # upper bounds read the dominating laws alone
    low, up = profile.epsilon_bounds(1e-6)
    assert lower_ends.is_built and lower_ends.reason == ""
    assert up == eps
    # the dominated laws' end: above the summed steps' Gaussian (the end without them), within 1% of the upper end
    assert float(ps.accounting.gaussian_epsilon(1e-6, math.sqrt(epochs / t) / sigma)) < 0.99 * low
    assert low <= up <= 1.01 * low
    d_low, d_up = profile.delta_bounds([0.1, 0.5])
    assert np.array_equal(d_up, delta) and np.all(d_low <= d_up) and np.all(d_low >= 0.99 * d_up)


def test_sixty_epochs_certify_at_most_poisson_sampling_at_the_same_rate():
    # Feldman, Shenfeld (arXiv 2602.17284): for the Gaussian, random allocation's privacy is at least as good as
    # Poisson sampling's at rate 1/t; our certified upper end sits below pld's certified Poisson upper end
    sigma, t, epochs = 1.1, 234, 60
    allocation = ps.privacy_profile(ps.Gaussian(sigma).random_allocation(steps=t).compose(epochs))
    poisson = ps.privacy_profile(ps.Gaussian(sigma).poisson_subsample(1 / t).compose(epochs * t), accountant="pld")
    low, up = allocation.epsilon_bounds(1e-5)
    assert up < poisson.epsilon_bounds(1e-5)[0]
    # the lower end: above the summed steps' Gaussian, within 1% of the upper end
    assert low > float(ps.accounting.gaussian_epsilon(1e-5, math.sqrt(epochs / t) / sigma))
    assert up <= 1.01 * low


def test_fixed_bins_over_cycles_is_one_allocation_at_sigma_over_root_cycles():
    fixed = ps.Gaussian(2.0).fixed_bins_allocation(steps=10, cycles=4)
    assert fixed == RandomAllocation(ps.Gaussian(1.0), 10, 1)
    assert not isinstance(fixed, ps.mechanisms.Composition)  # never E composed epochs


def test_dpsgd_random_allocation_is_epochs_of_one_allocation():
    m = ps.dpsgd(noise_multiplier=1.1, batch_size=256, dataset_size=60_000, epochs=3, sampling="random_allocation")
    (epoch, count), = m.parts
    assert epoch == RandomAllocation(ps.Gaussian(1.1), 234, 1) and count == 3


def test_participations_beyond_steps_are_refused_by_name():
    with pytest.raises(ValueError, match="participations"):
        ps.Gaussian(1.0).random_allocation(steps=3, participations=4)
    with pytest.raises(ValueError, match="Gaussian"):
        ps.Laplace(1.0).random_allocation(steps=3)


def test_other_accountants_refuse_the_allocation_by_name():
    m = ps.Gaussian(1.0).random_allocation(steps=3)
    assert "RandomAllocation" in (ps.accounting.get_accountant("pld").supports(m) or "")
    with pytest.raises(UnsupportedMechanismError):
        ps.privacy_profile(ps.Gaussian(1.0).poisson_subsample(0.1), accountant="allocation")


def test_certificate_and_risk_accept_the_allocation():
    m = ps.Gaussian(1.1).random_allocation(steps=100).compose(60)
    cert = ps.certify(m, ps.Geometric(10), 1e-5)
    assert math.isfinite(cert.epsilon) and cert.epsilon > ps.privacy_profile(m).epsilon(1e-5)
    assert 0 < ps.risk(m).tpr(1e-3) <= 1


def test_fixed_bins_two_cycles_match_one_allocation_at_sigma_over_root_two():
    # the 2 x 2 outputs of t = 2 bins over E = 2 cycles (Monte Carlo, Hoeffding at 1e-6) against the exact
    # quadrature of one allocation at sigma / sqrt(2): the sufficiency argument of docs/trainers.md
    sigma, eps, n, level = 1.0, 0.3, 1_000_000, 1e-6
    rng = np.random.default_rng(7)
    columns = [np.exp((rng.standard_normal(n) + rng.standard_normal(n)) / sigma - 1 / sigma ** 2) for _ in range(2)]
    estimate = float(np.mean(np.maximum(1 - math.exp(eps) * (columns[0] + columns[1]) / 2, 0.0)))
    exact = converged_delta(sigma / math.sqrt(2), 2, eps, "add")
    assert abs(estimate - exact) <= math.sqrt(math.log(2 / level) / (2 * n))


def test_balls_in_bins_example_reuses_one_allocation_and_tunes():
    import importlib.util
    import pathlib

    path = pathlib.Path(__file__).resolve().parents[1] / "examples" / "balls_in_bins_numpy.py"
    spec = importlib.util.spec_from_file_location("balls_in_bins_numpy", path)
    assert spec is not None and spec.loader is not None
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    balls_in_bins, one_run, synthetic, tune = example.balls_in_bins, example.one_run, example.synthetic, example.tune
    bins = balls_in_bins(1000, 20, np.random.default_rng(1))
    assert np.array_equal(np.sort(np.concatenate(bins)), np.arange(1000))  # each record in exactly one bin
    assert (RandomAllocation(ps.Gaussian(1.1 / math.sqrt(5)), 20, 1), 1) in one_run().parts  # one allocation
    result = tune(synthetic(200, 5, 0), k=ps.Geometric(2), seed=3)
    assert result.certificate.epsilon == pytest.approx(ps.certify(one_run(), ps.Geometric(2), 1e-5).epsilon)


def test_calibrate_noise_meets_the_target_under_random_allocation():
    schedule = dict(batch_size=256, dataset_size=60_000, epochs=5, sampling="random_allocation")
    sigma = ps.calibrate_noise(2.0, 1e-5, **schedule)
    eps = ps.privacy_profile(ps.dpsgd(noise_multiplier=sigma, **schedule)).epsilon(1e-5)
    assert 1.99 <= eps <= 2.0  # calibrated on the allocation itself (234 steps an epoch), not on full batches
    assert ps.privacy_profile(ps.dpsgd(noise_multiplier=0.999 * sigma, **schedule)).epsilon(1e-5) > 2.0


def _stop_loss(s: float, a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """E[(Y - a)_+] and E[(a - Y)_+] of the lognormal term Y = exp(s Z - s^2 / 2) (closed forms, mpmath)."""
    import mpmath

    def one(x: float) -> tuple[float, float]:
        z = (mpmath.log(x) + s * s / 2) / s
        cdf, cdf_shift = mpmath.ncdf(z), mpmath.ncdf(z - s)
        return float((1 - cdf_shift) - x * (1 - cdf)), float(x * cdf - cdf_shift)

    pairs = [one(float(x)) for x in a]
    return np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs])


@settings(max_examples=12, deadline=None)
@given(sigma=st.floats(0.5, 3.0), points=st.lists(st.floats(0.15, 6.0), min_size=3, max_size=6),
       dominated_mesh=st.booleans())
def test_term_contraction_lies_below_the_lognormal_term_in_both_convex_orders(sigma, points, dominated_mesh):
    # the lower law's building block: rounded down, below the term in the increasing convex order (stop-loss
    # transform below); rounded up, in the decreasing one (put transform below); and close to it (tight), on the
    # term's sd-based mesh and on the dominated law's own (twice as coarse)
    mesh = epoch_meshes(sigma, 10)
    s, g = mesh.s, (lower_meshes(sigma, 10).g if dominated_mesh else base_mesh(mesh.sd))
    a = np.array(points)
    stop, put = _stop_loss(s, a)
    down = term_contraction(s, g, mesh.n_bins, False, 2e9)
    y = np.arange(down.size) * g
    ours_stop = np.array([np.sum(down * np.maximum(y - x, 0.0)) for x in a])
    assert np.all(ours_stop <= stop * (1 + 1e-12))
    # a contraction onto the mesh: a gap of second order. A cell of width w holding mass m moves the stop-loss
    # transform by at most m w / 4, and a merged cell spans at most two mesh cells: f(a) (2g)^2 / 4
    z = (np.log(a) + s * s / 2) / s
    slack = np.exp(-z * z / 2) / math.sqrt(2 * math.pi) / (s * a) * g * g + 1e-3 * g * g
    assert np.all(ours_stop >= stop - slack)
    up = term_contraction(s, g, mesh.n_bins, True, 2e9)
    ours_put = np.array([np.sum(up * np.maximum(x - y, 0.0)) for x in a])
    assert np.all(ours_put <= put * (1 + 1e-12))
    assert np.all(ours_put >= put - slack)
    assert down.sum() <= 1 and up.sum() <= 1
    # the mean E Y = 1 is kept but for a second-order gap, next to 0 as well (a head cell cut from 0: cell [0, g/2]
    # moved to 0 would lose a first-order 2e-3 at sigma 0.8 on a mesh of 1/8)
    assert 1 - float(np.sum(down * y)) <= 1e-3 * g * g


@pytest.mark.parametrize("sigma, steps, epochs", [(2.0, 3, 1), (1.1, 100, 3)])
def test_bracket_is_the_intersection_of_every_end_even_where_the_gaussian_bracket_answers(sigma, steps, epochs):
    # the intersected curve asks the Gaussian bracket only where it could win: the answer is still the smallest
    # upper end and the largest lower end of all curves, for scalars and arrays, and below the tight end's floor
    # (delta 1e-16, 1e-20: the tight end is infinite there) the Gaussian bracket answers
    profile = ps.privacy_profile(ps.Gaussian(sigma).random_allocation(steps=steps).compose(epochs),
                                 accountant="allocation")
    for curve in profile.curves:
        for delta in (1e-5, np.array(1e-7), np.array([1e-3, 1e-8, 1e-16, 1e-20])):
            low, up = curve.epsilon_bounds(delta)
            every_up = np.min([c.epsilon_upper(delta) for c in curve.curves], axis=0)
            dominated = curve.lower.curve(curve.index)  # the dominated laws' end (built on this first lower query)
            every_low = np.max([c.epsilon_bounds(delta)[0] for c in curve.curves + (dominated,)], axis=0)
            assert np.shape(up) == np.shape(every_up) and np.shape(low) == np.shape(every_low)
            assert np.array_equal(up, every_up) and np.array_equal(low, every_low)
        gaussian = curve.curves[-1].epsilon_upper(np.array([1e-16, 1e-20]))
        assert np.all(np.isfinite(gaussian))
        assert np.array_equal(curve.epsilon_upper(np.array([1e-16, 1e-20])), gaussian)
