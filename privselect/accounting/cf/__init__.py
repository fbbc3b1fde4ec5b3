"""Characteristic-function (phi) accountant with a certified, added error bound.

Zhu, Dong, Wang, "Optimal Accounting of Differential Privacy via Characteristic Function",
AISTATS 2022 (the paper's "Analytical Fourier Accountant"), evaluated with the shifted-contour
inversion of accounting-cf.md §7 instead of the paper's Gil-Pelaez quadrature.

What is computed
----------------
For one neighbouring direction (remove or add; symmetric mechanisms have one), the composed
privacy loss ``L`` is the sum of independent component losses (``composed_losses``), and

    delta(eps) = P[L = inf] + E_P[(1 - e^{eps - L})_+; L finite]                     (every real eps)

(accounting-cf.md §1.1, §2.6). The masses at +inf compose as ``m = 1 - prod (1 - m_i)^{k_i}``;
the finite part is the sub-probability law whose phi is ``Phi = prod phi_i^{k_i}`` (Zhu, Dong,
Wang 2022, Prop. 12 (000) / 13 (002), Prop. 37/38). `PrivacyProfile`
takes the maximum over the directions at query time.

The finite part is split into its *atomic* part ``A`` (the product of the components' atomic
parts: randomized response, pure DP, the end points of a Laplace loss, ...) and the rest
``R``, which is absolutely continuous whenever some component has a continuous part.

* ``delta_A(eps) = sum_a p_a (1 - e^{eps - a})_+`` is summed exactly over the enumerated atoms
  (binomial masses for each component; pruned atoms, if any, only add to the upper bound).
* ``delta_R`` is inverted along the line ``Im z = v > 0`` (accounting-cf.md §7):

      delta_R(eps) = (1/pi) int_0^inf Re[ e^{i z eps} Phi_R(-z) / (i z (i z - 1)) ] du,
      z = u + i v,  Phi_R(-z) = E_R[e^{(v - iu) L}],  Phi_R = Phi - Phi_A,

  with the trapezoid rule of step ``Delta`` on ``0 <= u <= U``. ``v`` is taken from the grid
  ``2^{j/4}`` at the minimum of the saddle function ``-v eps + log M(v) - log v - log(1 + v)``
  (``M`` the composed moment generating function); the integrand is then non-oscillatory
  near u = 0 and ``delta`` keeps full relative precision down to ~1e-250. Phi-values on a
  (v, u)-grid are cached, so many eps queries cost one small matrix product.

Certified error (added: ``upper = estimate + error``, ``lower = estimate - error``)
-----------------------------------------------------------------------------------
(a) *Aliasing.* By Poisson summation the infinite trapezoid sum equals
    ``sum_j e^{2 pi v j / Delta} delta_R(eps + 2 pi j / Delta)``. The terms j != 0 are >= 0, so
    the trapezoid over-estimates delta_R: nothing is added to the upper bound. For the lower
    bound they are bounded by Chernoff: ``delta_R(s) <= C(w) M(w) e^{-w s}`` with
    ``C(w) = sup_{x>=0} (1 - e^{-x}) e^{-w x} = (w/(1+w))^w / (1+w)``, using some ``w > v``
    for j > 0 and ``w < v`` (or the total mass) for j < 0 (geometric sums); the j > 0 terms
    vanish exactly when ``eps + 2 pi / Delta`` exceeds the top of the support.
(b) *Truncation* at ``U``: the omitted trapezoid terms are bounded by
    ``(1/pi) e^{-v eps} int_U^inf E(u) / u^2 du`` with the envelope
    ``E(u) = prod (A_i(v) + G_i(u))^{k_i} - prod A_i(v)^{k_i}`` >= |Phi_R(-z)|, where ``A_i`` is the
    tilted atomic mass and ``G_i(u)`` a non-increasing bound on the component's continuous
    part (``PrivacyLoss.log_fourier_envelope``: exact for the Gaussian; a total-variation bound
    TV/|u| for Laplace and subsampled losses). The integral is bounded on geometric panels
    using monotonicity. ``Delta`` and ``U`` are sized so (a) and (b) stay below ``rel_tol``
    of the saddle-point magnitude; the reported terms are evaluated at each eps.
(c) *Rounding.* Each phi value carries an absolute error bound (from the magnitude of the
    computed logs and phases); the composed bound is
    ``prod (|phi_i| + e_i)^{k_i} - prod |phi_i|^{k_i}`` plus the rounding of ``exp(sum k log)``;
    sums are blocked, so an accumulation of N terms in any order costs at most
    ``(sqrt N + N / sqrt N + 8) eps_mach sum|terms|`` (quadrature sums: chunks of 1024), plus
    the phase error ``2 eps_mach |u eps|``; the atomic sum adds the rounding of its masses,
    of its suffix sums and of ``eps - a``.
(d) *Quadrature of phi for subsampled mechanisms* (no closed form). Gaussian base: a
    truncated trapezoid rule in the standard-normal variable whose error is *proven*: the
    omitted nodes are bounded by the rule's Gaussian tail bounds, and the aliasing error of the
    infinite rule by Trefethen, Weideman 2014 (SIAM Review), Thm 5.1, on the strip
    ``|Im x| < pi / (3 mu)`` where the integrand grows at most by ``C e^{b^2/2 + |u| mu b}``
    (``ContinuousQuadrature.aliasing_relative``); the step is chosen so this is below e^-40 of
    the tilted mass. Laplace base: composite Gauss-Legendre, whose two-rule difference times
    ``quadrature_safety`` (default 10) is only an *estimate*; such profiles report
    ``certified = False`` (``PrivacyProfile.certified``), so "auto" never certifies with them.
    The term is reported as ``phi_quadrature_rel`` (proven) or ``phi_quadrature_estimate_rel``
    in ``ErrorBudget.details``. All other terms are bounds (up to the accuracy of the special
    functions involved).
(e) Where even the Chernoff bound ``C(v) M(v) e^{-v eps}`` is below ``MIN_DELTA`` (e.g. eps
    just below the top of a bounded loss), it replaces the contour integral as the upper
    bound (``chernoff_tail``) and the lower bound is the trivial one.

``ErrorBudget.details`` reports each term relative to delta (maximum over three reference
points delta ~ 1e-2, 1e-5, 1e-10); ``delta_error`` is the widest bracket there and
``eps_error`` the matching eps width.

Cost and limits: Gaussian and randomized-response compositions need grids of tens to hundreds
of points; DP-SGD (q = 256/60000, sigma = 1.1, T = 14063) a few thousand, about 0.3 s per
eps(delta). Laplace-type and subsampled losses decay only like TV/u, so grids are longer
(capped by ``max_grid_points`` and ``max_work``); for one or a few subsampled steps with a
tiny rate, or a small total loss, the certified truncation term can then dominate (brackets of
1e-6 .. 1e-1 relative) -- still valid, and tightened by raising ``max_work``.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import special

from ... import _validation as check
from ...mechanisms import Mechanism
from ..plrv import (
    DirectedLosses,
    GaussianLoss,
    LaplaceLoss,
    PrivacyLoss,
    SubsampledLoss,
    TwoPointLoss,
    UnsupportedMechanismError,
    composed_losses,
)
from ..profile import CertificationError, DirectionalCurve, ErrorBudget, PrivacyProfile

__all__ = ["CFAccountant", "CFCurve", "cf_profile", "MIN_DELTA"]

_LOG = logging.getLogger(__name__)
_EPS = float(np.finfo(float).eps)
#: Smallest delta the CF accountant certifies (relative precision is kept far below this).
MIN_DELTA = 1e-250
#: Damping values v = Im(-z) of the integration lines: 2^(j/4), 1e-3 .. 2e6.
_V = 2.0 ** (np.arange(-40, 85) / 4.0)
_CHUNK = 1 << 21  # elements per temporary (u x nodes, eps x u) array


def _log_c(w: np.ndarray) -> np.ndarray:
    """log C(w), C(w) = sup_{x >= 0} (1 - e^{-x}) e^{-w x} = (w/(1+w))^w / (1+w); C(0) = 1."""
    w = np.asarray(w, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(w > 0, w * (np.log(w) - np.log1p(w)) - np.log1p(w), 0.0)


@functools.cache
def _blas_controller():
    try:  # a dependency of scikit-learn, hence of privselect
        from threadpoolctl import ThreadpoolController
    except ImportError:  # pragma: no cover
        return None
    return ThreadpoolController()


def _single_threaded_blas():
    """Context that keeps BLAS on one thread: the products here are small and many, and
    threaded BLAS spends its time synchronising (10-50x slower on a busy machine)."""
    controller = _blas_controller()
    if controller is None:  # pragma: no cover
        return contextlib.nullcontext()
    return controller.limit(limits=1, user_api="blas")


def _fourier_sum(log_a: np.ndarray, loc: np.ndarray, step: float, n: int) -> tuple[np.ndarray, np.ndarray]:
    """S_m = sum_j e^{log_a_j} e^{-i m step loc_j} for m = 0..n-1, and a rounding bound for each.

    Blocked evaluation: m = b B + r with B ~ sqrt(n), so only (B + n/B) complex exponentials
    per node are computed and the rest is a matrix product over node chunks of 1024 (no
    recurrence, so no error growth along u). Rounding: each term's phase is a sum of two
    products (error <= 2 eps_mach |u loc_j| + eps_mach) and the sum is accumulated in chunks
    (any order inside a chunk): (1024 + chunks + 8) eps_mach sum a_j.
    """
    a = np.exp(log_a)
    chunk = 1024
    chunks = int(math.ceil(loc.size / chunk))
    if n == 1:  # u = 0 only (the tilted mass): a plain sum, pairwise (error below the bound used)
        rounding = _EPS * (chunk + chunks + 8) * float(np.sum(a))
        return np.array([np.sum(a)], dtype=complex), np.array([rounding])
    block = max(1, int(math.ceil(math.sqrt(n))))
    blocks = int(math.ceil(n / block))
    rows = np.arange(block) * step
    cols = np.arange(blocks) * (step * block)
    out = np.zeros((block, blocks), complex)
    with _single_threaded_blas():
        for s in range(0, loc.size, chunk):
            lc = loc[s:s + chunk]
            inner = np.exp(-1j * np.outer(rows, lc))
            outer = np.exp(-1j * np.outer(lc, cols)) * a[s:s + chunk, None]
            out += inner @ outer
    values = out.T.reshape(-1)[:n]
    u = step * np.arange(n)
    rounding = _EPS * ((chunk + chunks + 8) * float(np.sum(a)) + 2 * u * float(np.sum(a * np.abs(loc))))
    return values, rounding


def _oscillatory_sum(weighted: np.ndarray, step: float, eps: np.ndarray) -> tuple[np.ndarray, int]:
    """Re sum_n W_n e^{i n step eps} for each eps, and the accumulation length of each sum.

    Blocked like `_fourier_sum` (n = b B + r): 2 sqrt(N) exponentials per eps and one
    matrix product; the sum over r (B terms) and over b (N/B terms) is accumulated in any
    order, so its rounding is bounded by (B + N/B) eps_mach sum |W_n|.
    """
    n = weighted.size
    block = max(1, int(math.ceil(math.sqrt(n))))
    blocks = int(math.ceil(n / block))
    padded = np.zeros(block * blocks, complex)
    padded[:n] = weighted
    matrix = padded.reshape(blocks, block)
    rows = np.arange(block) * step
    cols = np.arange(blocks) * (step * block)
    out = np.empty(eps.shape)
    width = max(1, _CHUNK // (block + blocks))
    with _single_threaded_blas():
        for s in range(0, eps.size, width):
            e = eps[s:s + width]
            inner = matrix @ np.exp(1j * np.outer(rows, e))
            out[s:s + width] = np.real(np.sum(np.exp(1j * np.outer(cols, e)) * inner, axis=0))
    return out, block + blocks


def _exp_ratio(value: float, log_ref: float) -> float:
    """value / e^{log_ref} without overflow (value >= 0)."""
    return math.exp(math.log(value) - log_ref) if value > 0 else 0.0


def _log_expm1_neg(x: np.ndarray) -> np.ndarray:
    """log(1 - e^{-x}) for x > 0."""
    x = np.asarray(x, dtype=float)
    with np.errstate(divide="ignore"):
        return np.where(x > math.log(2.0), np.log1p(-np.exp(-x)), np.log(-np.expm1(-x)))


# ----------------------------------------------------------------------------------------
# How the accountant reads each privacy-loss law (registered per PrivacyLoss class)
# ----------------------------------------------------------------------------------------


class _Component:
    """One component law (count ``k``) seen on the line Im(-z) = v.

    Values are normalised by the tilted mass ``M(v)`` (``log_m``) so that |value| <= 1.
    """

    has_continuous = False
    quadrature = False

    def __init__(self, loss: PrivacyLoss, count: int, accountant: "CFAccountant") -> None:
        self.loss, self.count, self.options = loss, int(count), accountant
        at = loss.atoms()
        keep = at.primary > 0
        self.atom_loc = np.asarray(at.locations[keep], dtype=float)
        self.atom_logp = np.log(at.primary[keep])
        self.inf_mass = float(loss.inf_mass)
        self.sup = float(loss.support[1])

    def log_atom_mgf(self, v: np.ndarray) -> np.ndarray:
        v = np.asarray(v, dtype=float)
        if not self.atom_loc.size:
            return np.full(v.shape, -np.inf)
        return special.logsumexp(self.atom_logp[None, :] + v.reshape(-1, 1) * self.atom_loc[None, :], axis=1).reshape(
            v.shape
        )

    def log_continuous_mgf(self, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(estimate, absolute error) of log E_P[e^{vL}; continuous part] (error in log units)."""
        v = np.asarray(v, dtype=float)
        return np.full(v.shape, -np.inf), np.zeros(v.shape)

    def log_mgf(self, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(estimate, upper bound) of log M(v) = log E_P[e^{vL}; L finite]."""
        atoms = self.log_atom_mgf(v)
        cont, err = self.log_continuous_mgf(v)
        est = np.logaddexp(atoms, cont)
        upper = np.logaddexp(atoms, cont + err)
        return est, upper + 4 * _EPS * (1 + np.abs(upper))

    def atom_values(self, v: float, u: np.ndarray, log_m: float) -> tuple[np.ndarray, np.ndarray]:
        """Normalised E_P[e^{(v-iu)L}; atoms] and an absolute error bound."""
        if not self.atom_loc.size:
            return np.zeros(u.shape, complex), np.zeros(u.shape)
        expo = (self.atom_logp + v * self.atom_loc - log_m)[None, :] - 1j * u[:, None] * self.atom_loc[None, :]
        terms = np.exp(expo)
        size = np.abs(terms)
        err = 4 * _EPS * (size * (4 + np.abs(u[:, None] * self.atom_loc[None, :]) + np.abs(expo.real))).sum(axis=1)
        return terms.sum(axis=1), err

    def continuous_values(
        self, v: float, step: float, n: int, log_m: float
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Normalised E_P[e^{(v-iu)L}; continuous part] at u = step * (0..n-1).

        Returns (value, rounding error bound, quadrature error estimate)."""
        zero = np.zeros(n)
        return zero.astype(complex), zero, zero

    def log_continuous_envelope(self, v: float, u: np.ndarray) -> np.ndarray:
        """Non-increasing (in u >= 0) bound on log |E_P[e^{(v-iu)L}; continuous part]|."""
        return np.full(np.shape(u), -np.inf)


@functools.singledispatch
def _component(loss: PrivacyLoss, count: int, accountant: "CFAccountant") -> _Component:
    raise UnsupportedMechanismError(f"the cf accountant cannot read a {type(loss).__name__} privacy loss")


class _GaussianComponent(_Component):
    has_continuous = True

    def log_continuous_mgf(self, v):
        v = np.asarray(v, dtype=float)
        est = self.loss.mu**2 * v * (v + 1) / 2
        return est, 4 * _EPS * (1 + est)

    def continuous_values(self, v, step, n, log_m):
        u = step * np.arange(n)
        mu2 = self.loss.mu**2
        log_val = mu2 * v * (v + 1) / 2 - log_m - mu2 * u * u / 2 - 1j * (mu2 * u * (1 + 2 * v) / 2)
        val = np.exp(log_val)
        rnd = np.abs(val) * 8 * _EPS * (2 + mu2 * (u * u + v * v + v) / 2 + np.abs(log_val.imag))
        return val, rnd, np.zeros(u.shape)

    def log_continuous_envelope(self, v, u):
        return self.loss.log_fourier_envelope(v, u) + 8 * _EPS * (1 + self.loss.mu**2 * v * (v + 1))


class _LaplaceComponent(_Component):
    has_continuous = True

    def log_continuous_mgf(self, v):
        v = np.asarray(v, dtype=float)
        est = np.real(self.loss.log_phi_continuous(-1j * v))
        return est, 8 * _EPS * (4 + np.abs(est) + v * self.loss.mu)

    def continuous_values(self, v, step, n, log_m):
        u = step * np.arange(n)
        log_val = self.loss.log_phi_continuous(-u - 1j * v) - log_m
        val = np.exp(log_val)
        rnd = np.abs(val) * 8 * _EPS * (8 + np.abs(log_val) + (v + np.abs(u)) * self.loss.mu + np.abs(log_m))
        return val, rnd, np.zeros(u.shape)

    def log_continuous_envelope(self, v, u):
        return self.loss.log_fourier_envelope(v, u) + 8 * _EPS * (4 + v * self.loss.mu)


class _SubsampledComponent(_Component):
    """Poisson/without-replacement subsampled loss: phi by quadrature over the base law."""

    def __init__(self, loss, count, accountant):
        super().__init__(loss, count, accountant)
        try:
            probe = loss.continuous_quadrature(1.0, 0.0)
        except ValueError as exc:  # the rule itself refuses: more nodes than it may allocate
            raise CertificationError(f"cf accountant: one subsampled step ({loss!r}): {exc}; the closed-form and "
                                     "RDP bounds answer this regime (accountant='auto')") from None
        cap = self.options.max_quadrature_nodes
        if probe.nodes.size > cap:  # the cost estimate, before any phi grid is filled
            raise CertificationError(
                f"cf accountant: one subsampled step ({loss!r}) needs {probe.nodes.size} quadrature nodes "
                f"per phi value (> max_quadrature_nodes={cap}): the base's privacy loss is too large (tiny noise); "
                "the closed-form and RDP bounds answer this regime (accountant='auto')")
        self.has_continuous = probe.nodes.size > 0
        self.quadrature = self.has_continuous
        # proven quadrature error (Gaussian base: trapezoid aliasing bound) or only an estimate
        self.estimate = self.has_continuous and not probe.rigorous
        self._mgf_cache: dict[float, tuple[float, float]] = {}
        self._last_rule: tuple[tuple[float, float], Any] | None = None

    def rule(self, v: float, u_max: float):
        """The loss's quadrature rule for (v, u_max); the last one is kept, since sizing a grid
        (`CFCurve._quadrature_work`) and filling it ask for the same rule in turn."""
        key = (float(v), float(u_max))
        if self._last_rule is None or self._last_rule[0] != key:
            self._last_rule = (key, self.loss.continuous_quadrature(*key))
        return self._last_rule[1]

    def _sums(self, v: float, step: float, n: int, u_max: float):
        """Fine and coarse quadrature sums of E[e^{(v - iu) L}; continuous] at u = step * (0..n-1).

        Returns (fine, coarse, log_shift, rounding_fine, truncation): ``fine`` and ``coarse`` are
        scaled by e^{-log_shift}; ``rounding_fine`` bounds the rounding of the fine sum (same
        scale); ``truncation`` is the rules' rigorous tail bound (absolute).
        """
        rule = self.rule(v, u_max)
        log_a, loss = self.loss.quadrature_terms(v, rule.nodes, rule.log_weights)
        shift = float(np.max(log_a))
        fine, rounding = _fourier_sum(log_a - shift, loss, step, n)
        coarse = None
        if not rule.rigorous:  # the coarse rule only serves the error estimate of a non-rigorous rule
            log_ac, loss_c = self.loss.quadrature_terms(v, rule.coarse_nodes, rule.coarse_log_weights)
            coarse = _fourier_sum(log_ac - shift, loss_c, step, n)[0]
        # each amplitude carries a relative error ~ eps_mach * |log a_j| (exp of a rounded log)
        a = np.exp(log_a - shift)
        rounding = rounding + 4 * _EPS * float(np.sum(a * (np.abs(log_a) + abs(shift) + 1)))
        return fine, coarse, shift, rounding, rule

    @staticmethod
    def _quadrature_error(rule, fine, rounding, shift: float, u: np.ndarray) -> np.ndarray:
        """Proven |exact - fine| at each u (scaled by e^{-shift}): aliasing + omitted nodes.

        The tilted mass m (the u = 0 integral) enters the aliasing bound; it is bounded by the
        u = 0 sum: m <= (T + rounding + truncation) / (1 - alias(0)).
        """
        trunc = _exp_ratio(rule.truncation, shift)
        alias = rule.aliasing_relative(u)
        alias0 = float(rule.aliasing_relative(np.zeros(1))[0])
        if not alias0 < 0.5:
            return np.full(np.shape(u), np.inf)
        mass = (float(fine[0].real) + float(np.atleast_1d(rounding)[0]) + trunc) / (1 - alias0)
        with np.errstate(over="ignore", invalid="ignore"):  # an overflowing bound is +inf (valid, useless)
            out = alias * mass + trunc
        return np.where(np.isnan(out), np.inf, out)

    def log_continuous_mgf(self, v):
        v = np.asarray(v, dtype=float)
        est = np.full(v.shape, -np.inf)
        err = np.zeros(v.shape)
        if not self.has_continuous:
            return est, err
        safety = self.options.quadrature_safety
        for idx, vv in np.ndenumerate(v):
            key = float(vv)
            if key not in self._mgf_cache:
                try:
                    fine, coarse, shift, rnd, rule = self._sums(key, 0.0, 1, 0.0)
                except ValueError:  # too many nodes: this v is out of reach
                    self._mgf_cache[key] = (math.inf, 0.0)
                    continue
                f = float(fine[0].real)
                if not (math.isfinite(shift) and f > 0):
                    self._mgf_cache[key] = (math.inf, 0.0)
                    continue
                if rule.rigorous:
                    rel = (float(self._quadrature_error(rule, fine, rnd, shift, np.zeros(1))[0]) + rnd[0]) / f
                else:
                    rel = ((safety * abs(f - coarse[0].real) + rnd[0]) / f
                           + _exp_ratio(rule.truncation, shift + math.log(f)))
                self._mgf_cache[key] = (shift + math.log(f), math.log1p(rel))
            est[idx], err[idx] = self._mgf_cache[key]
        return est, err

    def continuous_values(self, v, step, n, log_m):
        if not self.has_continuous:
            return super().continuous_values(v, step, n, log_m)
        fine, coarse, shift, rnd, rule = self._sums(v, step, n, step * (n - 1))
        scale = math.exp(shift - log_m)
        val = fine * scale
        if rule.rigorous:
            quad = self._quadrature_error(rule, fine, rnd, shift, step * np.arange(n)) * scale
        else:
            quad = (self.options.quadrature_safety * np.abs(fine - coarse) * scale
                    + _exp_ratio(rule.truncation, log_m))
        return val, rnd * scale + 8 * _EPS * np.abs(val) * (4 + abs(shift - log_m)), quad

    def log_continuous_envelope(self, v, u):
        if not self.has_continuous:
            return super().log_continuous_envelope(v, u)
        est, err = self.log_continuous_mgf(np.array([v]))
        cap = float(est[0] + err[0])
        return np.minimum(self.loss.log_fourier_envelope(v, u), cap)


_component.register(GaussianLoss, _GaussianComponent)
_component.register(LaplaceLoss, _LaplaceComponent)
_component.register(TwoPointLoss, _Component)


@_component.register(SubsampledLoss)
def _subsampled_component(loss: SubsampledLoss, count: int, accountant: "CFAccountant") -> _Component:
    if not isinstance(loss.base, (GaussianLoss, LaplaceLoss, TwoPointLoss)):
        raise UnsupportedMechanismError(
            f"the cf accountant cannot read a subsampled {type(loss.base).__name__} privacy loss"
        )
    return _SubsampledComponent(loss, count, accountant)


# ----------------------------------------------------------------------------------------
# One direction: composition, atoms, cached contour grids
# ----------------------------------------------------------------------------------------


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

    def __init__(self, parts: tuple[tuple[PrivacyLoss, int], ...], accountant: "CFAccountant") -> None:
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

    def atoms(self) -> "_AtomTable":
        """Composed atoms (the product of the components' atomic parts), built once."""
        if self._atoms is None:
            loc, logp, rel = np.zeros(1), np.zeros(1), 0.0
            pruned = -np.inf
            for c in self.parts:
                cl, cp, cr, cut = _power_atoms(c.atom_loc, c.atom_logp, c.count, self.options.max_atoms)
                pruned = np.logaddexp(pruned, cut)  # every mass is <= 1: the cut mass bounds its products
                loc = (loc[:, None] + cl[None, :]).reshape(-1)
                logp = (logp[:, None] + cp[None, :]).reshape(-1)
                rel = rel + cr + 4 * _EPS
                if loc.size > self.options.max_atoms:
                    keep = np.argpartition(logp, loc.size - self.options.max_atoms)[loc.size - self.options.max_atoms:]
                    drop = np.ones(loc.size, bool)
                    drop[keep] = False
                    pruned = np.logaddexp(pruned, special.logsumexp(logp[drop]))
                    loc, logp = loc[keep], logp[keep]
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


class _AtomTable:
    """Sorted atoms (location a, mass p) with suffix sums for delta_A(eps) = sum_{a > eps} p (1 - e^{eps - a}).

    Atoms with a - eps <= 1 are summed directly (log-space, ``-expm1``: no cancellation);
    the others through suffix sums S0 = sum p and S1 = sum p e^{-a}, combined as
    S0 - e^eps S1 >= (1 - e^-1) S0, so rounding is amplified at most 1.6x. Suffix sums are
    blocked (1024 per block, reversed cumsum inside and across blocks), each relative error
    <= (1024 + blocks + 4) eps_mach.
    """

    _BLOCK = 1024

    def __init__(self, loc: np.ndarray, logp: np.ndarray, rel: float, pruned: float) -> None:
        order = np.argsort(loc, kind="stable")
        self.loc, self.logp, self.rel, self.pruned = loc[order], logp[order], rel, pruned
        self.shift0 = float(np.max(self.logp))
        log1 = self.logp - self.loc
        self.shift1 = float(np.max(log1))
        self.suffix0 = self._suffix(np.exp(self.logp - self.shift0))
        self.suffix1 = self._suffix(np.exp(log1 - self.shift1))
        blocks = -(-self.loc.size // self._BLOCK)
        self.suffix_rel = (self._BLOCK + blocks + 4) * _EPS
        self.amax = float(np.max(np.abs(self.loc)))

    @classmethod
    def _suffix(cls, w: np.ndarray) -> np.ndarray:
        """out[i] = sum_{t >= i} w_t (out[n] = 0), summed in blocks."""
        n = w.size
        pad = -(-n // cls._BLOCK) * cls._BLOCK
        blocks = np.zeros(pad)
        blocks[:n] = w
        blocks = blocks.reshape(-1, cls._BLOCK)
        inner = np.cumsum(blocks[:, ::-1], axis=1)[:, ::-1]  # suffix within each block
        tails = np.concatenate([np.cumsum(inner[::-1, 0])[::-1][1:], [0.0]])  # later blocks
        return np.concatenate([(inner + tails[:, None]).reshape(-1)[:n], [0.0]])

    def delta(self, eps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        eps = np.asarray(eps, dtype=float)
        first = np.searchsorted(self.loc, eps, side="right")  # atoms > eps
        split = np.searchsorted(self.loc, eps + 1.0, side="right")  # atoms > eps + 1: suffix sums
        out = np.zeros(eps.shape)
        err = np.full(eps.shape, self.pruned)
        for i, (e, a, b) in enumerate(zip(eps, first, split)):
            near = 0.0
            if b > a:
                terms = self.logp[a:b] + _log_expm1_neg(self.loc[a:b] - e)
                near = math.exp(float(special.logsumexp(terms)))
                mass = math.exp(float(special.logsumexp(self.logp[a:b])))
                # relative rounding of the sum and of each exp(log); |eps - a| rounding inside expm1
                err[i] += near * (8 * _EPS * (math.log2(b - a + 1) + 8 + abs(math.log(near)) if near > 0 else 0.0))
                err[i] += 4 * _EPS * max(abs(e), self.amax) * mass
            far = 0.0
            s0 = self.suffix0[b]
            if s0 > 0:
                log0 = self.shift0 + math.log(s0)
                ratio = math.exp(e + self.shift1 + math.log(self.suffix1[b]) - log0) if self.suffix1[b] > 0 else 0.0
                far = math.exp(log0) * (1.0 - ratio)
                err[i] += 2 * (self.suffix_rel + 8 * _EPS * (abs(log0) + abs(e) + 4)) * math.exp(log0)
            out[i] = near + far
            err[i] += (near + far) * self.rel + b * math.exp(self.shift0 - 745.0)  # masses, underflow
        return out, err


def _gap(log_bound: float, target: float) -> float:
    """-log r for the largest r with e^{log_bound} r / (1 - r) <= e^{target}."""
    x = target - log_bound
    # r / (1 - r) <= e^x  <=>  r <= e^x / (1 + e^x)
    return max(float(np.logaddexp(0.0, -x)), 1e-3)


def _power_atoms(loc: np.ndarray, logp: np.ndarray, k: int,
                 max_atoms: int) -> tuple[np.ndarray, np.ndarray, float, float]:
    """Atoms of the k-fold convolution of a law with one or two atoms; (loc, log mass, rel. error,
    log of the mass left out).

    At most ``max_atoms`` atoms are enumerated (checked before allocating): beyond that, the window of
    binomial counts around the mean is kept and the mass outside it (a binomial tail, from scipy's
    regularised incomplete beta function, raised by a relative 1e-9) is returned to be added to the
    upper bound (Laplace(2) composed 1e12 times: a 1e6-atom window instead of a 7 TiB array).
    """
    if loc.size == 1:
        return np.array([k * loc[0]]), np.array([k * logp[0]]), 4 * _EPS * (1 + k * abs(logp[0])), -math.inf
    if loc.size != 2:
        raise UnsupportedMechanismError("the cf accountant composes laws with at most two finite atoms")
    total = float(np.logaddexp(logp[0], logp[1]))
    p_hi = math.exp(logp[1] - total)
    from scipy import stats  # lazily: importing scipy.stats costs ~1 s, only atomic laws need it

    cut = -math.inf
    if k + 1 <= max_atoms:
        j = np.arange(k + 1, dtype=float)
    else:
        start = int(min(max(0.0, round(k * p_hi - max_atoms / 2)), k + 1 - max_atoms))
        j = start + np.arange(max_atoms, dtype=float)
        with np.errstate(divide="ignore"):
            outside = np.logaddexp(stats.binom.logcdf(start - 1, k, p_hi), stats.binom.logsf(j[-1], k, p_hi))
        cut = float(outside) + k * total + 1e-9 if np.isfinite(outside) else float(outside)
    with np.errstate(divide="ignore"):
        pmf = stats.binom.pmf(j, k, p_hi)
        logpmf = np.where(pmf > 1e-290, np.log(pmf), stats.binom.logpmf(j, k, p_hi))
    rel = 64 * _EPS * (1 + math.log2(k + 1)) + 8 * _EPS * (k * abs(total) + float(np.max(np.abs(logpmf))))
    return j * loc[1] + (k - j) * loc[0], logpmf + k * total, rel, cut


# ----------------------------------------------------------------------------------------
# Public curve, accountant, profile
# ----------------------------------------------------------------------------------------


class CFCurve(DirectionalCurve):
    """H_{e^eps}(P^k || Q^k) of one direction by characteristic-function inversion.

    ``delta_bounds`` is certified for every real eps except for the subsampled-phi quadrature
    term, which is an estimate (see the module docstring; ``certified`` is then False). ``direction`` is ``"remove"``,
    ``"add"`` or ``"both"`` (symmetric mechanisms).
    """

    def __init__(self, direction: str, parts: tuple[tuple[PrivacyLoss, int], ...], accountant: "CFAccountant") -> None:
        self.direction = direction
        self._dir = _Direction(parts, accountant)
        self._budget: ErrorBudget | None = None

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
        lower, _, upper, _ = self._dir.bounds(eps)
        return lower, upper

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
        active = delta > self._dir.inf_mass
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


def closed_form(mechanism: Mechanism) -> bool:
    """True where every component's characteristic function has a closed form (no subsampling, so
    no quadrature): an eps(delta) query then costs a few contour evaluations (milliseconds)."""
    return all(_component.dispatch(type(loss)) is not _subsampled_component
               for directed, _ in readable_losses(mechanism) for loss in (directed.remove, directed.add))


def atomic(mechanism: Mechanism) -> bool:
    """True where every component's loss is purely atomic (randomized response, pure or approximate DP,
    subsampled or not): delta(eps) is then an exact sum over the enumerated atoms, vectorised over eps."""
    def is_atomic(loss: PrivacyLoss) -> bool:
        base = loss.base if isinstance(loss, SubsampledLoss) else loss
        return isinstance(base, TwoPointLoss)
    return all(is_atomic(loss) for directed, _ in readable_losses(mechanism) for loss in (directed.remove, directed.add))


def sampled_steps(mechanism: Mechanism) -> float:
    """Expected number of steps in which a given record takes part: the sum of count x sampling
    rate (rate 1 for a component that is not subsampled). Below about 1 the composed characteristic
    function barely decays in u (|phi(u)|^k tends to (1 - q)^k), so CF's grids are long and its
    bracket loose (1 to 10 steps at q <= 0.01: 10-20 s)."""
    return float(sum(count * (directed.remove.rate if _component.dispatch(type(directed.remove)) is _subsampled_component
                              else 1.0)
                     for directed, count in readable_losses(mechanism)))


def readable_losses(mechanism: Mechanism) -> tuple[tuple[DirectedLosses, int], ...]:
    """The mechanism's PLRVs, checked readable by this accountant (no numerics).

    Raises [`UnsupportedMechanismError`][privselect.accounting.cf.UnsupportedMechanismError] naming the failing part; the registry's "cf"
    accountant runs this as its dry walk (``supports``).
    """
    if not isinstance(mechanism, Mechanism):
        raise TypeError(f"not a privselect Mechanism: {type(mechanism).__name__}")
    out = []
    for part, count in mechanism.components():
        try:
            losses = composed_losses(part)
        except UnsupportedMechanismError as exc:
            raise UnsupportedMechanismError(f"cf accountant: {part!r}: {exc}") from None
        for directed, _ in losses:
            for loss in {id(directed.remove): directed.remove, id(directed.add): directed.add}.values():
                if _component.dispatch(type(loss)) is _component.dispatch(object):
                    raise UnsupportedMechanismError(f"cf accountant: {part!r}: no cf reading of {type(loss).__name__}")
                if isinstance(loss, SubsampledLoss) and not isinstance(
                    loss.base, (GaussianLoss, LaplaceLoss, TwoPointLoss)
                ):
                    raise UnsupportedMechanismError(
                        f"cf accountant: {part!r}: no cf reading of a subsampled {type(loss.base).__name__}")
                if len(loss.atoms().locations) > 2:
                    raise UnsupportedMechanismError(f"cf accountant: {part!r}: more than two finite atoms")
        out.extend((directed, count * c) for directed, c in losses)
    return tuple(out)


@dataclass(frozen=True)
class CFAccountant:
    """Characteristic-function accountant (Zhu, Dong, Wang 2022) with certified, added error.

    Parameters
    ----------
    rel_tol:
        Target size of the aliasing and truncation errors relative to delta; sizes the
        integration grids (the reported error is computed, not assumed).
    max_grid_points:
        Cap on trapezoid points per integration line; if the truncation target needs more,
        the (larger) certified truncation error is reported instead.
    quadrature_safety:
        Factor applied to the two-rule difference used as the error estimate of the
        quadrature phi of subsampled mechanisms.
    max_atoms:
        Cap on enumerated atoms of purely atomic parts; lighter atoms are dropped and their
        mass is added to the upper bound.
    max_quadrature_nodes:
        Cap on the quadrature nodes of one subsampled step's phi at v = 1, checked when the profile is
        built (the cost estimate): past it the accountant declines with ``CertificationError``. A
        Gaussian base with mu = 1/sigma needs about 20 mu^2 of them (mu = 30: 2e4; mu = 100: 2.2e5),
        and every phi value on every integration line costs that many complex exponentials.
    max_work:
        Cap on (grid points x quadrature nodes) per integration line for subsampled
        mechanisms; beyond it the grid is shortened and the certified truncation error grows
        (relevant for one or a few subsampled steps, whose phi decays slowly).

    Examples
    --------
    >>> import privselect as ps
    >>> prof = CFAccountant().profile(ps.Gaussian(1.0))
    >>> round(prof.delta(1.0), 10)
    0.1269367375
    """

    rel_tol: float = 1e-11
    max_grid_points: int = 1 << 17
    quadrature_safety: float = 10.0
    max_atoms: int = 1_000_000
    max_work: float = 2e8
    max_quadrature_nodes: int = 1 << 19

    def __post_init__(self) -> None:
        tol = check.positive("rel_tol", self.rel_tol)
        if not 1e-15 <= tol <= 1e-2:
            raise ValueError(f"rel_tol must be in [1e-15, 1e-2], got {self.rel_tol!r}")
        object.__setattr__(self, "rel_tol", tol)
        points = check.positive_int("max_grid_points", self.max_grid_points)
        if points < 256:
            raise ValueError(f"max_grid_points must be >= 256, got {self.max_grid_points!r}")
        object.__setattr__(self, "max_grid_points", points)
        safety = check.positive("quadrature_safety", self.quadrature_safety)
        if safety < 1:
            raise ValueError(f"quadrature_safety must be >= 1, got {self.quadrature_safety!r}")
        object.__setattr__(self, "quadrature_safety", safety)
        atoms = check.positive_int("max_atoms", self.max_atoms)
        if atoms < 1000:
            raise ValueError(f"max_atoms must be >= 1000, got {self.max_atoms!r}")
        object.__setattr__(self, "max_atoms", atoms)
        nodes = check.positive_int("max_quadrature_nodes", self.max_quadrature_nodes)
        if nodes < 1024:
            raise ValueError(f"max_quadrature_nodes must be >= 1024, got {self.max_quadrature_nodes!r}")
        object.__setattr__(self, "max_quadrature_nodes", nodes)
        work = check.positive("max_work", self.max_work)
        if work < 1e6:
            raise ValueError(f"max_work must be >= 1e6, got {self.max_work!r}")
        object.__setattr__(self, "max_work", work)

    # -- profile ---------------------------------------------------------------------------------

    def profile(self, mechanism: Mechanism) -> PrivacyProfile:
        """Certified privacy profile of ``mechanism``: max over the add and remove directions."""
        losses = readable_losses(mechanism)
        remove = tuple((d.remove, k) for d, k in losses)
        if all(d.is_symmetric for d, _ in losses):
            curves: tuple[DirectionalCurve, ...] = (CFCurve("both", remove, self),)
        else:
            add = tuple((d.add, k) for d, k in losses)
            curves = (CFCurve("remove", remove, self), CFCurve("add", add, self))
        metadata: tuple[tuple[str, Any], ...] = (
            ("rel_tol", self.rel_tol),
            ("max_grid_points", self.max_grid_points),
            ("quadrature_safety", self.quadrature_safety),
            ("max_atoms", self.max_atoms),
            ("max_work", self.max_work),
            ("max_quadrature_nodes", self.max_quadrature_nodes),
            ("inversion", "shifted contour, saddle-point damping (accounting-cf.md §7)"),
        )
        return PrivacyProfile(
            curves=curves,
            accountant="cf",
            mechanism=mechanism,
            description="characteristic-function accountant (Zhu, Dong, Wang 2022)",
            metadata=metadata,
        )


def cf_profile(mechanism: Mechanism, **options: Any) -> PrivacyProfile:
    """``CFAccountant(**options).profile(mechanism)``."""
    return CFAccountant(**options).profile(mechanism)
