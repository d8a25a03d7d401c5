"""The store's queue: pending submissions are those without a result file, read only where none is."""

from __future__ import annotations

import os

from runner.tree.store import Store
from tests.helpers import IMAGE, PHASE, write_result, write_submission


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
