"""Bounds that size the PRV computation: the coupling width (Hoeffding, GLW Thm 5.5; Bennett, Boucheron,
Lugosi, Massart 2013, Thm 2.9), the mesh plan, the Chernoff window and tail of the discretised sum
(GLW App. C.2) and the eps scale (an RDP or Chernoff upper bound, used for sizing only)."""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence

import numpy as np

from ...errors import UnsupportedMechanismError
from ...mechanisms import Mechanism
from ..profile import CertificationError
from .discretise import _Cells, _Tails

logger = logging.getLogger(__name__)

_SCALE_ORDERS = np.concatenate([1.0 + np.geomspace(0.02, 1.0, 8)[:-1], np.geomspace(2.0, 256.0, 16)])


def _epsilon_scale(mechanism: Mechanism, parts, symmetric: bool, delta: float) -> tuple[float, str]:
    """An upper bound on eps(delta), only used to size ``eps_error`` (any value is valid)."""
    try:
        from .. import rdp

        value = float(rdp.rdp_epsilon(mechanism, delta, orders=_SCALE_ORDERS))
        if math.isfinite(value):
            return value, "rdp"
    except (ImportError, AttributeError, UnsupportedMechanismError, NotImplementedError, ValueError) as exc:
        logger.debug("rdp_epsilon unavailable for the eps scale (%s); using Chernoff", exc)
    directions = ("remove",) if symmetric else ("remove", "add")
    best = 0.0
    for attr in directions:
        best = max(best, _chernoff_epsilon([(getattr(ls, attr), k) for ls, k in parts], delta))
    return best, "chernoff"


def _chernoff_epsilon(components, delta: float) -> float:
    """min_lam (sum k log E[e^{lam Y}] + log(1/delta)) / lam >= eps(delta) of the finite part."""
    lam = np.geomspace(1e-3, 1e3, 61)
    total = np.zeros_like(lam)
    for loss, count in components:
        with np.errstate(all="ignore"):
            lm = np.asarray(loss.log_mgf(lam), dtype=float) - math.log1p(-loss.inf_mass)
        total += count * lm
    with np.errstate(invalid="ignore"):
        eps = (total - math.log(delta)) / lam
    eps = eps[np.isfinite(eps)]
    return float(eps.min()) if eps.size else 1.0


def _bennett_width(variance: float, bound: float, eta_side: float) -> float:
    """s with exp(-(V/b^2) phi(b s / V)) = eta_side, phi(u) = (1+u) log(1+u) - u (Bennett)."""
    if variance <= 0:
        return 0.0
    # -log(eta) rather than log(1/eta): 1/eta overflows for subnormal eta.
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):  # overflow -> inf: handled below
        c = bound * bound / variance * -math.log(eta_side)
    if not (math.isfinite(c) and math.isfinite(variance) and math.isfinite(bound)):
        return math.inf  # Bennett's bound is not computable in double precision: not used
    phi = lambda u: (1 + u) * math.log1p(u) - u - c  # noqa: E731
    hi = max(2.0 * math.sqrt(2 * c), 1.0)
    while phi(hi) < 0:
        hi *= 2
    lo = 0.0
    for _ in range(200):  # bisection: phi increases on (0, inf); keep phi(hi) >= 0
        mid = 0.5 * (lo + hi)
        if phi(mid) < 0:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-13 * hi:
            break
    u = hi
    return u * variance / bound * (1 + 1e-9)


def _coupling(cells: Sequence[_Cells], h: float, eta0: float) -> tuple[float, float, str]:
    """(s, eta, rule): P[|sum_i (e_i - beta_i)| > s] <= eta, e_i the per-step coupling errors."""
    total = sum(c.count for c in cells)
    variance = sum(c.count * c.second_moment for c in cells)
    bound = h / 2 + max(abs(c.shift) + c.mean_error for c in cells)
    deterministic = sum(c.count * (h / 2 + abs(c.shift) + c.mean_error) for c in cells)
    hoeffding = h * math.sqrt(total * (math.log(2) - math.log(eta0)) / 2)
    bennett = _bennett_width(variance, bound, eta0 / 2)
    best = min(hoeffding, bennett)
    if deterministic <= best:
        return deterministic, 0.0, "deterministic"
    return best, eta0, "bennett" if bennett <= hoeffding else "hoeffding"


def _planned_mesh(components, tails: Sequence[_Tails], eps_target: float, eta0: float) -> float:
    """Mesh h for which the predicted eps error (Bennett width with a predicted cell variance,
    plus the mean-error bound) is ~98.5% of the target."""
    total = sum(k for _, k in components)
    variations = [k * loss.continuous_variation() / 8 / (1.0 - loss.inf_mass) for loss, k in components]
    if not all(math.isfinite(v) for v in variations):
        raise CertificationError("the PRV accountant cannot bound the discretisation error: the density of a "
                                 "step's privacy loss has no finite variation bound in doubles (a base whose loss "
                                 "exceeds ~700, e.g. Laplace with a tiny scale); accountant='auto' answers it from "
                                 "the closed-form bounds")

    def width(h: float, with_bias: bool = True) -> float:
        variance = 0.0
        for (loss, k), _tail in zip(components, tails):
            at = loss.atoms()
            finite = 1.0 - loss.inf_mass
            atom_mass = float(np.sum(at.primary)) / finite if at.locations.size else 0.0
            if at.locations.size:
                offs = at.locations - np.ceil(at.locations / h - 0.5) * h
                atom_var = float(np.sum(at.primary * offs**2)) / finite
            else:
                atom_var = 0.0
            variance += k * (atom_var + max(1.0 - atom_mass, 0.0) * 0.1 * h * h)
        spread = min(_bennett_width(variance, 0.5 * h, eta0 / 2),
                     h * math.sqrt(total * (math.log(2) - math.log(eta0)) / 2), total * h / 2)
        return spread + (sum(variations) * h * h if with_bias else 0.0)

    linear = width(1.0, with_bias=False)
    h = eps_target / linear if linear > 0 else eps_target
    for _ in range(12):  # atoms and the quadratic bias term make the width non-linear in h
        w = width(h)
        if w <= 0:
            break
        h *= 0.985 * eps_target / w
    return h


def _log_mgf_cells(c: _Cells, h: float, lam: np.ndarray, coarse: bool = False) -> np.ndarray:
    """log E[e^{lam Y~}] of the discretised law at each order (exact, or approximate on <= 2048 blocks)."""
    if coarse:
        if "coarse" not in c.extra:
            size = max(1, int(math.ceil(c.pmf.size / 2048)))
            pad = (-c.pmf.size) % size
            p = np.concatenate([c.pmf, np.zeros(pad)]).reshape(-1, size)
            x = ((c.lo + np.arange(p.size)) * h + c.shift).reshape(-1, size)
            bm = p.sum(axis=1)
            keep = bm > 0
            c.extra["coarse"] = (np.log(bm[keep]), (p * x).sum(axis=1)[keep] / bm[keep])
        logp, pos = c.extra["coarse"]
    else:
        if "exact" not in c.extra:
            keep = np.nonzero(c.pmf > 0)[0]
            c.extra["exact"] = (np.log(c.pmf[keep]), (c.lo + keep) * h + c.shift)
        logp, pos = c.extra["exact"]
    expo = logp[None, :] + np.multiply.outer(lam, pos)
    top = expo.max(axis=1)
    return top + np.log(np.exp(expo - top[:, None]).sum(axis=1))


_COARSE_ORDERS = np.geomspace(1e-4, 1e6, 51)


def _chernoff_orders(cells: Sequence[_Cells], h: float, eta_side: float) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per side (upper, lower): candidate orders lam > 0 and the exact log E[e^{+-lam sum Y~}].

    The orders are picked on a coarse version of the laws (a heuristic); the values used in
    any bound are exact for the discretised laws, so every order gives a valid Chernoff bound.
    """
    lam = _COARSE_ORDERS
    log_eta = math.log(eta_side)
    out = []
    for sign in (+1.0, -1.0):
        approx = sum(c.count * _log_mgf_cells(c, h, sign * lam, coarse=True) for c in cells)
        crit = np.where(np.isfinite(approx), (approx - log_eta) / lam, np.inf)
        k = int(np.argmin(crit))
        cand = lam[max(k - 1, 0): k + 2]
        exact = sum((c.count * _log_mgf_cells(c, h, sign * cand) for c in cells), np.zeros(cand.shape))
        out.append((cand, exact))
    return out


def _support_range(cells: Sequence[_Cells], h: float) -> tuple[float, float]:
    x_min = sum(c.count * (c.lo * h + c.shift) for c in cells)
    x_max = sum(c.count * ((c.lo + c.pmf.size - 1) * h + c.shift) for c in cells)
    return x_min, x_max


def _window(cells: Sequence[_Cells], h: float, eta2: float, orders) -> tuple[float, float]:
    """Window [A, B] with P[sum Y~ < A] + P[sum Y~ > B] <= eta2 (Chernoff, GLW App. C.2)."""
    x_min, x_max = _support_range(cells, h)
    if x_max - x_min <= 16 * h:
        return x_min, x_max
    log_eta = math.log(eta2 / 2)
    (lam_u, lm_u), (lam_l, lm_l) = orders
    upper = min(float(np.min((lm_u - log_eta) / lam_u)), x_max)
    lower = max(-float(np.min((lm_l - log_eta) / lam_l)), x_min)
    return lower, upper


def _tail_bound(cells: Sequence[_Cells], h: float, lower: float, upper: float, orders) -> float:
    """Chernoff bound on P[sum Y~ < lower] + P[sum Y~ > upper] at the given orders."""
    x_min, x_max = _support_range(cells, h)
    (lam_u, lm_u), (lam_l, lm_l) = orders
    out = 0.0
    if upper < x_max:
        out += math.exp(min(float(np.min(lm_u - lam_u * upper)), 0.0))
    if lower > x_min:
        out += math.exp(min(float(np.min(lm_l + lam_l * lower)), 0.0))
    return out
