"""metrics.json: grand-challenge's shape, valid JSON with null for NaN and inf, written atomically."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from runner.evalkit import aggregate, write_metrics


def strict_load(path):
    """json.loads that refuses NaN and Infinity, as a strict consumer would."""
    return json.loads(path.read_text(), parse_constant=lambda name: pytest.fail(f"{name} in metrics.json"))


def test_shape_and_statistics(tmp_path):
    cases = {
        "case1": {"dsc": 0.5, "hd": 4.0, "file": "case1.nii.gz"},
        "case2": {"dsc": np.float32(1.0), "hd": np.float64(2.0), "file": "case2.nii.gz"},
        "case3": {"dsc": 0.75, "hd": 3, "file": "case3.nii.gz"},
    }
    write_metrics(cases, tmp_path / "metrics.json", extra_aggregates={"auroc": np.float64(0.8)})
    document = strict_load(tmp_path / "metrics.json")
    assert document["case"]["case2"] == {"dsc": 1.0, "hd": 2.0, "file": "case2.nii.gz"}
    assert document["aggregates"]["dsc"] == pytest.approx(
        {"mean": 0.75, "std": math.sqrt(1 / 24), "min": 0.5, "max": 1.0, "median": 0.75}
    )
    assert document["aggregates"]["hd"]["median"] == 3.0
    assert "file" not in document["aggregates"]
    assert document["aggregates"]["auroc"] == 0.8
    assert [p.name for p in tmp_path.iterdir()] == ["metrics.json"]  # no temporary file left behind


def test_mean_and_median_are_exact_in_any_order_of_cases():
    # results equal on paper aggregate to the same float, whatever the order of their cases (issue
    # 27): a leaderboard ranking on aggregates.dsc.mean must not split them by rounding
    values = [0.46, 0.835, 0.758, 0.407, 0.497, 0.42, 0.529, 0.23, 0.786, 0.077]
    shuffled = [values[i] for i in (2, 6, 7, 8, 1, 3, 4, 9, 5, 0)]  # np.mean: 0.49990000000000007, 0.49989999999999996
    first, second = (aggregate({f"c{i}": {"dsc": v} for i, v in enumerate(vs)})["dsc"] for vs in (values, shuffled))
    assert first["mean"] == second["mean"] == 0.4999
    assert aggregate({"a": {"dsc": 0.1}, "b": {"dsc": 0.2}})["dsc"]["mean"] == 0.15  # 0.15000000000000002 in binary
    assert aggregate({"a": {"dsc": 0.1}, "b": {"dsc": 0.2}})["dsc"]["median"] == 0.15


def test_nan_and_inf_become_null(tmp_path):
    cases = {"a": {"dsc": math.nan, "hd": math.inf}, "b": {"dsc": 0.5, "hd": 2.0}}
    write_metrics(cases, tmp_path / "metrics.json", extra_aggregates={"cpm": {"value": math.nan}})
    document = strict_load(tmp_path / "metrics.json")
    assert document["case"]["a"] == {"dsc": None, "hd": None}
    assert document["aggregates"]["dsc"] == dict.fromkeys(("mean", "std", "min", "max", "median"))
    assert document["aggregates"]["hd"] == {"mean": None, "std": None, "min": 2.0, "max": None, "median": None}
    assert document["aggregates"]["cpm"] == {"value": None}


def test_missing_metric_counts_as_nan(tmp_path):
    document = write_metrics({"a": {"dsc": 1.0}, "b": {}}, tmp_path / "m.json")
    assert document["aggregates"]["dsc"]["mean"] is None


def test_extra_aggregates_may_not_shadow_a_metric(tmp_path):
    with pytest.raises(ValueError, match="dsc"):
        write_metrics({"a": {"dsc": 1.0}}, tmp_path / "m.json", extra_aggregates={"dsc": 0.0})
    assert not (tmp_path / "m.json").exists()
