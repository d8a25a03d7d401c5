"""The model reads the challenge tree and names file, line and field for every mistake."""

from __future__ import annotations

import html
import textwrap
from pathlib import Path

import pytest

from runner.cli import main
from runner.errors import printable
from runner.site.reference import reference_markdown
from runner.tree.check import check
from runner.tree.located import ModelError
from runner.tree.model import Result, check_image_ref, load_challenge, load_phase, load_result
from runner.tree.store import Store
from tests.helpers import CHALLENGE, PHASE, write_submission

DIGEST = "sha256:" + "ab" * 32


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


def phase_file(repo: Path) -> Path:
    return repo / "challenges" / CHALLENGE / "phases" / f"{PHASE}.yml"


def test_example_tree_is_valid(repo):
    assert check(Store(repo)).problems == []
    phase = load_phase(phase_file(repo), CHALLENGE)
    assert phase.score.path == "aggregates.dice.mean"
    assert phase.score_decimal_places == 3
    assert [c.exclude_from_ranking for c in phase.extra_results_columns] == [True, True]
    assert phase.algorithm.memory == 1024**3


def test_yaml_syntax_error_names_the_line(tmp_path):
    path = write(tmp_path / "c" / "challenge.yml", """\
        name: Broken
        headline: [unclosed
        """)
    with pytest.raises(ModelError) as info:
        load_challenge(path)
    assert info.value.path == path and info.value.line in (2, 3)
    assert "invalid YAML" in str(info.value)


def test_unknown_field_is_located(repo):
    path = phase_file(repo)
    path.write_text(path.read_text() + "score_jsonpth: aggregates.dice.mean\n")
    line = len(path.read_text().splitlines())
    with pytest.raises(ModelError) as info:
        load_phase(path, CHALLENGE)
    assert (info.value.line, info.value.field) == (line, "score_jsonpth")
    assert info.value.message == "unknown field; did you mean 'score_jsonpath'?"


def test_a_grand_challenge_option_that_does_not_carry_over_says_what_stands_for_it(repo):
    path = phase_file(repo)
    path.write_text(path.read_text() + "allow_submission_comments: true\n")
    with pytest.raises(ModelError) as info:
        load_phase(path, CHALLENGE)
    assert info.value.field == "allow_submission_comments"
    assert info.value.message == ("grand-challenge's allow_submission_comments does not carry over: a submission "
                                  "file's description is shown on the leaderboard and its result page")
    assert "allow_submission_comments" in html.unescape(reference_markdown())  # the field reference lists each


def test_wrong_type_in_nested_column_is_located(repo):
    path = phase_file(repo)
    text = path.read_text().replace("exclude_from_ranking: true", "exclude_from_ranking: sometimes", 1)
    path.write_text(text)
    line = next(i for i, ln in enumerate(text.splitlines(), 1) if "sometimes" in ln)
    with pytest.raises(ModelError) as info:
        load_phase(path, CHALLENGE)
    assert info.value.line == line
    assert info.value.field == "extra_results_columns[0].exclude_from_ranking"
    assert str(info.value) == (f"{path}:{line}: extra_results_columns[0].exclude_from_ranking: expected true or "
                               "false, got text ('sometimes')")


def test_bad_jsonpath_and_headline_length(repo):
    path = phase_file(repo)
    path.write_text(path.read_text().replace("score_jsonpath: aggregates.dice.mean", "score_jsonpath: 'aggregates[['"))
    with pytest.raises(ModelError, match="score_jsonpath: 'aggregates\\[\\[' is not a JSONPath"):
        load_phase(path, CHALLENGE)
    challenge = repo / "challenges" / CHALLENGE / "challenge.yml"
    challenge.write_text(challenge.read_text().replace("headline: Segment", "headline: " + "x" * 90 + " Segment"))
    with pytest.raises(ModelError, match=r"headline: is 1.. characters long; at most 80"):
        load_challenge(challenge)


def test_closing_before_opening_is_refused(repo):
    path = phase_file(repo)
    path.write_text(path.read_text().replace("2027-12-31T23:59:59Z", "2025-12-31T00:00:00Z"))
    with pytest.raises(ModelError, match="submissions_close_at: is not after submissions_open_at"):
        load_phase(path, CHALLENGE)


@pytest.mark.parametrize("ref, local, ok", [
    ("ghcr.io/team/algo@" + DIGEST, False, True),
    ("registry.example.org:5000/a/b@" + DIGEST, False, True),
    (DIGEST, True, True),
    (DIGEST, False, False),
    ("ghcr.io/team/algo:latest", True, False),
    ("ghcr.io/team/algo", True, False),
    ("ghcr.io/team/algo@sha256:abc", True, False),
])
def test_image_must_be_pinned(ref, local, ok):
    assert (check_image_ref(ref, allow_local=local) is None) is ok


def test_tag_only_submission_is_refused_with_its_line(repo):
    path = write_submission(repo, "carol", "v1", "ghcr.io/carol/algo:latest")
    with pytest.raises(ModelError) as info:
        Store(repo).submission(path)
    assert (info.value.line, info.value.field) == (2, "image")
    assert "pinned by digest" in info.value.message


def test_submission_phase_must_match_its_folder(repo):
    path = write_submission(repo, "carol", "v1", "ghcr.io/carol/algo@" + DIGEST)
    path.write_text(path.read_text().replace(f"phase: {PHASE}", "phase: validation"))
    with pytest.raises(ModelError, match="says 'validation' but the file is under submissions/final-test/"):
        Store(repo).submission(path)


def test_submission_to_unknown_phase(repo):
    path = write_submission(repo, "carol", "v1", "ghcr.io/carol/algo@" + DIGEST, phase="nope")
    with pytest.raises(ModelError, match="has no phase 'nope'"):
        Store(repo).submission(path)


def test_check_command_reports_every_problem_and_fails(repo, capsys):
    write_submission(repo, "carol", "v1", "ghcr.io/carol/algo:latest")
    bad_phase = phase_file(repo).with_name("validation.yml")
    write(bad_phase, """\
        title: Validation
        submission_kind: algorithms
        score_jsonpath: aggregates.dice.mean
        """)
    code = main(["--root", str(repo), "check"])
    printed = capsys.readouterr()
    assert code == 1
    kinds = "algorithm, predictions, training"
    assert f"{bad_phase}:2: submission_kind: 'algorithms' is not one of: {kinds}" in printed.out
    assert "carol/v1.yml:2: image:" in printed.out
    assert "2 problems found" in printed.err


def test_check_one_file(repo, capsys):
    assert main(["--root", str(repo), "check", str(phase_file(repo))]) == 0
    assert "is valid" in capsys.readouterr().out


def test_challenge_status_from_dates(repo):
    import datetime as dt
    challenge = Store(repo).challenge(CHALLENGE)
    assert challenge.current_status(dt.date(2025, 6, 1)) == "upcoming"
    assert challenge.current_status(dt.date(2026, 6, 1)) == "active"
    assert challenge.current_status(dt.date(2028, 1, 1)) == "completed"


def test_case_method_needs_the_per_case_path(repo):
    path = phase_file(repo)
    text = path.read_text().replace("scoring_method_choice: absolute", "scoring_method_choice: rank-then-aggregate")
    path.write_text("\n".join(ln for ln in text.splitlines() if not ln.startswith("score_case_jsonpath")) + "\n")
    with pytest.raises(ModelError, match="set score_case_jsonpath"):
        load_phase(path, CHALLENGE)
    path.write_text(path.read_text() + "score_case_jsonpath: case.*.dice\nranking_options:\n  aggregate: median\n"
                    "  alpha: 2\n")
    with pytest.raises(ModelError, match=r"ranking_options\.alpha: must lie between 0 and 1"):
        load_phase(path, CHALLENGE)


def test_combined_leaderboard_names_existing_phases(repo):
    path = repo / "challenges" / CHALLENGE / "challenge.yml"
    path.write_text(path.read_text() + "combined_leaderboards:\n  - slug: all\n    title: All\n    phases:\n"
                    "      - phase: final-test\n      - phase: nope\n        weight: 2\n")
    [problem] = check(Store(repo)).problems
    line = len(path.read_text().splitlines()) - 1
    assert (problem.line, problem.field) == (line, "combined_leaderboards[0].phases[1].phase")
    assert problem.message == "no phase 'nope' in this challenge"


def test_a_result_with_text_that_is_no_unicode_is_written_as_every_reader_takes_it(tmp_path):
    """A container's file name that is not UTF-8 (a surrogate escape), or an evaluation's JSON holding a lone
    surrogate, once made a result that strict readers refused: every build and review of its phase stopped."""
    result = Result(challenge=CHALLENGE, phase=PHASE, participant="alice", submission="v1", status="failed",
                    created_at="2026-01-01T00:00:00+00:00", started_at="2026-01-01T00:00:00+00:00",
                    finished_at="2026-01-01T00:00:01+00:00", error="/output/\udcff is a link",
                    metrics={"case": {"a\ud800": {"note": "\udcfe"}}})
    path = tmp_path / "v1.json"
    path.write_text(result.to_json())
    read = load_result(path)
    assert read.error == "/output/\\xff is a link"
    assert read.metrics == {"case": {"a\\ud800": {"note": "\\xfe"}}}


def test_printable_shows_what_a_participant_wrote_on_one_line():
    assert printable("/output/\udcff\n\x1b[1mx\t") == "/output/\\xff\\x0a\\x1b[1mx\\x09"
    assert printable("é ✓") == "é ✓"
    assert printable("x" * 50, limit=10) == "x" * 9 + "…"
