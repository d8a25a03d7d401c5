"""Whether a result is what the runner wrote: its signature, and its provenance against the tree.

One home for the question, asked by `challenge verify`, by the site build (which publishes only what
verifies, once the tree lists its runners' keys) and by the pages that show each row's verification.
A result verifies when it carries provenance, a trusted runner key that was valid when it signed made its
signature over the record as it is now, the record sits at the path its
fields name, and its provenance agrees with the tree: the submission file is the one evaluated, and
the phase file it names is one the phase file has been in git's history.

The trusted keys are `challenges/allowed_signers`, unless they are pinned outside the tree (publish.yml
passes the repository's Actions variable, which a writer of the repository cannot set): then the pin is
what verifies and the file, where there is one, must list the same keys, so that a key added by hand
stops the build instead of passing. Without a pin, the file deleted from a tree whose history has it
stops the build too.
"""

from __future__ import annotations

import datetime as dt
import os
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from runner.errors import ChallengeError
from runner.tree.gitfiles import blob_history, blob_id, read_blobs, versions
from runner.tree.paths import TreePaths
from runner.tree.result_model import Result, parse_result, parse_time
from runner.tree.signing import ALLOWED_SIGNERS, BadSignature, Signers, SigningError, read_signers


@dataclass(frozen=True)
class Check:
    """One record's verification: `signer` (the allowed_signers principal) when it verified, else `reason`."""

    signer: str | None = None
    reason: str = ""

    @property
    def verified(self) -> bool:
        return self.signer is not None


@dataclass
class Verifier:
    """Checks records of one tree; reads allowed_signers once and each phase file's history once."""

    root: Path
    signers: Signers | None = None
    pinned: bool = False  # the keys come from outside the tree, where a writer of the repository cannot add one
    _phase_blobs: dict[Path, set[str]] = field(default_factory=dict, init=False, repr=False)
    # Per file that held several records: each past record's signing time as it claims it, and its blob.
    _past: dict[str, list[tuple[dt.datetime, str]]] | None = field(default=None, init=False, repr=False)
    # Each folder's real path, found once per checker (a build, a `verify`): a phase's results share a few
    # hundred folders, and resolving each result's path alone was half the time its records took to read.
    _real: dict[Path, str] = field(default_factory=dict, init=False, repr=False)

    @classmethod
    def of(cls, root: Path, *, pinned: Signers | None = None) -> Verifier:
        """SigningError when the trusted keys cannot be known (see `trusted_signers`)."""
        return cls(root, trusted_signers(root, pinned=pinned), pinned=pinned is not None)

    @property
    def digest(self) -> str:
        """What its verdicts depend on beside the records and the tree: the allowed_signers text."""
        return self.signers.digest if self.signers else "none"

    @property
    def enforced(self) -> bool:
        """Whether the tree lists its runners' keys: then only what verifies is published."""
        return self.signers is not None

    def check(self, result: Result, path: Path | None = None) -> Check:
        """`result` as read from the public record at `path` (or from the whole record sealed beside it)."""
        if result.signature is None:
            return Check(reason="not signed by a runner")
        if result.provenance is None:
            return Check(reason="carries no provenance")
        if self.signers is None:
            return Check(reason=f"the tree has no challenges/{ALLOWED_SIGNERS} to check its signature against")
        try:
            signer = self.signers.verify(result.document(), when=parse_time(result.provenance.signed_at))
        except BadSignature as exc:
            return Check(reason=str(exc))
        except (ValueError, TypeError) as exc:  # a hand-made record: its time, or a field, is not what we write
            return Check(reason=f"not a record the runner wrote ({exc})")
        if path is not None and (moved := self._moved(result, path)):
            return Check(reason=moved)
        return self._agrees(result) or Check(signer=signer)

    def check_current(self, result: Result, path: Path, *, public: Result | None = None) -> Check:
        """`check` for the record the tree holds now at `path` (`result`: the whole record, where `public`, the
        public one, withholds part of it). It fails too where it is not the newest record the runner signed
        for its submission: an older genuine record put back keeps a good signature, so git's history of the
        file is read for a later one that verifies, whatever bytes or merges put the old one back."""
        if self._linked(path):
            return Check(reason="its file, or a folder above it, is a link: a result is a file the runner wrote")
        found = self.check(result, path)
        if not found.verified:
            return found
        if public is not None and public is not result and not written_together(public, result):
            return Check(reason="its whole record (sealed, or this runner's copy) is not the one written with its "
                                "public record: another evaluation's, put back beside it")
        assert result.provenance is not None
        if later := self._signed_later(path, parse_time(result.provenance.signed_at)):
            return Check(reason=f"an older record of its submission put back: its file's git history holds one the "
                                f"runner signed later ({later.isoformat()}); evaluate it again with "
                                "`challenge evaluate --rerun`")
        return found

    def signed_time(self, record: Result, path: Path) -> dt.datetime | None:
        """When a record of the file at `path` (of now or of the past) was signed, if it is that file's record
        and its signature verifies; its provenance is not checked against the tree, which has changed since."""
        if self.signers is None or record.provenance is None or self._moved(record, path):
            return None
        try:
            when = parse_time(record.provenance.signed_at)
            self.signers.verify(record.document(), when=when)
        except (BadSignature, ValueError, TypeError):
            return None
        return when

    def _signed_later(self, path: Path, signed: dt.datetime) -> dt.datetime | None:
        """The time of a genuine record of `path` in git's history signed after `signed`, if there is one. Only
        the records that claim a later time are verified: none, in a tree nobody tampered with."""
        claims = sorted(self._history().get(self._relative(path), ()), reverse=True)
        later = [(when, blob) for when, blob in claims if when > signed]
        content = read_blobs(self.root, [blob for _, blob in later])
        for when, blob in later:
            try:
                record = parse_result(content[blob], path) if blob in content else None
            except ChallengeError:
                continue
            if record is not None and self.signed_time(record, path) == when:
                return when
        return None

    def _history(self) -> dict[str, list[tuple[dt.datetime, str]]]:
        """For each result file that is in the tree now and held other records before: each record's claimed
        signing time (read without verifying) and its blob. One `git log` and one `read_blobs` in all."""
        if self._past is None:
            base = TreePaths(self.root).base.relative_to(self.root)
            held = versions(self.root, f":(glob){base}/*/results/**")
            several = {path: sorted(blobs - {"0" * 40}) for path, blobs in held.items()
                       if path.endswith(".json") and len(blobs - {"0" * 40}) > 1 and (self.root / path).is_file()}
            content = read_blobs(self.root, sorted({blob for blobs in several.values() for blob in blobs}))
            self._past = {path: [(when, blob) for blob in blobs if blob in content
                                 and (when := _claimed(content[blob])) is not None] for path, blobs in several.items()}
        return self._past

    def _relative(self, path: Path) -> str:
        absolute, root = path.absolute(), self.root.absolute()
        return str(absolute.relative_to(root)) if absolute.is_relative_to(root) else str(absolute)

    def _linked(self, path: Path) -> bool:
        """Whether `path`, or a folder between the root and it, is a link (it may point anywhere: another
        participant's folder, one whose history is not this path's)."""
        absolute, root = path.absolute(), self.root.absolute()
        if not absolute.is_relative_to(root) or path.is_symlink():
            return path.is_symlink()
        expected = os.path.normpath(os.path.join(self._real_path(root), absolute.parent.relative_to(root)))
        return self._real_path(absolute.parent) != expected

    def _real_path(self, folder: Path) -> str:
        found = self._real.get(folder)
        if found is None:
            found = self._real[folder] = os.path.realpath(folder)
        return found

    def _moved(self, result: Result, path: Path) -> str:
        paths = TreePaths(self.root)
        named = paths.result_file(result.challenge, result.phase, result.participant, result.submission)
        return "" if path.absolute() == named.absolute() else f"its record names another place: {named}"

    def _agrees(self, result: Result) -> Check | None:
        """Why the provenance disagrees with the tree, or None."""
        assert result.provenance is not None
        paths = TreePaths(self.root)
        submission = paths.submission_file(result.challenge, result.phase, result.participant, result.submission)
        if self._linked(submission) or not submission.is_file():  # a link may point anywhere (/dev/zero)
            return Check(reason=f"its submission file {submission.relative_to(self.root)} is not in the tree")
        try:
            now = blob_id(submission.read_bytes())
        except OSError:
            return Check(reason=f"its submission file {submission.relative_to(self.root)} is not in the tree")
        if now != result.provenance.submission_blob:
            return Check(reason=f"its submission file is not the one the runner evaluated (blob "
                                f"{result.provenance.submission_blob[:12]}, now {now[:12]})")
        phase = paths.phase_file(result.challenge, result.phase)
        if result.provenance.phase_blob not in self._phase_history(phase):
            return Check(reason=f"the phase file it was evaluated under (blob {result.provenance.phase_blob[:12]}) "
                                f"is not in the history of {phase.relative_to(self.root)}")
        return None

    def _phase_history(self, phase: Path) -> set[str]:
        if phase not in self._phase_blobs:
            found = blob_history(self.root, str(phase.relative_to(self.root)))
            if phase.is_file():
                found.add(blob_id(phase.read_bytes()))  # as it is now, committed or not
            self._phase_blobs[phase] = found
        return self._phase_blobs[phase]


def signers_path(root: Path) -> Path:
    return TreePaths(root).base / ALLOWED_SIGNERS


def _claimed(data: bytes) -> dt.datetime | None:
    """The signing time a record's bytes claim, read without verifying anything; None when unreadable."""
    try:
        document = orjson.loads(data)
        return parse_time(document["provenance"]["signed_at"])
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError):
        return None


def written_together(public: Result, whole: Result) -> bool:
    """Whether two records were written together, by one evaluation (the public one withholds part)."""
    return (public.provenance == whole.provenance
            and (public.challenge, public.phase, public.participant, public.submission)
            == (whole.challenge, whole.phase, whole.participant, whole.submission))


def trusted_signers(root: Path, *, pinned: Signers | None = None) -> Signers | None:
    """The keys whose signatures count: `pinned` when given, else the tree's allowed_signers; None when there
    are none (a tree whose runners sign nothing yet). SigningError when the file cannot be read (a typo must
    not pass every record), when it lists other keys than the pin, or when it was deleted from a tree whose
    history has it: each would let results through that no trusted runner signed."""
    path = signers_path(root)
    listed = read_signers(path)
    if pinned is not None:
        if listed is not None and (why := _differs(listed, pinned)):
            raise SigningError(f"{path}: {why} than the keys pinned in {pinned.source}: update one to match the "
                               "other (a key added to the tree alone is never trusted)")
        return pinned
    if listed is None and blob_history(root, str(path.relative_to(root))):
        raise SigningError(f"{path}: deleted, though the tree's history has it: without it every result would "
                           "publish unverified. Restore it (`git log -- challenges/allowed_signers` shows its "
                           "last version), or pin the keys in the CHALLENGE_ALLOWED_SIGNERS variable")
    return listed


def _differs(listed: Signers, pinned: Signers) -> str:
    """How `listed` departs from `pinned`, or '' when they grant the same keys the same rights."""
    extra = [e for e in listed.entries if e.grant not in {p.grant for p in pinned.entries}]
    if extra:
        return "lists other keys or validity (line " + ", ".join(str(e.line) for e in extra) + ")"
    missing = len({p.grant for p in pinned.entries} - {e.grant for e in listed.entries})
    return f"lists {missing} fewer key line(s)" if missing else ""
