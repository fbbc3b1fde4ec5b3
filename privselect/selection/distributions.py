"""Distributions of the number of runs K (Koskela, Redberg, Wang 2024, Sec. 5).

Each distribution is a frozen value object with a log-space ``log_pmf``, ``pmf``, the
probability generating function ``pgf`` (phi(z) = E[z^K]) and its derivative, the exact
``mean``, and ``sample(rng)`` drawing from a ``numpy.random.Generator``. K is always drawn
independently of the data.

* [`TruncatedNegativeBinomial`][privselect.selection.distributions.TruncatedNegativeBinomial] D_{eta, gamma}, eta > -1, gamma in (0, 1), K >= 1
  (KRW Sec. 5.1; Papernot, Steinke 2022): [`Geometric`][privselect.selection.distributions.Geometric] is eta = 1, [`Logarithmic`][privselect.selection.distributions.Logarithmic]
  is eta = 0.
* [`Binomial`][privselect.selection.distributions.Binomial] Bin(n, p), K >= 0 (KRW Sec. 5.2).
* [`Poisson`][privselect.selection.distributions.Poisson] Poisson(mean), K >= 0 (Papernot, Steinke 2022; KRW Cor. 5.8).

Supported ranges (outside them the constructors raise ``ValueError`` naming the parameter):
the mean of K is at most `MAX_MEAN` (numpy's Poisson sampler limit, about 9.22e18),
``eta`` is at most `MAX_ETA` and the binomial ``n`` at most `MAX_BINOMIAL_N`
(2^53, so that n and every k <= n are exact doubles). Within them (checked against mpmath)
the pmf has a relative error below ~1e-13 where log pmf > -30 and of ~1e-16 |log pmf| in the
far tails (log space; Loader's saddle-point form for the binomial, Poisson and negative
binomial terms, so huge n, means and k do not suffer the cancellation of log-gamma
differences); ``pgf(1) == 1`` and ``pgf_derivative(1) == mean`` exactly, and every probability
and pgf value lies in [0, 1]. Sampling takes O(1) expected time for every parameter; samples
above 2^53 are drawn at double-precision resolution, as numpy's own samplers do.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import special

from .. import _validation as check
from .law_numerics import (
    _LOG_2PI,
    _bd0,
    _log_g,
    _log_gamma_ratio,
    _log_one_minus_r_z,
    _sample_tnb_blocks,
    _stirlerr,
    _tnb_log_mean,
    _tnb_log_mean_lg,
    _tnb_mean,
    _two_prod,
)

__all__ = [
    "KDistribution",
    "TruncatedNegativeBinomial",
    "Geometric",
    "Logarithmic",
    "Binomial",
    "Poisson",
    "K_LAWS",
    "k_from_dict",
    "MAX_MEAN",
    "MAX_ETA",
    "MAX_BINOMIAL_N",
]

_CHUNK = 4096

#: Largest supported mean of K: numpy's Poisson limit, int64 max - 10 sqrt(int64 max).
MAX_MEAN = 9.223372006484771e18
#: Largest supported eta of the truncated negative binomial. The selection cost grows like
#: (eta + 1), so larger eta is never useful; the bound keeps the pmf accurate to ~1e-12.
MAX_ETA = 1e6
#: Largest supported number of trials of the binomial (every k <= n is an exact double).
MAX_BINOMIAL_N = 2**53

_LN2 = math.log(2.0)
_GAMMA_BELOW_ONE = float(np.nextafter(1.0, 0.0))  # largest double below 1
_MIN_NORMAL = float(np.finfo(float).tiny)


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
        _check_rng(rng)
        return self._sample_by_inversion(rng)

    def _sample_by_inversion(self, rng: np.random.Generator) -> int:
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

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        K_LAWS[cls.__name__] = cls

    def spec(self) -> dict[str, Any]:
        """The parameters as the user wrote them (the constructor's keyword arguments)."""
        written = self.__dict__.get("_written")
        if written is not None:
            return dict(written)
        return {f: getattr(self, f) for f in self.__dataclass_fields__}  # type: ignore[attr-defined]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in self.spec().items())})"

    def to_dict(self) -> dict[str, Any]:
        """{"distribution": class name, the written parameters, "derived": {"mean": E[K], ...}}.

        [`k_from_dict`][privselect.selection.distributions.k_from_dict] reads it back (from the written parameters; "derived" is for readers).
        """
        return {"distribution": type(self).__name__, **self.spec(), "derived": self._derived()}

    def _derived(self) -> dict[str, Any]:
        return {"mean": self.mean}

    def with_mean(self, mean: float) -> KDistribution:
        """The law of the same family (same eta, same n) with mean ``mean`` (for calibration)."""
        raise TypeError(f"{type(self).__name__} has no one-parameter family by mean")


#: K laws by class name (every subclass registers itself), for [`k_from_dict`][privselect.selection.distributions.k_from_dict].
K_LAWS: dict[str, type] = {}


def k_from_dict(data: dict[str, Any]) -> KDistribution:
    """The K law a [`KDistribution.to_dict`][privselect.selection.distributions.KDistribution.to_dict] description describes."""
    try:
        cls = K_LAWS[data["distribution"]]
    except (KeyError, TypeError):
        raise ValueError(f"not a K law description: {data!r}") from None
    return cls(**{k: v for k, v in data.items() if k not in ("distribution", "derived")})


def _check_rng(rng) -> None:
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")


def _as_unit_interval(name: str, z) -> np.ndarray:
    arr = check.real_array(name, z)
    if ((arr < 0) | (arr > 1)).any():
        raise ValueError(f"{name} must lie in [0, 1]")
    return arr


def _like(template, values):
    return float(values) if np.ndim(template) == 0 else values


def _integer_points(k, low: float, high: float = math.inf) -> tuple[np.ndarray, np.ndarray]:
    """(k as floats, mask of the integers in [low, high]) for the vectorised log pmfs."""
    try:
        arr = np.asarray(k, dtype=float)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"k must be integers: {exc}") from None
    with np.errstate(invalid="ignore"):
        valid = (arr >= low) & (arr <= high) & np.isfinite(arr) & (arr == np.floor(arr))
    return arr, valid


@dataclass(frozen=True, repr=False)
class TruncatedNegativeBinomial(KDistribution):
    """Truncated negative binomial D_{eta, gamma} on {1, 2, ...} (KRW Sec. 5.1).

    P[K=k] = (1-gamma)^k / (gamma^-eta - 1) * prod_{i<k} (i+eta)/(i+1) for eta != 0 and
    (1-gamma)^k / (k log(1/gamma)) for eta = 0. Give ``gamma`` or ``mean`` (not both).
    ``eta`` must be in (-1, MAX_ETA] and the mean at most MAX_MEAN.
    """

    eta: float
    gamma: float

    def __init__(self, eta: float, gamma: float | None = None, *, mean: float | None = None) -> None:
        eta = check.real("eta", eta)
        if not (-1 < eta <= MAX_ETA):
            raise ValueError(f"eta must be in (-1, {MAX_ETA:g}], got {eta!r}")
        if (gamma is None) == (mean is None):
            raise ValueError("give exactly one of gamma or mean")
        if gamma is not None:
            gamma = check.open_unit("gamma", gamma)
            log_mean = _tnb_log_mean(eta, gamma)
            if not log_mean <= math.log(MAX_MEAN):
                raise ValueError(f"gamma={gamma!r} with eta={eta!r} gives a mean of K of about "
                                 f"exp({log_mean:.6g}); the mean must be at most MAX_MEAN={MAX_MEAN!r}")
        else:
            gamma = _tnb_gamma_from_mean(eta, check.real("mean", mean))
        object.__setattr__(self, "eta", eta)
        object.__setattr__(self, "gamma", gamma)
        object.__setattr__(self, "_written", self._spec_of(eta, gamma, mean))

    def _spec_of(self, eta: float, gamma: float, mean: float | None) -> dict[str, Any]:
        return {"eta": eta, **({"mean": _plain(mean)} if mean is not None else {"gamma": gamma})}

    def with_mean(self, mean: float) -> TruncatedNegativeBinomial:
        return TruncatedNegativeBinomial(self.eta, mean=mean)

    @property
    def min_k(self) -> int:
        return 1

    def _log_gamma(self) -> float:
        """log(gamma), computed exactly as ``pgf`` computes log(1 - (1-gamma) z) at z = 1."""
        return float(_log_one_minus_r_z(self.gamma, 1.0 - self.gamma, np.float64(1.0)))

    def log_pmf(self, k):
        eta, gamma = self.eta, self.gamma
        k_arr, valid = _integer_points(k, 1.0)
        kk = np.where(valid, k_arr, 1.0)
        lg = self._log_gamma()
        r = 1.0 - gamma
        if eta <= 1:
            # log p_k = k log(1-gamma) + log c_k - log(-log gamma) - log g(-eta log gamma), with
            # c_k = Gamma(k+eta) / (Gamma(1+eta) k!) and g(y) = expm1(y)/y: the normaliser
            # (gamma^-eta - 1)/eta written without dividing by eta (exact as eta -> 0).
            # log(-log gamma) - log(1-gamma) is formed directly so p_1 stays accurate as gamma -> 1.
            lr = math.log1p(-gamma)
            if gamma >= 0.5:
                delta = r  # exact
                if delta < 1e-4:
                    log_q = math.log1p(delta / 2 + delta**2 / 3 + delta**3 / 4 + delta**4 / 5)
                else:
                    log_q = math.log(-math.log1p(-delta) / delta)
            else:
                log_q = math.log(-lg) - lr
            log_c = np.where(kk == 1, 0.0, _log_gamma_ratio(kk, eta) - special.gammaln(1 + eta))
            out = (kk - 1) * lr + log_c - log_q - float(_log_g(-eta * lg))
        else:
            # eta > 1: the negative binomial NB(eta, gamma) conditioned on K >= 1, with Loader's
            # saddle-point form dnbinom = eta/(eta+k) * dbinom_raw(eta; eta + k, gamma).
            n = kk + eta
            # d = eta - n gamma = eta (1-gamma) - k gamma, formed without cancellation: the products
            # exactly (Dekker) and 1 - gamma = r + r_lo exactly (r = fl(1 - gamma))
            r_lo = (1.0 - r) - gamma
            a_hi, a_lo = _two_prod(eta, r)
            b_hi, b_lo = _two_prod(kk, gamma)
            d = (a_hi - b_hi) + ((a_lo - b_lo) + eta * r_lo)
            lc = (_stirlerr(n) - _stirlerr(eta) - _stirlerr(kk) - _bd0(eta, n * gamma, d)
                  - _bd0(kk, n * r, -d))
            l1 = np.log1p(kk / eta)
            lf = _LOG_2PI + np.log(kk) - l1
            out = -l1 + lc - 0.5 * lf - math.log(-math.expm1(eta * lg))
        # p_k <= 1 holds exactly; the minimum only removes a rounding excess of a few ulps
        # (it moves the value towards the truth, never away from it).
        return _like(k, np.where(valid, np.minimum(out, 0.0), -np.inf))

    def _log_terms(self, z) -> tuple[float, np.ndarray, np.ndarray]:
        """(log gamma, x = log(1 - (1-gamma) z), x - log gamma >= 0) with the difference accurate."""
        gamma, r = self.gamma, 1.0 - self.gamma
        lg = self._log_gamma()
        x = _log_one_minus_r_z(gamma, r, z)
        # x - log gamma = log1p((1-z)(1-gamma)/gamma): 1 - (1-gamma) z = gamma + (1-z)(1-gamma)
        with np.errstate(over="ignore", invalid="ignore"):  # inf or nan (0 * inf) take the other branch
            c = (1.0 - z) * (r / gamma)
        use = (z >= 0.5) & (c < 1e300)
        delta = np.where(use, np.log1p(np.where(use, c, 0.0)), np.maximum(x - lg, 0.0))
        return lg, x, delta

    def pgf(self, z):
        """phi(z) = ((1 - (1-gamma) z)^-eta - 1) / (gamma^-eta - 1), log(1-(1-gamma)z)/log(gamma) at eta = 0.

        With x = log(1 - (1-gamma) z) and g(y) = expm1(y)/y: (x / log gamma) g(-eta x) / g(-eta log gamma)
        for eta <= 0, and e^(-eta (x - log gamma)) (x / log gamma) g(eta x) / g(eta log gamma) for
        eta > 0 (no overflow, accurate for large eta). phi(1) == 1 exactly.
        """
        zz = _as_unit_interval("z", z)
        eta = self.eta
        lg, x, delta = self._log_terms(zz)
        if eta <= 0:
            out = (x / lg) * np.exp(_log_g(-eta * x) - _log_g(-eta * lg))
        else:
            out = (x / lg) * np.exp(_log_g(eta * x) - _log_g(eta * lg) - eta * delta)
        # phi(z) <= phi(1) = 1 on [0, 1] exactly; the minimum only removes rounding of a few ulps
        return _like(z, np.minimum(out, 1.0))

    def pgf_derivative(self, z):
        """phi'(z) = (1 - (1-gamma) z)^(-eta-1) gamma^(eta+1) E[K]  (KRW eq. (5.1))."""
        zz = _as_unit_interval("z", z)
        _, _, delta = self._log_terms(zz)
        # (eta+1)(x - log gamma) >= 0, so phi'(z) <= phi'(1) = E[K] exactly
        return _like(z, np.exp(-(self.eta + 1) * delta) * self.mean)

    @property
    def mean(self) -> float:
        return _tnb_mean(self.eta, self.gamma)

    def sample(self, rng: np.random.Generator) -> int:
        _check_rng(rng)
        if self.eta == 1:  # geometric on {1, 2, ...}
            if self.gamma >= 1 / 3:
                return int(rng.geometric(self.gamma))
            # numpy's own inversion for p < 1/3 (same stream), without its clamp at int64 max
            return max(1, math.ceil(rng.standard_exponential() / -math.log1p(-self.gamma)))
        if self.eta < 1:
            return _sample_tnb_blocks(self.eta, self.gamma, rng)
        if self.eta * -self._log_gamma() >= _LN2:
            # P[NB = 0] = gamma^eta <= 1/2: negative binomial as a gamma mixture of Poissons,
            # rejecting K = 0 (at most 2 tries on average).
            scale = (1.0 - self.gamma) / self.gamma
            while True:
                draw = _poisson(rng, rng.gamma(self.eta, scale))
                if draw >= 1:
                    return draw
        return self._sample_by_inversion(rng)  # mass concentrated on small k (mean < 2.3)

    def _derived(self) -> dict[str, Any]:
        return {"mean": self.mean, "eta": self.eta, "gamma": self.gamma}


def _poisson(rng: np.random.Generator, lam: float) -> int:
    """Poisson(lam) for any finite lam >= 0, splitting lam above numpy's limit (additivity)."""
    if lam <= MAX_MEAN:
        return int(rng.poisson(lam))
    pieces = math.ceil(lam / MAX_MEAN)
    return sum(int(rng.poisson(lam / pieces)) for _ in range(pieces))


def _tnb_gamma_from_mean(eta: float, mean: float) -> float:
    """The gamma whose mean is ``mean``; of the final bracket, the end with the larger mean.

    The mean decreases in gamma from +inf (gamma -> 0) to 1 (gamma -> 1), so any
    mean > 1 has a unique solution; returning the smaller-gamma end means the certified
    distribution never has a smaller mean than the one asked for. Solved in log(gamma).
    """
    if not (1 < mean <= MAX_MEAN):
        raise ValueError(f"mean must be in (1, {MAX_MEAN!r}] for a truncated negative binomial, got {mean!r}")
    target = math.log(mean)
    f = lambda lg: _tnb_log_mean_lg(eta, lg) - target  # noqa: E731  (decreasing in lg)
    hi = math.log(_GAMMA_BELOW_ONE)
    if f(hi) > 0:
        raise ValueError(f"mean={mean!r} is too close to 1 to represent with eta={eta!r} "
                         f"(gamma = 1 - 2^-53 already gives mean {_tnb_mean(eta, _GAMMA_BELOW_ONE)!r})")
    lo, floor = -1.0, math.log(_MIN_NORMAL)
    while f(lo) < 0:
        if lo == floor:
            raise ValueError(f"mean={mean!r} is too large to represent with eta={eta!r}: gamma would be "
                             f"below the smallest normal double")
        lo = max(2 * lo, floor)
    if eta == 1.0:  # geometric: E[K] = 1/gamma, so the root is 1/mean up to rounding; the largest such gamma
        gamma = 1.0 / mean
        for _ in range(64):
            up = float(np.nextafter(gamma, 1.0))
            if up > _GAMMA_BELOW_ONE or _tnb_mean(eta, up) < mean:
                break
            gamma = up
    else:
        from scipy import optimize  # lazily: scipy.optimize is a tenth of a second of import
        root = optimize.brentq(f, lo, hi, xtol=1e-300, rtol=4 * np.finfo(float).eps) if f(hi) < 0 else hi
        gamma = min(math.exp(root), _GAMMA_BELOW_ONE)
    for _ in range(10_000):  # step to the conservative side of the bracket
        if _tnb_mean(eta, gamma) >= mean:
            break
        gamma = float(np.nextafter(gamma, 0.0))
    else:  # pragma: no cover - brentq is within a few ulps
        raise ValueError(f"could not solve for gamma with mean={mean!r}, eta={eta!r}")
    if gamma < _MIN_NORMAL or not _tnb_mean(eta, gamma) <= MAX_MEAN:
        raise ValueError(f"mean={mean!r} is too large to represent with eta={eta!r}")
    return gamma


def _plain(value: Any) -> int | float:
    """A user-written number as a plain Python int or float (numpy scalars unwrapped)."""
    return value.item() if isinstance(value, np.generic) else value


class _FixedEta(TruncatedNegativeBinomial):
    """A truncated negative binomial with its eta fixed by the class; the mean first."""

    ETA = 1.0

    def __init__(self, mean: float | None = None, *, gamma: float | None = None) -> None:
        super().__init__(self.ETA, gamma, mean=mean)

    def _spec_of(self, eta: float, gamma: float, mean: float | None) -> dict[str, Any]:
        return {"mean": _plain(mean)} if mean is not None else {"gamma": gamma}

    def with_mean(self, mean: float) -> _FixedEta:
        return type(self)(mean)


class Geometric(_FixedEta):
    """Geometric K on {1, 2, ...}: P[K=k] = gamma (1-gamma)^(k-1), mean 1/gamma (eta = 1; KRW Sec. 5.1).

    ``Geometric(10)`` has mean 10 (``gamma=`` as a keyword gives the success probability).
    """

    ETA = 1.0


class Logarithmic(_FixedEta):
    """Logarithmic K on {1, 2, ...}: P[K=k] = (1-gamma)^k / (k log(1/gamma)) (eta = 0; KRW Sec. 5.1).

    ``Logarithmic(10)`` has mean 10 (``gamma=`` as a keyword).
    """

    ETA = 0.0


# -- binomial and Poisson -----------------------------------------------------------------


@dataclass(frozen=True, repr=False)
class Binomial(KDistribution):
    """K ~ Bin(n, p) on {0, ..., n} (KRW Sec. 5.2, Thm 5.7). K = 0 is possible. n <= 2^53."""

    n: int
    p: float

    def __post_init__(self) -> None:
        n = check.positive_int("n", self.n)
        if n > MAX_BINOMIAL_N:
            raise ValueError(f"n must be an integer in [1, 2**53 = {MAX_BINOMIAL_N}], got {self.n!r}")
        object.__setattr__(self, "n", n)
        object.__setattr__(self, "p", check.open_unit("p", self.p))

    @classmethod
    def from_mean(cls, mean: float, n: int) -> Binomial:
        """Bin(n, mean/n)."""
        n = check.positive_int("n", n)
        mean = check.positive("mean", mean)
        if not mean < n:
            raise ValueError(f"mean must be in (0, n={n}), got {mean!r}")
        return cls(n, mean / n)

    def with_mean(self, mean: float) -> Binomial:
        return Binomial.from_mean(mean, self.n)

    @property
    def min_k(self) -> int:
        return 0

    def log_pmf(self, k):
        """Loader's saddle-point form (accurate for every n <= 2^53, unlike log-gamma differences)."""
        n, p = float(self.n), self.p
        k_arr, valid = _integer_points(k, 0.0, n)
        kk = np.where(valid, k_arr, 0.0)
        out = np.empty(kk.shape)
        zero, full = kk == 0, kk == n
        out[zero] = n * math.log1p(-p)
        out[full & ~zero] = n * math.log(p)
        mid = ~zero & ~full
        if mid.any():
            km = kk[mid]
            hi, lo = _two_prod(n, p)
            d = (km - hi) - lo  # k - n p, exact up to one rounding
            nq = (n - hi) - lo  # n (1 - p) for the exact p
            lc = (_stirlerr(n) - _stirlerr(km) - _stirlerr(n - km) - _bd0(km, hi + lo, d)
                  - _bd0(n - km, nq, -d))
            lf = _LOG_2PI + np.log(km) + np.log(n - km) - math.log(n)  # n - k is exact
            out[mid] = np.minimum(lc - 0.5 * lf, 0.0)  # p_k <= 1; removes rounding only
        return _like(k, np.where(valid, out, -np.inf))

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
        _check_rng(rng)
        return int(rng.binomial(self.n, self.p))


@dataclass(frozen=True, repr=False)
class Poisson(KDistribution):
    """K ~ Poisson(mean) on {0, 1, ...} (Papernot, Steinke 2022; KRW Cor. 5.8).

    ``mean`` must be in (0, MAX_MEAN], MAX_MEAN ~ 9.22e18 being numpy's Poisson sampler limit.
    """

    mean_: float

    def __init__(self, mean: float) -> None:
        mean = check.positive("mean", mean)
        if mean > MAX_MEAN:
            raise ValueError(f"mean must be in (0, {MAX_MEAN!r}] (numpy's Poisson sampler limit), got {mean!r}")
        object.__setattr__(self, "mean_", mean)

    @property
    def min_k(self) -> int:
        return 0

    def log_pmf(self, k):
        """Loader's form -stirlerr(k) - bd0(k, mean) - log(2 pi k)/2 (accurate for huge means)."""
        lam = self.mean_
        k_arr, valid = _integer_points(k, 0.0)
        kk = np.where(valid, k_arr, 1.0)
        pos = kk > 0
        out = np.full(kk.shape, -lam)
        if pos.any():
            kp = kk[pos]
            out[pos] = np.minimum(-_stirlerr(kp) - _bd0(kp, lam, kp - lam) - 0.5 * (_LOG_2PI + np.log(kp)), 0.0)
        return _like(k, np.where(valid, out, -np.inf))

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
        _check_rng(rng)
        return int(rng.poisson(self.mean_))

    def spec(self) -> dict[str, Any]:
        return {"mean": self.mean_}

    def with_mean(self, mean: float) -> Poisson:
        return Poisson(mean)
