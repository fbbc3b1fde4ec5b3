"""Distributions of the number of runs K (Koskela, Redberg, Wang 2024, Sec. 5).

Each distribution is a frozen value object with a log-space ``log_pmf``, ``pmf``, the
probability generating function ``pgf`` (phi(z) = E[z^K]) and its derivative, the exact
``mean``, and ``sample(rng)`` drawing from a ``numpy.random.Generator``. K is always drawn
independently of the data.

* :class:`TruncatedNegativeBinomial` D_{eta, gamma}, eta > -1, gamma in (0, 1), K >= 1
  (KRW Sec. 5.1; Papernot, Steinke 2022): :func:`Geometric` is eta = 1, :func:`Logarithmic`
  is eta = 0.
* :class:`Binomial` Bin(n, p), K >= 0 (KRW Sec. 5.2).
* :class:`Poisson` Poisson(mean), K >= 0 (Papernot, Steinke 2022; KRW Cor. 5.8).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import optimize, special, stats

from .. import _validation as check

__all__ = [
    "KDistribution",
    "TruncatedNegativeBinomial",
    "Geometric",
    "Logarithmic",
    "Binomial",
    "Poisson",
]

_CHUNK = 4096


class KDistribution(ABC):
    """A distribution of the number of runs K on the non-negative integers."""

    @abstractmethod
    def log_pmf(self, k) -> np.ndarray:
        """log P[K = k] (-inf outside the support), vectorised over integer k."""

    def pmf(self, k) -> np.ndarray:
        return np.exp(self.log_pmf(k))

    @abstractmethod
    def pgf(self, z) -> np.ndarray:
        """phi(z) = E[z^K] for z in [0, 1]."""

    @abstractmethod
    def pgf_derivative(self, z) -> np.ndarray:
        """phi'(z) = E[K z^(K-1)] for z in [0, 1]."""

    @property
    @abstractmethod
    def mean(self) -> float:
        """E[K] = phi'(1)."""

    @property
    @abstractmethod
    def min_k(self) -> int:
        """Smallest value in the support (0 or 1)."""

    def sample(self, rng: np.random.Generator) -> int:
        """Draw K by inversion of the CDF with one uniform from ``rng`` (data independent)."""
        if not isinstance(rng, np.random.Generator):
            raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
        u = rng.random()
        start, cumulative = self.min_k, 0.0
        while True:
            ks = np.arange(start, start + _CHUNK)
            cdf = cumulative + np.cumsum(self.pmf(ks))
            hit = np.flatnonzero(cdf >= u)
            if hit.size:
                return int(ks[hit[0]])
            if cdf[-1] <= cumulative:  # the remaining mass is below double precision
                return int(ks[-1])
            start, cumulative = start + _CHUNK, float(cdf[-1])

    def to_dict(self) -> dict[str, Any]:
        fields = {k: v for k, v in self.__dict__.items()}
        return {"distribution": type(self).__name__, **fields, "mean": self.mean}


def _as_unit_interval(name: str, z) -> np.ndarray:
    arr = check.real_array(name, z)
    if ((arr < 0) | (arr > 1)).any():
        raise ValueError(f"{name} must lie in [0, 1]")
    return arr


def _like(template, values):
    return float(values) if np.ndim(template) == 0 else values


@dataclass(frozen=True)
class TruncatedNegativeBinomial(KDistribution):
    """Truncated negative binomial D_{eta, gamma} on {1, 2, ...} (KRW Sec. 5.1).

    P[K=k] = (1-gamma)^k / (gamma^-eta - 1) * prod_{i<k} (i+eta)/(i+1) for eta != 0 and
    (1-gamma)^k / (k log(1/gamma)) for eta = 0. Give ``gamma`` or ``mean`` (not both).
    """

    eta: float
    gamma: float

    def __init__(self, eta: float, gamma: float | None = None, *, mean: float | None = None) -> None:
        eta = check.real("eta", eta)
        if not (eta > -1 and math.isfinite(eta)):
            raise ValueError(f"eta must be in (-1, inf), got {eta!r}")
        if (gamma is None) == (mean is None):
            raise ValueError("give exactly one of gamma or mean")
        if gamma is not None:
            gamma = check.open_unit("gamma", gamma)
        else:
            gamma = _tnb_gamma_from_mean(eta, check.real("mean", mean))
        object.__setattr__(self, "eta", eta)
        object.__setattr__(self, "gamma", gamma)

    @property
    def min_k(self) -> int:
        return 1

    def _log_norm(self) -> float:
        """log |gamma^-eta - 1| (eta != 0) or log log(1/gamma) (eta = 0)."""
        if self.eta == 0:
            return math.log(-math.log(self.gamma))
        return math.log(abs(math.expm1(-self.eta * math.log(self.gamma))))

    def log_pmf(self, k):
        k_arr = np.asarray(k, dtype=float)
        valid = (k_arr >= 1) & (k_arr == np.floor(k_arr))
        kk = np.where(valid, k_arr, 1.0)
        base = kk * math.log1p(-self.gamma) - self._log_norm()
        if self.eta == 0:
            out = base - np.log(kk)
        else:
            # prod_{i<k} |i+eta|/(i+1) = |Gamma(k+eta) / Gamma(eta)| / k!
            out = base + special.gammaln(kk + self.eta) - special.gammaln(self.eta) - special.gammaln(kk + 1)
        return _like(k, np.where(valid, out, -np.inf))

    def pgf(self, z):
        zz = _as_unit_interval("z", z)
        x = np.log1p(-(1 - self.gamma) * zz)  # log(1 - (1-gamma) z)
        if self.eta == 0:
            out = x / math.log(self.gamma)
        else:
            out = np.expm1(-self.eta * x) / math.expm1(-self.eta * math.log(self.gamma))
        return _like(z, out)

    def pgf_derivative(self, z):
        """phi'(z) = (1 - (1-gamma) z)^(-eta-1) gamma^(eta+1) E[K]  (KRW eq. (5.1))."""
        zz = _as_unit_interval("z", z)
        log_val = (-self.eta - 1) * np.log1p(-(1 - self.gamma) * zz) + (self.eta + 1) * math.log(self.gamma)
        return _like(z, np.exp(log_val) * self.mean)

    @property
    def mean(self) -> float:
        return _tnb_mean(self.eta, self.gamma)

    def sample(self, rng: np.random.Generator) -> int:
        if not isinstance(rng, np.random.Generator):
            raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
        if self.eta == 1:  # geometric on {1, 2, ...}
            return int(rng.geometric(self.gamma))
        return super().sample(rng)

    def to_dict(self) -> dict[str, Any]:
        return {"distribution": type(self).__name__, "eta": self.eta, "gamma": self.gamma, "mean": self.mean}


def _tnb_mean(eta: float, gamma: float) -> float:
    """E[K] = eta (1-gamma) / (gamma (1 - gamma^eta)), or (1/gamma - 1)/log(1/gamma) at eta = 0.

    Written with expm1 of log(gamma) so it stays accurate as gamma -> 1 (mean -> 1).
    """
    lg = math.log(gamma)
    if eta == 0:
        return math.expm1(-lg) / -lg
    return eta * -math.expm1(lg) / (gamma * -math.expm1(eta * lg))


def _tnb_gamma_from_mean(eta: float, mean: float) -> float:
    """The gamma whose mean is ``mean``; of the final bracket, the end with the larger mean.

    The mean decreases in gamma from +inf (gamma -> 0) to 1 (gamma -> 1), so any
    mean > 1 has a unique solution; returning the smaller-gamma end means the certified
    distribution never has a smaller mean than the one asked for.
    """
    if not (mean > 1 and math.isfinite(mean)):
        raise ValueError(f"mean must be in (1, inf) for a truncated negative binomial, got {mean!r}")
    f = lambda log_gamma: math.log(_tnb_mean(eta, math.exp(log_gamma))) - math.log(mean)  # noqa: E731
    lo, hi = -1.0, -1e-12
    while f(lo) < 0:
        lo *= 2
        if lo < -1e4:
            raise ValueError(f"mean={mean!r} is too large to represent with eta={eta!r}")
    if f(hi) > 0:
        raise ValueError(f"mean={mean!r} is too close to 1 to represent with eta={eta!r}")
    root = optimize.brentq(f, lo, hi, xtol=1e-15, rtol=4 * np.finfo(float).eps)
    gamma = math.exp(root)
    while _tnb_mean(eta, gamma) < mean:  # step to the conservative side of the bracket
        gamma = float(np.nextafter(gamma, 0.0))
    return gamma


def Geometric(gamma: float | None = None, *, mean: float | None = None) -> TruncatedNegativeBinomial:
    """Geometric K on {1, 2, ...}: P[K=k] = gamma (1-gamma)^(k-1), mean 1/gamma (eta = 1)."""
    return TruncatedNegativeBinomial(1.0, gamma, mean=mean)


def Logarithmic(gamma: float | None = None, *, mean: float | None = None) -> TruncatedNegativeBinomial:
    """Logarithmic K on {1, 2, ...}: P[K=k] = (1-gamma)^k / (k log(1/gamma)) (eta = 0)."""
    return TruncatedNegativeBinomial(0.0, gamma, mean=mean)


@dataclass(frozen=True)
class Binomial(KDistribution):
    """K ~ Bin(n, p) on {0, ..., n} (KRW Sec. 5.2, Thm 5.7). K = 0 is possible."""

    n: int
    p: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "n", check.positive_int("n", self.n))
        object.__setattr__(self, "p", check.open_unit("p", self.p))

    @classmethod
    def from_mean(cls, mean: float, n: int) -> "Binomial":
        """Bin(n, mean/n)."""
        n = check.positive_int("n", n)
        mean = check.positive("mean", mean)
        if not mean < n:
            raise ValueError(f"mean must be in (0, n={n}), got {mean!r}")
        return cls(n, mean / n)

    @property
    def min_k(self) -> int:
        return 0

    def log_pmf(self, k):
        return _like(k, stats.binom.logpmf(np.asarray(k), self.n, self.p))

    def pgf(self, z):
        zz = _as_unit_interval("z", z)
        return _like(z, np.exp(self.n * np.log1p(self.p * (zz - 1))))

    def pgf_derivative(self, z):
        zz = _as_unit_interval("z", z)
        return _like(z, self.n * self.p * np.exp((self.n - 1) * np.log1p(self.p * (zz - 1))))

    @property
    def mean(self) -> float:
        return self.n * self.p

    def sample(self, rng: np.random.Generator) -> int:
        if not isinstance(rng, np.random.Generator):
            raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
        return int(rng.binomial(self.n, self.p))


@dataclass(frozen=True)
class Poisson(KDistribution):
    """K ~ Poisson(mean) on {0, 1, ...} (Papernot, Steinke 2022; KRW Cor. 5.8)."""

    mean_: float

    def __init__(self, mean: float) -> None:
        object.__setattr__(self, "mean_", check.positive("mean", mean))

    @property
    def min_k(self) -> int:
        return 0

    def log_pmf(self, k):
        return _like(k, stats.poisson.logpmf(np.asarray(k), self.mean_))

    def pgf(self, z):
        zz = _as_unit_interval("z", z)
        return _like(z, np.exp(self.mean_ * (zz - 1)))

    def pgf_derivative(self, z):
        zz = _as_unit_interval("z", z)
        return _like(z, self.mean_ * np.exp(self.mean_ * (zz - 1)))

    @property
    def mean(self) -> float:
        return self.mean_

    def sample(self, rng: np.random.Generator) -> int:
        if not isinstance(rng, np.random.Generator):
            raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
        return int(rng.poisson(self.mean_))

    def to_dict(self) -> dict[str, Any]:
        return {"distribution": "Poisson", "mean": self.mean_}

    def __repr__(self) -> str:
        return f"Poisson(mean={self.mean_!r})"
