"""The atomic part of a composed loss: its atoms and masses enumerated exactly (binomial powers)."""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from ...errors import UnsupportedMechanismError
from .numerics import _EPS, _log_expm1_neg


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
        padded = np.zeros(pad)
        padded[:n] = w
        blocks = padded.reshape(-1, cls._BLOCK)
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
