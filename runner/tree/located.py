"""YAML documents that remember where each field was written, so errors can name file and line.

Every file read here may come from a pull request, so the loader treats its bytes as hostile: the
size is checked before anything is read, the text must be strict UTF-8 without control
characters, only YAML's standard tags are taken, and composing the document is bounded (depth,
values, and the values aliases stand for), so that no file can make the loader spend more than a
`YamlPolicy` allows. Whatever is wrong with a file's content comes out as one `ModelError`, a
single line naming file, line and field; I/O errors (a missing file) stay `OSError`, as callers
expect.
"""

from __future__ import annotations

import datetime as dt
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.events import AliasEvent, NodeEvent
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode
from yaml.parser import Parser
from yaml.reader import Reader
from yaml.resolver import BaseResolver, Resolver
from yaml.scanner import Scanner

from runner.errors import ChallengeError


class ModelError(ChallengeError, ValueError):
    """A problem in one input file, located by file, line and field. Still a ValueError, which older
    callers catch; printed as one line whatever the file held."""

    def __init__(self, path: Path | str, line: int | None, field: str | None, message: str):
        self.path, self.line, self.field, self.message = Path(path), line, field, message
        super().__init__(str(self))

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else f"{self.path}"
        return _one_line(f"{where}: {self.field}: {self.message}" if self.field else f"{where}: {self.message}")


Key = tuple[str | int, ...]


@dataclass(frozen=True)
class Document:
    """Plain data parsed from a file, plus the 1-based line of every node by its key path."""

    path: Path
    data: Any
    lines: dict[Key, int]

    def line(self, key: Key) -> int | None:
        """The line of `key`, or of its nearest written ancestor."""
        while key and key not in self.lines:
            key = key[:-1]
        return self.lines.get(key)

    def error(self, key: Key, message: str) -> ModelError:
        return ModelError(self.path, self.line(key), dotted(key) or None, message)


def dotted(key: Key) -> str:
    out = ""
    for part in key:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out


@dataclass(frozen=True)
class YamlPolicy:
    """What one file may cost the loader. `max_nodes` counts values as the reader sees them, each
    alias as all the values it stands for, so an expansion bomb stops at the bound, not in memory."""

    max_bytes: int
    allow_aliases: bool
    max_aliases: int
    max_depth: int
    max_nodes: int


# Submissions and registrations: a few lines that a participant writes; nothing to share, so no aliases.
PARTICIPANT = YamlPolicy(max_bytes=64 * 1024, allow_aliases=False, max_aliases=0, max_depth=32, max_nodes=20_000)
# Challenge, phase, teams and approvals files: written by organizers, who may share blocks with aliases.
ORGANIZER = YamlPolicy(max_bytes=1024 * 1024, allow_aliases=True, max_aliases=1_000, max_depth=64, max_nodes=100_000)

CORE = "tag:yaml.org,2002:"
LIBYAML_TOO_DEEP = "exceeded maximum nesting depth"  # libyaml's own limit (1000), which it may reach first
MAX_NUMBER_CHARS = 100  # YAML 1.1's base-60 numbers cost quadratic time in their length


def policy_for(path: Path) -> YamlPolicy:
    """PARTICIPANT for a file at a participant's place in the tree (challenges/<c>/submissions/...,
    challenges/<c>/registrations/...), ORGANIZER otherwise: a caller that names no policy still reads
    participants' files as strictly as their pull requests are read."""
    parts = path.parts[:-1]
    for i in range(2, len(parts)):
        if parts[i] in ("submissions", "registrations") and parts[i - 2] == "challenges":
            return PARTICIPANT
    return ORGANIZER


def load_yaml(path: Path, policy: YamlPolicy | None = None, *, libyaml: bool = True) -> Document:
    """Parse one YAML file within `policy` (by default the one `policy_for` picks); whatever is wrong
    with its content becomes a ModelError at the offending line. `libyaml=False` reads it with the
    pure-Python parser, the fallback where PyYAML lacks libyaml (the verdicts are the same)."""
    policy = policy or policy_for(path)
    node = _compose(path, _read_text(path, policy), policy, _LOADER if libyaml else _PyLoader)
    lines: dict[Key, int] = {}
    data = _build(node, (), lines, path) if node is not None else None
    return Document(path, data, lines)


# --- bytes to text ---------------------------------------------------------------------------


def check_size(path: Path | str, size: int, policy: YamlPolicy) -> None:
    """Refuse a file larger than the policy allows, before any of it is parsed."""
    if size > policy.max_bytes:
        raise ModelError(path, None, None, f"is {size} bytes; at most {policy.max_bytes} are allowed")


def _read_text(path: Path, policy: YamlPolicy) -> str:
    """The file's text, read no further than the size bound even if the file grows meanwhile."""
    check_size(path, path.stat().st_size, policy)
    if not path.is_file():
        raise ModelError(path, None, None, "is not a regular file")
    with path.open("rb") as handle:
        raw = handle.read(policy.max_bytes + 1)
    check_size(path, len(raw), policy)
    return _decode(path, raw)


_FORBIDDEN = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ufffe\uffff]")


def _decode(path: Path, raw: bytes) -> str:
    """Strict UTF-8 with no control character but tab and line breaks: the first offender is named
    with its line, instead of the YAML reader failing somewhere without one."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        message = f"is not UTF-8 text: byte 0x{raw[exc.start]:02x} cannot be decoded"
        raise ModelError(path, line, None, message) from None
    if bad := _FORBIDDEN.search(text):
        char = bad.group()
        what = "control character" if unicodedata.category(char) == "Cc" else "character"
        line = text.count("\n", 0, bad.start()) + 1
        raise ModelError(path, line, None, f"{what} U+{ord(char):04X} is not allowed; write text, tabs and newlines")
    return text


def _one_line(text: str) -> str:
    """Escape line breaks and control characters, so an error is one line whatever it quotes."""
    if not any(unicodedata.category(c) in ("Cc", "Zl", "Zp") for c in text):
        return text
    return "".join(c.encode("unicode_escape").decode("ascii") if unicodedata.category(c) in ("Cc", "Zl", "Zp")
                   else c for c in text)


# --- text to nodes, within bounds ------------------------------------------------------------


class _Resolver(BaseResolver):
    """YAML 1.1's implicit types less `<<` (merge) and `=` (value), which no field here means: both
    are read as plain text."""


_Resolver.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag not in (CORE + "merge", CORE + "value")]
    for first, resolvers in Resolver.yaml_implicit_resolvers.items()
}


class _BoundedComposer(Composer):
    """PyYAML's composer, counting as it goes. Composing expands nothing (an alias is a second
    reference to its anchor's node); the cost comes later, when the tree is walked once per
    reference. So each anchor's expanded size and height are recorded when it closes, and every
    alias adds them to the running totals: the walk that follows can never exceed the policy."""

    def bound(self, path: Path, policy: YamlPolicy) -> None:
        self.path, self.policy = path, policy
        self.depth = self.reach = self.expanded = self.aliases = 0
        self.extent: dict[str, tuple[int, int]] = {}  # anchor -> (expanded size, height)
        self.open: dict[str, tuple[int, int]] = {}  # anchor being composed -> (expanded, reach) at its start

    def refuse(self, event: Any, message: str) -> ModelError:
        return ModelError(self.path, _line(event.start_mark), None, message)

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        event = self.peek_event()  # type: ignore[attr-defined]
        if isinstance(event, AliasEvent):
            return self._alias(self.get_event())  # type: ignore[attr-defined]
        self._enter(event)
        node = super().compose_node(parent, index)
        self._leave(event)
        return node

    def _enter(self, event: NodeEvent) -> None:
        self.depth += 1
        self.reach = max(self.reach, self.depth)
        if self.depth > self.policy.max_depth:
            raise self.refuse(event, f"nested deeper than {self.policy.max_depth} levels")
        self._count(event, 1)
        if event.anchor is not None and event.anchor not in self.open:
            self.open[event.anchor] = (self.expanded - 1, self.reach)
            self.reach = self.depth

    def _leave(self, event: NodeEvent) -> None:
        if event.anchor is not None and event.anchor in self.open:
            expanded, reach = self.open.pop(event.anchor)
            self.extent[event.anchor] = (self.expanded - expanded, self.reach - self.depth + 1)
            self.reach = max(reach, self.reach)
        self.depth -= 1

    def _alias(self, event: AliasEvent) -> Node:
        name = event.anchor or ""
        if not self.policy.allow_aliases:
            raise self.refuse(event, "aliases (*name) are not allowed in submission files")
        if name in self.open:
            raise self.refuse(event, f"alias *{name} refers to the block that contains it")
        if name not in self.anchors:
            raise self.refuse(event, f"alias *{name} names no anchor (&{name}) written before it")
        self.aliases += 1
        if self.aliases > self.policy.max_aliases:
            raise self.refuse(event, f"more than {self.policy.max_aliases} aliases")
        size, height = self.extent[name]
        self._count(event, size)
        if self.depth + height > self.policy.max_depth:
            raise self.refuse(event, f"alias *{name} nests values deeper than {self.policy.max_depth} levels")
        self.reach = max(self.reach, self.depth + height)
        return self.anchors[name]

    def _count(self, event: Any, nodes: int) -> None:
        self.expanded += nodes
        if self.expanded > self.policy.max_nodes:
            raise self.refuse(event, f"more than {self.policy.max_nodes} values, counting each alias as the "
                                     "values it stands for")


class _PyLoader(_BoundedComposer, Reader, Scanner, Parser, _Resolver):
    """Pure-Python events, for a PyYAML built without libyaml."""

    def __init__(self, text: str, path: Path, policy: YamlPolicy):
        Reader.__init__(self, text)
        Scanner.__init__(self)
        Parser.__init__(self)
        Composer.__init__(self)
        _Resolver.__init__(self)
        self.bound(path, policy)


_MakeLoader = Callable[[str, Path, YamlPolicy], _BoundedComposer]
_LOADER: _MakeLoader = _PyLoader

if yaml.__with_libyaml__:
    from yaml._yaml import CParser

    class _CLoader(_BoundedComposer, CParser, _Resolver):
        """libyaml's events (a 1 MiB file scans in a fraction of a second), composed in Python so
        every node is counted."""

        def __init__(self, text: str, path: Path, policy: YamlPolicy):
            CParser.__init__(self, text)
            Composer.__init__(self)
            _Resolver.__init__(self)
            self.bound(path, policy)

    _LOADER = _CLoader


def _compose(path: Path, text: str, policy: YamlPolicy, make_loader: _MakeLoader) -> Node | None:
    """The document's node graph; a syntax error becomes a ModelError at its line."""
    loader = make_loader(text, path, policy)
    try:
        return loader.get_single_node()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        if exc.problem == LIBYAML_TOO_DEEP:  # libyaml >= 0.2.6 scans ahead and stops deep nesting before us
            raise ModelError(path, _line(mark), None, f"nested deeper than {policy.max_depth} levels") from None
        message = exc.problem or exc.context or "cannot be parsed"
        if exc.problem and exc.context and not exc.context.startswith("while"):
            message = f"{exc.context}, {exc.problem}"  # "expected a single document..., but found another"
        raise ModelError(path, _line(mark), None, f"invalid YAML: {message}") from None
    except yaml.YAMLError as exc:
        raise ModelError(path, None, None, f"invalid YAML: {exc}") from None


def _line(mark: Any) -> int | None:
    return mark.line + 1 if mark is not None else None


# --- nodes to plain data ---------------------------------------------------------------------


_SAFE = SafeConstructor()
SCALARS: dict[str, Callable[[ScalarNode], Any]] = {
    CORE + "str": _SAFE.construct_yaml_str, CORE + "int": _SAFE.construct_yaml_int,
    CORE + "float": _SAFE.construct_yaml_float, CORE + "bool": _SAFE.construct_yaml_bool,
    CORE + "null": _SAFE.construct_yaml_null, CORE + "timestamp": _SAFE.construct_yaml_timestamp,
}
COLLECTIONS = {MappingNode: CORE + "map", SequenceNode: CORE + "seq"}


def _build(node: Node, key: Key, lines: dict[Key, int], path: Path) -> Any:
    """Plain data from a composed (so bounded) node graph, recording each key's line."""
    lines[key] = node.start_mark.line + 1
    if isinstance(node, MappingNode):
        _check_collection(node, key, path)
        out: dict[str, Any] = {}
        for k_node, v_node in node.value:
            name = _scalar(k_node, key, path) if isinstance(k_node, ScalarNode) else None
            if not isinstance(name, (str, int)):
                raise ModelError(path, k_node.start_mark.line + 1, dotted(key) or None, "keys must be text")
            name = str(name)
            if name in out:
                raise ModelError(path, k_node.start_mark.line + 1, dotted(key + (name,)), "written twice")
            out[name] = _build(v_node, key + (name,), lines, path)
            lines[key + (name,)] = k_node.start_mark.line + 1
        return out
    if isinstance(node, SequenceNode):
        _check_collection(node, key, path)
        return [_build(item, key + (i,), lines, path) for i, item in enumerate(node.value)]
    assert isinstance(node, ScalarNode)
    return _scalar(node, key, path)


def _check_collection(node: MappingNode | SequenceNode, key: Key, path: Path) -> None:
    if node.tag != COLLECTIONS[type(node)]:
        what = "mapping" if isinstance(node, MappingNode) else "list"
        raise _tag_error(node, key, path, f"{_tag_name(node.tag)} cannot tag a {what}")


def _scalar(node: ScalarNode, key: Key, path: Path) -> Any:
    """One scalar by its standard tag; a value its tag cannot read is a located refusal."""
    construct = SCALARS.get(node.tag)
    if construct is None:
        raise _tag_error(node, key, path, f"{_tag_name(node.tag)} cannot tag a single value")
    if node.tag in (CORE + "int", CORE + "float") and len(node.value) > MAX_NUMBER_CHARS:
        raise ModelError(path, node.start_mark.line + 1, dotted(key) or None,
                         f"a number of {len(node.value)} characters; at most {MAX_NUMBER_CHARS}")
    try:
        return construct(node)
    # A hostile value breaks PyYAML's constructors in several ways (int('abc'), a missing bool
    # word, a timestamp regex that did not match); each is the same refusal.
    except (ArithmeticError, AttributeError, LookupError, TypeError, ValueError, yaml.YAMLError):
        raise ModelError(path, node.start_mark.line + 1, dotted(key) or None,
                         f"{_shorten(node.value)} is not a valid {_tag_name(node.tag)}") from None


def _tag_error(node: Node, key: Key, path: Path, message: str) -> ModelError:
    """A tag outside the standard set is refused by name, whatever it claims to build."""
    if node.tag not in SCALARS and node.tag not in COLLECTIONS.values():
        message = (f"tag {_tag_name(node.tag)} is not allowed; only YAML's standard tags are "
                   "(!!str, !!int, !!float, !!bool, !!null, !!timestamp, !!seq, !!map)")
    return ModelError(path, node.start_mark.line + 1, dotted(key) or None, message)


def _tag_name(tag: str) -> str:
    name = "!!" + tag[len(CORE):] if tag.startswith(CORE) else tag
    return name if len(name) <= 60 else name[:57] + "..."


def _shorten(value: str) -> str:
    return repr(value) if len(value) <= 40 else repr(value[:37]) + "..."


def as_utc(value: dt.datetime | dt.date) -> dt.datetime:
    """YAML dates and naive times are read as UTC, the one zone the whole repository uses."""
    if not isinstance(value, dt.datetime):
        value = dt.datetime(value.year, value.month, value.day)
    return value if value.tzinfo else value.replace(tzinfo=dt.UTC)
