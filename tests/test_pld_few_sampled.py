"""pld on few sampled steps (q T <= 1: most steps' loss sits near 0, a record is sampled in about one step):
its certified bracket against independent references.

* Lower reference, closed form: for the remove direction, the event A = {some coordinate x_i > tau} gives
  delta(eps) >= P^T(A) - e^eps Q^T(A) (any event lower-bounds the hockey-stick divergence), with
  P^T(A) = 1 - (1 - p)^T, p = (1 - q) Phi(-tau / sigma) + q Phi(-(tau - 1) / sigma) and Q^T(A) the same with q = 0.
  Hence eps(delta) >= max_tau log((P^T(A) - delta) / Q^T(A)), computed in mpmath at 40 digits.
* Upper reference: dp-accounting's pessimistic (connect-the-dots) PLD, an upper bound on both directions' max.
"""

from __future__ import annotations

import numpy as np
import pytest

import privselect as ps
from tests.support.peers import Part, pld_of_parts


def event_lower_epsilon(noise: float, rate: float, steps: int, delta: float) -> float:
    """max over tau of log((P^T(A) - delta) / Q^T(A)), A = {max_i x_i > tau} (module docstring)."""
    mp = pytest.importorskip("mpmath")
    mp.mp.dps = 40
    best = -mp.inf
    for tau in np.linspace(2.0, 12.0, 401):
        t = mp.mpf(float(tau))
        p_q = mp.ncdf(-t / noise)
        p_p = (1 - rate) * p_q + rate * mp.ncdf(-(t - 1) / noise)
        big_p, big_q = -mp.expm1(steps * mp.log1p(-p_p)), -mp.expm1(steps * mp.log1p(-p_q))
        if big_p > delta:
            best = max(best, mp.log((big_p - delta) / big_q))
    return float(best)


def test_event_lower_reference_is_the_gaussian_bound_without_subsampling():
    # q = 1, one step: the best threshold test of N(1, s^2) against N(0, s^2) gives eps within 1% of the
    # Gaussian mechanism's exact eps(delta) (Balle, Wang 2018), and never above it.
    from scipy.optimize import brentq
    from scipy.stats import norm

    mu, delta = 1.0, 1e-5
    exact = brentq(lambda e: norm.cdf(-e / mu + mu / 2) - np.exp(e) * norm.cdf(-e / mu - mu / 2) - delta, 0, 20)
    reference = event_lower_epsilon(1.0, 1.0, 1, delta)
    assert exact * 0.99 <= reference <= exact


def _bracket(noise: float, rate: float, steps: int, delta: float):
    profile = ps.privacy_profile(ps.Gaussian(noise).poisson_subsample(rate).compose(steps), accountant="pld")
    remove = next(c for c in profile.curves if c.direction == "remove")
    low, up = (float(x) for x in profile.epsilon_bounds(delta))
    return low, up, float(remove.epsilon_bounds(delta)[1])


def test_few_sampled_bracket_lies_between_event_bound_and_dp_accountings_pessimistic_pld():
    pytest.importorskip("dp_accounting")
    noise, rate, steps, delta = 1.0, 1e-5, 100_000, 1e-8  # q T = 1
    low, up, remove_up = _bracket(noise, rate, steps, delta)
    assert remove_up >= event_lower_epsilon(noise, rate, steps, delta)
    peer = float(pld_of_parts((Part("gaussian", noise, rate, steps),), 3e-6).get_epsilon_for_delta(delta))
    assert low <= peer
    assert up <= peer  # connect-the-dots at the automatic mesh is at least as tight as dp-accounting's at 3e-6
    assert 0 < low <= up


@pytest.mark.slow
@pytest.mark.parametrize("steps, slack", [(100_000, 1.02), (1_000_000, 1.05)])
def test_few_sampled_bracket_is_tight_against_the_event_bound_at_q_1e_6(steps, slack):
    # sigma 0.6, q = 1e-6, delta = 1e-8. T = 1e5 (q T = 0.1): a single step's tail decides eps, so the threshold
    # event is nearly optimal and pins the true eps from below (the upper end within 2% of it); at T = 1e6
    # (q T = 1) it is looser (5%). With no grid point between the support's edge log(1 - q) and 0 the optimistic
    # law collapsed every step onto 0 and the lower end was 0: now it is not far below the event bound (both are
    # lower bounds on the true eps), and dp-accounting's pessimistic PLD is above the upper end
    pytest.importorskip("dp_accounting")
    noise, rate, delta = 0.6, 1e-6, 1e-8
    low, up, remove_up = _bracket(noise, rate, steps, delta)
    reference = event_lower_epsilon(noise, rate, steps, delta)
    assert reference <= remove_up <= slack * reference
    peer = float(pld_of_parts((Part("gaussian", noise, rate, steps),), 1e-4).get_epsilon_for_delta(delta))
    assert up <= peer
    assert 0.98 * reference <= low <= up
    assert up - low <= 0.01 * up


def test_few_sampled_bracket_at_q_1e_6_is_within_the_auto_looseness_threshold():
    # sigma 1, q = 1e-6: the inverse subsampling map's backward error was a constant 16 ulps of 1, which at the
    # bulk of a step (density ~1/q) moved each step's delta by a relative 1% and left a 0.6% bracket at any mesh
    pytest.importorskip("dp_accounting")
    noise, rate, steps, delta = 1.0, 1e-6, 100_000, 1e-8
    low, up, _ = _bracket(noise, rate, steps, delta)
    peer = float(pld_of_parts((Part("gaussian", noise, rate, steps),), 3e-7).get_epsilon_for_delta(delta))
    assert 0 < low <= up <= peer
    assert up - low <= 0.004 * up


def test_few_sampled_bracket_at_q_1e_6_and_delta_1e_10_is_within_the_auto_looseness_threshold():
    # sigma 0.6, q = 1e-6, T = 1e5, delta = 1e-10: the far parts of the steps' spectra were float64 FFTs, whose
    # error (1e-13 per law, summed over the composed spectrum: 1.2e-12) was 1% of delta and left a 0.66% bracket
    # (so auto also ran PRV); in long double the bracket is the discretisation's and the FFT's inverse
    noise, rate, steps, delta = 0.6, 1e-6, 100_000, 1e-10
    low, up, remove_up = _bracket(noise, rate, steps, delta)
    assert event_lower_epsilon(noise, rate, steps, delta) <= remove_up
    assert 0 < low <= up
    assert up - low <= 0.004 * up
