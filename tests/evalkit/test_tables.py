"""CSV reading: the participant's file problems, each as one line naming file, line and column."""

from __future__ import annotations

import pytest

from runner.evalkit import EvaluationError, check_keys, index_rows, parse_float, read_csv


def error_of(function, *args, **kwargs):
    with pytest.raises(EvaluationError) as error:
        function(*args, **kwargs)
    return str(error.value)


def test_rows_with_bom_spaces_and_blank_lines(tmp_path):
    path = tmp_path / "predictions.csv"
    path.write_bytes("\ufeffcase, probability\ncase1, 0.9\n\ncase2,0.1\n".encode())
    assert read_csv(path, required_columns=["case", "probability"]) == [
        {"case": "case1", "probability": "0.9"},
        {"case": "case2", "probability": "0.1"},
    ]


def test_file_problems(tmp_path):
    path = tmp_path / "predictions.csv"
    assert error_of(read_csv, path) == "Expected a file predictions.csv; it is missing"
    path.write_bytes(b"case,prob\xff\n")
    assert error_of(read_csv, path) == "predictions.csv is not UTF-8 text"
    path.write_text("")
    assert error_of(read_csv, path, required_columns=["case"]) == (
        "predictions.csv is empty; expected a header line with case"
    )
    path.write_text("case,prob\ncase1,0.5\n")
    assert error_of(read_csv, path, required_columns=["case", "probability"]) == (
        "predictions.csv has no column probability; found columns case, prob"
    )
    path.write_text("case,probability\ncase1,0.5\ncase2,0.5,extra\n")
    assert error_of(read_csv, path) == "predictions.csv line 3 has 3 fields; expected 2"


def test_values_and_keys():
    assert parse_float("0.25", column="probability", where="case1") == 0.25
    assert error_of(parse_float, "high", column="probability", where="predictions.csv case1") == (
        "predictions.csv case1: probability 'high' is not a number"
    )
    assert error_of(parse_float, "nan", column="probability", where="case1") == (
        "case1: probability is nan; expected a finite number"
    )
    rows = [{"case": "a"}, {"case": "b"}, {"case": "a"}]
    assert error_of(index_rows, rows, key="case", source="predictions.csv") == (
        "predictions.csv lists case a more than once; give one row per case"
    )
    assert error_of(check_keys, ["a", "b", "c"], ["b"], what="predictions") == (
        "Missing predictions for 2 of 3 cases: a, c"
    )
    assert error_of(check_keys, ["a"], ["a", "z"], what="predictions") == (
        "Unexpected predictions for cases not in the test set: z"
    )
    check_keys(["a"], ["a", "z"], what="predictions", allow_extra=True)
