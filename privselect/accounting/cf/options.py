"""`CFOptions`: the options of `CFAccountant` that its numerics read (a protocol, so that the modules
below the accountant name the type without importing it)."""

from __future__ import annotations

from typing import Protocol


class CFOptions(Protocol):
    """Read-only view of `CFAccountant`'s fields used by the components, the quadrature and the curve."""

    @property
    def rel_tol(self) -> float: ...

    @property
    def max_grid_points(self) -> int: ...

    @property
    def quadrature_safety(self) -> float: ...

    @property
    def max_atoms(self) -> int: ...

    @property
    def max_work(self) -> float: ...

    @property
    def max_quadrature_nodes(self) -> int: ...

    @property
    def max_memory(self) -> float: ...
