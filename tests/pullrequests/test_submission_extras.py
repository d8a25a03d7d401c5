"""What a pull request may bring besides its image, and what organizers learn of it: a supplementary PDF
committed beside the submission (checked like the file itself), and the same image as another
participant's (noted and labelled for the organizers, never refused)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from runner.cli import main
from runner.pullrequests.github import GitHub
from runner.pullrequests.review import LABELS, NOTE_LABEL, review
from runner.tree.store import Store
from tests.github_server import OWNER_REPO
from tests.helpers import CHALLENGE, NOW, PHASE, edit_yaml, phase_file, sub, write_submission

pytestmark = pytest.mark.usefixtures("tree")  # every test on the built tree (`origin` clones it)

IMAGE = "ghcr.io/alice/algo@sha256:" + "a" * 64
SAME = "docker.io/bob/copy@sha256:" + "a" * 64  # another name, the same bytes
PDF = "%PDF-1.4\n1 0 obj << >> endobj\ntrailer << >>\n%%EOF\n"


def judge(github, tree: Path, author: str, files: dict[str, str]):
    pull = github.open_pull(author, files)
    hub = GitHub(OWNER_REPO, token="test", api_url=github.url, pause=False)
    outcome = review(hub, Store(tree), number=pull.number, head_sha=pull.head, base="main", now=NOW, merge=True)
    return outcome, github.pulls[pull.number]


# --- the same image -----------------------------------------------------------------------------------


def test_the_same_image_from_another_participant_is_noted_not_refused(github, tree):
    write_submission(tree, "alice", "v1", IMAGE)  # on the default branch
    outcome, pull = judge(github, tree, "bob", {sub("bob"): f"phase: {PHASE}\nimage: {SAME}\n"})
    assert outcome.verdict.ok and pull.merged
    assert pull.labels == [LABELS["valid"], NOTE_LABEL]
    assert outcome.verdict.notes == (
        f"the same image (sha256:{'a' * 64}) was also submitted by alice ({sub('alice')}): organizers, see whether "
        "this is one team (teams.yml) or shared work",)
    body = pull.comments[0]["body"]
    assert "**For the organizers** (this does not stop the submission)" in body and f"alice ({sub('alice')})" in body


def test_another_participants_archive_is_noted_whatever_its_address(github, tree):
    """An archive encrypted to the runner's key is confidential, yet its URL and sha256 are public: copied,
    it would run under another name. The organizers are told, as for an image."""
    archive = f"image_archive:\n  url: https://{{host}}/algo.tar.age\n  sha256: '{'e' * 64}'\n  encrypted: true\n"
    path = tree / sub("alice")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"phase: {PHASE}\n" + archive.format(host="alice.example"))
    outcome, pull = judge(github, tree, "bob", {sub("bob"): f"phase: {PHASE}\n" + archive.format(host="bob.example")})
    assert outcome.verdict.ok and NOTE_LABEL in pull.labels
    assert outcome.verdict.notes[0].startswith(f"the same image (image archive sha256:{'e' * 64}) was also "
                                               f"submitted by alice ({sub('alice')})")


def test_a_participants_own_images_and_other_images_are_not_noted(github, tree):
    write_submission(tree, "bob", "v1", SAME)  # bob's own earlier submission
    write_submission(tree, "carol", "v1", "ghcr.io/carol/x@sha256:" + "c" * 64)
    outcome, pull = judge(github, tree, "bob", {sub("bob", "v2"): f"phase: {PHASE}\nimage: {SAME}\n"})
    assert outcome.verdict.ok and outcome.verdict.notes == ()
    assert pull.labels == [LABELS["valid"]] and "For the organizers" not in pull.comments[0]["body"]


def test_check_warns_at_each_submission_that_shares_an_image(tree, capsys):
    alice = write_submission(tree, "alice", "v1", IMAGE)
    bob = write_submission(tree, "bob", "v3", SAME)
    write_submission(tree, "alice", "v2", IMAGE)  # her own again: no warning of its own kind
    assert main(["--root", str(tree), "check"]) == 0
    lines = capsys.readouterr().out.splitlines()
    rel = f"challenges/{CHALLENGE}/submissions/{PHASE}"
    assert f"warning: {alice}:2: image: the same image was also submitted by bob ({rel}/bob/v3.yml)" in lines
    assert (f"warning: {bob}:2: image: the same image was also submitted by alice ({rel}/alice/v1.yml), "
            f"alice ({rel}/alice/v2.yml)") in lines
    assert lines[-1].endswith("is valid (3 warnings)")


def test_a_baseline_image_many_submitted_is_named_a_few_times_per_warning(tree, capsys):
    """The organizers' baseline submitted unchanged by 400 participants: each warning names five others and
    counts the rest, and `check` stays linear (it listed all 399 in each of 400 warnings)."""
    for n in range(400):
        write_submission(tree, f"team-{n:03d}", "v1", IMAGE)
    write_submission(tree, "team-000", "v2", IMAGE)
    assert main(["--root", str(tree), "check"]) == 0
    warnings = [line for line in capsys.readouterr().out.splitlines() if "the same image" in line]
    assert len(warnings) == 401
    rel = f"challenges/{CHALLENGE}/submissions/{PHASE}"
    first = next(line for line in warnings if "/team-000/v1.yml:" in line)
    assert first.endswith(f"team-001 ({rel}/team-001/v1.yml), team-002 ({rel}/team-002/v1.yml), team-003 "
                          f"({rel}/team-003/v1.yml), team-004 ({rel}/team-004/v1.yml), team-005 ({rel}/team-005/v1.yml)"
                          " and 394 more")
    last = next(line for line in warnings if "/team-399/" in line)  # the others of team-399: 399 participants' 400
    assert f"team-000 ({rel}/team-000/v1.yml), team-000 ({rel}/team-000/v2.yml), team-001" in last
    assert last.endswith(" and 395 more")


# --- a supplementary PDF ------------------------------------------------------------------------------


def pdf_submission(sha256: str, name: str = "method.pdf") -> str:
    return f"phase: {PHASE}\nimage: {IMAGE}\nsupplementary:\n  file: {name}\n  sha256: {sha256}\n"


def companion(participant: str = "alice", name: str = "method.pdf") -> str:
    return str(Path(sub(participant)).parent / name)


def test_a_pdf_beside_the_submission_is_the_one_other_file_allowed(github, tree):
    edit_yaml(phase_file(tree), supplementary_file_choice="optional")
    files = {sub(): pdf_submission(hashlib.sha256(PDF.encode()).hexdigest()), companion(): PDF}
    outcome, pull = judge(github, tree, "alice", files)
    assert outcome.verdict.problems == () and pull.merged


@pytest.mark.parametrize("choice, files, problem", [
    ("optional", {companion(): PDF}, "supplementary.sha256: method.pdf has sha256 "),
    ("optional", {}, "supplementary.file: method.pdf was not found next to the submission"),
    ("optional", {companion(): "<html>"}, "supplementary.file: method.pdf is not a PDF file"),
    ("off", {companion(): PDF}, "supplementary: phase 'final-test' takes no supplementary file"),
])
def test_a_pdf_that_is_not_as_pinned_is_refused_with_its_field(github, tree, choice, files, problem):
    edit_yaml(phase_file(tree), supplementary_file_choice=choice)
    outcome, pull = judge(github, tree, "alice", {sub(): pdf_submission("f" * 64), **files})
    assert not pull.merged
    assert [p for p in outcome.verdict.problems if problem in p], outcome.verdict.problems


def test_a_required_pdf_must_come(github, tree):
    edit_yaml(phase_file(tree), supplementary_file_choice="required")
    outcome, _ = judge(github, tree, "alice", {sub(): f"phase: {PHASE}\nimage: {IMAGE}\n"})
    assert any("requires a PDF describing the method" in p for p in outcome.verdict.problems)


# --- a link and a comment (grand-challenge's supplementary URL and submission comment) ------------------


@pytest.mark.parametrize("options, lines, problem", [
    ({"supplementary_url_choice": "required", "supplementary_url_label": "Preprint"}, "",
     "supplementary_url: phase 'final-test' requires a link (Preprint): add supplementary_url: https://..."),
    ({}, "supplementary_url: https://arxiv.org/abs/1\n", "supplementary_url: phase 'final-test' takes no link"),
    ({"supplementary_url_choice": "optional"}, "supplementary_url: http://arxiv.org/abs/1\n",
     "supplementary_url: 'http://arxiv.org/abs/1' is not an https:// address"),
    ({}, "comment: fold 2\n", "comment: phase 'final-test' takes no comment (its allow_submission_comments is false)"),
    ({"supplementary_url_choice": "required", "allow_submission_comments": True},
     "supplementary_url: https://arxiv.org/abs/1\ncomment: fold 2\n", None),
])
def test_a_link_and_a_comment_are_judged_by_the_phases_switches(github, tree, options, lines, problem):
    edit_yaml(phase_file(tree), **options)
    outcome, pull = judge(github, tree, "alice", {sub(): f"phase: {PHASE}\nimage: {IMAGE}\n{lines}"})
    assert pull.merged == (problem is None)
    assert [p for p in outcome.verdict.problems if problem in p] if problem else outcome.verdict.ok, (
        outcome.verdict.problems)


def test_a_phase_for_verified_participants_refuses_everyone_while_the_challenge_registers_nobody(github, tree):
    """creator_must_be_verified with registration: open fails closed in the rules (check says why too)."""
    edit_yaml(phase_file(tree), creator_must_be_verified=True)
    outcome, pull = judge(github, tree, "mallory", {sub("mallory"): f"phase: {PHASE}\nimage: {IMAGE}\n"})
    assert not outcome.verdict.ok and not pull.merged
    assert any("only from verified participants" in p and "registration: required" in p
               for p in outcome.verdict.problems)
