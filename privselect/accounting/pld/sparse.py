"""Composition of laws that are nearly one atom: the binomial expansion, truncated with a proven tail bound.

A law with mode c is p = p_c delta_c + r (r >= 0 on a few points, mass m). delta_c and r commute under
convolution, so its k-fold sum is the binomial expansion

    p^{*k} = sum_{j=0}^{k} C(k, j) p_c^{k-j} delta_{(k-j) c} * r^{*j},

and where k m is small its terms fall like (k m)^j / j!: with p_c <= 1 the terms j > J carry a mass at most
sum_{j>J} (k m)^j / j! <= (k m)^{J+1} / (J+1)! / (1 - k m / (J+2)) (C(k, j) <= k^j / j!, a geometric tail). The kept
terms are computed in long double on their few points (indices reduced mod n: the circular convolution) and the
parts convolved directly. Every entry is a sum of non-negative products, so its relative error is gamma_N =
N u / (1 - N u) for N the roundings (or the ulps of a log / exp, 4 each) on its longest path (Higham 2002, Sec. 3.1,
3.4), counted per level; the l1 bound is that relative error of the computed total plus the dropped terms' mass,
sum_i D_i prod_{l != i} (p_c + m)_l^{k_l}. The optimistic add-direction law of a rarely sampled step is one such
law (T = 1e6, q = 1e-6: 1 - 8.7e-14 on one point, the rest on 9), whose spectrum never decays: the float64 path
declines it and the long-double FFT on the whole window charged 1e-8; here 1e-18, in a few milliseconds.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

__all__ = ["compose_sparse", "SPARSE_POINTS", "SPARSE_TAIL"]

#: Most nonzero points of a law composed by its binomial expansion.
SPARSE_POINTS = 64
#: Largest mass of a law's dropped binomial terms (charged to the l1 bound).
SPARSE_TAIL = 1e-20
#: Highest power r^{*J} kept; a law whose tail needs more declines.
SPARSE_MAX_ORDER = 8
#: Most products of one sparse convolution (pairs of points); past it the composition declines.
SPARSE_PAIRS = 1 << 18
_LONG_UNIT = float(np.finfo(np.longdouble).eps) / 2
#: Smallest normal double: a computed product at least this has the relative rounding model in long double too.
_NORMAL = float(np.finfo(float).tiny)


def dropped_mass(x: float, order: int) -> float:
    """Upper bound on sum_{j > order} x^j / j! (x = k m >= 0): x^{J+1} / (J+1)! / (1 - x / (J+2)); inf where
    x >= J + 2 (module docstring)."""
    if x <= 0.0:
        return 0.0
    if x >= order + 2:
        return math.inf
    return math.exp((order + 1) * math.log(x) - math.lgamma(order + 2)) / (1 - x / (order + 2)) * (1 + 1e-12)


def _combine(index: np.ndarray, values: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray, int]:
    """(distinct indices mod n, the sum of the values at each, most summands of one sum) in long double."""
    index = index % n
    order = np.argsort(index, kind="stable")
    index, values = index[order], values[order]
    uniq, start = np.unique(index, return_index=True)
    sums = np.add.reduceat(values, start)
    counts = np.diff(np.append(start, index.size))
    return uniq, sums, int(counts.max())


def _convolve(a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray],
              n: int) -> tuple[np.ndarray, np.ndarray, int] | None:
    """The circular convolution of two sparse laws (indices, long-double values) and the roundings it adds on
    any entry's path (one product, the summands' sum); None past `SPARSE_PAIRS` or where a product is subnormal."""
    (ia, va), (ib, vb) = a, b
    if ia.size * ib.size > SPARSE_PAIRS:
        return None
    products = (va[:, None] * vb[None, :]).reshape(-1)
    if not np.all(products >= _NORMAL):
        return None
    index, values, most = _combine((ia[:, None] + ib[None, :]).reshape(-1), products, n)
    return index, values, most  # one product, most - 1 additions


def _expansion(masses: np.ndarray, k: int, n: int) -> tuple[np.ndarray, np.ndarray, float, float, float] | None:
    """(indices mod n, long-double values, roundings on any entry's path, dropped mass bound, bound on
    (p_c + m)^k) of one law's truncated k-fold expansion (module docstring); None where it does not apply."""
    idx = np.flatnonzero(masses)
    vals = masses[idx].astype(np.longdouble)
    centre = int(np.argmax(vals))
    p_c = float(vals[centre])
    if not 0.0 < p_c <= 1.0:
        return None
    r_idx, r_val = np.delete(idx, centre), np.delete(vals, centre)
    m = math.fsum(float(v) for v in r_val) * (1 + 4 * 2.0 ** -53)  # rounded up
    x = k * m * (1 + 4 * 2.0 ** -53)
    order = 0
    while order < k and dropped_mass(x, order) > SPARSE_TAIL:
        order += 1
        if order > SPARSE_MAX_ORDER:
            return None
    dropped = 0.0 if order >= k else dropped_mass(x, order)
    c = int(idx[centre])
    log_pc = np.log(np.longdouble(p_c))
    power: tuple[np.ndarray, np.ndarray] = (np.zeros(1, dtype=np.int64), np.ones(1, dtype=np.longdouble))
    power_err = 0.0  # roundings on r^{*j}'s paths
    coef = np.longdouble(1)
    pieces_i, pieces_v, worst = [], [], 0.0
    for j in range(order + 1):
        if j:
            step = _convolve(power, (r_idx % n, r_val), n)
            if step is None:
                return None
            power, power_err = (step[0], step[1]), power_err + step[2]
            coef = coef * np.longdouble(k - j + 1) / np.longdouble(j)
        z = np.longdouble(k - j) * log_pc
        # C(k, j): 2 j roundings; p_c^{k-j} = exp((k - j) log p_c): log within 4 ulps, the product 1, so the
        # exponent within 5.01 u |z|, and exp within 4 ulps of its value; the weight's product 1, each value's 1
        weight = coef * np.exp(z)
        if not float(weight) >= _NORMAL:
            return None
        values = weight * power[1]
        if not np.all(values >= _NORMAL):
            return None
        pieces_i.append((power[0] + (k - j) * c) % n)
        pieces_v.append(values)
        worst = max(worst, power_err + 2 * j + 4 + 5.01 * abs(float(z)) + 2)
    index, values, most = _combine(np.concatenate(pieces_i), np.concatenate(pieces_v), n)
    total = math.fsum([p_c, m]) * (1 + 2.0 ** -52)  # rounded up
    reach = 1.0 if total <= 1.0 else math.exp(k * math.log1p(total - 1.0) * (1 + 1e-12)) * (1 + 1e-12)
    return index, values, worst + most - 1, dropped, reach


def compose_sparse(parts: Sequence[tuple[np.ndarray, int, int]], n: int) -> tuple[np.ndarray, float] | None:
    """(long-double pmf of the circular convolution on n points, before the roll; its l1 error bound) where every
    law has at most `SPARSE_POINTS` nonzero points and its binomial expansion's tail fits `SPARSE_TAIL` within
    `SPARSE_MAX_ORDER` terms (module docstring), else None."""
    if not parts or any(np.count_nonzero(m) > SPARSE_POINTS or not np.any(m) for m, _, _ in parts):
        return None
    laws = []
    for masses, _, k in parts:
        law = _expansion(np.asarray(masses, dtype=float), int(k), n)
        if law is None:
            return None
        laws.append(law)
    index, values, roundings = laws[0][0], laws[0][1], laws[0][2]
    for law in laws[1:]:
        step = _convolve((index, values), (law[0], law[1]), n)
        if step is None:
            return None
        index, values, roundings = step[0], step[1], roundings + law[2] + step[2]
    reaches = [law[4] for law in laws]
    dropped = sum(law[3] * math.prod(reaches[:i] + reaches[i + 1:]) for i, law in enumerate(laws))
    bound = roundings * _LONG_UNIT
    if not bound < 0.01:
        return None
    pmf = np.zeros(n, dtype=np.longdouble)
    pmf[index] = values
    # sum |computed - exact| <= gamma_N sum exact <= gamma_N / (1 - gamma_N) sum computed, gamma_N <= 1.02 N u
    rounding = 1.05 * bound * float(np.sum(values))
    return pmf, (rounding + dropped) * (1 + 1e-12)
