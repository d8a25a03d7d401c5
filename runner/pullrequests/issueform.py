"""Submitting by issue form: an issue opened with .github/ISSUE_TEMPLATE/submission.yml becomes the
ordinary submission pull request, which the same rules judge, comment, label and merge.

The issue's text is its author's, and hostile. It is read as GitHub writes a form's answers into the
body (`### <question>`, a blank line, the answer; `_No response_` for none): each answer one line of
plain text of bounded length, held to the pattern the tree already has for it, and written into the
file by yaml.safe_dump, never pasted into it. What a participant may not choose is not asked: the
folder is the issue author's login, as the API says (or a team the rules find them in), and the id
is `issue-<number>`. Answers the rules would refuse open nothing: the issue gets the refusal, and
editing the issue runs it again.

The pull request is opened with the workflow's token, so GitHub names github-actions[bot] its author;
`review.judged_author` judges it as the issue's author, for the form's own branch only. GitHub starts
no workflow for what that token does, so neither validate nor review ever sees this pull request:
`submit_issue` calls `review` itself, and dispatch.yml follows the form's workflow as it follows review.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

import yaml

from runner.errors import printable
from runner.pullrequests.github import GitHub, Issue, PullRequest
from runner.pullrequests.review import Review, code_span, issue_branch, review
from runner.pullrequests.rules import MAX_LISTED, Change, Proposal, check
from runner.tree.paths import SUBMISSION_WHERE
from runner.tree.policy import not_by_form
from runner.tree.schema_types import LOGIN, NAME, SLUG
from runner.tree.store import Store

FORM_LABEL = "submission-form"  # the form applies it; the workflow runs for issues that carry it
ISSUE_MARKER = "<!-- challenge-bot:issue-form -->"
HEADING = "### "
NO_RESPONSE = "_No response_"  # what GitHub writes for an optional question left empty
MAX_ANSWER = 1000  # characters; every answer is one short line, and the rules bound each field further
SHOWN = 60  # characters of a refused answer quoted back


@dataclass(frozen=True)
class Question:
    id: str  # the form's id for it (also the query parameter that prefills it)
    label: str  # its heading in the issue's body
    required: bool
    pattern: re.Pattern[str] | None = None  # what the answer must match, where it names a folder
    what: str = ""


QUESTIONS = (
    Question("challenge", "Challenge", True, SLUG, "a challenge's slug (lowercase letters, digits and single '-')"),
    Question("phase", "Phase", True, SLUG, "a phase's slug (lowercase letters, digits and single '-')"),
    Question("image", "Image", True),  # the rules judge it, as in any file: pinned by digest, an allowed registry
    Question("team", "Team", False, NAME, "a team's name (letters, digits, '-', '_' and '.')"),
    Question("title", "Title", False),  # the schema judges its length
)


@dataclass(frozen=True)
class Answers:
    """The form's answers, each one line of plain text; "" for an optional question left empty."""

    challenge: str
    phase: str
    image: str
    team: str
    title: str


@dataclass(frozen=True)
class Draft:
    """The submission file the answers make, at its place in the tree."""

    path: str
    text: str

    def read(self, path: str) -> bytes | None:
        """The proposal's files, as the rules read a pull request's: this one alone."""
        return self.text.encode() if path == self.path else None


@dataclass(frozen=True)
class FromIssue:
    issue: int
    skipped: str = ""  # why the issue was left alone (no comment)
    problems: tuple[str, ...] = ()  # why nothing was opened (commented on the issue)
    pull: int | None = None
    opened: bool = False  # a new pull request, not one an earlier run opened
    review: Review | None = None
    comment: str = ""  # the issue's comment: created, edited or unchanged


def submit_issue(hub: GitHub, store: Store, *, number: int, base: str, now: dt.datetime, merge: bool) -> FromIssue:
    """Issue `number`'s answers as the ordinary pull request, judged by `review` at once (merged if valid
    and `merge`), and linked from the issue; or a refusal on the issue, opening nothing. Run again for
    the same issue, it finds its pull request (by the form's branch) and never opens a second."""
    issue = hub.issue(number)
    if why := _not_a_form(issue):
        return FromIssue(number, skipped=why)
    earlier = hub.pulls_from(issue_branch(number))
    pull = next((p for p in earlier if p.open), None)
    if pull is None and earlier:
        return _ended(hub, number, earlier[0])
    draft, problems = _draft(store, issue, now)
    if draft is None:
        return _refuse(hub, number, problems)
    pull, head = _pushed(hub, issue, draft, pull, base=base)
    hub.settled(pull.number, head)
    outcome = review(hub, store, number=pull.number, head_sha=head, base=base, now=now, merge=merge)
    comment = hub.upsert_comment(number, marker=ISSUE_MARKER, body=_status(pull, outcome))
    if outcome.merged:
        hub.close_issue(number)
    return FromIssue(number, pull=pull.number, opened=not earlier, review=outcome, comment=comment)


def _not_a_form(issue: Issue) -> str:
    if issue.pull_request:
        return f"#{issue.number} is a pull request"
    if not issue.open:
        return f"#{issue.number} is closed"
    if FORM_LABEL not in issue.labels:
        return f"#{issue.number} has no label {FORM_LABEL!r}: it was not opened with the submission form"
    if not LOGIN.fullmatch(issue.author):  # a bot or an app: no participant's folder
        return f"#{issue.number} was opened by {printable(issue.author, SHOWN)!r}, not by a person's GitHub account"
    return ""


def _draft(store: Store, issue: Issue, now: dt.datetime) -> tuple[Draft | None, tuple[str, ...]]:
    """The submission file the issue's answers make, or why they make none: the form's reasons, then the
    rules' on that file as the issue's author's pull request (which they judge again once it is one)."""
    answers, problems = read_answers(issue.body)
    if answers is None:
        return None, problems
    if problems := _not_by_form(store, answers):
        return None, problems
    participant = answers.team or issue.author
    path = store.paths.submission_file(answers.challenge, answers.phase, participant, f"issue-{issue.number}")
    draft = Draft(path.relative_to(store.root).as_posix(), submission_text(issue.number, answers))
    judged = check(store, Proposal(issue.author, (Change(draft.path, "added"),), draft.read), now=now)
    return (draft, ()) if judged.ok else (None, judged.problems)


def read_answers(body: str) -> tuple[Answers | None, tuple[str, ...]]:
    """The form's answers in an issue's body, or a line for each question answered wrong (and for text
    that is no answer of the form's)."""
    sections, problems = _sections(body)
    values = {}
    for question in QUESTIONS:
        value, why = _answer(question, sections.get(question.label))
        values[question.id] = value
        problems += [why] if why else []
    return (None if problems else Answers(**values)), tuple(problems)


def _sections(body: str) -> tuple[dict[str, list[str]], list[str]]:
    """Each heading's lines, by its label. Linear in the body's length, whatever it holds."""
    sections: dict[str, list[str]] = {}
    problems: list[str] = []
    current: list[str] | None = None
    labels = {q.label for q in QUESTIONS}
    for line in body.replace("\r\n", "\n").split("\n"):
        if line.startswith(HEADING):
            label = line.removeprefix(HEADING).strip()
            if label not in labels:
                problems.append(f"{_quoted(label)} is not a question of the submission form")
            elif label in sections:
                problems.append(f"{label}: answered twice")
            current = sections.setdefault(label, [])
        elif current is not None:
            current.append(line)
        elif line.strip():
            problems.append("the issue's text does not start with the form's first question: open the issue with "
                            "the submission form")
            current = []
    return sections, problems


def _answer(question: Question, lines: list[str] | None) -> tuple[str, str | None]:
    """One answer, and why it is refused (None when it is not)."""
    text = "\n".join(lines or ()).strip()
    text = "" if text == NO_RESPONSE else text
    label = question.label
    if not text:
        return "", f"{label}: no answer; this question must be answered" if question.required else None
    if len(text) > MAX_ANSWER:
        return "", f"{label}: {len(text):,} characters; an answer has at most {MAX_ANSWER:,}"
    if "\n" in text:
        return "", f"{label}: write the answer on one line"
    if printable(text, MAX_ANSWER) != text:  # control and format characters: terminal escapes, bidi overrides
        return "", f"{label}: {_quoted(text)} holds a control or invisible character: write plain text"
    if question.pattern is not None and not question.pattern.fullmatch(text):
        return "", f"{label}: {_quoted(text)} is not {question.what}"
    return text, None


def _quoted(text: str) -> str:
    shown = text if len(text) <= SHOWN else text[:SHOWN] + "…"
    return repr(shown)  # repr escapes what printing would hide; check() and the comment escape the rest


def _not_by_form(store: Store, answers: Answers) -> tuple[str, ...]:
    """Why an existing phase takes no submission an issue can carry (the rules name a missing one)."""
    if answers.challenge not in store.slugs() or answers.phase not in store.phases(answers.challenge):
        return ()
    phase = store.phase(answers.challenge, answers.phase)
    if (carried := not_by_form(phase)) is None:
        return ()
    return (f"Phase: {phase.title!r} takes {carried}, which an issue cannot carry: open a pull request adding "
            f"{SUBMISSION_WHERE} and the files it pins",)


def submission_text(number: int, answers: Answers) -> str:
    """The submission file: YAML written by safe_dump from the answers, each a plain string value."""
    data = {"phase": answers.phase, "image": answers.image, **({"title": answers.title} if answers.title else {})}
    dumped = yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=4 * MAX_ANSWER)
    return f"# From issue #{number}, by the submission form.\n{dumped}"


def _pushed(hub: GitHub, issue: Issue, draft: Draft, pull: PullRequest | None, *,
            base: str) -> tuple[PullRequest, str]:
    """The pull request holding the draft, and its head: an earlier run's as it is, when it holds the draft
    already; else the form's branch set to the draft, and the first time a pull request opened from it."""
    if pull is not None and _holds(hub, pull, draft):
        return pull, pull.head_sha
    branch = issue_branch(issue.number)
    head = hub.commit_alone(branch, base=base, path=draft.path, text=draft.text,
                            message=f"Submission {draft.path} from issue #{issue.number}")
    if pull is None:
        pull = hub.open_pull(branch, base=base, title=f"Submission {draft.path} (issue #{issue.number})",
                             body=f"Opened by the submission form for @{issue.author}, from issue #{issue.number}.")
    return pull, head


def _holds(hub: GitHub, pull: PullRequest, draft: Draft) -> bool:
    """Whether the pull request already adds exactly this file and nothing else (nothing to push)."""
    return (hub.changes(pull.number) == (Change(draft.path, "added"),)
            and hub.content(draft.path, pull.head_sha) == draft.text.encode())


# --- what the issue is told ---------------------------------------------------------------------------


def _refuse(hub: GitHub, number: int, problems: tuple[str, ...]) -> FromIssue:
    shown = [f"- {code_span(printable(line))}" for line in problems[:MAX_LISTED]]
    more = [f"- ... and {len(problems) - MAX_LISTED} more"] if len(problems) > MAX_LISTED else []
    body = ("### ❌ No pull request was opened\n\n" + "\n".join(shown + more) +
            "\n\nEdit this issue to change the answers (its ··· menu, *Edit*); they are checked again.")
    return FromIssue(number, problems=problems, comment=hub.upsert_comment(number, marker=ISSUE_MARKER, body=body))


def _ended(hub: GitHub, number: int, pull: PullRequest) -> FromIssue:
    """An earlier run's pull request was merged or closed: this issue is done."""
    body = (f"### ✅ Submitted in #{pull.number}\n\nIts result is posted there. Open a new issue for another "
            "submission." if pull.merged else
            f"### #{pull.number} was closed without being merged\n\nOpen a new issue to submit again.")
    comment = hub.upsert_comment(number, marker=ISSUE_MARKER, body=body)
    return FromIssue(number, skipped=f"#{pull.number} is {'merged' if pull.merged else 'closed'}", pull=pull.number,
                     comment=comment)


def _status(pull: PullRequest, outcome: Review) -> str:
    link = f"#{pull.number}"
    if outcome.merged:
        return (f"### ✅ Submitted in {link}\n\nThe rules accepted it; merged as {outcome.merged[:12]} and queued "
                f"for evaluation. The result is posted on {link}.")
    if outcome.verdict is None:
        return f"### Pull request {link}\n\nLeft as it is: {code_span(outcome.skipped)}."
    if not outcome.verdict.ok:
        return (f"### ❌ The rules refused {link}\n\nIts comment says why. Edit this issue to change the answers: "
                f"{link} is updated and judged again.")
    if outcome.merge_error:
        return f"### ✅ {link} is valid, but could not be merged\n\nAn organizer will look at it."
    return f"### ✅ {link} is valid\n\nIt waits to be merged."

