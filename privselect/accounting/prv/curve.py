"""`PRVCurve`: delta(eps) and eps(delta) of one direction from the composed pmf, bracketed by GLW eq. (8)."""

from __future__ import annotations

import math

import numpy as np

from ..profile import DirectionalCurve, ErrorBudget


class PRVCurve(DirectionalCurve):
    """Composed PRV of one direction on a uniform grid, answering vectorised queries.

    ``t_m = t0 + m h`` carries the finite-part pmf ``p_m``. Stored: ``D2_m = sum_{j>=m} p_j
    e^{t_m - t_j}`` (backward recurrence) and ``W_m = delta~(t_m) = (1 - e^{-h}) sum_{j>m} D2_j``,
    both sums of non-negative terms, so ``delta~(eps) = W_m - expm1(eps - t_m) D2_m`` on
    ``[t_{m-1}, t_m]`` keeps relative accuracy down to the smallest deltas (GLW eq. (5)).
    """

    def __init__(self, *, direction: str, t0: float, h: float, pmf: np.ndarray, log_finite: float,
                 eps_error: float, delta_error: float, error_budget: ErrorBudget, rel_error: float = 0.0,
                 top: float = math.inf) -> None:
        self.direction = direction
        self.error_budget = error_budget
        self.t0 = float(t0)
        self.h = float(h)
        self.n = int(pmf.size)
        self.eps_error = float(eps_error)
        self.delta_error = float(delta_error)
        self.rel_error = float(rel_error)  # relative floating-point error of delta~ (cell masses, sums)
        # sum of the steps' largest finite losses: the finite part of delta(eps) is 0 from there on
        self.top = float(top)
        self.log_finite = float(log_finite)  # log Pi: probability that every loss is finite
        self.finite = math.exp(log_finite)
        self.inf_part = -math.expm1(log_finite)  # 1 - Pi
        d2 = _discounted_suffix_sums(pmf, h)
        suffix = np.cumsum(d2[::-1])[::-1]
        w = np.empty_like(d2)
        w[:-1] = -math.expm1(-h) * suffix[1:]
        w[-1] = 0.0
        self._d2 = np.ascontiguousarray(d2)
        self._w = np.ascontiguousarray(w)
        self._neg_w = -self._w
        self.total_mass = float(w[0] + d2[0])

    # -- finite part -----------------------------------------------------------------------

    def _delta_finite(self, eps: np.ndarray) -> np.ndarray:
        """delta~(eps) of the finite part: exact for the grid pmf, every real eps."""
        e = np.asarray(eps, dtype=float)
        with np.errstate(invalid="ignore", over="ignore"):
            idx = np.ceil((e - self.t0) / self.h)
        idx = np.clip(np.nan_to_num(idx, nan=0.0, posinf=self.n, neginf=0.0), 0, self.n).astype(np.intp)
        inside = idx < self.n
        safe = np.minimum(idx, self.n - 1)
        t = self.t0 + safe * self.h
        with np.errstate(over="ignore", invalid="ignore"):
            val = self._w[safe] - np.expm1(np.minimum(e - t, 0.0)) * self._d2[safe]
        val = np.where(np.isneginf(e), self.total_mass, val)
        return np.where(inside, val, 0.0)

    def _epsilon_finite(self, x: np.ndarray) -> np.ndarray:
        """inf{eps : delta~(eps) <= x} for the finite part (-inf if x >= total mass, +inf if x < 0)."""
        x = np.asarray(x, dtype=float)
        idx = np.searchsorted(self._neg_w, -x, side="left")  # first m with W_m <= x
        idx = np.minimum(idx, self.n - 1)
        d2 = self._d2[idx]
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = (self._w[idx] - x) / d2
            eps = self.t0 + idx * self.h + np.log1p(np.maximum(ratio, -1.0))
        eps = np.where(d2 > 0, eps, self.t0 + idx * self.h)
        eps = np.where(x >= self.total_mass, -np.inf, eps)
        return np.where(x < 0, np.inf, eps)

    # -- DirectionalCurve ------------------------------------------------------------------

    def delta_estimate(self, eps):
        """Point estimate delta~(eps) (not a bound); the finite part is 0 from ``top`` on."""
        e = np.asarray(eps, dtype=float)
        return self.inf_part + self.finite * np.where(e >= self.top, 0.0, self._delta_finite(e))

    def delta_bounds(self, eps):
        """GLW eq. (8): delta~(eps + eps_err) - delta_err <= delta(eps) <= delta~(eps - eps_err) + delta_err."""
        e = np.asarray(eps, dtype=float)
        grow = 1.0 + self.rel_error
        low = self._delta_finite(e + self.eps_error) / grow - self.delta_error
        up = self._delta_finite(e - self.eps_error) * grow + self.delta_error
        up = np.where(e >= self.top, 0.0, up)  # the composed loss never exceeds top
        lower = self.inf_part + self.finite * np.clip(low, 0.0, 1.0)
        upper = self.inf_part + self.finite * np.clip(up, 0.0, 1.0)
        return np.clip(lower, 0.0, 1.0), np.clip(upper, 0.0, 1.0)

    def epsilon_bounds(self, delta):
        """GLW eq. (8) for eps: eps~(delta + delta_err) - eps_err <= eps(delta) <= eps~(delta - delta_err) + eps_err."""
        d = np.asarray(delta, dtype=float)
        x = self._finite_delta(d)
        grow = 1.0 + self.rel_error
        lower = self._epsilon_finite((x + self.delta_error) * grow) - self.eps_error
        upper = self._epsilon_finite((x - self.delta_error) / grow) + self.eps_error
        upper = np.where(x > 0, np.minimum(upper, self.top), upper)  # delta(top) = mass at +inf
        lower = np.minimum(lower, upper)
        below_inf = d < self.inf_part
        return np.where(below_inf, np.inf, lower), np.where(below_inf, np.inf, upper)

    def epsilon_estimate(self, delta):
        """Point estimate eps~(delta) (not a bound)."""
        d = np.asarray(delta, dtype=float)
        x = self._finite_delta(d)
        eps = self._epsilon_finite(x)
        eps = np.where(x > 0, np.minimum(eps, self.top), eps)
        return np.where(d < self.inf_part, np.inf, eps)

    def _finite_delta(self, d: np.ndarray) -> np.ndarray:
        """delta of the finite part that gives total delta d (-1 where d is below the mass at infinity)."""
        if self.finite == 0:
            return np.full(d.shape, -1.0)
        return (d - self.inf_part) / self.finite

    @property
    def grid(self) -> np.ndarray:
        """The composed grid t_m (finite part)."""
        return self.t0 + self.h * np.arange(self.n)


def _discounted_suffix_sums(pmf: np.ndarray, h: float) -> np.ndarray:
    """D2_m = sum_{j >= m} p_j e^{-(j - m) h}, by blocks of B cells with B h <= 16.

    Inside a block, D2 = e^{m h} * (suffix sum of p_j e^{-j h}) with local indices (factors within
    e^{+-16}); the blocks are joined from the right by D2_start = local + e^{-B h} D2_next. All terms
    are non-negative: relative rounding (B + 4) u per entry plus u per block.
    """
    n = pmf.size
    block = max(1, min(n, int(16.0 / h)))
    blocks = -(-n // block)
    padded = np.zeros(blocks * block)
    padded[:n] = pmf
    x = padded.reshape(blocks, block)
    j = np.arange(block) * h
    local = np.cumsum((x * np.exp(-j))[:, ::-1], axis=1)[:, ::-1] * np.exp(j)
    out = local.copy()
    decay = np.exp(-j[::-1] - h)  # e^{-(B - i) h}: from entry i to the next block's first entry
    carry = 0.0
    for b in range(blocks - 1, -1, -1):
        out[b] += decay * carry
        carry = out[b, 0]
    return out.reshape(-1)[:n]
