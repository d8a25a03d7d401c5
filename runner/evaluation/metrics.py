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
from collections.abc import Iterator
from pathlib import Path
from typing import Any

METRICS_MAX_BYTES = 16 * 1024**2
MAX_DEPTH = 32  # metrics.json is {"case": {case: {metric: {stat: value}}}, ...}: a handful of levels
MAX_DIGITS = 30  # wider than any count or identifier a metric holds; longer is a number no float keeps
_DONE = object()  # the end of a level, in _checked_depth


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
    return _checked_depth(_parse(text, Path(name).name), Path(name).name)


def _parse(text: str, name: str) -> Any:
    try:
        return json.loads(text, parse_constant=lambda _: None, parse_float=_finite,
                          parse_int=lambda digits: _integer(digits, name))
    except json.JSONDecodeError as exc:
        raise UnreadableJson(f"{name} is not valid JSON ({exc.msg}, line {exc.lineno})") from None
    except RecursionError:
        raise UnreadableJson(f"{name} is nested more than {MAX_DEPTH} levels deep") from None


def _integer(digits: str, name: str) -> int:
    if len(digits.lstrip("-")) > MAX_DIGITS:
        raise UnreadableJson(f"{name} holds an integer of {len(digits.lstrip('-'))} digits (at most {MAX_DIGITS})")
    return int(digits)


def _checked_depth(value: Any, name: str) -> Any:
    """`value` if no container in it is nested deeper than MAX_DEPTH (checked without recursion). The walk
    keeps one iterator per level it is in, never a list of every element: a flat list of millions
    of numbers (16 MiB of "0,") costs no more to check than to hold."""
    pending: list[Iterator[Any]] = [iter((value,))]
    while pending:
        item = next(pending[-1], _DONE)
        if item is _DONE:
            pending.pop()
        elif isinstance(item, dict | list):
            if len(pending) > MAX_DEPTH:
                raise UnreadableJson(f"{name} is nested more than {MAX_DEPTH} levels deep")
            pending.append(iter(item.values() if isinstance(item, dict) else item))
    return value


def _finite(digits: str) -> float | None:
    """A JSON number with a fraction or exponent; one past a float's range (1e400) is null, as NaN is.
    Done while parsing, so no second copy of the value is built to replace them."""
    number = float(digits)
    return number if math.isfinite(number) else None


def read_metrics(folder: Path) -> dict[str, Any]:
    """/output/metrics.json of an evaluation: a JSON object, read as `read_json` reads."""
    data = read_json(folder / "metrics.json", name="/output/metrics.json")
    if not isinstance(data, dict):
        raise UnreadableJson("metrics.json must hold a JSON object")
    return data
