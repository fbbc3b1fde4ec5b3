"""Load a user's own table for private regression, preprocessed with public bounds only.

[`load_table`][privselect.apps.ptr.table.load_table] reads a delimited text file, checks that it is a
rectangular table of finite numbers, and maps it into the regressors' public ball with the
**public** ranges the caller declares (a data dictionary, never the data):

* feature j: x -> (2x - (lo_j + hi_j)) / (hi_j - lo_j), in [-1, 1]; a constant 1 is appended
  (the intercept, since no regressor here centres with data means); each row is divided by
  sqrt(d + 1), so ||x||_2 <= 1 = ``x_bound``;
* target: after the optional public ``target_transform``, y -> (2y - (lo + hi)) / (hi - lo), in
  [-1, 1] = [-``y_bound``, ``y_bound``]; predicting 0 is predicting the centre of the range.

These are per-record maps with public constants, so they do not change the neighbouring
relation (design notes Sec. 9.6). A bound is never read from the data. A value outside its
declared range raises (``outside="raise"``, the default; the error names file, line and column,
not the value) or, with ``outside="clip"``, is clipped to the range (a per-record, privacy-safe
map) and counted in ``Table.clipped``.

Every malformed input raises ``ValueError`` naming the file, the line and the column: a header
row when ``header=False`` (and a numeric first row when ``header=True``), a missing value such as
``?``, text, a ragged row, a separator that does not split the lines, bytes that are not valid in
``encoding``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = ["Table", "load_table", "read_table"]

_SEPARATORS = (",", ";", "\t", "|", " ")
_MISSING = {"?", "", "na", "nan", "n/a", "null", "none", "-"}


@dataclass(frozen=True, eq=False)
class Table:
    """A table preprocessed into public bounds: features ``X`` (n x (d+1), last column the intercept), target ``y``.

    ``feature_names`` ends with ``"(intercept)"``. ``x_bound`` and ``y_bound`` are the bounds to pass
    to the regressors (both 1); `bounds` holds them as keyword arguments, so
    ``SSPRidgeSelectionRegressor(epsilon=1.0, **table.bounds)`` states them in one step (the
    regressors have no default bounds). `target_to_original` maps predictions back to the original target
    scale (before ``target_transform``'s inverse, which is the caller's). ``clipped``: values
    clipped with ``outside="clip"``.
    """

    X: np.ndarray
    y: np.ndarray
    feature_names: tuple[str, ...]
    target_name: str
    target_range: tuple[float, float]
    clipped: int = 0
    x_bound: float = 1.0
    y_bound: float = 1.0

    @property
    def bounds(self) -> dict[str, float]:
        """``{"x_bound": ..., "y_bound": ...}``: the public bounds this table was mapped into, as regressor keyword arguments."""
        return {"x_bound": self.x_bound, "y_bound": self.y_bound}

    def target_to_original(self, values) -> np.ndarray:
        """Inverse of the target map: (lo + hi)/2 + values (hi - lo)/2 (on the transformed scale)."""
        lo, hi = self.target_range
        return (lo + hi) / 2 + np.asarray(values, dtype=float) * (hi - lo) / 2


def _fields(line: str, sep: str) -> list[str]:
    if sep == "whitespace":
        return line.split()
    fields = [f.strip() for f in line.split(sep)]
    if len(fields) > 1 and fields[-1] == "":  # a trailing separator
        fields.pop()
    return fields


def _number(field: str) -> float | None:
    try:
        value = float(field)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _decode(path: Path, encoding: str) -> str:
    raw = path.read_bytes()
    try:
        return raw.decode(encoding)
    except UnicodeDecodeError as exc:
        line = raw[:exc.start].count(b"\n") + 1
        column = exc.start - raw.rfind(b"\n", 0, exc.start)
        raise ValueError(f"{path}, line {line}, byte column {column}: byte {raw[exc.start]:#04x} (file offset "
                         f"{exc.start}) is not valid "
                         f"{encoding}; pass encoding= (e.g. 'latin-1') if the file uses another") from None


def _separator_hint(line: str, sep: str) -> str:
    others = [s for s in _SEPARATORS if s != sep and s in line.strip() and not (sep == "whitespace" and s in " \t")]
    if not others:
        return ""
    shown = {"\t": "'\\t'", " ": "' '"}.get(others[0], repr(others[0]))
    return f"; the line contains {shown}: is the separator {shown} rather than {sep!r}?"


def read_table(path: str | Path, *, header: bool, sep: str = ",", encoding: str = "utf-8"
               ) -> tuple[tuple[str, ...], np.ndarray]:
    """(column names, values) of a delimited numeric text file; every malformed input raises naming file, line, column.

    ``header=True``: the first non-blank line holds the column names (and must not be all
    numbers); ``header=False``: columns are named ``"1"``, ``"2"``, ... and a first line that is not
    numeric raises (pass ``header=True``). ``sep``: a single character or ``"whitespace"``. Blank
    lines are skipped; CR, LF and CRLF line ends are accepted; a trailing separator is ignored.
    """
    names, values, _ = _read(Path(path), header, sep, encoding)
    return names, values


def _read(path: Path, header: bool, sep: str, encoding: str) -> tuple[tuple[str, ...], np.ndarray, np.ndarray]:
    """`read_table` plus the file line number of every data row."""
    if header not in (True, False):
        raise ValueError(f"header must be True or False (is the first line column names?), got {header!r}")
    if sep != "whitespace" and (not isinstance(sep, str) or len(sep) != 1):
        raise ValueError(f"sep must be a single character or 'whitespace', got {sep!r}")
    if not path.is_file():
        raise FileNotFoundError(f"no such data file: {path}")
    lines = [(number, line) for number, line in enumerate(re.split(r"\r\n|\r|\n", _decode(path, encoding)), 1)
             if line.strip()]
    if not lines:
        raise ValueError(f"{path}: the file is empty")
    names: tuple[str, ...] | None = None
    if header:
        number, line = lines[0]
        names = tuple(f.strip().strip('"').strip("'") for f in _fields(line, sep))
        if all(_number(f) is not None for f in names):
            raise ValueError(f"{path}, line {number}: header=True but the first line is all numbers; pass header=False")
        if len(set(names)) != len(names):
            raise ValueError(f"{path}, line {number}: duplicate column names in the header")
        lines = lines[1:]
        if not lines:
            raise ValueError(f"{path}: no data rows after the header")
    width = len(names) if names is not None else len(_fields(lines[0][1], sep))
    rows = np.empty((len(lines), width))
    for i, (number, line) in enumerate(lines):
        fields = _fields(line, sep)
        if len(fields) != width:
            raise ValueError(f"{path}, line {number}: {len(fields)} fields, expected {width} "
                             f"({'the header' if names is not None else 'the first row'}){_separator_hint(line, sep)}")
        for column, field in enumerate(fields, 1):
            if _number(field) is None:
                label = f"column {column}" + (f" ({names[column - 1]!r})" if names is not None else "")
                if field.strip().lower() in _MISSING:
                    raise ValueError(f"{path}, line {number}, {label}: missing value {field!r}; missing values are "
                                     "not supported: drop or impute those rows with a public rule first")
                if i == 0 and names is None and all(_number(f) is None for f in fields) and len(fields) > 1:
                    raise ValueError(f"{path}, line {number}: the first line is not numeric; if it holds column "
                                     "names pass header=True")
                shown = field if len(field) <= 40 else field[:37] + "..."
                raise ValueError(f"{path}, line {number}, {label}: {shown!r} is not a finite number"
                                 f"{_separator_hint(line, sep) if len(fields) == 1 else ''}")
        rows[i] = [float(f) for f in fields]
    if names is None:
        names = tuple(str(c) for c in range(1, width + 1))
    return names, rows, np.asarray([number for number, _ in lines])


def _resolve(column: str | int, names: tuple[str, ...], path: Path, what: str) -> int:
    if isinstance(column, (int, np.integer)) and not isinstance(column, bool):
        if not -len(names) <= column < len(names):
            raise ValueError(f"{path}: {what} column index {column} is outside the table's {len(names)} columns")
        return int(column) % len(names)
    if isinstance(column, str) and column in names:
        return names.index(column)
    raise ValueError(f"{path}: {what} column {column!r} not found; columns are {list(names)} "
                     "(0-based integers also work)")


def _public_range(name: str, bounds: Mapping, key: int, names: tuple[str, ...]) -> tuple[float, float]:
    for k in (names[key], key):
        if k in bounds:
            lo, hi = (float(v) for v in bounds[k])
            if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
                raise ValueError(f"bounds[{k!r}] must be finite (lo, hi) with lo < hi, got {bounds[k]!r}")
            return lo, hi
    raise ValueError(f"bounds: no public range for column {name!r}; every feature and the target need one "
                     "(from a data dictionary: bounds are never read from the data)")


def _check_inside(values: np.ndarray, lo: float, hi: float, outside: str, where: list[tuple[Path, int]], column: str
                  ) -> tuple[np.ndarray, int]:
    bad = (values < lo) | (values > hi)
    if not bad.any():
        return values, 0
    if outside == "raise":
        path, line = where[int(np.argmax(bad))]
        raise ValueError(f"{path}, line {line}, column {column!r}: value outside the "
                         f"declared public range [{lo:g}, {hi:g}] ({int(bad.sum())} such rows); fix the bounds, "
                         "or pass outside='clip'")
    return np.clip(values, lo, hi), int(bad.sum())


def load_table(path: str | Path | Sequence[str | Path], *, target: str | int, header: bool,
               bounds: Mapping[str | int, tuple[float, float]], sep: str = ",",
               features: Sequence[str | int] | None = None, target_transform: str | None = None,
               outside: str = "raise", encoding: str = "utf-8") -> Table:
    """Read ``path`` (or several files with the same layout) and map it into public bounds (module docstring).

    Parameters
    ----------
    target
        the target column: a header name or a 0-based index.
    header
        whether the first line holds column names (explicit: a wrong answer raises).
    bounds
        public (lo, hi) per used column, keyed by name or 0-based index; required for the target
        (on the transformed scale) and every feature.
    sep
        a single character or ``"whitespace"``.
    features
        the feature columns (names or indices); default every column but the target.
    target_transform
        ``None`` or ``"log"`` (a per-record map, applied before the target's bounds; the target
        must then be positive).
    outside
        ``"raise"`` or ``"clip"`` for values outside their declared range.
    """
    if outside not in ("raise", "clip"):
        raise ValueError(f"outside must be 'raise' or 'clip', got {outside!r}")
    if target_transform not in (None, "log"):
        raise ValueError(f"target_transform must be None or 'log', got {target_transform!r}")
    if not isinstance(bounds, Mapping):
        raise TypeError(f"bounds must be a mapping column -> (lo, hi), got {type(bounds).__name__}")
    paths = [Path(path)] if isinstance(path, (str, Path)) else [Path(p) for p in path]
    if not paths:
        raise ValueError("path: no file given")
    names: tuple[str, ...] | None = None
    parts: list[np.ndarray] = []
    where: list[tuple[Path, int]] = []
    for p in paths:
        these, values, numbers = _read(p, header, sep, encoding)
        if names is not None and (these != names if header else len(these) != len(names)):
            raise ValueError(f"{p}: its columns {list(these)} differ from {paths[0]}'s {list(names)}")
        names = these
        parts.append(values)
        where.extend((p, int(n)) for n in numbers)
    assert names is not None  # paths is not empty: the loop ran
    data = np.vstack(parts)
    t = _resolve(target, names, paths[0], "target")
    cols = [c for c in range(len(names)) if c != t] if features is None else \
        [_resolve(c, names, paths[0], "feature") for c in features]
    if t in cols:
        raise ValueError(f"features: the target column {names[t]!r} cannot also be a feature")
    if not cols:
        raise ValueError("features: no feature columns")
    y = data[:, t].copy()
    if target_transform == "log":
        if (y <= 0).any():
            p, line = where[int(np.argmax(y <= 0))]
            raise ValueError(f"{p}, line {line}, column {names[t]!r}: target_transform='log' needs a positive target")
        y = np.log(y)
    clipped = 0
    ylo, yhi = _public_range(names[t], bounds, t, names)
    y, k = _check_inside(y, ylo, yhi, outside, where, names[t])
    clipped += k
    Z = np.empty((len(data), len(cols) + 1))
    for j, c in enumerate(cols):
        lo, hi = _public_range(names[c], bounds, c, names)
        x, k = _check_inside(data[:, c], lo, hi, outside, where, names[c])
        clipped += k
        Z[:, j] = (2 * x - (lo + hi)) / (hi - lo)
    Z[:, -1] = 1.0
    Z /= math.sqrt(len(cols) + 1)
    return Table(Z, (2 * y - (ylo + yhi)) / (yhi - ylo), tuple(names[c] for c in cols) + ("(intercept)",),
                 names[t], (ylo, yhi), clipped)
