"""How the CF accountant reads each privacy-loss law: one component (count k) on the line Im(-z) = v,
its characteristic function, tilted atomic mass and Fourier envelope, registered per `PrivacyLoss` class."""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np
from scipy import special

from ...errors import UnsupportedMechanismError
from ...mechanisms import Mechanism
from ..plrv import DirectedLosses, GaussianLoss, LaplaceLoss, PrivacyLoss, SubsampledLoss, TwoPointLoss, composed_losses
from ..plrv.quadrature import ContinuousQuadrature
from ..profile import CertificationError
from .numerics import _EPS, _exp_ratio, _fourier_sum
from .options import CFOptions


class _Component:
    """One component law (count ``k``) seen on the line Im(-z) = v.

    Values are normalised by the tilted mass ``M(v)`` (``log_m``) so that |value| <= 1.
    """

    has_continuous = False
    quadrature = False  # True: the continuous part comes by quadrature over the ``rule``

    def __init__(self, loss: PrivacyLoss, count: int, accountant: CFOptions) -> None:
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
        # in blocks of rows (u values): the (u x atoms) temporaries stay below ~2^21 elements each
        rows = max(1, (1 << 21) // self.atom_loc.size)
        values, errors = np.empty(u.shape, complex), np.empty(u.shape)
        base = self.atom_logp + v * self.atom_loc - log_m
        for start in range(0, u.size, rows):
            ub = u[start:start + rows]
            expo = base[None, :] - 1j * ub[:, None] * self.atom_loc[None, :]
            terms = np.exp(expo)
            size = np.abs(terms)
            errors[start:start + rows] = 4 * _EPS * (
                size * (4 + np.abs(ub[:, None] * self.atom_loc[None, :]) + np.abs(expo.real))).sum(axis=1)
            values[start:start + rows] = terms.sum(axis=1)
        return values, errors

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

    def rule(self, v: float, u_max: float) -> ContinuousQuadrature:
        """The quadrature rule for (v, u_max): components with ``quadrature`` only."""
        raise NotImplementedError(f"{type(self).__name__} has no quadrature rule")


@functools.singledispatch
def _component(loss: PrivacyLoss, count: int, accountant: CFOptions) -> _Component:
    raise UnsupportedMechanismError(f"the cf accountant cannot read a {type(loss).__name__} privacy loss")


class _GaussianComponent(_Component):
    loss: GaussianLoss
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
    loss: LaplaceLoss
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

    loss: SubsampledLoss

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

    def rule(self, v: float, u_max: float) -> ContinuousQuadrature:
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
def _subsampled_component(loss: SubsampledLoss, count: int, accountant: CFOptions) -> _Component:
    if not isinstance(loss.base, (GaussianLoss, LaplaceLoss, TwoPointLoss)):
        raise UnsupportedMechanismError(
            f"the cf accountant cannot read a subsampled {type(loss.base).__name__} privacy loss"
        )
    return _SubsampledComponent(loss, count, accountant)


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
    return float(sum(count * _step_rate(directed.remove) for directed, count in readable_losses(mechanism)))


def _step_rate(loss: PrivacyLoss) -> float:
    """The sampling rate of a loss read as subsampled (`_subsampled_component`), else 1."""
    if isinstance(loss, SubsampledLoss) and _component.dispatch(type(loss)) is _subsampled_component:
        return loss.rate
    return 1.0


def readable_losses(mechanism: Mechanism) -> tuple[tuple[DirectedLosses, int], ...]:
    """The mechanism's PLRVs, checked readable by this accountant (no numerics).

    Raises [`UnsupportedMechanismError`][privselect.accounting.cf.UnsupportedMechanismError] naming the failing part; the registry's "cf"
    accountant runs this as its dry walk (``supports``).
    """
    if not isinstance(mechanism, Mechanism):
        raise TypeError(f"not a privselect Mechanism: {type(mechanism).__name__}")
    out: list[tuple[DirectedLosses, int]] = []
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
