"""The value types the tree's schema declares its fields with, each with its message and its JSON Schema.

Pydantic checks the structure of a file; these types say, in an organizer's words and with the fix
shown, what pydantic cannot: a kebab-case slug, a size such as `2g`, a JSONPath that parses, an
image pinned by digest, a time with its timezone. Each one also gives the JSON Schema an editor
uses to complete and check the field (`x-type` names the kind of value for the field reference).
"""

from __future__ import annotations

import datetime as dt
import re
import unicodedata
from typing import Annotated, Any

from pydantic import AfterValidator, Field, PlainValidator, Strict, WithJsonSchema
from pydantic.config import JsonDict
from pydantic_core import PydanticCustomError

from runner.errors import HIDDEN
from runner.tree.jsonpaths import compiled
from runner.tree.references import SHA256, check_image_ref

SLUG = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")
LOGIN = re.compile(r"[A-Za-z0-9](?:-?[A-Za-z0-9]){0,38}")  # GitHub's rule for user names
APPROVAL = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*")
SIZE = re.compile(r"(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?", re.IGNORECASE)
UTC_EXAMPLE = "2027-01-31T23:59:59Z"


def meta(description: str, *, gc: str | None = None, **constraints: Any) -> Any:
    """A field's metadata: what it means, grand-challenge's name for it where it has one, and the
    constraints pydantic checks (ge, le, max_length, ...). One call per field, next to its type."""
    extra: JsonDict | None = {"x-grand-challenge": gc} if gc else None
    return Field(description=description, json_schema_extra=extra, **constraints)


def refuse(message: str) -> PydanticCustomError:
    """A validation error whose message is shown as written (the context keeps braces literal)."""
    return PydanticCustomError("refused", "{reason}", {"reason": message})


def describe(value: Any) -> str:
    """A value as an organizer wrote it: 'a whole number (3)', 'text ('x')', 'a list'."""
    if value is None:
        return "nothing"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list | tuple):
        return "a list"
    names = [(dt.datetime, "a date and time"), (dt.date, "a date"), (int, "a whole number"), (float, "a number"),
             (str, "text")]
    name = next((label for kind, label in names if isinstance(value, kind)), type(value).__name__)
    return f"{name} ({value!r})" if not isinstance(value, dt.date) else f"{name} ({value.isoformat()})"


def _pattern(regex: re.Pattern[str], what: str, *, why: str | None = None) -> Any:
    """A text type that must match `regex` in full, refused as "'x' is not <what>" (or as `why`)."""
    def check(value: str) -> str:
        if not regex.fullmatch(value):
            raise refuse(why or f"{value!r} is not {what}")
        return value
    return AfterValidator(check)


def _schema(schema: dict[str, Any], kind: str) -> WithJsonSchema:
    return WithJsonSchema({**schema, "x-type": kind})


def size_text(size: int) -> str:
    """A size as the package writes it everywhere (`Size` reads it back): 512 MiB, 2 GiB."""
    for unit, scale in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if size >= scale:
            return f"{size / scale:g} {unit}"
    return f"{size} bytes"


def _jsonpath(value: str) -> str:
    try:
        compiled(value)  # cached: a site build reads every phase, mostly with the same few paths
    except Exception as exc:  # jsonpath_ng raises several unrelated types
        raise refuse(f"{value!r} is not a JSONPath: {exc}") from None
    return value


def _size(value: Any) -> int:
    """Bytes from `512m`, `2g`, `2GiB` or a plain number of bytes."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    match = SIZE.fullmatch(value.strip()) if isinstance(value, str) else None
    if not match:
        raise refuse(f"expected a size such as 512m or 2g, got {describe(value)}")
    scale = 1024 ** " kmgt".index(match.group(2).lower() or " ")
    return int(float(match.group(1)) * scale)


def _as_time(value: Any) -> dt.datetime | dt.date:
    """A YAML timestamp or date, or the same written as quoted text."""
    if isinstance(value, dt.date):
        return value
    if isinstance(value, str):
        try:
            return dt.date.fromisoformat(value) if len(value.strip()) == 10 else dt.datetime.fromisoformat(value)
        except ValueError:
            pass
    raise refuse(f"expected a date and time such as {UTC_EXAMPLE}, got {describe(value)}")


def _aware(value: dt.datetime) -> dt.datetime:
    """A time without its zone is ambiguous by up to a day: refuse it, showing it written in UTC."""
    if value.tzinfo is None:
        fixed = value.strftime("%Y-%m-%dT%H:%M:%SZ")
        raise refuse(f"{value.isoformat(sep=' ')} has no timezone: write {fixed} for UTC, or add the offset "
                     f"(+02:00)")
    try:
        return value.astimezone(dt.UTC)
    except OverflowError:  # 9999-12-31T23:59-23:59 lies past the last time Python has
        raise refuse(f"{value.isoformat(sep=' ')} is out of range") from None


def _moment(value: Any) -> dt.datetime:
    """An opening time: a full time with its zone. A date alone would hide at which hour it opens."""
    found = _as_time(value)
    if not isinstance(found, dt.datetime):
        raise refuse(f"a date alone is not a time here: write {found.isoformat()}T00:00:00Z (only closing times "
                     "take a date alone, meaning the end of that day)")
    return _aware(found)


def _closing(value: Any) -> dt.datetime:
    """A closing time; a date alone closes at the end of that day in UTC, as a deadline is read."""
    found = _as_time(value)
    if not isinstance(found, dt.datetime):
        return dt.datetime.combine(found, dt.time.max, tzinfo=dt.UTC)
    return _aware(found)


def _day(value: Any) -> dt.date:
    found = _as_time(value)
    return found.date() if isinstance(found, dt.datetime) else found


def _organizer_image(value: str) -> str:
    if why := check_image_ref(value, allow_local=False):
        raise refuse(why)
    return value


def _submitted_image(value: str) -> str:
    """Pinned by digest, or a local image ID (whether that may run is the pull-request rules' call)."""
    if check_image_ref(value, allow_local=True) is not None:
        raise refuse(check_image_ref(value, allow_local=False) or "")
    return value


def _probability(value: float) -> float:
    if not 0 < value < 1:
        raise refuse(f"must lie between 0 and 1, got {value}")
    return value


def _missing(value: Any) -> str | float:
    if value == "drop" or (isinstance(value, int | float) and not isinstance(value, bool)):
        return value if isinstance(value, str) else float(value)
    shown = f"{value!r} is" if isinstance(value, str) else f"{describe(value)} is"
    raise refuse(f"{shown} neither drop nor a number")


def _shown(value: str) -> str:
    """A participant's text that pages show: no control or invisible character but tabs and line breaks (a
    bidi override turns a leaderboard cell's text around, a zero-width one hides in it), as the issue form
    refuses them (`printable`)."""
    for char in value:
        if char not in "\t\n" and unicodedata.category(char) in HIDDEN:
            raise refuse(f"holds the control or invisible character U+{ord(char):04X}; write plain text")
    return value


def _true(value: bool) -> bool:
    if value is not True:
        raise refuse("must be true: registering means accepting the challenge's rules")
    return value


Text = Annotated[str, Strict()]
ShownText = Annotated[str, Strict(), AfterValidator(_shown)]  # a participant's text that pages show
Bool = Annotated[bool, Strict()]
Whole = Annotated[int, Strict()]
Number = Annotated[float, Strict()]
Slug = Annotated[str, Strict(), _pattern(SLUG, "a kebab-case slug (lowercase letters, digits and '-')"),
                 _schema({"type": "string", "pattern": f"^{SLUG.pattern}$"}, "slug")]
Name = Annotated[str, Strict(), _pattern(NAME, "a name of letters, digits, '-', '_' and '.'"),
                 _schema({"type": "string", "pattern": f"^{NAME.pattern}$"}, "name")]
# A file committed beside a submission (predictions, a supplementary PDF): a name, never a path, so it
# can only be a file of the participant's own folder (`paths.companion_file` reads it).
FileName = Annotated[str, Strict(), _pattern(NAME, "a file name", why="name a file in the submission's own folder "
                                             "(letters, digits, '-', '_' and '.'), not a path"),
                     _schema({"type": "string", "pattern": f"^{NAME.pattern}$"}, "file name")]
TeamName = Annotated[str, Strict(), _pattern(NAME, "a team name",
                                             why="a team name may use letters, digits, '-', '_' and '.'"),
                     _schema({"type": "string", "pattern": f"^{NAME.pattern}$"}, "team name")]
Login = Annotated[str, Strict(), _pattern(LOGIN, "a GitHub login"),
                  _schema({"type": "string", "pattern": f"^{LOGIN.pattern}$"}, "GitHub login")]
Approval = Annotated[str, Strict(), _pattern(APPROVAL, "participant/id, e.g. alice/v1"),
                     _schema({"type": "string", "pattern": f"^{APPROVAL.pattern}$"}, "participant/id")]
Sha256 = Annotated[str, Strict(), _pattern(SHA256, "64 lowercase hex digits"),
                   _schema({"type": "string", "pattern": f"^{SHA256.pattern}$"}, "sha256")]
JsonPath = Annotated[str, Strict(), AfterValidator(_jsonpath), _schema({"type": "string"}, "JSONPath")]
Size = Annotated[int, PlainValidator(_size), _schema(
    {"anyOf": [{"type": "integer", "minimum": 0}, {"type": "string", "pattern": f"(?i)^{SIZE.pattern}$"}]},
    "size: bytes, or 512m, 2g")]
Moment = Annotated[dt.datetime, PlainValidator(_moment),
                   _schema({"type": "string", "format": "date-time"}, "date and time with its timezone")]
Closing = Annotated[dt.datetime, PlainValidator(_closing), _schema(
    {"anyOf": [{"type": "string", "format": "date-time"}, {"type": "string", "format": "date"}]},
    "date and time with its timezone, or a date (the end of that day, UTC)")]
Day = Annotated[dt.date, PlainValidator(_day), _schema({"type": "string", "format": "date"}, "date")]
OrganizerImage = Annotated[str, Strict(), AfterValidator(_organizer_image),
                           _schema({"type": "string", "pattern": "@sha256:[0-9a-f]{64}$"}, "image pinned by digest")]
SubmittedImage = Annotated[str, Strict(), AfterValidator(_submitted_image),
                           _schema({"type": "string", "pattern": "sha256:[0-9a-f]{64}$"}, "image pinned by digest")]
Probability = Annotated[float, Strict(), AfterValidator(_probability),
                        _schema({"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
                                "number between 0 and 1")]
Missing = Annotated[str | float, PlainValidator(_missing),
                    _schema({"anyOf": [{"const": "drop"}, {"type": "number"}]}, "drop, or a number")]
AcceptRules = Annotated[bool, Strict(), AfterValidator(_true),
                        _schema({"const": True}, "true")]
