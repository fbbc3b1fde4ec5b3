"""The memory contract every accountant keeps: estimate the peak before allocating, decline past a budget.

An accountant option ``max_memory`` (bytes, default `DEFAULT_MAX_MEMORY`) caps the largest
working set one build or query may allocate. Each member computes its estimate from the sizes it
is about to use (grid points, atoms, quadrature nodes) *before* the allocation and calls
`require_memory`, which raises [`CertificationError`][privselect.errors.CertificationError]
(the library's "cannot certify here": ``auto`` moves on to its next member).
"""

from __future__ import annotations

from .. import _validation as check
from ..errors import CertificationError

__all__ = ["DEFAULT_MAX_MEMORY", "MIN_MAX_MEMORY", "require_memory", "checked_max_memory"]

#: Default budget per build or query: 2 GB, well under a shared 24 GB machine.
DEFAULT_MAX_MEMORY = 2_000_000_000
#: Smallest budget accepted (below it no member can build anything useful).
MIN_MAX_MEMORY = 16_000_000


def checked_max_memory(value: object) -> float:
    """``max_memory`` validated (a number of bytes >= MIN_MAX_MEMORY)."""
    budget = check.positive("max_memory", value)
    if budget < MIN_MAX_MEMORY:
        raise ValueError(f"max_memory must be >= {MIN_MAX_MEMORY:g} bytes, got {value!r}")
    return float(budget)


def require_memory(accountant: str, what: str, nbytes: float, max_memory: float) -> None:
    """Raise CertificationError if the estimated peak ``nbytes`` of ``what`` exceeds ``max_memory``."""
    if not nbytes <= max_memory:
        raise CertificationError(
            f"the {accountant} accountant declines: {what} needs about {nbytes / 1e9:.3g} GB "
            f"(> max_memory={max_memory / 1e9:.3g} GB); raise max_memory or use another accountant")
