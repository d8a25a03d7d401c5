"""The tree builder of tests/helpers.py: what it builds by default is a valid challenge, so a test that
builds one and breaks it tests what it broke."""

from __future__ import annotations

import datetime as dt

import pytest

from runner.tree.check import check
from runner.tree.store import Store
from tests.helpers import CHALLENGE, PHASE, REPO, Tree, build_tree


def test_the_default_tree_passes_the_check_without_warnings(tree):
    assert sorted(p.relative_to(tree).as_posix() for p in tree.rglob("*") if p.is_file()) == [
        f"challenges/{CHALLENGE}/challenge.yml", f"challenges/{CHALLENGE}/evaluation/Dockerfile",
        f"challenges/{CHALLENGE}/phases/{PHASE}.yml"]
    report = check(Store(tree), now=dt.datetime(2026, 6, 1, tzinfo=dt.UTC))
    assert (report.problems, report.warnings) == ([], [])
    phase = Store(tree).phase(CHALLENGE, PHASE)
    assert (phase.title, phase.score.path, phase.submission_kind) == ("Final test", "aggregates.dice.mean",
                                                                      "algorithm")


def test_phases_fields_and_results_pass_the_check(tmp_path):
    root = build_tree(tmp_path, ("qualifying", "final"), scores={"alice": 0.8, "bob": None},
                      submissions_limit_per_user_per_period=3, submission_limit_period=1)
    Tree(root).phase("stage1", submission_kind="predictions", score_jsonpath="auc")
    Tree(root).challenge("other", registration="required")
    Tree(root).phase("warm-up", challenge="other", creator_must_be_verified=True)
    store = Store(root)
    report = check(store, now=dt.datetime(2026, 6, 1, tzinfo=dt.UTC))
    assert (report.problems, report.warnings) == ([], [])
    assert list(store.phases(CHALLENGE)) == ["final", "qualifying", "stage1"]
    assert store.phase(CHALLENGE, "final").submissions_limit_per_user_per_period == 3
    assert store.phase(CHALLENGE, "stage1").submission_kind == "predictions"
    results = root / "challenges" / CHALLENGE / "results" / "qualifying"
    assert sorted(p.parent.name for p in results.glob("*/*.json")) == ["alice", "bob"]


def test_a_field_set_to_none_is_left_out_and_a_broken_tree_fails_the_check(tmp_path):
    root = build_tree(tmp_path, score_jsonpath=None)  # a required field: the check must say so
    report = check(Store(root))
    assert [str(p) for p in report.problems] and all("score_jsonpath" in str(p) for p in report.problems)
    Tree(root).challenge(evaluation=False)
    (root / "challenges" / CHALLENGE / "evaluation" / "Dockerfile").unlink()
    Tree(root).phase()
    assert [p.message for p in check(Store(root)).problems] == [
        f"is missing, and phase {PHASE} sets no evaluation_image: add the evaluation container's Dockerfile, or set "
        "evaluation_image"]


def test_the_site_comes_only_when_asked(tmp_path):
    assert not (build_tree(tmp_path / "bare") / "mkdocs.yml").exists()
    root = build_tree(tmp_path / "site", site=True)
    assert (root / "mkdocs.yml").read_text() == (REPO / "mkdocs.yml").read_text()
    assert (root / "challenges" / "index.md").is_file() and (root / "site").is_dir()
    assert [p.name for p in (root / "challenges").iterdir() if p.is_dir()] == [CHALLENGE]


def test_results_go_to_the_challenge_add_result_writes(tmp_path):
    with pytest.raises(ValueError):
        build_tree(tmp_path, challenge="other", scores={"alice": 0.5})
