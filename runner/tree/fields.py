"""Typed reads from a located mapping: each wrong or unknown field becomes a located ModelError."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable
from typing import Any, TypeVar

from runner.tree.located import Document, Key, ModelError, as_utc

T = TypeVar("T")
_MISSING = object()
SIZE = re.compile(r"^(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?$", re.IGNORECASE)


class Fields:
    """A view of one mapping inside a Document (the whole file, or a nested block)."""

    def __init__(self, doc: Document, key: Key = (), data: Any = _MISSING):
        self.doc, self.key = doc, key
        self.data = doc.data if data is _MISSING else data
        if self.data is None:
            self.data = {}
        if not isinstance(self.data, dict):
            raise doc.error(key, f"expected a mapping of fields, got {_kind(self.data)}")

    def error(self, name: str | int | None, message: str) -> ModelError:
        return self.doc.error(self.key + ((name,) if name is not None else ()), message)

    def allow_only(self, names: Iterable[str]) -> None:
        """Refuse unknown fields: a typo must not silently fall back to a default."""
        allowed = set(names)
        for name in self.data:
            if name not in allowed:
                hint = ", ".join(sorted(allowed))
                raise self.error(name, f"unknown field (allowed here: {hint})")

    def get(self, name: str, kind: type[T] | tuple[type, ...], default: Any = _MISSING) -> T:
        if name not in self.data or self.data[name] is None:
            if default is _MISSING:
                raise self.error(name, "is required")
            return default
        value = self.data[name]
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            return float(value)  # type: ignore[return-value]
        if isinstance(value, bool) and kind is not bool:
            raise self.error(name, f"expected {_name(kind)}, got a yes/no value")
        if not isinstance(value, kind):
            hint = "; put it in quotes" if kind is str and isinstance(value, (int, float)) else ""
            raise self.error(name, f"expected {_name(kind)}, got {_kind(value)}{hint}")
        return value

    def text(self, name: str, default: Any = _MISSING, *, max_len: int | None = None,
             pattern: re.Pattern[str] | None = None, what: str = "") -> str:
        value = self.get(name, str, default)
        if value is default:
            return value
        if max_len is not None and len(value) > max_len:
            raise self.error(name, f"is {len(value)} characters long; at most {max_len} allowed")
        if pattern is not None and not pattern.fullmatch(value):
            raise self.error(name, f"{value!r} is not {what or 'of the expected form'}")
        return value

    def choice(self, name: str, options: Iterable[str], default: Any = _MISSING) -> str:
        options = list(options)
        value = self.get(name, str, default)
        if value is not default and value not in options:
            raise self.error(name, f"{value!r} is not one of: {', '.join(options)}")
        return value

    def choices(self, name: str, options: Iterable[str]) -> tuple[str, ...]:
        options = list(options)
        values = self.strings(name)
        for i, value in enumerate(values):
            if value not in options:
                raise self.doc.error(self.key + (name, i), f"{value!r} is not one of: {', '.join(options)}")
        return values

    def strings(self, name: str) -> tuple[str, ...]:
        values = self.get(name, list, [])
        for i, value in enumerate(values):
            if not isinstance(value, str):
                raise self.doc.error(self.key + (name, i), f"expected text, got {_kind(value)}")
        return tuple(values)

    def integer(self, name: str, default: Any = _MISSING, *, minimum: int | None = None,
                maximum: int | None = None) -> int:
        value = self.get(name, int, default)
        if value is default:
            return value
        if minimum is not None and value < minimum:
            raise self.error(name, f"must be at least {minimum}, got {value}")
        if maximum is not None and value > maximum:
            raise self.error(name, f"must be at most {maximum}, got {value}")
        return value

    def number(self, name: str, default: Any = _MISSING, *, minimum: float | None = None) -> float:
        value = self.get(name, float, default)
        if value is not default and minimum is not None and value < minimum:
            raise self.error(name, f"must be at least {minimum}, got {value}")
        return value

    def time(self, name: str, default: Any = _MISSING) -> dt.datetime:
        value = self.get(name, (dt.datetime, dt.date), default)
        return value if value is default else as_utc(value)

    def date(self, name: str, default: Any = _MISSING) -> dt.date:
        value = self.get(name, (dt.datetime, dt.date), default)
        if isinstance(value, dt.datetime):
            return value.date()
        return value

    def size(self, name: str, default: Any = _MISSING) -> int:
        """Bytes from `512m`, `2g`, `2GiB` or a plain number of bytes."""
        value = self.get(name, (str, int), default)
        if value is default or isinstance(value, int):
            return value
        match = SIZE.fullmatch(value.strip())
        if not match:
            raise self.error(name, f"{value!r} is not a size such as 512m or 2g")
        scale = 1024 ** " kmgt".index(match.group(2).lower() or " ")
        return int(float(match.group(1)) * scale)

    def block(self, name: str, default: Any = _MISSING) -> Fields:
        if name not in self.data or self.data[name] is None:
            if default is _MISSING:
                raise self.error(name, "is required")
            return Fields(self.doc, self.key + (name,), {})
        return Fields(self.doc, self.key + (name,), self.data[name])

    def blocks(self, name: str) -> list[Fields]:
        items = self.get(name, list, [])
        return [Fields(self.doc, self.key + (name, i), item) for i, item in enumerate(items)]


def _name(kind: type | tuple[type, ...]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    names = {str: "text", int: "a whole number", float: "a number", bool: "true or false",
             list: "a list", dict: "a mapping", dt.datetime: "a date and time", dt.date: "a date"}
    return " or ".join(names.get(k, k.__name__) for k in kinds)


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return f"{str(value).lower()}"
    return f"{_name(type(value))} ({value!r})" if not isinstance(value, (dict, list)) else _name(type(value))
