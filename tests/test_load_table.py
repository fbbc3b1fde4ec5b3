"""load_table: a user's own file mapped into public bounds, with clear errors for malformed files."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

import privselect as ps
from privselect.apps.ptr import SSPRidgeSelectionRegressor, load_table, read_table

FIXTURE = Path(__file__).parent / "fixtures" / "houses.csv"
BOUNDS = {"size_m2": (0, 250), "rooms": (0, 10), "age_years": (0, 100), "price_k": (0, 600)}


def _write(tmp_path, text: str | bytes, name: str = "t.csv") -> Path:
    path = tmp_path / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return path


def test_fixture_loads_into_the_public_ball_with_the_declared_maps():
    table = load_table(FIXTURE, target="price_k", header=True, bounds=BOUNDS)
    names, raw = read_table(FIXTURE, header=True)
    assert table.X.shape == (400, 4) and table.feature_names[-1] == "(intercept)"
    assert np.all(np.linalg.norm(table.X, axis=1) <= 1 + 1e-12)
    # the maps are the declared ones, not data statistics: size 132.5 in [0, 250] -> 0.06 / 2
    assert table.X[0, 0] == pytest.approx((2 * 132.5 - 250) / 250 / 2)
    assert table.X[0, 3] == pytest.approx(1 / 2)
    assert table.y[0] == pytest.approx((2 * 222.9 - 600) / 600)
    assert table.target_to_original(table.y) == pytest.approx(raw[:, names.index("price_k")])


def test_recommended_estimator_fits_end_to_end_on_the_fixture():
    table = load_table(FIXTURE, target="price_k", header=True, bounds=BOUNDS)
    Xtr, ytr, Xte, yte = table.X[:300], table.y[:300], table.X[300:], table.y[300:]
    assert table.bounds == {"x_bound": 1.0, "y_bound": 1.0}  # what the table was mapped into
    est = SSPRidgeSelectionRegressor(epsilon=10.0, delta=1e-6, n_max=400, random_state=0, **table.bounds).fit(Xtr, ytr)
    mse = float(np.mean((est.predict(Xte) - yte) ** 2))
    assert mse < float(np.mean(yte ** 2))  # beats predicting the centre of the range
    assert est.certified_epsilon() == ps.privacy_profile(est.privacy).epsilon(1e-6) <= 10.0


def test_bounds_are_never_read_from_the_data(tmp_path):
    with pytest.raises(ValueError, match="no public range for column 'age_years'"):
        load_table(FIXTURE, target="price_k", header=True, bounds={k: v for k, v in BOUNDS.items() if k != "age_years"})


def test_value_outside_declared_range_raises_without_the_value_or_is_clipped_and_counted(tmp_path):
    path = _write(tmp_path, "a,y\n1,2\n7.123456,3\n")
    with pytest.raises(ValueError, match=r"line 3, column 'a': value outside") as info:
        load_table(path, target="y", header=True, bounds={"a": (0, 5), "y": (0, 4)})
    assert "7.12" not in str(info.value)
    table = load_table(path, target="y", header=True, bounds={"a": (0, 5), "y": (0, 4)}, outside="clip")
    assert table.clipped == 1 and table.X[1, 0] == pytest.approx(1 / math.sqrt(2))


def test_header_row_without_header_true_names_the_line(tmp_path):
    path = _write(tmp_path, "a,b,y\n1,2,3\n")
    with pytest.raises(ValueError, match=r"t.csv, line 1: the first line is not numeric; .*header=True"):
        load_table(path, target=2, header=False, bounds={0: (0, 5), 1: (0, 5), 2: (0, 5)})


def test_header_true_on_a_numeric_first_line_raises(tmp_path):
    path = _write(tmp_path, "1,2,3\n4,5,6\n")
    with pytest.raises(ValueError, match=r"line 1: header=True but the first line is all numbers"):
        load_table(path, target=2, header=True, bounds={})


def test_header_must_be_explicit():
    with pytest.raises(ValueError, match="header must be True or False"):
        read_table(FIXTURE, header=None)


def test_question_mark_is_a_missing_value_with_file_line_and_column(tmp_path):
    path = _write(tmp_path, "a,b,y\n1,2,3\n4,?,6\n")
    with pytest.raises(ValueError, match=r"t.csv, line 3, column 2 \('b'\): missing value '\?'"):
        load_table(path, target="y", header=True, bounds={"a": (0, 9), "b": (0, 9), "y": (0, 9)})


def test_text_field_names_file_line_and_column(tmp_path):
    path = _write(tmp_path, "1,2,3\n4,abc,6\n")
    with pytest.raises(ValueError, match=r"line 2, column 2: 'abc' is not a finite number"):
        read_table(path, header=False)


def test_ragged_row_names_the_line_and_widths(tmp_path):
    path = _write(tmp_path, "a,b,y\n1,2,3\n4,5\n7,8,9\n")
    with pytest.raises(ValueError, match=r"t.csv, line 3: 2 fields, expected 3 \(the header\)"):
        read_table(path, header=True)


def test_wrong_separator_is_diagnosed(tmp_path):
    path = _write(tmp_path, "1;2;3\n4;5;6\n")
    with pytest.raises(ValueError, match=r"line 1, column 1: '1;2;3' is not a finite number; .*separator ';' rather than ','"):
        read_table(path, header=False, sep=",")
    names, values = read_table(path, header=False, sep=";")
    assert names == ("1", "2", "3") and values.tolist() == [[1, 2, 3], [4, 5, 6]]


def test_wrong_separator_with_a_header_is_diagnosed(tmp_path):
    path = _write(tmp_path, "a\tb\ty\n1\t2\t3\n")
    with pytest.raises(ValueError, match=r"line 2, column 1 \('a\\tb\\ty'\): .*separator '\\t' rather than ','"):
        read_table(path, header=True, sep=",")


def test_non_utf8_bytes_name_the_line_and_offset(tmp_path):
    path = _write(tmp_path, b"a,y\n1,2\n3,4 \xe9\n")
    with pytest.raises(ValueError, match=r"t.csv, line 3, byte column 5: byte 0xe9 \(file offset 12\) is not valid utf-8"):
        read_table(path, header=True)


def test_line_endings_blank_lines_and_trailing_separator(tmp_path):
    path = _write(tmp_path, "a,y,\r\n1,2,\r\n\r\n3,4,\r5,6\n")
    names, values = read_table(path, header=True)
    assert names == ("a", "y") and values.tolist() == [[1, 2], [3, 4], [5, 6]]


def test_several_files_and_log_target(tmp_path):
    one, two = _write(tmp_path, "1 2\n", "one.txt"), _write(tmp_path, "3  4\n", "two.txt")
    table = load_table([one, two], target=-1, header=False, sep="whitespace", target_transform="log",
                       bounds={0: (0, 4), 1: (0, 2)})
    assert table.y.tolist() == pytest.approx([2 * math.log(2) / 2 - 1, 2 * math.log(4) / 2 - 1])
    bad = _write(tmp_path, "3 0\n", "bad.txt")
    with pytest.raises(ValueError, match=r"bad.txt, line 1, column '2': target_transform='log' needs a positive"):
        load_table([one, bad], target=1, header=False, sep="whitespace", target_transform="log",
                   bounds={0: (0, 4), 1: (0, 2)})


def test_unknown_target_lists_the_columns():
    with pytest.raises(ValueError, match=r"target column 'cost' not found; columns are"):
        load_table(FIXTURE, target="cost", header=True, bounds=BOUNDS)
