"""The site and the pull-request comment show the same of a blind phase's result: both ask the one
visibility rule (runner/tree/policy.py), with and without a closing time, before and after it."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from runner.pullrequests.review import result_comment
from runner.ranking.tables import fmt
from runner.site import pages
from runner.site.build import SiteConfig
from runner.tree.store import Store
from tests.helpers import CHALLENGE, PHASE, UTC, add_result, edit_yaml, phase_file

BEFORE = dt.datetime(2027, 6, 1, tzinfo=UTC)
AFTER = dt.datetime(2028, 1, 1, tzinfo=UTC)
CLOSES = dt.datetime(2027, 12, 31, 23, 59, 59, tzinfo=UTC)
SCORE = "0.81234"  # alice's Dice mean: a value no other file holds


def what_each_shows(repo, now: dt.datetime) -> tuple[bool, bool]:
    """(the comment shows the score, the site shows the score)."""
    store = Store(repo)
    phase = store.phase(CHALLENGE, PHASE)
    result = store.results(CHALLENGE, PHASE)[0]
    comment = result_comment(result, phase, store.visibility(phase, result, now=now))
    shown_in_comment = fmt(float(SCORE), phase.score_decimal_places) in comment
    config = SiteConfig.read(repo)
    pages.generate(store, config.stage, config.templates, config.assets, now=now)
    page = (config.stage / CHALLENGE / "leaderboard" / f"{PHASE}.md").read_text()
    published = json.loads((config.stage / CHALLENGE / "results" / PHASE / "alice" / "v1.json").read_text())
    site = SCORE in page or published["metrics"] is not None
    return shown_in_comment, site


@pytest.mark.parametrize("closes, now, shown", [
    (CLOSES, BEFORE, False),
    (CLOSES, AFTER, True),
    (None, BEFORE, False),
    (None, AFTER, False),
])
def test_comment_and_site_agree_on_a_blind_phase(repo, closes, now, shown):
    edit_yaml(phase_file(repo), blind=True, submissions_close_at=closes)
    add_result(repo, "alice", "v1", float(SCORE))
    assert what_each_shows(repo, now) == (shown, shown)
