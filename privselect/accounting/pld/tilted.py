"""Exponentially tilted PLD composition: a bracket with *relative* precision at tiny delta.

The untilted composition's floor is its floating-point error, an absolute ~1e-13 on the composed pmf. Here
every discretised step law w (the same pessimistic and optimistic laws as `discretise`) is tilted,
w~_l = w_l e^{lam l} / M with M = sum_l w_l e^{lam l}, and the tilted laws are composed by the same FFT
(`compose`, with its proven wrap-around and floating-point terms). The composed finite part is
c_l = e^K e^{-lam l} c~_l, K = sum_i k_i log M_i (tilting commutes with convolution), so

    delta(eps) = inf + e^K sum_{l > eps} c~_l e^{-lam l} (1 - e^{eps - l}),

and an absolute error E in c~ moves delta by at most e^{K - lam eps} E (the weights are below e^{-lam eps} for
l > eps): with lam near the Chernoff tilt of the target delta (`tilt_for`), e^{K - lam eps} is within a
polynomial factor of delta there, and the error is relative (Meiser, Mohammadi 2018, Sec. 5, "tilting" the
PLD; the same identity as the saddle-point methods of Zhu, Dong, Wang 2022, Sec. 5).

Error terms of the upper bound: the circular convolution is at least the tilted law on the window (wrapped
mass only adds, `compose`), the untilted mass above the window (weight <= 1) and, for eps below the window,
below it, by Chernoff bounds on the untilted laws; the FFT error e^{K - lam eps} fp. The lower bound subtracts
e^{K - lam eps} (fp + tilted mass above and below the window: wrapped, it lands at some l > eps at most).
Rounding: each tilted mass to 4 u (|log w| + |lam l| + |log M| + 2), composed k-fold; log M to
4 u (|log M| + log n + 2); the suffix sums in long double as in `curve`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy.special import logsumexp

from ...errors import CertificationError
from ..profile import DirectionalCurve, ErrorBudget, invert_curve
from .compose import LONG_UNIT, ORDERS, Composed, compose, part_log_mgfs, tail_masses, window

__all__ = ["tilt_for", "tilted_curve", "TiltedPLDCurve"]

_UNIT = 2.0 ** -53
#: Composed tilted mass allowed above and below the window (Chernoff), relative to e^{K - lam eps}.
_TAIL = 1e-18


def tilt_for(mgfs: tuple[np.ndarray, np.ndarray], target_delta: float) -> float:
    """The order lam (on `ORDERS`) whose Chernoff bound Lambda(lam) - lam Lambda'(lam) on the composed loss is
    closest to log(target_delta): the tilt that centres the composed law where delta is about the target (an
    estimate; any lam >= 0 gives a valid bracket, this one a tight one there)."""
    up, _ = mgfs
    with np.errstate(invalid="ignore"):
        chernoff = up - ORDERS * np.gradient(up, ORDERS)
    ok = np.isfinite(chernoff)
    if not ok.any():
        return 0.0
    return float(ORDERS[ok][np.argmin(np.abs(chernoff[ok] - math.log(target_delta)))])


def _tilt(masses: np.ndarray, i0: int, h: float, lam: float) -> tuple[np.ndarray, float, float, float]:
    """(tilted masses, log M, their relative rounding bound, mass lost to underflow per entry bound)."""
    loc = (i0 + np.arange(masses.size)) * h
    with np.errstate(divide="ignore"):
        log_w = np.log(masses) + lam * loc
    log_m = float(logsumexp(log_w))
    if not math.isfinite(log_m):
        raise CertificationError("the PLD accountant declines: a tilted step law has no finite mass")
    tilted = np.exp(log_w - log_m)
    live = masses > 0
    size = float(np.max(np.abs(np.log(masses[live])) + np.abs(lam * loc[live]))) if live.any() else 0.0
    rho = 4 * _UNIT * (size + abs(log_m) + 2) + 4 * _UNIT * (abs(log_m) + math.log(masses.size) + 2)
    return tilted, log_m, rho, masses.size * 2.3e-308


def tilted_curve(direction: str, ups, lows, infs: Sequence[float], h: float, shift: float, lower_factor: float,
                 lam: float, mgf_up: tuple[np.ndarray, np.ndarray], max_points: int, max_memory: float,
                 details: tuple) -> TiltedPLDCurve:
    """The tilted bracket of one direction from the discretised parts (masses, i0, count) of `pld._curve`."""
    tilted = []
    for parts in (ups, lows):
        out, k_log, rel, lost = [], 0.0, 0.0, 0.0
        for masses, i0, k in parts:
            t, log_m, rho, dropped = _tilt(masses, i0, h, lam)
            out.append((t, i0, k))
            k_log += k * log_m
            rel += k * rho
            lost += k * dropped
        tilted.append((out, k_log, rel, lost))
    (t_ups, k_up, rel_up, lost_up), (t_lows, k_low, rel_low, lost_low) = tilted
    mgf_t_up, mgf_t_low = part_log_mgfs(t_ups, h), part_log_mgfs(t_lows, h)
    (a_up, b_up), (a_low, b_low) = window(mgf_t_up, _TAIL), window(mgf_t_low, _TAIL)
    a, b = min(a_up, a_low), max(b_up, b_low)
    trig: dict = {}
    upper = compose(t_ups, [0.0] * len(t_ups), h, a, b, max_points, max_memory, mgf_t_up, trig)
    lower = compose(t_lows, [0.0] * len(t_lows), h, a, b, max_points, max_memory, mgf_t_low, trig)
    inf_mass = -math.expm1(sum(k * math.log1p(-w) for (_, _, k), w in zip(ups, infs))) if any(infs) else 0.0
    start, stop = (upper.j0 - 0.5) * h, (upper.j0 + upper.pmf.size - 0.5) * h
    above, below = tail_masses(mgf_up, start, stop)  # untilted: the upper law's mass outside the window
    return TiltedPLDCurve(direction, lam, h, shift,
                          _TiltedSums(upper, h, shift, lam, k_up, math.expm1(rel_up)),
                          _TiltedSums(lower, h, shift, lam, k_low, math.expm1(rel_low)),
                          inf_mass=inf_mass, above=above, below=below, start=start,
                          up_error=upper.fp + lost_up, low_error=lower.fp + lower.above + lower.below + lost_low,
                          lower_factor=lower_factor, details=details + (("tilt", lam),))


class _TiltedSums:
    """e^K sum_{l > eps} c~_l e^{-lam l} (1 - e^{eps - l}) by long-double suffix sums relative to the mode."""

    def __init__(self, law: Composed, h: float, shift: float, lam: float, k_log: float, rel: float) -> None:
        self.loc = (law.j0 + np.arange(law.pmf.size)) * h
        self.ref = float(self.loc[int(np.argmax(law.pmf))])
        self.lam, self.k_log, self.rel = lam, k_log, rel
        x = (self.loc - self.ref).astype(np.longdouble)
        c = law.pmf.astype(np.longdouble)
        with np.errstate(over="ignore"):
            t0 = c * np.exp(-lam * x)
            t1 = t0 * np.exp(-x)
        if not (np.all(np.isfinite(t0)) and np.all(np.isfinite(t1))):
            raise CertificationError("the PLD accountant declines: the tilted weights leave the long-double range")
        zero = np.zeros(1, dtype=np.longdouble)
        self.s0 = np.concatenate([np.cumsum(t0[::-1])[::-1], zero])
        self.s1 = np.concatenate([np.cumsum(t1[::-1])[::-1], zero])
        self.log_scale = np.longdouble(k_log) - np.longdouble(lam) * np.longdouble(self.ref)
        spread = float(np.max(np.abs(self.loc - self.ref)))
        # summation 2 (n + 8) u; each weight's exponentials u (lam + 1) |x| + a few u; the scale's exponential
        # u |log scale|; the location shift of the grid points: e^{lam s} on every weight
        self.rounding = (2.0 * (law.pmf.size + 8) + 8 * (1 + (lam + 1) * spread) + 4 * abs(float(self.log_scale))
                         ) * LONG_UNIT + 2 * lam * shift + 2 * shift

    def evaluate(self, eps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(value, rounding bound) at each eps, in doubles (0 where the value underflows)."""
        first = np.searchsorted(self.loc, eps, side="right")
        s0, s1 = self.s0[first], self.s1[first]
        with np.errstate(over="ignore", invalid="ignore", under="ignore"):
            scaled = np.exp(np.asarray(eps, dtype=np.longdouble) - self.ref) * s1
            factor = np.exp(self.log_scale)
            value = (np.maximum(s0 - scaled, 0) * factor).astype(float)
            prev = np.maximum(first - 1, 0)
            close = (first > 0) & (np.asarray(eps) - self.loc[prev] <= 1e-6)
            near = np.where(close, (self.s0[prev] - s0) * (1.0 + 3e-6), 0)
            rounding = ((self.rounding + self.rel) * (s0 + scaled) * factor + near * factor * 2e-6).astype(float)
        value = np.where(np.isfinite(value), value, np.inf)
        rounding = np.where(np.isfinite(rounding), rounding, np.inf) + 1e-300
        return value, rounding

    def error_scale(self, eps: np.ndarray) -> np.ndarray:
        """e^{K - lam eps} (rounded up), the factor of an absolute error of the tilted law at eps."""
        e = np.asarray(eps, dtype=float)
        exponent = self.k_log - self.lam * e
        with np.errstate(over="ignore"):  # the exponent's rounding, a few ulps of its terms, as a factor
            return np.exp(exponent + 1e-15 * (abs(self.k_log) + self.lam * np.abs(e) + 1.0)) * (1 + 1e-12)


class TiltedPLDCurve(DirectionalCurve):
    """H_{e^eps} of one direction from the tilted pessimistic and optimistic laws (module docstring)."""

    def __init__(self, direction: str, lam: float, h: float, shift: float, up: _TiltedSums, low: _TiltedSums, *,
                 inf_mass: float, above: float, below: float, start: float, up_error: float, low_error: float,
                 lower_factor: float, details: tuple) -> None:
        self.direction, self.lam = direction, lam
        self._up, self._low = up, low
        self.inf_mass, self.above, self.below, self.start = inf_mass, above, below, start
        self.up_error, self.low_error, self.lower_factor = up_error, low_error, lower_factor
        if not all(math.isfinite(v) for v in (up_error, low_error, above, below)):
            raise CertificationError("the PLD accountant declines: an error term of the tilted composition is "
                                     "not finite")
        self.error_budget = ErrorBudget(eps_error=0.0, delta_error=0.0, min_delta=0.0, details=tuple(details) + (
            ("delta_upper_tail_above", above), ("delta_upper_tail_below", below),
            ("tilted_upper_fp", up_error), ("tilted_lower_fp_and_tails", low_error)))

    def delta_bounds(self, eps):
        e = np.asarray(eps, dtype=float)
        flat = e.reshape(-1)
        up, up_round = self._up.evaluate(flat)
        with np.errstate(invalid="ignore", over="ignore"):
            upper = (self.inf_mass + up * (1 + self._up.rel) + up_round + self._up.error_scale(flat) * self.up_error
                     + self.above + np.where(flat < self.start, self.below, 0.0))
            upper = np.where(np.isfinite(upper), np.minimum(upper, 1.0), 1.0)
            low, low_round = self._low.evaluate(flat)
            lower = low / (1 + self._low.rel) - low_round - self._low.error_scale(flat) * self.low_error
            lower = np.where(np.isfinite(lower), np.clip(lower, 0.0, None), 0.0) / self.lower_factor
        lower = np.minimum(lower, upper)
        return lower.reshape(e.shape), upper.reshape(e.shape)

    def epsilon_bounds(self, delta):
        """The upper end by bisection on the upper curve (non-increasing). The lower curve is not monotone (its
        error term e^{K - lam eps} E grows without bound as eps falls): the lower end is the last grid point where
        it exceeds delta, refined by bisection towards the next one; every point kept has lower(eps) > delta,
        so eps(delta) > it (-50 where no point has)."""
        d = np.asarray(delta, dtype=float)
        flat = d.reshape(-1)
        upper = invert_curve(lambda e: self.delta_bounds(e)[1], flat, side="upper")
        knots = self._low.loc
        values = self.delta_bounds(knots)[0]
        suffix_max = np.maximum.accumulate(values[::-1])[::-1]
        last = np.searchsorted(-suffix_max, -flat, side="left") - 1  # the last knot with lower > delta
        has = last >= 0
        lo = knots[np.maximum(last, 0)]
        hi = knots[np.minimum(last + 1, knots.size - 1)]
        hi = np.where(last + 1 < knots.size, hi, lo + 1.0)
        for _ in range(64):
            mid = 0.5 * (lo + hi)
            ok = self.delta_bounds(mid)[0] > flat
            lo, hi = np.where(ok, mid, lo), np.where(ok, hi, mid)
        lower = np.minimum(np.where(has, lo, -50.0), upper)
        return lower.reshape(d.shape), upper.reshape(d.shape)
