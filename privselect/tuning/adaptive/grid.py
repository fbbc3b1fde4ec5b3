"""The candidate grid of an adaptive search: cells of the search space, their prior mass, and model coordinates.

Every hyperparameter with a finite law (Choice, IntUniform, IntLogUniform, or any law whose
``support()`` lists its values) contributes its values; a continuous one (Uniform, LogUniform)
contributes ``points`` equal cells of its (log) range. A cell of the joint grid has the product of
the per-hyperparameter prior masses. Drawing a candidate picks a cell and then draws each
continuous coordinate from the prior restricted to its cell (uniform on the cell in the linear or
log scale), so the sampled density has the same ratio to the prior everywhere in a cell. The grid
depends on the declared space alone: it costs no privacy.

Models see cells and candidates through ``coordinates``: each hyperparameter mapped to [0, 1]
(linear, log for log laws, the option index for Choice).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..space import Choice, Distribution, IntLogUniform, LogUniform, Uniform

__all__ = ["MAX_CELLS", "CandidateGrid"]

#: Largest joint grid (cells); a larger one is refused before anything is allocated.
MAX_CELLS = 200_000


@dataclass(frozen=True)
class _Axis:
    name: str
    law: Distribution
    values: tuple  # finite: the values; continuous: ()
    mass: np.ndarray
    edges: np.ndarray | None  # continuous: cell edges in the transformed scale
    log: bool

    def coordinate(self, value: Any) -> float:
        if self.edges is not None:
            x = math.log(value) if self.log else float(value)
            return (x - self.edges[0]) / (self.edges[-1] - self.edges[0])
        if isinstance(self.law, Choice):
            index = next(i for i, v in enumerate(self.values) if v == value)
            return index / max(len(self.values) - 1, 1)
        numbers = np.asarray(self.values, dtype=float)
        transform = np.log if self.log else (lambda v: v)
        span = transform(numbers[-1]) - transform(numbers[0])
        return float((transform(float(value)) - transform(numbers[0])) / span) if span > 0 else 0.5

    def centres(self) -> np.ndarray:
        if self.edges is not None:
            mids = 0.5 * (self.edges[1:] + self.edges[:-1])
            return (mids - self.edges[0]) / (self.edges[-1] - self.edges[0])
        if isinstance(self.law, Choice):  # the option index, vectorised (no search per value)
            return np.arange(len(self.values)) / max(len(self.values) - 1, 1)
        numbers = np.asarray(self.values, dtype=float)
        transform = np.log if self.log else (lambda v: v)
        span = transform(numbers[-1]) - transform(numbers[0])
        return (transform(numbers) - transform(numbers[0])) / span if span > 0 else np.full(numbers.size, 0.5)

    def draw(self, cell: int, rng: np.random.Generator) -> Any:
        if self.edges is None:
            return self.values[cell]
        x = float(rng.uniform(self.edges[cell], self.edges[cell + 1]))
        if self.log and isinstance(self.law, LogUniform):  # a continuous axis on the log scale is a LogUniform's
            return float(min(max(math.exp(x), self.law.low), self.law.high))
        return x


def _int_log_mass(law: IntLogUniform) -> tuple[tuple, np.ndarray]:
    values = np.arange(law.low, law.high + 1)
    edges = np.log(np.concatenate([values - 0.5, [law.high + 0.5]]))
    mass = np.diff(edges) / (edges[-1] - edges[0])
    return tuple(int(v) for v in values), mass


def _axis(name: str, law: Distribution, points: int) -> _Axis:
    if isinstance(law, (Uniform, LogUniform)):
        log = isinstance(law, LogUniform)
        low, high = (math.log(law.low), math.log(law.high)) if log else (float(law.low), float(law.high))
        return _Axis(name, law, (), np.full(points, 1.0 / points), np.linspace(low, high, points + 1), log)
    if isinstance(law, IntLogUniform):
        if law.high - law.low + 1 > MAX_CELLS:
            raise ValueError(f"search_space[{name!r}] has more than {MAX_CELLS} values: too many cells")
        values, mass = _int_log_mass(law)
        return _Axis(name, law, values, mass, None, True)
    support = law.support()
    if support is None:
        raise ValueError(f"search_space[{name!r}] ({law!r}) has neither a finite support nor a known continuous "
                         "law (Uniform, LogUniform): the adaptive search cannot grid it")
    values = tuple(v for v, _ in support)
    return _Axis(name, law, values, np.array([w for _, w in support], dtype=float), None, False)


class CandidateGrid:
    """The cells of ``space`` (``points`` cells per continuous hyperparameter), in row-major order."""

    def __init__(self, space: Mapping[str, Distribution], points: int = 32) -> None:
        if not isinstance(space, Mapping) or not space:
            raise TypeError("an adaptive search needs search_space as a dict of privselect.space distributions "
                            "(a callable space has no density to bound)")
        self.axes = tuple(_axis(name, law, points) for name, law in space.items())
        sizes = [axis.mass.size for axis in self.axes]
        if math.prod(sizes) > MAX_CELLS:
            raise ValueError(f"the adaptive search's grid has {math.prod(sizes)} cells (more than {MAX_CELLS}): "
                             "lower grid= or use fewer values per hyperparameter")
        self.shape = tuple(sizes)
        mass = np.ones(1)
        for axis in self.axes:
            mass = np.multiply.outer(mass, axis.mass).reshape(-1)
        self.prior = mass
        self.prior.setflags(write=False)
        centres = np.meshgrid(*[axis.centres() for axis in self.axes], indexing="ij")
        self.centres = np.stack([c.reshape(-1) for c in centres], axis=1)

    @property
    def size(self) -> int:
        return int(self.prior.size)

    def draw(self, cell: int, rng: np.random.Generator) -> dict[str, Any]:
        """A candidate in ``cell``: its finite values, and continuous ones from the prior on the cell."""
        index = np.unravel_index(cell, self.shape)
        return {axis.name: axis.draw(int(i), rng) for axis, i in zip(self.axes, index)}

    def coordinates(self, params: Mapping[str, Any]) -> np.ndarray:
        """A candidate's model coordinates in [0, 1]^d."""
        return np.array([axis.coordinate(params[axis.name]) for axis in self.axes], dtype=float)
