"""The JSON Schema of each file kind of the tree, derived from the records' one declaration.

An editor with the YAML language server completes and checks a file against these
(`challenge schema phase > phase.schema.json`, then `# yaml-language-server: $schema=phase.schema.json`
at the top of the file); the site publishes them (`json_schemas`), and the field reference for
organizers is written from them (`runner.site.reference`).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from runner.tree.loading import ApprovalsFile, ExclusionsFile
from runner.tree.model import Challenge
from runner.tree.people import Registration, TeamsFile
from runner.tree.phase_model import PhaseFile
from runner.tree.schema_parse import json_schema as derived
from runner.tree.submission_model import MethodReport, SubmissionFile

DIALECT = "https://json-schema.org/draft/2020-12/schema"


@dataclass(frozen=True)
class Kind:
    """One kind of file: its name on the command line, where it sits, and its declared type."""

    name: str
    where: str
    type: Any


KINDS = (
    Kind("challenge", "challenges/<challenge>/challenge.yml", Challenge),
    Kind("phase", "challenges/<challenge>/phases/<phase>.yml", PhaseFile),
    Kind("submission", "challenges/<challenge>/submissions/<phase>/<participant>/<id>.yml", SubmissionFile),
    Kind("report", "challenges/<challenge>/reports/<phase>/<participant>/<id>.yml", MethodReport),
    Kind("teams", "challenges/<challenge>/teams.yml", TeamsFile),
    Kind("registration", "challenges/<challenge>/registrations/<login>.yml", Registration),
    Kind("approvals", "challenges/<challenge>/approvals/<phase>.yml", ApprovalsFile),
    Kind("exclusions", "challenges/<challenge>/exclusions/<phase>.yml", ExclusionsFile),
)
NAMES = tuple(kind.name for kind in KINDS)


def json_schema(name: str) -> dict[str, Any]:
    """The JSON Schema of one kind (KeyError for an unknown name), as a fresh copy to change freely."""
    kind = next((k for k in KINDS if k.name == name), None)
    if kind is None:
        raise KeyError(f"no file kind {name!r} (kinds: {', '.join(NAMES)})")
    schema = _one_line_descriptions(copy.deepcopy(derived(kind.type)))
    return {"$schema": DIALECT, "$id": f"{kind.name}.schema.json", **schema, "title": f"{kind.where}"}


def _one_line_descriptions(node: Any) -> Any:
    """Descriptions taken from docstrings, without their line breaks (an editor's hover wraps them)."""
    if isinstance(node, dict):
        return {k: " ".join(v.split()) if k == "description" and isinstance(v, str) else _one_line_descriptions(v)
                for k, v in node.items()}
    if isinstance(node, list):
        return [_one_line_descriptions(v) for v in node]
    return node


def json_schemas() -> dict[str, dict[str, Any]]:
    """Every kind's JSON Schema by kind name, for the site to publish."""
    return {kind.name: json_schema(kind.name) for kind in KINDS}
