"""Parameter checks shared by the public surface.

Every public constructor and query validates here and raises ``ValueError`` (or
``TypeError``) naming the parameter and the allowed range. Internal code trusts
validated values.
"""

from __future__ import annotations

import math
import numbers

import numpy as np


def real(name: str, value: object) -> float:
    """A finite or infinite real number (not bool, not NaN)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    value = float(value)
    if math.isnan(value):
        raise ValueError(f"{name} must be a number, got NaN")
    return value


def positive(name: str, value: object, *, allow_inf: bool = False) -> float:
    v = real(name, value)
    if not v > 0 or (math.isinf(v) and not allow_inf):
        raise ValueError(f"{name} must be in (0, {'inf]' if allow_inf else 'inf)'}, got {value!r}")
    return v


def nonnegative(name: str, value: object) -> float:
    v = real(name, value)
    if not (0 <= v < math.inf):
        raise ValueError(f"{name} must be in [0, inf), got {value!r}")
    return v


def open_unit(name: str, value: object) -> float:
    v = real(name, value)
    if not 0 < v < 1:
        raise ValueError(f"{name} must be in (0, 1), got {value!r}")
    return v


def half_open_unit(name: str, value: object) -> float:
    """A value in (0, 1]."""
    v = real(name, value)
    if not 0 < v <= 1:
        raise ValueError(f"{name} must be in (0, 1], got {value!r}")
    return v


def positive_int(name: str, value: object) -> int:
    if isinstance(value, bool):
        raise TypeError(f"{name} must be an integer >= 1, got bool")
    if isinstance(value, numbers.Integral):
        v = int(value)
    elif isinstance(value, numbers.Real) and float(value).is_integer():
        v = int(math.trunc(value))  # int(value): numbers.Real's stub declares __trunc__, not __int__
    elif isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
    else:
        raise TypeError(f"{name} must be an integer >= 1, got {type(value).__name__}")
    if v < 1:
        raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
    return v


def real_array(name: str, value: object) -> np.ndarray:
    """A float array without NaN (infinities allowed). Strings are rejected, as in :func:`real`."""
    if isinstance(value, (str, bytes)) or np.asarray(value).dtype.kind in "USO" and _has_text(value):
        raise TypeError(f"{name} must be real numbers, got text {value!r} (write 1e-5, not '1e-5')")
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be real numbers: {exc}") from None
    if np.isnan(arr).any():
        raise ValueError(f"{name} must not contain NaN")
    return arr


def _has_text(value: object) -> bool:
    return any(isinstance(v, (str, bytes)) for v in np.asarray(value, dtype=object).reshape(-1))


def delta_array(name: str, value: object) -> np.ndarray:
    """Target deltas: each in the open interval (0, 1)."""
    arr = real_array(name, value)
    if ((arr <= 0) | (arr >= 1)).any():
        raise ValueError(f"{name} must lie in (0, 1), got {value!r}")
    return arr


def in_range(name: str, value: object, low: float, high: float, *, high_open: bool = False) -> float:
    """A real number in [low, high] (or [low, high) with ``high_open``)."""
    v = real(name, value)
    if not (low <= v and (v < high if high_open else v <= high)):
        raise ValueError(f"{name} must be in [{low:g}, {high:g}{')' if high_open else ']'}, got {value!r}")
    return v


def delta_scalar(name: str, value: object) -> float:
    """One target delta: a single number (not an array) in the open interval (0, 1)."""
    arr = real_array(name, value)
    if arr.ndim != 0:
        raise TypeError(f"{name} must be a single number in (0, 1), got an array of shape {arr.shape}")
    v = float(arr)
    if not 0 < v < 1:
        raise ValueError(f"{name} must lie in (0, 1), got {value!r}")
    return v
