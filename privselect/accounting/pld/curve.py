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

    def __init__(self, law: Composed, h: float, shift: float) -> None:
        self.h, self.j0, self.n = h, law.j0, law.pmf.size
        self.loc = (law.j0 + np.arange(self.n)) * h
        # float64 where e^{-l} stays far from overflow (its rounding bound, relative to S0 + e^eps S1, is then
        # ~1e-10 at 1e6 points), long double otherwise
        dtype = float if -600 < self.loc[0] and self.loc[-1] < 600 else np.longdouble
        unit = 2.0 ** -53 if dtype is float else LONG_UNIT
        loc = self.loc.astype(dtype)
        #: bound on |true location - loc| (the steps' double grid points, summed): moves each weight by at most
        #: shift e^{eps - l} (1 + 2 shift), so the value by at most that times e^eps S1
        self.shift = shift * (1 + 2 * shift)
        c = law.pmf.astype(dtype)
        zero = np.zeros(1, dtype=dtype)
        self.s0 = np.concatenate([np.cumsum(c[::-1])[::-1], zero])
        self.s1 = np.concatenate([np.cumsum((c * np.exp(-loc))[::-1])[::-1], zero])
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


class PLDCurve(DirectionalCurve):
    """H_{e^eps} of one direction: between the optimistic and the pessimistic composed laws (`pld` docstring)."""

    def __init__(self, direction: str, upper: Composed, lower: Composed, h: float, shift: float,
                 details: tuple, lower_factor: float = 1.0) -> None:
        self.direction = direction
        #: the composed optimistic law's curve is at most this times the true one (its steps' checked rounding,
        #: composed: Zhu, Dong, Wang 2022, Lemma 7 applied step by step)
        self.lower_factor = lower_factor
        self._up, self._low = _Sums(upper, h, shift), _Sums(lower, h, shift)
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

    def delta_bounds(self, eps):
        e = np.asarray(eps, dtype=float)
        flat = e.reshape(-1)
        up, up_round = self._up.evaluate(flat)
        low, low_round = self._low.evaluate(flat)
        upper = np.minimum(up + up_round + self.upper_extra, 1.0)
        lower = np.clip(low - low_round - self.lower_less, 0.0, None) / self.lower_factor
        lower = np.minimum(lower, upper)
        return lower.reshape(e.shape), upper.reshape(e.shape)
