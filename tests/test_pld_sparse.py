"""pld's composition of nearly-one-atom laws by their truncated binomial expansion (`pld.sparse`): its l1 bound
holds against exact circular convolutions (40-digit direct convolutions, and 50-digit binomial sums carried to
negligible terms for a million-fold sum), its tail bound against the exact dropped mass, and it declines laws it
does not fit."""

from __future__ import annotations

import mpmath
import numpy as np
import pytest

from privselect.accounting.pld import sparse
from privselect.accounting.pld.compose import _compose_long
from privselect.accounting.pld.sparse import compose_sparse, dropped_mass


def _law(points: dict[int, float], size: int) -> np.ndarray:
    masses = np.zeros(size)
    for i, w in points.items():
        masses[i] = w
    return masses


def _mp_power(masses: np.ndarray, k: int) -> dict[int, mpmath.mpf]:
    """The k-fold (linear) convolution by k direct convolutions in mpmath, on the law's nonzero points."""
    base = [(int(i), mpmath.mpf(float(masses[i]))) for i in np.flatnonzero(masses)]
    out = {0: mpmath.mpf(1)}
    for _ in range(k):
        nxt: dict[int, mpmath.mpf] = {}
        for a, va in out.items():
            for b, vb in base:
                nxt[a + b] = nxt.get(a + b, 0) + va * vb
        out = nxt
    return out


def _folded(points: dict[int, mpmath.mpf], n: int) -> list:
    folded = [mpmath.mpf(0)] * n
    for i, v in points.items():
        folded[i % n] += v
    return folded


def _l1(pmf: np.ndarray, exact: list) -> mpmath.mpf:
    def exactly(x: np.longdouble) -> mpmath.mpf:  # a long double as high + low doubles, both exact
        high = float(x)
        return mpmath.mpf(high) + mpmath.mpf(float(x - np.longdouble(high)))

    return mpmath.fsum(abs(exactly(p) - e) for p, e in zip(pmf, exact))


def test_dropped_mass_bounds_the_exact_binomial_tail():
    mpmath.mp.dps = 50
    for k, m, p_c in [(10**6, 8.7e-14, 1 - 8.7e-14), (40, 2e-5, 0.99998), (5000, 1e-6, 0.999), (7, 0.3, 0.7)]:
        for order in range(0, 6):
            exact = mpmath.fsum(mpmath.binomial(k, j) * mpmath.mpf(p_c) ** (k - j) * mpmath.mpf(m) ** j
                                for j in range(order + 1, min(k, order + 60) + 1))
            assert exact <= dropped_mass(k * m, order)
    assert dropped_mass(0.0, 0) == 0.0
    assert dropped_mass(3.0, 0) == float("inf")  # x >= J + 2: no geometric tail


def test_few_fold_sum_with_wrap_around_is_within_its_bound_of_the_exact_circular_convolution():
    mpmath.mp.dps = 40
    masses = _law({3: 1 - 1.7e-5, 0: 1e-5, 5: 4e-6, 9: 3e-6}, 12)
    k, n = 40, 64  # the linear sum spans 0..360: it wraps five times
    result = compose_sparse([(masses, 0, k)], n)
    assert result is not None
    pmf, fp = result
    assert pmf.size == n
    error = _l1(pmf, _folded(_mp_power(masses, k), n))
    assert error <= fp
    assert fp < 1e-17  # k m = 7e-4 asks for 6 terms; the rest below 1e-20


def test_two_sparse_parts_compose_within_the_bound_of_their_exact_convolution():
    mpmath.mp.dps = 40
    first = _law({2: 1 - 3e-6, 0: 2e-6, 7: 1e-6}, 8)
    second = _law({1: 0.99999, 4: 1e-5}, 5)
    n = 128
    result = compose_sparse([(first, 0, 20), (second, 0, 9)], n)
    assert result is not None
    pmf, fp = result
    a, b = _mp_power(first, 20), _mp_power(second, 9)
    exact = {}
    for i, va in a.items():
        for j, vb in b.items():
            exact[i + j] = exact.get(i + j, 0) + va * vb
    assert _l1(pmf, _folded(exact, n)) <= fp
    assert fp < 1e-17


def test_million_fold_rarely_sampled_law_is_within_its_bound_of_the_full_binomial_sum():
    # the shape of the optimistic add law at q = 1e-6: 1 - 8.7e-14 on one point, the rest on a few
    mpmath.mp.dps = 50
    rest = {0: 3e-14, 17: 2e-14, 40: 1.5e-14, 311: 1e-14, 1000: 1.2e-14}
    atom = 1 - sum(rest.values())
    masses = _law({**rest, 500: atom}, 1001)
    k, n = 10**6, 1 << 12
    result = compose_sparse([(masses, 0, k)], n)
    assert result is not None
    pmf, fp = result
    # exact: every binomial term up to j = 6 (the terms beyond carry < (k m)^7 / 7! < 1e-52), r^{*j} in mpmath
    r = {i: mpmath.mpf(w) for i, w in rest.items()}
    power = {0: mpmath.mpf(1)}
    exact = [mpmath.mpf(0)] * n
    for j in range(7):
        if j:
            nxt: dict[int, mpmath.mpf] = {}
            for a, va in power.items():
                for b, vb in r.items():
                    nxt[a + b] = nxt.get(a + b, 0) + va * vb
            power = nxt
        weight = mpmath.binomial(k, j) * mpmath.mpf(atom) ** (k - j)
        for i, v in power.items():
            exact[(i + (k - j) * 500) % n] += weight * v
    assert _l1(pmf, exact) <= fp
    assert fp < 1e-17
    # and the long-double FFT of the whole window agrees within the two bounds (its own is ~1e-10 here)
    pmf_long, fp_long = _compose_long([(masses, 0, k)], n)
    assert float(np.sum(np.abs(pmf - pmf_long))) <= fp + fp_long


def test_charged_tail_covers_the_terms_dropped_under_a_loose_target(monkeypatch):
    # with a target of 1e-6 the expansion stops early: the dropped terms dominate the error, and the bound holds
    mpmath.mp.dps = 40
    monkeypatch.setattr(sparse, "SPARSE_TAIL", 1e-6)
    masses = _law({3: 1 - 2e-3, 0: 1.5e-3, 6: 5e-4}, 7)
    k, n = 12, 128
    result = compose_sparse([(masses, 0, k)], n)
    assert result is not None
    pmf, fp = result
    error = _l1(pmf, _folded(_mp_power(masses, k), n))
    assert 1e-9 < error <= fp  # the truncation is visible, and charged
    assert fp < 1e-5


@pytest.mark.parametrize("masses, k", [
    (np.full(100, 0.01), 10),  # more than SPARSE_POINTS nonzero points
    (_law({0: 0.9, 1: 0.1}, 2), 1000),  # k m = 100: no short expansion
    (np.zeros(5), 3),  # no mass
])
def test_laws_without_a_short_expansion_are_declined(masses, k):
    assert compose_sparse([(masses, 0, k)], 256) is None
