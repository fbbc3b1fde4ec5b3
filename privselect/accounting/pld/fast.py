"""Composition by float64 FFTs, with the frequencies where powering amplifies their error recomputed in long
double relative to the mode of each law.

Powering a spectrum entry P^k multiplies its error by k |P|^{k-1} (mean value theorem): the componentwise
forward-FFT error e ||p||_1 (Higham 2002, Sec. 24.1; `FFT_STAGE_ULPS` per radix stage, as in `compose`) costs
k e in the composed law, which at k = 1e7 steps is 3e-10 even in long double. Here the float64 FFT answers every
frequency where that bound (with the powering's rounding) is below `ETA`; at the few others (the set J, low
frequencies), each law is centred at its mode c and P_j e^{i theta_j c} = M + D_j with

    D_j = sum_{|l - c| <= L} p_l (e^{-i theta_j (l - c)} - 1)  +  (e^{i theta_j c} F_j[far] - M_far),

the first sum direct in long double (terms with relative error <= 20 u: sines from `_half_turn_sines`, summed
with error <= (W - 1) u sum |t|, Higham 2002, Sec. 4.2; the angles reduced exactly in integers), the far part
(mass M_far) by its own long-double FFT (error `far_error` x M_far, 2^11 times below a float64 FFT's; on n / s points
where it lies on every s-th point but for a few, those summed directly: `strided_far_part`), and M = sum p
to long-double precision (`_exact_sum`). Then log P_j = log M + log1p(D_j / M) - i theta_j c,
whose error |dD| / (M |1 + D/M| - |dD|) is *relative* and small, so k |d log P| stays small where |P|^k is not:
the composed entry's error is (sum_i k_i |d log P_i|) e^{sum_i k_i |d log P_i|} |X^| plus its rounding. The output
error is ||error||_1 <= sqrt(2 sum_j err_j^2) + e ||X^||_2 (the inverse FFT's normwise bound, Higham 2002,
Thm 24.2, and Parseval).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import scipy.fft

from ...memo import quiet_cache

#: Per radix stage relative error of a pocketfft butterfly, in units of the unit roundoff (as `compose`).
FFT_STAGE_ULPS = 10.0
UNIT = 2.0 ** -53
LONG_UNIT = float(np.finfo(np.longdouble).eps) / 2
#: Per-entry error bound below which a frequency is taken from the float64 FFT alone.
ETA = 1e-24
#: The precise path's: its float64 frequencies add at most sqrt(n) x this to the l1 bound (1e-15 at n = 1e6).
PRECISE_ETA = 1e-18
#: Largest number of long-double terms (frequencies x window points) the direct sums may take.
DIRECT_BUDGET = 1e6
#: Target of a law's far-part error, summed over its count (k e_far M_far; `far_error`). With the far part in
#: float64 it was 1e-13 (k e M_far), whose window the budget capped at 1e5 steps of q = 1e-6: ~1e-13 per
#: frequency, 1.2e-12 in the composed law, 1% of delta at 1e-10 (a 0.66% bracket on eps); in long double
#: (2^11 times smaller ulps) the same window leaves ~1e-14. The precise path's (``precise=True``) is lower.
FAR_TARGET, PRECISE_FAR_TARGET = 1e-16, 1e-17
#: The precise path's direct-sum budget.
PRECISE_DIRECT_BUDGET = 1e6
_TWO_PI = 8 * np.arctan(np.longdouble(1))
#: Below this log, e^x is 0 in double precision (the smallest subnormal is e^-744.4).
_UNDERFLOW = -746.0


def _exact_sum(values: np.ndarray) -> tuple[float, np.longdouble]:
    """sum(values) as high + low (high a double, low long double) to about u^2: a pairwise tree of float64 additions whose rounding errors are
    recovered exactly (Knuth's TwoSum) and summed in long double (their own rounding is of order u^2)."""
    s = np.asarray(values, dtype=float)
    errors = np.longdouble(0)
    while s.size > 1:
        if s.size % 2:
            s = np.concatenate([s, [0.0]])
        a, b = s[0::2], s[1::2]
        t = a + b
        bp = t - a
        errors += np.sum(((a - (t - bp)) + (b - bp)).astype(np.longdouble))
        s = t
    return float(s[0]), errors


def far_error(n: int) -> float:
    """Bound on |F_j[far] e^{i theta_j c} - M_far - (its exact value)| per unit of far mass: the long-double FFT's
    componentwise error (`FFT_STAGE_ULPS` per radix stage, Higham 2002, Sec. 24.1), the rotation's (its angle
    2 pi r / n, r reduced exactly in integers, within 3 ulps of itself, i.e. 6 pi ulps; its complex exponential
    within 8), the complex product's (2 sqrt 2) and the difference's (2, of a value <= 2 M_far) and numpy's pairwise
    sum of M_far (non-negative terms; blocks of 128 summed 8-way: gamma_{log2 n + 24}, Higham 2002, Sec. 4.2), all
    in long-double ulps of M_far, rounded up."""
    log2n = math.log2(max(n, 2))
    return (FFT_STAGE_ULPS * log2n + 6 * math.pi + 8 + 6 + log2n + 24) * LONG_UNIT * (1 + 1e-9)


def far_part(masses: np.ndarray, lo: int, hi: int, centre: int, freqs: np.ndarray,
             n: int) -> tuple[np.ndarray, float]:
    """(e^{i theta_j c} F_j[far] - M_far at each of ``freqs``, M_far) for the masses outside [lo, hi), c = ``centre``,
    by a long-double FFT on n points; within `far_error` (n) x M_far of the exact value."""
    far = masses.astype(np.longdouble)
    far[lo:hi] = 0.0
    far_mass = np.sum(far)
    if not far_mass > 0:
        return np.zeros(freqs.size, dtype=np.clongdouble), 0.0
    spectrum = scipy.fft.rfft(far, n)[freqs]
    rot = np.exp(1j * (_TWO_PI * ((freqs.astype(np.int64) * centre) % n).astype(np.longdouble) / n))
    return spectrum * rot - far_mass, float(far_mass)


#: Largest number of long-double terms (frequencies x points) of a strided far part's direct sums (`strided_far_part`).
STRIDED_DIRECT_BUDGET = 2e6
#: Terms (frequencies x points) of `strided_far_part`'s direct sums held at a time.
_DIRECT_CHUNK = 1 << 16
#: Strides tried by `strided_far_part`, largest first.
_STRIDES = (64, 32, 16, 8, 4, 2)


def strided_far_part(masses: np.ndarray, lo: int, hi: int, centre: int, freqs: np.ndarray,
                     n: int) -> tuple[np.ndarray, float, np.ndarray] | None:
    """(e^{i theta_j c} F_j[far] - M_far at each of ``freqs``, M_far, a bound on its error at each) as `far_part`,
    where the far masses (outside [lo, hi)) lie on one residue class r modulo a stride s dividing n but for a few
    (at most `STRIDED_DIRECT_BUDGET` / len(freqs); the laws of `discretise` with a coarse region); else None.

    The points l = r + s t contribute e^{-i theta_j r} G_{j mod n/s}, G the long-double FFT of their masses on n/s
    points (fewer radix stages than on n: within `far_error` (n) of their mass, as `far_part`), rotated by
    theta_j (c - r), the angle reduced exactly in integers. The others contribute
    sum_l p_l (e^{-i theta_j (l - c)} - 1) = sum_l -2 p_l sin^2(theta_j d_l / 2) - i p_l sin(theta_j d_l), d_l = l - c,
    in long double from `_half_turn_sines` (each term within 20 u, their sum within (W - 1) u sum |t|, Higham 2002,
    Sec. 4.2: the bound of `_accurate`'s direct sums, (W + 24) u sum |t|); the two parts' sum one more ulp."""
    far = np.asarray(masses, dtype=float)
    nz = np.flatnonzero(far)
    nz = nz[(nz < lo) | (nz >= hi)]
    if not nz.size:
        return np.zeros(freqs.size, dtype=np.clongdouble), 0.0, np.zeros(freqs.size)
    # one residue class mod 2 or more holds at most half the span (rounded up): a dense far part is decided here
    if (nz.size - (int(nz[-1] - nz[0]) + 2) // 2) * freqs.size > STRIDED_DIRECT_BUDGET:
        return None
    for stride in _STRIDES:
        if n % stride or stride * 4 > n:
            continue
        counts = np.bincount(nz % stride, minlength=stride)
        r = int(np.argmax(counts))
        if (nz.size - int(counts[r])) * freqs.size <= STRIDED_DIRECT_BUDGET:
            break
    else:
        return None
    on, off = nz[nz % stride == r], nz[nz % stride != r]
    m = n // stride
    j = freqs.astype(np.int64)
    coarse = np.zeros(m, dtype=np.longdouble)
    coarse[(on - r) // stride] = far[on]
    on_mass = np.sum(coarse)
    spectrum = scipy.fft.rfft(coarse, m)
    jj = j % m
    mirrored = jj > m // 2
    g = np.where(mirrored, np.conj(spectrum[np.where(mirrored, m - jj, 0)]), spectrum[np.where(mirrored, 0, jj)])
    rot = np.exp(1j * (_TWO_PI * ((j * (centre - r)) % n).astype(np.longdouble) / n))
    value = g * rot - on_mass
    error = np.full(freqs.size, far_error(n) * float(on_mass))
    if off.size:
        table = _half_turn_sines(n)
        re_sum = np.zeros(freqs.size, dtype=np.longdouble)
        im_sum = np.zeros(freqs.size, dtype=np.longdouble)
        im_abs = np.zeros(freqs.size, dtype=np.longdouble)
        width = max(1, _DIRECT_CHUNK // freqs.size)  # columns at a time: a few MB, whatever the budget
        for start in range(0, off.size, width):
            cols = off[start:start + width]
            turns = (j[:, None] * (cols - centre)[None, :]) % n
            turns = np.where(turns > n // 2, turns - n, turns)
            size = np.abs(turns)
            weight = far[cols].astype(np.longdouble)[None, :]
            re_t = table[size]
            np.multiply(re_t, re_t, out=re_t)
            np.multiply(re_t, -2 * weight, out=re_t)  # -2 p sin^2(theta d / 2) <= 0
            im_t = table[2 * size]
            np.negative(im_t, out=im_t, where=turns < 0)
            np.multiply(im_t, -weight, out=im_t)  # -p sin(theta d)
            re_sum += np.sum(re_t, axis=1)
            im_sum += np.sum(im_t, axis=1)
            im_abs += np.sum(np.abs(im_t), axis=1)
        value = value + (re_sum + 1j * im_sum)
        # each sum over the W = off.size terms in any order (by chunks): within (W - 1) u sum |t| (Higham 2002,
        # Sec. 4.2); sum |re_t| = -sum re_t (terms of one sign), within (W - 1) u of its computed value
        magnitude = -re_sum.astype(float) * (1 + 2 * off.size * LONG_UNIT) + im_abs.astype(float) * (
            1 + 2 * off.size * LONG_UNIT)
        error += (off.size + 24) * LONG_UNIT * magnitude
    error = (error + LONG_UNIT * (2 * float(on_mass) + np.abs(value).astype(float))) * (1 + 1e-12)
    return value, float(np.sum(far[nz].astype(np.longdouble))), error


def _window(masses: np.ndarray, centre: int, target: float, widest: int) -> int:
    """Smallest half-width L (a power of 2, <= widest) whose far mass is at most target (a choice only: the far
    part's mass and error are computed afterwards). The window's sums by slices: widest is a few hundred points
    where the direct sums' budget is shared by many frequencies, far fewer than a cumulative sum's."""
    total = float(np.sum(masses))
    half = 8
    while half < widest:
        inside = float(np.sum(masses[max(centre - half, 0):min(centre + half + 1, masses.size)]))
        if total - inside <= target:
            break
        half *= 2
    return min(half, widest)


def compose_fast(parts: Sequence[tuple[np.ndarray, int, int]], n: int,
                 trig: dict | None = None, precise: bool = False) -> tuple[np.ndarray, float] | None:
    """(pmf of the circular convolution on n points, before the roll; its l1 error bound), or None where the
    direct sums would exceed `DIRECT_BUDGET` or a law is longer than the window (then `compose` runs).

    ``precise``: the far parts' error aimed at `PRECISE_FAR_TARGET` (direct sums up to `PRECISE_DIRECT_BUDGET`), the
    float64 answer kept only below `PRECISE_ETA`, and the inverse FFT in long double (its normwise bound with the long-double unit), so
    the l1 bound is that of the recomputed low frequencies, not the float64 inverse's e ||X^||_2."""
    if any(m.size > n for m, _, _ in parts):
        return None
    log2n = math.log2(n)
    e_step = FFT_STAGE_ULPS * UNIT * log2n
    k_total = sum(k for _, _, k in parts)
    specs = [scipy.fft.rfft(m, n) for m, _, _ in parts]
    masses = [float(np.sum(m)) * (1 + 1e-12) for m, _, _ in parts]
    # float64 path: composed |X^| and its error bound at every frequency
    log_abs = np.zeros(n // 2 + 1)
    log_abs_err = np.zeros(n // 2 + 1)
    k_err = 0.0
    with np.errstate(divide="ignore"):
        for spec, mass, (_, _, k) in zip(specs, masses, parts):
            absval = np.abs(spec)
            log_abs += k * np.log(absval)
            log_abs_err += (k - 1) * np.log(absval + e_step * mass)
            k_err += k * e_step * mass
    # where both the modulus and its error term underflow (most frequencies of a long composition), the
    # composed entry is 0 with error 0: the phases and exponentials are taken only at the others
    live = np.flatnonzero((log_abs > _UNDERFLOW) | (log_abs_err + math.log(max(k_err, 1e-300)) > _UNDERFLOW))
    modulus = np.exp(log_abs[live])
    phase = sum(k * np.angle(spec[live]) for spec, (_, _, k) in zip(specs, parts))
    bound = np.zeros(n // 2 + 1)
    bound[live] = k_err * np.exp(log_abs_err[live]) + ((2 + math.pi) * k_total + 200) * 2 * UNIT * modulus
    accurate = np.flatnonzero(bound > (PRECISE_ETA if precise else ETA))
    composed = np.zeros(n // 2 + 1, dtype=complex)
    composed[live] = modulus * np.exp(1j * phase)
    err = bound.copy()
    if accurate.size:
        result = _accurate(parts, accurate, n, e_step, {} if trig is None else trig, precise)
        if result is None:
            return None
        composed[accurate], err[accurate] = result
    fp = math.sqrt(2.0 * float(np.sum(err ** 2)))
    # the inverse FFT: normwise stage errors (Higham 2002, Thm 24.2, per stage as `FFT_STAGE_ULPS`) give
    # ||error||_2 <= e ||x||_2 = e ||X||_2 / sqrt(n), so ||error||_1 <= sqrt(n) ||error||_2 <= e ||X||_2
    # (the long-double inverse: e and the output's rounding in the long-double unit)
    if precise:
        pmf = scipy.fft.irfft(composed.astype(np.clongdouble), n)
        inverse = FFT_STAGE_ULPS * LONG_UNIT * log2n + LONG_UNIT
    else:
        pmf = scipy.fft.irfft(composed, n)
        inverse = e_step + UNIT
    fp += inverse * math.sqrt(2.0 * float(np.sum(np.abs(composed) ** 2)))
    return pmf, fp


def _angles(j: np.ndarray, half: int, n: int, trig: dict) -> tuple[np.ndarray, np.ndarray]:
    """sin^2(theta_j m / 2) and sin(theta_j m), m = 1..half, in long double, with theta_j m reduced to (-pi, pi]
    exactly in integers; kept in ``trig`` for the next law on the same frequencies (the optimistic law after
    the pessimistic one)."""
    key = (n, half, j.tobytes())
    if key not in trig:
        r = (j[:, None] * np.arange(1, half + 1, dtype=np.int64)[None, :]) % n
        r = np.where(r > n // 2, r - n, r)
        table, size = _half_turn_sines(n), np.abs(r)
        trig.clear()  # one entry: the memory of one law's angles
        trig[key] = (table[size] ** 2, np.sign(r) * table[2 * size])
    return trig[key]


@quiet_cache(maxsize=1)  # shared by the laws of one composition; 16 n bytes held after it
def _half_turn_sines(n: int) -> np.ndarray:
    """sin(pi i / n), i = 0..n, in long double: for i = a B + b <= n / 2 (B ~ sqrt n), sin(pi a B / n) cos(pi b / n)
    + cos(pi a B / n) sin(pi b / n), two products of non-negative factors (angles in [0, pi / 2]) each within a few
    ulps, so each entry is within 8 ulps of its value (tested against mpmath): a direct-sum term, a squared sine
    times a mass sum, is then within 20 u (the bound `_accurate` counts); mirrored for i > n / 2."""
    half = n // 2
    block = max(int(math.isqrt(half + 1)), 1)
    step = (_TWO_PI / 2) / n
    coarse = step * (np.arange(half // block + 1) * block).astype(np.longdouble)
    fine = step * np.arange(block).astype(np.longdouble)
    head = (np.outer(np.sin(coarse), np.cos(fine)) + np.outer(np.cos(coarse), np.sin(fine))).reshape(-1)[:half + 1]
    return np.concatenate([head, head[: n - half][::-1]])


def _accurate(parts, freqs: np.ndarray, n: int, e_step: float, trig: dict, precise: bool):
    """(composed spectrum, error bound) at ``freqs`` from the centred long-double form (module docstring), each
    law's window widened until k x its far part's FFT error is at most `FAR_TARGET` (or the direct sums reach
    `DIRECT_BUDGET` terms; each far part by a long-double FFT, `far_part`); ``precise``: aimed at
    `PRECISE_FAR_TARGET`, within `PRECISE_DIRECT_BUDGET`."""
    budget_per_law = (PRECISE_DIRECT_BUDGET if precise else DIRECT_BUDGET) / (len(parts) * freqs.size)
    if budget_per_law < 64:
        return None
    log_abs = np.zeros(freqs.size, dtype=np.longdouble)
    phase = np.zeros(freqs.size, dtype=np.longdouble)
    turns = 0  # sum_i k_i c_i (mod n): the exact part of the phase, in units of 2 pi / n per frequency index
    k_dlog = np.zeros(freqs.size)
    rounding = np.zeros(freqs.size)
    j = freqs.astype(np.int64)
    e_far = far_error(n)
    for masses, _, k in parts:
        centre = int(np.argmax(masses))
        widest = int(max(8, (budget_per_law - 1) // 2))
        target = (PRECISE_FAR_TARGET if precise else FAR_TARGET) / max(k * e_far, 1e-300)
        half = _window(masses, centre, target, widest)
        lo, hi = max(centre - half, 0), min(centre + half + 1, masses.size)
        strided = strided_far_part(masses, lo, hi, centre, j, n)
        if strided is None:
            far_term, far_mass = far_part(masses, lo, hi, centre, j, n)
            far_err: float | np.ndarray = e_far * far_mass * (1 + 1e-12)
        else:
            far_term, far_mass, far_err = strided
        high, low = _exact_sum(masses[masses != 0])  # the zeros of a coarse region add nothing
        total = np.longdouble(high) + low
        log_total = np.log(np.longdouble(high)) + np.log1p(low / np.longdouble(high))  # relative to its value
        # near part, direct, the offsets +m and -m paired: sum_m -2 (p_+m + p_-m) sin^2(theta m / 2)
        # - i (p_+m - p_-m) sin(theta m), m = 1..half (the pair's sum and difference one more rounding each)
        sin_half_sq, sin_full = _angles(j, half, n, trig)
        m = np.arange(1, half + 1)
        plus = np.where(centre + m < hi, masses[np.minimum(centre + m, masses.size - 1)], 0.0).astype(np.longdouble)
        minus = np.where(centre - m >= lo, masses[np.maximum(centre - m, 0)], 0.0).astype(np.longdouble)
        re_t = -2 * (plus + minus)[None, :] * sin_half_sq
        im_t = -(plus - minus)[None, :] * sin_full
        d = np.sum(re_t, axis=1) + 1j * np.sum(im_t, axis=1)
        size = half
        d_err = (size + 24) * LONG_UNIT * np.sum(np.abs(re_t) + np.abs(im_t), axis=1).astype(float)
        if far_mass > 0:
            d = d + far_term
            d_err += far_err
        d = d / total
        d_err = d_err / float(total) * (1 + 1e-12)
        denominator = np.abs(1 + d).astype(float) - d_err
        if not np.all(denominator > 0):  # the relative form gives no bound here: the long-double FFT answers
            return None
        with np.errstate(divide="ignore"):  # |1 + d| rounded to 0: a non-finite error below, the long FFT
            log_mod = log_total + 0.5 * np.log1p(2 * d.real + d.real ** 2 + d.imag ** 2)
        angle = np.arctan2(d.imag, 1 + d.real)
        k_dlog += k * d_err / denominator
        # log M + log1p(.)/2 and atan2, each within a few ulps of its value; the log1p argument within 3 u of
        # 2 |Re d| + |d|^2; the product by k one more ulp: no error term of order k u alone
        size_d = (2 * np.abs(d.real) + np.abs(d) ** 2).astype(float)
        # (log M from the two-term sum: within a few ulps of its own value)
        rounding += k * 8 * LONG_UNIT * (np.abs(log_mod).astype(float) + np.abs(angle).astype(float) + size_d
                                         + abs(float(log_total)))
        log_abs += k * log_mod
        phase += k * angle
        turns = (turns + k * centre) % n
    phase -= _TWO_PI * ((j * turns) % n).astype(np.longdouble) / n
    value = np.exp(log_abs) * (np.cos(phase) + 1j * np.sin(phase))
    modulus = np.abs(value).astype(float)
    rounding += 8 * LONG_UNIT * (1 + np.abs(log_abs).astype(float) + np.abs(phase).astype(float)) + UNIT
    with np.errstate(over="ignore", invalid="ignore"):
        err = (k_dlog * np.exp(k_dlog) + rounding) * modulus * (1 + 1e-9) + 1e-300
    if not np.all(np.isfinite(err)):  # no finite bound at some frequency: the long-double FFT answers
        return None
    return value.astype(complex), err
