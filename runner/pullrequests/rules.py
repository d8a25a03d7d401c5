"""May this pull request's submission run? Each rule that fails gives one line its author can act on.

The rules read plain records (the files a pull request changes, and a way to read the one it
adds), so the same code judges a git diff in the untrusted validate workflow and a pull request
read through the API at a fixed commit in the trusted one. The challenge tree they consult
(phases, teams, registrations, results) is always the default branch's.
"""

from __future__ import annotations

import datetime as dt
import re
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path, PurePosixPath
from typing import TypeVar

from runner.errors import printable
from runner.tree.details import predictions_problem, supplementary_problem
from runner.tree.loading import load_challenge, load_report, load_submission
from runner.tree.located import PARTICIPANT, ModelError, check_size, load_yaml
from runner.tree.model import Challenge
from runner.tree.paths import CHALLENGES, IN_RESULTS, LISTING_PATH, REGISTRATION_PATH, REPORT_PATH, SUBMISSION_PATH
from runner.tree.paths import SUBMISSION_WHERE as WHERE
from runner.tree.people import load_registration, load_teams
from runner.tree.phase_model import Phase
from runner.tree.policy import report_window, when, window
from runner.tree.references import image_refusal
from runner.tree.scaffold import MAX_SLUG
from runner.tree.schema_types import NAME, SLUG
from runner.tree.sharing import algorithm_identity, describe, same_image
from runner.tree.store import Store
from runner.tree.submission_model import Submission

MAX_LISTED = 10  # other changed files named one by one; the rest are counted
T = TypeVar("T")


@dataclass(frozen=True)
class Change:
    """One file a pull request changes, in GitHub's words (added, modified, removed, renamed)."""

    path: str
    status: str
    previous: str | None = None


@dataclass(frozen=True)
class Proposal:
    """A pull request as the rules see it: who opened it, what it changes, and how to read its files."""

    author: str
    changes: tuple[Change, ...]
    read: Callable[[str], bytes | None]  # a regular file's bytes at the head; None for a link or submodule


@dataclass(frozen=True)
class Verdict:
    kind: str  # submission, report (a method report added later), registration, listing, or unknown (none found)
    path: str | None
    problems: tuple[str, ...]
    notes: tuple[str, ...] = ()  # for organizers, never a refusal (the same image as another participant's)
    standing: str = ""  # for the participant, once accepted: what is left of the limit with this one counted

    @property
    def ok(self) -> bool:
        return not self.problems


def check(store: Store, proposal: Proposal, *, now: dt.datetime, allow_local_images: bool = False) -> Verdict:
    """Every rule's verdict on the proposal, judged against the tree in `store`. Every line is printable
    (`runner.errors.printable`): file names and values from the pull request reach a terminal, a JSON
    verdict and a comment."""
    verdict = _verdict(store, proposal, now=now, allow_local_images=allow_local_images)
    return Verdict(verdict.kind, verdict.path and printable(verdict.path),
                   tuple(printable(line) for line in verdict.problems), tuple(printable(n) for n in verdict.notes),
                   printable(verdict.standing))


def _verdict(store: Store, proposal: Proposal, *, now: dt.datetime, allow_local_images: bool) -> Verdict:
    if unreadable := [c.path for c in proposal.changes if not _utf8(c.path)]:
        return Verdict("unknown", None, tuple(f"{printable(path)}: this file name is not UTF-8 text; a pull "
                                              "request may name its files in UTF-8 only"
                                              for path in unreadable[:MAX_LISTED]))
    if results := [path for c in proposal.changes for path in (c.path, c.previous) if _result(path)]:
        return Verdict("unknown", None, tuple(f"{path}: results are written and signed by the runner only; a pull "
                                              "request may not add, change or remove one"
                                              for path in results[:MAX_LISTED]))
    target = _target(proposal.changes)
    if target is None:
        return Verdict("unknown", None, tuple(_unknown(proposal.changes)))
    if match := REGISTRATION_PATH.fullmatch(target.path):
        problems = _registration_file(store, proposal, target, match, now)
        return Verdict("registration", target.path, (*_others(proposal.changes, target), *problems))
    if match := LISTING_PATH.fullmatch(target.path):
        problems = _listing(store, proposal, target, match["challenge"])
        return Verdict("listing", target.path, (*_others(proposal.changes, target), *problems))
    if match := REPORT_PATH.fullmatch(target.path):
        return Verdict("report", target.path, tuple(_report(store, proposal, target, match, now)))
    refusals = tuple(_submission(store, proposal, target, now, allow_local_images))
    if refusals:
        return Verdict("submission", target.path, refusals)
    return Verdict("submission", target.path, refusals, tuple(_notes(store, proposal, target)),
                   _standing_after(store, target, now))


def _result(path: str | None) -> bool:
    """Whether `path` lies in a challenge's results (a rename's old path counts: it removes a result)."""
    return path is not None and IN_RESULTS.match(path) is not None


def _utf8(path: str) -> bool:
    try:
        path.encode("utf-8")
        return True
    except UnicodeEncodeError:  # git's bytes kept as surrogate escapes
        return False


def _target(changes: tuple[Change, ...]) -> Change | None:
    found = [c for c in changes if _proposed(c)]
    return found[0] if len(found) == 1 else None


def _proposed(change: Change) -> bool:
    return any(pattern.fullmatch(change.path)
               for pattern in (SUBMISSION_PATH, REPORT_PATH, REGISTRATION_PATH, LISTING_PATH))


def _unknown(changes: tuple[Change, ...]) -> list[str]:
    touched = [c.path for c in changes if _proposed(c)]
    if touched:
        shown = ", ".join(touched[:3]) + (", ..." if len(touched) > 3 else "")
        return [f"this pull request touches {len(touched)} submission or registration files ({shown}); "
                "add exactly one per pull request"]
    return [f"this pull request adds no submission: add one file at {WHERE}"]


def _others(changes: tuple[Change, ...], target: Change, companions: tuple[str, ...] = ()) -> list[str]:
    """One line per file the pull request changes besides its own file (and the files it adds beside it:
    predictions, a supplementary PDF)."""
    others = [c for c in changes if c is not target and not (c.path in companions and c.status == "added")]
    verbs = {"added": "adds", "removed": "removes", "renamed": "renames"}
    lines = [f"{c.path}: this pull request {verbs.get(c.status, 'changes')} it, but a submission pull request "
             "adds one file and changes nothing else" for c in others[:MAX_LISTED]]
    if len(others) > MAX_LISTED:
        lines.append(f"... and {len(others) - MAX_LISTED} more changed files")
    return lines


def _not_added(change: Change) -> list[str]:
    if change.status == "added":
        return []
    if change.status == "removed":
        return [f"{change.path}: this pull request removes it; submissions are never removed by pull request"]
    return [f"{change.path} already exists: a submission is a new file, so add one with a new id instead of "
            "changing this one"]


# --- the submission file -----------------------------------------------------------------------


def _submission(store: Store, proposal: Proposal, target: Change, now: dt.datetime,
                allow_local: bool) -> list[str]:
    match = SUBMISSION_PATH.fullmatch(target.path)
    assert match is not None  # `_target` chose it by this pattern
    slug, participant, sub_id = match["challenge"], match["participant"], match["id"]
    if problems := _not_added(target) or _where(store, slug, match["phase"]):
        return [*_others(proposal.changes, target), *problems]
    phase = store.phase(slug, match["phase"])
    try:
        submission = _load(proposal, target.path, slug=slug, phase=phase, participant=participant)
        content = [*_image(submission, target.path, phase, allow_local),
                   *_predictions(store, proposal, target.path, submission),
                   *_supplementary(store, proposal, target.path, submission)]
    except ModelError as exc:
        submission, content = None, [str(exc)]
    return [*_others(proposal.changes, target, _companions(target.path, submission)),
            *_identity(store, slug, participant, proposal.author),
            *_verified(store.challenge(slug), phase), *_registered(store, store.challenge(slug), proposal.author, now),
            *content,
            *_window(phase, now), *_parent(store, phase, participant), *_limit(store, phase, participant, sub_id, now)]


def _where(store: Store, slug: str, phase: str) -> list[str]:
    slugs = store.slugs()
    if slug not in slugs:
        return [f"there is no challenge {slug!r} (challenges: {', '.join(slugs) or 'none'}); submit at {WHERE}"]
    phases = store.phases(slug)
    if phase not in phases:
        return [f"challenge {slug!r} has no phase {phase!r} (phases: {', '.join(phases) or 'none'})"]
    return []


def _identity(store: Store, slug: str, participant: str, author: str) -> list[str]:
    if not NAME.fullmatch(participant):
        return [f"{participant!r} is not a participant name: use your GitHub login ({author})"]
    path = store.paths.teams_file(slug)
    teams = load_teams(path)
    if participant.lower() == author.lower():
        # A team named like this login would share the folder, and its members would read this login's sealed logs.
        team = next((t for t in teams if t.lower() == author.lower()), None)
        if team is not None and author.lower() not in teams[team]:
            return [f"the folder {participant!r} is also the name of a team in {path.relative_to(store.root)} that "
                    "you are not in: ask the organizers to rename that team"]
        if participant != author:  # GitHub logins ignore case; one spelling keeps one participant
            return [f"the folder {participant!r} must be spelled as your GitHub login: submissions/<phase>/{author}/"]
        # A member submits as the team alone: under the login too, they would have its limit and their own.
        if joined := sorted(t for t, members in teams.items() if author.lower() in members and t != team):
            return [f"you are a member of team {joined[0]!r} in {path.relative_to(store.root)}: submit as the team, "
                    f"under submissions/<phase>/{joined[0]}/, which shares one limit"]
        return []
    if author.lower() in teams.get(participant, frozenset()):
        return []
    if spelled := next((team for team in teams if team.lower() == participant.lower()), None):
        return [f"the folder {participant!r} must be spelled as the team is in "
                f"{path.relative_to(store.root)}: {spelled!r}"]
    return [f"the folder {participant!r} is neither your GitHub login ({author}) nor a team of yours in "
            f"{path.relative_to(store.root)}: submit under submissions/<phase>/{author}/"]


def proposed_file(proposal: Proposal, rel: str, load: Callable[[Path], T]) -> T:
    """Load the proposed file from a scratch copy (same name), naming it by its repository path in errors.
    It is first read as the participant's file it is: refused by size before any parsing, then held
    to the participant policy (strict UTF-8, standard tags, no aliases) before `load` sees it."""

    content = proposal.read(rel)
    if content is None:
        raise ModelError(rel, None, None, "must be a regular file, not a symbolic link or submodule")
    check_size(rel, len(content), PARTICIPANT)
    with tempfile.TemporaryDirectory(prefix="challenge-proposal-") as tmp:
        path = Path(tmp) / PurePosixPath(rel).name
        path.write_bytes(content)
        try:
            load_yaml(path, PARTICIPANT)
            return load(path)
        except ModelError as exc:
            raise ModelError(rel, exc.line, exc.field, exc.message) from None


def _image(submission: Submission, rel: str, phase: Phase, allow_local: bool) -> list[str]:
    if submission.image is None:
        return []
    if why := image_refusal(submission.image, allowed=phase.allowed_registries, allow_local=allow_local):
        return [f"{rel}: image: {why}"]
    return []


def _companions(rel: str, submission: Submission | None) -> tuple[str, ...]:
    """The files committed next to a submission (its predictions, its supplementary PDF): the other
    files its pull request may add."""
    if submission is None:
        return ()
    extra = submission.supplementary.file if submission.supplementary else None
    return tuple(str(PurePosixPath(rel).parent / name) for name in (submission.predictions, extra) if name)


def _load(proposal: Proposal, rel: str, *, slug: str, phase: Phase, participant: str) -> Submission:
    return proposed_file(proposal, rel, lambda path: load_submission(
        path, challenge=slug, phase=phase.slug, participant=participant, kind=phase.submission_kind, extras=phase))


def _supplementary(store: Store, proposal: Proposal, rel: str, submission: Submission) -> list[str]:
    """The supplementary PDF the submission pins, as the pull request adds it beside the file (or as the
    default branch already has it there)."""
    if submission.supplementary is None:
        return []
    name = submission.supplementary.file
    problem = supplementary_problem(_companion(store, proposal, rel, name), submission.supplementary.sha256, name=name)
    return [f"{rel}: supplementary.{problem.field}: {problem.message}"] if problem else []


def _predictions(store: Store, proposal: Proposal, rel: str, submission: Submission) -> list[str]:
    """The predictions file the submission pins, as the pull request adds it beside the file (or as the
    default branch already has it there)."""
    if submission.predictions is None:
        return []
    data = _companion(store, proposal, rel, submission.predictions)  # predictions_sha256 is set with predictions
    limit = store.phase(submission.challenge, submission.phase).predictions_max_size
    problem = predictions_problem(data, submission.predictions_sha256 or "", name=submission.predictions,
                                  max_bytes=limit)
    return [f"{rel}: predictions.{problem.field}: {problem.message}"] if problem else []


def _companion(store: Store, proposal: Proposal, rel: str, name: str) -> bytes | None:
    """A file beside the submission (its name is never a path: the schema says so), as the pull request
    adds it or the default branch has it; None for a missing file, a link or a submodule."""
    path = str(PurePosixPath(rel).parent / name)
    added = any(c.path == path and c.status == "added" for c in proposal.changes)
    return proposal.read(path) if added or (store.root / path).is_file() else None


def _notes(store: Store, proposal: Proposal, target: Change) -> list[str]:
    """What organizers should know of a valid submission: another participant submitted the same image."""
    match = SUBMISSION_PATH.fullmatch(target.path)
    assert match is not None  # the target is a submission's path
    phase = store.phase(match["challenge"], match["phase"])
    submission = _load(proposal, target.path, slug=match["challenge"], phase=phase,
                       participant=match["participant"])
    others = same_image(store, submission)
    if not others:
        return []
    return [f"the same image ({algorithm_identity(submission)}) was also submitted by "
            f"{describe(others, store.root)}: organizers, see whether this is one team (teams.yml) or shared work"]


# --- the phase's rules -------------------------------------------------------------------------


def _window(phase: Phase, now: dt.datetime) -> list[str]:
    state = window(phase, now)
    return [] if state.open else [state.reason]


def _parent(store: Store, phase: Phase, participant: str) -> list[str]:
    """A succeeded result in the parent phase: the participant's, or for a team one of its members' own (who
    must submit as the team once in it, as `_identity` says)."""
    if not phase.parent:
        return []
    members = load_teams(store.paths.teams_file(phase.challenge)).get(participant, frozenset())
    if any((r.participant == participant or r.participant.lower() in members) and r.status == "succeeded"
           for r in store.results(phase.challenge, phase.parent)):
        return []
    parent = store.phase(phase.challenge, phase.parent)
    return [f"phase {phase.title!r} needs a succeeded result of {participant!r} in phase {parent.title!r}: "
            "submit there first"]


def _limit(store: Store, phase: Phase, participant: str, sub_id: str, now: dt.datetime) -> list[str]:
    """grand-challenge's limit (`policy.allowance`): refused when none is left with this one counted."""
    stands = store.standing(phase, participant, now=now, besides=sub_id)
    if stands.left is None or stands.left > 0 or stands.limit == 0:  # a limit of 0: `window` says it is closed
        return []
    return [stands.line(phase, participant, now)]


def _standing_after(store: Store, target: Change, now: dt.datetime) -> str:
    """What the accepted submission leaves of its participant's limit (the acceptance comment says it)."""
    match = SUBMISSION_PATH.fullmatch(target.path)
    assert match is not None  # `_target` chose it by this pattern
    phase = store.phase(match["challenge"], match["phase"])
    after = store.standing(phase, match["participant"], now=now, besides=match["id"], counting=1)
    return after.line(phase, match["participant"], now)


# --- method reports --------------------------------------------------------------------------------


def _report(store: Store, proposal: Proposal, target: Change, match: re.Match[str], now: dt.datetime) -> list[str]:
    """A method report added to a submission of the author's with a succeeded result, while the phase takes
    reports: the report file and the PDF it pins beside it, nothing else. The submission and its result stay
    as they are (the runner evaluated and signed them), so nothing is evaluated again and both still verify."""
    slug, participant, sub_id = match["challenge"], match["participant"], match["id"]
    if problems := _report_change(target) or _where(store, slug, match["phase"]):
        return [*_others(proposal.changes, target), *problems]
    phase = store.phase(slug, match["phase"])
    companions: tuple[str, ...] = ()  # the PDF the report pins, the one other file it may add
    try:
        report = proposed_file(proposal, target.path, load_report)
        name, companions = report.file, (str(PurePosixPath(target.path).parent / report.file),)
        problem = supplementary_problem(_companion(store, proposal, target.path, name), report.sha256, name=name)
        content = [f"{target.path}: {problem.field}: {problem.message}"] if problem else []
    except ModelError as exc:
        content = [str(exc)]
    return [*_others(proposal.changes, target, companions), *_identity(store, slug, participant, proposal.author),
            *_verified(store.challenge(slug), phase),
            *_registered(store, store.challenge(slug), proposal.author, now),  # a revoked registration: no report
            *_evaluated(store, phase, participant, sub_id), *content, *_report_window(phase, now)]


def _report_change(target: Change) -> list[str]:
    """A report is added once, never replaced, removed or moved: each replacement would leave its PDF in the
    repository for good (merged without an organizer, up to the size limit each time)."""
    if target.status == "added":
        return []
    done = {"removed": "removes", "modified": "replaces"}.get(target.status, "renames")
    return [f"{target.path}: this pull request {done} it; a method report, once merged, is final: ask the "
            "organizers to change it"]


def _evaluated(store: Store, phase: Phase, participant: str, sub_id: str) -> list[str]:
    """A report describes a submission that was evaluated: its file is merged and its result succeeded."""
    paths = store.paths
    where = f"{participant}/{sub_id} in phase {phase.title!r}"
    if not paths.submission_file(phase.challenge, phase.slug, participant, sub_id).is_file():
        return [f"there is no submission {where}: a method report is added to a merged submission of yours, "
                f"named after it (submissions/{phase.slug}/{participant}/{sub_id}.yml)"]
    path = paths.result_file(phase.challenge, phase.slug, participant, sub_id)
    try:
        result = store.read_result(path) if path.is_file() else None
    except (ModelError, OSError, UnicodeDecodeError):
        result = None
    if result is None or not store.admits(result, path):
        return [f"submission {where} has no result yet: add its method report once it is evaluated"]
    if result.status != "succeeded":
        return [f"submission {where} failed; a method report describes a submission with a succeeded result"]
    return []


def _report_window(phase: Phase, now: dt.datetime) -> list[str]:
    state = report_window(phase, now)
    return [] if state.open else [state.reason]


# --- registrations -----------------------------------------------------------------------------


def _verified(challenge: Challenge, phase: Phase) -> list[str]:
    """A phase that takes only verified participants (creator_must_be_verified) in a challenge that registers
    nobody: refused until the organizers require registration (`challenge check` says so too), never let through."""
    if phase.creator_must_be_verified and challenge.registration != "required":
        return [f"phase {phase.title!r} takes submissions only from verified participants, and challenge "
                f"{challenge.name!r} registers nobody: its organizers must set registration: required"]
    return []


def _registered(store: Store, challenge: Challenge, author: str, now: dt.datetime) -> list[str]:
    if challenge.registration != "required":
        return []
    folder = store.paths.registrations(challenge.slug)
    found = [p for p in folder.glob("*.yml") if p.stem.lower() == author.lower()]
    if not found and (closed := _registration_closed(challenge, now)):
        return [f"challenge {challenge.name!r} requires registration, and {closed}: only participants registered "
                "before then may submit"]
    if not found:
        rel = folder.relative_to(store.root) / f"{author}.yml"
        return [f"challenge {challenge.name!r} requires registration: open a pull request adding {rel} "
                "and wait for an organizer to merge it"]
    try:
        load_registration(found[0])
    except ModelError as exc:
        return [f"your registration is not valid: {exc}"]
    return []


def _registration_closed(challenge: Challenge, now: dt.datetime) -> str | None:
    """'registration closed on <when>' once the challenge's registration deadline has passed."""
    closes = challenge.registration_closes_at
    return f"registration closed on {when(closes, now)}" if closes and now >= closes else None


def _registration_file(store: Store, proposal: Proposal, target: Change, match: re.Match[str],
                       now: dt.datetime) -> list[str]:
    slug, login = match["challenge"], match["login"]
    if problems := _not_added(target) or _where_challenge(store, slug):
        return problems
    problems = []
    if login.lower() != proposal.author.lower():
        problems.append(f"{target.path}: a registration is named after its author: "
                        f"challenges/{slug}/registrations/{proposal.author}.yml")
    if store.challenge(slug).registration != "required":
        problems.append(f"challenge {slug!r} needs no registration: submit directly")
    elif closed := _registration_closed(store.challenge(slug), now):
        problems.append(f"challenge {slug!r}: {closed}")
    try:
        proposed_file(proposal, target.path, load_registration)
    except ModelError as exc:
        problems.append(str(exc))
    return problems


# --- catalog listings ------------------------------------------------------------------------------


def _listing(store: Store, proposal: Proposal, target: Change, slug: str) -> list[str]:
    """Anyone may propose a challenge hosted elsewhere for the catalog: one new challenge.yml, naming its
    platform and address, with catalog fields only; an organizer merges it. One hosted here is set up by
    its organizers. Judged on the default branch (review) and on the pull request's own checkout
    (validate), where the new file is already there: so a folder counts as taken when it holds anything
    else."""
    if not SLUG.fullmatch(slug) or len(slug) > MAX_SLUG:  # before it names a folder, even a scratch one
        return [f"{target.path}: {slug!r} is not a challenge slug (at most {MAX_SLUG} lowercase letters, digits "
                "and single '-')"]
    folder, own = store.paths.base / slug, store.paths.base / slug / "challenge.yml"
    if target.status != "added":
        return [f"{target.path}: this pull request changes a challenge; its organizers change it (the bot judges "
                "new listings only)"]
    if any(p != own for p in folder.rglob("*")):
        return [f"{target.path}: challenge {slug!r} is listed already"]
    if (store.paths.base / f"{slug}.md").exists():
        return [f"{target.path}: {slug!r} is the name of a page of the site ({CHALLENGES}/{slug}.md): choose another"]
    try:
        listed = proposed_file(proposal, target.path, lambda path: _as_folder(path, slug))
    except ModelError as exc:
        return [str(exc)]
    if listed.hosted_here:
        return [f"{target.path}: a pull request lists a challenge hosted elsewhere (platform: grand-challenge, "
                "kaggle, codalab, ... with its website_url); one hosted here is set up by its organizers"]
    unlisted = Challenge(slug=listed.slug, name=listed.name, headline=listed.headline)  # every other default
    if hosting := [f.name for f in fields(Challenge) if f.name not in CATALOG_FIELDS
                   and getattr(listed, f.name) != getattr(unlisted, f.name)]:
        return [f"{target.path}: {', '.join(hosting)}: a listing gives catalog fields only "
                f"({', '.join(CATALOG_FIELDS)}); what runs a challenge here is set by its organizers"]
    return []


# What a listing of a challenge hosted elsewhere may set: the catalog's fields (OpenChallenges'). Any other
# field of challenge.yml (data, keys, registration, leaderboards, and whatever comes next) runs a challenge
# here, and is its organizers' to set.
CATALOG_FIELDS = ("slug", "name", "headline", "description", "status", "platform", "start_date", "end_date", "type",
                  "incentives", "submission_types", "input_data_types", "operation", "categories", "tags",
                  "website_url", "doi", "organizations")


def _as_folder(path: Path, slug: str) -> Challenge:
    """challenge.yml read as the file of folder `slug`, which names the challenge."""
    placed = path.parent / slug / path.name
    placed.parent.mkdir()
    path.rename(placed)
    return load_challenge(placed)


def _where_challenge(store: Store, slug: str) -> list[str]:
    return [] if slug in store.slugs() else [f"there is no challenge {slug!r}"]
