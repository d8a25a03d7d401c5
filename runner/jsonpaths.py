"""Numbers read from metrics documents by JSONPath, as grand-challenge's score paths do."""

from __future__ import annotations

import math
from functools import cache
from typing import Any

import jsonpath_ng


@cache
def compiled(path: str):
    return jsonpath_ng.parse(path)


def lookup(document: Any, path: str | None) -> float | None:
    """The number at a JSONPath, or None when absent, not a number, or not finite."""
    if path is None or document is None:
        return None
    matches = compiled(path).find(document)
    if not matches:
        return None
    value = matches[0].value
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)
