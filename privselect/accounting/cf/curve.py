"""`CFCurve`: H_{e^eps}(P^k || Q^k) of one direction by characteristic-function inversion."""

from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np

from ..plrv import PrivacyLoss
from ..profile import DirectionalCurve, ErrorBudget
from .numerics import _EPS, _log_c
from .options import CFOptions
from .quadrature import _V, MIN_DELTA, _convex_argmin, _Direction

#: Query arrays whose brackets a curve remembers (each a few kB: the risk conversion's chunks of at most 1024 eps).
_MEMO_SIZE = 64


class CFCurve(DirectionalCurve):
    """H_{e^eps}(P^k || Q^k) of one direction by characteristic-function inversion.

    ``delta_bounds`` is certified for every real eps except for the subsampled-phi quadrature
    term, which is an estimate (see the module docstring; ``certified`` is then False). ``direction`` is ``"remove"``,
    ``"add"`` or ``"both"`` (symmetric mechanisms).
    """

    def __init__(self, direction: str, parts: tuple[tuple[PrivacyLoss, int], ...], accountant: CFOptions) -> None:
        self.direction = direction
        self._dir = _Direction(parts, accountant)
        self._budget: ErrorBudget | None = None
        self._memo: OrderedDict[tuple[tuple[int, ...], bytes], tuple[np.ndarray, np.ndarray]] = OrderedDict()
        self._memo_lock = threading.Lock()

    @property
    def min_delta(self) -> float:
        return MIN_DELTA

    @property
    def certified(self) -> bool:  # type: ignore[override]
        """False when a component's phi is computed by quadrature (subsampled Gaussian or Laplace
        base): the quadrature term (d) of the module docstring is an estimate, not a bound."""
        return not self._dir.estimate

    @property
    def inf_mass(self) -> float:
        """P[L = inf] of the composed loss: delta never drops below it."""
        return self._dir.inf_mass

    def delta_bounds(self, eps):
        """The bracket at ``eps``; an array asked again (the risk conversion scans the same eps grid for every
        quoted FPR) is answered from a memo of the last ``_MEMO_SIZE`` arrays: the bracket is a pure function of
        eps (the quadrature depends on nothing else), so the answer is the one a new evaluation would give."""
        e = np.asarray(eps, dtype=float)
        if e.ndim == 0:
            lower, _, upper, _ = self._dir.bounds(eps)
            return lower, upper
        key = (e.shape, e.tobytes())
        with self._memo_lock:
            hit = self._memo.get(key)
            if hit is not None:
                self._memo.move_to_end(key)
        if hit is None:
            lower, _, upper, _ = self._dir.bounds(eps)
            hit = (np.array(lower, dtype=float, copy=True), np.array(upper, dtype=float, copy=True))
            with self._memo_lock:
                self._memo[key] = hit
                if len(self._memo) > _MEMO_SIZE:
                    self._memo.popitem(last=False)
        return hit[0].copy(), hit[1].copy()

    def delta_estimate(self, eps):
        return self._dir.bounds(eps)[1]

    def delta_terms(self, eps) -> dict[str, np.ndarray]:
        """Every error term (absolute, at each eps) and the finite-part estimate."""
        e = np.asarray(eps, dtype=float)
        return {k: v.reshape(e.shape) for k, v in self._dir.evaluate(e.reshape(-1)).items()}

    # -- eps(delta) ------------------------------------------------------------------------------

    def epsilon_bounds(self, delta):
        d = np.asarray(delta, dtype=float)
        lower, upper = self._invert(d.reshape(-1))
        return lower.reshape(d.shape), upper.reshape(d.shape)

    def _chernoff_eps(self, delta: np.ndarray) -> np.ndarray:
        """min over grid v of the eps with C(v) e^{-v eps + Lambda(v)} = delta - m.

        An upper bound on the true eps(delta) (delta_finite(eps) <= C(v) M(v) e^{-v eps})."""
        with np.errstate(divide="ignore", invalid="ignore"):
            gap = np.log(np.maximum(delta - self._dir.inf_mass, 1e-320))

        def bound(j):
            upper = self._dir.lam(j)[1]
            out = (_log_c(_V[j]) + upper - gap) / _V[j]
            return np.where(np.isfinite(out), out, np.inf)

        return bound(_convex_argmin(bound, gap.shape))

    def _invert(self, delta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(lower, upper): eps(delta) on the lower and on the upper curve (vectorised), both from
        one sequence of evaluations (each evaluation gives both curves).

        Per curve a bracket [a, b] with curve(a) > delta >= curve(b) is kept; the upper side
        returns b (the certified upper curve is <= delta there, so the true eps(delta) <= b), the
        lower side a (the lower curve is > delta there, so eps(delta) > a). Every returned end is
        a point where the curve was evaluated on its safe side, so where the search stops never
        affects validity, only tightness. The upper bracket is found with Newton steps on
        log delta (slope ~ -v at the saddle point, overshooting by 10%; start: the Chernoff
        bound), and every side is refined by safeguarded secant steps (``_refine``) aimed tau/2
        inside its safe side. A side stops once its returned end is within tau of delta in log, or
        its bracket is 1e-12 relative wide. tau is the relative precision of the curves, ``rel_tol``;
        for the lower side (never part of a certificate) at least 1/1000 of the log-ratio of the
        upper to the lower curve at the latest point (a loose bracket, e.g. one subsampled step's
        truncation error, is not resolved at a new integration line per step). The lower side
        starts from the upper side's evaluations and usually needs few of its own.
        """
        lower_out, upper_out = np.full(delta.shape, np.inf), np.full(delta.shape, np.inf)
        # at (or a rounding below) the atom at +inf the upper curve never reaches delta, but the true eps can be
        # finite (ApproxDP(1, d) at delta = d: eps = 1), so the lower curve is inverted there too
        active = delta >= self._dir.inf_mass * (1 - 1e-9)
        if not active.any():
            return lower_out, upper_out
        dd = delta[active]
        target = np.log(dd)
        tau = self._dir.options.rel_tol
        # row 0: the lower curve, row 1: the upper curve
        a, b = np.full((2, dd.size), np.nan), np.full((2, dd.size), np.nan)
        fa, fb = np.full((2, dd.size), np.nan), np.full((2, dd.size), np.nan)
        gap = np.zeros(dd.size)  # log(upper / lower curve) at the latest point

        def evaluate(x: np.ndarray, mask: np.ndarray) -> None:
            """Evaluate both curves at x[mask]; every point tightens the brackets it falls in."""
            if not mask.any():
                return
            lo, _, up, _ = self._dir.bounds(x[mask])
            f = np.log(np.maximum(np.stack([lo, up]), 1e-320)) - target[mask]
            gap[mask] = f[1] - f[0]
            xm = x[mask]
            for s in (0, 1):
                above = f[s] > 0
                new_a = above & ~(a[s, mask] > xm)
                new_b = ~above & ~(b[s, mask] < xm)
                a[s, mask] = np.where(new_a, xm, a[s, mask])
                fa[s, mask] = np.where(new_a, f[s], fa[s, mask])
                b[s, mask] = np.where(new_b, xm, b[s, mask])
                fb[s, mask] = np.where(new_b, f[s], fb[s, mask])

        x = np.minimum(self._chernoff_eps(dd), self._dir.sup)
        evaluate(np.where(np.isfinite(x), x, 50.0), np.ones(dd.shape, bool))
        self._bracket(1, a, b, fa, fb, evaluate)
        # The lower curve is at least 1 - e^eps (less 4 ulps): above delta at eps = log(1 - 2 delta - 16 ulps),
        # a left end found in one evaluation (Newton on a lower curve that is 0, e.g. under a loose
        # truncation term, wanders far to the left first).
        evaluate(np.log1p(-np.minimum(2 * dd + 16 * _EPS, 0.5)), np.isnan(a[0]))
        self._bracket(0, a, b, fa, fb, evaluate)
        never = np.isnan(b)
        a = np.where(np.isnan(a), -np.inf, a)
        upper_tol = np.full(dd.shape, tau)
        self._refine(1, -upper_tol / 2, upper_tol, a, b, fa, fb, never[1], evaluate)
        lower_tol = np.maximum(tau, 1e-3 * np.nan_to_num(gap, nan=0.0, posinf=0.0))
        self._refine(0, lower_tol / 2, lower_tol, a, b, fa, fb, never[0], evaluate)
        lower_out[active] = np.where(never[0], np.inf, a[0])
        upper_out[active] = np.where(never[1], np.inf, b[1])
        return lower_out, upper_out

    def _bracket(self, s: int, a, b, fa, fb, evaluate) -> None:
        """Newton steps on log delta until curve s has a bracket: left of b where a is missing,
        right of a where b is missing (capped at the support's top)."""
        for it in range(60):
            miss_a, miss_b = np.isnan(a[s]), np.isnan(b[s])
            open_ = miss_a | miss_b
            if not open_.any():
                return
            x0, f0 = np.where(miss_a, b[s], a[s]), np.where(miss_a, fb[s], fa[s])
            x0 = np.where(np.isnan(x0), 50.0, x0)
            slope = _V[self._dir.saddle_index(x0)] if self._dir.continuous else np.ones(x0.shape)
            step = np.clip(1.1 * np.abs(np.nan_to_num(f0)) / np.maximum(slope, 1e-3) + 1e-9 * (1 + np.abs(x0)), 0, None)
            step = step * 2.0 ** max(0, it - 6)  # widen if Newton stalls (flat parts, atoms)
            x = np.where(miss_a, x0 - step, np.minimum(x0 + step, self._dir.sup))
            evaluate(x, open_)

    @staticmethod
    def _refine(s: int, aim: np.ndarray, tau: np.ndarray, a, b, fa, fb, never, evaluate) -> None:
        """Curve s: secant steps through the two latest points, aimed at log delta + ``aim`` and kept
        inside the bracket; where the same end moved twice running (a one-sided approach, e.g.
        delta ~ (sup - eps) near a bounded support's top), an Illinois step (regula falsi with the
        stale end's value halved, halved again at every further stall) instead, and a bisection
        every fourth step from the eighth on. Stops when the safe end is within tau of delta in log
        or the bracket is 1e-12 relative wide; the lower side (s = 0, refined after the upper one) also
        once its bracket is 1/1000 as wide as the whole bracket (its lower end to the upper side's
        upper end)."""
        x0, g0 = a[s].copy(), fa[s] - aim  # the two latest points (first: the bracket's ends)
        x1, g1 = b[s].copy(), fb[s] - aim
        wa, wb = fa[s] - aim, fb[s] - aim  # Illinois working values
        last = np.zeros(a.shape[1], dtype=int)  # the end that moved last: -1 a, +1 b
        stalled = np.zeros(a.shape[1], dtype=bool)
        for it in range(200):
            close = fb[s] >= -tau if s == 1 else (fa[s] <= tau) | (b[0] - a[0] <= 1e-3 * (b[1] - a[0]))
            done = never | ~np.isfinite(a[s]) | (b[s] - a[s] <= 1e-12 * (1 + np.abs(b[s]))) | close
            if done.all():
                return
            with np.errstate(invalid="ignore", divide="ignore"):
                secant = x1 - g1 * (x1 - x0) / (g1 - g0)
                falsi = b[s] - wb * (b[s] - a[s]) / (wb - wa)
            x = np.where(stalled | ~np.isfinite(secant) | (secant <= a[s]) | (secant >= b[s]), falsi, secant)
            bisect = ((it >= 8) & (it % 4 == 3)) | ~np.isfinite(x) | (x <= a[s]) | (x >= b[s])
            x = np.where(bisect | done, 0.5 * (a[s] + b[s]), x)
            evaluate(x, ~done)
            moved_a, moved_b = (a[s] == x) & ~done, (b[s] == x) & ~done
            stalled = (moved_a & (last == -1)) | (moved_b & (last == 1))
            wa = np.where(moved_a, fa[s] - aim, np.where(moved_b & (last == 1), wa / 2, wa))
            wb = np.where(moved_b, fb[s] - aim, np.where(moved_a & (last == -1), wb / 2, wb))
            last = np.where(moved_a, -1, np.where(moved_b, 1, last))
            g = np.where(moved_a, fa[s], fb[s]) - aim
            step = moved_a | moved_b
            x0, g0 = np.where(step, x1, x0), np.where(step, g1, g0)
            x1, g1 = np.where(step, x, x1), np.where(step, g, g1)

    # -- error budget ----------------------------------------------------------------------------

    @property
    def error_budget_known(self) -> bool:
        return self._budget is not None

    @property
    def error_budget(self) -> ErrorBudget:  # type: ignore[override]
        if self._budget is None:
            self._budget = self._reference_budget()
        return self._budget

    def _saddle_eps(self, delta: np.ndarray) -> np.ndarray:
        """Rough eps(delta) from the saddle magnitude min_v psi(v; eps) = log(delta - m) (no grids)."""
        d = self._dir
        gap = np.log(delta - d.inf_mass)
        if not d.continuous:
            return self._invert(delta)[1]

        def magnitude(e):
            j = d.saddle_index(e)
            return -_V[j] * e + d.lam(j)[0] - np.log(_V[j]) - np.log1p(_V[j])

        hi = np.minimum(self._chernoff_eps(delta), d.sup)
        lo = np.minimum(np.log1p(-delta), hi) - 1.0
        for _ in range(60):
            mid = 0.5 * (lo + hi)
            high = magnitude(mid) > gap
            lo, hi = np.where(high, mid, lo), np.where(high, hi, mid)
        return hi

    def _reference_budget(self) -> ErrorBudget:
        """Error terms at reference points delta ~ 1e-2, 1e-5, 1e-10 (where reachable)."""
        refs = np.array([1e-2, 1e-5, 1e-10])
        refs = refs[refs > self._dir.inf_mass * (1 + 1e-9)]
        if not refs.size:
            return ErrorBudget(min_delta=MIN_DELTA, details=(("inf_mass", self._dir.inf_mass),))
        eps = self._saddle_eps(refs)
        eps = eps[np.isfinite(eps)]
        if not eps.size:
            return ErrorBudget(min_delta=MIN_DELTA, details=(("inf_mass", self._dir.inf_mass),))
        lower, est, upper, terms = self._dir.bounds(eps)
        h = 1e-6 * (1 + np.abs(eps))
        slope = np.abs(self._dir.bounds(eps + h)[1] - self._dir.bounds(eps - h)[1]) / (2 * h)
        with np.errstate(divide="ignore", invalid="ignore"):
            eps_err = np.where(slope > 0, (upper - lower) / slope, 0.0)
        scale = np.maximum(est - self._dir.inf_mass, 1e-300)
        names = ["truncation", "aliasing", "phi_rounding", "sum_rounding", "atoms_rounding"]
        if self._dir.quadrature:
            names.append("phi_quadrature_estimate")
        label = {"phi_quadrature_estimate": "phi_quadrature_estimate" if self._dir.estimate else "phi_quadrature"}
        details = tuple((f"{label.get(n, n)}_rel", float(np.max(terms[n] / scale))) for n in names)
        details += (("grid_points_max", float(max((g.u.size for g in self._dir._grids.values()), default=0))),
                    ("inf_mass", self._dir.inf_mass))
        return ErrorBudget(
            eps_error=float(np.max(eps_err)),
            delta_error=float(np.max(upper - lower)),
            min_delta=MIN_DELTA,
            details=details,
        )
