"""The field reference for organizers, written from the JSON Schemas of the file kinds.

Every field of every kind with its type, default, meaning and grand-challenge's name, generated
from the one declaration the loaders validate against, so the page cannot drift from what
`challenge check` accepts. The site publishes it as a page (`reference_markdown`). The declaration's
prose is text, not Markdown: `registrations/<login>.yml` must not reach the page as an HTML tag.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from runner.site.templating import text
from runner.tree.loading import UNSUPPORTED_GC_OPTIONS
from runner.tree.result_model import MEASUREMENTS, SUMMARIES
from runner.tree.schema import KINDS, json_schema

INTRO = """\
# Field reference

Every file an organizer or a participant writes, field by field. `challenge check` validates the
whole tree (or one file) against these declarations and lists every problem at once, as
`file:line: field: message`. `challenge schema KIND` prints a kind's JSON Schema: save it and put
`# yaml-language-server: $schema=KIND.schema.json` at the top of a file, and an editor with the
YAML language server completes and checks its fields as you type. Where a field has a name on
grand-challenge.org, the last column gives it, so a configuration from there carries over.
"""

RULES = """\
## Times and dates

Times are written with their timezone: `2027-01-31T23:59:59Z` (UTC), or with an offset such as
`2027-02-01T00:59:59+01:00`. A time without a timezone is refused, because it could mean any
hour of a day-wide range; the message shows it written in UTC. A date alone (`2027-01-31`) is
accepted only in closing fields (`submissions_close_at`), where it means the end of that day in
UTC (`2027-01-31T23:59:59.999999Z`); any other time field refuses a date alone. The challenge's
`start_date` and `end_date` are dates, not times.

## What is public

Everything the evaluation writes to `metrics.json`, per-case values included (`case.*`), is
public by default: the site publishes each result in full (the result viewer, its JSON download
and the leaderboard's). Only a phase's settings hold results back: `public: false` publishes
nothing of the phase, `blind: true` withholds scores until submissions close, and
`auto_publish_new_results: false` shows a result once an organizer approves it. Write to
`metrics.json` only what may be published.

An empty value (`description:`) reads as a field not written. An unknown field is an error, with
the closest known name suggested, so a typo never falls back to a default silently.
"""

CODE_SPAN = re.compile(r"(`[^`]*`)")
HEADER = "| field | type | default | meaning | grand-challenge |\n| --- | --- | --- | --- | --- |"


def reference_markdown() -> str:
    """The whole reference as one Markdown page."""
    parts = [INTRO, RULES, measurements()]
    for kind in KINDS:
        schema = json_schema(kind.name)
        parts.append(f"## {kind.name}: `{kind.where}`\n\n{_words(schema.get('description', ''))}\n")
        parts.extend(_sections(schema, schema, "", 3))
    parts.append(unsupported())
    return "\n".join(parts)


def unsupported() -> str:
    """grand-challenge's Phase options not supported here, and why (`loading.UNSUPPORTED_GC_OPTIONS`)."""
    rows = "\n".join(f"| {_field(name)} | {_words(why)} |" for name, why in sorted(UNSUPPORTED_GC_OPTIONS.items()))
    return f"""\
## grand-challenge's Phase options not supported here

Every other option of grand-challenge's Phase is read under its own name (the last column of the
tables above; its `slug` is the phase file's name). A phase file that sets one of these is refused
with the reason below, so that nothing is silently dropped, and `challenge import-phase` names each
one an export sets that it leaves out.

| grand-challenge option | why, and what stands for it here |
| --- | --- |
{rows}
"""


def measurements() -> str:
    """The runner's own numbers that score paths read under `runner` (MEASUREMENTS, SUMMARIES): where
    each inference mode writes them, with an example of each mode."""
    first, summary = MEASUREMENTS[0].name, next(iter(SUMMARIES))
    rows = "\n".join(f"| {_field(m.name)} | {_words(m.meaning)} | the {m.whole} over its runs |" for m in MEASUREMENTS)
    return f"""\
## The runner's measurements

Where the runner runs the participant's container (algorithm and training phases), a score path
(`score_jsonpath`, `extra_results_columns`, `score_case_jsonpath`, `ranking_metrics`) may read what
it measured of the algorithm's runs, under `runner`. A predictions phase runs no container: it has
no `runner`.

| measurement | meaning | a per-case job's `runner.<measurement>` |
| --- | --- | --- |
{rows}

- `runner.<measurement>`: the whole job's, in either mode.
- `runner.cases.<run>.<measurement>`: each run's, in per-case mode only (`inference_mode: per-case`,
  or `algorithm_interface: grand-challenge`). A run is named after its case, or `first..last` where
  `cases_per_run` is above 1.
- `runner.aggregates.<measurement>.<summary>`: {", ".join(f"`{s}`" for s in SUMMARIES)} of each
  measurement over the runs, in per-case mode only.

Batch mode writes neither `runner.cases` nor `runner.aggregates`: a column reading them shows `-`
in every row, and `challenge check` warns of it. A column of seconds in batch mode (the default):

```yaml
extra_results_columns:
  - {{path: runner.{first}, title: Seconds, order: asc}}
```

and per case:

```yaml
inference_mode: per-case
extra_results_columns:
  - {{path: runner.aggregates.{first}.{summary}, title: Seconds per case, order: asc}}
```
"""


def _sections(root: dict[str, Any], node: dict[str, Any], where: str, depth: int) -> Iterator[str]:
    """The table of one mapping, then one section per mapping nested in it."""
    node = _resolve(root, node)
    if "properties" not in node:
        yield _whole(root, node)
        inner, _ = _nested(root, node)  # a list of mappings (exclusions): its items' fields
        if inner is not None:
            yield from _sections(root, inner, f"{where}[]", depth)
        return
    required = set(node.get("required", ()))
    rows = [_row(root, name, field, name in required) for name, field in node["properties"].items()]
    yield HEADER + "\n" + "\n".join(rows) + "\n"
    for name, field in node["properties"].items():
        inner, suffix = _nested(root, field)
        if inner is not None:
            path = f"{where}.{name}{suffix}" if where else f"{name}{suffix}"
            yield f"{'#' * depth} `{path}`\n\n{_words(inner.get('description', ''))}\n"
            yield from _sections(root, inner, path, min(depth + 1, 6))


def _whole(root: dict[str, Any], node: dict[str, Any]) -> str:
    """A kind that is not a mapping of named fields: a list, or a mapping with free keys."""
    if "patternProperties" in node:
        [value] = node["patternProperties"].values()
        key = _type(root, node.get("propertyNames", {})) if node.get("propertyNames") else "name"
        meaning = _words(value.get("description", ""))
        return f"A mapping: each key is a {key}; each value is a {_type(root, value)}. {meaning}\n"
    return f"A {_type(root, node)}.\n"


def _row(root: dict[str, Any], name: str, field: dict[str, Any], required: bool) -> str:
    default = "required" if required else _default(root, field)
    cells = [_field(name), _type(root, field), default, _words(field.get("description", "")),
             _field(field["x-grand-challenge"]) if "x-grand-challenge" in field else ""]
    return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"


def _nested(root: dict[str, Any], field: dict[str, Any]) -> tuple[dict[str, Any] | None, str]:
    """The mapping a field holds (or holds a list of), with '[]' for a list, or (None, '')."""
    node = _resolve(root, field)
    suffix = ""
    if node.get("type") == "array" and "items" in node:
        node, suffix = _resolve(root, node["items"]), "[]"
    return (node, suffix) if "properties" in node else (None, "")


def _resolve(root: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    """Follow $ref, and take the one non-null branch of `X | None`."""
    if "$ref" in node:
        return _resolve(root, root["$defs"][node["$ref"].rsplit("/", 1)[-1]])
    branches = [b for b in node.get("anyOf", ()) if b.get("type") != "null"]
    if len(branches) == 1:
        return _resolve(root, branches[0])
    return node


def _type(root: dict[str, Any], field: dict[str, Any]) -> str:
    node = _resolve(root, field)
    if "x-type" in node:
        return _words(str(node["x-type"]))
    if "anyOf" in node:
        return " or ".join(_type(root, b) for b in node["anyOf"] if b.get("type") != "null")
    if "enum" in node:
        return "one of " + ", ".join(f"`{v}`" for v in node["enum"])
    if "const" in node:
        return f"`{_value(node['const'])}`"
    if node.get("type") == "array":
        least = f" (at least {node['minItems']})" if "minItems" in node else ""
        return f"list{least} of {_type(root, node.get('items', {}))}"
    if "properties" in node:
        return "mapping (below)"
    return _scalar(node)


def _scalar(node: dict[str, Any]) -> str:
    kind = node.get("type")
    words = {"string": "text", "integer": "whole number", "number": "number", "boolean": "true or false",
             "object": "mapping"}.get(str(kind), str(kind))
    if node.get("format") in ("date-time", "date"):
        return {"date-time": "date and time", "date": "date"}[node["format"]]
    bounds = [f"≥ {node['minimum']}" if "minimum" in node else "", f"≤ {node['maximum']}" if "maximum" in node else "",
              f"at most {node['maxLength']} characters" if "maxLength" in node else "",
              f"at least {node['minLength']} characters" if "minLength" in node else ""]
    shown = ", ".join(b for b in bounds if b)
    return f"{words} ({shown})" if shown else words


def _default(root: dict[str, Any], field: dict[str, Any]) -> str:
    if "default" not in field:
        return "see below" if _nested(root, field)[0] is not None else ""
    value = field["default"]
    if _resolve(root, field).get("x-type", "").startswith("size") and isinstance(value, int) and value:
        return _size(value)
    return f"`{_value(value)}`"


def _size(value: int) -> str:
    for unit, scale in (("g", 1024**3), ("m", 1024**2), ("k", 1024)):
        if value % scale == 0:
            return f"`{value // scale}{unit}`"
    return f"`{value}`"


def _value(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, str):
        return value if value else '""'
    if isinstance(value, list):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    return str(value)


def _field(name: str) -> str:
    """A field's name as code the site's CSS keeps on one line (a code span breaks names mid-word)."""
    return f'<code class="field-name">{text(name)}</code>'


def _words(prose: str) -> str:
    """Declared prose on one line as Markdown shows it as typed (`templating.text`), but for its code
    spans, which show what they hold as typed already."""
    parts = CODE_SPAN.split(" ".join(prose.split()))
    return "".join(part if i % 2 else text(part) for i, part in enumerate(parts))
