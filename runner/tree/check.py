"""`challenge check`: everything an organizer or a pull request can add, validated in one run.

Each file is validated on its own against its declared kind, and each problem is reported once,
at the file that has it: a submission is not blamed for its broken phase file, which gets its own
lines. Then what spans files: a parent phase and a combined leaderboard's phases exist, a
submission's phase takes what it submits and its predictions file has the pinned hash, every
phase has an evaluation container, a phase that wants verified participants is in a challenge
that registers them, and a hidden phase (`public: false`) takes no submissions now or later (the
one rule that reads the clock: `now`). Last, score paths are tried on the results already committed:
one that matches nothing in any succeeded result whose scores can be read is a warning (printed, not
a failure: a typo in score_jsonpath leaves everyone unranked, but a new phase has no results yet to
try it on, and a blind phase's public records hold no scores to try it on), as is one reading a
runner measurement that the phase's mode never writes, results or not.
"""

from __future__ import annotations

import datetime as dt
import difflib
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runner.errors import ChallengeError
from runner.tree.details import predictions_problem, supplementary_problem
from runner.tree.jsonpaths import PLAIN, lookup, lookup_all
from runner.tree.loading import (
    load_approvals,
    load_challenge,
    load_exclusions,
    load_phase,
    load_report,
    load_submission,
)
from runner.tree.located import Key, ModelError, load_yaml
from runner.tree.paths import LEADERBOARDS, companion_file
from runner.tree.people import load_registration, load_teams
from runner.tree.phase_model import Phase, unwritten_runner_path
from runner.tree.policy import closed_for_good, withholds
from runner.tree.records import GITHUB
from runner.tree.result_model import Result, load_result, scored_document
from runner.tree.schema_parse import each_problem
from runner.tree.schema_types import LOGIN, NAME
from runner.tree.sealing import SSH_KINDS, SealError, recipient
from runner.tree.sharing import describe, shared_images
from runner.tree.store import Store
from runner.tree.submission_model import Submission

KNOWN = "a challenge, phase, submission, method report, result, approvals, exclusions, teams or registration file"
MAX_SUGGESTED_PATHS = 2000  # leaf paths gathered from results for a "did you mean"


@dataclass
class Report:
    """The problems (each fails the check) and warnings (printed only) of one run."""

    problems: list[ModelError] = field(default_factory=list)
    warnings: list[ModelError] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


FilesRead = Callable[[int, int], None]  # files read so far, of how many
PROGRESS_EVERY = 1000  # files between two calls of `progress`: a million submissions, a thousand calls


def check(store: Store, only: Path | None = None, *, now: dt.datetime | None = None,
          progress: FilesRead | None = None) -> Report:
    """Every problem in the tree, or in one file or folder of it, each located. `now` (default: the clock) is
    when a hidden phase must already be closed to submissions; `progress` hears how far the files are read."""
    target = (only or store.base).resolve()
    if not target.exists():
        return Report([ModelError(target, None, None, "does not exist")])
    files = [target] if target.is_file() else _files(target)
    checker = _Checker(store, now or dt.datetime.now(dt.UTC))
    for done, path in enumerate(files):
        if progress is not None and done % PROGRESS_EVERY == 0:
            progress(done, len(files))
        kind = kind_of(store, path)
        if kind is not None:
            checker.file(kind, path)
        elif target.is_file():
            checker.report.problems.append(ModelError(path, None, None, f"is not {KNOWN}"))
    if progress is not None:
        progress(len(files), len(files))
    checker.evaluations()
    checker.same_images()
    for found in (checker.report.problems, checker.report.warnings):
        found.sort(key=lambda p: (str(p.path), p.line or 0))  # by file, then line; whole-file ones first
    return checker.report


def _files(folder: Path) -> list[Path]:
    """The files under `folder` as `Path.rglob` and `Path.is_file` find them (links to files included,
    linked folders not entered), in the order of sorted Paths; by `os.scandir`, whose entries know
    their type without a `stat` each: two million files of a living benchmark, listed in seconds."""
    found, folders = [], [str(folder)]
    while folders:
        try:
            entries = os.scandir(folders.pop())
        except PermissionError:  # as rglob: a folder that cannot be read is left out
            continue
        with entries:
            for entry in entries:
                try:
                    if entry.is_dir(follow_symlinks=False):
                        folders.append(entry.path)
                    elif entry.is_file():
                        found.append(entry.path)
                except OSError:  # Path.is_file's answer for a link that loops or runs through a file: not one
                    continue
    return [Path(path) for path in sorted(found, key=lambda path: path.split(os.sep))]


def kind_of(store: Store, path: Path) -> str | None:
    """Which kind of file `path` is, from where it sits in the tree (None: not one of ours)."""
    try:
        parts = path.relative_to(store.base).parts
    except ValueError:
        return None
    folder, name, suffix = (parts[1] if len(parts) > 1 else ""), parts[-1], path.suffix
    if len(parts) == 2 and name in ("challenge.yml", "teams.yml"):
        return name.removesuffix(".yml")
    if folder == "submissions" and suffix in (".yml", ".yaml"):
        return "submission"
    if folder == "results" and suffix == ".json":
        return "result"
    if folder == "reports" and suffix == ".yml":
        return "report"
    flat = {"phases": "phase", "approvals": "approvals", "exclusions": "exclusions", "registrations": "registration"}
    return flat.get(folder) if len(parts) == 3 and suffix == ".yml" else None


class _Checker:
    """One run's state: the report, and the phases found without an evaluation container."""

    def __init__(self, store: Store, now: dt.datetime):
        self.store, self.report, self.now = store, Report(), now
        self.unevaluated: dict[str, list[str]] = {}
        self.submissions: list[Submission] = []  # the valid ones, for what spans them (the same image)
        # Asked of every submission (a million, in a living benchmark): read once per challenge and phase.
        self.phase_names: dict[str, list[str]] = {}
        self.phases: dict[tuple[str, str], Phase | None] = {}
        self.handlers: dict[str, Callable[[Path], object]] = {
            "challenge": self.challenge, "phase": self.phase, "submission": self.submission,
            "result": load_result, "approvals": self.approvals, "exclusions": self.exclusions, "teams": self.teams,
            "registration": self.registration, "report": self.method_report}

    def file(self, kind: str, path: Path) -> None:
        try:
            self.handlers[kind](path)
        except ModelError as exc:
            self.report.problems.extend(each_problem(exc))
        except UnicodeDecodeError:
            self.report.problems.append(ModelError(path, None, None, "is not UTF-8 text"))
        except OSError as exc:
            self.report.problems.append(ModelError(path, None, None, f"cannot read: {exc.strerror}"))

    def problem(self, path: Path, key: Key | None, message: str) -> None:
        error = load_yaml(path).error(key, message) if key is not None else ModelError(path, None, None, message)
        self.report.problems.append(error)

    def challenge(self, path: Path) -> None:
        challenge = load_challenge(path)
        phases = {p.stem for p in (path.parent / "phases").glob("*.yml")}
        if phases and not challenge.hosted_here:
            self.problem(path, ("platform",), f"a challenge hosted on {challenge.platform} takes no submissions here: "
                                              "remove its phases/, or set platform: self-hosted")
        for i, text in enumerate(challenge.recipients):
            if text.startswith(GITHUB):
                self._github_keys(path, ("recipients", i), text.removeprefix(GITHUB))
            else:
                self._key(path, ("recipients", i), text)
        if challenge.publish_key:
            self._key(path, ("publish_key",), challenge.publish_key)
        if (path.parent / LEADERBOARDS).exists():
            self.report.warnings.append(ModelError(path.parent / LEADERBOARDS, None, None, (
                "the site writes this challenge's leaderboards here, so nothing in this folder is published: "
                "move your pages to another folder")))
        for i, board in enumerate(challenge.combined_leaderboards):
            for j, (phase, _) in enumerate(board.phases):
                if phase not in phases:
                    self.problem(path, ("combined_leaderboards", i, "phases", j, "phase"),
                                 f"no phase {phase!r} in this challenge")

    def _key(self, path: Path, key: Key, text: str) -> None:
        try:
            recipient(text)
        except SealError as exc:
            self.problem(path, key, str(exc).removeprefix("recipient: "))

    def _github_keys(self, path: Path, key: Key, login: str) -> None:
        """An organizer named by login must have a key GitHub publishes that results can be sealed to: found
        here, not as every withheld result of the phase left pending. Read only where the store may ask GitHub."""
        if self.store.keys.github_keys is None:
            return
        try:
            published = self.store.keys.logins(login)
        except ChallengeError as exc:
            why = f"GitHub's keys of {login} could not be read ({exc}); they are checked when results are sealed"
            self.report.warnings.append(load_yaml(path).error(key, why))
            return
        if not [k for k in published if k.split(" ", 1)[0] in SSH_KINDS]:
            kinds = ", ".join(sorted({k.split(" ", 1)[0] for k in published})) or "none at all"
            self.problem(path, key, f"{GITHUB}{login} has no ed25519 or RSA key on GitHub ({kinds}): nothing can be "
                                    "sealed to them; add one there, or write an age or SSH public key here")

    def teams(self, path: Path) -> None:
        """A team may not be named like a registered participant, or (where GitHub is configured) like any
        GitHub account, who is not in it: they would share the folder, and the team's members would read
        that person's sealed logs."""
        registered = {p.stem.lower(): p.stem for p in (path.parent / "registrations").glob("*.yml")}
        for team, members in load_teams(path).items():
            if team.lower() in members:
                continue
            if login := registered.get(team.lower()):
                self.problem(path, (team,), f"team {team!r} has the name of the registered participant {login}, who "
                                            "is not in it: rename the team")
            elif self._account(path, team):
                self.problem(path, (team,), f"team {team!r} has the name of the GitHub account {team}, who is not "
                                            "in it: rename the team")

    def _account(self, path: Path, login: str) -> bool:
        """Whether GitHub has an account named `login`; False where GitHub is not configured. Where GitHub
        cannot say, that is a problem too: a check that passes untried would pass the name."""
        exists = self.store.keys.github_account
        if exists is None:
            return False
        try:
            return exists(login)
        except ChallengeError as exc:
            self.problem(path, (login,), f"whether GitHub has an account named {login} could not be read ({exc}): "
                                         "run the check again")
            return False

    def phase(self, path: Path) -> None:
        slug = path.parent.parent.name
        phase = load_phase(path, slug)
        if withholds(phase) and not self._sealable(slug):
            self.problem(path, None, f"this phase withholds part of its results, but challenges/{slug}/challenge.yml "
                                     "names no recipients or publish_key to seal them to: add the organizers' keys "
                                     "(recipients) and the site's publish_key (`challenge keys new`)")
        if phase.parent and not (path.parent / f"{phase.parent}.yml").is_file():
            self.problem(path, ("parent",), f"no phase {phase.parent!r} in this challenge")
        if not phase.public and not closed_for_good(phase, self.now):
            self.problem(path, ("public",), "false hides a phase that takes submissions now or later; grand-challenge "
                                            "hides only a closed phase: set submissions_close_at to a past time, or "
                                            "submissions_limit_per_user_per_period: 0")
        if phase.creator_must_be_verified and self._registration(slug) == "open":
            self.problem(path, ("creator_must_be_verified",), (
                f"true needs verified participants, and challenges/{slug}/challenge.yml lets anyone submit: set "
                "registration: required there, so an organizer approves each participant by merging their "
                "registration"))
        cycle = self._cycle(slug, phase)
        if cycle and min(cycle) == phase.slug:  # one problem per cycle, at its first phase by name
            self.problem(path, ("parent",), f"parents go round in a cycle: {' -> '.join([*cycle, cycle[0]])}; "
                                            "no one could submit to these phases")
        if not phase.evaluation_image and not (self.store.base / slug / "evaluation" / "Dockerfile").is_file():
            self.unevaluated.setdefault(slug, []).append(phase.slug)
        self.report.warnings.extend(score_path_warnings(path, phase, self._results(slug, phase.slug)))

    def _registration(self, slug: str) -> str | None:
        """The challenge's registration; None when its file is broken (reported with it)."""
        try:
            return self.store.challenge(slug).registration
        except ModelError:
            return None

    def _sealable(self, slug: str) -> bool:
        try:
            challenge = self.store.challenge(slug)
        except ModelError:
            return True  # the challenge's own problems are reported with it
        return bool(challenge.recipients or challenge.publish_key)

    def _cycle(self, slug: str, phase: Phase) -> list[str]:
        """The phases from `phase` back to itself by parents, if they go round (readable ones only)."""
        seen = [phase.slug]
        parent = phase.parent
        while parent and parent not in seen:
            seen.append(parent)
            try:
                parent = self.store.phase(slug, parent).parent
            except ModelError:
                return []
        return seen if parent == phase.slug and len(seen) > 1 else []

    def _results(self, slug: str, phase: str) -> Iterator[Result]:
        """The phase's committed results that can be read (the others are reported as files), read as they are
        asked for: whole where the runner's copies or the store's keys open what their public records withhold."""
        for path in sorted((self.store.base / slug / "results" / phase).glob("*/*.json")):
            try:
                yield self.store.read_result(path)
            except (ModelError, OSError, UnicodeDecodeError):
                continue

    def submission(self, path: Path) -> None:
        parts = path.relative_to(self.store.base).parts
        if len(parts) != 5:
            return self.problem(path, None, "a submission must sit at challenges/<challenge>/submissions/<phase>/"
                                            "<participant>/<id>.yml")
        slug, _, phase, participant, _ = parts
        if (phases := self.phase_names.get(slug)) is None:
            phases = self.phase_names[slug] = sorted(p.stem for p in self.store.paths.phases(slug).glob("*.yml"))
        if phase not in phases:
            return self.problem(path, None, f"challenge {slug!r} has no phase {phase!r} "
                                            f"(phases: {', '.join(phases) or 'none'})")
        if not NAME.fullmatch(participant):
            self.problem(path, None, f"the folder {participant!r} is not a participant name: use a GitHub login "
                                     "or a team of teams.yml")
        record = self._phase(slug, phase)
        submission = load_submission(path, challenge=slug, phase=phase, participant=participant,
                                     kind=record.submission_kind if record else None, extras=record)
        if submission.predictions is not None and submission.predictions_sha256 is not None:
            self._predictions(path, submission)
        if submission.supplementary is not None:
            self._supplementary(path, submission)
        self.submissions.append(submission)

    def _phase(self, slug: str, phase: str) -> Phase | None:
        """The phase; None when its file is broken (reported at that file, not here)."""
        if (slug, phase) not in self.phases:
            try:
                self.phases[slug, phase] = self.store.phase(slug, phase)
            except ModelError:
                self.phases[slug, phase] = None
        return self.phases[slug, phase]

    def _supplementary(self, path: Path, submission: Submission) -> None:
        found, pinned = submission.supplementary_path, submission.supplementary
        assert pinned is not None
        data = found.read_bytes() if found is not None else None
        if problem := supplementary_problem(data, pinned.sha256, name=pinned.file):
            self.problem(path, ("supplementary", problem.field), problem.message)

    def method_report(self, path: Path) -> None:
        """A method report: where it sits names a submission that is there, and its PDF is beside it as pinned.
        Who added it, when and to what result the pull-request rules judged before it was merged."""
        parts = path.relative_to(self.store.base).parts
        if len(parts) != 5:
            return self.problem(path, None, "a method report must sit at challenges/<challenge>/reports/<phase>/"
                                            "<participant>/<id>.yml, named after its submission")
        slug, _, phase, participant, _ = parts
        report = load_report(path)
        if not self.store.paths.submission_file(slug, phase, participant, path.stem).is_file():
            self.problem(path, None, f"there is no submission {participant}/{path.stem} in phase {phase!r} "
                                     "for this method report to describe")
        found = companion_file(path.parent, report.file)
        if problem := supplementary_problem(found.read_bytes() if found else None, report.sha256, name=report.file):
            self.problem(path, (problem.field,), problem.message)

    def same_images(self) -> None:
        """A warning at each submission whose image another participant submitted too (for organizers
        to decide on; `sharing` says why it is no problem of the file)."""
        shared = shared_images(self.submissions)
        for submission in self.submissions:
            if others := shared.get(submission.key):
                field = "image_archive" if submission.image_archive else "image"
                self.report.warnings.append(load_yaml(submission.path).error(
                    (field,), f"the same image was also submitted by {describe(others, self.store.root)}"))

    def exclusions(self, path: Path) -> None:
        slug, phase = path.parent.parent.name, path.stem
        if not (path.parent.parent / "phases" / path.name).is_file():
            self.problem(path, None, f"no phase {phase!r} in this challenge")
        for i, key in enumerate(load_exclusions(path)):
            participant, _, sub_id = key.partition("/")
            paths = self.store.paths
            if not (paths.submission_file(slug, phase, participant, sub_id).is_file()
                    or paths.result_file(slug, phase, participant, sub_id).is_file()):
                self.problem(path, (i, "result"), f"no submission {key} in phase {phase!r}")

    def _predictions(self, path: Path, submission: Submission) -> None:
        found, pinned = submission.predictions_path, submission.predictions_sha256
        if found is None:
            return self.problem(path, ("predictions", "file"),
                                f"{submission.predictions!r} was not found next to the submission")
        limit = self.store.phase(submission.challenge, submission.phase).predictions_max_size
        size = found.stat().st_size
        problem = predictions_problem(found.read_bytes() if size <= limit else None, pinned or "", name=found.name,
                                      max_bytes=limit, size=size)
        if problem is not None:
            self.problem(path, ("predictions", problem.field), problem.message)

    def approvals(self, path: Path) -> None:
        if not (path.parent.parent / "phases" / path.name).is_file():
            self.problem(path, None, f"no phase {path.stem!r} in this challenge")
        load_approvals(path)

    def registration(self, path: Path) -> None:
        if not LOGIN.fullmatch(path.stem):
            self.problem(path, None, f"file name {path.stem!r} is not a GitHub login: name it "
                                     "registrations/<your login>.yml")
        load_registration(path)

    def evaluations(self) -> None:
        """One problem per challenge whose phases have no evaluation container to run."""
        for slug, phases in sorted(self.unevaluated.items()):
            names = ", ".join(sorted(phases))
            self.report.problems.append(ModelError(
                self.store.base / slug / "evaluation" / "Dockerfile", None, None,
                f"is missing, and phase{'s' if len(phases) > 1 else ''} {names} set{'' if len(phases) > 1 else 's'} "
                "no evaluation_image: add the evaluation container's Dockerfile, or set evaluation_image"))


def score_path_warnings(path: Path, phase: Phase, results: Iterable[Result]) -> list[ModelError]:
    """A warning for each score path that matches nothing in any succeeded result of the phase whose
    scores can be read (results read the way the leaderboard reads them, runner measurements under
    `runner`), or, results or not, that reads a runner measurement the phase never writes. A record
    that withholds its scores holds none of them: trying a path on it proves nothing. `results` are
    read only as far as a match needs: where the first result matches every path, one is read."""
    documents, warnings = _Documents(iter(results)), []
    for key, score_path, per_case in score_paths(phase):
        if any(_matches(document, score_path, per_case) for document in documents):
            continue
        why = unwritten_runner_path(phase, score_path) or _unmatched(score_path, per_case, documents.read,
                                                                      withheld=documents.withheld)
        if why:
            warnings.append(load_yaml(path).error(key, f"{score_path!r} {why}"))
    return warnings


class _Documents:
    """The scored documents of the succeeded results whose scores can be read, each read once, when an
    iteration first reaches it; once one has run to its end, `read` holds them all and `withheld`
    counts the succeeded results that withhold their scores."""

    def __init__(self, results: Iterator[Result]):
        self.results, self.withheld = results, 0
        self.read: list[dict[str, Any]] = []

    def __iter__(self) -> Iterator[dict[str, Any]]:
        index = 0
        while index < len(self.read) or self._next():
            yield self.read[index]
            index += 1

    def _next(self) -> bool:
        for result in self.results:
            if result.status != "succeeded":
                continue
            if result.withheld:
                self.withheld += 1
                continue
            self.read.append(scored_document(result))
            return True
        return False


def _unmatched(path: str, per_case: bool, documents: list[dict[str, Any]], *, withheld: int) -> str | None:
    """What a path matching none of `documents` is told; None without documents to try it on."""
    if not documents:
        return None
    readable = f" whose scores can be read ({withheld} more withhold them)" if withheld else ""
    return (f"matches no {'values' if per_case else 'number'} in the {len(documents)} succeeded "
            f"result{'s' if len(documents) > 1 else ''} of this phase{readable}{_closest(path, documents)}")


def score_paths(phase: Phase) -> Iterator[tuple[Key, str, bool]]:
    """(where in the phase file, path, per case?) of every path the leaderboard and its ranking read."""
    yield ("score_jsonpath",), phase.score.path, False
    if phase.score.error_path:
        yield ("score_error_jsonpath",), phase.score.error_path, False
    for i, column in enumerate(phase.extra_results_columns):
        yield ("extra_results_columns", i, "path"), column.path, False
        if column.error_path:
            yield ("extra_results_columns", i, "error_path"), column.error_path, False
    if phase.score_case_jsonpath:
        yield ("score_case_jsonpath",), phase.score_case_jsonpath, True
    for i, metric in enumerate(phase.ranking_metrics):
        yield ("ranking_metrics", i, "path"), metric.path, True


def _matches(document: dict[str, Any], path: str, per_case: bool) -> bool:
    return bool(lookup_all(document, path)) if per_case else lookup(document, path) is not None


def _closest(path: str, documents: list[dict[str, Any]]) -> str:
    """"; did you mean 'x'?" with the closest number path found in the results, or nothing (and
    nothing for a path with wildcards or filters: a single number's path is no fix for it)."""
    if not PLAIN.fullmatch(path):
        return ""
    found: set[str] = set()
    for document in documents:
        found.update(_leaves(document, ""))
        if len(found) > MAX_SUGGESTED_PATHS:
            break
    close = difflib.get_close_matches(path, sorted(found), n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


def _leaves(value: Any, prefix: str) -> Iterator[str]:
    """The dotted paths of the numbers in a document."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _leaves(item, f"{prefix}.{key}" if prefix else str(key))
    elif isinstance(value, int | float) and not isinstance(value, bool):
        yield prefix
