"""Search spaces: data-independent distributions of hyperparameters, and how a run draws from them.

A search space is a dict ``{name: law}`` of the laws below, or any callable ``sampler(rng) -> params``.
Every run draws its candidate from its own generator, spawned from the tuner's seed, independently of
the data and of other runs' scores (Papernot, Steinke 2022; Koskela, Redberg, Wang 2024 Sec. 4 assume
exactly this: i.i.d. candidates). The laws live in [`privselect.selection.laws`][privselect.selection.laws]
(certificates read them); [`from_public`][privselect.tuning.space.from_public] builds one from public
information (a public prior: it costs no privacy).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ..selection.laws import (
    MAX_ENUMERATED_CANDIDATES,
    Choice,
    ContinuousDependence,
    Distribution,
    IntLogUniform,
    IntUniform,
    LogUniform,
    Probe,
    SearchSpace,
    UndeclaredAccess,
    Uniform,
    privacy_law,
    probe_privacy,
)
from .public import PublicPrior, from_public

__all__ = ["Uniform", "LogUniform", "IntUniform", "IntLogUniform", "Choice", "Distribution", "SearchSpace",
           "PublicPrior", "from_public", "draw", "sample_candidates", "validate_space", "privacy_law",
           "probe_privacy", "Probe", "UndeclaredAccess", "ContinuousDependence", "MAX_ENUMERATED_CANDIDATES"]


def __dir__() -> list[str]:
    """Only the public names (``dir(ps.space)``)."""
    return sorted(__all__)


def validate_space(space: SearchSpace) -> SearchSpace:
    """Check a search space at the public surface."""
    if callable(space) and not isinstance(space, Mapping):
        return space
    if not isinstance(space, Mapping) or not space:
        raise TypeError("search_space must be a non-empty dict of privselect.space distributions or a callable(rng)")
    for name, dist in space.items():
        if not isinstance(name, str):
            raise TypeError(f"search_space keys must be strings, got {name!r}")
        if not isinstance(dist, Distribution):
            raise TypeError(
                f"search_space[{name!r}] must be a privselect.space distribution (Uniform, LogUniform, IntUniform, "
                f"IntLogUniform, Choice), got {type(dist).__name__}"
            )
    return space


def draw(space: SearchSpace, rng: np.random.Generator) -> Any:
    """One candidate (dict spaces draw in key order, so the stream is reproducible)."""
    if callable(space) and not isinstance(space, Mapping):
        return space(rng)
    return {name: dist.sample(rng) for name, dist in space.items()}


def sample_candidates(space: SearchSpace, n: int, rng: np.random.Generator) -> list[Any]:
    """Draw ``n`` i.i.d. candidates from one generator."""
    return [draw(space, rng) for _ in range(n)]
