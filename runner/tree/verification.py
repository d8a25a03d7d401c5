"""Whether a result is what the runner wrote: its signature, and its provenance against the tree.

One home for the question, asked by `challenge verify`, by the site build (which publishes only what
verifies, once the tree lists its runners' keys) and by the pages that show each row's verification.
A result verifies when it carries provenance, a trusted runner key that was valid when it signed made its
signature over the record as it is now, the record sits at the path its
fields name, and its provenance agrees with the tree: the submission file is the one evaluated, and
the phase file it names is one the phase file has been in git's history.

The trusted keys are `challenges/allowed_signers`, unless they are pinned outside the tree (publish.yml
passes the repository's Actions variable, which a writer of the repository cannot set): then the file must
list the same keys, so that a key added by hand, or the file deleted, stops the build instead of passing.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from pathlib import Path

from runner.errors import ChallengeError
from runner.tree.gitfiles import blob_history, blob_id, read_blobs, versions
from runner.tree.model import Result, parse_result, parse_time
from runner.tree.paths import TreePaths
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
    _phase_blobs: dict[Path, set[str]] = field(default_factory=dict)
    _latest: dict[str, dt.datetime] | None = None  # per result file: the latest time a record there was signed

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
        file is read for the latest one that verifies, whatever bytes or merges put the old one back."""
        if path.is_symlink():
            return Check(reason="its file is a link: a result is a file the runner wrote")
        found = self.check(result, path)
        if not found.verified:
            return found
        if public is not None and public is not result and not _same_signing(public, result):
            return Check(reason="its whole record (sealed, or this runner's copy) is not the one written with its "
                                "public record: another evaluation's, put back beside it")
        assert result.provenance is not None
        latest = self._signed_in_history().get(self._relative(path))
        if latest is not None and latest > parse_time(result.provenance.signed_at):
            return Check(reason=f"an older record of its submission put back: its file's git history holds one the "
                                f"runner signed later ({latest.isoformat()}); evaluate it again with "
                                "`challenge evaluate --rerun`")
        return found

    def _relative(self, path: Path) -> str:
        absolute, root = path.absolute(), self.root.absolute()
        return str(absolute.relative_to(root)) if absolute.is_relative_to(root) else str(absolute)

    def _signed_in_history(self) -> dict[str, dt.datetime]:
        """Per result file that has held more than one record: the latest signing time of one that verifies
        (a hand-made record with a time to come counts for nothing). One `git log` and one `git cat-file`."""
        if self._latest is None:
            base = TreePaths(self.root).base.relative_to(self.root)
            held = {path: blobs - {"0" * 40} for path, blobs in versions(self.root, f":(glob){base}/*/results/**")
                    .items() if path.endswith(".json")}
            several = {path: blobs for path, blobs in held.items() if len(blobs) > 1}
            content = read_blobs(self.root, sorted({blob for blobs in several.values() for blob in blobs}))
            self._latest = {}
            for path, blobs in several.items():
                times = [when for blob in blobs if blob in content
                         and (when := self._signed_time(content[blob], self.root / path)) is not None]
                if times:
                    self._latest[path] = max(times)
        return self._latest

    def _signed_time(self, data: bytes, path: Path) -> dt.datetime | None:
        try:
            return self.signed_time(parse_result(data, path))
        except ChallengeError:
            return None

    def signed_time(self, record: Result) -> dt.datetime | None:
        """When a record (of now or of the past) was signed, if its signature verifies; its provenance is not
        checked against the tree, which has changed since."""
        if self.signers is None or record.provenance is None:
            return None
        try:
            when = parse_time(record.provenance.signed_at)
            self.signers.verify(record.document(), when=when)
        except (BadSignature, ValueError, TypeError):
            return None
        return when

    def _moved(self, result: Result, path: Path) -> str:
        paths = TreePaths(self.root)
        named = paths.result_file(result.challenge, result.phase, result.participant, result.submission)
        return "" if path.absolute() == named.absolute() else f"its record names another place: {named}"

    def _agrees(self, result: Result) -> Check | None:
        """Why the provenance disagrees with the tree, or None."""
        assert result.provenance is not None
        paths = TreePaths(self.root)
        submission = paths.submission_file(result.challenge, result.phase, result.participant, result.submission)
        if submission.is_symlink() or not submission.is_file():  # a link may point anywhere (/dev/zero)
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


def _same_signing(public: Result, whole: Result) -> bool:
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
