"""grand-challenge.org's export of a phase, as a phase file here (`challenge import-phase`).

An export is Django's dumpdata of grand-challenge's Phase model (a list of records, or one record:
{"model": "evaluation.phase", "pk": ..., "fields": {...}}), or a plain object of the Phase's fields.
Each option is carried under its own name where a phase file declares it (`meta`'s gc, found by
`schema_parse.grand_challenge_names`), its stored code turned into the word a phase file uses
(`GC_CODES`: grand-challenge stores "opt" for optional); every other option the export sets is named
with why, from the one table of options not supported here (`loading.UNSUPPORTED_GC_OPTIONS`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from runner.errors import ChallengeError
from runner.tree.loading import UNSUPPORTED_GC_OPTIONS
from runner.tree.located import Key
from runner.tree.phase_model import PhaseFile
from runner.tree.schema_parse import grand_challenge_names

PHASE_MODEL = "evaluation.phase"  # dumpdata's name of grand-challenge's Phase model
_CHOICE = {"off": "off", "opt": "optional", "req": "required"}
# grand-challenge's stored codes of its choices, as a phase file writes them.
GC_CODES: dict[str, dict[Any, str]] = {
    "submission_kind": {1: "predictions", 2: "predictions", 3: "algorithm"},  # 2: its former ZIP kind
    "scoring_method_choice": {"abs": "absolute", "avg": "mean", "med": "median"},
    "result_display_choice": {"all": "all", "rec": "most_recent", "bst": "best"},
    "supplementary_file_choice": _CHOICE,
    "supplementary_url_choice": _CHOICE,
}
# Options carried under their own name whose exported value is a database id, not what a phase file writes.
BY_ID = {"parent": "names the parent phase by grand-challenge's id: set parent to that phase's file name here"}
UNKNOWN = "not an option of grand-challenge's Phase that this project knows"


class ExportError(ChallengeError):
    """An export that holds no one phase to import; nothing was written."""


@dataclass(frozen=True)
class Dropped:
    """An option the export sets that the phase file leaves out, and why."""

    option: str
    why: str


@dataclass(frozen=True)
class ImportedPhase:
    """A phase file made from an export: its name, its fields as written, and what it left out."""

    slug: str
    title: str
    fields: dict[str, Any]
    dropped: tuple[Dropped, ...]

    def yaml(self) -> str:
        header = f"# {' '.join(self.title.split())}: imported from grand-challenge.org by `challenge import-phase`\n"
        return header + yaml.dump(self.fields, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100)


def read_export(path: Path) -> dict[str, Any]:
    """The Phase's fields from an export file (see the module's docstring); ExportError if it holds no one phase."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ExportError(f"{path}:{exc.lineno}: not JSON: {exc.msg}") from None
    except RecursionError:  # nested deeper than any export: the parser gives up
        raise ExportError(f"{path}: nested too deeply to be a phase export") from None
    except UnicodeDecodeError:
        raise ExportError(f"{path}: not UTF-8 text") from None
    records = data if isinstance(data, list) else [data]
    phases = [r for r in records if isinstance(r, dict) and r.get("model", PHASE_MODEL) == PHASE_MODEL]
    if len(phases) != 1:
        raise ExportError(f"{path}: holds {len(phases)} grand-challenge phases, not one: export a single phase "
                          f"(a {PHASE_MODEL} record of dumpdata, or an object of its fields)")
    record = phases[0]
    if "fields" not in record:
        return record
    if not isinstance(record["fields"], dict):
        raise ExportError(f"{path}: the phase's \"fields\" is not an object")
    return {"id": record["pk"], **record["fields"]} if "pk" in record else dict(record["fields"])


def imported_phase(exported: dict[str, Any]) -> ImportedPhase:
    """The phase file an export's fields make, in the export's order; the options it cannot carry dropped with why
    (an option left at nothing, such as null, false or an empty list, carries nothing to name)."""
    title = exported.get("title")
    slug = _slug(str(exported.get("slug") or title or ""))
    if not slug:
        raise ExportError("the export names no phase: it has neither slug nor title")
    homes = grand_challenge_names(PhaseFile)
    fields: dict[str, Any] = {}
    for option, value in exported.items():
        if option in homes and option not in BY_ID and value not in (None, ""):
            _put(fields, homes[option], _value(option, value))
    dropped = tuple(Dropped(option, BY_ID.get(option) or UNSUPPORTED_GC_OPTIONS.get(option) or UNKNOWN)
                    for option, value in exported.items()
                    if option != "slug" and (option not in homes or option in BY_ID) and value)
    return ImportedPhase(slug=slug, title=str(title or slug), fields=fields, dropped=dropped)


def _slug(text: str) -> str:
    """A kebab-case file name from grand-challenge's slug (Django's slugs may hold '_')."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def _value(option: str, value: Any) -> Any:
    codes = GC_CODES.get(option, {})
    return codes.get(value, value) if isinstance(value, str | int) else value


def _put(fields: dict[str, Any], key: Key, value: Any) -> None:
    """`value` at `key` (evaluation_resources.time_limit), making the mappings on the way."""
    for part in key[:-1]:
        fields = fields.setdefault(str(part), {})
    fields[str(key[-1])] = value


class _Dumper(yaml.SafeDumper):
    """YAML as an organizer writes it: text of several lines (submission_page_markdown) as a literal block."""


def _text(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|" if "\n" in value else None)


_Dumper.add_representer(str, _text)
