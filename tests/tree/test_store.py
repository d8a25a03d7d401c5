"""The store's queue: pending submissions are those without a result file, read only where none is."""

from __future__ import annotations

import datetime as dt
import os
import subprocess

from runner.tree.store import Store
from tests.helpers import CHALLENGE, IMAGE, PHASE, commit, edit_yaml, phase_file, write_result, write_submission


def test_pending_is_what_has_no_result_and_reads_nothing_else(tree):
    write_submission(tree, "alice", "v1", IMAGE)
    write_result(tree, "alice", "v1")
    waiting = write_submission(tree, "bob", "v1", IMAGE)
    answered = write_submission(tree, "carol", "v1", IMAGE)
    write_result(tree, "carol", "v1")
    answered.write_text("phase: [not even yaml\n")  # answered: never parsed again
    store = Store(tree)
    assert [s.path for s in store.pending()] == [waiting]
    assert [s.key for s in store.pending(participant="bob")] == [s.key for s in store.pending(phase=PHASE)]
    assert store.pending(participant="alice") == [] and store.pending(phase="other") == []


def test_a_participant_folder_that_is_a_link_is_not_followed(tree):
    """A link in place of a folder may point at another participant's: it would count their submissions as
    the link's, and list them twice."""
    victim = write_submission(tree, "victim", "v1", IMAGE)
    os.symlink(victim.parent, victim.parent.parent / "evil")
    store = Store(tree)
    assert store.submission_paths() == [victim]
    assert [s.path for s in store.pending()] == [victim]
    assert store.pending(participant="evil") == []
    assert store.submission_count(victim.parents[3].name) == 1


def test_the_limit_at_landing_reads_the_order_pull_requests_were_merged_in(tree):
    """Landing times come from git (the merge commits), read in one walk for all of a participant's pending
    submissions; the file names' order says nothing."""
    subprocess.run(["git", "init", "-q"], cwd=tree, check=True)
    edit_yaml(phase_file(tree), submissions_limit_per_user_per_period=1, submission_limit_period=1)
    commit(tree, "2026-06-01T12:00:00Z", "the challenge")
    for seconds, sub_id in enumerate(["v2", "v1"]):
        write_submission(tree, "alice", sub_id, IMAGE)
        commit(tree, f"2026-06-01T12:00:0{seconds + 1}Z", f"merge {sub_id}")
    store = Store(tree)
    pending = store.pending(CHALLENGE, phase=PHASE, participant="alice")
    assert store.landed(pending) == {"v2": dt.datetime(2026, 6, 1, 12, 0, 1, tzinfo=dt.UTC),
                                     "v1": dt.datetime(2026, 6, 1, 12, 0, 2, tzinfo=dt.UTC)}
    refusals = {s.id: store.refusal_at_landing(s) for s in pending}
    assert refusals["v2"] is None and refusals["v1"].startswith("Not evaluated: phase ")
