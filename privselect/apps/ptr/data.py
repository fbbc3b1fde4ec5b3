"""Loader for the UCI regression files used by Wang (2018) and KRW Sec. 6.1 (takes a path).

For a table of your own use [`load_table`][privselect.apps.ptr.table.load_table]: explicit header
handling, public-bounds preprocessing, errors naming file, line and column.

The installed library ships no data: pass the folder that holds one sub-folder per data set
(``<root>/airfoil/airfoil_self_noise.dat.txt``, ...), or set the environment variable
``PRIVSELECT_UCI_DIR`` to it. A checkout of the repository has the files under
``experiments/data/uci/`` (with their sources, licences and citations in its README). The table
`UCI_DATASETS` records, per data set, the files, the separator, the target column, the
columns dropped from the features and the target transform, following the README distributed
with the files, with one correction found by reading the file (see ``bike``).

File quirks handled: CR, CRLF and LF line endings (mixed too), a trailing separator (empty last
field), blank lines, and several files concatenated (``elevators``). Anything else that is not a
rectangular table of finite numbers (``?``, text, ragged rows) raises ``ValueError`` naming the
file and the line, unless ``strict=False``, which drops such rows and reports how many.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = ["UCISpec", "UCI_DATASETS", "UCIData", "read_numeric_table", "load_uci", "load_diabetes_raw",
           "UCI_DIR_ENV"]

#: Environment variable naming the UCI folder when ``load_uci`` is called without ``root``.
UCI_DIR_ENV = "PRIVSELECT_UCI_DIR"


@dataclass(frozen=True)
class UCISpec:
    """How to read one data set: files, separator, target column (1-based), dropped columns, transform.

    ``separator`` is ``"whitespace"`` (tabs and spaces) or a single character. ``drop`` lists
    1-based columns removed from the features (the target is always removed). ``transform`` is
    ``None`` or ``"log"`` (natural log of the target, as in Wang's experiments).
    """

    files: tuple[str, ...]
    separator: str
    target: int
    drop: tuple[int, ...] = ()
    transform: str | None = None
    note: str = ""


#: The data sets of ``experiments/data/uci`` (README there). Columns are 1-based, as in the README.
UCI_DATASETS: dict[str, UCISpec] = {
    "airfoil": UCISpec(("airfoil/airfoil_self_noise.dat.txt",), "whitespace", -1),
    "autompg": UCISpec(("autompg/auto-mpg.txt",), "whitespace", 1),
    "bike": UCISpec(("bike/day.csv",), ",", -1, drop=(12, 13), transform="log",
                    note="columns: season, yr, mnth, holiday, weekday, workingday, weathersit, temp, atemp, hum, "
                         "windspeed, casual, registered, cnt. The README's 'first column is a row index' does not "
                         "match this file (its first column takes the values 1-4: season), so it is kept. casual "
                         "and registered sum to cnt (target leakage) and are dropped."),
    "concrete": UCISpec(("concrete/Concrete_Data.txt",), "\t", -1),
    "concreteslump": UCISpec(("concreteslump/slump_test.data.txt",), ",", 9, drop=(1, 10, 11),
                             note="column 1 is a row index; flow and strength (10, 11) are dropped as Wang did"),
    "elevators": UCISpec(("elevators/elevators.data", "elevators/elevators.test"), ",", -1, transform="log"),
    "energy": UCISpec(("energy/energy.txt",), "\t", 9, drop=(10,), note="heating load; cooling load dropped"),
    "housing": UCISpec(("housing/housing.txt",), "whitespace", -1,
                       note="Boston housing; column 12 (B) encodes a racial variable with a documented ethical "
                            "problem: use for reproduction only"),
    "machine": UCISpec(("machine/machine.data.txt",), ",", 8, drop=(9,), transform="log",
                       note="the last two rows of the distributed file have 8 instead of 9 columns: "
                            "load with strict=False to drop them"),
    "parkinsons": UCISpec(("parkinsons/parkinsons.txt",), "whitespace", 6, drop=(5,),
                          note="total UPDRS; motor UPDRS (5) dropped"),
    "servo": UCISpec(("servo/servo.data.txt",), ",", -1, transform="log"),
    "skillcraft": UCISpec(("skillcraft/SkillCraft.txt",), "whitespace", 13, transform="log"),
    "wine": UCISpec(("wine/winequality-red.csv",), "whitespace", 11, note="alcohol, as in Wang's script"),
    "yacht": UCISpec(("yacht/yacht_hydrodynamics.data.txt",), "whitespace", -1, transform="log"),
}


@dataclass(frozen=True, eq=False)
class UCIData:
    """A loaded data set: features X (n x d), target y (transformed), and what was dropped."""

    name: str
    X: np.ndarray
    y: np.ndarray
    spec: UCISpec
    dropped_rows: int = 0


def _split_lines(text: str) -> list[str]:
    return re.split(r"\r\n|\r|\n", text)


def read_numeric_table(path: str | Path, separator: str = "whitespace", *, strict: bool = True
                       ) -> tuple[np.ndarray, int]:
    """A rectangular table of finite floats from a text file: ``(array, number of dropped rows)``.

    Blank lines are skipped; a trailing empty field (a trailing separator) is ignored. With
    ``strict=True`` (the default) a row with a different number of fields than the first row, or
    a field that is not a finite number, raises ``ValueError`` naming the file and line; with
    ``strict=False`` such rows are dropped and counted.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no such data file: {path}")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not a UTF-8 text file ({exc})") from None
    rows: list[list[float]] = []
    width: int | None = None
    dropped = 0
    for number, line in enumerate(_split_lines(text), 1):
        if not line.strip():
            continue
        fields = line.split() if separator == "whitespace" else [f.strip() for f in line.split(separator)]
        while fields and fields[-1] == "":
            fields.pop()
        try:
            values = [float(f) for f in fields]
            if not all(math.isfinite(v) for v in values):
                raise ValueError("non-finite value")
        except ValueError:
            if strict:
                bad = next((f for f in fields if not _is_finite_number(f)), "")
                raise ValueError(f"{path}, line {number}: field {bad!r} is not a finite number "
                                 "(missing values and text columns are not supported)") from None
            dropped += 1
            continue
        if width is None:
            width = len(values)
        if len(values) != width:
            if strict:
                raise ValueError(f"{path}, line {number}: expected {width} columns, got {len(values)}")
            dropped += 1
            continue
        rows.append(values)
    if not rows:
        raise ValueError(f"{path}: no numeric rows")
    return np.asarray(rows, dtype=float), dropped


def _is_finite_number(field: str) -> bool:
    try:
        return math.isfinite(float(field))
    except ValueError:
        return False


def _column(index: int, width: int, what: str, name: str) -> int:
    """0-based column from a 1-based (or negative, from the end) index."""
    col = index - 1 if index > 0 else width + index
    if not 0 <= col < width:
        raise ValueError(f"{name}: {what} column {index} is outside the table's {width} columns")
    return col


def load_uci(name: str, root: str | Path | None = None, *, strict: bool = True) -> UCIData:
    """Load data set ``name`` of `UCI_DATASETS` from the folder ``root``.

    ``root=None`` reads the folder named by the environment variable ``PRIVSELECT_UCI_DIR``; if
    that is unset too, ``ValueError`` says where the files are (``experiments/data/uci/`` in a
    checkout).

    Returns raw features (no scaling: preprocessing is the caller's, and for DP claims it must
    use public constants) and the target after the documented transform. ``strict=False`` drops
    malformed rows instead of raising (their count is in ``dropped_rows``).
    """
    if name not in UCI_DATASETS:
        raise ValueError(f"name must be one of {sorted(UCI_DATASETS)}, got {name!r}")
    spec = UCI_DATASETS[name]
    if root is None:
        root = os.environ.get(UCI_DIR_ENV)
        if not root:
            raise ValueError(f"root: pass the folder holding the UCI files or set {UCI_DIR_ENV}; a checkout of "
                             "the repository has them under experiments/data/uci/")
    root = Path(root)
    if not root.is_dir():
        raise FileNotFoundError(f"no such data folder: {root}")
    tables: list[np.ndarray] = []
    dropped = 0
    for file in spec.files:
        table, n_dropped = read_numeric_table(root / file, spec.separator, strict=strict)
        if tables and table.shape[1] != tables[0].shape[1]:
            raise ValueError(f"{name}: {file} has {table.shape[1]} columns, {spec.files[0]} has {tables[0].shape[1]}")
        tables.append(table)
        dropped += n_dropped
    data = np.vstack(tables)
    width = data.shape[1]
    target = _column(spec.target, width, "target", name)
    drop = {_column(c, width, "dropped", name) for c in spec.drop} | {target}
    keep = [c for c in range(width) if c not in drop]
    y = data[:, target].copy()
    if spec.transform == "log":
        if (y <= 0).any():
            raise ValueError(f"{name}: the log transform needs a positive target; found {int((y <= 0).sum())} "
                             "non-positive values")
        y = np.log(y)
    return UCIData(name, data[:, keep], y, spec, dropped)


def load_diabetes_raw() -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn's diabetes data, unscaled (``scaled=False``: sklearn's default scaling uses all records)."""
    from sklearn.datasets import load_diabetes

    X, y = load_diabetes(return_X_y=True, scaled=False)
    return np.asarray(X, dtype=float), np.asarray(y, dtype=float)
