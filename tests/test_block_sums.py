"""`block_sums` gives the block sums of the inverse real FFT of a short spectrum, within `block_sum_error`."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.fft

from privselect.selection.bounds.block_sums import block_sum_error, block_sums, spectrum_prefix


def _spectrum(size: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.exp(-np.arange(size) / max(size / 5, 1)) * np.exp(1j * rng.uniform(0, 2 * np.pi, size))


def _reference(spectrum: np.ndarray, n: int, block: int) -> np.ndarray:
    """irfft on all n points (the spectrum padded with zeros), then the sums of `block` cells (zeros past n)."""
    x = scipy.fft.irfft(np.concatenate([spectrum, np.zeros(n // 2 + 1 - spectrum.size)]), n)
    return np.concatenate([x, np.zeros((-n) % block)]).reshape(-1, block).sum(axis=1)


@pytest.mark.parametrize(("n", "block", "size"), [(1000, 7, 30), (1024, 16, 3), (999, 1000, 5), (30, 1, 15),
                                                  (200_000, 102, 540), (4096, 64, 1)])
def test_block_sums_are_the_inverse_fft_block_sums_within_the_error_bound(n, block, size):
    spectrum = _spectrum(size, n)
    got, want = block_sums(spectrum, n, block), _reference(spectrum, n, block)
    assert got.shape == want.shape
    # the reference carries pocketfft's rounding too (far below this bound at these sizes)
    assert np.sum(np.abs(got - want)) <= block_sum_error(spectrum, n, block)


def test_block_sums_of_a_constant_spectrum_entry_are_the_block_lengths_over_n():
    n, block = 100, 30  # blocks of 30, 30, 30 and 10 cells; X_0 = 5 + 7i: each cell is Re X_0 / n
    got = block_sums(np.array([5.0 + 7.0j]), n, block)
    np.testing.assert_allclose(got, 5.0 * np.array([30, 30, 30, 10]) / n, rtol=1e-15)


def test_block_sums_refuse_a_spectrum_reaching_the_nyquist_entry():
    with pytest.raises(ValueError, match="Nyquist"):
        block_sums(np.ones(6), 10, 2)


@pytest.mark.parametrize("counts", [(300,), (200, 50), (1, 1)])
def test_spectrum_prefix_keeps_every_entry_above_the_level_and_is_short_for_smooth_laws(counts):
    n, e, level = 1 << 16, 1e-14, np.log(1e-60)
    cells = np.arange(400)
    widths = [20 + 10 * i for i in range(len(counts))]  # discretised Gaussians
    pmfs = [np.exp(-0.5 * ((cells - 200) / w) ** 2) / (np.sqrt(2 * np.pi) * w) for w in widths]
    spectra = [(c, scipy.fft.rfft(p, n)) for c, p in zip(counts, pmfs)]
    total = sum(c * np.log(np.abs(spec) + e) for c, spec in spectra)
    above = np.flatnonzero(total > level)
    prefix = spectrum_prefix(spectra, e, level)
    assert above.size and prefix >= above[-1] + 1
    assert prefix <= 2 * (above[-1] + 1) + 16  # a necessary condition close to the exact one for a smooth law
