"""Closed-form bounds: pure-DP and approximate-DP composition of per-step guarantees (the cheap members
of ``accountant="auto"``; not registered on their own).

Each step is read as a base mechanism with a closed-form privacy profile ``delta_0`` (both directions),
possibly subsampled at rate ``g``:

* base profiles: the Gaussian mechanism (Balle, Wang 2018, Thm 8; evaluated with the certified
  bracket of `GaussianCurve`), Laplace ``1 - e^{(eps - eps_0)/2}`` on ``[0, eps_0]`` (Koskela et al.
  2021, Sec. 5), randomized response / pure eps_0-DP ``(e^{eps_0} - e^eps) / (1 + e^{eps_0})`` and
  (eps_0, d)-DP ``d + (1 - d) (e^{eps_0} - e^eps) / (1 + e^{eps_0})`` (Kairouz, Oh, Viswanath 2015,
  Thm 2.1: randomized response dominates every such mechanism);
* amplification by subsampling (Balle, Barthe, Gaboardi 2018, Thm 8 and 9 / Zhu, Dong, Wang 2022,
  Thm 11): a step with base (eps_0, delta_0(eps_0)) is ``(log(1 + g (e^{eps_0} - 1)), g delta_0(eps_0))``-DP
  in both directions, for every eps_0 >= 0 (the base of sampling without replacement is the replace-one
  description);
* composition: basic composition of approximate DP (Dwork, Roth 2014, Thm 3.16) with the budget eps
  split evenly over the steps, so ``delta(eps) <= sum_i k_i g_i delta_0,i(eps_0,i)``;
* pure DP: where every step has a bounded loss, eps_0,i < inf, the composition is S-DP with
  ``S = sum_i k_i log(1 + g_i (e^{eps_0,i} - 1))``, so ``delta(eps) = 0`` for ``eps >= S`` and
  ``delta(eps) <= (e^S - e^eps) / (1 + e^S)`` below (Kairouz, Oh, Viswanath 2015, Thm 2.1).

Every evaluation rounds to the safe side: the per-step eps_0 is lowered and delta raised by a relative
1e-12 (far above the few ulps of error of the closed forms), and S is raised by the same amount. The
curve answers in microseconds at any number of steps, noise level or rate (no grid, no allocation
beyond the query), which makes it the member that answers the extreme regimes (huge or tiny noise,
rates like 1e-200) and proves eps = 0 or delta = 0 where the others would spend seconds.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .. import mechanisms as mech
from ..mechanisms import Mechanism
from .base import Accountant, UnsupportedMechanismError
from .profile import DirectionalCurve, ErrorBudget, GaussianCurve, PrivacyProfile

__all__ = ["ClosedBounds", "ClosedCurve", "StepBound", "step_bound", "pure_epsilon_total"]

#: Relative safety margin on every rounded quantity (the closed forms are accurate to a few ulps).
_SAFE = 1e-12
_TINY = 1e-300


@dataclass(frozen=True)
class StepBound:
    """One step: a base with closed-form profile ``base_delta`` (upper bound, eps >= 0) and pure
    epsilon ``base_pure`` (inf if unbounded), run on a subsample of rate ``rate`` (1: no subsampling)."""

    base_delta: Callable[[np.ndarray], np.ndarray]
    base_pure: float
    rate: float = 1.0

    @property
    def pure(self) -> float:
        """Pure epsilon of the (amplified) step, rounded up: log(1 + g (e^{eps_0} - 1))."""
        if not math.isfinite(self.base_pure):
            return math.inf
        if self.rate >= 1.0:
            value = self.base_pure
        else:
            value = float(np.logaddexp(math.log1p(-self.rate), math.log(self.rate) + self.base_pure))
        return value * (1 + _SAFE) + _TINY

    def delta(self, step_eps: np.ndarray) -> np.ndarray:
        """Upper bound on the step's delta at per-step epsilon ``step_eps`` >= 0 (amplified)."""
        e = np.asarray(step_eps, dtype=float)
        if self.rate >= 1.0:
            e0 = e
        else:  # eps_0 = log(1 + (e^eps - 1) / g), in logs (no overflow at tiny rates)
            with np.errstate(divide="ignore", over="ignore"):
                log_em1 = np.where(e > 30, e + np.log1p(-np.exp(-np.minimum(e, 700.0))), np.log(np.expm1(e)))
                e0 = np.logaddexp(0.0, log_em1 - math.log(self.rate))
        e0 = np.maximum(e0 * (1 - _SAFE) - _TINY, 0.0)
        return np.minimum(self.rate * self.base_delta(e0), 1.0)


def _rr_delta(eps0: float, inf_mass: float = 0.0) -> Callable[[np.ndarray], np.ndarray]:
    """(e^{eps_0} - e^eps) / (1 + e^{eps_0}), scaled by 1 - d, plus d (Kairouz, Oh, Viswanath 2015)."""
    def delta(e):
        with np.errstate(over="ignore"):
            body = -np.expm1(np.minimum(e - eps0, 0.0)) / (1.0 + math.exp(-min(eps0, 700.0)))
        return np.minimum(inf_mass + (1.0 - inf_mass) * body * (1 + _SAFE), 1.0)
    return delta


def _laplace_delta(eps0: float) -> Callable[[np.ndarray], np.ndarray]:
    """1 - e^{(eps - eps_0)/2} on [0, eps_0], 0 beyond."""
    def delta(e):
        return np.minimum(-np.expm1(np.minimum(e - eps0, 0.0) / 2) * (1 + _SAFE), 1.0)
    return delta


def _gaussian_delta(mu: float) -> Callable[[np.ndarray], np.ndarray]:
    if not math.isfinite(mu * mu):
        return lambda e: np.ones(np.shape(e))  # trivial: the loss has infinite variance in doubles
    curve = GaussianCurve(mu)
    return curve.delta_upper


@functools.singledispatch
def _base(mechanism: Mechanism) -> tuple[Callable[[np.ndarray], np.ndarray], float]:
    raise UnsupportedMechanismError(f"closed bounds: no closed-form profile for {type(mechanism).__name__}")


@_base.register
def _(mechanism: mech.Gaussian):
    return _gaussian_delta(mechanism.mu), math.inf


@_base.register
def _(mechanism: mech.Laplace):
    return _laplace_delta(mechanism.epsilon), mechanism.epsilon


@_base.register(mech.RandomizedResponse)
@_base.register(mech.PureDP)
def _(mechanism):
    return _rr_delta(mechanism.epsilon), mechanism.epsilon


@_base.register
def _(mechanism: mech.ApproxDP):
    return _rr_delta(mechanism.epsilon, mechanism.delta), (mechanism.epsilon if mechanism.delta == 0 else math.inf)


@functools.singledispatch
def step_bound(mechanism: Mechanism) -> StepBound:
    """The closed-form reading of one (non-composite) step; raises UnsupportedMechanismError."""
    delta, pure = _base(mechanism)
    return StepBound(delta, pure)


@step_bound.register
def _(mechanism: mech.PoissonSubsampled) -> StepBound:
    delta, pure = _base(mechanism.base)
    return StepBound(delta, pure, mechanism.rate)


@step_bound.register
def _(mechanism: mech.SampledWithoutReplacement) -> StepBound:
    delta, pure = _base(mechanism.replace_one_base)
    return StepBound(delta, pure, mechanism.rate)


def pure_epsilon_total(steps: list[tuple[StepBound, int]]) -> float:
    """S = sum_i k_i eps_i of the pure steps, rounded up (inf if some step is unbounded)."""
    total = math.fsum(k * s.pure for s, k in steps)
    return total * (1 + _SAFE * len(steps)) if math.isfinite(total) else math.inf


class ClosedCurve(DirectionalCurve):
    """The minimum of the approximate-DP and the pure-DP composition bounds (module docstring), both
    directions at once. The lower side is 0 (these are upper bounds only)."""

    direction = "both"

    def __init__(self, steps: list[tuple[StepBound, int]]) -> None:
        self.steps = steps
        self.count = float(sum(k for _, k in steps))
        self.pure = pure_epsilon_total(steps)
        # upper bounds only: the bracket [0, upper] has no bounded width
        self.error_budget = ErrorBudget(eps_error=math.inf, delta_error=math.inf,
                                        details=(("closed_form", 0.0), ("pure_epsilon", self.pure)))
        self._last: tuple | None = None

    def _upper(self, eps: np.ndarray) -> np.ndarray:
        e = np.asarray(eps, dtype=float)
        per_step = np.maximum(e, 0.0) / self.count * (1 - _SAFE)
        approx = np.zeros(e.shape)
        for step, k in self.steps:
            approx = approx + k * step.delta(per_step)
        approx = approx * (1 + _SAFE * (1 + len(self.steps)))
        if math.isfinite(self.pure):
            with np.errstate(over="ignore"):
                pure = _rr_delta(self.pure)(e)
            approx = np.minimum(approx, np.where(e >= self.pure, 0.0, pure))
        return np.where(e < 0, 1.0, np.minimum(approx, 1.0))

    def delta_bounds(self, eps):
        upper = self._upper(eps)
        return np.zeros_like(upper), upper

    def epsilon_bounds(self, delta):
        """Bisection on the upper curve (non-increasing): the returned eps has upper(eps) <= delta. The last
        query's answer is kept: auto asks this one curve once per neighbouring direction."""
        d = np.asarray(delta, dtype=float)
        key = (d.shape, d.tobytes())
        last = self._last  # read once: another thread may replace it
        if last is None or last[0] != key:
            last = (key, self._epsilon_upper(d.reshape(-1)).reshape(d.shape))
            self._last = last
        upper = last[1].copy()
        return np.zeros_like(upper), upper

    def _epsilon_upper(self, d: np.ndarray) -> np.ndarray:
        hi = np.full(d.shape, 1.0)
        if math.isfinite(self.pure):
            hi[:] = max(self.pure, _TINY)
        never = np.zeros(d.shape, bool)
        lo = np.zeros(d.shape)
        up_hi = self._upper(hi)
        for _ in range(300):  # steps of 16 up to the double range: upper(lo) > delta >= upper(hi)
            bad = (up_hi > d) & ~never
            if not bad.any():
                break
            lo = np.where(bad, hi, lo)
            with np.errstate(over="ignore"):
                hi = np.where(bad, hi * 16.0, hi)
            never |= ~np.isfinite(hi)
            up_hi = np.where(bad & ~never, self._upper(np.where(never, 0.0, hi)), up_hi)
        up_lo = self._upper(lo)
        ok0 = (lo == 0) & (up_lo <= d)
        hi = np.where(ok0, 0.0, hi)
        lo, hi = self._itp(d, lo, hi, up_lo, up_hi, ~never & ~ok0)
        for _ in range(200):
            mid = 0.5 * (lo + hi)
            moving = (mid > lo) & (mid < hi) & ~never
            if not moving.any():
                break
            ok = self._upper(mid) <= d
            hi = np.where(moving & ok, mid, hi)
            lo = np.where(moving & ~ok, mid, lo)
        return np.where(never, np.inf, hi)

    def _itp(self, d, lo, hi, up_lo, up_hi, active):
        """Narrows [lo, hi] (upper(lo) > d >= upper(hi)) to 64 ulps by the ITP method (Oliveira, Takahashi
        2020, ACM TOMS 47(1): at most bisection's evaluations plus one, superlinear on a smooth root) on f = log upper - log d; the bisection after it gives the last bits. Each point is kept
        as lo or hi by its evaluated value, so the bracket stays valid whatever f does."""
        with np.errstate(divide="ignore", invalid="ignore"):
            log_d = np.log(d)
            f_lo, f_hi = np.log(up_lo) - log_d, np.log(up_hi) - log_d
        searched, hi_in = active.copy(), hi
        hi = np.where(active, hi, lo)  # rows not searched (their answer is decided) are left as they are
        tol = 32 * np.spacing(np.maximum(np.abs(hi), _TINY))  # half of the target width
        n_max = np.ceil(np.log2(np.maximum((hi - lo) / (2 * tol), 1.0))) + 1
        kappa1 = 0.2 / np.maximum(hi - lo, _TINY)
        for j in range(int(np.max(n_max, initial=0)) + 1):
            active = active & (hi - lo > 2 * tol)
            if not active.any():
                break
            mid = 0.5 * (lo + hi)
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                r = np.maximum(tol * 2.0 ** (n_max - j) - 0.5 * (hi - lo), 0.0)
                step = kappa1 * (hi - lo) ** 2
                falsi = (f_hi * lo - f_lo * hi) / (f_hi - f_lo)
            falsi = np.where(np.isfinite(falsi) & (falsi > lo) & (falsi < hi), falsi, mid)
            sigma = np.sign(mid - falsi)
            x = np.where(step <= np.abs(mid - falsi), falsi + sigma * step, mid)  # truncate
            x = np.where(np.abs(x - mid) <= r, x, mid - sigma * r)  # project
            x = np.where((x > lo) & (x < hi), x, mid)
            value = self._upper(np.where(active, x, hi))
            with np.errstate(divide="ignore"):
                f_x = np.log(value) - log_d
            ok = active & (value <= d)
            bad = active & ~ok
            hi, f_hi = np.where(ok, x, hi), np.where(ok, f_x, f_hi)
            lo, f_lo = np.where(bad, x, lo), np.where(bad, f_x, f_lo)
        return lo, np.where(searched, hi, hi_in)


class ClosedBounds(Accountant):
    """Closed-form pure- and approximate-DP composition bounds (module docstring); a member of "auto"."""

    name = "closed"

    def __init__(self) -> None:
        self.options: dict = {}

    def _walk(self, mechanism: Mechanism, *, dry: bool) -> PrivacyProfile | None:
        steps = [(step_bound(part), count) for part, count in mechanism.components()]
        if dry:
            return None
        curve = ClosedCurve(steps)
        return PrivacyProfile(curves=(curve,), accountant="closed", mechanism=mechanism,
                              description="closed-form pure/approximate-DP composition bounds",
                              metadata=(("pure_epsilon", curve.pure),))
