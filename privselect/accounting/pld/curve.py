"""`PLDCurve`: one direction's hockey-stick bracket from the composed pessimistic and optimistic laws."""

from __future__ import annotations

import numpy as np

from ...errors import CertificationError
from ..profile import DirectionalCurve, ErrorBudget
from .compose import LONG_UNIT, Composed


class _Sums:
    """delta_w(eps) = inf + sum_{l_j > eps} c_j (1 - e^{eps - l_j}) by suffix sums S0 = sum c_j and
    S1 = sum c_j e^{-l_j} (float64, or long double where e^{-l} could overflow); the rounding bound is 2 (n + 8) u (S0 + e^eps S1) (summation
    error of the cumulative sums, the product and the difference; Higham 2002, Sec. 4.2)."""

    loc: np.ndarray
    decay: np.ndarray

    def __init__(self, law: Composed, h: float, shift: float, like: _Sums | None = None) -> None:
        """``like``: a law's sums on the same grid (the other law of the curve), whose e^{-l} are reused."""
        self.h, self.j0, self.n = h, law.j0, law.pmf.size
        shared = like if like is not None and (like.h, like.j0, like.n) == (h, law.j0, self.n) else None
        self.loc = shared.loc if shared is not None else (law.j0 + np.arange(self.n)) * h
        # float64 where e^{-l} stays far from overflow (its rounding bound, relative to S0 + e^eps S1, is then
        # ~1e-10 at 1e6 points), long double otherwise
        dtype = float if -600 < self.loc[0] and self.loc[-1] < 600 else np.longdouble
        unit = 2.0 ** -53 if dtype is float else LONG_UNIT
        self.decay = shared.decay if shared is not None else np.exp(-self.loc.astype(dtype))  # e^{-l}
        #: bound on |true location - loc| (the steps' double grid points, summed): moves each weight by at most
        #: shift e^{eps - l} (1 + 2 shift), so the value by at most that times e^eps S1
        self.shift = shift * (1 + 2 * shift)
        c = law.pmf.astype(dtype)
        zero = np.zeros(1, dtype=dtype)
        self.s0 = np.concatenate([np.cumsum(c[::-1])[::-1], zero])
        self.s1 = np.concatenate([np.cumsum((c * self.decay)[::-1])[::-1], zero])
        self.rounding = 2.0 * (self.n + 8) * unit * (1 + 1e-9)

    def evaluate(self, eps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(value, rounding bound) at each eps."""
        first = np.searchsorted(self.loc, eps, side="right")  # first index with l_j > eps
        s0, s1 = self.s0[first], self.s1[first]
        with np.errstate(over="ignore", invalid="ignore"):
            scaled = np.where(s1 > 0, np.exp(np.asarray(eps, dtype=self.s1.dtype)) * s1, 0)  # no mass: 0
            value = (s0 - scaled).astype(float)
            # the shift also decides terms at l_j within it of eps: bounded with one more term included
            # (only the term just at or below eps can be within the shift of it: shift < 1e-6 is checked)
            prev = np.maximum(first - 1, 0)
            close = (first > 0) & (np.asarray(eps) - self.loc[prev] <= 1e-6)
            near = np.where(close, (self.s0[prev] - s0) * (1.0 + 3e-6), 0)
            rounding = (self.rounding * (s0 + scaled) + self.shift * near).astype(float) + 1e-300
        value = np.where(np.isfinite(value), value, 0.0)
        rounding = np.where(np.isfinite(rounding), rounding, np.inf)
        return np.maximum(value, 0.0), rounding

    def crossing(self, segment: np.ndarray, level: np.ndarray, side: str) -> np.ndarray:
        """Where the main terms of the curve equal ``level`` on the segment left of grid point ``segment``
        (there ``first == segment``): s0 (1 + r) - e^eps s1 (1 - r) = level (``side="upper"``, r the
        rounding factor) or s0 (1 - r) - e^eps s1 (1 + r) = level (``"lower"``). An estimate of the root
        (a candidate for `PLDCurve` to verify)."""
        r = self.rounding if side == "upper" else -self.rounding
        s0, s1 = self.s0[segment], self.s1[segment]
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            ratio = (s0 * (1 + r) - level) / (s1 * (1 - r))
            return np.log(ratio.astype(float))


#: Candidates tried on the safe side of a segment's root (4 x 16^i ulps, i < _NUDGES) before its verified end.
_NUDGES = 8
#: Knots per block of the two-level search in `_first_at_or_below`.
_STRIDE = 256


def _first_at_or_below(curve, knots: np.ndarray, delta: np.ndarray) -> np.ndarray:
    """Per delta, the index of the first knot where the (non-increasing) curve is <= delta (``knots.size`` if
    none): every `_STRIDE`-th knot first, then the knots of the block where that crosses delta."""
    coarse = np.unique(np.concatenate([np.arange(0, knots.size, _STRIDE), [knots.size - 1]]))
    kc = np.searchsorted(-curve(knots[coarse]), -delta, side="left")
    out = np.where(kc == 0, 0, knots.size)
    inside = np.flatnonzero((kc > 0) & (kc < coarse.size))
    for chunk in np.array_split(inside, -(-inside.size // 4096)) if inside.size else ():  # <= 1M knots at once
        start, stop = coarse[kc[chunk] - 1] + 1, coarse[kc[chunk]]
        index = np.minimum(start[:, None] + np.arange(_STRIDE)[None, :], stop[:, None])
        at_or_below = curve(knots[index]) <= delta[chunk][:, None]
        out[chunk] = np.where(at_or_below.any(axis=1), start + np.argmax(at_or_below, axis=1), stop)
    return out


class PLDCurve(DirectionalCurve):
    """H_{e^eps} of one direction: between the optimistic and the pessimistic composed laws (`pld` docstring)."""

    def __init__(self, direction: str, upper: Composed, lower: Composed, h: float, shift: float,
                 details: tuple, lower_factor: float = 1.0) -> None:
        self.direction = direction
        #: the composed optimistic law's curve is at most this times the true one (its steps' checked rounding,
        #: composed: Zhu, Dong, Wang 2022, Lemma 7 applied step by step)
        self.lower_factor = lower_factor
        self._up = _Sums(upper, h, shift)
        self._low = _Sums(lower, h, shift, like=self._up)
        self._upper, self._lower = upper, lower
        self.upper_extra = upper.inf_mass + upper.above + upper.fp
        self.lower_less = lower.above + lower.below + lower.fp
        if not (np.isfinite(self.upper_extra) and np.isfinite(self.lower_less)):  # an error term overflowed
            raise CertificationError(f"the PLD accountant declines: an error term of the composition is not finite "
                                     f"(upper {self.upper_extra!r}, lower {self.lower_less!r})")
        additive = upper.above + upper.fp
        self.error_budget = ErrorBudget(
            eps_error=0.0, delta_error=float(additive + self.lower_less), min_delta=float(2 * additive),
            details=tuple(details) + (("delta_upper_tail_above", upper.above), ("delta_upper_fp_fft", upper.fp),
                                      ("delta_lower_tails", lower.above + lower.below),
                                      ("delta_lower_fp_fft", lower.fp), ("points", float(upper.pmf.size))))

    def epsilon_bounds(self, delta):
        """The bracket on eps(delta) by a direct solve on each curve's grid segment, verified.

        Each side's curve is evaluated at the grid points (one vectorised pass), which locates the segment
        where it crosses delta; there its main terms are s0 - e^eps s1 with s0, s1 fixed, solved in closed form
        (`_Sums.crossing`), and the root, moved a few ulps to the safe side, is checked on the curve itself: a
        point where the upper curve is <= delta is an upper bound on eps(delta), one where the lower curve is
        > delta a lower bound (the curves bracket the true, non-increasing delta(eps)). A root that fails its
        check falls back to the segment's verified end (at most one mesh step looser)."""
        d = np.asarray(delta, dtype=float)
        flat = d.reshape(-1)
        lower = self._solve(lambda e: self.delta_bounds(e)[0], self._low, flat, "lower")
        upper = self._solve(lambda e: self.delta_bounds(e)[1], self._up, flat, "upper")
        return lower.reshape(d.shape), upper.reshape(d.shape)

    def _solve(self, curve, sums: _Sums, delta: np.ndarray, side: str) -> np.ndarray:
        """The upper (``side="upper"``: curve(eps) <= delta) or lower (curve(eps) > delta) end of eps(delta)
        on ``curve`` (``invert_curve``'s conventions: -50 where the curve is below delta there, +inf where it
        never drops to delta)."""
        lo, hi = -50.0, 1.0e4
        knots = np.concatenate([[lo], sums.loc[(sums.loc > lo) & (sums.loc < hi)].astype(float), [hi]])
        k = _first_at_or_below(curve, knots, delta)
        never, below_lo = k >= knots.size, k == 0
        k = np.clip(k, 1, knots.size - 1)
        left, right = knots[k - 1], knots[k]
        segment = np.searchsorted(sums.loc, left, side="right")  # `first` on (left, right)
        # the root of the main terms, moved to the safe side by 4, 64, ... ulps (the curve's own rounding can
        # exceed a few ulps of eps where s0 and e^eps s1 nearly cancel): the closest candidate that checks
        steps = 4.0 * 16.0 ** np.arange(_NUDGES)
        if side == "upper":
            root = sums.crossing(segment, delta - float(self.upper_extra) - 1e-300, "upper")
            guess = root[:, None] + steps[None, :] * (np.spacing(np.abs(root)) + 1e-300)[:, None]
            guess = np.clip(np.where(np.isfinite(guess), guess, right[:, None]), left[:, None], right[:, None])
            good = curve(guess) <= delta[:, None]
            fallback = right
        else:
            root = sums.crossing(segment, delta * self.lower_factor + float(self.lower_less) + 1e-300, "lower")
            guess = root[:, None] - steps[None, :] * (np.spacing(np.abs(root)) + 1e-300)[:, None]
            guess = np.clip(np.where(np.isfinite(guess), guess, left[:, None]), left[:, None], right[:, None])
            good = curve(guess) > delta[:, None]
            fallback = left
        first = np.argmax(good, axis=1)
        out = np.where(good.any(axis=1), guess[np.arange(delta.size), first], fallback)
        out = np.where(below_lo, lo, out)
        return np.where(never, np.inf, out)

    def delta_bounds(self, eps):
        e = np.asarray(eps, dtype=float)
        flat = e.reshape(-1)
        up, up_round = self._up.evaluate(flat)
        low, low_round = self._low.evaluate(flat)
        upper = np.minimum(up + up_round + self.upper_extra, 1.0)
        lower = np.clip(low - low_round - self.lower_less, 0.0, None) / self.lower_factor
        lower = np.minimum(lower, upper)
        return lower.reshape(e.shape), upper.reshape(e.shape)
