"""pld's laws on a grid that is coarse where a step's mass is small (`discretise` with ``regions`` and ``stride``) and
the strided far part of its fast composition (`fast.strided_far_part`): the one-step laws still bracket the true
curve (its closed form from the loss's tails), and the far part is within its error bound of a 40-digit DFT."""

import numpy as np
import pytest

import privselect as ps
from privselect.accounting.pld.accountant import coarse_regions
from privselect.accounting.pld.discretise import discretise, grid_indices
from privselect.accounting.plrv import composed_losses


def test_grid_indices_are_every_point_inside_the_fine_region_and_every_stride_th_outside():
    index = grid_indices(1e-3, -0.1, 0.2, regions=((-0.01, 0.02, 1), (-0.05, 0.06, 4)), stride=16)
    assert index[0] == -100 and index[-1] == 200 and np.all(np.diff(index) > 0)
    assert np.array_equal(index[(index >= -10) & (index <= 20)], np.arange(-10, 21))
    middle = index[((index >= -50) & (index < -10)) | ((index > 20) & (index <= 60))]
    assert np.all(middle % 4 == 0) and middle.size == 10 + 10
    outer = index[((index > -100) & (index < -50)) | ((index > 60) & (index < 200))]
    assert np.all(outer % 16 == 0) and np.all(np.diff(index) <= 16)
    assert np.array_equal(grid_indices(1e-3, -0.1, 0.2), np.arange(-100, 201))


@pytest.mark.parametrize("direction", ["remove", "add"])
def test_laws_on_a_coarse_region_bracket_the_true_curve_at_and_between_grid_points(direction):
    loss = getattr(composed_losses(ps.Gaussian(0.6).poisson_subsample(1e-6))[0][0], direction)
    h = 2e-7
    lower_end, upper_end = (-1.0000005e-6, 0.9) if direction == "remove" else (-0.8, 1.0000005e-6)
    regions, stride = coarse_regions(loss, h, lower_end, upper_end)
    assert len(regions) == 2 and stride == 16
    law = discretise(loss, h, lower_end, upper_end, regions=regions, stride=stride)
    loc = (law.i0 + np.arange(law.upper.size)) * h
    assert np.count_nonzero(law.upper) < law.upper.size / 8  # most of the grid is skipped
    eps = np.concatenate([np.linspace(-2e-6, 3e-6, 301), np.geomspace(3e-6, 0.8, 400)]) + h / 3  # off the grid
    eps = eps if direction == "remove" else -eps[::-1]
    true = loss.inf_mass + loss.sf(eps) - np.exp(eps) * loss.sf_secondary(eps)
    assert np.all(law.upper >= 0) and np.all(law.lower >= 0)
    for masses, inf, sign in ((law.upper, law.upper_inf, 1.0), (law.lower, 0.0, -1.0)):
        live = np.flatnonzero(masses)
        weights = np.clip(1 - np.exp(eps[:, None] - loc[live][None, :]), 0, None)
        curve = weights @ masses[live] + inf
        assert np.all(sign * (curve - true) >= -1e-12 * true - 1e-18)
    assert abs(law.lower.sum() - 1.0) < 1e-12


@pytest.mark.parametrize("chunk", [1 << 16, 7])  # 7: one column of direct sums at a time, summed across chunks
def test_strided_far_part_is_within_its_error_bound_of_the_exact_dft(chunk, monkeypatch):
    mp = pytest.importorskip("mpmath")
    from privselect.accounting.pld import fast
    from privselect.accounting.pld.fast import strided_far_part

    monkeypatch.setattr(fast, "_DIRECT_CHUNK", chunk)

    mp.mp.dps = 40
    loss = composed_losses(ps.Gaussian(0.8).poisson_subsample(1e-2))[0][0].remove
    h = 1e-3
    stride = 8
    masses = discretise(loss, h, -2e-2, 2.0, regions=((-2e-2, 0.05, 1),), stride=stride).upper
    n, centre = 4096, int(np.argmax(masses))
    lo, hi = max(centre - 8, 0), centre + 9
    freqs = np.array([0, 1, 2, 5, 40, 700, 2048])
    result = strided_far_part(masses, lo, hi, centre, freqs, n)
    assert result is not None
    value, mass, bound = result
    far = [(i, mp.mpf(float(m))) for i, m in enumerate(masses) if not lo <= i < hi and m > 0]
    assert len({i % stride for i, _ in far}) > 1  # the fine region's far points are off the stride
    exact_mass = mp.fsum(m for _, m in far)
    assert abs(mass - float(exact_mass)) <= 1e-15 * mass

    def exactly(x: np.longdouble):  # a long double as high + low doubles, both exact
        high = float(x)
        return mp.mpf(high) + mp.mpf(float(x - np.longdouble(high)))

    for j, got, b in zip(freqs, value, bound):
        exact = mp.fsum(m * mp.expjpi(-2 * mp.mpf(int(j)) * (i - centre) / n) for i, m in far) - exact_mass
        assert abs(mp.mpc(exactly(got.real), exactly(got.imag)) - exact) <= b
    assert np.all(bound < 1e-16)
