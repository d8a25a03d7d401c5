"""Score paths: the dict walks that stand in for the JSONPath library on common paths find exactly
what the library finds, names of matches included (they are the cases' names in the rankings)."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from runner.tree.jsonpaths import compiled, leading_names, lookup, lookup_all

NAMES = st.sampled_from(["case-001", "case 2", "b.c", "q'x", '"', "1", "@a", "_x", "dice", "ü", ""])
LEAVES = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.floats(allow_nan=True, allow_infinity=True),
                   st.text(max_size=3))
DOCUMENTS = st.recursive(LEAVES, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                          st.dictionaries(NAMES, inner, max_size=4)), max_leaves=12)
PATHS = ["case.*.dice", "$.case.*.dice", "metrics.case.*.dice", "case.*.dice.mean", "dice.*.case",
         "aggregates.dice.mean"]


def library(document, path):
    """What jsonpath_ng itself finds, as lookup_all reports it."""
    out = []
    for match in compiled(path).find(document or {}):
        value = match.value
        number = float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else math.nan
        out.append((str(match.full_path), number if math.isfinite(number) else math.nan))
    return out


def same(found, expected) -> bool:
    return len(found) == len(expected) and all(
        a == c and (b == d or (math.isnan(b) and math.isnan(d))) for (a, b), (c, d) in zip(found, expected))


@settings(max_examples=400, deadline=None, derandomize=True)
@given(case=st.dictionaries(NAMES, DOCUMENTS, max_size=5), top=DOCUMENTS)
def test_the_per_case_walk_finds_what_the_library_finds(case, top):
    for document in ({"case": case}, {"metrics": {"case": case}}, {"case": top}, top):
        for path in PATHS:
            assert same(lookup_all(document, path), library(document, path)), (document, path)


def test_case_names_are_written_as_the_library_writes_them():
    document = {"case": {"case 1": {"dice": 0.5}, "b.c": {"dice": 1}, "2": {"dice": None}, "x": {"hd": 3}}}
    found = lookup_all(document, "case.*.dice")
    assert [where for where, _ in found] == ["case.'case 1'.dice", "case.'b.c'.dice", "case.'2'.dice"]
    assert found[0][1] == 0.5 and found[1][1] == 1.0 and math.isnan(found[2][1])


def test_a_plain_path_reads_a_finite_number_or_nothing():
    document = {"aggregates": {"dice": {"mean": 0.7, "std": float("nan")}, "flag": True}}
    assert lookup(document, "aggregates.dice.mean") == 0.7
    assert lookup(document, "aggregates.dice.std") is None
    assert lookup(document, "aggregates.flag") is None
    assert lookup(document, "aggregates.missing.mean") is None


def test_leading_names_stop_at_the_first_step_that_is_not_one_name():
    assert leading_names("runner.cases.*.wall_time_s") == ("runner", "cases")
    assert leading_names("$.runner.aggregates.wall_time_s.mean") == ("runner", "aggregates", "wall_time_s", "mean")
    assert leading_names("runner['cases'][*].wall_time_s") == ("runner", "cases")
    assert leading_names("$..wall_time_s") == ()
