"""The accountant interface and the registry of accountants by name.

An `Accountant` turns a mechanism description into a certified [`PrivacyProfile`][privselect.accounting.base.PrivacyProfile].
Each accountant reads the mechanism in ONE walk (`Accountant._walk`), built from
``functools.singledispatch`` on the mechanism type; `Accountant.supports` runs that same
walk dry (no numerics), so the check cannot drift from the computation (the idea of
dp-accounting's ``PrivacyAccountant.supports``).

Accountants are found by name: ``get_accountant("prv", eps_error=1e-3)``. Registered names:
``"auto"`` (the tightest certified answer among the accountants it runs; the default),
``"exact"``, ``"prv"``, ``"pld"``, ``"cf"`` and ``"rdp"``.
"""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from ..mechanisms import Mechanism
from .plrv import UnsupportedMechanismError, check_double_range
from .profile import CertificationError, PrivacyProfile

__all__ = [
    "Accountant",
    "LossAccountant",
    "UnsupportedMechanismError",
    "register_accountant",
    "get_accountant",
    "accountant_names",
    "ACCOUNTANTS",
]


class Accountant(ABC):
    """Interprets mechanism descriptions as certified privacy profiles.

    Subclasses set `name` and implement `_walk`, the one interpretation of a
    mechanism. ``_walk(mechanism, dry=True)`` must raise [`UnsupportedMechanismError`][privselect.accounting.base.UnsupportedMechanismError]
    naming the piece it cannot read exactly where ``_walk(mechanism, dry=False)`` would, and
    otherwise return None without running any numerics.
    """

    name: ClassVar[str]

    @abstractmethod
    def _walk(self, mechanism: Mechanism, *, dry: bool) -> PrivacyProfile | None:
        """Read ``mechanism``; build its profile unless ``dry``. Raise UnsupportedMechanismError."""

    def supports(self, mechanism: object) -> str | None:
        """None if [`profile`][privselect.accounting.profile] can interpret ``mechanism``; otherwise the reason (names the piece).

        A dry run of the walk that [`profile`][privselect.accounting.profile] does: no numerics are run.
        """
        if not isinstance(mechanism, Mechanism):
            return f"expected a privselect Mechanism, got {type(mechanism).__name__}"
        try:
            self._walk(mechanism, dry=True)
        except UnsupportedMechanismError as exc:
            return str(exc)
        return None

    def floor_hint(self) -> float:
        """About the smallest delta its profiles certify, known before building one (0: no floor).

        A hint for choosing accountants cheaply (``"auto"`` does not build one whose floor is
        far above every delta asked); the built profile's ``error_budget.min_delta`` decides.
        """
        return 0.0

    def profile(self, mechanism: Mechanism) -> PrivacyProfile:
        """Certified [`PrivacyProfile`][privselect.accounting.base.PrivacyProfile] of ``mechanism`` (both neighbouring directions).

        The profile's metadata records the accountant and the neighbouring relation.
        """
        if not isinstance(mechanism, Mechanism):
            raise TypeError(f"mechanism must be a privselect Mechanism, got {type(mechanism).__name__}")
        built = self._walk(mechanism, dry=False)
        assert built is not None, f"{type(self).__name__}._walk(dry=False) returned None"
        return _annotated(built, mechanism, self.name)

    def __repr__(self) -> str:
        fields = getattr(self, "options", {})
        args = ", ".join(f"{k}={v!r}" for k, v in fields.items())
        return f"{type(self).__name__}({args})"


class LossAccountant(Accountant):
    """An `Accountant` over the mechanism's privacy-loss random variables (PRV, PLD, CF), built on an engine.

    A subclass names its parts in the class statement: ``class PRV(LossAccountant, engine=PRVAccountant,
    label="PRV", reader=readable_losses)``. ``engine(**options)`` validates the options when the accountant
    is made; its ``profile(mechanism)`` runs the numerics. The dry walk is ``reader(mechanism)`` (the
    engine's reading of the losses, no numerics) and the double-range check. Numerics out of reach
    (``ValueError``, ``ArithmeticError``, ``MemoryError`` from the engine) decline with
    `CertificationError`, as every member of ``"auto"`` must.
    """

    engine: ClassVar[Callable[..., Any]]
    label: ClassVar[str]
    reader: ClassVar[Callable[[Mechanism], object]]

    def __init_subclass__(cls, *, engine: Callable[..., Any], label: str, reader: Callable[[Mechanism], object],
                          **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.engine, cls.label, cls.reader = engine, label, staticmethod(reader)

    def __init__(self, **options: Any) -> None:
        self.options = options
        self._impl = self.engine(**options)  # validates the options now

    def _walk(self, mechanism: Mechanism, *, dry: bool) -> PrivacyProfile | None:
        type(self).reader(mechanism)
        check_double_range(self.label, mechanism)
        if dry:
            return None
        try:
            return self._impl.profile(mechanism)
        except (CertificationError, UnsupportedMechanismError):
            raise
        except (ValueError, ArithmeticError, MemoryError) as exc:  # numerics out of reach: decline
            raise CertificationError(f"the {self.label} accountant declines this mechanism: {exc}") from None


def _annotated(profile: PrivacyProfile, mechanism: Mechanism, name: str) -> PrivacyProfile:
    """The profile with the accountant and the neighbouring relation recorded in its metadata."""
    known = dict(profile.metadata)
    extra: list[tuple[str, Any]] = []
    if "accountant" not in known:
        extra.append(("accountant", name))
    relation = getattr(mechanism, "relation", None)
    if relation is not None and "neighbouring_relation" not in known:
        extra.append(("neighbouring_relation", str(relation)))
    if not extra:
        return profile
    return dataclasses.replace(profile, metadata=tuple(profile.metadata) + tuple(extra))


# ----------------------------------------------------------------------------------------
# Registry
# ----------------------------------------------------------------------------------------

_REGISTRY: dict[str, Callable[..., Accountant]] = {}

#: Read-only view of the registered accountant factories, by name.
ACCOUNTANTS: Mapping[str, Callable[..., Accountant]] = _REGISTRY


def register_accountant(name: str) -> Callable[[Callable[..., Accountant]], Callable[..., Accountant]]:
    """Class decorator: make ``get_accountant(name, **options)`` build ``cls(**options)``."""

    def decorate(factory: Callable[..., Accountant]) -> Callable[..., Accountant]:
        if name in _REGISTRY and _REGISTRY[name] is not factory:
            raise ValueError(f"an accountant named {name!r} is already registered")
        _REGISTRY[name] = factory
        return factory

    return decorate


def accountant_names() -> tuple[str, ...]:
    """The registered accountant names, "auto" first."""
    return tuple(sorted(_REGISTRY, key=lambda n: (n != "auto", n)))


def get_accountant(name: str | Accountant = "auto", **options: Any) -> Accountant:
    """The accountant registered under ``name``, built with ``options``.

    An `Accountant` instance passes through (then no options may be given).
    """
    if isinstance(name, Accountant):
        if options:
            raise ValueError(f"options {sorted(options)} cannot be applied to an already built Accountant")
        return name
    if not isinstance(name, str):
        raise TypeError(f"accountant must be a name in {accountant_names()} or an Accountant, "
                        f"got {type(name).__name__}")
    try:
        factory = _REGISTRY[name]
    except KeyError:
        raise ValueError(f"accountant must be one of {accountant_names()}, got {name!r}") from None
    return factory(**options)
