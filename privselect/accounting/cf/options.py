"""`CFOptions`: the validated options of `CFAccountant`, the value its numerics read (the components, the
quadrature and the curve name this type without importing the accountant)."""

from __future__ import annotations

from dataclasses import dataclass

from ... import _validation as check
from ..budget import DEFAULT_MAX_MEMORY, checked_max_memory


@dataclass(frozen=True)
class CFOptions:
    """The CF accountant's options, validated (`CFAccountant` documents each)."""

    rel_tol: float = 1e-11
    max_grid_points: int = 1 << 17
    quadrature_safety: float = 10.0
    max_atoms: int = 1_000_000
    max_work: float = 2e8
    max_quadrature_nodes: int = 1 << 19
    max_memory: float = DEFAULT_MAX_MEMORY

    def __post_init__(self) -> None:
        tol = check.positive("rel_tol", self.rel_tol)
        if not 1e-15 <= tol <= 1e-2:
            raise ValueError(f"rel_tol must be in [1e-15, 1e-2], got {self.rel_tol!r}")
        object.__setattr__(self, "rel_tol", tol)
        for name, read, smallest in (("max_grid_points", check.positive_int, 256),
                                     ("quadrature_safety", check.positive, 1),
                                     ("max_atoms", check.positive_int, 1000),
                                     ("max_quadrature_nodes", check.positive_int, 1024),
                                     ("max_work", check.positive, 1e6)):
            value = read(name, getattr(self, name))
            if value < smallest:
                raise ValueError(f"{name} must be >= {smallest:g}, got {getattr(self, name)!r}")
            object.__setattr__(self, name, value)
        object.__setattr__(self, "max_memory", checked_max_memory(self.max_memory))
