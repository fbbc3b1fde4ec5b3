"""Release by value: what leaves the tuner is rebuilt from an allowlist, never the trainer's own object.

[`release_value`][privselect.tuning.release.release_value] turns the winner's output, params and
details into a fresh value built from these types only (docs/release.md, "The release value"):

* ``None``, ``bool``, ``int``, ``float``, ``str``, ``bytes``, ``range`` (exact types: a subclass can
  carry attributes and properties, so it is refused);
* numpy scalars and arrays of bool, integer, float or complex dtype, copied into a dtype rebuilt from its
  type code alone (``np.dtype(dtype.str)``); a dtype that carries ``metadata`` is refused (it can hold any
  object); no object, structured or datetime fields; ``np.memmap`` is copied into a plain array;
* torch tensors (only when torch is already loaded: privselect never imports it), rebuilt as a
  fresh plain tensor with the same data: no autograd, no ``grad``, no Python attributes (so no
  Opacus ``grad_sample`` or ``summed_grad``);
* ``dict`` (``OrderedDict`` and ``defaultdict`` become ``dict``), ``list`` and ``tuple`` of these,
  with ``str`` or ``int`` keys;
* scikit-learn estimators of trusted classes (scikit-learn's and privselect's own, or classes
  passed to [`trust_estimator`][privselect.tuning.release.trust_estimator]): a new instance of the
  same class whose attributes (parameters and fitted attributes) are converted by these rules. Trust is
  the snapshot of [`privselect.tuning.trusted`][privselect.tuning.trusted], taken before the selection's
  first run: a class first seen during the runs, or whose class dictionary changed since, is refused;
* a type registered with [`register_release`][privselect.tuning.release.register_release] and a
  converter to such a value (``register_release(torch.nn.Module, lambda m: m.state_dict())``).

Anything else is refused with [`ReleaseRefusedError`][privselect.errors.ReleaseRefusedError]: the
message names the type (when the type is importable by its name; otherwise "a type not importable by its
name") and the position (attribute names of trusted estimators, list indices, dict keys by their
ordinal), never the contents. Randomness state of a loaded framework is refused like any other
type, or set to None with ``release="strip"``, which gives up nothing else. Dispatch is a
``functools.singledispatch`` on the value's type: a registered converter wins over the built-in
rules for its class and subclasses.

Why not ``skops.io``'s trusted types: skops decides which types are safe to *load* (no code
runs), and it trusts numpy's ``Generator``, ``RandomState`` and every ``BitGenerator`` by default;
its object nodes rebuild any ``__dict__``. The question here is which values may *carry
information* out of a run, so the walk below accepts less: a trusted estimator's attributes go
through the same allowlist, a generator is refused, and nothing outside the allowlist is rebuilt.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import ReleaseRefusedError
from .guard import randomness_kind
from .trusted import TRUSTED_ESTIMATOR_PACKAGES, TrustSnapshot, importable, take_snapshot

__all__ = ["release_value", "register_release", "trust_estimator", "trust_value_type", "registered_converters", "ReleaseRefusedError",
           "TRUSTED_ESTIMATOR_PACKAGES", "type_label", "trust_snapshot"]

MAX_DEPTH = 200
_NUMERIC_KINDS = frozenset("biufc")
_USER_CONVERTERS: dict[type, Callable[[Any], Any]] = {}
_TRUSTED_ESTIMATORS: set[type] = set()
_VALUE_TYPES: set[type] = set()
_IN_PROGRESS = object()


def type_label(obj: Any) -> str:
    """``module.QualName`` of ``obj``'s type when that name imports back to the type (it is code), else a
    neutral label: a type made at run time (``type(f"rec_{x}", ...)``) could carry data in its name."""
    kind = type(obj)
    return f"{kind.__module__}.{kind.__qualname__}" if importable(kind) else "a type not importable by its name"


@dataclass
class _Walk:
    """One conversion: the release mode, the trust snapshot, and the objects converted so far (shared references
    stay shared)."""

    trust: TrustSnapshot
    release: str = "refuse"
    done: dict[int, Any] = field(default_factory=dict)
    keep: list[Any] = field(default_factory=list)  # keeps converted sources alive so their ids stay unique

    def refuse(self, obj: Any, path: str, why: str = "is not a release type") -> ReleaseRefusedError:
        return ReleaseRefusedError(
            f"{path}: {type_label(obj)} {why}. The winner is released by value: None, bool, int, float, str, bytes, "
            "numeric numpy arrays, torch tensors, dicts/lists/tuples of these, or a trusted scikit-learn estimator "
            "(docs/release.md). Return the values you need (e.g. a torch module's state_dict: "
            "privselect.integrations.opacus.weights(module)), or register a converter with "
            "privselect.tuning.release.register_release")

    def convert(self, obj: Any, path: str, depth: int = 0) -> Any:
        if depth > MAX_DEPTH:
            raise ReleaseRefusedError(f"{path}: nested deeper than {MAX_DEPTH} levels; not released")
        if obj is None or type(obj) in (bool, int, float, str, bytes):
            return obj
        key = id(obj)
        if key in self.done:
            if self.done[key] is _IN_PROGRESS:
                raise self.refuse(obj, path, "is part of a reference cycle")
            return self.done[key]
        if randomness_kind(obj) is not None:
            if self.release == "strip":
                return None
            raise self.refuse(obj, path, "is randomness state")
        self.done[key] = _IN_PROGRESS
        self.keep.append(obj)
        converted = _convert(obj, self, path, depth + 1)
        self.done[key] = converted
        return converted


@functools.singledispatch
def _convert(obj: Any, walk: _Walk, path: str, depth: int) -> Any:
    """The default: not a release type."""
    raise walk.refuse(obj, path)


def _exact(kind: type) -> Callable[[Any, _Walk, str, int], Any]:
    def convert(obj: Any, walk: _Walk, path: str, depth: int) -> Any:
        if type(obj) is not kind:
            raise walk.refuse(obj, path, f"is a subclass of {kind.__name__} (it can carry attributes)")
        return obj
    return convert


for _atom in (bool, int, float, str, bytes):
    _convert.register(_atom, _exact(_atom))


@_convert.register(range)
def _(obj: range, walk: _Walk, path: str, depth: int) -> range:
    return range(obj.start, obj.stop, obj.step)


def _plain_dtype(obj: Any, walk: _Walk, path: str) -> np.dtype:
    """``obj``'s dtype rebuilt from its type code alone; refused if it is not numeric or carries metadata."""
    dtype = obj.dtype
    if dtype.kind not in _NUMERIC_KINDS or dtype.fields is not None or dtype.hasobject or dtype.subdtype is not None:
        raise walk.refuse(obj, path, f"has dtype kind {dtype.kind!r} (numeric or bool only)")
    if dtype.metadata is not None:
        raise walk.refuse(obj, path, "has a dtype that carries metadata (it can hold any object)")
    plain = np.dtype(dtype.str)
    if plain != dtype or plain.metadata is not None or type(plain) is not type(dtype):
        raise walk.refuse(obj, path, "has a dtype that its type code does not rebuild")
    return plain


@_convert.register(np.generic)
def _(obj: np.generic, walk: _Walk, path: str, depth: int) -> Any:
    return np.array(obj, dtype=_plain_dtype(obj, walk, path), copy=True, subok=False)[()]


@_convert.register(np.ndarray)
def _(obj: np.ndarray, walk: _Walk, path: str, depth: int) -> np.ndarray:
    if type(obj) not in (np.ndarray, np.memmap):
        raise walk.refuse(obj, path, "is an ndarray subclass")
    return np.array(obj, dtype=_plain_dtype(obj, walk, path), copy=True, subok=False)


@_convert.register(dict)
def _(obj: dict, walk: _Walk, path: str, depth: int) -> dict:
    if type(obj) not in (dict, collections.OrderedDict, collections.defaultdict):
        raise walk.refuse(obj, path, "is a dict subclass")
    out = {}
    for ordinal, (key, value) in enumerate(list(obj.items())):
        if type(key) not in (str, int):
            raise walk.refuse(key, f"{path} key #{ordinal}", "is not a release key (str or int)")
        out[key] = walk.convert(value, f"{path}[key #{ordinal}]", depth)
    return out


@_convert.register(list)
def _(obj: list, walk: _Walk, path: str, depth: int) -> list:
    if type(obj) is not list:
        raise walk.refuse(obj, path, "is a list subclass")
    return [walk.convert(value, f"{path}[{index}]", depth) for index, value in enumerate(list(obj))]


@_convert.register(tuple)
def _(obj: tuple, walk: _Walk, path: str, depth: int) -> tuple:
    if type(obj) is not tuple:
        raise walk.refuse(obj, path, "is a tuple subclass (a namedtuple: return a dict or a plain tuple)")
    return tuple(walk.convert(value, f"{path}[{index}]", depth) for index, value in enumerate(obj))


# -- frameworks, registered once they are loaded (privselect imports none of them) -------------------------------


def _register_torch(torch: Any) -> None:
    plain = (torch.Tensor, torch.nn.Parameter)

    @_convert.register(torch.Tensor)
    def _(obj: Any, walk: _Walk, path: str, depth: int) -> Any:
        if type(obj) not in plain:
            raise walk.refuse(obj, path, "is a tensor subclass")
        if obj.layout != torch.strided or obj.is_quantized or obj.device.type == "meta":
            raise walk.refuse(obj, path, "is not a dense tensor with data (sparse, quantized or meta)")
        with torch.no_grad():
            fresh = torch.empty(obj.shape, dtype=obj.dtype, device=obj.device)
            fresh.copy_(obj.detach())
        return fresh


def _register_sklearn(module: Any) -> None:
    from sklearn.base import BaseEstimator

    @_convert.register(BaseEstimator)
    def _(obj: Any, walk: _Walk, path: str, depth: int) -> Any:
        kind: Any = type(obj)  # some estimator class
        if not walk.trust.trusts_estimator(kind):
            raise walk.refuse(obj, path, "is not a trusted estimator class, or its class changed during the selection "
                                         "(trust is fixed before the first run: import the class, or register it "
                                         "with privselect.tuning.release.trust_estimator, before run())")
        state = getattr(obj, "__dict__", None)
        if not isinstance(state, dict) or any(slot not in ("__dict__", "__weakref__")
                                              for cls in kind.__mro__ for slot in getattr(cls, "__slots__", ())):
            raise walk.refuse(obj, path, "holds state outside its __dict__")
        fresh = kind.__new__(kind)
        for name, value in list(state.items()):
            if type(name) is not str:
                raise walk.refuse(name, f"{path} attribute name", "is not a str")
            fresh.__dict__[name] = walk.convert(value, f"{path}.{name}", depth)
        return fresh


def _register_jax(jax: Any) -> None:
    @_convert.register(jax.Array)
    def _(obj: Any, walk: _Walk, path: str, depth: int) -> Any:
        if jax.dtypes.issubdtype(obj.dtype, jax.dtypes.prng_key):
            raise walk.refuse(obj, path, "is a JAX PRNG key array (the run's randomness)")
        return walk.convert(np.array(obj, copy=True), path, depth)  # released as a numpy array


_LAZY: dict[str, Callable[[Any], None]] = {"torch": _register_torch, "sklearn.base": _register_sklearn,
                                           "jax": _register_jax}
_PENDING: set[Callable[[Any], None]] = set(_LAZY.values())


def _load_frameworks() -> None:
    for module, register in _LAZY.items():
        if module in sys.modules and register in _PENDING:
            _PENDING.discard(register)
            register(sys.modules[module])


# -- user registrations ------------------------------------------------------------------------------------------


def register_release(kind: type, converter: Callable[[Any], Any]) -> None:
    """Release values of ``kind`` (and its subclasses) as ``converter(value)``, itself converted by these rules.

    For example ``register_release(torch.nn.Module, lambda module: module.state_dict())``. The
    registration travels with each selection to its workers (the class and the converter must be
    picklable by reference or by cloudpickle).
    """
    if not isinstance(kind, type):
        raise TypeError(f"kind must be a class, got {type(kind).__name__}")
    if not callable(converter):
        raise TypeError(f"converter must be callable: converter(value) -> a release value, got "
                        f"{type(converter).__name__}")
    _USER_CONVERTERS[kind] = converter
    _convert.register(kind, _user(kind, converter))


def _user(kind: type, converter: Callable[[Any], Any]) -> Callable[[Any, _Walk, str, int], Any]:
    def convert(obj: Any, walk: _Walk, path: str, depth: int) -> Any:
        if walk.trust.converter(kind) is not converter:
            raise walk.refuse(obj, path, "has a converter registered during the selection (register it before run())")
        return walk.convert(converter(obj), f"{path} (converted)", depth)
    return convert


def trust_estimator(kind: type) -> type:
    """Rebuild estimators of ``kind`` (a scikit-learn ``BaseEstimator`` subclass of yours) by the trusted walk."""
    if not isinstance(kind, type):
        raise TypeError(f"kind must be a class, got {type(kind).__name__}")
    _TRUSTED_ESTIMATORS.add(kind)
    return kind


def trust_value_type(kind: type) -> type:
    """Rebuild frozen dataclass values of ``kind`` field by field, each field converted by these rules.

    For a library's own small result records (a released test outcome, say): the rebuilt value is a
    fresh instance holding only the declared fields, converted like everything else, so a field
    that holds randomness state or another unlisted type is refused as usual.
    """
    if not (isinstance(kind, type) and dataclasses.is_dataclass(kind)
            and kind.__dataclass_params__.frozen):  # type: ignore[attr-defined]  # the stub omits this dataclass attribute
        raise TypeError(f"kind must be a frozen dataclass, got {kind!r}")
    _VALUE_TYPES.add(kind)
    _convert.register(kind, _rebuild_value)
    return kind


def _rebuild_value(obj: Any, walk: _Walk, path: str, depth: int) -> Any:
    if not walk.trust.trusts_value_type(type(obj)):
        raise walk.refuse(obj, path, "is not a trusted value type, or its class changed during the selection "
                                     "(trust_value_type before run())")
    fresh = object.__new__(type(obj))
    for item in dataclasses.fields(obj):
        object.__setattr__(fresh, item.name, walk.convert(getattr(obj, item.name), f"{path}.{item.name}", depth))
    return fresh


def registered_converters() -> tuple[tuple[type, Any], ...]:
    """The user registrations (sent with each selection to its workers)."""
    return (tuple(_USER_CONVERTERS.items()) + tuple((kind, None) for kind in _TRUSTED_ESTIMATORS)
            + tuple((kind, _VALUE_TYPE) for kind in _VALUE_TYPES))


_VALUE_TYPE = "value type"  # marks a trust_value_type class in registered_converters()


def restore_registrations(registrations: tuple[tuple[type, Any], ...]) -> None:
    """Apply the driver's registrations in a worker (idempotent)."""
    for kind, converter in registrations:
        if converter is None:
            _TRUSTED_ESTIMATORS.add(kind)
        elif isinstance(converter, str):
            if kind not in _VALUE_TYPES:
                trust_value_type(kind)
        elif _USER_CONVERTERS.get(kind) is not converter:
            register_release(kind, converter)


def trust_snapshot(token: str = "", modules: tuple[str, ...] = ()) -> TrustSnapshot:
    """The release walk's trust in this process now (``privselect.tuning.trusted``); ``modules`` are imported first."""
    _load_frameworks()
    snapshot = take_snapshot(token, _TRUSTED_ESTIMATORS, _VALUE_TYPES, _USER_CONVERTERS, modules)
    _load_frameworks()  # sklearn may have been loaded by ``modules``
    return snapshot


def release_value(value: Any, root: str = "output", release: str = "refuse", trust: TrustSnapshot | None = None) -> Any:
    """``value`` rebuilt by the rules above (a fresh object sharing nothing mutable with ``value``).

    Raises [`ReleaseRefusedError`][privselect.errors.ReleaseRefusedError] naming the type and the position
    of the first value outside the allowlist. ``release="strip"`` sets randomness state to None. ``trust``:
    the classes trusted before the runs (the selection's snapshot); None takes one now.
    """
    _load_frameworks()
    return _Walk(trust_snapshot() if trust is None else trust, release).convert(value, root)
