"""What a phase allows now: whether it takes submissions, and what may be shown of a result.

The one home of these rules. The pull-request rules ask `window` (submissions), `report_window` (method
reports added later) and `allowance`; the site, the pull-request comments and the leaderboard command ask
`visibility`, and the store writes each result's public record through `public_record`, so no two of them
can disagree about a blind phase, an unapproved result or a phase that shows only its leaderboard's columns.

What always stays public of a result: who submitted what (the submission is a public pull
request anyway), when, its status and a failure's one-line reason: the pull-request rules need the
status (a parent phase passed, the limit per period), and the participant needs the reason.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, replace
from typing import Any

from runner.tree.jsonpaths import compiled
from runner.tree.phase_model import Phase
from runner.tree.result_model import Result, RunRecord, parse_time, scored_document
from runner.tree.submission_model import SubmissionDetails

# What a phase that withholds scores or per-case values publishes of a result whose evaluation failed.
EVALUATION_FAILED = ("The evaluation failed; its reason may hold what this phase withholds and is sealed for the "
                     "organizers")


@dataclass(frozen=True)
class Window:
    """Whether a phase takes submissions at `now`, and if not, why (a sentence for participants)."""

    open: bool
    reason: str = ""


def window(phase: Phase, now: dt.datetime) -> Window:
    if not phase.public:  # grand-challenge's hidden phase: nobody sees it, so nobody submits to it
        return Window(False, f"phase {phase.title!r} is not public (public: false): it takes no submissions")
    if phase.submissions_limit_per_user_per_period == 0:
        return Window(False, f"phase {phase.title!r} takes no submissions (its limit per participant is 0)")
    if phase.submissions_open_at and now < phase.submissions_open_at:
        return Window(False, f"phase {phase.title!r} opens on {when(phase.submissions_open_at, now)}")
    if phase.submissions_close_at and now >= phase.submissions_close_at:
        return Window(False, f"phase {phase.title!r} closed on {when(phase.submissions_close_at, now)}")
    return Window(True)


def report_window(phase: Phase, now: dt.datetime) -> Window:
    """Whether the phase takes method reports at `now` (added to submissions with a result, so the submission
    window does not matter: reports may come after it closes), and if not, why."""
    closes = phase.method_reports_close_at
    if not phase.public:
        return Window(False, f"phase {phase.title!r} is not public (public: false): it takes no method reports")
    if closes is None:  # set, it needs supplementary_file_choice on (the phase file's rule)
        return Window(False, f"phase {phase.title!r} takes no method reports after submitting (it sets no "
                             "method_reports_close_at): add the PDF to a new submission as its supplementary file")
    if now >= closes:
        return Window(False, f"phase {phase.title!r} took method reports until {when(closes, now)}")
    return Window(True)


def closed_for_good(phase: Phase, now: dt.datetime) -> bool:
    """Whether the phase's own dates and limit take no submissions now nor later, public or not: what hiding it
    needs (`public: false`), as grand-challenge hides only a phase closed to submissions."""
    shown = replace(phase, public=True)
    later = max(now, phase.submissions_open_at or now)
    return not window(shown, now).open and not window(shown, later).open


@dataclass(frozen=True)
class Allowance:
    """Where a participant (a login, or a team: its members share the count) stands against the phase's
    limit of N submissions per period: what counts now, how many are left, and when one more fits."""

    limit: int | None  # None: no limit
    days: int | None  # the period; None: the limit is for all time
    evaluated: int  # results submitted within the period that count (failed ones where the phase says so)
    pending: int  # submitted, not yet evaluated: they always count
    next_at: dt.datetime | None  # when one more fits, where none is left now and one can age out

    @property
    def left(self) -> int | None:
        return None if self.limit is None else max(self.limit - self.evaluated - self.pending, 0)

    def line(self, phase: Phase, participant: str, now: dt.datetime) -> str:
        """One sentence for the participant: the refusal when none is left, else what remains."""
        if self.limit is None:
            return f"phase {phase.title!r} has no submission limit"
        allows = f"phase {phase.title!r} allows {submissions_per(self.limit, self.days)}"
        counted = f"{participant!r} has {self.evaluated} evaluated and {self.pending} pending"
        if self.left:
            return f"{allows}; {counted}: {self.left} left"
        again = f"; you can submit again on {when(self.next_at, now)}" if self.next_at else ""
        return f"{allows} and {counted}{again}"


def submissions_per(limit: int, days: int | None) -> str:
    """A limit of `limit` submissions per `days` (None: for all time) in words: "2 submissions per day"."""
    per = ("per day" if days == 1 else f"per {days} days") if days else "in all"
    return f"{plural(limit, 'submission')} {per}"


NOT_EVALUATED = "Not evaluated: "  # how a result the queue refused before running begins (`Store.refusal_at_landing`)


def refused(result: Result) -> bool:
    """Whether the queue refused `result`'s submission before running it (past its participant's limit)."""
    return result.status == "failed" and (result.error or "").startswith(NOT_EVALUATED)


def allowance(phase: Phase, results: list[Result], *, pending: int, now: dt.datetime) -> Allowance:
    """grand-challenge's limit for one participant, from their `results` in the phase and their `pending`
    submissions: results count by when they were submitted, within the period (all time without one)."""
    limit, days = phase.submissions_limit_per_user_per_period, phase.submission_limit_period
    if limit is None:
        return Allowance(None, days, len(results), pending, None)
    since = now - dt.timedelta(days=days) if days else None
    times = sorted(parse_time(r.created_at) for r in results
                   if (r.status == "succeeded" or (phase.count_failed_submissions and not refused(r)))
                   and (since is None or parse_time(r.created_at) >= since))
    leaving = len(times) + pending - limit + 1  # results that must age out before one more fits
    next_at = times[leaving - 1] + dt.timedelta(days=days) if days and 0 < leaving <= len(times) else None
    return Allowance(limit, days, len(times), pending, next_at)


@dataclass(frozen=True)
class Visibility:
    """What the public may see of a result now. `listed`: that it exists (participant, status);
    `scores`: its metrics and measurements too. `note` says what is withheld and until when."""

    listed: bool
    scores: bool
    note: str = ""


def visibility(phase: Phase, *, now: dt.datetime, approved: bool = True) -> Visibility:
    """grand-challenge's options, decided once: `public: false` shows nothing; a result of a phase
    with `auto_publish_new_results: false` shows once an organizer approves it; a blind phase shows
    status only until it closes, and a blind phase without a closing time never shows scores."""
    if not phase.public:
        return Visibility(False, False, f"phase {phase.title!r} is not public")
    if not phase.auto_publish_new_results and not approved:
        return Visibility(False, False, "results are published once an organizer approves them")
    if phase.blind:
        closes = phase.submissions_close_at
        if closes is None:
            return Visibility(True, False, "scores withheld until the phase closes")
        if now < closes:
            return Visibility(True, False, f"scores withheld until {closes:%Y-%m-%d %H:%M} UTC")
    return Visibility(True, True)


def shown_details(phase: Phase, details: SubmissionDetails) -> SubmissionDetails:
    """What pages show of a submission's details: its comment, its supplementary URL and its PDF only where the
    phase shows them (grand-challenge's display_submission_comments, show_supplementary_url,
    show_supplementary_file_link)."""
    pdf = phase.show_supplementary_file_link
    return replace(details, comment=details.comment if phase.display_submission_comments else "",
                   supplementary_url=details.supplementary_url if phase.show_supplementary_url else None,
                   supplementary=details.supplementary if pdf else None,
                   supplementary_sha256=details.supplementary_sha256 if pdf else None)


def withholds(phase: Phase) -> bool:
    """Whether the phase ever holds back part of a result, so results must be sealed for its recipients."""
    return (not phase.public or not phase.auto_publish_new_results or phase.blind or not phase.display_all_metrics
            or phase.give_algorithm_editors_job_view_permissions)


def public_record(result: Result, phase: Phase, shown: Visibility) -> Result:
    """The part of `result` that may be public now. Logs never are, nor the last line a run wrote to
    stderr (a debugging phase seals them to their participant); without scores, nothing measured is
    (a phase may rank on time: its start and end neither), and an evaluation's failure is a fixed
    sentence (the evaluation reads the ground truth: its last line, an assert or a traceback, may
    hold a withheld value); with `display_all_metrics: false`, only the values of the leaderboard's
    columns are (and an evaluation's failure is the fixed sentence too)."""
    result = result.without_logs()
    failed_evaluating = result.status == "failed" and result.evaluation is not None
    if not shown.scores:
        return replace(result, metrics=None, algorithm=_image_only(result.algorithm),
                       evaluation=_image_only(result.evaluation), training=_image_only(result.training),
                       started_at=None, finished_at=None, withheld=shown.note,
                       error=EVALUATION_FAILED if failed_evaluating else result.error)
    if phase.display_all_metrics:
        return result
    paths = [c.path for c in phase.columns] + [c.error_path for c in phase.columns if c.error_path]
    kept = _only(scored_document(result), paths) if result.metrics is not None else None
    return replace(result, metrics=kept, algorithm=_image_only(result.algorithm),  # a failure's measurements too
                   evaluation=_image_only(result.evaluation), training=_image_only(result.training),
                   error=EVALUATION_FAILED if failed_evaluating else result.error,
                   withheld="only the leaderboard's columns are public; the rest is sealed for the organizers")


def ranked_record(result: Result, phase: Phase, shown: Visibility) -> Result:
    """What a leaderboard ranks `result` on: every value where its scores show (a phase that publishes
    only its columns may rank on per-case values: the board shows their ranks, never the values), else
    its public record; its logs never, and of a failure what the public record says."""
    public = public_record(result, phase, shown)
    if not shown.scores:
        return public
    quiet = result.without_logs()
    # The same object where nothing is cut: each dated snapshot ranks the phase's results again, and a
    # leaderboard's rows are made once per result object (`Rows`), so a copy made every one of them again.
    return quiet if quiet.error == public.error else replace(quiet, error=public.error)


def not_by_form(phase: Phase) -> str | None:
    """What a phase's submission needs that the submission issue form cannot carry (it asks for an image, a
    team and a title), or None: the form's workflow refuses such a phase and its page offers no form."""
    if not phase.runs_algorithms:
        return "a predictions or metrics file"
    if phase.supplementary_file_choice == "required":
        return "a PDF describing the method beside the file"
    if phase.supplementary_url_choice == "required":
        return "a link to " + phase.supplementary_url_label
    return None


def not_runnable(phase: Phase, result: Result) -> str | None:
    """Why `challenge run` cannot run this result's algorithm on someone's own cases (None: it can); the
    result page shows the command only where this is None."""
    if not phase.runs_algorithms:
        return "its phase takes predictions: there is no algorithm to run"
    if phase.submission_kind == "training":
        return "its phase trains on hidden data: the trained model stays on the runner, the image alone is untrained"
    if result.algorithm is None:
        return "its algorithm never ran (the submission failed before it)"
    return None


def participant_logs(logs: dict[str, str]) -> dict[str, str]:
    """What a debugging phase shows a participant: the logs of their own containers (algorithm, training),
    never the evaluation's, which reads the ground truth and prints scores the phase may withhold."""
    return {stage: text for stage, text in logs.items() if not stage.startswith("evaluation")}


def _image_only(run: RunRecord | None) -> RunRecord | None:
    return run and RunRecord(image=run.image, image_id=run.image_id)


def _only(document: dict[str, Any], paths: list[str]) -> dict[str, Any]:
    """A copy of `document` holding only what `paths` (JSONPaths) match, at the same places."""
    kept: dict[str, Any] = {}
    for path in paths:
        for match in compiled(path).find(document):
            match.full_path.update_or_create(kept, match.value)
    return kept


def when(moment: dt.datetime, now: dt.datetime) -> str:
    """A UTC time and how far it is from now: '2027-12-31 23:59 UTC (3 days ago)'."""
    stamp = moment.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    seconds = (moment - now).total_seconds()
    size = abs(seconds)
    for unit, length in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if size >= length:
            span = plural(int(size // length), unit)
            break
    else:
        span = "less than a minute"
    return f"{stamp} ({'in ' + span if seconds > 0 else span + ' ago'})"


def took(seconds: float) -> str:
    """A duration as people read it: 0.4 s, 12 s, 2 min 5 s (the commands' stages, a phase's running time)."""
    if seconds < 10:
        return f"{seconds:.1f} s"
    if seconds < 60:
        return f"{seconds:.0f} s"
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest} s"


def plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"
