"""The release guard: no randomness state leaves the tuner.

A released object that holds a run's ``numpy.random.Generator`` (or its bit generator, a
``RandomState``, a ``SeedSequence``, or an estimator's integer ``random_state``) lets anyone who
holds it rewind the generator and replay the run's noise: PCG64 can be stepped backwards, and
retraining with the recovered state on D reproduces the released model exactly, while D minus
one record does not. That is a membership attack that no certificate covers
(tests/test_release_attacks.py reproduces it). The same holds for every framework's generator.

What the guard recognises, for each framework that is already loaded (it imports none itself:
a framework that is not in ``sys.modules`` cannot have made an object of the released value):

* numpy: ``Generator``, every ``BitGenerator``, ``RandomState``, ``SeedSequence``;
* the standard library: ``random.Random`` (not ``random.SystemRandom``, which has no state to replay);
* torch: ``torch.Generator``, on any device (Opacus's optimizer holds its noise generator as
  ``.generator``; its Poisson ``DPDataLoader`` and sampler hold theirs as ``.generator``);
* JAX: typed PRNG key arrays (``jax.random.key``, dtype ``key<...>``). A raw ``uint32`` key
  (``jax.random.PRNGKey``) is an ordinary integer array: it cannot be told apart from data and
  is the caller's responsibility, like every integer seed;
* seeds: an ``int`` cannot be told apart from data either. The guard refuses every value other
  than ``None`` held under a field (an attribute or a ``str`` dict key) named like a seed
  ([`seed_like`][privselect.tuning.guard.seed_like]), at any depth: the integer, and a list, tuple,
  array, 0-d array, float, string or dict holding it; elsewhere, never releasing a seed is the caller's
  responsibility.

[`guard_release`][privselect.tuning.guard.guard_release] walks the released value (attributes, ``__slots__``, containers, object
arrays, closures and ``functools.partial`` arguments; never modules or classes) and either
refuses with [`RandomnessLeakError`][privselect.tuning.guard.RandomnessLeakError], naming the attribute path, or strips the state
(sets it to ``None``) when ``release="strip"``. An object may add its own checks by defining
``__privselect_release_problems__() -> list[str]``.
"""

from __future__ import annotations

import functools
import re
import sys
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import RandomnessLeakError

__all__ = ["RandomnessLeakError", "guard_release", "find_leaks", "randomness_kind", "RELEASE_MODES",
           "RANDOMNESS_DETECTORS", "seed_like", "SEED_PARTS", "SEED_NAMES"]

RELEASE_MODES = ("refuse", "strip")
RANDOMNESS_TYPES = (np.random.Generator, np.random.BitGenerator, np.random.RandomState, np.random.SeedSequence,
                    np.random.bit_generator.SeedlessSeedSequence)
_FIELD_NAME = re.compile(r"(?:\.(\w+)|\[(['\"])(.*)\2\])$", re.DOTALL)
SEED_PARTS = ("seed", "randomstate", "rngstate", "rngkey", "prng", "randomkey")
"""A field is seed-like when its name, lowercased with every character that is not a letter removed, contains one
of these (``seed``, ``seeds``, ``seed0``, ``myseed``, ``base_seed``, ``random_state``, ``randomState``,
``rng_state``, ``prng_key``, ``prngkey``) ..."""
SEED_NAMES = ("rng", "rngs", "key", "keys", "subkey", "subkeys")
"""... or is one of these (``rng``, ``rng2``, ``_rng``, ``key``, ``subkey``), or ends with ``rng`` (``train_rng``,
``noise_rng``) or ``rngs``."""


def seed_like(name: str) -> bool:
    """Whether a field called ``name`` is named like a seed (``SEED_PARTS``, ``SEED_NAMES``)."""
    letters = re.sub(r"[^a-z]", "", name.lower())
    return (any(part in letters for part in SEED_PARTS) or letters in SEED_NAMES
            or letters.endswith(("rng", "rngs")))


def _field_name(path: str) -> str | None:
    """The attribute name or str dict key that ``path`` ends with (``output.seed``, ``output['seed']``), if any."""
    found = _FIELD_NAME.search(path)
    if found is None:
        return None
    return found.group(1) if found.group(1) is not None else found.group(3)


def _type_name(obj: Any) -> str:
    return f"{type(obj).__module__}.{type(obj).__name__}"


def _numpy_randomness(numpy: types.ModuleType, obj: Any) -> str | None:
    return _type_name(obj) if isinstance(obj, RANDOMNESS_TYPES) else None


def _stdlib_random(module: types.ModuleType, obj: Any) -> str | None:
    return _type_name(obj) if isinstance(obj, module.Random) and not isinstance(obj, module.SystemRandom) else None


def _torch_generator(torch: types.ModuleType, obj: Any) -> str | None:
    return f"torch.Generator (device {obj.device})" if isinstance(obj, torch.Generator) else None


def _typed_jax_key(jax: types.ModuleType, obj: Any) -> str | None:
    array, key_dtype = getattr(jax, "Array", None), getattr(getattr(jax, "dtypes", None), "prng_key", None)
    if array is None or key_dtype is None or not isinstance(obj, array):
        return None
    return f"a JAX PRNG key array ({obj.dtype})" if jax.dtypes.issubdtype(obj.dtype, key_dtype) else None


# module name -> detector(module, obj) -> what obj is, or None; a detector runs only when its module is loaded
RANDOMNESS_DETECTORS: dict[str, Callable[[types.ModuleType, Any], str | None]] = {
    "numpy": _numpy_randomness,
    "random": _stdlib_random,
    "torch": _torch_generator,
    "jax": _typed_jax_key,
}


def _state_as_data(obj: Any) -> str | None:
    """Randomness *state* exported as plain data, in the shapes the frameworks export it.

    ``Generator.bit_generator.state`` (a dict naming its bit generator), ``RandomState.get_state()``
    (a tuple starting ``'MT19937'``), ``random.getstate()`` (version 3 and 625 words) and
    ``torch.Generator.get_state()`` of a CPU generator (5056 bytes). The same numbers under other
    names cannot be told apart from data: never release them.
    """
    kind = type(obj)
    if kind is dict and isinstance(obj.get("bit_generator"), str) and "state" in obj:
        return "a numpy bit generator state (a dict)"
    if kind is tuple and len(obj) >= 2:
        if type(obj[0]) is str and obj[0] == "MT19937":
            return "a numpy RandomState state (a tuple)"
        if type(obj[0]) is int and obj[0] == 3 and type(obj[1]) is tuple and len(obj[1]) == 625:
            return "a random.Random state (a tuple)"
    if kind is np.ndarray or (kind.__module__.startswith("torch") and kind.__name__ in ("Tensor", "Parameter")):
        if tuple(obj.shape) == (CPU_GENERATOR_STATE_BYTES,) and str(obj.dtype) in ("uint8", "torch.uint8"):
            return "a torch CPU generator state (5056 bytes)"
    return None


CPU_GENERATOR_STATE_BYTES = 5056


def _loaded_detectors() -> list[tuple[types.ModuleType, Callable[[types.ModuleType, Any], str | None]]]:
    loaded = ((sys.modules.get(name), detect) for name, detect in RANDOMNESS_DETECTORS.items())
    return [(module, detect) for module, detect in loaded if module is not None]


def randomness_kind(obj: Any, detectors=None) -> str | None:
    """What ``obj`` is (``numpy.random._generator.Generator``, ``torch.Generator (device cpu)``, ...) if it is
    randomness state of a loaded framework, else None."""
    state = _state_as_data(obj)
    if state is not None:
        return state
    for module, detect in _loaded_detectors() if detectors is None else detectors:
        try:
            kind = detect(module, obj)
        except Exception:  # noqa: BLE001 - a half-initialised framework module cannot have made obj
            continue
        if kind is not None:
            return kind
    return None


def _under_seed_field(path: str, obj: Any) -> bool:
    """``obj`` is not None and sits in a field named like a seed (any type: a container under it is refused whole)."""
    if obj is None:
        return False
    name = _field_name(path)
    return name is not None and seed_like(name)
_ATOMS = (str, bytes, bytearray, int, float, complex, bool, type(None), range, types.ModuleType, type,
          types.BuiltinFunctionType, np.generic)


@dataclass(frozen=True)
class Leak:
    """One place in the released value that holds randomness state (or another release problem)."""

    path: str
    what: str
    clear: Callable[[], None] | None  # strips it; None where it cannot be stripped

    def __str__(self) -> str:
        return f"{self.path}: {self.what}"


def _children(obj: Any, path: str) -> Iterator[tuple[str, Any, Callable[[], None] | None]]:
    """(path, child, setter-to-None) of every value held by ``obj``."""
    yield from _children_of(obj, path)


@functools.singledispatch
def _children_of(obj: Any, path: str):
    state = getattr(obj, "__dict__", None)
    if isinstance(state, dict):
        for name, value in list(state.items()):
            yield f"{path}.{name}", value, functools.partial(_set_attribute, obj, name)
    for cls in type(obj).__mro__:
        for name in getattr(cls, "__slots__", ()):
            if isinstance(name, str) and name not in ("__dict__", "__weakref__") and hasattr(obj, name):
                yield f"{path}.{name}", getattr(obj, name), functools.partial(_set_attribute, obj, name)


def _set_attribute(obj: Any, name: str) -> None:
    object.__setattr__(obj, name, None)


def _set_item(container: Any, key: Any) -> None:
    container[key] = None


@_children_of.register(dict)
def _(obj: dict, path: str):
    for ordinal, (key, value) in enumerate(list(obj.items())):
        if randomness_kind(key) is not None:
            yield f"{path} key #{ordinal}", key, None
        # str keys are shown (a seed is recognised by its field name); other keys by their ordinal: a key's repr
        # can be anything the trainer built from the data
        shown = repr(key) if type(key) is str else f"key #{ordinal}"
        yield f"{path}[{shown}]", value, functools.partial(_set_item, obj, key)


@_children_of.register(list)
def _(obj: list, path: str):
    for index, value in enumerate(obj):
        yield f"{path}[{index}]", value, functools.partial(_set_item, obj, index)


@_children_of.register(tuple)
@_children_of.register(set)
@_children_of.register(frozenset)
def _(obj, path: str):
    for index, value in enumerate(obj):
        yield f"{path}[{index}]", value, None
    yield from _children_of.dispatch(object)(obj, path)  # namedtuple subclasses with attributes


@_children_of.register(np.ndarray)
def _(obj: np.ndarray, path: str):
    if obj.dtype == object:
        for index in np.ndindex(obj.shape):
            yield f"{path}[{', '.join(map(str, index))}]", obj[index], functools.partial(_set_item, obj, index)


@_children_of.register(types.FunctionType)
def _(obj: types.FunctionType, path: str):
    for index, cell in enumerate(obj.__closure__ or ()):
        try:
            value = cell.cell_contents
        except ValueError:  # empty cell
            continue
        yield f"{path}.__closure__[{index}]", value, functools.partial(setattr, cell, "cell_contents", None)
    for index, value in enumerate(obj.__defaults__ or ()):
        yield f"{path}.__defaults__[{index}]", value, None
    for name, value in (obj.__kwdefaults__ or {}).items():
        yield f"{path}.__kwdefaults__[{name!r}]", value, functools.partial(_set_item, obj.__kwdefaults__, name)
    yield from _children_of.dispatch(object)(obj, path)


@_children_of.register(types.MethodType)
def _(obj: types.MethodType, path: str):
    yield f"{path}.__self__", obj.__self__, None
    yield f"{path}.__func__", obj.__func__, None


@_children_of.register(functools.partial)
def _(obj: functools.partial, path: str):
    yield f"{path}.func", obj.func, None
    for index, value in enumerate(obj.args):
        yield f"{path}.args[{index}]", value, None
    for name, value in obj.keywords.items():
        yield f"{path}.keywords[{name!r}]", value, functools.partial(_set_item, obj.keywords, name)


def find_leaks(value: Any, root: str = "output") -> list[Leak]:
    """Every place in ``value`` that holds randomness state, with its attribute path."""
    detectors = _loaded_detectors()
    leaks: list[Leak] = []
    seen: set[int] = set()
    stack: list[tuple[str, Any, Callable[[], None] | None]] = [(root, value, None)]
    while stack:
        path, obj, clear = stack.pop()
        kind = randomness_kind(obj, detectors)
        if kind is not None:
            leaks.append(Leak(path, kind, clear))
            continue
        if _under_seed_field(path, obj):
            what = "an integer seed" if isinstance(obj, (int, np.integer)) else "a possible seed"
            leaks.append(Leak(path, f"{what} ({type(obj).__name__} in a field named like a seed)", clear))
            continue
        if isinstance(obj, _ATOMS) or id(obj) in seen:
            continue
        seen.add(id(obj))
        check = getattr(type(obj), "__privselect_release_problems__", None)
        if callable(check):
            leaks.extend(Leak(path, problem, None) for problem in check(obj))
        try:
            children = list(_children(obj, path))
        except Exception:  # noqa: BLE001 - an object whose attributes cannot be read cannot be checked
            leaks.append(Leak(path, f"{type(obj).__name__} whose contents cannot be inspected", None))
            continue
        stack.extend(reversed(children))
    return leaks


def guard_release(value: Any, root: str, release: str) -> Any:
    """Refuse (``release="refuse"``) or strip (``"strip"``) randomness state in ``value``; return it."""
    leaks = find_leaks(value, root)
    if not leaks:
        return value
    clears = [leak.clear for leak in leaks if leak.clear is not None]
    if release == "strip" and len(clears) == len(leaks):  # every leak can be stripped
        for clear in clears:
            clear()
        return value
    blocking = [leak for leak in leaks if release != "strip" or leak.clear is None]
    listed = "; ".join(str(leak) for leak in blocking[:5]) + (" ..." if len(blocking) > 5 else "")
    strippable = release != "strip" and all(leak.clear is not None for leak in blocking)
    seeds = any("in a field named like a seed" in leak.what for leak in blocking)
    raise RandomnessLeakError(
        f"the winner was not released: {listed}. Randomness state (a numpy, torch, JAX or random generator, a "
        "SeedSequence or a seed) lets its holder replay the run's noise: train with the run's generator, then drop it "
        "(return a torch module's state_dict, never its optimizer or data loader; privselect's own estimators drop "
        "theirs)" + (", or pass release='strip' to set these to None" if strippable else "") + "."
        + (" Integer seeds are your responsibility: privselect cannot tell an integer from data and refuses a value "
           "only in a field named like a seed (privselect.tuning.guard.seed_like: seed, seeds, seed0, random_state, "
           "rng, key, prng_key, ...); never release a seed, under any name." if seeds else "")
    )
