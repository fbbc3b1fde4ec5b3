"""The default's bracket at tiny delta on long subsampled runs, against an independent reference: an
exponentially tilted FFT (``tests/support/tilted.py``: numpy and scipy only), whose relative error at
delta ~ 1e-11 does not depend on a floating-point floor. dp-accounting's PLD is no reference there: its
double-precision FFT carries ~1e-16 of absolute error per bucket, and at 81,469 steps its eps(7.16e-12)
moves between 25.22 and 32.5 with the mesh and the tail truncation.

Sampling without replacement is read as Zhu, Dong, Wang 2022, Thm 11(2): Poisson subsampling of the
base's replace-one pair, Gaussian(s) -> mu = 2 / s (``SampledWithoutReplacement``), certified for add/remove
neighbours of the full data set."""

import math

import numpy as np
import pytest
from scipy.special import log_ndtr

import privselect as ps
from tests.support.tilted import subsampled_gaussian_log_delta


def test_tilted_reference_matches_the_gaussian_closed_form_at_tiny_delta():
    # q = 1: 1000 Gaussian(10) steps are mu-GDP with mu = sqrt(1000) / 10 (Dong, Roth, Su 2022, Cor. 2)
    eps = np.array([20.0, 25.0, 30.0])
    mu = math.sqrt(1000) / 10
    upper, lower = log_ndtr(mu / 2 - eps / mu), log_ndtr(-mu / 2 - eps / mu)
    exact = upper + np.log1p(-np.exp(eps + lower - upper))  # delta from 4e-7 down to 4e-16
    ours = subsampled_gaussian_log_delta(10.0, 1.0, 1000, eps, h=1e-4)
    assert np.all(np.abs(ours - exact) < 1e-5)


@pytest.mark.slow
def test_lower_end_of_a_long_without_replacement_run_at_tiny_delta_is_proven_by_the_reference():
    # The sweep's case: WOR Gaussian(0.6564), q = 6.80e-5, T = 81,469, eps(7.16e-12). The default's lower
    # end (25.257 then, 25.2645 now) lay above dp-accounting's pessimistic PLD (24.316).
    noise, rate, steps, delta = 0.6564, 6.80e-5, 81_469, 7.16e-12
    low, up = ps.privacy_profile(ps.Gaussian(noise).sample_without_replacement(rate).compose(steps)).epsilon_bounds(delta)
    # the add direction's loss is at most -T log(1 - q) = 5.5 < low: its delta is 0 there, remove decides
    assert -steps * math.log1p(-rate) < low
    ref = np.exp(subsampled_gaussian_log_delta(noise / 2, rate, steps, np.array([24.316, low, up]), h=2e-4))
    # measured: 2.08e-11, 7.55e-12, 7.05e-12 (halving h moves them by < 3e-4 relative, so a 1% margin is 30 times
    # the reference's own error; the upper end, 25.3274, is 0.25% above the lower end)
    assert ref[1] >= 1.02 * delta  # the true eps(delta) lies above our lower end ...
    assert ref[2] <= delta / 1.01  # ... and below our upper end
    assert ref[0] > 2 * delta  # the peer's 24.316 is below the true eps: its side was wrong
    assert up - low <= 0.005 * up


@pytest.mark.slow
def test_delta_bracket_of_a_very_long_without_replacement_run_contains_the_reference():
    # The sweep's case: WOR Gaussian(1.4286), q = 7.61e-4, T = 405,991, the default's delta lower end
    # (7.74e-11) above dp-accounting's pessimistic PLD (4.80e-11) near eps = 8.3. Measured: the PLD at mesh 1e-4
    # gives 1.39e-10, 8.24e-11, 4.72e-11 at these eps, below the reference (1.47e-10, 9.08e-11, 5.60e-11): its side was wrong.
    noise, rate, steps = 1.4286, 7.61e-4, 405_991
    eps = np.array([8.2, 8.3, 8.4])
    low, up = ps.privacy_profile(ps.Gaussian(noise).sample_without_replacement(rate).compose(steps)).delta_bounds(eps)
    # the reference's mesh error shrinks like h^2 (5.79, 5.65, 5.61 e-11 at 8.4 for h = 2, 1, 0.5 e-4):
    # Richardson's extrapolation of the two finer ones, the add direction (50x smaller) at the coarse one
    fine, finer = (subsampled_gaussian_log_delta(noise / 2, rate, steps, eps, h=h) for h in (1e-4, 5e-5))
    remove = (4 * np.exp(finer) - np.exp(fine)) / 3
    add = np.exp(subsampled_gaussian_log_delta(noise / 2, rate, steps, eps, direction="add", h=2e-4))
    assert np.all(add < 0.1 * remove)
    ref = np.maximum(remove, add)
    assert np.all(low <= ref / 1.01) and np.all(ref * 1.01 <= up)
    assert np.all(up - low <= 0.06 * up)
