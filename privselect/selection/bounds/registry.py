"""The one table of selection bounds: (K law, bound family) -> theorem and its law-specific rule.

Every bound family module registers, per K law it covers, the theorem it implements and the
piece of that theorem which depends on the law (a shift objective, an RDP transform, ...):

    @register_bound(Poisson, "profile", "Koskela-Redberg-Wang 2024, Cor. 5.8", every_eps=False)
    def _poisson_objective(dist, eps1, d): ...

A lookup walks the law's class hierarchy, so subclasses inherit (``Geometric`` and
``Logarithmic`` are truncated negative binomials). [`certify`][privselect.selection.certify.certify] and the calibration
consult this table only; no module switches on the type of K.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..distributions import KDistribution

__all__ = ["LawBound", "register_bound", "law_bound", "applicable_bound", "unsupported_reason", "registered_bounds"]


def _no_condition(k: KDistribution) -> str | None:
    return None


@dataclass(frozen=True)
class LawBound:
    """One family's bound for one K law.

    ``rule`` is the law-specific part of ``theorem`` (its signature is the family's business);
    ``requires(k)`` names a violated condition on the law's parameters (None: the bound
    applies; called with instances of ``law`` only); ``every_eps`` is False where the theorem is
    stated for eps > 0 only.
    """

    law: type
    family: str
    theorem: str
    rule: Callable[..., Any]
    requires: Callable[[Any], str | None] = _no_condition
    every_eps: bool = True


_TABLE: dict[tuple[type, str], LawBound] = {}


def register_bound(law: type, family: str, theorem: str, *, requires: Callable[[Any], str | None] | None = None,
                   every_eps: bool = True) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator: register ``rule`` as ``family``'s bound for K laws of class ``law`` (and subclasses).

    ``requires`` is called with instances of ``law`` only (so it may take that class).
    """
    if not (isinstance(law, type) and issubclass(law, KDistribution)):
        raise TypeError(f"law must be a KDistribution class, got {law!r}")

    def decorate(rule: Callable[..., Any]) -> Callable[..., Any]:
        key = (law, family)
        if key in _TABLE:
            raise ValueError(f"a {family!r} bound is already registered for {law.__name__}")
        _TABLE[key] = LawBound(law, family, theorem, rule, requires or _no_condition, every_eps)
        return rule

    return decorate


def law_bound(k: KDistribution, family: str) -> LawBound | None:
    """The bound ``family`` registers for ``k``'s law (the most specific class), or None."""
    for cls in type(k).__mro__:
        entry = _TABLE.get((cls, family))
        if entry is not None:
            return entry
    return None


def unsupported_reason(k: KDistribution, family: str) -> str | None:
    """None if ``family`` has a bound for ``k`` whose conditions hold; otherwise why not."""
    if not isinstance(k, KDistribution):
        return f"k must be a distribution of K (e.g. ps.Geometric(mean=10)), got {type(k).__name__}"
    entry = law_bound(k, family)
    if entry is None:
        laws = sorted(law.__name__ for law, name in _TABLE if name == family)
        return f"no {family} bound for K ~ {type(k).__name__} (registered for: {', '.join(laws) or 'none'})"
    return entry.requires(k)


def applicable_bound(k: KDistribution, family: str) -> LawBound:
    """The bound ``family`` registers for ``k``'s law, if its conditions hold; else ``ValueError`` saying why not."""
    entry = law_bound(k, family) if isinstance(k, KDistribution) else None
    reason = unsupported_reason(k, family) if entry is None else entry.requires(k)
    if entry is None or reason is not None:
        raise ValueError(reason)
    return entry


def registered_bounds() -> dict[tuple[str, str], str]:
    """The table as data: (K law, family) -> theorem."""
    return {(law.__name__, family): entry.theorem for (law, family), entry in _TABLE.items()}
