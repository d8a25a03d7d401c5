"""The data files beside the site's pages: how they are encoded, and where a phase's result records sit.

The data files are most of a site's bytes (GitHub Pages takes at most 1 GB). A small phase publishes
each result as `<participant>/<submission>.json`, and its table and bootstrap as JSON, readable at
plain URLs. A phase with more than SHARD_OVER results gzips its table and bootstrap (`data_file`), and
publishes its results in hash-addressed shards instead, `shards/<k>.json.gz`, each a
gzipped JSON object {participant/submission: record} of about SHARD_SIZE records: the number of
files grows with the results by 1/SHARD_SIZE, a new result rewrites one shard, and gzip takes the
records to about a fifth (their keys and the phase's shared provenance repeat). The result viewer
(site/assets/result.js) finds a record's shard by the same hash, `shard_of`, from the shard count
the page gives it, and decompresses it in the browser (DecompressionStream).

A phase's dated snapshots of its table are one file, HISTORY_FILE ({"snapshots": [...]}, newest
first; `snapshots_file`), not one per day: twenty days a phase made three quarters of a 300-challenge
site's files, which each builder lists and checks on every build, for 1.5 KB each. A reader's first
snapshot fetches them all (about 9 KB gzipped for twenty days of 100 rows: gzip shares their names).
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson

SHARD_OVER = 50  # results a phase publishes one file each, at most
SHARD_SIZE = 256  # records a shard holds on average: one fetch of about 100 KB for a result page
# A record larger than this (a container may write 16 MiB of metrics) is published in a file of its own,
# which its shard names under ALONE: the 255 other results of the shard are not slowed by it.
ALONE_OVER, ALONE = 64 * 1024, "$file"
HISTORY_FILE = "history.json.gz"  # a phase's snapshots, beside its table (`snapshots_file`)
_FNV_OFFSET, _FNV_PRIME, _MASK = 0x811C9DC5, 0x01000193, 0xFFFFFFFF


def json_bytes(data: Any) -> bytes:
    """Compact UTF-8 JSON, a non-finite number written as null. orjson: the data files are written by the
    hundred thousand, five times faster than by the json module."""
    try:
        return orjson.dumps(data, default=vars, option=orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS)
    except TypeError:  # what orjson does not write (an integer past 64 bits in a metric): as the json module does
        return json.dumps(data, separators=(",", ":"), ensure_ascii=False, allow_nan=False, default=vars).encode()


def gzipped(data: bytes) -> bytes:
    """`data` gzipped with no time in its header, so the same data gives the same bytes (an unchanged
    shard is not written again) and one fetch decompresses it in the browser."""
    return gzip.compress(data, compresslevel=6, mtime=0)


def data_suffix(records: int) -> str:
    """How a phase of `records` results publishes its table and bootstrap: as .json, or gzipped as .json.gz
    past SHARD_OVER results (a fifth of the bytes; the scripts read both)."""
    return ".json" if records <= SHARD_OVER else ".json.gz"


def data_file(stem: str, data: bytes, *, records: int) -> tuple[str, bytes]:
    """The name and bytes of a phase's data file `stem` holding the JSON `data`, as `data_suffix` says."""
    suffix = data_suffix(records)
    return f"{stem}{suffix}", data if suffix == ".json" else gzipped(data)


def snapshots_file(snapshots: list[bytes]) -> bytes:
    """A phase's history file from its snapshots, each one's JSON object as bytes, newest first: joined, not
    parsed and written again (each is kept in the page memo as it was ranked)."""
    return gzipped(b'{"snapshots":[' + b",".join(snapshots) + b"]}")


def read_snapshot(path: Path, day: str) -> dict[str, Any] | None:
    """The snapshot of `day` (ISO) in the history file at `path`, as the leaderboard's script finds it; None
    if it holds none of that day."""
    found: list[dict[str, Any]] = read_data(path)["snapshots"]
    return next((snap for snap in found if snap["as_of"] == day), None)


def shard_count(records: int) -> int:
    """How many shards a phase of `records` results uses: 0 (one file each) up to SHARD_OVER, else the
    power of two that keeps a shard near SHARD_SIZE records (it doubles as the phase grows)."""
    if records <= SHARD_OVER:
        return 0
    count = 1
    while count * SHARD_SIZE < records:
        count *= 2
    return count


def shard_of(key: str, count: int) -> int:
    """The shard of the record `participant/submission`: FNV-1a (32 bits) of its UTF-8 bytes, mixed by
    MurmurHash3's finaliser (FNV's low bits follow the bytes' parity, and a power-of-two count reads
    only those), modulo `count`; result.js computes the same."""
    h = _FNV_OFFSET
    for byte in key.encode():
        h = ((h ^ byte) * _FNV_PRIME) & _MASK
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & _MASK
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & _MASK
    h ^= h >> 16
    return h % count


def result_files(folder: Path, records: Mapping[str, dict[str, Any]]) -> tuple[int, dict[Path, bytes]]:
    """A phase's result records (participant/submission -> record) as data files under `folder`, and
    the shard count the viewer needs (0: one plain file per record)."""
    count = shard_count(len(records))
    if not count:
        return 0, {folder / f"{key}.json": json_bytes(record) for key, record in records.items()}
    shards: list[dict[str, dict[str, Any]]] = [{} for _ in range(count)]
    alone: dict[Path, bytes] = {}
    for key, record in records.items():
        data = json_bytes(record)
        if len(data) > ALONE_OVER:  # its shard names its own file instead
            alone[folder / f"{key}.json"] = data
            record = {ALONE: f"{key}.json"}
        shards[shard_of(key, count)][key] = record
    return count, alone | {folder / "shards" / f"{k}.json.gz": gzipped(json_bytes(shard))
                           for k, shard in enumerate(shards)}


def read_data(path: Path) -> Any:
    """A data file as the site's scripts read it: JSON, gunzipped where it is gzipped."""
    return read_data_bytes(path.read_bytes())


def read_data_bytes(data: bytes) -> Any:
    return json.loads(gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data)


def read_result(folder: Path, key: str) -> dict[str, Any] | None:
    """The record `participant/submission` as published under `folder` (staged or built), or None: what
    the viewer fetches, for tools and tests that read a site as a reader does."""
    plain = folder / f"{key}.json"
    if plain.is_file():
        found: dict[str, Any] = read_data(plain)
        return found
    shards = sorted(folder.glob("shards/*.json.gz"))
    if not shards:
        return None
    shard: dict[str, dict[str, Any]] = read_data(folder / "shards" / f"{shard_of(key, len(shards))}.json.gz")
    record = shard.get(key)
    if record is not None and record.get(ALONE) == f"{key}.json":
        alone: dict[str, Any] = read_data(folder / f"{key}.json")
        return alone
    return record
