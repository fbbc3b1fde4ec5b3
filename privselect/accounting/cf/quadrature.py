"""One neighbouring direction: composition, atoms and the cached trapezoid grids of the shifted-contour
inversion, with the aliasing, truncation and rounding terms (a)-(c) of the package docstring."""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

import numpy as np

from ...errors import CertificationError
from ..budget import require_memory
from ..plrv import PrivacyLoss
from .atoms import _AtomTable, _power_atoms
from .components import _component
from .numerics import _EPS, _log_c, _log_expm1_neg, _oscillatory_sum
from .options import CFOptions

_LOG = logging.getLogger(__name__)

#: Smallest delta the CF accountant certifies (relative precision is kept far below this).
MIN_DELTA = 1e-250
#: Damping values v = Im(-z) of the integration lines: 2^(j/4), 1e-3 .. 2e6.
_V = 2.0 ** (np.arange(-40, 85) / 4.0)


@dataclass
class _Grid:
    """Trapezoid data of delta_R on the line Im(-z) = v (all sums carry the trapezoid weights)."""

    v: float
    step: float
    u: np.ndarray
    weighted: np.ndarray  # w_n Phi_R(-z_n) / (i z_n (i z_n - 1)), normalised by e^{Lambda(v)}
    sum_abs: float  # sum w_n |W_n|
    sum_abs_u: float  # sum w_n |W_n| u_n
    phi_rounding: float  # sum w_n (rounding bound of Phi_R) / |z||z+i|
    phi_quadrature: float  # sum w_n (quadrature estimate of Phi_R) / |z||z+i|
    truncation: float  # int_U^inf E(u)/u^2 du (normalised)


class _Direction:
    """delta(eps) of one direction: the composed law of ``parts`` = ((loss, count), ...)."""

    def __init__(self, parts: tuple[tuple[PrivacyLoss, int], ...], accountant: CFOptions) -> None:
        self.options = accountant
        self.parts = [_component(loss, count, accountant) for loss, count in parts]
        log_finite = sum(c.count * math.log1p(-c.inf_mass) for c in self.parts)
        self.log_finite_mass = log_finite
        self.inf_mass = -math.expm1(log_finite)
        self.atomic = all(c.atom_loc.size for c in self.parts)
        self.continuous = any(c.has_continuous for c in self.parts)
        self.quadrature = any(c.quadrature for c in self.parts)
        self.estimate = any(getattr(c, "estimate", False) for c in self.parts)
        self.sup = sum(c.count * c.sup for c in self.parts)
        self._atoms: _AtomTable | None = None
        self._lam_est = np.full(_V.shape, np.nan)
        self._lam_up = np.full(_V.shape, np.nan)
        self._grids: dict[int, _Grid] = {}
        self._candidates: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    # -- composed moment generating function on the v-grid ---------------------------------

    def lam(self, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(estimate, upper bound) of Lambda(v) = log E[e^{vL}; L finite] at grid indices ``idx``.

        Evaluated lazily and memoised (quadrature-based components cost one rule per v);
        ``inf`` where a component cannot reach that v.
        """
        idx = np.asarray(idx, dtype=int)
        est = self._lam_est[idx]
        if not np.isnan(est).any():  # the common case: every index memoised
            return est, self._lam_up[idx]
        missing = np.unique(idx[np.isnan(est)])
        if missing.size:
            est = np.zeros(missing.shape)
            upper = np.zeros(missing.shape)
            for c in self.parts:
                e, u = c.log_mgf(_V[missing])
                est += c.count * e
                upper += c.count * u
            bad = ~np.isfinite(est) | ~np.isfinite(upper)
            est[bad], upper[bad] = np.inf, np.inf
            self._lam_est[missing], self._lam_up[missing] = est, upper
        return self._lam_est[idx], self._lam_up[idx]

    def saddle_index(self, eps: np.ndarray) -> np.ndarray:
        """Grid index of v minimising psi(v) = -v eps + Lambda(v) - log v - log(1+v) (convex in v)."""
        eps = np.asarray(eps, dtype=float)

        def psi(j):
            est, _ = self.lam(j)
            with np.errstate(over="ignore"):  # eps near the float maximum: -inf, the right limit
                return -_V[j] * eps + est - np.log(_V[j]) - np.log1p(_V[j])

        return _convex_argmin(psi, eps.shape)

    # -- atoms -------------------------------------------------------------------------------

    def atoms(self) -> _AtomTable:
        """Composed atoms (the product of the components' atomic parts), built once."""
        if self._atoms is None:
            # the kept atoms plus one block of the product, ~12 float arrays of them (locations, masses,
            # sort order, suffix sums, selection temporaries): bounded by max_atoms, checked before building
            require_memory("CF", f"the composed atom table ({self.options.max_atoms} atoms)",
                           12 * 8.0 * (self.options.max_atoms + _PRODUCT_BLOCK), self.options.max_memory)
            loc, logp, rel = np.zeros(1), np.zeros(1), 0.0
            pruned = -np.inf
            for c in self.parts:
                cl, cp, cr, cut = _power_atoms(c.atom_loc, c.atom_logp, c.count, self.options.max_atoms)
                pruned = np.logaddexp(pruned, cut)  # every mass is <= 1: the cut mass bounds its products
                if float(loc.size) * cl.size > self.options.max_work / 4:  # the time contract, before the product
                    raise CertificationError(
                        f"the CF accountant declines: the composed atom table needs {float(loc.size) * cl.size:.3g} "
                        f"products (> max_work / 4 = {self.options.max_work / 4:.3g}); use another accountant")
                loc, logp, cut = _product_atoms(loc, logp, cl, cp, self.options.max_atoms)
                pruned = np.logaddexp(pruned, cut)
                rel = rel + cr + 4 * _EPS
            self._atoms = _AtomTable(loc, logp, rel, float(np.exp(pruned)) * (1 + 1e-12))
        return self._atoms

    def atom_delta(self, eps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(delta_A(eps), rounding bound) by summation over the composed atoms."""
        return self.atoms().delta(eps)

    # -- contour grid for one v ----------------------------------------------------------------

    def _envelope_log(self, j: int, u: np.ndarray, log_ms: list[float]) -> np.ndarray:
        """log E(u) (normalised by e^{Lambda(v)}): prod (a_i + g_i(u))^k - prod a_i^k."""
        v = float(_V[j])
        x = np.zeros(u.shape)
        y = 0.0
        for c, log_m in zip(self.parts, log_ms):
            la = float(c.log_atom_mgf(np.array([v]))[0]) - log_m
            lg = c.log_continuous_envelope(v, u) - log_m
            x = x + c.count * np.logaddexp(la, lg)
            y = y + c.count * la
        if not self.atomic:
            return x
        with np.errstate(divide="ignore", invalid="ignore"):
            return x + _log_expm1_neg(np.maximum(x - y, 1e-300))

    def _truncation(self, j: int, start: np.ndarray, log_ms: list[float]) -> np.ndarray:
        """Bound on int_start^inf E(u) / u^2 du on panels start * 2^(i/4) (E non-increasing)."""
        ratio = 2.0**0.25
        levels = start[:, None] * ratio ** np.arange(257)[None, :]
        log_env = self._envelope_log(j, levels.reshape(-1), log_ms).reshape(levels.shape)
        widths = 1 / levels[:, :-1] - 1 / levels[:, 1:]
        tail = np.exp(log_env[:, :-1]) * widths
        return tail.sum(axis=1) + np.exp(log_env[:, -1]) / levels[:, -1]

    def grid(self, j: int) -> _Grid:
        if j in self._grids:
            return self._grids[j]
        window = _window(j)
        est_w, upper_w = self.lam(window)
        est = dict(zip(window.tolist(), est_w))
        v = float(_V[j])
        log_tol = math.log(self.options.rel_tol)
        # eps whose saddle point is v, and the saddle magnitude there (log delta, roughly). The
        # backward difference is used: Lambda may jump just above v (subsampled mechanisms at
        # large v), and the eps served by this grid then start at the backward slope.
        v_back = v * 2.0 ** (-1 / 64)
        lam_back = sum(c.count * float(c.log_mgf(np.array([v_back]))[0][0]) for c in self.parts)
        eps_v = (est[j] - lam_back) / (v - v_back) - 1 / v - 1 / (1 + v)
        ref = -v * eps_v + est[j] - math.log(v) - math.log1p(v)
        target = log_tol + ref - math.log(8.0)
        # (a) aliasing: step small enough for the Chernoff bounds at eps_v
        ws, upper_ws = self._chernoff_candidates(j)
        log_b = _log_c(ws) + upper_ws - ws * eps_v
        cand = [2 * math.pi * (v - w) / _gap(b, target) for w, b in zip(ws, log_b) if w < v]
        cand.append(2 * math.pi * v / _gap(min(0.0, self.log_finite_mass), target))
        step_neg = max(cand)
        cand = [2 * math.pi * (w - v) / _gap(b, target) for w, b in zip(ws, log_b) if w > v]
        if math.isfinite(self.sup) and self.sup > eps_v:
            cand.append(2 * math.pi / (self.sup - eps_v))
        step_pos = max(cand) if cand else step_neg
        step = min(step_neg, step_pos)
        # (b) truncation: smallest N with the tail below target
        log_ms = [float(c.log_mgf(np.array([v]))[0][0]) for c in self.parts]
        need = math.pi * math.exp(target + v * eps_v - est[j])  # J is relative to e^{-v eps + Lambda}
        n = self._points_for(j, step, need, log_ms)
        while n > 64 and self._quadrature_work(v, step, n) > self.options.max_work:
            n //= 2  # bounded cost: the (certified) truncation error is then larger
        while True:
            try:
                phi, err_rnd, err_quad = self._phi_grid(v, step, n, log_ms)
                break
            except ValueError:  # a quadrature rule for this u-range would be too large
                if n <= 64:
                    raise
                n //= 2
        u = step * np.arange(n)
        trunc = float(self._truncation(j, np.array([(n - 1) * step]), log_ms)[0])
        if trunc > need:
            _LOG.debug("cf: grid for v=%g capped at %d points; truncation %.3g > target %.3g", v, n, trunc, need)
        z = u + 1j * v
        denom = (1j * z) * (1j * z - 1)
        weights = np.full(n, 1.0)
        weights[0] = 0.5
        w = weights * phi / denom
        inv = weights / np.abs(denom)
        g = _Grid(
            v=v,
            step=step,
            u=u,
            weighted=w,
            sum_abs=float(np.sum(np.abs(w))),
            sum_abs_u=float(np.sum(np.abs(w) * u)),
            phi_rounding=float(np.sum(err_rnd * inv)),
            phi_quadrature=float(np.sum(err_quad * inv)),
            truncation=trunc,
        )
        _LOG.debug("cf: grid v=%.4g step=%.4g points=%d truncation=%.3g", v, step, n, trunc)
        self._grids[j] = g
        return g

    def _points_for(self, j: int, step: float, need: float, log_ms: list[float]) -> int:
        """Fewest grid points (to 1/64, capped at ``max_grid_points``) whose truncation bound is at
        most ``need``: the first passing size among 16, 32, ... and then among 64 sizes below it, each
        in one vectorised evaluation (the bound does not increase with the size)."""
        n_max = self.options.max_grid_points
        sizes = [n for n in (16 << i for i in range(64)) if n < n_max] + [n_max]

        def first_passing(candidates: np.ndarray, default: int) -> int:
            ok = np.flatnonzero(self._truncation(j, (candidates - 1) * step, log_ms) <= need)
            return int(candidates[ok[0]]) if ok.size else default

        n = first_passing(np.array(sizes, dtype=float), n_max)
        lo_n, resolution = max(2, n // 2), max(1, n // 64)
        return first_passing(np.arange(lo_n + resolution, n, resolution, dtype=float), n)

    def _quadrature_work(self, v: float, step: float, n: int) -> float:
        """Multiply-adds of the quadrature phi of all components for an n-point grid."""
        work = 0.0
        for c in self.parts:
            if c.quadrature:
                try:
                    work += n * c.rule(v, step * (n - 1)).nodes.size
                except ValueError:
                    return math.inf
        return work

    def _chernoff_candidates(self, j: int) -> tuple[np.ndarray, np.ndarray]:
        """Chernoff parameters w near v_j with upper bounds on Lambda(w): grid points within a
        factor 16 and eight off-grid points between v_j and each neighbour (cached)."""
        if j not in self._candidates:
            window = _window(j)
            _, upper = self.lam(window)
            offsets = np.array([1, 2, 3, 4, 6, 8, 11, 14]) / 64
            fine = _V[j] * 2.0 ** np.concatenate([-offsets[::-1], offsets])
            fine_up = np.zeros(fine.shape)
            for c in self.parts:
                fine_up += c.count * c.log_mgf(fine)[1]
            ws = np.concatenate([_V[window], fine])
            ups = np.concatenate([upper, fine_up])
            keep = np.isfinite(ups) & (ws != _V[j])
            self._candidates[j] = (ws[keep], ups[keep])
        return self._candidates[j]

    def _phi_grid(self, v: float, step: float, n: int, log_ms: list[float]):
        """Phi_R(-z) / e^{Lambda(v)} at u = step * (0..n-1), with rounding and quadrature bounds."""
        u = step * np.arange(n)
        log_phi = np.zeros(n, complex)
        log_abs_up = np.zeros(n)
        log_abs_rnd = np.zeros(n)
        log_atom = np.zeros(n, complex)
        log_atom_up = np.zeros(n)
        exp_round = np.zeros(n)
        for c, log_m in zip(self.parts, log_ms):
            a_val, a_err = c.atom_values(v, u, log_m)
            c_val, c_rnd, c_quad = c.continuous_values(v, step, n, log_m)
            t = a_val + c_val
            with np.errstate(divide="ignore"):
                log_t = np.log(t)
                abs_t = np.abs(t)
                log_phi += c.count * log_t
                log_abs_rnd += c.count * np.log(abs_t + a_err + c_rnd)
                log_abs_up += c.count * np.log(abs_t + a_err + c_rnd + c_quad)
                if self.atomic:
                    log_atom += c.count * np.log(a_val)
                    log_atom_up += c.count * np.log(np.abs(a_val) + a_err)
            exp_round += c.count * (np.abs(np.where(np.isfinite(log_t), log_t, 0)) + 2)
        phi = np.exp(log_phi)
        base = np.exp(log_phi.real)
        # an error bound that overflows is +inf: the trivial bound, the right value (no warning)
        with np.errstate(invalid="ignore", over="ignore"):
            err_rnd = np.exp(log_abs_rnd) - base
            err_all = np.exp(log_abs_up) - base
            err_quad = np.maximum(err_all - np.maximum(err_rnd, 0), 0)
        err_rnd = np.maximum(err_rnd, 0) + 8 * _EPS * (exp_round + 4) * base
        if self.atomic:
            phi_a = np.exp(log_atom)
            err_rnd += np.maximum(np.exp(log_atom_up) - np.abs(phi_a), 0) + 8 * _EPS * (exp_round + 4) * np.abs(phi_a)
            phi = phi - phi_a
        return phi, err_rnd, err_quad

    # -- delta(eps) ------------------------------------------------------------------------------

    def evaluate(self, eps: np.ndarray) -> dict[str, np.ndarray]:
        """Estimate and every error term at each eps (flat array)."""
        eps = np.asarray(eps, dtype=float).reshape(-1)
        zeros = lambda: np.zeros(eps.shape)  # noqa: E731
        out = {k: zeros() for k in ("finite", "atoms_rounding", "truncation", "phi_rounding", "phi_quadrature_estimate",
                                     "sum_rounding", "aliasing", "chernoff_tail")}
        # m = -expm1(sum k_i log1p(-m_i)): a few ulps per term
        out["inf_mass_rounding"] = np.full(eps.shape, self.inf_mass * 8 * _EPS * (2 + len(self.parts)))
        inside = eps < self.sup
        if self.atomic and inside.any():
            d, e = self.atom_delta(eps[inside])
            out["finite"][inside] += d
            out["atoms_rounding"][inside] += e
        if self.continuous and inside.any():
            idx = np.flatnonzero(inside)
            js = self.saddle_index(eps[idx])
            # Far below the certifiable floor a Chernoff bound replaces the contour integral:
            # delta_R <= C(v) M(v) e^{-v eps} (no grid; such v can be huge near a bounded top).
            with np.errstate(over="ignore"):  # eps near the float maximum: -inf, the right limit
                log_chernoff = _log_c(_V[js]) + self.lam(js)[1] - _V[js] * eps[idx]
            tiny = log_chernoff < math.log(MIN_DELTA) - 10
            out["chernoff_tail"][idx[tiny]] = np.exp(log_chernoff[tiny])
            idx, js = idx[~tiny], js[~tiny]
            for j in np.unique(js):
                sel = idx[js == j]
                self._contour(int(j), eps[sel], sel, out)
        return out

    def _contour(self, j: int, eps: np.ndarray, sel: np.ndarray, out: dict[str, np.ndarray]) -> None:
        g = self.grid(j)
        lam_j = float(self.lam(np.array([j]))[0][0])
        v = g.v
        osc, terms = _oscillatory_sum(g.weighted, g.step, eps)
        # Everything is scaled by e^{-v eps + Lambda(v)}, which overflows when eps lies far
        # below the bulk of L (the smallest grid v is still too large there, e.g. mu ~ 3000 at
        # eps << mu^2/2). Form each product in log space (no inf * 0 = NaN): a term whose
        # factor is 0 stays 0, and the others become inf, so the upper bound is the trivial 1.
        log_scale = -v * eps + lam_j
        log_s = log_scale + math.log(g.step / math.pi)

        def scaled(log_factor, x):
            """e^{log_factor} * x (x >= 0 or an array of factors) without inf * 0."""
            x = np.asarray(x, dtype=float)
            with np.errstate(divide="ignore", over="ignore"):
                return np.where(x > 0, np.exp(log_factor + np.log(np.where(x > 0, x, 1.0))), 0.0)

        with np.errstate(over="ignore"):
            value = np.sign(osc) * scaled(log_s, np.abs(osc))
        out["finite"][sel] += value
        out["truncation"][sel] += scaled(log_scale - math.log(math.pi), g.truncation)
        out["phi_rounding"][sel] += scaled(log_s, g.phi_rounding)
        out["phi_quadrature_estimate"][sel] += scaled(log_s, g.phi_quadrature)
        out["sum_rounding"][sel] += scaled(
            log_s, _EPS * ((terms + 8) * g.sum_abs + 2 * np.abs(eps) * g.sum_abs_u)
        ) + np.abs(value) * 4 * _EPS * (np.abs(log_scale) + 4)
        out["aliasing"][sel] += self._aliasing(j, g.step, eps)

    def _aliasing(self, j: int, step: float, eps: np.ndarray) -> np.ndarray:
        """Bound on the aliasing terms j != 0 of the trapezoid sum (they are >= 0)."""
        v = float(_V[j])
        ws, upper = self._chernoff_candidates(j)
        log_b = (_log_c(ws) + upper)[None, :] - np.outer(eps, ws)  # log (C(w) M(w) e^{-w eps})
        # j < 0: e^{-2 pi v |j| / step} delta_R(eps - 2 pi |j| / step), delta_R(s) <= C(w) M(w) e^{-w s}, w < v
        rate = 2 * math.pi * np.abs(v - ws) / step
        geometric = -rate - _log_expm1_neg(np.maximum(rate, 1e-300))
        below = ws < v
        neg = np.min(np.where(below[None, :], log_b + geometric[None, :], np.inf), axis=1)
        rate0 = 2 * math.pi * v / step
        neg = np.minimum(neg, min(0.0, self.log_finite_mass) - rate0 - float(_log_expm1_neg(rate0)))
        # j > 0: e^{2 pi v j / step} delta_R(eps + 2 pi j / step), w > v; zero beyond the support
        above = ws > v
        pos = np.min(np.where(above[None, :], log_b + geometric[None, :], np.inf), axis=1)
        pos = np.where(eps + 2 * math.pi / step >= self.sup, -np.inf, pos)
        with np.errstate(over="ignore"):
            return np.exp(neg) + np.exp(pos)

    def bounds(self, eps: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, np.ndarray]]:
        """(lower, estimate, upper, terms) of delta at each eps (any shape)."""
        e = np.asarray(eps, dtype=float)
        terms = self.evaluate(e.reshape(-1))
        est = self.inf_mass + terms["finite"]
        err = sum(terms[k] for k in ("atoms_rounding", "truncation", "phi_rounding", "phi_quadrature_estimate",
                                      "sum_rounding", "inf_mass_rounding", "chernoff_tail"))
        flat = e.reshape(-1)
        with np.errstate(over="ignore"):
            # delta >= 1 - e^eps and delta >= m (less their rounding)
            trivial = np.maximum(
                -np.expm1(np.minimum(flat, 700.0)) - 4 * _EPS, self.inf_mass - terms["inf_mass_rounding"]
            )
        # Unresolvable (an error term or the estimate overflowed, see _contour; NaN cannot
        # arise but is treated alike): only the trivial bounds m <= delta <= 1 remain.
        lost = ~np.isfinite(est) | ~np.isfinite(err)
        with np.errstate(invalid="ignore"):
            upper = np.where(lost, 1.0, np.clip(est + err, 0.0, 1.0))
            lower = np.where(lost, 0.0, np.clip(est - err - terms["aliasing"], 0.0, 1.0))
        lower = np.clip(np.maximum(lower, trivial), 0.0, 1.0)
        upper = np.maximum(upper, lower)
        est = np.clip(np.where(lost, upper, est), lower, upper)
        shape = e.shape
        return lower.reshape(shape), est.reshape(shape), upper.reshape(shape), terms


def _window(j: int, width: int = 16) -> np.ndarray:
    """Grid indices within a factor 2^(width/4) of v_j (candidate Chernoff parameters)."""
    return np.arange(max(0, j - width), min(_V.size, j + width + 1))


def _convex_argmin(objective, shape: tuple[int, ...]) -> np.ndarray:
    """Per element, the index j of the v-grid minimising ``objective(j)`` (vectorised over
    elements; convex in j, +inf allowed on a suffix): binary search for the first j with
    objective(j + 1) >= objective(j)."""
    lo = np.zeros(shape, dtype=int)
    hi = np.full(shape, _V.size - 1)
    while np.any(lo < hi):
        mid = (lo + hi) // 2
        with np.errstate(invalid="ignore"):
            rising = ~(objective(np.minimum(mid + 1, _V.size - 1)) < objective(mid))
        hi = np.where((lo < hi) & rising, mid, hi)
        lo = np.where((lo < hi) & ~rising, mid + 1, lo)
    return lo


def _gap(log_bound: float, target: float) -> float:
    """-log r for the largest r with e^{log_bound} r / (1 - r) <= e^{target}."""
    x = target - log_bound
    # r / (1 - r) <= e^x  <=>  r <= e^x / (1 + e^x)
    return max(float(np.logaddexp(0.0, -x)), 1e-3)


#: Elements per block of the outer product of two atom tables (bounded memory: ~10 arrays of this size).
_PRODUCT_BLOCK = 1 << 21


def _product_atoms(loc: np.ndarray, logp: np.ndarray, cl: np.ndarray, cp: np.ndarray,
                   max_atoms: int) -> tuple[np.ndarray, np.ndarray, float]:
    """The heaviest ``max_atoms`` atoms of the product of two atom tables, and (the log of) an upper bound
    on the mass dropped.

    Built in blocks of rows of the outer product, each merged into the atoms kept so far, so that no
    temporary exceeds ``max_atoms + _PRODUCT_BLOCK`` elements (the whole product of a 4e5-atom table
    with a 500-atom one would need 1.5 GB per array). Entries at or below the current threshold (the
    lightest kept atom, which only rises) are dropped at once; every dropped mass is summed in linear
    scale after a shift by the largest log-mass (terms that underflow are each below 1e-300 times it:
    ``size * 1e-300`` of the shift is added).
    """
    if loc.size * cl.size <= max_atoms:
        return (loc[:, None] + cl[None, :]).reshape(-1), (logp[:, None] + cp[None, :]).reshape(-1), -math.inf
    rows = max(1, _PRODUCT_BLOCK // max(cl.size, 1))
    top = float(np.max(logp) + np.max(cp))
    kept_loc, kept_logp = np.zeros(0), np.zeros(0)
    threshold, dropped = -np.inf, 0.0
    for start in range(0, loc.size, rows):
        block_logp = (logp[start:start + rows, None] + cp[None, :]).reshape(-1)
        low = block_logp <= threshold
        if low.any():
            dropped += float(np.sum(np.exp(block_logp[low] - top)))
            block_logp = block_logp[~low]
            block_loc = (loc[start:start + rows, None] + cl[None, :]).reshape(-1)[~low]
        else:
            block_loc = (loc[start:start + rows, None] + cl[None, :]).reshape(-1)
        kept_loc = np.concatenate([kept_loc, block_loc])
        kept_logp = np.concatenate([kept_logp, block_logp])
        if kept_loc.size > max_atoms:
            order = np.argpartition(kept_logp, kept_loc.size - max_atoms)
            drop, keep = order[:kept_loc.size - max_atoms], order[kept_loc.size - max_atoms:]
            dropped += float(np.sum(np.exp(kept_logp[drop] - top)))
            threshold = float(np.min(kept_logp[keep]))
            kept_loc, kept_logp = kept_loc[keep], kept_logp[keep]
    # relative rounding of the sum of up to size terms, and the underflowed terms
    dropped = dropped * (1 + 4 * _EPS * math.log2(loc.size * cl.size + 2)) + loc.size * cl.size * 1e-300
    return kept_loc, kept_logp, (math.log(dropped) + top if dropped > 0 else -math.inf)
