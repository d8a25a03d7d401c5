"""Numbers read from metrics documents by JSONPath, as grand-challenge's score paths do."""

from __future__ import annotations

import math
import re
from functools import cache
from typing import Any

from jsonpath_ng.jsonpath import JSONPath
from jsonpath_ng.parser import parse

PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")


@cache
def compiled(path: str) -> JSONPath:
    return parse(path)


def lookup(document: Any, path: str | None) -> float | None:
    """The number at a JSONPath, or None when absent, not a number, or not finite."""
    if path is None or document is None:
        return None
    keys = _plain_keys(path)
    if keys is not None:  # most score paths are plain dotted names: walk the dicts, 20x faster
        for key in keys:
            if not isinstance(document, dict) or key not in document:
                return None
            document = document[key]
        return _number(document)
    matches = compiled(path).find(document)
    return _number(matches[0].value) if matches else None


@cache
def _plain_keys(path: str) -> tuple[str, ...] | None:
    return tuple(path.split(".")) if PLAIN.fullmatch(path) else None


def lookup_all(document: Any, path: str) -> list[tuple[str, float]]:
    """Every (where, number) a JSONPath with wildcards matches, e.g. each case of `case.*.dice`;
    a match that is not a finite number is NaN, a missing value for the ranking methods."""
    out = []
    for match in compiled(path).find(document or {}):
        value = _number(match.value)
        out.append((str(match.full_path), math.nan if value is None else value))
    return out


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)
