"""Reading one located YAML document into its declared type, reporting every problem of the file once.

Pydantic validates the whole document in one pass and returns all its errors; each becomes a
`file:line: field: message` in an organizer's words (pydantic's own words only where no better
one exists), an unknown field gets a "did you mean" from the fields allowed at that place, and
the checks that span several fields (a close after the opening, ...) still run on the fields that
were valid, so one run lists everything there is to fix.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import cache
from typing import Any, TypeVar, cast, get_type_hints

from pydantic import TypeAdapter, ValidationError
from pydantic_core import ErrorDetails

from runner.tree.located import Document, Key, ModelError, dotted
from runner.tree.schema_types import describe

T = TypeVar("T")
Issue = tuple[Key | None, str]  # a problem at a key of the document (None: the file as a whole)
# Checks across fields: given the record and the top-level fields that were written but invalid
# (at their defaults in the record, so that the valid ones can still be checked against each other).
Checks = Callable[[T, frozenset[str | int]], Iterable[Issue]]
UNKNOWN = ("extra_forbidden", "unexpected_keyword_argument")
CONTAINERS = ("too_short", "too_long")  # a count that only follows from errors of its items
MISSING = ("missing", "missing_argument", "missing_keyword_only_argument")


class FileProblems(ModelError):
    """Every problem of one file. Where one ModelError is expected it reads as the first (its path,
    line, field and message), and it prints as all of them, one per line."""

    def __init__(self, problems: Sequence[ModelError]):
        self.problems = list(problems)
        first = self.problems[0]
        super().__init__(first.path, first.line, first.field, first.message)

    def __str__(self) -> str:
        return "\n".join(ModelError.__str__(p) for p in self.problems)


def each_problem(exc: ModelError) -> list[ModelError]:
    """The problems an error stands for: all of a file's, or itself."""
    return exc.problems if isinstance(exc, FileProblems) else [exc]


@cache
def adapter(kind: Any) -> TypeAdapter[Any]:
    """One validator per declared kind, built on first use (building costs more than validating)."""
    return TypeAdapter(kind)


@cache
def json_schema(kind: Any) -> dict[str, Any]:
    return adapter(kind).json_schema()


def parse(doc: Document, kind: type[T], *, checks: Checks[T] | None = None,
          moved: Mapping[Key, str] | None = None, blank: Callable[[], Any] = dict) -> T:
    """`doc` as a `kind`, or FileProblems with every problem: the schema's, then those of `checks`
    (run on the fields that were valid). `moved` words the unknown fields that belong elsewhere
    (keyed by field names, list indexes left out); an empty file reads as `blank()`."""
    data = without_nulls(doc.data if doc.data is not None else blank())
    problems: list[ModelError] = []
    failed: set[str | int] = set()
    value: T | None
    try:
        value = cast(T, adapter(cast(Any, kind)).validate_python(data))
    except ValidationError as exc:
        errors = _once(exc.errors(include_url=False), kind)
        problems = [doc.error(_key(e["loc"]), _message(e, kind, moved or {})) for e in errors]
        failed = {e["loc"][0] for e in errors if e["loc"]}
        value = _partial(kind, data, failed)
    if value is not None and checks is not None:
        problems += [_located(doc, key, message) for key, message in checks(value, frozenset(failed))
                     if not key or key[0] not in failed]
    if problems:
        raise FileProblems(sorted(problems, key=lambda p: p.line or 0))
    assert value is not None
    return value


def without_nulls(data: Any) -> Any:
    """An empty value (`description:`) reads as a field not written, as it always has."""
    if isinstance(data, dict):
        return {k: without_nulls(v) for k, v in data.items() if v is not None}
    if isinstance(data, list):
        return [without_nulls(v) for v in data]
    return data


def _partial(kind: type[T], data: Any, failed: set[str | int]) -> T | None:
    """The record with its invalid fields at their defaults (None where required), built without
    validating the whole: enough to check how the valid fields agree with each other."""
    if not (dataclasses.is_dataclass(kind) and isinstance(data, dict)):
        return None
    record = object.__new__(kind)
    for spec in dataclasses.fields(kind):
        value = _default(spec)
        if spec.name in data and spec.name not in failed:
            try:
                value = _field_adapter(kind, spec.name).validate_python(data[spec.name])
            except ValidationError:
                pass
        object.__setattr__(record, spec.name, value)
    return record


def _default(spec: dataclasses.Field[Any]) -> Any:
    if spec.default is not dataclasses.MISSING:
        return spec.default
    if spec.default_factory is not dataclasses.MISSING:
        return spec.default_factory()
    return None


@cache
def _field_adapter(kind: Any, name: str) -> TypeAdapter[Any]:
    return TypeAdapter(get_type_hints(kind, include_extras=True)[name])


def _located(doc: Document, key: Key | None, message: str) -> ModelError:
    return ModelError(doc.path, None, None, message) if key is None else doc.error(key, message)


def _key(loc: tuple[str | int, ...]) -> Key:
    """Pydantic's location as the document's key: a mapping key's own error sits at the key."""
    return tuple(part for part in loc if part != "[key]")


def _once(errors: list[ErrorDetails], kind: Any) -> list[ErrorDetails]:
    """One error per mistake: one per place; no "too few items" where items were refused (that
    follows from them); no "is required" for the field a misspelt one was meant to be."""
    seen: dict[tuple[str | int, ...], ErrorDetails] = {}
    for error in errors:
        seen.setdefault(error["loc"], error)
    meant = {_key(loc)[:-1] + (name,) for loc, e in seen.items() if e["type"] in UNKNOWN
             for name in [_suggestion(_key(loc), kind)] if name}
    return [e for loc, e in seen.items()
            if not (e["type"] in CONTAINERS and any(len(o) > len(loc) and o[:len(loc)] == loc for o in seen))
            and not (e["type"] in MISSING and _key(loc) in meant)]


def _message(error: ErrorDetails, kind: Any, moved: Mapping[Key, str]) -> str:
    kind_of, value, ctx = error["type"], error.get("input"), error.get("ctx") or {}
    if kind_of in UNKNOWN:
        return _unknown(_key(error["loc"]), kind, moved)
    words = _WORDS.get(kind_of)
    if words is not None:
        return words(value, ctx)
    if kind_of == "refused":
        return str(ctx["reason"])
    return error["msg"]


def _expected(what: str, *, quote: bool = False) -> Callable[[Any, dict[str, Any]], str]:
    """"expected <what>, got <value>", with the fix for a number or yes/no YAML read as such."""
    def words(value: Any, _ctx: dict[str, Any]) -> str:
        hint = "; put it in quotes" if quote and value is not None and not isinstance(value, dict | list) else ""
        return f"expected {what}, got {describe(value)}{hint}"
    return words


def _choices(value: Any, ctx: dict[str, Any]) -> str:
    options = [o.strip().strip("'") for o in str(ctx.get("expected", "")).replace(" or ", ", ").split(", ")]
    return f"{value!r} is not one of: {', '.join(options)}"


_WORDS: dict[str, Callable[[Any, dict[str, Any]], str]] = {
    **{kind: (lambda v, c: "is required") for kind in MISSING},
    "string_type": _expected("text", quote=True),
    "int_type": _expected("a whole number"),
    "int_from_float": _expected("a whole number"),
    "float_type": _expected("a number"),
    "bool_type": _expected("true or false"),
    "list_type": _expected("a list"),
    "tuple_type": _expected("a list"),
    "dict_type": _expected("a mapping of fields"),
    "dataclass_type": _expected("a mapping of fields"),
    "model_type": _expected("a mapping of fields"),
    "literal_error": _choices,
    "enum": _choices,
    "greater_than_equal": lambda v, c: f"must be at least {c['ge']}, got {v}",
    "greater_than": lambda v, c: f"must be more than {c['gt']}, got {v}",
    "less_than_equal": lambda v, c: f"must be at most {c['le']}, got {v}",
    "less_than": lambda v, c: f"must be less than {c['lt']}, got {v}",
    "string_too_long": lambda v, c: f"is {len(v)} characters long; at most {c['max_length']} allowed",
    "string_too_short": lambda v, c: f"must be at least {c['min_length']} characters",
    # The same, for text whose type runs a check of its own (pydantic then counts its length as any size's).
    "too_short": lambda v, c: (f"must be at least {c['min_length']} characters" if isinstance(v, str) else
                               f"needs at least {c['min_length']} entries, got {c['actual_length']}"),
    "too_long": lambda v, c: (f"is {len(v)} characters long; at most {c['max_length']} allowed" if isinstance(v, str)
                              else f"takes at most {c['max_length']} entries, got {c['actual_length']}"),
}


def _unknown(key: Key, kind: Any, moved: Mapping[Key, str]) -> str:
    """An unknown field: where it belongs if it moved, else the closest allowed name."""
    names = tuple(p for p in key if isinstance(p, str))
    if names in moved:
        return moved[names]
    home = grand_challenge_names(kind).get(str(key[-1])) if len(key) == 1 else None
    if home is not None:
        return f"grand-challenge's {key[-1]} is written here as {dotted(home)}"
    close = _suggestion(key, kind)
    if close:
        return f"unknown field; did you mean {close!r}?"
    return f"unknown field (allowed here: {', '.join(sorted(allowed_fields(json_schema(kind), key[:-1])))})"


@cache
def grand_challenge_names(kind: Any) -> dict[str, Key]:
    """grand-challenge's name of each field of a `kind` file that has one (`meta`'s gc) -> where that field is
    written here, in the file's order: top-level fields and those of mappings within them, not of lists (each
    list entry is written whole, e.g. an extra_results_columns entry's path)."""
    schema = json_schema(kind)
    found: dict[str, Key] = {}

    def walk(node: dict[str, Any], key: Key) -> None:
        for name, spec in node.get("properties", {}).items():
            if "x-grand-challenge" in spec:
                found.setdefault(spec["x-grand-challenge"], (*key, name))
            walk(_resolve(schema, spec), (*key, name))
    walk(_resolve(schema, schema), ())
    return found


def _suggestion(key: Key, kind: Any) -> str | None:
    """The allowed field name closest to the unknown one at `key`, if one is close (difflib)."""
    close = difflib.get_close_matches(str(key[-1]), allowed_fields(json_schema(kind), key[:-1]), n=1, cutoff=0.6)
    return close[0] if close else None


def allowed_fields(schema: dict[str, Any], key: Key) -> list[str]:
    """The field names a JSON Schema allows at `key` (a mapping inside lists and mappings)."""
    node = _resolve(schema, schema)
    for part in key:
        if isinstance(part, int):
            node = _resolve(schema, node.get("items", {}))
        else:
            node = _resolve(schema, node.get("properties", {}).get(part, node.get("additionalProperties", {})))
    return list(node.get("properties", {}))


def _resolve(root: dict[str, Any], node: Any) -> dict[str, Any]:
    """Follow $ref and pick the mapping branch of an anyOf (`X | None`)."""
    if not isinstance(node, dict):
        return {}
    if "$ref" in node:
        return _resolve(root, root["$defs"][node["$ref"].rsplit("/", 1)[-1]])
    for branch in node.get("anyOf", ()):
        found = _resolve(root, branch)
        if found.get("properties") or found.get("items"):
            return found
    return node
