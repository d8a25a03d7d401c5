"""YAML documents that remember where each field was written, so errors can name file and line."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml


class ModelError(ValueError):
    """A problem in one input file, located by file, line and field."""

    def __init__(self, path: Path | str, line: int | None, field: str | None, message: str):
        self.path, self.line, self.field, self.message = Path(path), line, field, message
        super().__init__(str(self))

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else f"{self.path}"
        return f"{where}: {self.field}: {self.message}" if self.field else f"{where}: {self.message}"


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


def load_yaml(path: Path) -> Document:
    """Parse one YAML file; syntax errors become a ModelError at the offending line."""
    text = path.read_text(encoding="utf-8")
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        raise ModelError(path, line, None, f"invalid YAML: {exc.problem or exc}") from None
    lines: dict[Key, int] = {}
    data = _build(node, (), lines, path) if node is not None else None
    return Document(path, data, lines)


def _build(node: yaml.Node, key: Key, lines: dict[Key, int], path: Path) -> Any:
    lines[key] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        out: dict[str, Any] = {}
        for k_node, v_node in node.value:
            name = _scalar(k_node)
            if not isinstance(name, (str, int)):
                raise ModelError(path, k_node.start_mark.line + 1, dotted(key) or None, "keys must be text")
            name = str(name)
            if name in out:
                raise ModelError(path, k_node.start_mark.line + 1, dotted(key + (name,)), "written twice")
            out[name] = _build(v_node, key + (name,), lines, path)
            lines[key + (name,)] = k_node.start_mark.line + 1
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_build(item, key + (i,), lines, path) for i, item in enumerate(node.value)]
    return _scalar(node)


def _scalar(node: yaml.Node) -> Any:
    return yaml.constructor.SafeConstructor().construct_object(node, deep=True)


def as_utc(value: dt.datetime | dt.date) -> dt.datetime:
    """YAML dates and naive times are read as UTC, the one zone the whole repository uses."""
    if not isinstance(value, dt.datetime):
        value = dt.datetime(value.year, value.month, value.day)
    return value if value.tzinfo else value.replace(tzinfo=dt.UTC)
