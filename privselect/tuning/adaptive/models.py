"""Models of earlier results for the adaptive search: each turns the released (params, noisy score) pairs
into an unrestricted density g over the grid's cells, which the search then projects
([`project_density`][privselect.tuning.adaptive.density.project_density]).

* [`GaussianProcessUCB`][privselect.tuning.adaptive.models.GaussianProcessUCB]: scikit-learn's Gaussian process
  (Matern 5/2 + white noise, normalised targets), upper confidence bound s = μ + κ σ, and
  g ∝ π0 exp(β (s - max s) / sd(y)) (DP-HyPO Sec. 4, which uses π ∝ exp(β s) on the UCB score).
* [`Parzen`][privselect.tuning.adaptive.models.Parzen]: the TPE idea (Bergstra et al. 2011): the best
  fraction ``gamma`` of the results ("good") and the rest ("bad"), Gaussian kernel densities l and b
  in the model coordinates, each mixed with the prior, and g ∝ π0 (l / b)^β.

Scores are oriented so that larger is better before a model sees them. A model sees only what the
runs released: the candidate's params (as coordinates) and its noisy score; failed runs are left out.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np

_KDE_CELLS = 1_000_000  # floats per block of the kernel sums

__all__ = ["MODELS", "GaussianProcessUCB", "Parzen", "SearchModel", "model_from"]


class SearchModel:
    """g over cells from observations (x in [0,1]^d, larger y better); ``min_observations`` before it adapts."""

    min_observations: int = 2

    def density(self, centres: np.ndarray, prior: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        raise NotImplementedError  # pragma: no cover - interface


def _tilt(prior: np.ndarray, log_weight: np.ndarray) -> np.ndarray:
    log_weight = np.where(np.isfinite(log_weight), log_weight, -np.inf)
    g = prior * np.exp(log_weight - np.max(log_weight))
    return g if g.sum() > 0 else prior


@dataclass(frozen=True)
class GaussianProcessUCB(SearchModel):
    """GP regression (scikit-learn) with UCB scores s = μ + κσ; g ∝ π0 exp(β (s - max s) / sd(y))."""

    kappa: float = 2.0
    beta: float = 3.0
    min_observations: int = 3

    def __post_init__(self) -> None:
        if not (math.isfinite(self.kappa) and self.kappa >= 0 and math.isfinite(self.beta) and self.beta >= 0):
            raise ValueError(f"GaussianProcessUCB needs finite kappa >= 0 and beta >= 0, got {self.kappa}, {self.beta}")

    def density(self, centres, prior, x, y):
        from sklearn.gaussian_process import GaussianProcessRegressor
        from sklearn.gaussian_process.kernels import ConstantKernel, Matern, WhiteKernel

        kernel = ConstantKernel(1.0, (1e-3, 1e3)) * Matern(length_scale=np.full(x.shape[1], 0.3),
                                                           length_scale_bounds=(1e-2, 1e2), nu=2.5)
        kernel = kernel + WhiteKernel(0.1, (1e-6, 1e1))
        gp = GaussianProcessRegressor(kernel, normalize_y=True, n_restarts_optimizer=0, random_state=0)
        with warnings.catch_warnings():  # a fit's warnings quote values derived from the scores: never shown
            warnings.simplefilter("ignore")
            gp.fit(x, y)
            mean, sd = gp.predict(centres, return_std=True)
        scale = float(np.std(y)) or 1.0
        return _tilt(prior, self.beta * (mean + self.kappa * sd) / scale)


@dataclass(frozen=True)
class Parzen(SearchModel):
    """TPE-like: g ∝ π0 (l / b)^β with l, b Gaussian kernel densities of the best ``gamma`` fraction and the rest."""

    gamma: float = 0.25
    bandwidth: float = 0.15
    beta: float = 1.0
    min_observations: int = 4

    def __post_init__(self) -> None:
        if not (0 < self.gamma < 1 and self.bandwidth > 0 and self.beta >= 0):
            raise ValueError("Parzen needs 0 < gamma < 1, bandwidth > 0 and beta >= 0, got "
                             f"{self.gamma}, {self.bandwidth}, {self.beta}")

    def density(self, centres, prior, x, y):
        n_good = max(1, math.ceil(self.gamma * y.size))
        order = np.argsort(-y, kind="stable")
        good, bad = x[order[:n_good]], x[order[n_good:]]
        log_l = _log_kde(centres, good, prior, self.bandwidth)
        log_b = _log_kde(centres, bad, prior, self.bandwidth) if bad.size else np.log(prior * prior.size)
        return _tilt(prior, self.beta * (log_l - log_b))


def _log_kde(centres: np.ndarray, points: np.ndarray, prior: np.ndarray, bandwidth: float) -> np.ndarray:
    """log of (Σ Gaussian kernels + one prior pseudo-point) / (n + 1), per cell (relative to the prior)."""
    kernels = np.empty(centres.shape[0])
    chunk = max(1, _KDE_CELLS // max(points.shape[0] * centres.shape[1], 1))  # bounded memory, whatever the grid
    for start in range(0, centres.shape[0], chunk):
        block = centres[start:start + chunk]
        d2 = ((block[:, None, :] - points[None, :, :]) ** 2).sum(axis=2) / bandwidth**2
        kernels[start:start + chunk] = np.exp(-0.5 * d2).sum(axis=1)
    kernels /= (math.sqrt(2 * math.pi) * bandwidth) ** centres.shape[1]
    return np.log((kernels + 1.0) / (points.shape[0] + 1))


MODELS = {"gp": GaussianProcessUCB, "parzen": Parzen}


def model_from(model: str | SearchModel) -> SearchModel:
    """A model from its name ("gp", "parzen") or itself."""
    if isinstance(model, SearchModel):
        return model
    if isinstance(model, str) and model in MODELS:
        return MODELS[model]()
    raise ValueError(f"model must be one of {sorted(MODELS)} or a SearchModel, got {model!r}")
