"""What goes back to a pull request: the rules' verdict (one comment, a label, the merge) and, once
the runner has evaluated the submission, its result.

The review reads the pull request only through the API, at the commit the validate workflow saw,
and judges it against the default branch's tree: nothing from the pull request is checked out.
The rules judge a pull request by its author (`judged_author`), which for one that the submission
form's workflow opened (`issueform`) is the issue's author.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

from runner.errors import printable
from runner.pullrequests import gitops
from runner.pullrequests.github import ACTIONS_BOT, GitHub, GitHubError, PullRequest
from runner.pullrequests.rules import Proposal, Verdict, check
from runner.ranking.tables import fmt
from runner.tree.gitfiles import added
from runner.tree.jsonpaths import lookup
from runner.tree.paths import RESULT_GLOB, submission_of_result
from runner.tree.phase_model import Phase
from runner.tree.policy import Visibility
from runner.tree.result_model import Result, load_result, scored_document
from runner.tree.store import Store

VERDICT_MARKER = "<!-- challenge-bot:verdict -->"
LABELS = {"valid": "submission: valid", "invalid": "submission: invalid", "registration": "registration",
          "listing": "catalog: listing", "report": "method report"}
# What the review merges once valid: a submission (then evaluated) and a method report (a PDF beside a result,
# which changes no score and needs no organizer); an organizer merges registrations and listings.
MERGED_KINDS = {"submission": "Submission", "report": "Method report"}
NOTE_LABEL = "organizers: same image"  # beside the verdict's label, while the verdict has notes
FORM_BRANCH = "issue-submission/"  # and an issue's number: the branch of the submission its form asked for
ISSUE_BRANCH = re.compile(rf"{FORM_BRANCH}(?P<issue>[1-9][0-9]{{0,9}})")  # no leading zero: one name per issue


def issue_branch(number: int) -> str:
    """The branch of this repository holding the submission that issue `number`'s form asked for."""
    return f"{FORM_BRANCH}{number}"


@dataclass(frozen=True)
class Review:
    number: int
    verdict: Verdict | None = None
    comment: str = ""  # created, edited or unchanged
    merged: str | None = None  # the merge commit
    skipped: str = ""  # why the pull request was left alone
    merge_error: str = ""


def review(hub: GitHub, store: Store, *, number: int, head_sha: str, base: str, now: dt.datetime,
           merge: bool, allow_local_images: bool = False) -> Review:
    """Judge pull request `number` at `head_sha`, comment the verdict, label it, and merge it if valid."""
    pr = hub.pull(number)
    if why := _stale(pr, head_sha, base):
        return Review(number, skipped=why)
    proposal = Proposal(judged_author(hub, pr), hub.changes(number), lambda path: hub.content(path, pr.head_sha))
    verdict = check(store, proposal, now=now, allow_local_images=allow_local_images)
    merged, merge_error = _merge(hub, pr, verdict) if merge else (None, "")
    comment = hub.upsert_comment(number, marker=VERDICT_MARKER,
                                 body=verdict_comment(verdict, merged=merged, merge_error=merge_error))
    label = _label(verdict)
    hub.set_labels(number, add=label, remove=tuple(v for v in LABELS.values() if v != label))
    if verdict.notes:
        hub.set_labels(number, add=NOTE_LABEL)
    return Review(number, verdict, comment, merged, merge_error=merge_error)


def judged_author(hub: GitHub, pr: PullRequest) -> str:
    """Whose submission `pr` is: its author's, but for one opened by the submission form's workflow,
    whose author GitHub names github-actions[bot]; that one is the issue's author's, read from the API.
    Only a pull request that the workflow token opened (no one else is that bot) from the form's branch
    of this very repository (no fork can create one here) is read so: a fork's pull request naming such a
    branch, or the bot's from elsewhere, keeps its own author, whom the rules then judge."""
    match = ISSUE_BRANCH.fullmatch(pr.head_ref)
    if pr.author != ACTIONS_BOT or match is None or pr.head_repository.lower() != hub.repository.lower():
        return pr.author
    issue = hub.issue(int(match["issue"]))
    return pr.author if issue.pull_request else issue.author


def _merge(hub: GitHub, pr: PullRequest, verdict: Verdict) -> tuple[str | None, str]:
    """Merge a valid submission or method report at the judged commit: the merge commit, or why it failed."""
    if not (verdict.ok and verdict.kind in MERGED_KINDS):
        return None, ""
    try:
        title = f"{MERGED_KINDS[verdict.kind]} {verdict.path} (#{pr.number})"
        return hub.merge(pr.number, sha=pr.head_sha, title=title,
                         message=f"Validated at {pr.head_sha} and merged by the review workflow."), ""
    except GitHubError as exc:
        return None, str(exc)


def _stale(pr: PullRequest, head_sha: str, base: str) -> str:
    if not pr.open:
        return f"#{pr.number} is {'merged' if pr.merged else 'closed'}"
    if pr.head_sha != head_sha:
        return f"#{pr.number} moved on to {pr.head_sha[:12]}; the validation of that commit will review it"
    if pr.base_ref != base:
        return f"#{pr.number} targets {pr.base_ref}, not {base}"
    return ""


def _label(verdict: Verdict) -> str:
    if verdict.kind in ("registration", "listing", "report") and verdict.ok:  # labelled by kind, not as valid
        return LABELS[verdict.kind]
    return LABELS["valid" if verdict.ok else "invalid"]


def verdict_comment(verdict: Verdict, *, merged: str | None = None, merge_error: str = "") -> str:
    if not verdict.ok:  # each line quotes what the pull request holds: a code span shows it as it is
        lines = "\n".join(f"- {code_span(p)}" for p in verdict.problems)
        return ("### ❌ This pull request cannot be accepted yet\n\n" + lines +
                "\n\nPush a fix to this pull request; it is checked again automatically.")
    if verdict.kind == "registration":
        return (f"### ✅ Registration {code_span(verdict.path or '')} is complete\n\n"
                "An organizer reviews registrations and merges this pull request to approve it.")
    if verdict.kind == "listing":
        return (f"### ✅ Listing {code_span(verdict.path or '')} is complete\n\n"
                "An organizer reviews it and merges this pull request to add the challenge to the catalog.")
    if merge_error:
        what = MERGED_KINDS.get(verdict.kind, "Submission")
        return (f"### ✅ {what} {code_span(verdict.path or '')} is valid, but could not be merged\n\n"
                f"{merge_error}\n\nAn organizer will look at it.")
    if verdict.kind == "report":
        state = f"Merged as {merged[:12]}" if merged else "Valid; it will be merged"
        return (f"### ✅ Method report {code_span(verdict.path or '')} accepted\n\n{state}. The result page links "
                "it once the site is rebuilt; the submission is not evaluated again.")
    state = f"Merged as {merged[:12]} and queued for evaluation" if merged else "Valid; it will be merged"
    standing = _standing(verdict.standing) if verdict.standing else ""
    return (f"### ✅ Submission {code_span(verdict.path or '')} accepted\n\n{state}. "
            "The result is posted here when the evaluation is done." + standing + _notes(verdict))


def _standing(line: str) -> str:
    """Where the participant stands against the limit (`Store.standing`), closing a comment."""
    return f"\n\nYour submissions: {code_span(line)}"


def _notes(verdict: Verdict) -> str:
    """The verdict's notes for organizers; they never stop a submission."""
    if not verdict.notes:
        return ""
    return "\n\n**For the organizers** (this does not stop the submission):\n\n" + "\n".join(
        f"- {code_span(note)}" for note in verdict.notes)


# --- results ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Notice:
    result: str
    pulls: tuple[int, ...]
    comments: tuple[str, ...]


def notify(hub: GitHub, store: Store, *, commit: str, now: dt.datetime) -> list[Notice]:
    """Comment every result that `commit` added on the pull request that brought its submission.
    Each result has its own marker, so notifying twice edits the same comment."""
    notices = []
    for rel in gitops.added_in(store.root, commit, RESULT_GLOB):
        result = load_result(store.root / rel)
        landed = added(store.root, submission_of_result(rel) or "")
        pulls = tuple(hub.pulls_for_commit(landed.commit)) if landed else ()
        phase = store.phase(result.challenge, result.phase)
        stands = store.standing(phase, result.participant, now=now).line(phase, result.participant, now)
        body = result_comment(result, phase, store.visibility(phase, result, now=now)) + _standing(printable(stands))
        key = f"{result.challenge}/{result.phase}/{result.participant}/{result.submission}"
        marker = f"<!-- challenge-bot:result:{key} -->"
        comments = tuple(hub.upsert_comment(n, marker=marker, body=body) for n in pulls)
        notices.append(Notice(rel, pulls, comments))
    return notices


def result_comment(result: Result, phase: Phase, shown: Visibility) -> str:
    """The comment on the submission's pull request: what `shown` (the visibility rule) allows, and in
    a debugging phase how to read one's own sealed logs."""
    key = f"{code_span(f'{result.participant}/{result.submission}')} in phase {phase.title}"
    ran = result.algorithm or result.training  # a training that failed ran no algorithm, and logged
    logs = _logs_hint(result) if phase.give_algorithm_editors_job_view_permissions and ran else ""
    if result.status == "failed":
        return f"### ❌ Evaluation of {key} failed\n\n{_fenced(result.error or '')}{logs}"
    return _succeeded(result, phase, shown, key) + logs


def _logs_hint(result: Result) -> str:
    record = f"challenges/{result.challenge}/results/{result.phase}/{result.participant}/{result.submission}.json"
    return ("\n\nYour containers' full logs are committed beside the result, sealed to the SSH keys of your GitHub "
            f"account: `challenge logs {record} -i ~/.ssh/id_ed25519`, or "
            f"`age -d -i ~/.ssh/id_ed25519 {record.removesuffix('.json')}.logs.age`.")


def _succeeded(result: Result, phase: Phase, shown: Visibility, key: str) -> str:
    if not shown.scores:
        return f"### ✅ Evaluation of {key} succeeded, scores withheld\n\n{shown.note[0].upper()}{shown.note[1:]}."
    document = scored_document(result)
    header = " | ".join(c.title for c in phase.columns)
    values = " | ".join(fmt(lookup(document, c.path), phase.score_decimal_places) for c in phase.columns)
    rule = " | ".join("---:" for _ in phase.columns)
    reported = ("These metrics are self-reported: they are your own, computed on the public data, and the "
                "evaluation checked their shape only. " if phase.self_reported else "")
    return (f"### ✅ Evaluation of {key} succeeded\n\n| {header} |\n| {rule} |\n| {values} |\n\n"
            f"{_training(result)}{reported}The leaderboard shows it once the site is rebuilt.")


def _training(result: Result) -> str:
    """A training phase's figures, when shown with the scores."""
    run = result.training
    if run is None or run.wall_time_s is None:
        return ""
    memory = f", peak memory {run.peak_memory_bytes / 1024**2:.0f} MiB" if run.peak_memory_bytes else ""
    resumed = f", resumed {run.resumes} time(s) after the runner restarted" if run.resumes else ""
    return f"Training took {run.wall_time_s:.0f} s{memory}{resumed}. "


def code_span(text: str) -> str:
    """A code span no backtick run in `text` can close: GitHub shows it as typed (no mention, no link,
    no image, no HTML), however a pull request wrote it."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""  # CommonMark strips one space each side
    return f"{fence}{pad}{text}{pad}{fence}"


def _fenced(text: str) -> str:
    """A code block that no backtick run in `text` (a participant's stderr line) can close."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}\n{text}\n{fence}"
