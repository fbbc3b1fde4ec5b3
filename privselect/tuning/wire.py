"""The isolated run's message: its outcome as data, which the caller parses without running any code of the run's.

An isolated run ([`privselect.tuning.isolation`][privselect.tuning.isolation]) sends back one message, never a
pickle: a pickle is a program, and the run chooses its bytes (a restricted unpickler that admits numpy objects
brings dtype metadata, hence any object, back through ``np.dtype``'s state). The message is::

    b"PSWIRE1\\n" | score (float64, little-endian) | [ header length (uint64 LE) | header (JSON, UTF-8) | buffers ]

The part in brackets is present only for a run that has a release value; a NaN score is a failed run. The
header is ``{"value": node, "buffers": [length, ...]}``; the buffers follow it, in order, with nothing after
them. A node is JSON ``null`` (None), ``true``/``false`` (bool), or a list whose first element is its kind:

* ``["i", "123"]`` int (decimal), ``["f", "0x1.8p+1"]`` float (``float.hex``: a NaN's payload is dropped),
  ``["c", re, im]`` complex, ``["s", text]`` str, ``["b", k]`` bytes (buffer ``k``), ``["r", a, b, c]`` range;
* ``["l", [nodes]]`` list, ``["t", [nodes]]`` tuple, ``["d", [[key, value], ...]]`` dict (keys str or int);
* ``["g", dtype, k]`` numpy scalar and ``["a", dtype, shape, k]`` numpy array: ``dtype`` is a type code alone
  (``"<f8"``, ``"|b1"``: byte order, kind ``b``/``i``/``u``/``f``/``c``, item size), so no metadata, field or
  sub-array rides along; the buffer holds the C-ordered items, exactly ``prod(shape) * itemsize`` bytes;
* ``["T", dtype, shape, k]`` torch tensor (``dtype`` a torch dtype name such as ``"float32"``): rebuilt as a CPU
  tensor when torch is loaded in the caller, else as the numpy array of the same values (``bfloat16`` as float32);
* ``["e", module, qualname, [[name, node], ...]]`` scikit-learn estimator and ``["v", ...]`` a
  ``trust_value_type`` dataclass: the class is looked up by name among the modules the caller has already
  imported (nothing is imported, no module ``__getattr__`` runs), must be a ``BaseEstimator`` subclass (resp. a
  frozen dataclass with exactly these fields), and the instance is built without calling any of its methods;
  whether the class is trusted is then decided by [`release_value`][privselect.tuning.release.release_value].

``register_release`` outputs travel as the plain values they were converted to in the run. Shared references
come back as copies. Anything else in a message (an unknown kind, a buffer of the wrong length, trailing bytes,
a header past [`MAX_HEADER_BYTES`][privselect.tuning.wire.MAX_HEADER_BYTES], nesting past
[`MAX_DEPTH`][privselect.tuning.wire.MAX_DEPTH]) raises [`MalformedMessage`][privselect.tuning.wire.MalformedMessage]:
the caller scores that run worst. The caller then validates the parsed value against the allowlist again.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import struct
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["MAGIC", "MAX_DEPTH", "MAX_HEADER_BYTES", "MalformedMessage", "encode_value", "outcome_message",
           "decode_outcome"]

MAGIC = b"PSWIRE1\n"
MAX_DEPTH = 256
"""Nesting depth past which a message is malformed (the release value's own limit is 200)."""
MAX_HEADER_BYTES = 16 << 20
"""The JSON header's budget: large data travels in the buffers (arrays), whose bytes are not parsed."""
_SCORE = struct.Struct("<d")
_LENGTH = struct.Struct("<Q")
_DTYPE = re.compile(r"[<>|][biufc](?:1|2|4|8|10|12|16|32)")
_INT = re.compile(r"-?[0-9]{1,4300}")
_TORCH_AS_NUMPY = {"bool": "|b1", "uint8": "|u1", "int8": "|i1", "int16": "<i2", "int32": "<i4", "int64": "<i8",
                   "uint16": "<u2", "uint32": "<u4", "uint64": "<u8", "float16": "<f2", "float32": "<f4",
                   "float64": "<f8", "complex64": "<c8", "complex128": "<c16"}


class MalformedMessage(ValueError):
    """A message that is not a well-formed outcome: the run that sent it scores worst."""


# -- encoding (in the run's process) ------------------------------------------------------------------------------


class _Encoder:
    def __init__(self, budget: int) -> None:
        self.buffers: list[bytes] = []
        self.budget = budget

    def buffer(self, data: bytes) -> int:
        self.budget -= len(data)
        if self.budget < 0:
            raise MalformedMessage("the release value is larger than the message budget")
        self.buffers.append(data)
        return len(self.buffers) - 1

    def node(self, obj: Any, depth: int = 0) -> Any:
        if depth > MAX_DEPTH:
            raise MalformedMessage("nested too deeply")
        if obj is None or type(obj) is bool:
            return obj
        encode = _ENCODERS.get(type(obj))
        if encode is not None:
            return encode(self, obj, depth + 1)
        for kind, encode_kind in _by_class():
            if isinstance(obj, kind):
                return encode_kind(self, obj, depth + 1)
        if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
            return ["v", *_class_path(obj), [[item.name, self.node(getattr(obj, item.name), depth + 1)]
                                             for item in dataclasses.fields(obj)]]
        raise MalformedMessage(f"{type(obj).__qualname__} has no wire encoding")


def _class_path(obj: Any) -> list[str]:
    return [type(obj).__module__, type(obj).__qualname__]


def _sequence(tag: str) -> Callable[[_Encoder, Any, int], Any]:
    return lambda encoder, obj, depth: [tag, [encoder.node(item, depth) for item in obj]]


def _array(encoder: _Encoder, obj: np.ndarray, depth: int) -> Any:
    return ["a", obj.dtype.str, list(obj.shape), encoder.buffer(np.ascontiguousarray(obj).tobytes())]


_ENCODERS: dict[type, Callable[[_Encoder, Any, int], Any]] = {
    int: lambda encoder, obj, depth: ["i", str(obj)],
    float: lambda encoder, obj, depth: ["f", obj.hex()],
    complex: lambda encoder, obj, depth: ["c", obj.real.hex(), obj.imag.hex()],
    str: lambda encoder, obj, depth: ["s", obj],
    bytes: lambda encoder, obj, depth: ["b", encoder.buffer(obj)],
    range: lambda encoder, obj, depth: ["r", str(obj.start), str(obj.stop), str(obj.step)],
    list: _sequence("l"),
    tuple: _sequence("t"),
    dict: lambda encoder, obj, depth: ["d", [[encoder.node(key, depth), encoder.node(value, depth)]
                                             for key, value in obj.items()]],
    np.ndarray: _array,
}


def _tensor(encoder: _Encoder, obj: Any, depth: int) -> Any:
    torch = sys.modules["torch"]
    flat = obj.detach().cpu().contiguous().reshape(-1)
    data = flat.view(torch.uint8).numpy().tobytes() if flat.numel() else b""
    return ["T", str(obj.dtype).removeprefix("torch."), list(obj.shape), encoder.buffer(data)]


def _estimator(encoder: _Encoder, obj: Any, depth: int) -> Any:
    return ["e", *_class_path(obj), [[name, encoder.node(value, depth)] for name, value in vars(obj).items()]]


def _by_class() -> list[tuple[type, Callable[[_Encoder, Any, int], Any]]]:
    kinds: list[tuple[type, Callable[[_Encoder, Any, int], Any]]] = [
        (np.generic, lambda encoder, obj, depth: ["g", obj.dtype.str, encoder.buffer(obj.tobytes())]),
        (np.ndarray, _array)]
    torch, base = sys.modules.get("torch"), sys.modules.get("sklearn.base")
    if torch is not None and hasattr(torch, "Tensor"):
        kinds.append((torch.Tensor, _tensor))
    if base is not None and hasattr(base, "BaseEstimator"):
        kinds.append((base.BaseEstimator, _estimator))
    return kinds


def encode_value(value: Any, budget: int) -> bytes:
    """``value`` (a release value: built by [`release_value`][privselect.tuning.release.release_value]) as the
    bracketed part of a message; raises [`MalformedMessage`][privselect.tuning.wire.MalformedMessage] for a value
    of no listed kind or past ``budget`` bytes."""
    encoder = _Encoder(budget)
    node = encoder.node(value)
    header = json.dumps({"value": node, "buffers": [len(data) for data in encoder.buffers]},
                        separators=(",", ":")).encode()
    if len(header) > MAX_HEADER_BYTES:
        raise MalformedMessage("the release value's structure is larger than the header budget")
    return b"".join([_LENGTH.pack(len(header)), header, *encoder.buffers])


def outcome_message(score: float, payload: bytes | None) -> bytes:
    """The whole message of a run: its score, then its encoded release value (``payload``) if it has one."""
    return MAGIC + _SCORE.pack(score) + (payload or b"")


# -- decoding (in the caller) -------------------------------------------------------------------------------------


class _Decoder:
    def __init__(self, buffers: list[memoryview]) -> None:
        self.buffers = buffers
        self.used = [False] * len(buffers)

    def buffer(self, index: Any) -> memoryview:
        if type(index) is not int or not 0 <= index < len(self.buffers) or self.used[index]:
            raise MalformedMessage("a buffer reference is out of range or used twice")
        self.used[index] = True
        return self.buffers[index]

    def node(self, node: Any, depth: int = 0) -> Any:
        if depth > MAX_DEPTH:
            raise MalformedMessage("nested too deeply")
        if node is None or type(node) is bool:
            return node
        if type(node) is not list or not node or type(node[0]) is not str or node[0] not in _DECODERS:
            raise MalformedMessage("a node of no known kind")
        try:
            return _DECODERS[node[0]](self, node[1:], depth + 1)
        except MalformedMessage:
            raise
        except (TypeError, ValueError, OverflowError, AttributeError, IndexError) as error:
            raise MalformedMessage(f"a malformed {node[0]!r} node") from error


def _text(value: Any) -> str:
    if type(value) is not str:
        raise MalformedMessage("a string was expected")
    return value


def _integer(text: Any) -> int:
    if _INT.fullmatch(_text(text)) is None:
        raise MalformedMessage("an integer was expected")
    return int(text)


def _items(decoder: _Decoder, body: list, depth: int) -> list:
    if len(body) != 1 or type(body[0]) is not list:
        raise MalformedMessage("a list of nodes was expected")
    return [decoder.node(node, depth) for node in body[0]]


def _pairs(nodes: Any) -> list[list]:
    if type(nodes) is not list or any(type(pair) is not list or len(pair) != 2 for pair in nodes):
        raise MalformedMessage("a list of pairs was expected")
    return nodes


def _numpy_dtype(code: Any) -> np.dtype:
    if _DTYPE.fullmatch(_text(code)) is None:
        raise MalformedMessage("not a numeric type code")
    dtype = np.dtype(code)
    if dtype.metadata is not None or dtype.fields is not None or dtype.subdtype is not None \
            or dtype.kind not in "biufc":
        raise MalformedMessage("not a plain numeric dtype")
    return dtype


def _shape(shape: Any) -> tuple[int, ...]:
    if type(shape) is not list or len(shape) > 64 or any(type(n) is not int or n < 0 for n in shape):
        raise MalformedMessage("not a shape")
    return tuple(shape)


def _numpy_array(data: memoryview, dtype: np.dtype, shape: tuple[int, ...]) -> np.ndarray:
    if math.prod(shape) * dtype.itemsize != len(data):
        raise MalformedMessage("an array's buffer does not match its shape")
    return np.frombuffer(data, dtype=dtype).reshape(shape).copy()


def _decode_array(decoder: _Decoder, body: list, depth: int) -> np.ndarray:
    code, shape, index = body
    return _numpy_array(decoder.buffer(index), _numpy_dtype(code), _shape(shape))


def _decode_scalar(decoder: _Decoder, body: list, depth: int) -> Any:
    code, index = body
    return _numpy_array(decoder.buffer(index), _numpy_dtype(code), ())[()]


def _decode_tensor(decoder: _Decoder, body: list, depth: int) -> Any:
    name, shape, index = body
    name, shape, data = _text(name), _shape(shape), decoder.buffer(index)
    torch = sys.modules.get("torch")
    dtype = vars(torch).get(name) if torch is not None and sys.byteorder == "little" else None
    if torch is not None and isinstance(dtype, torch.dtype):
        if math.prod(shape) * dtype.itemsize != len(data):
            raise MalformedMessage("a tensor's buffer does not match its shape")
        if not len(data):
            return torch.empty(shape, dtype=dtype)
        return torch.frombuffer(bytearray(data), dtype=dtype).reshape(shape)
    if name == "bfloat16":  # the upper half of a float32: exact
        halves = _numpy_array(data, np.dtype("<u2"), shape)
        return (halves.astype("<u4") << 16).view("<f4")
    if name not in _TORCH_AS_NUMPY:
        raise MalformedMessage("a tensor dtype with no numpy equivalent, and torch is not loaded")
    return _numpy_array(data, np.dtype(_TORCH_AS_NUMPY[name]), shape)


def _loaded_class(module: Any, qualname: Any) -> type:
    """The class ``module.qualname`` among the modules already imported: no import, no module ``__getattr__``."""
    found: Any = sys.modules.get(_text(module))
    for part in _text(qualname).split("."):
        found = vars(found).get(part) if hasattr(found, "__dict__") else None
    if not isinstance(found, type):
        raise MalformedMessage("a class that is not loaded in the caller")
    return found


def _decode_estimator(decoder: _Decoder, body: list, depth: int) -> Any:
    module, qualname, attributes = body
    kind, base = _loaded_class(module, qualname), sys.modules.get("sklearn.base")
    if base is None or base.BaseEstimator not in kind.__mro__:
        raise MalformedMessage("not a scikit-learn estimator class")
    fresh: Any = object.__new__(kind)
    state = fresh.__dict__
    for name, node in _pairs(attributes):
        state[_text(name)] = decoder.node(node, depth)
    return fresh


def _decode_value_type(decoder: _Decoder, body: list, depth: int) -> Any:
    module, qualname, fields = body
    kind = _loaded_class(module, qualname)
    params = getattr(kind, "__dataclass_params__", None) if dataclasses.is_dataclass(kind) else None
    pairs = _pairs(fields)
    if params is None or not params.frozen or [_text(name) for name, _ in pairs] != \
            [item.name for item in dataclasses.fields(kind)]:
        raise MalformedMessage("not a frozen dataclass with these fields")
    fresh: Any = object.__new__(kind)
    for name, node in pairs:
        object.__setattr__(fresh, name, decoder.node(node, depth))
    return fresh


def _decode_dict(decoder: _Decoder, body: list, depth: int) -> dict:
    (pairs,) = body
    out = {}
    for key_node, value_node in _pairs(pairs):
        key = decoder.node(key_node, depth)
        if type(key) not in (str, int):
            raise MalformedMessage("a dict key that is not a str or an int")
        out[key] = decoder.node(value_node, depth)
    return out


def _single(convert: Callable[[Any], Any]) -> Callable[[_Decoder, list, int], Any]:
    def decode(decoder: _Decoder, body: list, depth: int) -> Any:
        (value,) = body
        return convert(value)
    return decode


_DECODERS: dict[str, Callable[[_Decoder, list, int], Any]] = {
    "i": _single(_integer),
    "f": _single(lambda text: float.fromhex(_text(text))),
    "c": lambda decoder, body, depth: complex(float.fromhex(_text(body[0])), float.fromhex(_text(body[1])))
    if len(body) == 2 else _malformed(),
    "s": _single(_text),
    "b": lambda decoder, body, depth: bytes(decoder.buffer(*body)),
    "r": lambda decoder, body, depth: range(*(_integer(text) for text in body)) if len(body) == 3 else _malformed(),
    "l": _items,
    "t": lambda decoder, body, depth: tuple(_items(decoder, body, depth)),
    "d": _decode_dict,
    "g": _decode_scalar,
    "a": _decode_array,
    "T": _decode_tensor,
    "e": _decode_estimator,
    "v": _decode_value_type,
}


def _malformed() -> Any:
    raise MalformedMessage("a node with the wrong number of fields")



def decode_outcome(message: bytes | memoryview) -> tuple[float, Any]:
    """``(score, value)`` from a run's message; ``value`` is None for a run without a release value (check the
    score: NaN is a failed run). Runs no code of the run's; raises
    [`MalformedMessage`][privselect.tuning.wire.MalformedMessage] for anything but a whole, well-formed message."""
    view = memoryview(message).cast("B")
    start = len(MAGIC) + _SCORE.size
    if len(view) < start or bytes(view[:len(MAGIC)]) != MAGIC:
        raise MalformedMessage("not a privselect run message")
    (score,) = _SCORE.unpack(view[len(MAGIC):start])
    if len(view) == start:
        return score, None
    if len(view) < start + _LENGTH.size:
        raise MalformedMessage("a truncated message")
    (length,) = _LENGTH.unpack(view[start:start + _LENGTH.size])
    body = start + _LENGTH.size
    if length > MAX_HEADER_BYTES or body + length > len(view):
        raise MalformedMessage("a header past its budget or past the message")
    try:
        header = json.loads(bytes(view[body:body + length]).decode("utf-8"))
    except (ValueError, RecursionError) as error:
        raise MalformedMessage("a header that is not JSON") from error
    if type(header) is not dict or set(header) != {"value", "buffers"} or type(header["buffers"]) is not list \
            or any(type(size) is not int or size < 0 for size in header["buffers"]):
        raise MalformedMessage("a header without its value and buffer lengths")
    offset, buffers = body + length, []
    for size in header["buffers"]:
        buffers.append(view[offset:offset + size])
        offset += size
    if offset != len(view):
        raise MalformedMessage("the buffers do not fill the message exactly")
    decoder = _Decoder(buffers)
    try:
        value = decoder.node(header["value"])
    except RecursionError as error:
        raise MalformedMessage("nested too deeply") from error
    if not all(decoder.used):
        raise MalformedMessage("a buffer that no node uses")
    return score, value
