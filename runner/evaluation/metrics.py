"""JSON a container wrote (metrics.json, a grand-challenge value output), read without trusting it.

A container can write anything: a link, a huge file, JSON nested a thousand levels deep (which
overflows the recursion of anything that walks it: the result writer, the site), or an integer of
5,000 digits (which Python refuses to parse, and no float holds). Each is a failed result with one
line saying why, never an exception that stops the runner and every submission queued behind it.
NaN and infinities are stored as null, as grand-challenge does.
"""

from __future__ import annotations

import json
import math
import os
import stat
from pathlib import Path
from typing import Any

METRICS_MAX_BYTES = 16 * 1024**2
MAX_DEPTH = 32  # metrics.json is {"case": {case: {metric: {stat: value}}}, ...}: a handful of levels
MAX_DIGITS = 30  # wider than any count or identifier a metric holds; longer is a number no float keeps


class UnreadableJson(ValueError):
    """JSON that was refused; the message names the file and says why, for the participant."""


def read_json(path: Path, *, name: str, max_bytes: int = METRICS_MAX_BYTES) -> Any:
    """Read `path` strictly: a regular file (no link), at most `max_bytes`, parseable JSON of bounded
    depth and integer width; non-finite numbers become None. `name` is how messages call the file."""
    try:
        info = path.lstat()
    except FileNotFoundError:
        raise UnreadableJson(f"it wrote no {name}") from None
    if not stat.S_ISREG(info.st_mode):
        raise UnreadableJson(f"{name} is not a regular file")
    if info.st_size > max_bytes:
        raise UnreadableJson(f"{Path(name).name} is larger than {max_bytes} bytes")
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd, "rb") as handle:
        text = handle.read().decode("utf-8", errors="replace")
    return _finite(_checked_depth(_parse(text, Path(name).name), Path(name).name))


def _parse(text: str, name: str) -> Any:
    try:
        return json.loads(text, parse_constant=lambda _: None, parse_int=lambda digits: _integer(digits, name))
    except json.JSONDecodeError as exc:
        raise UnreadableJson(f"{name} is not valid JSON ({exc.msg}, line {exc.lineno})") from None
    except RecursionError:
        raise UnreadableJson(f"{name} is nested more than {MAX_DEPTH} levels deep") from None


def _integer(digits: str, name: str) -> int:
    if len(digits.lstrip("-")) > MAX_DIGITS:
        raise UnreadableJson(f"{name} holds an integer of {len(digits.lstrip('-'))} digits (at most {MAX_DIGITS})")
    return int(digits)


def _checked_depth(value: Any, name: str) -> Any:
    """`value` if no container in it is nested deeper than MAX_DEPTH (checked without recursion)."""
    pending = [(value, 1)]
    while pending:
        item, depth = pending.pop()
        if isinstance(item, dict | list):
            if depth > MAX_DEPTH:
                raise UnreadableJson(f"{name} is nested more than {MAX_DEPTH} levels deep")
            children = item.values() if isinstance(item, dict) else item
            pending.extend((child, depth + 1) for child in children)
    return value


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def read_metrics(folder: Path) -> dict[str, Any]:
    """/output/metrics.json of an evaluation: a JSON object, read as `read_json` reads."""
    data = read_json(folder / "metrics.json", name="/output/metrics.json")
    if not isinstance(data, dict):
        raise UnreadableJson("metrics.json must hold a JSON object")
    return data
