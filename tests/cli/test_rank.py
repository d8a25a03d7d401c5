"""`challenge rank` end to end: a CSV file in, a ranking out, one-line errors for bad input.

Expected ranks are from ../shared/reference/README.md, "Ranking (challengeR)".
"""

from __future__ import annotations

import json

import pytest

from runner.cli import main

HEADER = "task,case,algorithm,value\n"
# challengeR test-testThenRank.R: A1 = 0.2, A2 = 1.0 on 4 cases
FOUR_CASES = HEADER + "".join(f"T1,C{i},{a},{v}\n" for a, v in (("A1", 0.2), ("A2", 1.0)) for i in range(1, 5))


def write(tmp_path, text: str, name: str = "results.csv"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_csv_aggregate_then_rank(tmp_path, capsys):
    # challengeR test-aggregateThenRank.R: A1 = (0.6, 0.4), A2 = (0.8, 1.0), smaller better ->
    # means 0.5, 0.9; ranks 1, 2
    path = write(tmp_path, HEADER + "T1,C1,A1,0.6\nT1,C2,A1,0.4\nT1,C1,A2,0.8\nT1,C2,A2,1.0\n")
    assert main(["rank", str(path), "--smaller-better", "--format", "csv"]) == 0
    assert capsys.readouterr().out == "task,algorithm,value,rank\nT1,A1,0.5,1\nT1,A2,0.9,2\n"


def test_csv_missing_policies(tmp_path, capsys):
    # challengeR test-aggregateThenRank.R: larger better, A1 missing: na.treat = 0 -> A1 0.0 rank 2;
    # dropped -> A1 absent
    path = write(tmp_path, HEADER + "T1,C1,A1,NA\nT1,C1,A2,0.8\n")
    assert main(["rank", str(path), "--missing", "0", "--format", "csv"]) == 0
    assert capsys.readouterr().out == "task,algorithm,value,rank\nT1,A2,0.8,1\nT1,A1,0.0,2\n"
    assert main(["rank", str(path), "--format", "csv"]) == 0
    assert capsys.readouterr().out == "task,algorithm,value,rank\nT1,A2,0.8,1\n"


def test_json_test_then_rank(tmp_path, capsys):
    # challengeR test-testThenRank.R: shares 1, 0; ranks 1, 2; with bonferroni over the two
    # ordered pairs p = 0.072 is not significant: both rank 1
    path = write(tmp_path, FOUR_CASES)
    assert main(["rank", str(path), "--method", "test-then-rank", "--smaller-better", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == [
        {"task": "T1", "algorithm": "A1", "value": 1.0, "rank": 1},
        {"task": "T1", "algorithm": "A2", "value": 0.0, "rank": 2}]
    assert main(["rank", str(path), "--method", "test-then-rank", "--smaller-better", "--p-adjust", "bonferroni",
                 "--format", "json"]) == 0
    assert [r["rank"] for r in json.loads(capsys.readouterr().out)] == [1, 1]


def test_rank_then_aggregate_average_ties(tmp_path, capsys):
    # reference table: larger better, case values (0.9, NA, 0.9) -> case ranks 1.5, 2.5, 1.5 (average)
    path = write(tmp_path, HEADER + "T1,C1,A,0.9\nT1,C1,B,\nT1,C1,C,0.9\n")
    assert main(["rank", str(path), "--method", "rank-then-aggregate", "--ties", "average", "--format", "csv"]) == 0
    assert capsys.readouterr().out == "task,algorithm,value,rank\nT1,A,1.5,1.5\nT1,C,1.5,1.5\nT1,B,2.5,3.0\n"


def test_bootstrap_columns(tmp_path, capsys):
    path = write(tmp_path, FOUR_CASES)
    args = ["rank", str(path), "--smaller-better", "--bootstrap", "50", "--seed", "7", "--format", "json"]
    assert main(args) == 0
    records = json.loads(capsys.readouterr().out)
    assert records == [
        {"task": "T1", "algorithm": "A1", "value": 0.2, "rank": 1, "median_rank": 1.0, "ci_low": 1.0, "ci_high": 1.0},
        {"task": "T1", "algorithm": "A2", "value": 1.0, "rank": 2, "median_rank": 2.0, "ci_low": 2.0, "ci_high": 2.0}]


def test_table(tmp_path, capsys):
    path = write(tmp_path, FOUR_CASES + "T2,C1,A1,0.3\nT2,C1,A2,0.1\n")
    assert main(["rank", str(path), "--bootstrap", "20"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "results.csv: aggregate-then-rank" in lines[0]
    assert any(line.split("│")[1:5] == [" T1   ", "    1 ", " A2        ", "    1 "] for line in lines)
    assert any("Median rank" in line and "95% interval" in line for line in lines)
    assert any("T2" in line and "A1" in line and "0.3" in line for line in lines)


@pytest.mark.parametrize(("text", "message"), [
    ("task,case,algorithm\nT1,C1,A1\n", "results.csv:1: value: missing column (need task, case, algorithm, value)"),
    ("", "results.csv:1: task: missing column (need task, case, algorithm, value)"),
    (HEADER + "T1,C1,A1,0.5\nT1,C2,A1,abc\n", "results.csv:3: value: not a number: 'abc'"),
    (HEADER + "T1,C1,A1,0.5\n\nT1,C2,,0.5\n", "results.csv:4: algorithm: empty"),
    (HEADER + "T1,C1,A1,0.5\nT1,C1,A1,0.6\n",
     "results.csv:3: case: A1 has a second value for case C1 of task T1 (first on line 2)"),
])
def test_bad_input_is_one_line(tmp_path, capsys, text, message):
    path = write(tmp_path, text)
    assert main(["rank", str(path)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert err[0].startswith("error: ") and err[0].endswith(message)
    assert str(path) in err[0]


def test_bad_option_values(tmp_path, capsys):
    path = write(tmp_path, FOUR_CASES)
    with pytest.raises(SystemExit) as exit_:
        main(["rank", str(path), "--missing", "zero"])
    assert exit_.value.code == 2
    assert "expected 'drop' or a number, not 'zero'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["rank", str(path), "--bootstrap", "0"])
    assert "expected a positive whole number, not '0'" in capsys.readouterr().err
    assert main(["rank", str(path), "--alpha", "2"]) == 1
    assert capsys.readouterr().err.strip() == "error: alpha must lie between 0 and 1, not 2.0"


def test_missing_file(tmp_path, capsys):
    assert main(["rank", str(tmp_path / "nope.csv")]) == 1
    assert "nope.csv" in capsys.readouterr().err
