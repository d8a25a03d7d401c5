"""grand-challenge.org's container layout, so its algorithm and evaluation containers run unchanged.

A phase chooses it with `algorithm_interface: grand-challenge` and/or `evaluation_interface:
grand-challenge`. What is implemented, and where it comes from:

Algorithm containers (one job per case; grand-challenge runs one job per archive item):
  - /input/<relative_path> for each input socket: an image socket's folder holds its one image file
    (/input/images/color-fundus/<file>.mha), a value socket is a JSON file holding the value
    (/input/age-in-months.json), a file socket is the file itself.
  - /input/inputs.json lists the job's input values (each with its socket), as grand-challenge's
    backends add it to every job.
  - outputs are read from /output/<relative_path> per output socket: an image folder must hold
    exactly one image (.mha, .mhd or .tif/.tiff; NIfTI too), a value file must be valid JSON (NaN and
    infinities become null), a file must exist. Messages follow grand-challenge's ("Output file
    'x.json' was not produced", "The output file 'x.json' is too large").
  - value outputs are bounded (JOB_VALUES_MAX_BYTES, VALUES_MAX_BYTES): the runner parses them and
    writes them into predictions.json, where grand-challenge keeps a value "in the database"; a JSON
    output too large for that is a file socket (`kind: file`), handed over unread, as grand-challenge
    stores a large JSON output as a file.
  On the runner, each case of `<data-root>/<challenge>/<phase>/inputs/` is a folder laid out as that
  job's /input (grand-challenge's archive items, as its challenge pack uploads them:
  <case>/images/<name>/<file>, <case>/<name>.json).

Evaluation containers:
  - /input/predictions.json: a list with one record per algorithm job (compact JSON, a job a line,
    written as each job finishes): pk, inputs, outputs, status
    ("Succeeded"), exec_duration (ISO 8601, measured by the runner), started_at and completed_at (ISO
    8601, UTC: when the runner started the job's container and had its outputs), invoke_duration
    (null) and the other serializer fields (url, api_url, algorithm_image, hanging_protocol, ...),
    mostly null here.
  - each input and output value is {"pk", "interface", "socket", "value", "file", "image"}: the socket
    (title, description, slug, kind, pk, default_value, example_value, super_kind, relative_path,
    overlay_segments, look_up_table, and the is_*_kind flags) appears under both "interface"
    (grand-challenge's serializer) and "socket" (its newer challenge pack), so evaluation code of
    either generation reads it; "image" is {"pk", "name"} with the image file's name, "value" the
    JSON value of a value socket. "file" is where the container reading the record opens a file
    socket's file (grand-challenge gives a URL to it; there is no network here): an output's
    /input/<job pk>/output/<relative_path>, an input's /input/<relative_path> in inputs.json, and null
    for a job's inputs in predictions.json (the evaluation does not get them, as on grand-challenge).
  - /input/<job pk>/output/<relative_path>: each job's outputs, exactly as the job wrote them.
  - the ground truth at /opt/ml/input/data/ground_truth/ (read-only), /output/metrics.json written.
  Job pks are UUIDs derived from the submission and the case, so a re-run names its jobs the same.

Sources (read, not copied): grand-challenge.org's documentation, "How are algorithm results provided
to the evaluation container?" (https://grand-challenge.org/documentation/faq-challenges-evaluation-
algorithm-results-to-container/); comic/grand-challenge.org: app/grandchallenge/evaluation/tasks.py
(set_evaluation_inputs: predictions.json from JobSerializer, outputs under "<job pk>/output/"),
app/grandchallenge/components/backends/base.py (provisioning by super kind, inputs.json, reading
outputs), app/grandchallenge/components/serializers.py and algorithms/serializers.py (the record
fields); DIAGNijmegen/demo-challenge-pack, test-phase/example_evaluation_method/evaluate.py and its
test/input/predictions.json (how evaluation code reads the file).

Not implemented: grand-challenge's HTTP "invoke" API (containers labelled
org.grand-challenge.api-method=invoke); the runner runs containers to completion, grand-challenge's
"exec" mode. Phases that take prediction files keep the runner's layout (the file under /input).
"""

from __future__ import annotations

import json
import stat
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runner.evaluation.metrics import read_json
from runner.tree.phase_model import Socket
from runner.tree.schema_types import size_text

PREDICTIONS = "predictions.json"
INPUTS = "inputs.json"
IMAGES = "images"
IMAGE_SUFFIXES = (".mha", ".mhd", ".tif", ".tiff", ".nii.gz", ".nii")  # grand-challenge: mha, mhd, tiff
COMPANION_SUFFIXES = (".raw", ".zraw")
VALUE_MAX_BYTES = 16 * 1024**2  # one value file, an input's or an output's
# Value outputs are parsed, held while their job's record is made, and written into predictions.json,
# so they are bounded by their JSON's bytes (a file's size before it is parsed, its value as written
# after: escapes and number forms can make that larger than the file). Parsed JSON takes up to ~30
# times its bytes in Python objects ("[],[],..." is 5 million empty lists), so a job's 16 MiB, the most
# one file could ever hold, is also the most the runner parses at once. All jobs' together are bounded
# because the evaluation reads predictions.json whole and the runner's scratch disk holds it: 128 MiB is
# eight full jobs, or 256 KiB a case over 500 cases; larger JSON belongs in a file socket.
JOB_VALUES_MAX_BYTES = 16 * 1024**2
VALUES_MAX_BYTES = 128 * 1024**2
NAMESPACE = uuid.UUID("5b8a3f5e-6c0d-4d7e-9a51-2f0c8e6d1a42")  # job pks: uuid5 of submission and case
SUPER_KINDS = {"image": "Image", "value": "Value", "file": "File"}
KINDS = {"image": "Image", "value": "Anything", "file": "Anything"}


class OutputMissing(ValueError):
    """A declared output the job did not produce, or produced wrongly; the message is grand-challenge's."""


def job_pk(submission: str, case: str) -> str:
    return str(uuid.uuid5(NAMESPACE, f"{submission}/{case}"))


def kind_of(socket: Socket) -> str:
    if socket.kind:
        return socket.kind
    if socket.relative_path.startswith(f"{IMAGES}/"):
        return "image"
    return "value" if socket.relative_path.endswith(".json") else "file"


def sockets_in(folder: Path, declared: tuple[Socket, ...] = ()) -> list[Socket]:
    """The declared sockets, or those a folder laid out as /input or /output shows: each folder
    under images/, and each other top-level file (inputs.json aside)."""
    if declared:
        return list(declared)
    found = [Socket(slug=_slug(p.name), relative_path=f"{IMAGES}/{p.name}")
             for p in sorted((folder / IMAGES).iterdir()) if p.is_dir()] if (folder / IMAGES).is_dir() else []
    found += [Socket(slug=_slug(p.name.removesuffix(".json")), relative_path=p.name)
              for p in sorted(folder.iterdir()) if p.is_file() and p.name != INPUTS]
    return found


def _slug(name: str) -> str:
    return "-".join(part for part in "".join(c if c.isalnum() else "-" for c in name.lower()).split("-") if part)


def value_records(folder: Path, sockets: list[Socket], *, owner: str, seen_at: str | None,
                  budget: ValueBudget | None = None) -> list[dict[str, Any]]:
    """One value record per socket for what `folder` holds; OutputMissing for what it lacks. `seen_at` is
    where the container reading the records sees `folder` (None: it does not). With a `budget` (a job's
    outputs), the value files must fit what is left of it before any is parsed, and their values as
    written after; the budget is then spent."""
    if budget is None:  # a job's inputs: the organizers' hidden data, bounded a file at a time
        return [_value(folder, socket, owner=owner, seen_at=seen_at) for socket in sockets]
    share = budget.share()
    share.fits_files(folder, [socket for socket in sockets if kind_of(socket) == "value"])
    records = [_value(folder, socket, owner=owner, seen_at=seen_at) for socket in sockets]
    budget.spent += share.fits_values([(socket.relative_path, record["value"]) for socket, record
                                       in zip(sockets, records, strict=True) if kind_of(socket) == "value"])
    return records


@dataclass
class ValueBudget:
    """The bytes of JSON value outputs may take in predictions.json: a job's at most JOB_VALUES_MAX_BYTES,
    a submission's at most VALUES_MAX_BYTES (`spent` by its jobs so far). One budget per submission
    where predictions.json keeps the values; one per job where nothing keeps them past it."""

    spent: int = 0

    def share(self) -> _Share:
        """What the next job may take, and the limit that bounds it, in words for the participant."""
        left = VALUES_MAX_BYTES - self.spent
        if left >= JOB_VALUES_MAX_BYTES:
            return _Share(JOB_VALUES_MAX_BYTES, f"one job's value outputs may hold {size_text(JOB_VALUES_MAX_BYTES)}")
        return _Share(left, f"all jobs' value outputs may hold {size_text(VALUES_MAX_BYTES)}")


@dataclass(frozen=True)
class _Share:
    """One job's part of a ValueBudget: `allowed` bytes of JSON, bounded by the limit `words` name."""

    allowed: int
    words: str

    def fits_files(self, folder: Path, sockets: list[Socket]) -> None:
        """The value files' sizes, before any is parsed: the first past the share is refused unread."""
        total = 0
        for socket in sockets:
            total += _file_size(folder / socket.relative_path)
            self._within(total, socket.relative_path)

    def fits_values(self, values: list[tuple[str, Any]]) -> int:
        """The bytes the values (by relative path) take as written (compact JSON), checked one by one."""
        total = 0
        for relative, value in values:
            total += len(compact(value))
            self._within(total, relative)
        return total

    def _within(self, total: int, relative: str) -> None:
        if total > self.allowed:
            raise OutputMissing(f"The output file {relative!r} is too large ({self.words} of JSON in all)")


def _file_size(path: Path) -> int:
    """A regular file's size; 0 for anything else (missing, a link, a folder: refused when it is read)."""
    try:
        info = path.lstat()
    except OSError:
        return 0
    return info.st_size if stat.S_ISREG(info.st_mode) else 0


def compact(value: Any) -> str:
    """JSON as predictions.json holds it, and as ValueBudget counts it: no indent, no spaces."""
    return json.dumps(value, separators=(",", ":"))


class PredictionsFile:
    """predictions.json written a job at a time, each record a line of compact JSON: the runner holds one
    job's values at once, never every job's, nor one string of them all."""

    def __init__(self, path: Path):
        self.path, self.jobs = path, 0

    def add(self, record: dict[str, Any]) -> None:
        with self.path.open("a" if self.jobs else "w", encoding="utf-8") as out:
            out.write(("[\n" if not self.jobs else ",\n") + compact(record))
        self.jobs += 1

    def close(self) -> None:
        with self.path.open("a" if self.jobs else "w", encoding="utf-8") as out:
            out.write("\n]\n" if self.jobs else "[]\n")


def _value(folder: Path, socket: Socket, *, owner: str, seen_at: str | None) -> dict[str, Any]:
    kind, path = kind_of(socket), folder / socket.relative_path
    record: dict[str, Any] = {"pk": str(uuid.uuid5(NAMESPACE, f"{owner}/{socket.slug}")),
                              "interface": _socket(socket, kind), "value": None, "file": None, "image": None}
    record["socket"] = record["interface"]
    if kind == "image":
        image = _one_image(path, socket.relative_path)
        record["image"] = {"pk": str(uuid.uuid5(NAMESPACE, f"{owner}/{socket.slug}/image")), "name": image.name}
    elif kind == "value":
        record["value"] = _json_value(path, socket.relative_path)
    elif not path.is_file():
        raise OutputMissing(f"Output file {socket.relative_path!r} was not produced")
    elif seen_at is not None:
        record["file"] = f"{seen_at}/{socket.relative_path}"
    return record


def _socket(socket: Socket, kind: str) -> dict[str, Any]:
    return {"title": socket.slug.replace("-", " ").capitalize(), "description": "", "slug": socket.slug,
            "kind": KINDS[kind], "pk": int(uuid.uuid5(NAMESPACE, socket.slug).int % 100_000),
            "default_value": None, "example_value": None, "super_kind": SUPER_KINDS[kind],
            "relative_path": socket.relative_path, "overlay_segments": [], "look_up_table": None,
            "is_image_kind": kind == "image", "is_panimg_kind": kind == "image", "is_dicom_image_kind": False,
            "is_json_kind": kind == "value", "is_file_kind": kind == "file"}


def _one_image(folder: Path, relative: str) -> Path:
    if not folder.is_dir() or not any(folder.iterdir()):
        raise OutputMissing(f"Output directory {relative!r} is empty")
    images = [p for p in sorted(folder.iterdir()) if p.is_file() and p.name.lower().endswith(IMAGE_SUFFIXES)]
    if not images:
        raise OutputMissing(f"No output images could be imported from {relative!r}")
    if len(images) > 1:
        raise OutputMissing(f"Only 1 image should be produced in {relative!r}, we found {len(images)}")
    return images[0]


def _json_value(path: Path, relative: str) -> Any:
    if not path.is_file():
        raise OutputMissing(f"Output file {relative!r} was not produced")
    try:
        return read_json(path, name=relative, max_bytes=VALUE_MAX_BYTES)
    except ValueError as exc:
        raise OutputMissing(f"The output file {relative!r} is not valid json ({exc})") from None


def write_inputs_json(folder: Path, sockets: list[Socket], *, owner: str) -> None:
    """/input/inputs.json: the job's input values, as grand-challenge provisions it."""
    (folder / INPUTS).write_text(json.dumps(value_records(folder, sockets, owner=owner, seen_at="/input"), indent=2))


def job_outputs(pk: str) -> str:
    """Where a job's outputs sit under the evaluation's /input: <job pk>/output."""
    return f"{pk}/output"


def job_record(*, pk: str, image: str, inputs: list[dict[str, Any]], outputs: list[dict[str, Any]],
               wall_time_s: float | None, started_at: str, completed_at: str) -> dict[str, Any]:
    """One entry of predictions.json, with the fields grand-challenge's JobSerializer writes."""
    return {"pk": pk, "url": None, "api_url": None, "algorithm_image": image, "inputs": inputs, "outputs": outputs,
            "status": "Succeeded", "hanging_protocol": None, "optional_hanging_protocols": [], "view_content": {},
            "started_at": started_at, "completed_at": completed_at,
            "exec_duration": iso_duration(wall_time_s), "invoke_duration": None}


def iso_duration(seconds: float | None) -> str | None:
    """ISO 8601, as grand-challenge writes durations: PT22M17S, PT1.5S."""
    if seconds is None:
        return None
    minutes, rest = divmod(round(seconds, 3), 60)
    hours, minutes = divmod(int(minutes), 60)
    return "PT" + (f"{hours}H" if hours else "") + (f"{minutes}M" if minutes else "") + f"{rest:g}S"
