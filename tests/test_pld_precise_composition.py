"""The precise composition (float64 forward FFTs, the amplified low frequencies recomputed in long double from
each law's mode with long-double far parts, a long-double inverse): its l1 bound holds against exact convolutions
and is far below the long-double FFT's k u_long bound on heavy-tailed few-fold sums."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy import special

from privselect.accounting.pld.compose import _compose_long
from privselect.accounting.pld.fast import _half_turn_sines, compose_fast

LONG_UNIT = float(np.finfo(np.longdouble).eps) / 2


@given(n=st.integers(2, 3_000_000), data=st.data())
@settings(max_examples=40, deadline=None)
def test_half_turn_sines_are_within_eight_long_double_ulps_of_the_true_sines(n, data):
    table = _half_turn_sines(n)
    assert table.size == n + 1
    idx = data.draw(st.lists(st.integers(1, n - 1), min_size=1, max_size=8)) if n > 1 else []
    mpmath.mp.dps = 40
    for i in idx:
        exact = mpmath.sin(mpmath.pi * i / n)
        high = float(table[i])
        got = mpmath.mpf(high) + mpmath.mpf(float(table[i] - np.longdouble(high)))  # exact: two doubles
        assert abs(got - exact) <= 8 * LONG_UNIT * exact, (n, i)
    assert table[0] == 0 and table[n] == 0


def _lognormal_term(s: float, g: float, points: int) -> np.ndarray:
    """Masses of a lognormal term (median e^{-s^2/2}, mean 1) on cells of width g (a heavy-tailed law)."""
    y = np.arange(points + 1) * g
    with np.errstate(divide="ignore"):
        z = (np.log(y) + s * s / 2) / s
    return np.diff(special.ndtr(z))


def _exact_circular_power(masses: np.ndarray, k: int, n: int) -> np.ndarray:
    """The k-fold circular convolution on n points by repeated direct convolutions in long double (rounding
    ~ k n u_long, far below the bounds compared against)."""
    base = np.bincount(np.arange(masses.size) % n, weights=masses, minlength=n).astype(np.longdouble)
    out = np.zeros(n, dtype=np.longdouble)
    out[0] = 1
    for _ in range(k):
        full = np.convolve(out, base)
        out = full[:n].copy()
        out[: full.size - n] += full[n:]
    return out


@pytest.mark.parametrize("s, k", [(1.25, 6), (0.9, 12)])
def test_precise_composition_is_within_its_bound_of_the_exact_convolution(s, k):
    masses = _lognormal_term(s, 1 / 16, 600)
    n = 2048
    result = compose_fast([(masses, 0, k)], n, precise=True)
    assert result is not None
    pmf, fp = result
    exact = _exact_circular_power(masses, k, n)
    error = float(np.sum(np.abs(pmf.astype(np.longdouble) - exact)))
    assert error <= fp
    assert fp < 1e-15


def test_precise_bound_is_far_below_the_long_double_ffts_on_a_thousand_fold_heavy_sum():
    masses = _lognormal_term(1.25, 1 / 16, 40_000)
    n = 1 << 19
    precise = compose_fast([(masses, 0, 1000)], n, precise=True)
    assert precise is not None
    (pmf, fp), (pmf_long, fp_long) = precise, _compose_long([(masses, 0, 1000)], n)
    assert float(np.sum(np.abs(pmf.astype(np.longdouble) - pmf_long))) <= fp + fp_long
    assert fp < fp_long / 10
    assert math.isclose(float(np.sum(pmf)), float(np.sum(masses)) ** 1000, rel_tol=1e-9)
