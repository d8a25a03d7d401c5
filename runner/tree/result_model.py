"""Typed records of results/<phase>/<participant>/<id>.json, which the runner alone writes: the `Result`,
each container run's `RunRecord` with the `MEASUREMENTS` the sandbox takes, and the result's `Provenance`;
the record as JSON (`Result.document`, `Result.to_json`) and read back from its bytes (`parse_result`);
and what score paths read of it (`scored_document`).

A result is no file people write, so its records are plain dataclasses, checked as they are read rather
than validated against `meta` declarations; `Result` and `RunRecord` are mutable (`model` says why).

Knows: runner.errors, `located` (ModelError, times in UTC), `submission_model` (the details a result copies
of its submission). Must not import `loading` or `phase_model`.
"""

from __future__ import annotations

import datetime as dt
import json
import statistics
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Literal

import orjson

from runner.errors import printable
from runner.tree.located import ModelError, as_utc
from runner.tree.submission_model import LATER_DETAILS, SubmissionDetails

# --- results/<phase>/<participant>/<id>.json (written by the runner) --------------------------


@dataclass(frozen=True)
class Measurement:
    """A number the runner measures of each algorithm run. Score paths read it under `runner`: the
    whole job's (`whole` folds a per-case job's runs into one), and in per-case mode each run's
    (`runner.cases`) and their SUMMARIES (`runner.aggregates`). The field reference lists them."""

    name: str  # its field in RunRecord and in each run's record
    meaning: str
    whole: Literal["sum", "max"]


MEASUREMENTS = (
    Measurement("wall_time_s", "seconds the container ran", "sum"),
    Measurement("peak_memory_bytes", "the container's peak memory in bytes (its cgroup's high-water mark)", "max"),
    Measurement("gpu_memory_max_bytes", "its stable maximum of GPU memory in bytes, sampled through NVML every "
                "0.1 s (phases with algorithm_resources.gpus)", "max"),
    Measurement("gpu_memory_auc_byte_s", "its GPU memory's area under the curve in byte-seconds (phases with "
                "algorithm_resources.gpus)", "sum"),
)
# Each measurement's summaries over a per-case job's runs, by their names in runner.aggregates.<measurement>.<name>.
SUMMARIES: dict[str, Callable[[list[float]], float]] = {"mean": statistics.fmean, "max": max, "sum": sum}


@dataclass
class RunRecord:
    """What the sandbox saw of a container's run(s), as stored in a result. In per-case mode
    `cases` holds each run's measurements and `aggregates` their SUMMARIES, so a leaderboard
    can rank on them (score path `runner.aggregates.wall_time_s.mean`)."""

    image: str
    image_id: str | None = None
    exit_code: int | None = None
    wall_time_s: float | None = None
    timed_out: bool = False
    oom_killed: bool = False
    peak_memory_bytes: int | None = None
    gpu_memory_max_bytes: int | None = None
    gpu_memory_auc_byte_s: float | None = None
    reused: bool = False
    cases: dict[str, dict[str, Any]] | None = None
    aggregates: dict[str, dict[str, float]] | None = None
    gpu: str | None = None  # the GPU(s) a GPU phase's run got ("0"), or "none (cpu fallback)"
    last_line: str | None = None  # the last line it wrote to stderr (training: what the participant sees)
    resumes: int = 0  # training: how often it started again from its checkpoints after the runner stopped
    model_sha256: str | None = None  # training: the model folder it wrote (tree hash), also kept on the runner


@dataclass(frozen=True)
class Provenance:
    """What produced a result, as the runner saw it when it evaluated; its signature covers it all, so a
    reader can tell which data and which evaluation made each leaderboard row (`tree.verification`)."""

    submission_blob: str  # the submission file's git blob id, as the runner read it
    phase_blob: str  # the phase file's git blob id then: its rules, windows and evaluation settings
    algorithm: str | None  # what ran or was scored: an image digest or ID, an archive's or predictions' sha256
    evaluation_image: str  # the ID of the image that scored it
    evaluation_context: str | None  # sha256 of the build context it was built from (None: a pinned image)
    data: dict[str, str]  # each hidden data folder's content hash: inputs, ground-truth, training
    data_manifest: str  # one hash over `data`: rows are comparable when theirs are equal
    runner_commit: str | None  # the repository commit the runner ran from (its package installs from it)
    signed_at: str  # when the runner signed the record: the time its key must be valid at

    def __post_init__(self) -> None:
        """Text where text is meant: a record edited by hand must fail to load, not fail a page later."""
        for name, value in vars(self).items():
            optional = name in ("algorithm", "evaluation_context", "runner_commit")
            if name == "data":
                if not isinstance(value, dict) or not all(isinstance(x, str) for item in value.items() for x in item):
                    raise TypeError("provenance.data must map names to text")
            elif not (isinstance(value, str) or (optional and value is None)):
                raise TypeError(f"provenance.{name} must be text")

    def evaluation(self) -> str:
        """What names the evaluation: its build context's hash, else the pinned image's ID."""
        return self.evaluation_context or self.evaluation_image


@dataclass
class Result:
    """results/<phase>/<participant>/<id>.json, written by the runner only."""

    challenge: str
    phase: str
    participant: str
    submission: str
    status: Literal["succeeded", "failed"]
    created_at: str
    started_at: str | None  # None in a public record that withholds measurements (it gives the running time)
    finished_at: str | None
    metrics: dict[str, Any] | None = None
    error: str | None = None
    algorithm: RunRecord | None = None
    evaluation: RunRecord | None = None
    training: RunRecord | None = None  # training phases: the training run (its resumes folded in)
    logs: dict[str, str] | None = None  # full logs, only in debugging phases (the participant's own)
    attempts: int = 1  # >1 when transient runner failures were retried
    runner_version: str = ""
    # In a public record: what the phase withholds of this result, and until when. The whole result is
    # then sealed beside it (<id>.sealed.age) for the challenge's recipients.
    withheld: str | None = None
    details: SubmissionDetails | None = None  # the submission's title, links, ... (see SubmissionDetails)
    provenance: Provenance | None = None  # what produced it (results written before provenance have none)
    signature: str | None = None  # the runner's SSH signature of the rest (`tree.signing`)

    def without_logs(self) -> Result:
        """This result less its logs: the full logs, and each run's last stderr line (a piece of them,
        public only as a failure's error). What the runner keeps whole, only it and the participant read."""
        runs = (self.algorithm, self.evaluation, self.training)
        if self.logs is None and all(run is None or run.last_line is None for run in runs):
            return self  # most results: nothing to take out, and a site build asks for 60,000 of them

        def quiet(run: RunRecord | None) -> RunRecord | None:
            return replace(run, last_line=None) if run else None

        return replace(self, logs=None, algorithm=quiet(self.algorithm), evaluation=quiet(self.evaluation),
                       training=quiet(self.training))

    def to_json(self) -> str:
        """The record as JSON every reader takes: text that is not valid Unicode (a lone surrogate from a
        file name or an evaluation's JSON) is written as `printable` shows it, never as an escape that
        strict readers refuse (one such record once stopped every build and every review of its phase)."""
        return json.dumps(self.document(), indent=2, sort_keys=False, allow_nan=False) + "\n"

    def document(self) -> dict[str, Any]:
        """The record as its JSON file holds it: what `to_json` writes and a signature covers."""
        data: dict[str, Any] = _valid_text(asdict(self))
        for name in OMITTED_WHEN_NONE:  # a result of another phase, or of an older runner, reads as it did
            if data[name] is None:
                del data[name]
        if data["details"]:
            data["details"] = {k: v for k, v in data["details"].items() if v or k not in LATER_DETAILS}
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Result:
        runs = {k: RunRecord(**data[k]) if data.get(k) else None for k in ("algorithm", "evaluation", "training")}
        details = SubmissionDetails(**data["details"]) if data.get("details") else None
        provenance = Provenance(**data["provenance"]) if data.get("provenance") else None
        return cls(**{**data, **runs, "details": details, "provenance": provenance})


OMITTED_WHEN_NONE = ("withheld", "training", "provenance", "signature")


def scored_document(result: Result) -> dict[str, Any]:
    """What score paths read: the evaluation's metrics, plus the runner's own measurements
    (time, memory, per case) under `runner`, so a leaderboard can rank on them."""
    document = dict(result.metrics or {})
    if result.algorithm is not None and "runner" not in document:
        document["runner"] = vars(result.algorithm)  # read-only here: no copy of every case
    return document


def _valid_text(value: Any) -> Any:
    """`value` with every string (keys too) encodable as UTF-8."""
    if isinstance(value, str):
        return value if value.isascii() or _encodable(value) else printable(value, limit=len(value) * 8)
    if isinstance(value, dict):
        return {_valid_text(k): _valid_text(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_valid_text(v) for v in value]
    return value


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
        return True
    except UnicodeEncodeError:
        return False


def load_result(path: Path) -> Result:
    return parse_result(path.read_bytes(), path)


def parse_result(text: bytes, path: Path) -> Result:
    """A result record's bytes (a public record's, or a sealed one's once opened); ModelError naming `path`."""
    try:
        data = orjson.loads(text)  # orjson: a build reads thousands, 4x faster
        if not isinstance(data, dict):
            raise ModelError(path, None, None, "not a result record: not a JSON object")
        result = Result.from_dict(data)
    except json.JSONDecodeError as exc:
        raise ModelError(path, exc.lineno, None, f"invalid JSON: {exc.msg}") from None
    except TypeError as exc:
        raise ModelError(path, None, None, f"not a result record: {exc}") from None
    if result.status not in ("succeeded", "failed"):
        raise ModelError(path, None, "status", f"{result.status!r} is not succeeded or failed")
    if result.metrics is not None and not isinstance(result.metrics, dict):  # every score path reads into it
        raise ModelError(path, None, "metrics", f"must be a JSON object, not {type(result.metrics).__name__}")
    return result


def parse_time(text: str) -> dt.datetime:
    return as_utc(dt.datetime.fromisoformat(text))
