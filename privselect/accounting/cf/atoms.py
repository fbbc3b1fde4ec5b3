"""The atomic part of a composed loss: its atoms and masses enumerated exactly (binomial powers)."""

from __future__ import annotations

import math

import numpy as np

from ...errors import UnsupportedMechanismError
from .numerics import _EPS, _log_expm1_neg

#: log of the smallest normal long double (the suffix sums' underflow threshold).
_LOG_TINY = float(np.log(np.finfo(np.longdouble).tiny))  # -11355 (x87 extended); -708 where it is a double


class _AtomTable:
    """Sorted atoms (location a, mass p) with suffix sums for delta_A(eps) = sum_{a > eps} p (1 - e^{eps - a}).

    Atoms with a - eps <= 1 are summed directly (log-space, ``-expm1``: no cancellation);
    the others through suffix sums S0 = sum p and S1 = sum p e^{-a}, combined as
    S0 - e^eps S1 >= (1 - e^-1) S0, so rounding is amplified at most 1.6x. Suffix sums are
    blocked (1024 per block, reversed cumsum inside and across blocks), each relative error
    <= (1024 + blocks + 4) eps_mach. They are held in long double: scaled by the largest term, the
    terms of S1 span e^{-2 max|a|} (RR(0.875)^358: e^{-741}, a double subnormal with 3 significant
    bits, which put delta's lower end 4e-12 above the truth); a term below the long-double range adds
    at most its smallest normal number, and the rounding of each term's exponent is bounded as well.
    """

    _BLOCK = 1024

    def __init__(self, loc: np.ndarray, logp: np.ndarray, rel: float, pruned: float) -> None:
        order = np.argsort(loc, kind="stable")
        self.loc, self.logp, self.rel, self.pruned = loc[order], logp[order], rel, pruned
        self.shift0 = float(np.max(self.logp))
        log1 = self.logp - self.loc
        self.shift1 = float(np.max(log1))
        self.suffix0 = self._suffix(np.exp((self.logp - self.shift0).astype(np.longdouble)))
        self.suffix1 = self._suffix(np.exp((log1 - self.shift1).astype(np.longdouble)))
        blocks = -(-self.loc.size // self._BLOCK)
        self.suffix_rel = (self._BLOCK + blocks + 4) * _EPS
        self.amax = float(np.max(np.abs(self.loc)))
        #: relative error of each scaled term from its rounded exponent (logp - a - shift, in doubles)
        self.exponent_rel = 4 * _EPS * (2 * self.amax + 2 * float(np.max(np.abs(self.logp))) + 4)

    @classmethod
    def _suffix(cls, w: np.ndarray) -> np.ndarray:
        """out[i] = sum_{t >= i} w_t (out[n] = 0), summed in blocks."""
        n = w.size
        pad = -(-n // cls._BLOCK) * cls._BLOCK
        padded = np.zeros(pad, dtype=w.dtype)
        padded[:n] = w
        blocks = padded.reshape(-1, cls._BLOCK)
        inner = np.cumsum(blocks[:, ::-1], axis=1)[:, ::-1]  # suffix within each block
        zero = np.zeros(1, dtype=w.dtype)
        tails = np.concatenate([np.cumsum(inner[::-1, 0])[::-1][1:], zero])  # later blocks
        return np.concatenate([(inner + tails[:, None]).reshape(-1)[:n], zero])

    #: Atom-eps pairs summed directly per chunk of queries (bounds the flattened arrays to ~64 MB).
    _PAIRS_PER_CHUNK = 1 << 22

    def delta(self, eps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        eps = np.asarray(eps, dtype=float).reshape(-1)
        first = np.searchsorted(self.loc, eps, side="right")  # atoms > eps
        split = np.searchsorted(self.loc, eps + 1.0, side="right")  # atoms > eps + 1: suffix sums
        near, near_err = np.zeros(eps.shape), np.zeros(eps.shape)
        counts = split - first
        cuts = np.searchsorted(np.cumsum(counts), np.arange(1, 1 + counts.sum() // self._PAIRS_PER_CHUNK)
                               * self._PAIRS_PER_CHUNK)
        for chunk in np.split(np.arange(eps.size), np.unique(cuts)):
            near[chunk], near_err[chunk] = self._near(eps[chunk], first[chunk], split[chunk])
        # atoms beyond eps + 1: S0 - e^eps S1 from the suffix sums
        s0, s1 = self.suffix0[split], self.suffix1[split]
        with np.errstate(divide="ignore", over="ignore", invalid="ignore"):  # lanes with s0 = 0 are masked
            log0 = np.where(s0 > 0, self.shift0 + np.log(np.where(s0 > 0, s0, 1.0)), -np.inf)
            ratio = np.where(s1 > 0, np.exp(eps + self.shift1 + np.log(np.where(s1 > 0, s1, 1.0))
                                            - np.where(s0 > 0, log0, 0.0)), 0.0)
            far = np.where(s0 > 0, np.exp(log0) * (1.0 - ratio), 0.0).astype(float)
            mass = np.exp(log0).astype(float)
            # terms below the long-double range: each adds at most its smallest normal number (scaled back)
            underflow = self.loc.size * (math.exp(self.shift0 + _LOG_TINY) + np.exp(eps + self.shift1 + _LOG_TINY))
        far_err = np.where(s0 > 0, (2 * (self.suffix_rel + 8 * _EPS * (np.abs(np.where(s0 > 0, log0, 0.0)).astype(float)
                                                                        + np.abs(eps) + 4)) + 2 * self.exponent_rel)
                           * mass, 0.0)
        out = near + far
        err = self.pruned + near_err + far_err + out * self.rel + underflow
        return out, err

    def _near(self, eps: np.ndarray, first: np.ndarray, split: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """sum_{eps < a <= eps + 1} p (1 - e^{eps - a}) per query, summed in log space, and its rounding error.

        Each query's atoms are one contiguous run of the sorted table; the runs are flattened and reduced
        with ``np.*.reduceat`` (sequential sums: relative error <= (n + 1) eps_mach for n positive terms).
        """
        counts = split - first
        has = counts > 0
        near, err = np.zeros(eps.shape), np.zeros(eps.shape)
        if not has.any():
            return near, err
        e, a, n = eps[has], first[has], counts[has]
        starts = np.cumsum(n) - n
        idx = np.arange(int(n.sum())) - np.repeat(starts - a, n)
        log_terms = self.logp[idx] + _log_expm1_neg(self.loc[idx] - np.repeat(e, n))
        log_mass = self.logp[idx]

        def log_sums(x: np.ndarray) -> np.ndarray:
            top = np.maximum.reduceat(x, starts)
            top = np.where(np.isfinite(top), top, 0.0)
            with np.errstate(divide="ignore"):
                return top + np.log(np.add.reduceat(np.exp(x - np.repeat(top, n)), starts))

        value, mass = np.exp(log_sums(log_terms)), np.exp(log_sums(log_mass))
        with np.errstate(divide="ignore"):
            log_value = np.abs(np.where(value > 0, np.log(np.where(value > 0, value, 1.0)), 0.0))
        # relative rounding of the sum and of each exp(log); |eps - a| rounding inside expm1
        near[has] = value
        err[has] = (value * 8 * _EPS * (n + 9 + log_value)
                    + 4 * _EPS * np.maximum(np.abs(e), self.amax) * mass)
        return near, err


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
