"""Each file kind is declared once: validation, messages, JSON Schemas and the field reference all come
from that declaration, and the records the rest of the package reads keep their shape."""

from __future__ import annotations

import dataclasses
import datetime as dt
import html
import json
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

from runner.cli import main
from runner.site.reference import reference_markdown
from runner.tree.loading import load_approvals, load_challenge, load_phase
from runner.tree.located import ModelError
from runner.tree.model import CombinedLeaderboard
from runner.tree.people import load_registration, load_teams
from runner.tree.phase_model import Column, Phase
from runner.tree.policy import window
from runner.tree.result_model import MEASUREMENTS, SUMMARIES, Result, RunRecord, load_result
from runner.tree.schema import KINDS, NAMES, json_schema, json_schemas
from runner.tree.schema_parse import each_problem
from tests.helpers import CHALLENGE, PHASE, Tree, phase_file

UTC = dt.UTC


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


def problems(load: Any, *args: Any) -> list[str]:
    """Every problem `load` reports, as printed lines."""
    with pytest.raises(ModelError) as info:
        load(*args)
    return [str(p) for p in each_problem(info.value)]


def minimal_phase(tmp_path: Path, extra: str = "") -> Path:
    return write(tmp_path / "c" / "phases" / "p.yml",
                 "title: P\nsubmission_kind: algorithm\nscore_jsonpath: aggregates.dice.mean\n" + extra)


# --- every problem of a file, once, in words -------------------------------------------------------------------


def test_every_problem_of_a_file_once_with_file_and_line(tmp_path):
    path = write(tmp_path / "c" / "phases" / "p.yml", """\
        title: 3
        submission_kind: algorithms
        score_jsonpth: aggregates.dice.mean
        extra_results_columns:
          - path: aggregates.jaccard.mean
            title: Jaccard
            order: up
            colour: red
        algorithm_resources:
          time_limit: 3
          memory: lots
        ranking_options:
          alpha: 2
        """)
    assert problems(load_phase, path, "c") == [
        f"{path}:1: title: expected text, got a whole number (3); put it in quotes",
        f"{path}:2: submission_kind: 'algorithms' is not one of: algorithm, predictions, training",
        f"{path}:3: score_jsonpth: unknown field; did you mean 'score_jsonpath'?",  # not also "is required"
        f"{path}:7: extra_results_columns[0].order: 'up' is not one of: asc, desc",
        f"{path}:8: extra_results_columns[0].colour: unknown field (allowed here: error_path, exclude_from_ranking, "
        "order, path, title)",
        f"{path}:10: algorithm_resources.time_limit: set algorithm_time_limit instead (grand-challenge's name)",
        f"{path}:11: algorithm_resources.memory: expected a size such as 512m or 2g, got text ('lots')",
        f"{path}:13: ranking_options.alpha: must lie between 0 and 1, got 2.0",
    ]


def test_a_wrong_choice_is_one_problem_even_across_two_families_of_methods(tmp_path):
    path = minimal_phase(tmp_path, "scoring_method_choice: best\n")
    assert problems(load_phase, path, "c") == [
        f"{path}:4: scoring_method_choice: 'best' is not one of: absolute, mean, median, aggregate-then-rank, "
        "rank-then-aggregate, test-then-rank, rank-then-average"]


def test_checks_across_fields_run_even_when_other_fields_are_wrong(tmp_path):
    path = minimal_phase(tmp_path, "description: 5\n"
                         "submissions_open_at: 2027-01-02T00:00:00Z\nsubmissions_close_at: 2027-01-01T00:00:00Z\n"
                         "scoring_method_choice: rank-then-aggregate\nparent: p\n")
    assert problems(load_phase, path, "c") == [
        f"{path}:4: description: expected text, got a whole number (5); put it in quotes",
        f"{path}:6: submissions_close_at: is not after submissions_open_at",
        f"{path}:7: scoring_method_choice: rank-then-aggregate ranks per case: set score_case_jsonpath to the "
        "per-case values of the score, e.g. case.*.dice",
        f"{path}:8: parent: a phase cannot be its own parent",
    ]


def test_challenge_problems_name_slug_dates_and_lengths(tmp_path):
    path = write(tmp_path / "my-challenge" / "challenge.yml", """\
        slug: other
        name: Ab
        headline: fine
        start_date: 2027-01-02
        end_date: 2027-01-01
        incentives: [money]
        combined_leaderboards:
          - slug: all
            title: All
            combine: median
            phases:
              - phase: a
                weight: 2
              - phase: b
        """)
    assert problems(load_challenge, path) == [
        f"{path}:1: slug: must match the folder name 'my-challenge'",
        f"{path}:2: name: must be at least 3 characters",
        f"{path}:5: end_date: is before start_date",
        f"{path}:6: incentives[0]: 'money' is not one of: monetary, publication, speaking_engagement, other",
        f"{path}:10: combined_leaderboards[0].combine: weights apply to mean and sum; a median takes none",
    ]


def test_a_misspelt_field_is_one_problem_not_also_a_missing_one(tmp_path):
    path = write(tmp_path / "c" / "challenge.yml", """\
        name: Challenge
        headline: fine
        combined_leaderboards:
          - slug: all
            title: All
            phases:
              - phse: a
        """)
    assert problems(load_challenge, path) == [
        f"{path}:7: combined_leaderboards[0].phases[0].phse: unknown field; did you mean 'phase'?"]


def test_teams_registrations_and_approvals_are_declared_too(tmp_path):
    teams = write(tmp_path / "teams.yml", "lab:\n  - alice\n  - not a login\nbad team: [bob]\nsolo: carol\n")
    assert problems(load_teams, teams) == [
        f"{teams}:3: lab[1]: 'not a login' is not a GitHub login",
        f"{teams}:4: bad team: a team name may use letters, digits, '-', '_' and '.'",
        f"{teams}:5: solo: expected a list, got text ('carol')",
    ]
    teams.write_text("vision-lab:\n  - Alice\n  - carol\n")
    assert load_teams(teams) == {"vision-lab": frozenset({"alice", "carol"})}
    registration = write(tmp_path / "alice.yml", "name: Alice\naccept_rules: false\nemial: a@b.c\n")
    assert problems(load_registration, registration) == [
        f"{registration}:2: accept_rules: must be true: registering means accepting the challenge's rules",
        f"{registration}:3: emial: unknown field (allowed here: accept_rules, affiliation, name)",
    ]
    registration.write_text("name: Alice\n")
    assert problems(load_registration, registration) == [f"{registration}:1: accept_rules: is required"]
    approvals = write(tmp_path / "final.yml", "- alice/v1\n- bob\n")
    assert problems(load_approvals, approvals) == [f"{approvals}:2: [1]: 'bob' is not participant/id, e.g. alice/v1"]
    approvals.write_text("")
    assert load_approvals(approvals) == []


# --- times -------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("written, expected", [
    ("2027-01-31T23:59:59Z", dt.datetime(2027, 1, 31, 23, 59, 59, tzinfo=UTC)),
    ("2027-02-01T00:59:59+01:00", dt.datetime(2027, 1, 31, 23, 59, 59, tzinfo=UTC)),
    ("'2027-01-31T23:59:59Z'", dt.datetime(2027, 1, 31, 23, 59, 59, tzinfo=UTC)),
    ("2027-01-31", dt.datetime(2027, 1, 31, 23, 59, 59, 999999, tzinfo=UTC)),  # a closing date: the day's end
])
def test_closing_times_take_a_zone_or_a_whole_day(tmp_path, written, expected):
    phase = load_phase(minimal_phase(tmp_path, f"submissions_close_at: {written}\n"), "c")
    assert phase.submissions_close_at == expected
    assert window(phase, expected - dt.timedelta(microseconds=1)).open and not window(phase, expected).open


def test_a_time_without_a_zone_is_refused_with_the_fix(tmp_path):
    path = minimal_phase(tmp_path, "submissions_close_at: 2027-01-31 23:59:59\n")
    assert problems(load_phase, path, "c") == [
        f"{path}:4: submissions_close_at: 2027-01-31 23:59:59 has no timezone: write 2027-01-31T23:59:59Z for "
        "UTC, or add the offset (+02:00)"]


def test_a_date_alone_opens_nothing(tmp_path):
    path = minimal_phase(tmp_path, "submissions_open_at: 2027-01-01\nsubmissions_close_at: soon\n")
    assert problems(load_phase, path, "c") == [
        f"{path}:4: submissions_open_at: a date alone is not a time here: write 2027-01-01T00:00:00Z (only closing "
        "times take a date alone, meaning the end of that day)",
        f"{path}:5: submissions_close_at: expected a date and time such as 2027-01-31T23:59:59Z, got text ('soon')",
    ]


# --- the records keep their shape ------------------------------------------------------------------------------


def test_records_are_built_and_copied_as_before(tree):
    Tree(tree).phase(algorithm_time_limit=120, algorithm_resources={"memory": "1g"},
                     evaluation_resources={"time_limit": 120},
                     extra_results_columns=[{"path": "aggregates.jaccard.mean", "title": "Jaccard (mean)"},
                                            {"path": "aggregates.dice.min", "title": "Dice (worst case)"}])
    phase = load_phase(phase_file(tree), CHALLENGE)
    assert (phase.challenge, phase.slug, phase.score.path, phase.score.title) == (
        CHALLENGE, PHASE, "aggregates.dice.mean", "Dice (mean)")
    assert (phase.algorithm.time_limit, phase.algorithm.memory, phase.evaluation.time_limit) == (120, 1024**3, 120)
    assert [c.path for c in phase.columns] == ["aggregates.dice.mean", "aggregates.jaccard.mean", "aggregates.dice.min"]
    copied = dataclasses.replace(phase, score=dataclasses.replace(phase.score, path="aggregates.dice.min"))
    assert copied.score.path == "aggregates.dice.min" and copied.title == phase.title
    built = Phase(challenge="c", slug="p", title="P", submission_kind="algorithm", score=Column(path="a", title="A"))
    assert built.columns == (Column(path="a", title="A"),) and built.algorithm.time_limit == 300
    board = CombinedLeaderboard("all", "All tasks", (("t1", 1.0), ("t2", 1.0)), "mean")
    assert [p for p, _ in board.phases] == ["t1", "t2"]


def test_combined_leaderboards_read_as_phase_weight_pairs(tree):
    path = tree / "challenges" / CHALLENGE / "challenge.yml"
    path.write_text(path.read_text() + "combined_leaderboards:\n  - slug: all\n    title: All\n    phases:\n"
                    "      - phase: final-test\n      - phase: other\n        weight: 2\n")
    [board] = load_challenge(path).combined_leaderboards
    assert board == CombinedLeaderboard("all", "All", (("final-test", 1.0), ("other", 2.0)), "mean")


def test_results_keep_their_json(tmp_path):
    result = Result(challenge="c", phase="p", participant="alice", submission="v1", status="succeeded",
                    created_at="2026-03-01T10:00:00+00:00", started_at="2026-03-01T10:00:00+00:00",
                    finished_at="2026-03-01T10:00:01+00:00", metrics={"aggregates": {"dice": {"mean": 0.8}}},
                    algorithm=RunRecord(image="ghcr.io/a/b@sha256:" + "a" * 64, wall_time_s=1.5))
    path = tmp_path / "v1.json"
    path.write_text(result.to_json())
    assert load_result(path) == result
    assert list(json.loads(path.read_text())) == [
        "challenge", "phase", "participant", "submission", "status", "created_at", "started_at", "finished_at",
        "metrics", "error", "algorithm", "evaluation", "logs", "attempts", "runner_version", "details"]


# --- JSON Schemas ------------------------------------------------------------------------------------------------


def test_schema_command_prints_each_kind_and_all(capsys):
    for name in NAMES:
        assert main(["schema", name]) == 0
        assert json.loads(capsys.readouterr().out) == json_schema(name)
    assert main(["schema"]) == 0
    everything = json.loads(capsys.readouterr().out)
    assert everything == json_schemas() and list(everything) == [
        "challenge", "phase", "submission", "report", "teams", "registration", "approvals", "exclusions"]


def test_every_field_says_what_it_means(tree):
    for name, schema in json_schemas().items():
        for where, properties in _mappings(schema):
            for field, spec in properties.items():
                assert spec.get("description"), f"{name}: {where}{field} has no description"
    phase = json_schema("phase")["properties"]
    assert phase["score_jsonpath"]["x-grand-challenge"] == "score_jsonpath"
    assert phase["submission_kind"]["enum"] == ["algorithm", "predictions", "training"]
    assert json_schema("phase")["additionalProperties"] is False


def _mappings(schema: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    found = [("", schema.get("properties", {}))]
    found += [(f"{name}.", spec.get("properties", {})) for name, spec in schema.get("$defs", {}).items()]
    return found


def _as_json(data: Any) -> Any:
    """YAML's dates as the strings an editor's YAML language server sees."""
    return json.loads(json.dumps(data, default=lambda v: v.isoformat()))


def test_the_example_files_pass_their_json_schema_and_a_mistake_does_not(tree):
    jsonschema = pytest.importorskip("jsonschema")
    base = tree / "challenges" / CHALLENGE
    files = {
        "challenge": base / "challenge.yml", "phase": base / "phases" / f"{PHASE}.yml",
        "submission": write(base / "submissions" / PHASE / "alice" / "v1.yml",
                            f"phase: {PHASE}\nimage: ghcr.io/alice/algo@sha256:{'a' * 64}\n"),
        "report": write(base / "reports" / PHASE / "alice" / "v1.yml", f"file: v1.pdf\nsha256: {'b' * 64}\n"),
        "teams": write(base / "teams.yml", "vision-lab: [alice, carol]\n"),
        "registration": write(base / "registrations" / "alice.yml", "name: Alice\naccept_rules: true\n"),
        "approvals": write(base / "approvals" / f"{PHASE}.yml", "- alice/v1\n"),
        "exclusions": write(base / "exclusions" / f"{PHASE}.yml", "- result: alice/v1\n  reason: copied\n"),
    }
    assert set(files) == {kind.name for kind in KINDS}
    for name, path in files.items():
        validator = jsonschema.Draft202012Validator(json_schema(name))
        assert not list(validator.iter_errors(_as_json(yaml.safe_load(path.read_text())))), name
    wrong = _as_json({**yaml.safe_load(files["phase"].read_text()), "score_jsonpth": "x"})
    assert list(jsonschema.Draft202012Validator(json_schema("phase")).iter_errors(wrong))
    bad_team = {"bad team": ["alice"]}
    assert list(jsonschema.Draft202012Validator(json_schema("teams")).iter_errors(bad_team))


# --- the field reference -----------------------------------------------------------------------------------------


def test_the_reference_lists_the_runners_measurements_and_where_each_mode_writes_them():
    page = html.unescape(reference_markdown())  # the prose is written as text: entities for Markdown's characters
    section = page.split("## The runner's measurements\n", 1)[1].split("\n## ", 1)[0]
    for measurement in MEASUREMENTS:
        assert (f'| <code class="field-name">{measurement.name}</code> | {measurement.meaning} | the '
                f"{measurement.whole} over its runs |") in section
    assert ", ".join(f"`{name}`" for name in SUMMARIES) in section
    assert "`runner.aggregates.<measurement>.<summary>`" in section and "in per-case mode only" in section
    assert "- {path: runner.wall_time_s, title: Seconds, order: asc}" in section  # batch mode's example
    assert "- {path: runner.aggregates.wall_time_s.mean, title: Seconds per case, order: asc}" in section


def test_the_reference_lists_every_field_with_its_meaning():
    page = html.unescape(reference_markdown())  # the prose is written as text: entities for Markdown's characters
    for name, schema in json_schemas().items():
        assert f"## {name}: " in page
        for _, properties in _mappings(schema):
            for field, spec in properties.items():
                assert f'| <code class="field-name">{field}</code> |' in page
                assert " ".join(spec["description"].split()) in page
    assert ('| <code class="field-name">score_jsonpath</code> | JSONPath | required | Where the score is in each '
            "result: a JSONPath into the evaluation's metrics.json (aggregates.dice.mean), or under runner for the "
            "runner's measurements (runner.wall_time_s; the field reference lists them, and which inference_mode "
            "writes which). "
            '| <code class="field-name">score_jsonpath</code> |') in page
    assert '| <code class="field-name">memory</code> | size: bytes, or 512m, 2g | `2g` |' in page
    assert "A time without a timezone is refused" in page and "`2027-01-31T23:59:59Z`" in page
    assert "means the end of that day in\nUTC" in page
    assert "per-case values included (`case.*`), is\npublic by default" in page
