"""Which classes the release walk trusts: fixed per process before a selection's first run there.

A trusted class is one whose instances [`privselect.tuning.release`][privselect.tuning.release] rebuilds (a
scikit-learn or privselect estimator class, a class passed to ``trust_estimator`` or ``trust_value_type``) and a
``register_release`` converter is one it calls. Deciding trust by a class's module name is beaten by a class that
a run makes with ``__module__ = "sklearn._evil"`` (or sets on ``sklearn.linear_model``), and a trusted class
whose class attribute a run set carries that attribute out with every instance. So trust is a snapshot
([`TrustSnapshot`][privselect.tuning.trusted.TrustSnapshot]) taken in each process before the selection's first
run there (the driver: at the selection's start, before K is drawn; a worker: before its first run of the
selection; an isolated run: inherited from the process it forks from):

* the classes trusted then, found by walking ``BaseEstimator``'s subclasses and the user's registrations; a class
  first seen later is never trusted, whatever its module says;
* a fingerprint of the class dictionary of every class in their MRO: each value's identity, and the identity,
  type and contents of the containers and instance dictionaries it holds (three levels deep). The snapshot holds
  references to those values, so an identity cannot be reused. A trusted class whose fingerprint differs at
  release time (an attribute added, replaced or deleted, a container in it changed, ``__bases__`` reassigned)
  is refused. One entry is not part of it: the ``__slotnames__`` list pickle caches on a class the first time
  an instance is pickled, while it lists exactly the class's declared slots;
* the user's ``register_release`` converters and ``trust_value_type`` classes: one registered during the
  selection is not used.

In a worker, the modules that hold the driver's trusted classes are imported before the snapshot (a trainer
that imports its estimator inside its body trains the same on every backend); in every process, so are the
modules behind privselect's lazily exported estimators (``ps.DPSGDClassifier`` first reached inside a run).
"""

from __future__ import annotations

import importlib
import sys
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["TrustSnapshot", "take_snapshot", "selection_trust", "TRUSTED_ESTIMATOR_PACKAGES", "LAZY_ESTIMATOR_MODULES",
           "importable"]

TRUSTED_ESTIMATOR_PACKAGES = ("sklearn", "privselect")
"""Top-level packages whose scikit-learn estimator classes are rebuilt by the trusted walk."""

LAZY_ESTIMATOR_MODULES = ("privselect.apps.dpsgd",)
"""privselect's modules whose estimators ``import privselect`` exports lazily (``ps.DPSGDClassifier``): imported
before every snapshot, so a run that is the first to reach one trains a trusted class."""

FINGERPRINT_DEPTH = 3
_CONTAINERS = (dict, list, tuple, set, frozenset)


def importable(kind: type) -> bool:
    """``kind.__module__`` + ``kind.__qualname__`` imports back to ``kind`` (it is code, not made at run time)."""
    module, name = getattr(kind, "__module__", None), getattr(kind, "__qualname__", None)
    if not (isinstance(module, str) and isinstance(name, str)):
        return False
    found: Any = sys.modules.get(module)
    for part in name.split("."):
        found = getattr(found, part, None)
    return found is kind


def _fingerprint(value: Any, keep: list[Any], depth: int) -> Any:
    """The identity of ``value`` and, for containers and objects with an instance dictionary, of what they hold."""
    keep.append(value)
    kind = type(value)
    if depth <= 0 or isinstance(value, type):
        return id(value), id(kind)
    if kind in _CONTAINERS:
        items = list(value.items()) if kind is dict else [(None, item) for item in value]
        return (id(value), id(kind), len(items),
                tuple((id(key), _fingerprint(item, keep, depth - 1)) for key, item in items))
    state = getattr(value, "__dict__", None)
    if type(state) is dict and not isinstance(value, type(sys)):  # functions' and descriptors' attributes
        return id(value), id(kind), _fingerprint(state, keep, depth - 1)
    return id(value), id(kind)


def _declared_slot_names(kind: type) -> list[str]:
    """The slot names pickle's copyreg caches as ``kind.__slotnames__`` on the first pickling of an instance (the
    ``__slots__`` of the MRO, private names mangled, ``__dict__`` and ``__weakref__`` left out)."""
    names: list[str] = []
    for base in kind.__mro__:
        slots = vars(base).get("__slots__", ())
        for name in (slots,) if isinstance(slots, str) else slots:
            if name in ("__dict__", "__weakref__"):
                continue
            stripped = base.__name__.lstrip("_")
            private = name.startswith("__") and not name.endswith("__") and stripped
            names.append(f"_{stripped}{name}" if private else name)
    return names


def _class_fingerprint(kind: type, keep: list[Any]) -> Any:
    """The MRO's identities and the class dictionary's fingerprint; copyreg's ``__slotnames__`` cache is left out
    while it holds exactly the declared slot names (pickling an instance, as a run's release does, adds it)."""
    items = [(name, value) for name, value in list(vars(kind).items())
             if not (name == "__slotnames__" and type(value) is list and value == _declared_slot_names(kind))]
    return (tuple(id(base) for base in kind.__mro__),
            tuple((name, _fingerprint(value, keep, FINGERPRINT_DEPTH)) for name, value in items))


@dataclass(frozen=True, eq=False)
class TrustSnapshot:
    """The trusted classes, their class dictionaries and the user's converters, as they were before the runs."""

    token: str
    estimators: frozenset = frozenset()
    value_types: frozenset = frozenset()
    converters: Mapping[type, Callable[[Any], Any]] = field(default_factory=dict)
    prints: Mapping[type, Any] = field(default_factory=dict, repr=False)
    keep: tuple = field(default=(), repr=False)  # holds every fingerprinted value, so no identity is reused

    def unchanged(self, kind: type) -> bool:
        """Every class in ``kind``'s MRO has the class dictionary (and bases) it had at the snapshot."""
        scratch: list[Any] = []
        return all(base is object or (base in self.prints and self.prints[base] == _class_fingerprint(base, scratch))
                   for base in kind.__mro__)

    def trusts_estimator(self, kind: type) -> bool:
        return kind in self.estimators and self.unchanged(kind)

    def trusts_value_type(self, kind: type) -> bool:
        return kind in self.value_types and self.unchanged(kind)

    def converter(self, kind: type) -> Callable[[Any], Any] | None:
        return self.converters.get(kind)

    @property
    def modules(self) -> tuple[str, ...]:
        """The modules that hold the trusted estimator classes (imported by a worker before its snapshot)."""
        return tuple(sorted({kind.__module__ for kind in self.estimators}))


def _estimator_classes(user: Iterable[type]) -> set[type]:
    """scikit-learn's and privselect's estimator classes importable by their name now, and the user's."""
    found = set(user)
    base = getattr(sys.modules.get("sklearn.base"), "BaseEstimator", None)
    if base is None:
        return found
    stack, seen = [base], set()
    while stack:
        kind = stack.pop()
        if kind in seen:
            continue
        seen.add(kind)
        stack.extend(type.__subclasses__(kind))
        if str(kind.__module__).split(".")[0] in TRUSTED_ESTIMATOR_PACKAGES and importable(kind):
            found.add(kind)
    return found


def take_snapshot(token: str, user_estimators: Iterable[type], value_types: Iterable[type],
                  converters: Mapping[type, Callable[[Any], Any]], modules: Iterable[str] = ()) -> TrustSnapshot:
    """The trust of this process now (import ``modules`` first: the driver's, in a worker)."""
    for name in (*LAZY_ESTIMATOR_MODULES, *modules):
        if name not in sys.modules:
            try:
                importlib.import_module(name)
            except Exception:  # noqa: BLE001 - a module this worker cannot import holds no class it can trust
                pass
    estimators = frozenset(_estimator_classes(user_estimators))
    values = frozenset(value_types)
    keep: list[Any] = []
    prints: dict[type, Any] = {}
    for kind in estimators | values:
        for base in kind.__mro__:
            if base is not object and base not in prints:
                prints[base] = _class_fingerprint(base, keep)
    return TrustSnapshot(token, estimators, values, dict(converters), prints, tuple(keep))


_LOCK = threading.Lock()
_CURRENT: dict[str, TrustSnapshot] = {}


def selection_trust(token: str, snapshot: Callable[[], TrustSnapshot]) -> TrustSnapshot:
    """This process's snapshot for the selection ``token``: taken by ``snapshot()`` the first time (then kept)."""
    with _LOCK:
        current = _CURRENT.get("selection")
        if current is None or current.token != token:
            current = _CURRENT["selection"] = snapshot()
        return current
