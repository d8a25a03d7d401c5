"""Algorithms submitted as image archives (`image_archive: {url, sha256, encrypted}`), FLARE21's way.

The runner downloads the archive into its own folder (size-capped; an interrupted download resumes
with an HTTP Range request), checks the pinned sha256, decrypts it with the runner's age identity
when it is sealed to the runner's public key, and has the executor load it (one image, rebuilt
without names: `runner.execution.archives`). What a download leaves (its part, the loaded image's
ID) is kept under a key of the submission and the URL together, never the hash alone: a participant
who pins a rival's (public) sha256 with another URL neither poisons the rival's partial download
nor gets the rival's image, already loaded, run under their own name. A re-evaluation of the same
submission neither downloads nor loads it again.

Whose fault is what: an address that answers 4xx, a wrong hash, a file that is not one image, an
archive that this runner's key does not open, a server too slow to finish (`Pace`: a minimum rate
over each window and an overall deadline) are the submission's (failed results); a download the
runner could not make because of its own network (no connection, a 5xx) is the runner's (transient:
retried, then left pending). The URL is the participant's, so the runner does not fetch private,
loopback or link-local addresses (nor file://) except on local runs (--allow-local-images), and
follows redirects only after checking each one the same way.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import pyrage

from runner.codekey import file_sha256
from runner.errors import printable
from runner.evaluation.failures import RunnerError, SubmissionFailure
from runner.execution.archives import BadArchive
from runner.execution.sandbox import Executor, SandboxError
from runner.settings import variable
from runner.tree import download
from runner.tree.sealing import Identity
from runner.tree.submission_model import ImageArchive

ENV_RUNNER_KEY = variable("runner_key_text")
DOWNLOADER = "runner.tree.download"  # each request, in a process of its own (see there)
PACKAGE_ROOT = Path(download.__file__).resolve().parents[2]  # where the child finds the package
CHILD = f"import sys; sys.path.insert(0, sys.argv.pop(1)); from {DOWNLOADER} import main; main()"
POLL_S = 0.5  # how often the runner looks at a download's progress
MAX_FAILED_TRIES = 6  # tries in a row without progress (each run of the queue makes up to 3)
MAX_TRIES = 30  # tries in all, progress or not (one new byte per try must not keep it pending for ever)
ANSWER_MAX = 64 * 1024  # the child's answer (it bounds what it repeats of a server's headers)
RETRY_STATUSES = (408, 425, 429)  # the server asks to come back later


@dataclass(frozen=True)
class Pace:
    """How long a download may hold the runner: at least `min_rate` bytes a second over every window
    of `window_s` (a silent server fails at the end of one), and `deadline_s` in all."""

    min_rate: int = 64 * 1024
    window_s: float = 60.0
    deadline_s: float = 3 * 3600.0

    def describe(self) -> str:
        deadline = self.deadline_s
        total = f"{deadline / 3600:g} h" if deadline >= 3600 else f"{deadline / 60:g} min" if deadline >= 60 else (
            f"{deadline:g} s")
        return f"{self.min_rate // 1024} KiB/s over every {self.window_s:g} s, and {total} in all"


def archive_image(archive: ImageArchive, *, submission: str, executor: Executor, folder: Path,
                  keys: Sequence[Identity], allow_local: bool, max_bytes: int, pace: Pace = Pace()) -> str:
    """The image ID of the archive's one image for `submission` (its key), downloading, checking and
    loading it once."""
    folder.mkdir(parents=True, exist_ok=True)
    key = hashlib.sha256(f"{submission}\0{archive.url}\0{archive.sha256}".encode()).hexdigest()
    with _locked(folder / f"{key}.lock"):  # two runners fetch one archive once
        known = _loaded_before(folder / f"{key}.image", executor)
        if known:
            return known
        part = folder / f"{key}.part"
        _fetched(archive.url, part, ledger=folder / f"{key}.ledger", max_bytes=max_bytes, allow_local=allow_local,
                 pace=pace)
        _verify(part, archive.sha256)
        try:
            source = part
            if archive.encrypted:
                source = _decrypted(part, keys)
                part.unlink()  # one copy on the runner's disk at a time
            image_id = _load(source, executor, max_bytes=max_bytes)
        finally:
            part.unlink(missing_ok=True)
            part.with_suffix(".tar").unlink(missing_ok=True)
        (folder / f"{key}.image").write_text(image_id)
        return image_id


@dataclass
class _Ledger:
    """What the tries of one download have cost so far, kept beside its part across runs: every try,
    the tries in a row that made no progress, and the seconds spent."""

    tries: int = 0
    stalled: int = 0
    spent_s: float = 0.0

    @classmethod
    def read(cls, path: Path) -> _Ledger:
        try:
            return cls(**json.loads(path.read_text()))
        except (OSError, ValueError, TypeError):
            return cls()


def _fetched(url: str, part: Path, *, ledger: Path, max_bytes: int, allow_local: bool, pace: Pace) -> None:
    """`fetch`, within bounds across every try and run, so nothing a server does keeps a submission pending
    for ever: `pace.deadline_s` in all, MAX_FAILED_TRIES tries in a row without progress, MAX_TRIES in
    all, whatever ended each try (an error of the runner's, or one nobody foresaw). What fails for the
    submission takes its part and ledger with it."""
    spent = _Ledger.read(ledger)
    before, started = download.size(part), time.monotonic()
    try:
        fetch(url, part, max_bytes=max_bytes, allow_local=allow_local, pace=pace, spent_s=spent.spent_s)
    except SubmissionFailure:
        _forget(part, ledger)
        raise
    except RunnerError as exc:
        _failed_try(exc, part, ledger=ledger, spent=spent, before=before, started=started)
        raise
    except Exception as exc:  # a bug, or a server's answer nobody foresaw: a failed try all the same
        failure = RunnerError(f"Image archive: the download failed ({printable(download.why(exc), 300)})",
                              transient=True)
        _failed_try(failure, part, ledger=ledger, spent=spent, before=before, started=started)
        raise failure from exc
    ledger.unlink(missing_ok=True)


def _failed_try(exc: RunnerError, part: Path, *, ledger: Path, spent: _Ledger, before: int, started: float) -> None:
    """One more try in the ledger; the submission's failure once too many made no progress, or too many in all."""
    progressed = download.size(part) > before
    spent = _Ledger(spent.tries + 1, 0 if progressed else spent.stalled + 1, spent.spent_s + time.monotonic() - started)
    if spent.stalled >= MAX_FAILED_TRIES or spent.tries >= MAX_TRIES:
        _forget(part, ledger)
        raise SubmissionFailure(f"Image archive could not be downloaded in {spent.tries} tries (the last: {exc}); "
                                "host it where the runner can reach it") from None
    ledger.write_text(json.dumps(asdict(spent)))


def _forget(part: Path, ledger: Path) -> None:
    """A download that failed for its submission leaves nothing on the runner's disk."""
    part.unlink(missing_ok=True)
    ledger.unlink(missing_ok=True)


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)  # released by the kernel if this runner dies
        yield


def _loaded_before(record: Path, executor: Executor) -> str | None:
    try:
        return executor.image_id(record.read_text().strip())
    except (OSError, SandboxError):
        return None


def fetch(url: str, part: Path, *, max_bytes: int, allow_local: bool, pace: Pace = Pace(),
          spent_s: float = 0.0) -> None:
    """Download `url` into `part`, resuming what an earlier try left there; `spent_s` is what earlier
    tries took of the pace's deadline."""
    scheme = urlsplit(url).scheme
    if scheme == "file":
        if not allow_local:
            raise SubmissionFailure("Image archive: file:// addresses are accepted only for local runs "
                                    "(--allow-local-images); host it at an https:// address")
        _copy_local(Path(unquote(urlsplit(url).path)), part, max_bytes=max_bytes)
        return
    started = time.monotonic() - spent_s
    try:
        download.fetch(url, part, allow_private=allow_local, max_bytes=max_bytes,
                       request=lambda target, have: _in_child(target, part, have=have, max_bytes=max_bytes,
                                                              pace=pace, started=started))
    except download.DownloadError as exc:
        raise _failure(exc, max_bytes=max_bytes) from None


def _failure(exc: download.DownloadError, *, max_bytes: int) -> SubmissionFailure | RunnerError:
    """Whose fault a failed download is, in an image archive's words: the submission's (its address, the
    server's refusal, too large), or the runner's network's (transient: no answer, cut short, a 5xx)."""
    if exc.kind in ("unreachable", "broken"):
        return RunnerError(f"Image archive: the runner could not download {printable(exc.url, 200)} ({exc.detail}); "
                           "it resumes on the next try", transient=True)
    if exc.kind == "lookup":
        return RunnerError(f"Image archive: the runner {exc.detail}", transient=True)
    if exc.kind == "status" and exc.status is not None and (exc.status >= 500 or exc.status in RETRY_STATUSES):
        return RunnerError(f"Image archive could not be downloaded now: {exc.detail}", transient=True)
    if exc.kind == "too_large":
        return SubmissionFailure(f"Image archive is larger than {max_bytes // 1024**2} MiB")
    if exc.kind == "private":
        return SubmissionFailure(f"Image archive: {exc.detail}; host the archive where the internet can reach it")
    if exc.kind == "address":
        return SubmissionFailure(f"Image archive: {exc.detail}")
    return SubmissionFailure(f"Image archive could not be downloaded: {exc.detail}")  # a status, redirects, no host


def _copy_local(source: Path, part: Path, *, max_bytes: int) -> None:
    if not source.is_file():
        raise SubmissionFailure(f"Image archive could not be downloaded: {source} is not a file")
    if source.stat().st_size > max_bytes:
        raise SubmissionFailure(f"Image archive is larger than {max_bytes // 1024**2} MiB")
    shutil.copyfile(source, part)


def _in_child(target: download.Target, part: Path, *, have: int, max_bytes: int, pace: Pace,
              started: float) -> dict[str, Any]:
    """One request into `part` (resuming from `have`), made by a child process the runner stops when it
    falls below `pace`; its answer, as `download.request` gives it."""
    ask = {"url": target.url, "address": target.address, "name": target.name, "port": target.port,
           "part": str(part), "offset": have, "max_bytes": max_bytes}
    child = subprocess.Popen(_child_command(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True, env=_child_environment())
    try:
        assert child.stdin is not None and child.stdout is not None
        child.stdin.write(json.dumps(ask))
        child.stdin.close()
        if not _paced(child, part, pace, started):
            raise SubmissionFailure(f"Image archive downloaded too slowly: this runner needs at least "
                                    f"{pace.describe()}; host it where it downloads faster")
        said = child.stdout.read(ANSWER_MAX)
    finally:
        if child.poll() is None:
            child.kill()
        child.wait()
    try:
        answer = json.loads(said)
    except ValueError:  # it died without a word (out of memory, a full disk): the runner's trouble
        raise RunnerError(f"Image archive: the download process ended without an answer (exit {child.returncode})",
                          transient=True) from None
    return answer if isinstance(answer, dict) else {}


def _child_command() -> list[str]:
    """The downloader, isolated (-I: no PYTHON* variables, no user site, not the working directory on
    sys.path), importing this very package from where the runner found it."""
    return [sys.executable, "-I", "-c", CHILD, str(PACKAGE_ROOT)]


def _child_environment() -> dict[str, str]:
    """What a process that parses a stranger's HTTP may see of the runner's environment: no secret (the
    runner's key, tokens), no proxy; a PATH and a locale alone."""
    return {"PATH": os.environ.get("PATH", os.defpath), "LANG": "C.UTF-8"}


def _paced(child: subprocess.Popen[str], part: Path, pace: Pace, started: float) -> bool:
    """Whether the request ended before falling below the pace: the part file grew by at least
    `min_rate` a second over every window (headers, a slow handshake, a silence count as nothing; a
    file restarted from zero counts what it wrote since) and all was done by the deadline. Otherwise
    the child is stopped."""
    window, grown, last = time.monotonic(), 0, download.size(part)
    while True:
        try:
            child.wait(timeout=min(POLL_S, pace.window_s))
            return True
        except subprocess.TimeoutExpired:
            pass
        size, now = download.size(part), time.monotonic()
        grown, last = grown + (size - last if size >= last else size), size
        if now - started > pace.deadline_s:
            return False
        if now - window >= pace.window_s:
            if grown < pace.min_rate * (now - window):
                return False
            window, grown = now, 0


def _verify(path: Path, sha256: str) -> None:
    digest = file_sha256(path)
    if digest != sha256:
        path.unlink()  # start afresh next time: resuming a wrong file cannot make it right
        raise SubmissionFailure(f"Image archive sha256 is {digest}, but the submission pins {sha256}")


def _decrypted(path: Path, keys: Sequence[Identity]) -> Path:
    if not keys:
        raise RunnerError(f"Image archive is encrypted to the runner's key, but this runner has none "
                          f"(--runner-key FILE or {ENV_RUNNER_KEY})")
    plain = path.with_suffix(".tar")
    try:
        pyrage.decrypt_file(str(path), str(plain), list(keys))
    except pyrage.DecryptError as exc:
        plain.unlink(missing_ok=True)
        raise SubmissionFailure(f"Image archive could not be decrypted with this runner's key ({exc}); "
                                "encrypt it to the runner's public key") from None
    return plain


def _load(path: Path, executor: Executor, *, max_bytes: int) -> str:
    try:
        return executor.load_archive(path, max_bytes=max_bytes)
    except BadArchive as exc:
        raise SubmissionFailure(f"Image archive refused: {exc}") from None
    except SandboxError as exc:
        raise RunnerError(f"Image archive could not be loaded: {exc}", transient=exc.transient) from None


# --- algorithm images preserved on the runner (`challenge preserve`) ----------------------------
# A submitted image can be deleted upstream after the challenge; its archive kept here lets a later
# rerun (a living benchmark) load it again. Each archive is named by the sha256 of the reference as
# submitted, with a JSON sidecar naming that reference and the image ID it was saved from.


def preserved_archive(folder: Path, ref: str) -> Path:
    """Where the archive of the image `ref` (as a submission names it) is kept in `folder`."""
    return folder / f"{hashlib.sha256(ref.encode()).hexdigest()}.tar"


def preserve_image(ref: str, *, executor: Executor, folder: Path) -> bool:
    """Save the image `ref` as an archive in `folder` unless it is there already; whether it was saved now.
    Written through a temporary name, so an interrupted save is never taken for an archive."""
    path = preserved_archive(folder, ref)
    if path.is_file() and path.with_suffix(".json").is_file():
        return False
    folder.mkdir(parents=True, exist_ok=True)
    image_id = executor.image_id(ref)
    part = path.with_suffix(".part")
    try:
        executor.save_archive(image_id, part)
        part.replace(path)
    finally:
        part.unlink(missing_ok=True)
    path.with_suffix(".json").write_text(json.dumps({"ref": ref, "image_id": image_id}, indent=2) + "\n")
    return True


def load_preserved(ref: str, *, executor: Executor, folder: Path) -> str | None:
    """The image ID of `ref` loaded from its preserved archive; None if this runner kept none. The
    loaded image must be the one saved (its ID beside the archive), or the archive is not used."""
    path = preserved_archive(folder, ref)
    if not path.is_file():
        return None
    try:
        loaded = executor.load_archive(path)
    except (BadArchive, SandboxError) as exc:
        raise RunnerError(f"the preserved archive of {ref} ({path}) could not be loaded: {exc}",
                          transient=exc.transient) from None
    try:
        saved = json.loads(path.with_suffix(".json").read_text())["image_id"]
    except (OSError, ValueError, KeyError, TypeError):
        saved = None
    if loaded != saved:
        raise RunnerError(f"the preserved archive of {ref} ({path}) holds {loaded}, not the image {saved} saved "
                          "for it: remove it and run `challenge preserve` again")
    return loaded
