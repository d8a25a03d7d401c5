"""grand-challenge's Phase options: each one read under its own name or listed with why it is not, and an
export of a phase (`challenge import-phase`) carried into a phase file that names what it leaves out."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from runner.tree.gc_export import BY_ID, UNKNOWN, ExportError, imported_phase, read_export
from runner.tree.loading import UNSUPPORTED_GC_OPTIONS, load_phase
from runner.tree.phase_model import PhaseFile
from runner.tree.schema_parse import grand_challenge_names

EXPORT = Path(__file__).parent / "data" / "grand-challenge-phase.json"
# Every field of grand-challenge's Phase model (app/grandchallenge/evaluation/models.py at commit 9957bfc2, with
# those of UUIDModel and HangingProtocolMixin), and the two options it has since dropped that organizers still
# bring (submission_page_html, creator_must_be_verified).
GC_PHASE_FIELDS = (
    "id", "created", "modified", "view_content", "hanging_protocol", "challenge", "archive", "title", "slug",
    "score_title", "score_jsonpath", "score_error_jsonpath", "score_default_sort", "score_decimal_places",
    "extra_results_columns", "scoring_method_choice", "result_display_choice", "submission_kind",
    "allow_submission_comments", "display_submission_comments", "supplementary_file_choice",
    "supplementary_file_label", "supplementary_file_help_text", "show_supplementary_file_link",
    "supplementary_url_choice", "supplementary_url_label", "supplementary_url_help_text", "show_supplementary_url",
    "submissions_limit_per_user_per_period", "submission_limit_period", "submissions_open_at",
    "submissions_close_at", "submission_page_markdown", "auto_publish_new_results", "display_all_metrics",
    "algorithm_interfaces", "additional_evaluation_inputs", "evaluation_outputs",
    "algorithm_selectable_gpu_type_choices", "algorithm_maximum_settable_memory_gb", "algorithm_time_limit",
    "give_algorithm_editors_job_view_permissions", "evaluation_time_limit", "evaluation_selectable_gpu_type_choices",
    "evaluation_requires_gpu_type", "evaluation_maximum_settable_memory_gb", "evaluation_requires_memory_gb",
    "public", "workstation", "workstation_config", "optional_hanging_protocols", "average_algorithm_job_duration",
    "compute_cost_euro_millicents", "parent", "external_evaluation",
    "submission_page_html", "creator_must_be_verified",
)


def test_every_grand_challenge_phase_option_is_accepted_under_its_name_or_listed_with_why():
    accepted = grand_challenge_names(PhaseFile)
    for name in GC_PHASE_FIELDS:
        listed = name in UNSUPPORTED_GC_OPTIONS
        assert (name in accepted or name == "slug") != listed, name  # `slug` is the phase file's name
        if name in accepted and name != "evaluation_time_limit":
            assert accepted[name] == (name,), name  # under its own name, where a phase file has it
    assert set(UNSUPPORTED_GC_OPTIONS) <= set(GC_PHASE_FIELDS)  # no reason for an option grand-challenge lacks
    assert accepted["evaluation_time_limit"] == ("evaluation_resources", "time_limit")


def test_a_real_shaped_export_becomes_a_phase_file_and_names_what_it_leaves_out(tmp_path):
    exported = read_export(EXPORT)
    phase = imported_phase(exported)
    assert (phase.slug, phase.title) == ("final-test-phase", "Final Test Phase")  # Django's slug made kebab-case
    fields = phase.fields
    assert (fields["submission_kind"], fields["scoring_method_choice"], fields["result_display_choice"]) == (
        "algorithm", "mean", "best")
    assert (fields["supplementary_file_choice"], fields["supplementary_url_choice"]) == ("optional", "required")
    assert fields["evaluation_resources"] == {"time_limit": 3600}
    assert fields["submission_page_markdown"] == exported["submission_page_markdown"]
    dropped = {d.option: d.why for d in phase.dropped}
    assert dropped["parent"] == BY_ID["parent"] and dropped["workstation"] == UNSUPPORTED_GC_OPTIONS["workstation"]
    # Each option of the export is carried, or named with why, or set to nothing (null, false, empty).
    homes = grand_challenge_names(PhaseFile)
    for option, value in exported.items():
        carried = option in homes and option not in dropped and _at(fields, homes[option]) is not None
        assert carried or option in dropped or option == "slug" or not value, option
    path = tmp_path / f"{phase.slug}.yml"
    path.write_text(phase.yaml())
    loaded = load_phase(path, "imported")
    assert loaded.supplementary_url_label == "Preprint" and loaded.evaluation.time_limit == 3600
    assert loaded.submission_page_markdown.startswith("## Before you submit\n\nRun your container")
    assert path.read_text().startswith("# Final Test Phase: imported from grand-challenge.org")


def _at(fields: dict, key: tuple) -> object:
    for part in key:
        fields = fields.get(part) if isinstance(fields, dict) else None
    return fields


@pytest.mark.parametrize("shape", ["record", "fields"])
def test_one_record_or_a_plain_object_of_fields_is_an_export(tmp_path, shape):
    record = json.loads(EXPORT.read_text())[0]
    path = tmp_path / "phase.json"
    path.write_text(json.dumps(record if shape == "record" else record["fields"]))
    dropped = {d.option for d in imported_phase(read_export(path)).dropped}
    assert ("id" in dropped) == (shape == "record")  # dumpdata keeps the id beside the fields, as pk


def test_an_option_nobody_knows_is_named_too():
    phase = imported_phase({"title": "Final", "score_jsonpath": "a", "submission_kind": 1, "colour": "blue"})
    assert [(d.option, d.why) for d in phase.dropped] == [("colour", UNKNOWN)]
    assert phase.fields == {"title": "Final", "score_jsonpath": "a", "submission_kind": "predictions"}


@pytest.mark.parametrize("text, message", [
    ("[]", "holds 0 grand-challenge phases, not one"),
    ('[{"model": "evaluation.phase", "fields": {}}, {"model": "evaluation.phase", "fields": {}}]',
     "holds 2 grand-challenge phases, not one"),
    ('[{"model": "challenges.challenge", "fields": {}}]', "holds 0 grand-challenge phases, not one"),
    ('{"model": "evaluation.phase",\n "fields": [1]}', "the phase's \"fields\" is not an object"),
    ('{"title": "x",\n oops}', ":2: not JSON: "),
])
def test_an_export_without_one_phase_is_one_error(tmp_path, text, message):
    path = tmp_path / "phase.json"
    path.write_text(text)
    with pytest.raises(ExportError, match=message):
        read_export(path)


def test_a_phase_without_a_name_cannot_be_imported():
    with pytest.raises(ExportError, match="neither slug nor title"):
        imported_phase({"score_jsonpath": "a"})
