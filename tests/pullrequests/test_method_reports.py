"""A method report: a PDF a participant adds to a submission of theirs once it has a succeeded result, by the
phase's own deadline (method_reports_close_at), which may be after submissions close. It is a file of its own
(reports/<phase>/<participant>/<id>.yml and the PDF beside it): the submission and its signed result stay as the
runner evaluated them, so nothing is evaluated again and `challenge verify` still passes."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from runner.cli import main
from runner.pullrequests.github import GitHub
from runner.pullrequests.review import LABELS, review
from runner.pullrequests.rules import Change, Proposal, check
from runner.site import pages
from runner.site.build import SiteConfig
from runner.tree.check import check as check_tree
from runner.tree.located import ModelError
from runner.tree.signing import new_key, signers_line
from runner.tree.store import Store
from runner.tree.verification import signers_path
from tests.github_server import OWNER_REPO
from tests.helpers import CHALLENGE, NOW, PHASE, Tree, add_result, add_signed_result, edit_yaml, phase_file, sub

pytestmark = pytest.mark.usefixtures("tree")  # every test on the built tree (`origin` clones it)

PDF = b"%PDF-1.4\n1 0 obj << >> endobj\ntrailer << >>\n%%EOF\n"
PIN = hashlib.sha256(PDF).hexdigest()
REPORTS = f"challenges/{CHALLENGE}/reports/{PHASE}"


@pytest.fixture
def tree(tree: Path) -> Path:
    """A built challenge with the site's templates; its test phase closed on May 1st and takes reports until
    July 1st (NOW is June 1st); alice's v1 has a succeeded result."""
    root = tree
    Tree(root).site()
    edit_yaml(phase_file(root), supplementary_file_choice="optional", supplementary_file_label="Short paper",
              submissions_close_at="2026-05-01T00:00:00Z", method_reports_close_at="2026-07-01T00:00:00Z")
    add_result(root, "alice", "v1", 0.8)
    return root


def report(participant: str = "alice", sub_id: str = "v1", *, name: str = "paper.pdf", sha256: str = PIN,
           pdf: bytes = PDF) -> dict[str, bytes]:
    """A report pull request's files: the report file and its PDF."""
    return {f"{REPORTS}/{participant}/{sub_id}.yml": f"file: {name}\nsha256: '{sha256}'\n".encode(),
            f"{REPORTS}/{participant}/{name}": pdf}


def judge(tree: Path, files: dict[str, bytes], *, author: str = "alice", modified: tuple[str, ...] = (),
          now=NOW):
    changes = tuple(Change(path, "modified" if path in modified else "added") for path in files)
    return check(Store(tree), Proposal(author, changes, files.get), now=now)


# --- the rules ----------------------------------------------------------------------------------------


def test_a_report_to_an_evaluated_submission_is_accepted_after_submissions_close(tree):
    verdict = judge(tree, report())
    assert (verdict.kind, verdict.problems) == ("report", ())


def test_a_report_after_the_report_deadline_is_refused(tree):
    edit_yaml(phase_file(tree), method_reports_close_at="2026-05-15T00:00:00Z")
    assert judge(tree, report()).problems == (
        "phase 'Final test' took method reports until 2026-05-15 00:00 UTC (17 days ago)",)


def test_a_phase_without_a_report_deadline_takes_none(tree):
    data = phase_file(tree).read_text().replace("method_reports_close_at: '2026-07-01T00:00:00Z'\n", "")
    phase_file(tree).write_text(data)
    [problem] = judge(tree, report()).problems
    assert "takes no method reports after submitting (it sets no method_reports_close_at)" in problem


def test_a_report_for_someone_elses_submission_is_refused(tree):
    [problem] = judge(tree, report(), author="mallory").problems
    assert problem.startswith("the folder 'alice' is neither your GitHub login (mallory) nor a team of yours")


def test_a_report_without_a_result_or_for_a_failed_one_is_refused(tree):
    add_result(tree, "alice", "v2", None, status="failed", error="boom")
    (tree / f"challenges/{CHALLENGE}/results/{PHASE}/alice/v1.json").unlink()
    assert judge(tree, report()).problems == (
        "submission alice/v1 in phase 'Final test' has no result yet: add its method report once it is evaluated",)
    assert judge(tree, report(sub_id="v2")).problems == (
        "submission alice/v2 in phase 'Final test' failed; a method report describes a submission with a succeeded "
        "result",)
    [problem] = judge(tree, report(sub_id="v9")).problems
    assert problem.startswith("there is no submission alice/v9 in phase 'Final test'")


@pytest.mark.parametrize("files, problem", [
    (report(pdf=b"<html>", sha256=hashlib.sha256(b"<html>").hexdigest()), "file: paper.pdf is not a PDF file"),
    (report(sha256="f" * 64), "sha256: paper.pdf has sha256 "),
    (report(pdf=PDF + b"x" * 20 * 1024**2), "file: paper.pdf is 20.0 MiB; at most 20 MiB are allowed"),
    ({f"{REPORTS}/alice/v1.yml": f"file: paper.pdf\nsha256: '{PIN}'\n".encode()}, "file: paper.pdf was not found"),
    (report(name="paper.docx"), "file: must name a PDF (.pdf)"),
])
def test_a_pdf_that_is_not_as_pinned_is_refused(tree, files, problem):
    problems = judge(tree, files).problems
    assert [p for p in problems if problem in p], problems


def test_a_report_that_also_changes_the_submission_is_refused(tree):
    """The submission's image (or anything of it) is what was evaluated: a report changes nothing else."""
    changed = f"phase: {PHASE}\nimage: ghcr.io/alice/other@sha256:{'b' * 64}\n".encode()
    verdict = judge(tree, {**report(), sub(): changed}, modified=(sub(),))
    assert verdict.problems == (f"this pull request touches 2 submission or registration files "
                                f"({REPORTS}/alice/v1.yml, {sub()}); add exactly one per pull request",)
    other = f"challenges/{CHALLENGE}/phases/{PHASE}.yml"
    verdict = judge(tree, {**report(), other: b"title: x\n"}, modified=(other,))
    assert verdict.problems == (f"{other}: this pull request changes it, but a submission pull request adds one file "
                                "and changes nothing else",)


def test_a_merged_report_is_final_never_replaced_nor_removed(tree):
    """Merged without an organizer: were replacements allowed, each would leave up to 20 MiB in the repository."""
    replaced = report(name="paper-2.pdf", sha256=PIN)
    assert f"{REPORTS}/alice/v1.yml: this pull request replaces it; a method report, once merged, is final: ask " \
           "the organizers to change it" in judge(tree, replaced, modified=(f"{REPORTS}/alice/v1.yml",)).problems
    removed = (Change(f"{REPORTS}/alice/v1.yml", "removed"),)
    [problem] = check(Store(tree), Proposal("alice", removed, lambda _: None), now=NOW).problems
    assert "this pull request removes it; a method report, once merged, is final" in problem


def test_a_report_needs_the_registration_a_submission_needs(tree):
    """A participant whose registration is gone (revoked, or never merged) adds no report, as they submit nothing."""
    edit_yaml(tree / "challenges" / CHALLENGE / "challenge.yml", registration="required")
    assert any("requires registration" in p for p in judge(tree, report()).problems)


def test_the_phase_file_needs_a_pdf_choice_and_a_report_deadline_after_closing(tree):
    edit_yaml(phase_file(tree), supplementary_file_choice="off", method_reports_close_at="2026-04-01T00:00:00Z")
    with pytest.raises(ModelError) as caught:
        Store(tree).phase(CHALLENGE, PHASE)
    assert "method_reports_close_at: a method report is a supplementary PDF" in str(caught.value)
    assert "method_reports_close_at: is not after submissions_close_at" in str(caught.value)


# --- the review, end to end -------------------------------------------------------------------------------


def test_the_review_accepts_and_merges_a_report_without_queueing_an_evaluation(github, tree):
    pull = github.open_pull("alice", {path: data.decode("latin-1") for path, data in report().items()})
    hub = GitHub(OWNER_REPO, token="test", api_url=github.url, pause=False)
    outcome = review(hub, Store(tree), number=pull.number, head_sha=pull.head, base="main", now=NOW, merge=True)
    assert outcome.verdict.kind == "report" and outcome.verdict.ok and github.pulls[pull.number].merged
    assert github.pulls[pull.number].labels == [LABELS["report"]]
    body = github.pulls[pull.number].comments[0]["body"]
    assert f"### ✅ Method report `{REPORTS}/alice/v1.yml` accepted\n\nMerged as " in body
    assert "the submission is not evaluated again" in body and "queued for evaluation" not in body


def test_the_review_refuses_a_late_report_and_leaves_it_unmerged(github, tree):
    edit_yaml(phase_file(tree), method_reports_close_at="2026-05-15T00:00:00Z")
    pull = github.open_pull("alice", {path: data.decode("latin-1") for path, data in report().items()})
    hub = GitHub(OWNER_REPO, token="test", api_url=github.url, pause=False)
    outcome = review(hub, Store(tree), number=pull.number, head_sha=pull.head, base="main", now=NOW, merge=True)
    assert not outcome.verdict.ok and not github.pulls[pull.number].merged
    assert github.pulls[pull.number].labels == [LABELS["invalid"]]


# --- once merged: nothing pending, still verified, checked, published ----------------------------------------


def merge(tree: Path, files: dict[str, bytes]) -> None:
    for path, data in files.items():
        (tree / path).parent.mkdir(parents=True, exist_ok=True)
        (tree / path).write_bytes(data)


def test_a_merged_report_queues_nothing_and_its_result_still_verifies(tree, capsys):
    key = new_key()
    signers_path(tree).write_text(signers_line("gpu-1", key) + "\n")
    record = add_signed_result(tree, Store(tree, signer=key), "bob", 0.9)
    merge(tree, report("bob"))
    assert Store(tree).pending() == []
    assert main(["--root", str(tree), "verify", str(record)]) == 0, capsys.readouterr()
    assert check_tree(Store(tree), now=NOW).problems == []


def test_check_names_a_report_whose_pdf_is_not_as_pinned_or_whose_submission_is_missing(tree):
    merge(tree, report(sha256="f" * 64))
    merge(tree, report(sub_id="v9"))
    problems = sorted(str(p) for p in check_tree(Store(tree), now=NOW).problems)
    assert len(problems) == 2, problems
    assert "reports/final-test/alice/v1.yml:2: sha256: paper.pdf has sha256" in problems[0]
    assert "there is no submission alice/v9 in phase 'final-test'" in problems[1]


def test_the_site_publishes_the_report_beside_the_result_and_links_it(tree):
    merge(tree, report())
    config = SiteConfig.read(tree)
    pages.generate(Store(tree), config.stage, config.templates, config.assets, now=NOW)
    results = config.stage / CHALLENGE / "results" / PHASE / "alice"
    assert (results / "v1.supplementary.pdf").read_bytes() == PDF
    assert json.loads((results / "v1.json").read_text())["supplementary_file"] == "v1.supplementary.pdf"
    board = (config.stage / CHALLENGE / "leaderboard" / f"{PHASE}.md").read_text()
    assert "[Short paper](../results/final-test/alice/v1.supplementary.pdf)" in board
    phases = (config.stage / CHALLENGE / "index.md").read_text()
    assert "| Method reports | *Short paper* until 2026-07-01 00:00 UTC, for a submission with a succeeded" in phases


def test_a_phase_that_hides_pdf_links_publishes_no_report(tree):
    edit_yaml(phase_file(tree), show_supplementary_file_link=False)
    merge(tree, report())
    config = SiteConfig.read(tree)
    pages.generate(Store(tree), config.stage, config.templates, config.assets, now=NOW)
    assert not (config.stage / CHALLENGE / "results" / PHASE / "alice" / "v1.supplementary.pdf").exists()
