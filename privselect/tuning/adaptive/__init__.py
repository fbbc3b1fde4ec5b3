"""Adaptive private search with a bounded density ratio (DP-HyPO, Wang et al. 2023), certified by
[`certify_adaptive`][privselect.selection.adaptive.certify_adaptive]: the grid, the projected densities, the models."""

from .density import RESOLUTION, DensityRatioError, IntegerLaw, project_density
from .grid import MAX_CELLS, CandidateGrid
from .models import MODELS, GaussianProcessUCB, Parzen, SearchModel
from .search import AdaptiveRun, AdaptiveSearch, AdaptiveTask

__all__ = [
           "MAX_CELLS",
           "MODELS",
           "RESOLUTION",
           "AdaptiveRun",
           "AdaptiveSearch",
           "AdaptiveTask",
           "CandidateGrid",
           "DensityRatioError",
           "GaussianProcessUCB",
           "IntegerLaw",
           "Parzen",
           "SearchModel",
           "project_density",
]
