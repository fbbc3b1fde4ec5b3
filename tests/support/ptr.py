"""Test helpers for the OPS / PTR code of ``privselect.apps.ptr`` (not part of the installed package)."""

from __future__ import annotations

import math

import numpy as np
from scipy import linalg

from privselect.apps.ptr.ops import ridge_solution

__all__ = ["neighbour_quantities"]


def neighbour_quantities(S_X: np.ndarray, S_y: np.ndarray, x: np.ndarray, y: float, alpha: float,
                         gamma: float = 1.0) -> tuple[float, float]:
    """(mu, rho) of the pair (S, S u {(x, y)}): leverage of x w.r.t. S and scaled residual."""
    theta, L = ridge_solution(S_X, S_y, alpha)
    v = linalg.solve_triangular(L, x, lower=True)
    return float(v @ v), math.sqrt(gamma) * abs(float(y - x @ theta))
