"""The model reads the challenge tree and names file, line and field for every mistake."""

from __future__ import annotations

import html
import textwrap
import unicodedata
from pathlib import Path

import pytest
import yaml

from runner.cli import main
from runner.errors import HIDDEN, printable
from runner.site.reference import reference_markdown
from runner.tree.check import check
from runner.tree.loading import load_challenge, load_phase, load_submission
from runner.tree.located import ModelError
from runner.tree.references import check_image_ref
from runner.tree.result_model import Result, load_result
from runner.tree.store import Store
from runner.tree.submission_model import SubmissionDetails
from tests.helpers import CHALLENGE, IMAGE, PHASE, Tree, edit_yaml, write_submission

DIGEST = "sha256:" + "ab" * 32


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


def phase_file(tree: Path) -> Path:
    return tree / "challenges" / CHALLENGE / "phases" / f"{PHASE}.yml"


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


def test_unknown_field_is_located(tree):
    path = phase_file(tree)
    path.write_text(path.read_text() + "score_jsonpth: aggregates.dice.mean\n")
    line = len(path.read_text().splitlines())
    with pytest.raises(ModelError) as info:
        load_phase(path, CHALLENGE)
    assert (info.value.line, info.value.field) == (line, "score_jsonpth")
    assert info.value.message == "unknown field; did you mean 'score_jsonpath'?"


def test_a_grand_challenge_option_not_supported_here_says_why(tree):
    path = phase_file(tree)
    path.write_text(path.read_text() + "workstation: 41b79371-7a8e-4ea2-8f1a-0c2a7d8e9f10\n")
    with pytest.raises(ModelError) as info:
        load_phase(path, CHALLENGE)
    assert info.value.field == "workstation"
    assert info.value.message == ("grand-challenge's workstation is not supported here: configures grand-challenge's "
                                  "image viewer for algorithm results; this site has no viewer")
    assert "workstation" in html.unescape(reference_markdown())  # the field reference lists each


def test_a_grand_challenge_name_written_elsewhere_here_says_where(tree):
    path = phase_file(tree)
    path.write_text(path.read_text() + "evaluation_time_limit: 3600\n")
    with pytest.raises(ModelError) as info:
        load_phase(path, CHALLENGE)
    assert (info.value.field, info.value.message) == (
        "evaluation_time_limit", "grand-challenge's evaluation_time_limit is written here as "
                                 "evaluation_resources.time_limit")


def test_wrong_type_in_nested_column_is_located(tree):
    path = Tree(tree).phase(extra_results_columns=[{"path": "aggregates.jaccard.mean", "title": "Jaccard",
                                                    "exclude_from_ranking": "sometimes"}])
    text = path.read_text()
    line = next(i for i, ln in enumerate(text.splitlines(), 1) if "sometimes" in ln)
    with pytest.raises(ModelError) as info:
        load_phase(path, CHALLENGE)
    assert info.value.line == line
    assert info.value.field == "extra_results_columns[0].exclude_from_ranking"
    assert str(info.value) == (f"{path}:{line}: extra_results_columns[0].exclude_from_ranking: expected true or "
                               "false, got text ('sometimes')")


def test_bad_jsonpath_and_headline_length(tree):
    path = phase_file(tree)
    path.write_text(path.read_text().replace("score_jsonpath: aggregates.dice.mean", "score_jsonpath: 'aggregates[['"))
    with pytest.raises(ModelError, match="score_jsonpath: 'aggregates\\[\\[' is not a JSONPath"):
        load_phase(path, CHALLENGE)
    challenge = tree / "challenges" / CHALLENGE / "challenge.yml"
    edit_yaml(challenge, headline="x" * 100)
    with pytest.raises(ModelError, match=r"headline: is 1.. characters long; at most 80"):
        load_challenge(challenge)


def test_closing_before_opening_is_refused(tree):
    path = phase_file(tree)
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


def test_tag_only_submission_is_refused_with_its_line(tree):
    path = write_submission(tree, "carol", "v1", "ghcr.io/carol/algo:latest")
    with pytest.raises(ModelError) as info:
        Store(tree).submission(path)
    assert (info.value.line, info.value.field) == (2, "image")
    assert "pinned by digest" in info.value.message



@pytest.mark.parametrize("field, text", [("title", "Best \u202eledom"), ("description", "line one\nzero\u200bwidth"),
                                         ("title", "a\u2028b")])
def test_a_submissions_shown_text_holds_no_invisible_character(tree, field, text):
    """A bidi override turns a leaderboard cell's text around; the issue form refused them, a pull request did not."""
    path = write_submission(tree, "carol", "v1", "ghcr.io/carol/algo@" + DIGEST)
    path.write_text(path.read_text() + yaml.safe_dump({field: text}, allow_unicode=True))
    with pytest.raises(ModelError) as info:
        Store(tree).submission(path)
    bad = next(c for c in text if c not in "\t\n" and unicodedata.category(c) in HIDDEN)
    assert info.value.field == field and f"invisible character U+{ord(bad):04X}" in info.value.message


def test_a_submissions_description_keeps_its_lines_and_tabs(tree):
    path = write_submission(tree, "carol", "v1", "ghcr.io/carol/algo@" + DIGEST)
    path.write_text(path.read_text() + yaml.safe_dump({"description": "Étape 1:\tpré-traitement\nÉtape 2"},
                                                      allow_unicode=True))
    assert Store(tree).submission(path).description == "Étape 1:\tpré-traitement\nÉtape 2"

def test_submission_phase_must_match_its_folder(tree):
    path = write_submission(tree, "carol", "v1", "ghcr.io/carol/algo@" + DIGEST)
    path.write_text(path.read_text().replace(f"phase: {PHASE}", "phase: validation"))
    with pytest.raises(ModelError, match="says 'validation' but the file is under submissions/final-test/"):
        Store(tree).submission(path)


def test_submission_to_unknown_phase(tree):
    path = write_submission(tree, "carol", "v1", "ghcr.io/carol/algo@" + DIGEST, phase="nope")
    with pytest.raises(ModelError, match="has no phase 'nope'"):
        Store(tree).submission(path)


def test_check_command_reports_every_problem_and_fails(tree, capsys):
    write_submission(tree, "carol", "v1", "ghcr.io/carol/algo:latest")
    bad_phase = phase_file(tree).with_name("validation.yml")
    write(bad_phase, """\
        title: Validation
        submission_kind: algorithms
        score_jsonpath: aggregates.dice.mean
        """)
    code = main(["--root", str(tree), "check"])
    printed = capsys.readouterr()
    assert code == 1
    kinds = "algorithm, predictions, training"
    assert f"{bad_phase}:2: submission_kind: 'algorithms' is not one of: {kinds}" in printed.out
    assert "carol/v1.yml:2: image:" in printed.out
    assert "2 problems found" in printed.err


def test_check_one_file(tree, capsys):
    assert main(["--root", str(tree), "check", str(phase_file(tree))]) == 0
    assert "is valid" in capsys.readouterr().out


def test_challenge_status_from_dates(tree):
    import datetime as dt
    Tree(tree).challenge(start_date=dt.date(2026, 1, 1), end_date=dt.date(2027, 12, 31))
    challenge = Store(tree).challenge(CHALLENGE)
    assert challenge.current_status(dt.date(2025, 6, 1)) == "upcoming"
    assert challenge.current_status(dt.date(2026, 6, 1)) == "active"
    assert challenge.current_status(dt.date(2028, 1, 1)) == "completed"


def test_case_method_needs_the_per_case_path(tree):
    path = Tree(tree).phase(scoring_method_choice="rank-then-aggregate")  # and no score_case_jsonpath
    with pytest.raises(ModelError, match="set score_case_jsonpath"):
        load_phase(path, CHALLENGE)
    path.write_text(path.read_text() + "score_case_jsonpath: case.*.dice\nranking_options:\n  aggregate: median\n"
                    "  alpha: 2\n")
    with pytest.raises(ModelError, match=r"ranking_options\.alpha: must lie between 0 and 1"):
        load_phase(path, CHALLENGE)


def test_combined_leaderboard_names_existing_phases(tree):
    path = tree / "challenges" / CHALLENGE / "challenge.yml"
    path.write_text(path.read_text() + "combined_leaderboards:\n  - slug: all\n    title: All\n    phases:\n"
                    "      - phase: final-test\n      - phase: nope\n        weight: 2\n")
    [problem] = check(Store(tree)).problems
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


def extras_of(tree: Path, phase_options: dict, submission: str) -> str | None:
    """What the loader says of a submission with `submission`'s lines in a phase with `phase_options`."""
    edit_yaml(phase_file(tree), **phase_options)
    path = write(tree / "challenges" / CHALLENGE / "submissions" / PHASE / "alice" / "v1.yml",
                 f"phase: {PHASE}\nimage: {IMAGE}\n{submission}")
    phase = load_phase(phase_file(tree), CHALLENGE)
    try:
        load_submission(path, challenge=CHALLENGE, phase=PHASE, participant="alice", extras=phase)
    except ModelError as exc:
        return f"{exc.field}: {exc.message}"
    return None


@pytest.mark.parametrize("options, lines, problem", [
    ({}, "comment: tuned on fold 2\n", "comment: phase 'final-test' takes no comment (its "
                                       "allow_submission_comments is false)"),
    ({"allow_submission_comments": True}, "comment: tuned on fold 2\n", None),
    ({"allow_submission_comments": True}, f"comment: {'x' * 129}\n", "comment: is 129 characters long; at most 128 "
                                                                      "allowed"),
    ({}, "supplementary_url: https://arxiv.org/abs/1\n", "supplementary_url: phase 'final-test' takes no link (its "
                                                         "supplementary_url_choice is off)"),
    ({"supplementary_url_choice": "optional"}, "", None),
    ({"supplementary_url_choice": "optional"}, "supplementary_url: https://arxiv.org/abs/1\n", None),
    ({"supplementary_url_choice": "required", "supplementary_url_label": "Preprint"}, "",
     "supplementary_url: phase 'final-test' requires a link (Preprint): add supplementary_url: https://..."),
    ({"supplementary_url_choice": "optional"}, "supplementary_url: http://arxiv.org/abs/1\n",
     "supplementary_url: 'http://arxiv.org/abs/1' is not an https:// address of at most 2000 characters"),
    ({"supplementary_url_choice": "optional"}, "supplementary_url: javascript:alert(1)\n",
     "supplementary_url: 'javascript:alert(1)' is not an https:// address of at most 2000 characters"),
    ({"supplementary_url_choice": "optional"}, f"supplementary_url: https://a.org/{'x' * 1980}\n", None),  # 1,994
    ({"supplementary_url_choice": "optional"}, f"supplementary_url: https://a.org/{'x' * 2000}\n",
     "supplementary_url: 'https://a.org/" + "x" * 185 + "…' is not an https:// address of at most 2000 characters"),
])
def test_a_submissions_link_and_comment_meet_the_phases_switches(tree, options, lines, problem):
    assert extras_of(tree, options, lines) == problem


@pytest.mark.parametrize("metrics", ["zz", [1, 2], 3])
def test_a_result_whose_metrics_are_no_object_is_no_result(tmp_path, metrics):
    """Every score path reads into the metrics: a record holding anything else there is refused where it is
    read, not left to break the first leaderboard (or check) that reaches it."""
    result = Result(challenge=CHALLENGE, phase=PHASE, participant="alice", submission="v1", status="succeeded",
                    created_at="2026-01-01T00:00:00+00:00", started_at="2026-01-01T00:00:00+00:00",
                    finished_at="2026-01-01T00:00:01+00:00", metrics=metrics)  # type: ignore[arg-type]
    path = tmp_path / "v1.json"
    path.write_text(result.to_json())
    with pytest.raises(ModelError) as refused:
        load_result(path)
    assert str(refused.value).endswith(f"metrics: must be a JSON object, not {type(metrics).__name__}")


def test_a_result_signed_before_comments_and_links_existed_reads_as_it_was_signed():
    old = SubmissionDetails(title="Threshold", publication_url="https://arxiv.org/abs/1")
    result = Result(challenge=CHALLENGE, phase=PHASE, participant="alice", submission="v1", status="succeeded",
                    created_at="2026-03-01T10:00:00+00:00", started_at=None, finished_at=None, details=old)
    assert set(result.document()["details"]) == {"title", "description", "publication_url", "code_url",
                                                 "supplementary", "supplementary_sha256"}
    new = Result.from_dict({**result.document(), "details": {**result.document()["details"], "comment": "fold 2"}})
    assert new.document()["details"]["comment"] == "fold 2" and "supplementary_url" not in new.document()["details"]
