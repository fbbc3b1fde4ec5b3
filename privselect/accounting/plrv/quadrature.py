"""Quadrature rules over the base loss of a subsampled mechanism, with their error bounds.

Gaussian base: a truncated trapezoid rule in the standard-normal variable with the aliasing
bound of Trefethen, Weideman 2014 (SIAM Review), Thm 5.1; Laplace base: composite Gauss-Legendre.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import special

from ...memo import quiet_cache


def _gauss_tail_radius(log_tail: float) -> float:
    """Smallest r >= 6 with P[N(0,1) > r] <= e^{log_tail}."""
    if log_tail >= math.log(special.ndtr(-6.0)):
        return 6.0
    return float(-special.ndtri_exp(log_tail))


@dataclass(frozen=True)
class ContinuousQuadrature:
    """Two quadrature rules (nodes, log-weights) for the continuous part of a base law.

    ``truncation`` bounds the tilted mass the rules leave out (see
    `SubsampledLoss.continuous_quadrature`). ``rigorous``: the fine rule is a truncated
    trapezoid rule of step ``step`` whose aliasing error has the proven bound
    `aliasing_relative` (otherwise the two rules' difference is only an estimate).
    """

    nodes: np.ndarray
    log_weights: np.ndarray
    coarse_nodes: np.ndarray
    coarse_log_weights: np.ndarray
    truncation: float
    rigorous: bool = False
    step: float = 0.0
    strip: float = 0.0  # half-width a_max of the strip of analyticity used
    phase_rate: float = 0.0  # |Im| of the integrand's log grows at most phase_rate * |u| * |Im x|
    log_strip_factor: float = 0.0  # log C: |integrand(x + ib)| <= C e^{b^2/2 + phase_rate |u b|} |integrand(x)|

    def aliasing_relative(self, u: np.ndarray) -> np.ndarray:
        """Bound on |int F - h sum_k F(x_0 + k h)| / m at each u (m: the tilted mass, int |F| at u = 0).

        Trefethen, Weideman 2014 (SIAM Review 56(3)), Thm 5.1: for F analytic in the strip
        |Im x| < a with int |F(x + ib)| dx <= M there, the infinite trapezoid rule errs by at most
        2 M / (e^{2 pi a / h} - 1); here M <= C e^{a^2/2 + phase_rate |u| a} m (see
        `SubsampledLoss.continuous_quadrature`). The best of a few a <= ``strip`` is used.
        """
        u = np.abs(np.asarray(u, dtype=float))
        if not self.rigorous:
            return np.full(u.shape, np.inf)
        best = np.full(u.shape, np.inf)
        for a in self.strip * np.array([1.0, 0.5, 0.25, 0.125]):
            log_bound = (math.log(2.0) + self.log_strip_factor + a * a / 2 + self.phase_rate * u * a
                         - _log_expm1(2 * math.pi * a / self.step))
            best = np.minimum(best, log_bound)
        with np.errstate(over="ignore"):
            return np.exp(best) * (1 + 1e-12)


def _norm_logpdf(x: np.ndarray) -> np.ndarray:
    """log of the standard normal density (no scipy.stats: its import costs seconds)."""
    return -0.5 * x * x - 0.5 * math.log(2 * math.pi)


def _log_expm1(x: float) -> float:
    """log(e^x - 1) for x > 0, without overflow."""
    return x + math.log(-math.expm1(-x)) if x > 1 else math.log(math.expm1(x))


@quiet_cache(maxsize=16)
def _leggauss(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Gauss-Legendre nodes and weights on [-1, 1] (cached: each call solves an eigenproblem)."""
    x, w = np.polynomial.legendre.leggauss(n)
    x.setflags(write=False)
    w.setflags(write=False)
    return x, w


def _gauss_legendre_normal(n: int, half_width: float = 40.0) -> tuple[np.ndarray, np.ndarray]:
    """Gauss-Legendre nodes on [-half_width, half_width] and log-weights for a N(0,1) expectation."""
    x, w = _leggauss(n)
    x = half_width * x
    return x, np.log(half_width * w) + _norm_logpdf(x)
