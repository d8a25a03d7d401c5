"""The challenge tree on disk: what exists, what is pending, and atomic writes of results.

Git is the database: a submission file without a result file is pending, so a runner that dies
at any point leaves nothing half-done, and the next run picks the submission up again.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import glob
import os
from collections.abc import Callable, Iterator
from dataclasses import replace
from functools import cache
from pathlib import Path

from runner.tree.gitfiles import Added, added, added_all
from runner.tree.loading import load_approvals, load_challenge, load_phase, load_submission
from runner.tree.located import ModelError
from runner.tree.model import Challenge
from runner.tree.parsed import ParsedFiles
from runner.tree.paths import TreePaths
from runner.tree.people import load_teams
from runner.tree.phase_model import Phase
from runner.tree.policy import (
    NOT_EVALUATED,
    Allowance,
    Visibility,
    allowance,
    public_record,
    ranked_record,
    refused,
    submissions_per,
    visibility,
    withholds,
)
from runner.tree.records import Keys, local_path, read_local, read_sealed, signed, write_atomic, write_sealed
from runner.tree.result_model import Result, load_result, parse_time
from runner.tree.signing import SigningKey
from runner.tree.submission_model import Submission
from runner.tree.verification import Check, Verifier, written_together


class Store:
    """Reads `<root>/challenges/` and writes results into it."""

    def __init__(self, root: Path, *, keys: Keys = Keys(), locks: Path | None = None, withheld: Path | None = None,
                 copies: bool = True, signer: SigningKey | None = None, verifier: Verifier | None = None):
        self.root = root.resolve()
        # Submission locks and whole results: in the runner host's state folder when it has one
        # (CHALLENGE_STATE_DIR: checkouts share it, and a workflow's cleaned checkout loses nothing there).
        self.locks = locks or self.root / "build" / "locks"
        self.withheld = withheld or self.root / "build" / "withheld"
        self.copies = copies  # False: whole results only where the keys open them, never from the runner's copies
        self.paths = TreePaths(self.root)
        self.base = self.paths.base
        self.keys = keys  # to seal results, and to open sealed ones (an organizer's or the publish key)
        self.signer = signer  # the runner's key: every record it writes is signed with it
        # The site's: results that do not verify are never read as results (`publishable`), once the tree lists keys.
        self.verifier = verifier
        self.parsed: ParsedFiles | None = None  # challenge and phase files as parsed in earlier runs, if kept

    # --- challenges and phases -------------------------------------------------------------

    def slugs(self) -> list[str]:
        if not self.base.is_dir():
            return []
        return sorted(p.parent.name for p in self.base.glob("*/challenge.yml"))

    def challenge(self, slug: str) -> Challenge:
        path = self.paths.challenge_file(slug)
        mtime = _mtime(path)  # a missing file is a ModelError, kept or not
        return self.parsed.load(path, load_challenge) if self.parsed else _cached_challenge(path, mtime)

    def phases(self, slug: str) -> dict[str, Phase]:
        """The challenge's phases in the order participants meet them (see `phase_order`)."""
        paths = sorted(self.paths.phases(slug).glob("*.yml"))
        return phase_order({p.stem: self._phase(p, slug) for p in paths})

    @contextlib.contextmanager
    def keeping_parsed(self, parsed: ParsedFiles) -> Iterator[None]:
        """Challenge and phase files read through `parsed` meanwhile, which keeps them at the end."""
        previous, self.parsed = self.parsed, parsed
        try:
            yield
            parsed.save()
        finally:
            self.parsed = previous

    def phase(self, slug: str, phase: str) -> Phase:
        path = self.paths.phase_file(slug, phase)
        if not path.is_file():
            raise ModelError(path, None, None, f"challenge {slug!r} has no phase {phase!r}")
        return self._phase(path, slug)

    def _phase(self, path: Path, slug: str) -> Phase:
        mtime = _mtime(path)
        return self.parsed.load(path, load_phase, slug) if self.parsed else _cached_phase(path, slug, mtime)

    # --- submissions -------------------------------------------------------------------------

    def submission_paths(self, slug: str | None = None, *, phase: str | None = None,
                         participant: str | None = None) -> list[Path]:
        """The submission files of challenge `slug` (else of every challenge), of `phase` and `participant`
        where given (else of all): only the folders named are listed, and a folder that is a link is not
        followed (it may point at another participant's folder)."""
        slugs = [slug] if slug else self.slugs()
        return sorted(Path(p) for s in slugs for p in self._submission_files(s, phase, participant))

    def submission_count(self, slug: str, phase: str | None = None) -> int:
        """How many files `submission_paths(slug, phase)` lists, counted from the folders' entries alone (no file
        is looked at: a catalog of 300 challenges counts a million submissions on every build)."""
        return sum(1 for _ in self._submission_files(slug, phase, None))

    def submission_folders(self, slug: str) -> list[str]:
        """The folders of the challenge's submissions, one per phase, as `submission_count` walks them."""
        return _folders(str(self.paths.submissions(slug)), None)

    def result_folders(self, slug: str) -> list[str]:
        """The folders of the challenge's results, one per phase."""
        return _folders(str(self.paths.all_results(slug)), None)

    def _submission_files(self, slug: str, phase: str | None, participant: str | None) -> Iterator[str]:
        for phase_folder in _folders(str(self.paths.submissions(slug)), phase):
            for folder in _folders(phase_folder, participant):
                yield from (e.path for e in _entries(folder) if e.name.endswith(".yml") and not e.is_dir())

    def submission(self, path: Path) -> Submission:
        """Load a submission file; its place in the tree gives challenge, phase and participant."""
        path = path.absolute().parent.resolve() / path.name  # the file itself, never what it may link to
        try:
            slug, kind, phase, participant, _ = path.relative_to(self.base).parts
        except ValueError:
            raise ModelError(path, None, None, "a submission must sit at challenges/<challenge>/"
                             "submissions/<phase>/<participant>/<id>.yml") from None
        if kind != "submissions":
            raise ModelError(path, None, None, "submissions live under challenges/<challenge>/submissions/")
        phase_record = self.phase(slug, phase)
        return load_submission(path, challenge=slug, phase=phase, participant=participant,
                               kind=phase_record.submission_kind)

    def submitted_at(self, submission: Submission) -> dt.datetime:
        """When the submission landed: its first commit, or the file's time outside git."""
        return _landed(submission.path, added(self.root, str(submission.path.relative_to(self.root))))

    def landed(self, submissions: list[Submission]) -> dict[str, dt.datetime]:
        """`submitted_at` of several submissions of one participant in one phase, by id, from one walk of git's
        history (a `git log` each made judging N pending submissions N² of them)."""
        if not submissions:
            return {}
        first = submissions[0]
        folder = self.paths.submissions(first.challenge) / first.phase / first.participant
        found = added_all(self.root, f"{glob.escape(str(folder.relative_to(self.root)))}/*.yml")
        return {s.id: _landed(s.path, found.get(str(s.path.relative_to(self.root)))) for s in submissions}

    def pending(self, slug: str | None = None, *, phase: str | None = None,
                participant: str | None = None) -> list[Submission]:
        """Valid submissions without a result (narrowed as `submission_paths` is). Invalid files are `check`'s
        business, not the queue's. Only files without a result file are read: a tree of a million results
        has a million submissions, nearly all of them answered."""
        out = []
        for path in self.submission_paths(slug, phase=phase, participant=participant):
            # challenges/<challenge>/submissions/<phase>/<participant>/<id>.yml, as submission_paths lists them
            answered = self.paths.result_file(path.parents[3].name, path.parents[1].name, path.parent.name, path.stem)
            if answered.exists():
                continue
            try:
                out.append(self.submission(path))  # its place gave `answered`: no second look is needed
            except ModelError:
                continue
        return out

    # --- results -----------------------------------------------------------------------------

    def result_path(self, submission: Submission) -> Path:
        return self.paths.result_file(submission.challenge, submission.phase, submission.participant, submission.id)

    def result(self, submission: Submission) -> Result | None:
        path = self.result_path(submission)
        return self.read_result(path) if path.exists() else None

    def standing(self, phase: Phase, participant: str, *, now: dt.datetime, besides: str = "",
                 counting: int = 0) -> Allowance:
        """Where `participant` (a folder: a login or a team) stands against the phase's limit
        (`policy.allowance`): their results there, their pending submissions but `besides` (one being
        judged), and `counting` more (it, once accepted)."""
        results = self.results(phase.challenge, phase.slug, participant=participant)
        pending = [s for s in self.pending(phase.challenge, phase=phase.slug, participant=participant)
                   if s.id != besides]
        return allowance(phase, results, pending=len(pending) + counting, now=now)

    def refusal_at_landing(self, submission: Submission) -> str | None:
        """Why the queue must not evaluate `submission`: it went past its participant's limit when it landed;
        None where it did not. grand-challenge refuses such a submission when it is made. Here the review judges
        a pull request against main as it was, so several reviewed at once can all pass; the queue judges each
        again by what landed before it: its participant's other results as `allowance` counts them, and their
        submissions still pending, in the order they landed (to the second, as results record it; ties by id).
        It is judged once: a re-run keeps an evaluated result's verdict (a limit lowered since does not undo it)."""
        phase = self.phase(submission.challenge, submission.phase)
        if not phase.submissions_limit_per_user_per_period:  # none, or 0: the phase is closed (`window`)
            return None
        done = self.result(submission)
        if done is not None and not refused(done):
            return None
        who = submission.participant
        others = [s for s in self.pending(phase.challenge, phase=phase.slug, participant=who) if s.id != submission.id]
        times = {i: when.replace(microsecond=0) for i, when in self.landed([submission, *others]).items()}
        landed = times[submission.id]
        place = (landed, submission.id)
        before = [r for r in self.results(phase.challenge, phase.slug, participant=who)
                  if r.submission != submission.id and (parse_time(r.created_at), r.submission) < place]
        waiting = [s for s in others if (times[s.id], s.id) < place]
        stands = allowance(phase, before, pending=len(waiting), now=landed)
        if stands.left != 0:
            return None
        limit = submissions_per(phase.submissions_limit_per_user_per_period, phase.submission_limit_period)
        return (f"{NOT_EVALUATED}phase {phase.title!r} allows {limit}, and {who!r} had "
                f"{stands.evaluated + stands.pending} before this one when it landed ({landed:%Y-%m-%d %H:%M:%S} UTC)")

    def knows(self, slug: str, participant: str) -> bool:
        """Whether `participant` has a submission folder in any phase of challenge `slug`."""
        return any(folder.is_dir() for folder in self.paths.submissions(slug).glob(f"*/{glob.escape(participant)}"))

    def runner_result(self, submission: Submission) -> Result | None:
        """The whole result as this runner wrote it (its git-ignored copy: logs' last lines too, which no
        public record holds), where it is the one written with the public record; else what `result` reads."""
        path = self.result_path(submission)
        if not path.is_file():
            return self.local(path)
        public = load_result(path)
        return self._current_copy(path, public) or self.read_records(path, public)[1]

    def results(self, slug: str, phase: str, *, participant: str | None = None) -> list[Result]:
        """The phase's results (`participant`: only theirs): whole where the store's keys open their sealed part,
        else as public; with a verifier, only those it lets through (`publishable`)."""
        return [result for _, result, check in self.checked(slug, phase, participant=participant)
                if self.publishable(check)]

    def checked(self, slug: str, phase: str, *,
                participant: str | None = None) -> list[tuple[Path, Result, Check | None]]:
        """Each of the phase's result files (`participant`: theirs alone, read from their folder), the result read
        from it, and its verification (None without a verifier)."""
        folder = glob.escape(participant) if participant is not None else "*"
        paths = sorted(self.paths.results(slug, phase).glob(f"{folder}/*.json"))
        read = [(path, *self.read_records(path)) for path in paths]
        verifier = self.verifier
        return [(path, whole, verifier.check_current(whole, path, public=public) if verifier else None)
                for path, public, whole in read]

    def admits(self, result: Result, path: Path) -> bool:
        """Whether a record read from `path` (now, or from git history) may be read as a result (`publishable`)."""
        return self.publishable(self.verifier.check(result, path) if self.verifier else None)

    def publishable(self, check: Check | None) -> bool:
        """Whether a result with this verification may be read as a result: always without a verifier or
        in a tree that lists no runner keys (its pages then show it unverified), else only when it verified."""
        return check is None or check.verified or self.verifier is None or not self.verifier.enforced

    def read_result(self, path: Path) -> Result:
        return self.read_records(path)[1]

    def read_records(self, path: Path, public: Result | None = None) -> tuple[Result, Result]:
        """The public record at `path` (`public`, where it was read), and the whole result: the runner's copy
        or the sealed record where the store opens one, else the public record again."""
        public = public or load_result(path)
        if not public.withheld:
            return public, public
        return public, (self.copies and self._current_copy(path, public)) or read_sealed(path, self.keys) or public

    def _current_copy(self, path: Path, public: Result) -> Result | None:
        """This runner's copy of the record at `path`, unless another runner's rerun has replaced it."""
        local = self.local(path)
        return local if local is not None and written_together(public, local) else None

    def local(self, public: Path) -> Result | None:
        """The whole result this runner keeps of the public record at `public`, if it keeps one."""
        return read_local(self.withheld, self.root, public)

    def published(self, slug: str, phase: Phase | str, *, now: dt.datetime | None = None) -> list[Result]:
        """The phase's results the public may know of at `now`, as its leaderboard ranks them (`ranked`):
        all of them, or, where the phase sets auto_publish_new_results: false, those an organizer listed
        in approvals/<phase>.yml."""
        record = phase if isinstance(phase, Phase) else self.phase(slug, phase)
        return self.ranked(record, self.results(slug, record.slug), now=now)

    def public(self, phase: Phase, results: list[Result], *, now: dt.datetime | None = None) -> list[Result]:
        """What anyone may see of `results` (current or from history) at `now`: those `policy.visibility`
        lists, each cut to what `policy.public_record` shows, even where the store's keys open more."""
        return self._listed(phase, results, now=now, cut=public_record)

    def ranked(self, phase: Phase, results: list[Result], *, now: dt.datetime | None = None) -> list[Result]:
        """The listed `results` as a public leaderboard ranks them (`policy.ranked_record`): a table of ranks
        and public columns may be made of them, and anything else shown must go through `public_record`."""
        return self._listed(phase, results, now=now, cut=ranked_record)

    def _listed(self, phase: Phase, results: list[Result], *, now: dt.datetime | None,
                cut: Callable[[Result, Phase, Visibility], Result]) -> list[Result]:
        approved, now = self.approvals(phase.challenge, phase.slug), now or dt.datetime.now(dt.UTC)
        # What may be shown depends on the phase, `now` and whether the result is approved: two answers, not
        # one per result (each dated snapshot lists the phase's results again).
        answers = {True: visibility(phase, now=now, approved=True), False: visibility(phase, now=now, approved=False)}
        shown = [(r, answers[f"{r.participant}/{r.submission}" in approved]) for r in results]
        return [cut(r, phase, seen) for r, seen in shown if seen.listed]

    def visibility(self, phase: Phase, result: Result, *, now: dt.datetime | None,
                   approved: set[str] | None = None) -> Visibility:
        """What may be shown of `result` now (`policy.visibility` with its approval read here)."""
        if approved is None:
            approved = self.approvals(phase.challenge, phase.slug)
        return visibility(phase, now=now or dt.datetime.now(dt.UTC),
                          approved=f"{result.participant}/{result.submission}" in approved)

    def approvals(self, slug: str, phase: str) -> set[str]:
        """approvals/<phase>.yml: a list of participant/id an organizer published (by a commit)."""
        path = self.paths.approvals_file(slug, phase)
        return set(load_approvals(path)) if path.is_file() else set()

    def write_result(self, submission: Submission, result: Result, *, now: dt.datetime | None = None) -> Path:
        """Write the result's public record, after sealing what its phase withholds (`tree.records`);
        each file through a temporary file and a rename, so a reader never sees half of one."""
        path = self.result_path(submission)
        phase = self.phase(submission.challenge, submission.phase)
        if self.signer is not None and result.provenance is not None:
            signing = (now or dt.datetime.now(dt.UTC)).isoformat(timespec="seconds")
            result = replace(result, provenance=replace(result.provenance, signed_at=signing))
        public = public_record(result, phase, self.visibility(phase, result, now=now))
        if withholds(phase) or public != result:  # the runner keeps the whole result (git-ignored)
            write_atomic(local_path(self.withheld, self.root, path), signed(result, self.signer).to_json().encode())
        if withholds(phase):
            write_sealed(path, result, challenge=self.challenge(submission.challenge), keys=self.keys,
                         participants=self.logins(submission.challenge, submission.participant), signer=self.signer)
        write_atomic(path, signed(public, self.signer).to_json().encode())
        return path

    def logins(self, slug: str, participant: str) -> list[str]:
        """The GitHub logins behind a participant folder: a team's members, or the login itself."""
        return sorted(load_teams(self.paths.teams_file(slug)).get(participant, frozenset())) or [participant]

    @contextlib.contextmanager
    def lock(self, submission: Submission) -> Iterator[bool]:
        """An exclusive lock per submission that the kernel drops when its holder dies."""
        lock_dir = self.locks
        lock_dir.mkdir(parents=True, exist_ok=True)
        name = submission.key.replace("/", "__") + ".lock"
        with open(lock_dir / name, "w") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                yield False
                return
            try:
                yield True
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)


def phase_order(phases: dict[str, Phase]) -> dict[str, Phase]:
    """Phases by when they open (never-opening ones first), then by slug, except that a parent
    always comes before its children (a final phase after the qualifying one it requires)."""
    never = dt.datetime.min.replace(tzinfo=dt.UTC)
    waiting = sorted(phases.values(), key=lambda p: (p.submissions_open_at or never, p.slug))
    ordered: dict[str, Phase] = {}
    while waiting:
        # The earliest phase whose parent is placed (or unknown: `check` reports that); on a cycle, the earliest.
        phase = next((p for p in waiting if p.parent in ordered or p.parent not in phases), waiting[0])
        ordered[phase.slug] = phase
        waiting.remove(phase)
    return ordered


def _entries(folder: str) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(folder) as found:
            return list(found)
    except (FileNotFoundError, NotADirectoryError):
        return []


def _folders(folder: str, name: str | None) -> list[str]:
    """The folders in `folder` (`name` alone, where given), links to folders left out."""
    return [e.path for e in _entries(folder) if e.is_dir(follow_symlinks=False) and name in (None, e.name)]


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except FileNotFoundError:
        raise ModelError(path, None, None, "does not exist") from None


# Keyed on modification time so `challenge serve` sees edits without restarting (Store.parsed, where set,
# keeps them between runs instead).
@cache
def _cached_challenge(path: Path, _mtime: float) -> Challenge:
    return load_challenge(path)


@cache
def _cached_phase(path: Path, slug: str, _mtime: float) -> Phase:
    return load_phase(path, slug)


def _landed(path: Path, found: Added | None) -> dt.datetime:
    """When a file landed: the commit that added it, or its time outside git."""
    return found.at if found is not None else dt.datetime.fromtimestamp(path.stat().st_mtime, dt.UTC)
