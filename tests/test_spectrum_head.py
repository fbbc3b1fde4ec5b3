"""`spectrum_head`: the first entries of an n-point real DFT of a short pmf (direct sums, within their bound), and a
proven length past which every entry is below a level, checked against the full FFT and closed forms."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.fft

from privselect.accounting.prv.interface import FFT_STAGE_ULPS
from privselect.selection.bounds.block_sums import spectrum_prefix
from privselect.selection.bounds.spectrum_head import direct_head, head_length, run_spectra

_U = 2.0**-53


def _gaussian_pmf(size: int, sd: float) -> np.ndarray:
    t = np.arange(size) - size // 2
    q = np.exp(-0.5 * (t / sd) ** 2)
    return q / q.sum()


def _long_double_dft(q: np.ndarray, n: int, ms: np.ndarray) -> np.ndarray:
    """sum_t q_t e^(-2 pi i m t / n) in long double (exact integer exponents mod n)."""
    t = np.arange(q.size, dtype=np.int64)
    two_pi = 8 * np.arctan(np.longdouble(1))
    out = []
    for m in ms:
        angle = two_pi * ((int(m) * t) % n).astype(np.longdouble) / n
        qq = q.astype(np.longdouble)
        out.append(complex(float(np.sum(qq * np.cos(angle))), -float(np.sum(qq * np.sin(angle)))))
    return np.array(out)


@pytest.mark.parametrize(("size", "n", "head"), [(3000, 1_000_003, 700), (1, 64, 5), (37, 4096, 1), (5000, 8_100_000, 579)])
def test_direct_head_is_the_dft_within_its_bound(size, n, head):
    q = np.random.default_rng(size).dirichlet(np.ones(size))
    got, bound = direct_head(q, n, head)
    assert got.shape == (head,)
    ms = np.unique(np.linspace(0, head - 1, 40).astype(int))
    assert np.max(np.abs(got[ms] - _long_double_dft(q, n, ms))) <= bound
    # within the n-point FFT's own componentwise bound of scipy's values too, and the bound is FFT-sized
    e_fft = FFT_STAGE_ULPS * _U * math.log2(n)
    assert np.max(np.abs(got - scipy.fft.rfft(q, n)[:head])) <= bound + e_fft
    assert bound <= 230 * _U  # at most the 8.1e6-point FFT's own bound


def test_head_length_proves_every_later_entry_below_the_level():
    q, count, n = _gaussian_pmf(601, 50.0), 100, 200_000
    level = math.log(1e-60)
    k = head_length([(count, q)], n, level)
    assert k is not None
    full = scipy.fft.rfft(q, n)
    e_fft = FFT_STAGE_ULPS * _U * math.log2(n)
    # the exact |P| is at most the computed one + e: every entry from k on is below the level
    assert np.all(count * np.log(np.abs(full[k:]) + e_fft) <= level)
    # and k is not far past the last entry above it (closed form: |P(theta)| ~ exp(-sd^2 theta^2 / 2))
    last = int(np.flatnonzero(count * np.log(np.abs(full) + e_fft) > level)[-1])
    theta = math.sqrt(2 * -level / count) / 50.0
    assert abs(last - theta * n / (2 * math.pi)) <= 0.01 * last
    assert last < k <= 1.2 * last  # tightness (a cost, not soundness): the cells and their slack


def test_head_length_sums_the_components():
    laws = [(60, _gaussian_pmf(401, 30.0)), (40, _gaussian_pmf(801, 80.0))]
    n, level = 100_000, math.log(1e-60)
    k = head_length(laws, n, level)
    e_fft = FFT_STAGE_ULPS * _U * math.log2(n)
    total = sum(c * np.log(np.abs(scipy.fft.rfft(q, n)) + e_fft) for c, q in laws)
    assert k is not None and np.all(total[k:] <= level)
    assert int(np.flatnonzero(total > level)[-1]) < k


def test_head_length_keeps_a_lattice_peak_at_pi():
    # q on cells 0 and 2: |P(theta)| = |cos theta| is 1 again at theta = pi, so nothing can be dropped
    q = np.array([0.5, 0.0, 0.5])
    n = 4096
    assert head_length([(1, q)], n, math.log(0.9)) == n // 2 + 1


def test_run_spectra_direct_and_fallback():
    q, count, n = _gaussian_pmf(601, 50.0), 100, 200_000
    level, e_fft = math.log(1e-60), FFT_STAGE_ULPS * _U * math.log2(n)
    spectra, k, e = run_spectra([(count, q)], n, e_fft, level)
    assert e >= e_fft and spectra[0][0] == count and spectra[0][1].size == k
    np.testing.assert_allclose(spectra[0][1], scipy.fft.rfft(q, n)[:k], rtol=0, atol=2 * e)
    # long double: the n-point FFT, and the prefix as spectrum_prefix finds it
    spectra, k, e = run_spectra([(count, q)], n, e_fft, level, np.longdouble)
    assert e == e_fft and spectra[0][1].size == n // 2 + 1
    assert k == spectrum_prefix(spectra, e_fft, level)
