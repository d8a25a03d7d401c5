"""What leaderboards and result pages say besides scores: results an organizer excluded (listed apart,
with the reason), and each submission's title, description, links and supplementary PDF."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from pathlib import Path

import pytest

from runner.cli import main
from runner.ranking.leaderboard import leaderboard
from runner.site import pages
from runner.site.build import SiteConfig, build_site
from runner.tree.result_model import load_result
from runner.tree.store import Store
from runner.tree.submission_model import SubmissionDetails
from tests.helpers import CHALLENGE, PHASE, add_result, edit_yaml, phase_file

pytestmark = pytest.mark.example_alone  # repo: the other demo challenges are not these tests' business

PDF = b"%PDF-1.4\n1 0 obj << >> endobj\ntrailer << >>\n%%EOF\n"


def stage_of(repo: Path) -> Path:
    config = SiteConfig.read(repo)
    pages.generate(Store(repo), config.stage, config.templates, config.assets)
    return config.stage


def write_exclusions(repo: Path, text: str) -> Path:
    path = repo / "challenges" / CHALLENGE / "exclusions" / f"{PHASE}.yml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def submission_path(repo: Path, participant: str, sub_id: str) -> Path:
    return repo / "challenges" / CHALLENGE / "submissions" / PHASE / participant / f"{sub_id}.yml"


def describe(repo: Path, participant: str, sub_id: str, **fields) -> None:
    """Add fields (title, links, ...) to a submission file already written."""
    path = submission_path(repo, participant, sub_id)
    edit_yaml(path, **fields)


def problems(capsys) -> list[str]:
    return [line for line in capsys.readouterr().out.splitlines() if not line.startswith("warning:")]


@pytest.fixture
def scored(repo) -> Path:
    add_result(repo, "alice", "v1", 0.8)
    add_result(repo, "bob", "v1", 0.9)
    add_result(repo, "carol", "v1", 0.7)
    return repo


# --- exclusions ---------------------------------------------------------------------------------------


def test_an_excluded_result_ranks_nowhere_and_is_listed_with_its_reason(scored):
    write_exclusions(scored, "- result: bob/v1\n  reason: Trained on the test set (rule 4)\n")
    stage = stage_of(scored)
    rows = json.loads((stage / CHALLENGE / "leaderboard" / PHASE / "leaderboard.json").read_text())
    assert [(r["rank"], r["participant"]) for r in rows] == [(1, "alice"), (2, "carol")]
    page = (stage / CHALLENGE / "leaderboard" / f"{PHASE}.md").read_text()
    ranked, excluded = page.split("## Excluded results")
    assert "| bob |" not in ranked
    assert "| bob | [v1](../results/final-test/view.md?id=bob/v1) | Trained on the test set (rule 4) |" in excluded
    result = json.loads((stage / CHALLENGE / "results" / PHASE / "bob" / "v1.json").read_text())
    assert result["excluded"] == "Trained on the test set (rule 4)"
    assert result["metrics"]["aggregates"]["dice"]["mean"] == 0.9  # its scores stay public, beside the reason


def test_the_leaderboard_command_leaves_an_excluded_result_out_too(scored, capsys):
    write_exclusions(scored, "- result: bob/v1\n  reason: Trained on the test set (rule 4)\n")
    assert main(["--root", str(scored), "leaderboard", CHALLENGE, PHASE, "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["rank"], r["participant"]) for r in rows] == [(1, "alice"), (2, "carol")]


def test_exclusions_are_pure_data_for_the_ranking(repo):
    add_result(repo, "alice", "v1", 0.8)
    add_result(repo, "bob", "v1", 0.9)
    store = Store(repo)
    phase = store.phase(CHALLENGE, PHASE)
    board = leaderboard(phase, store.results(CHALLENGE, PHASE), excluded={"bob/v1": "duplicate account"})
    assert [(r.participant, r.rank) for r in board.rows] == [("alice", 1)]
    assert [(x.result.participant, x.reason) for x in board.excluded] == [("bob", "duplicate account")]


def test_check_validates_exclusions_at_their_lines(scored, capsys):
    path = write_exclusions(scored, "- result: bob/v1\n  reason: copied\n- result: bob/v1\n  reason: again\n"
                                    "- result: zed/v9\n  reason: nobody submitted this\n")
    assert main(["--root", str(scored), "check"]) == 1
    assert problems(capsys) == [f"{path}:3: [1].result: bob/v1 is listed twice"]
    write_exclusions(scored, "- result: zed/v9\n  reason: nobody submitted this\n")
    assert main(["--root", str(scored), "check"]) == 1
    assert problems(capsys) == [f"{path}:1: [0].result: no submission zed/v9 in phase 'final-test'"]
    write_exclusions(scored, "- result: bob/v1\n  reason: x\n- result: bob\n  reason: no id\n")
    assert main(["--root", str(scored), "check"]) == 1
    assert problems(capsys) == [f"{path}:2: [0].reason: must be at least 3 characters",
                                f"{path}:3: [1].result: 'bob' is not participant/id, e.g. alice/v1"]
    other = path.with_name("nope.yml")
    other.write_text("- result: alice/v1\n  reason: wrong phase\n")
    path.unlink()
    assert main(["--root", str(scored), "check", str(other)]) == 1
    assert problems(capsys) == [f"{other}: no phase 'nope' in this challenge",
                                f"{other}:1: [0].result: no submission alice/v1 in phase 'nope'"]


# --- submission details -------------------------------------------------------------------------------


def test_titles_and_links_show_on_the_leaderboard_and_in_the_result(scored):
    describe(scored, "alice", "v1", title="U-Net | 5 folds", description="Five folds, averaged.",
             publication_url="https://arxiv.org/abs/2401.00001", code_url="https://github.com/alice/unet")
    stage = stage_of(scored)
    page = (stage / CHALLENGE / "leaderboard" / f"{PHASE}.md").read_text()
    row = next(line for line in page.splitlines() if line.startswith("| 2 | alice |"))
    assert ("[v1](../results/final-test/view.md?id=alice/v1) — U-Net &#124; 5 folds · "  # text, never a cell's end
            "[paper](https://arxiv.org/abs/2401.00001) · [code](https://github.com/alice/unet) |") in row
    result = json.loads((stage / CHALLENGE / "results" / PHASE / "alice" / "v1.json").read_text())
    assert result["details"]["title"] == "U-Net | 5 folds"
    assert result["details"]["description"] == "Five folds, averaged."
    bob = json.loads((stage / CHALLENGE / "results" / PHASE / "bob" / "v1.json").read_text())
    assert bob["details"] is None  # nothing to say


def test_a_result_carrying_its_details_needs_no_submission_file(scored):
    path = scored / "challenges" / CHALLENGE / "results" / PHASE / "carol" / "v1.json"
    result = replace(load_result(path), details=SubmissionDetails(title="From the result"))
    path.write_text(result.to_json())
    submission_path(scored, "carol", "v1").unlink()  # not read at all
    page = (stage_of(scored) / CHALLENGE / "leaderboard" / f"{PHASE}.md").read_text()
    assert "— From the result" in page


def add_pdf(repo: Path, participant: str, sub_id: str, data: bytes = PDF, *, pinned: bytes | None = None) -> Path:
    folder = submission_path(repo, participant, sub_id).parent
    (folder / "method.pdf").write_bytes(data)
    describe(repo, participant, sub_id, supplementary={"file": "method.pdf",
                                                       "sha256": hashlib.sha256(pinned or data).hexdigest()})
    return folder / "method.pdf"


def test_a_supplementary_pdf_is_published_and_linked_under_the_phases_label(scored):
    edit_yaml(phase_file(scored), supplementary_file_choice="optional", supplementary_file_label="Method paper")
    add_pdf(scored, "alice", "v1")
    stage = stage_of(scored)
    assert (stage / CHALLENGE / "results" / PHASE / "alice" / "v1.supplementary.pdf").read_bytes() == PDF
    page = (stage / CHALLENGE / "leaderboard" / f"{PHASE}.md").read_text()
    assert "[Method paper](../results/final-test/alice/v1.supplementary.pdf)" in page
    result = json.loads((stage / CHALLENGE / "results" / PHASE / "alice" / "v1.json").read_text())
    assert result["supplementary_file"] == "v1.supplementary.pdf"
    site = build_site(SiteConfig.read(scored), strict=True)  # every link resolves
    assert (site / CHALLENGE / "results" / PHASE / "alice" / "v1.supplementary.pdf").is_file()


def test_a_pdf_that_is_not_as_pinned_is_not_published(scored):
    edit_yaml(phase_file(scored), supplementary_file_choice="optional")
    add_pdf(scored, "alice", "v1", pinned=b"another file")
    stage = stage_of(scored)
    assert not (stage / CHALLENGE / "results" / PHASE / "alice" / "v1.supplementary.pdf").exists()
    assert "supplementary.pdf" not in (stage / CHALLENGE / "leaderboard" / f"{PHASE}.md").read_text()


@pytest.mark.parametrize("choice, pdf, problem", [
    ("off", True, "supplementary: phase 'final-test' takes no supplementary file (its supplementary_file_choice "
                  "is off)"),
    ("required", False, "supplementary: phase 'final-test' requires a PDF describing the method"),
])
def test_the_phase_says_whether_a_pdf_may_or_must_come(scored, capsys, choice, pdf, problem):
    edit_yaml(phase_file(scored), supplementary_file_choice=choice)
    if pdf:
        add_pdf(scored, "alice", "v1")
    assert main(["--root", str(scored), "check"]) == 1
    lines = problems(capsys)
    expected = ["alice"] if pdf else ["alice", "bob", "carol"]  # required: every submission lacks one
    assert [line.split("/final-test/")[1].split("/")[0] for line in lines] == expected, lines
    assert all(problem in line for line in lines)


@pytest.mark.parametrize("data, pinned, problem", [
    (PDF, b"other", "supplementary.sha256: method.pdf has sha256 "),
    (b"<html>", None, "supplementary.file: method.pdf is not a PDF file"),
])
def test_check_verifies_the_pdf_it_pins(scored, capsys, data, pinned, problem):
    edit_yaml(phase_file(scored), supplementary_file_choice="optional")
    add_pdf(scored, "alice", "v1", data, pinned=pinned)
    assert main(["--root", str(scored), "check"]) == 1
    lines = problems(capsys)
    assert len(lines) == 1 and problem in lines[0], lines
