"""Test scaffolding for the audits: vectorised reference mechanisms and deliberately broken tuners.

Used by ``tests/test_audit.py``, ``tests/test_rnm.py``, ``tests/test_fuzz.py`` and
``experiments/audit.py``; never part of the installed package (a deliberately leaky tuner has
no place in a privacy library). The auditor itself is ``privselect.audit``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np
from scipy import integrate, special, stats

import privselect as ps
from privselect import _validation as check
from privselect.mechanisms import Gaussian, Laplace
from privselect.selection.distributions import KDistribution

__all__ = ["sample_k", "gaussian_sum_mechanism", "report_noisy_max_mechanism", "gaussian_report_noisy_max_pmf",
           "best_of_k_mechanism", "LeakyTuner"]

#: Bounded work per call of a best-of-K simulation.
_MAX_RUNS_PER_CALL = 5 * 10**7


def sample_k(k: KDistribution, size: int, rng: np.random.Generator, *, tail: float = 1e-15) -> np.ndarray:
    """``size`` i.i.d. draws of K by inversion of its CDF (vectorised, data independent).

    The support is cut where ``P[K > k_max] <= tail``; the cut mass goes to ``k_max``.
    """
    if not isinstance(k, KDistribution):
        raise TypeError(f"k must be a distribution of K, got {type(k).__name__}")
    size = check.positive_int("size", size)
    cdf = np.empty(0)
    start = k.min_k
    chunk = 4096
    while True:
        ks = np.arange(start, start + chunk)
        part = (cdf[-1] if cdf.size else 0.0) + np.cumsum(k.pmf(ks))
        cdf = np.concatenate([cdf, part])
        if 1.0 - cdf[-1] <= tail or cdf[-1] <= (cdf[-chunk - 1] if cdf.size > chunk else 0.0):
            break
        start += chunk
        if start > 10**7:
            raise ValueError("K's tail is too heavy to sample by inversion (k_max > 1e7)")
    u = rng.random(size)
    idx = np.minimum(np.searchsorted(cdf, u * cdf[-1], side="left"), cdf.size - 1)
    return idx + k.min_k


def gaussian_sum_mechanism(noise_multiplier: float) -> Callable[..., np.ndarray]:
    """``M(D) = sum(D) + N(0, s^2)``: records in [0, 1], so add/remove sensitivity 1; exactly (1/s)-GDP."""
    s = check.positive("noise_multiplier", noise_multiplier)

    def mechanism(data, rng: np.random.Generator, size: int = 1) -> np.ndarray:
        total = float(np.clip(np.asarray(data, dtype=float), 0.0, 1.0).sum())
        return total + rng.normal(0.0, s, size=size)

    return mechanism


def _noise_draws(noise: Gaussian | Laplace, shape, rng: np.random.Generator) -> np.ndarray:
    if isinstance(noise, Gaussian):
        return rng.normal(0.0, noise.noise_multiplier * noise.sensitivity, size=shape)
    if isinstance(noise, Laplace):
        return rng.laplace(0.0, noise.scale * noise.sensitivity, size=shape)
    raise TypeError(f"noise must be ps.Gaussian or ps.Laplace, got {type(noise).__name__}")


def report_noisy_max_mechanism(noise: Gaussian | Laplace) -> Callable[..., np.ndarray]:
    """Vectorised Report-Noisy-Max: ``data`` is the score vector, output the argmax index.

    Same law as [`privselect.selection.rnm.report_noisy_max`][privselect.selection.rnm.report_noisy_max] with score sensitivity 1.
    """
    if not isinstance(noise, (Gaussian, Laplace)):
        raise TypeError(f"noise must be ps.Gaussian or ps.Laplace, got {type(noise).__name__}")

    def mechanism(data, rng: np.random.Generator, size: int = 1) -> np.ndarray:
        scores = np.asarray(data, dtype=float).reshape(1, -1)
        return np.argmax(scores + _noise_draws(noise, (size, scores.shape[1]), rng), axis=1).astype(float)

    return mechanism


def gaussian_report_noisy_max_pmf(scores: object, noise_multiplier: float) -> np.ndarray:
    """Exact law of Gaussian Report-Noisy-Max: ``P[argmax_i (scores_i + Z_i) = i]``, ``Z_i ~ N(0, s^2)``.

    Each probability is the 1-d integral of ``pdf_i(t) prod_{j != i} Phi((t - scores_j) / s)``
    over ``scores_i +- 12 s`` (the rest has mass < 1e-32) by adaptive quadrature
    (``scipy.integrate.quad``, absolute error 1e-14): a reference independent of the accountants,
    for exact profiles of small RNM instances (``discrete_profile``) and goodness-of-fit tests.
    """
    s = check.positive("noise_multiplier", noise_multiplier)
    values = np.asarray(scores, dtype=float).ravel()
    if values.size == 0 or not np.isfinite(values).all():
        raise ValueError(f"scores must be a non-empty vector of finite numbers, got {scores!r}")
    out = np.empty(values.size)
    for i, centre in enumerate(values):
        others = np.delete(values, i)

        def density(t: float, centre: float = centre, others: np.ndarray = others) -> float:
            return float(stats.norm.pdf(t, centre, s) * np.prod(special.ndtr((t - others) / s)))

        out[i] = integrate.quad(density, centre - 12 * s, centre + 12 * s, epsabs=1e-14, limit=200)[0]
    return out


def best_of_k_mechanism(k: KDistribution, noise: Gaussian | Laplace, *, leak: bool = False) -> Callable[..., dict]:
    """Vectorised model of [`PrivateTuner`][privselect.tuning.tuner.PrivateTuner] (maximise, score noise only).

    ``data`` is the vector of candidate scores f_j(D); each draw takes K ~ ``k``, K candidates
    uniformly with replacement, adds ``noise`` to each score and releases the winner:
    ``{"best_score": (size,), "best_candidate": (size,)}`` (K = 0: score -inf, candidate -1).

    ``leak=True`` is a deliberately BROKEN tuner: it also releases the non-winning scores,
    through their sufficient statistics ``"losers_sum"`` and ``"losers_count"`` (K - 1).
    No selection theorem covers it; audits must flag it.
    """
    if not isinstance(k, KDistribution):
        raise TypeError(f"k must be a distribution of K, got {type(k).__name__}")
    if not isinstance(noise, (Gaussian, Laplace)):
        raise TypeError(f"noise must be ps.Gaussian or ps.Laplace, got {type(noise).__name__}")

    def mechanism(data, rng: np.random.Generator, size: int = 1) -> dict:
        f = np.asarray(data, dtype=float).reshape(-1)
        ks = sample_k(k, size, rng)
        total = int(ks.sum())
        if total > _MAX_RUNS_PER_CALL:
            raise ValueError(f"size={size} draws need {total} simulated runs (> {_MAX_RUNS_PER_CALL:.0e}); "
                             "use a smaller batch_size or a smaller mean of K")
        cand = rng.integers(0, f.size, size=total)
        scores = f[cand] + _noise_draws(noise, total, rng)
        best_score = np.full(size, -np.inf)
        best_cand = np.full(size, -1.0)
        ran = ks > 0
        if total:
            starts = np.concatenate([[0], np.cumsum(ks)[:-1]])[ran]
            best_score[ran] = np.maximum.reduceat(scores, starts)
            # Winner index: first run attaining the maximum in its group (ties have probability 0).
            owner = np.repeat(np.arange(size), ks)
            is_best = scores == best_score[owner]
            first = np.full(size, total)
            np.minimum.at(first, owner[is_best], np.flatnonzero(is_best))
            best_cand[ran] = cand[first[ran]]
        out = {"best_score": best_score, "best_candidate": best_cand}
        if leak:
            sums = np.zeros(size)
            if total:
                sums[ran] = np.add.reduceat(scores, starts)
            out["losers_sum"] = np.where(ran, sums - np.where(ran, best_score, 0.0), 0.0)
            out["losers_count"] = np.maximum(ks - 1, 0).astype(float)
        return out

    return mechanism


class LeakyTuner(ps.PrivateTuner):
    """BROKEN on purpose: the real PrivateTuner, plus every non-winning score in its output."""

    def run(self, data):
        scores = []
        inner = self.train

        def spy(params, d, rng):
            s = inner(params, d, rng)
            scores.append(s)
            return s

        self.train = spy
        try:
            result = super().run(data)
        finally:
            self.train = inner
        losers = sorted(scores)[:-1]
        return dataclasses.replace(result, best_output={"losers_sum": float(np.sum(losers)),
                                                        "losers_count": float(len(losers))})
