"""A phase's rules as participants read them on the challenge page, written from the phase file
itself, so the page never drifts from what the rules and the runner enforce; among them its ranking
method in one sentence, which the leaderboard page and the report repeat.
"""

from __future__ import annotations

import datetime as dt
import statistics
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import quote, urlencode

from runner.tree.model import MAX_COMMENT, Challenge
from runner.tree.paths import CHALLENGES
from runner.tree.phase_model import Phase
from runner.tree.policy import not_by_form, plural, submissions_per, took, visibility, window
from runner.tree.result_model import Result
from runner.tree.schema_types import NAME, size_text

STAMP = "%Y-%m-%d %H:%M UTC"
LOGIN = "LOGIN"  # in a submit link's folder: the reader's login or team, which assets/submit.js fills in

METHOD_NAMES = {"absolute": "Absolute ranking", "mean": "Mean of ranks", "median": "Median of ranks",
                "aggregate-then-rank": "Aggregate then rank", "rank-then-aggregate": "Rank then aggregate",
                "test-then-rank": "Test then rank", "rank-then-average": "Rank then average (FLARE)"}
LISTED = {"all": "every successful result is listed", "best": "each participant's best result is listed",
          "most_recent": "each participant's most recent result is listed"}
BETTER = {"desc": "higher is better", "asc": "lower is better"}  # a column's order, in words


@dataclass(frozen=True)
class Extra:
    """Something a submission file may add besides what it submits, as the How to submit box names it."""

    field: str  # the submission file's field
    label: str  # the organizer's name for it
    choice: str  # optional or required
    help: str = ""  # the organizer's help text


@dataclass(frozen=True)
class JobDuration:
    """grand-challenge's average_algorithm_job_duration: the mean running time of a phase's algorithm, which
    its leaderboard page shows (a new result changes it, and that page alone)."""

    seconds: float
    results: int  # the succeeded results it is the mean of

    def __str__(self) -> str:
        return f"{took(self.seconds)} on average over {plural(self.results, 'succeeded result')}"


@dataclass(frozen=True)
class PhaseFacts:
    phase: Phase
    window: str
    countdown: str | None  # the next opening or closing, ISO, for the page's countdown
    limit: str
    parent_title: str | None
    registration: str
    form: str
    paper: str | None  # "required" or "optional" where the phase takes a PDF describing the method
    link: str | None  # the same, where the phase takes a supplementary URL
    reports: str | None  # until when, and how, a method report may be added to an evaluated submission
    extras: tuple[Extra, ...]  # what the How to submit box explains beside the file
    resources: str | None
    ranking: str
    visibility: str
    path: str
    yaml: str
    submit: str | None = None  # GitHub's editor with the file prefilled; LOGIN stands for the reader's folder
    issue_form: str | None = None  # the submission issue form, prefilled with the challenge and the phase
    folder: str = NAME.pattern  # what may stand for LOGIN: a GitHub login or a team's name (teams.yml's rule)


def phase_facts(challenge: Challenge, phase: Phase, *, parents: dict[str, Phase], ranking: str,
                now: dt.datetime, repo: str | None = None) -> PhaseFacts:
    """`repo`: the repository's address on GitHub (mkdocs.yml's extra.repository), for a button that opens its
    editor with the submission file prefilled while the phase takes submissions."""
    parent = parents.get(phase.parent) if phase.parent else None
    path = f"{CHALLENGES}/{challenge.slug}/submissions/{phase.slug}/<your GitHub login>/<id>.yml"
    yaml = example_yaml(phase)
    return PhaseFacts(
        phase=phase, window=_window(phase), countdown=_next_moment(phase, now), limit=_limit(phase),
        parent_title=parent.title if parent else phase.parent, registration=_registration(challenge),
        form=_form(phase), paper=_paper(phase), link=_choice(phase.supplementary_url_choice), extras=_extras(phase),
        reports=_reports(challenge, phase),
        resources=_resources(phase) if phase.runs_algorithms else None,
        ranking=ranking, visibility=_visibility(phase), path=path, yaml=yaml,
        submit=_submit(repo, challenge, phase, yaml) if repo and window(phase, now).open else None,
        issue_form=_issue_form(repo, challenge, phase) if repo and window(phase, now).open else None)


def _issue_form(repo: str, challenge: Challenge, phase: Phase) -> str | None:
    """GitHub's new-issue page with the submission form (.github/ISSUE_TEMPLATE/submission.yml), its
    challenge and phase answered (GitHub fills a form's fields from the query, by their ids)."""
    if not_by_form(phase) is not None:
        return None
    query = urlencode({"template": "submission.yml", "challenge": challenge.slug, "phase": phase.slug})
    return f"{repo}/issues/new?{query}"


def _submit(repo: str, challenge: Challenge, phase: Phase, yaml: str) -> str:
    """GitHub's "new file" editor at the participant's folder (LOGIN, filled in by assets/submit.js), with
    the example file as its text: GitHub forks the repository and opens the pull request from there."""
    folder = f"{CHALLENGES}/{challenge.slug}/submissions/{phase.slug}/{LOGIN}"
    return f"{repo}/new/main/{quote(folder)}?filename=v1.yml&value={quote(yaml, safe='')}"


def _window(phase: Phase) -> str:
    opens, closes = phase.submissions_open_at, phase.submissions_close_at
    parts = [f"open from {opens:{STAMP}}" if opens else "open", f"until {closes:{STAMP}}" if closes else "with no end"]
    return " ".join(parts)


def _next_moment(phase: Phase, now: dt.datetime) -> str | None:
    upcoming = [t for t in (phase.submissions_open_at, phase.submissions_close_at) if t and t > now]
    moment = min(upcoming) if upcoming else phase.submissions_close_at
    return moment.isoformat() if moment else None


def _limit(phase: Phase) -> str:
    limit, days = phase.submissions_limit_per_user_per_period, phase.submission_limit_period
    if limit is None:
        return "no limit"
    if limit == 0:
        return "closed to submissions"
    failed = "failed ones count too" if phase.count_failed_submissions else "failed ones do not count"
    return f"{submissions_per(limit, days)} per participant ({failed})"


def _registration(challenge: Challenge) -> str:
    if challenge.registration != "required":
        return "none needed"
    closes = challenge.registration_closes_at
    deadline = f" by {closes:{STAMP}} (registration closes then, apart from the submission deadline)" if closes else ""
    return (f"required: open a pull request adding `{CHALLENGES}/{challenge.slug}/registrations/<your login>.yml`"
            f"{deadline}, which an organizer merges")


def _form(phase: Phase) -> str:
    """What a submission is, each accepted form named (the template adds the PDF: its label is text)."""
    if phase.self_reported:
        return "your own metrics file (self-reported), pinned by its sha256, with code_url linking the code"
    if phase.submission_kind == "predictions":
        return "a predictions file, pinned by its sha256"
    registries = f", from {' or '.join(phase.allowed_registries)}" if phase.allowed_registries else ""
    image = (f"a {'training ' if phase.submission_kind == 'training' else ''}container image pinned by digest"
             f"{registries}, or a `docker save` archive of it at an https:// address pinned by its sha256 "
             "(`image_archive`)")
    if phase.submission_kind == "training":
        return (f"{image}: the runner trains it on hidden training data (`{' '.join(phase.training_command)}`), "
                "then runs it with its model on the hidden test inputs")
    return image


def _paper(phase: Phase) -> str | None:
    """"required" or "optional" where the phase takes a PDF describing the method, else None."""
    return _choice(phase.supplementary_file_choice)


def _reports(challenge: Challenge, phase: Phase) -> str | None:
    """Until when the phase takes method reports after submitting (it may be after it closes), and how."""
    closes = phase.method_reports_close_at
    if closes is None:
        return None
    folder = f"{CHALLENGES}/{challenge.slug}/reports/{phase.slug}/<your login or team>"
    return (f"until {closes:{STAMP}}, for a submission with a succeeded result: a pull request adding "
            f"`{folder}/<id>.yml` (`file: <name>.pdf`, `sha256: <its sha256>`, for submission `<id>`) and the PDF "
            "beside it; the submission is not evaluated again")


def _choice(choice: str) -> str | None:
    return None if choice == "off" else choice


def _extras(phase: Phase) -> tuple[Extra, ...]:
    """What the submission file may add, with the organizer's labels and help (grand-challenge's options)."""
    found = []
    if paper := _paper(phase):
        found.append(Extra("supplementary", phase.supplementary_file_label, paper, phase.supplementary_file_help_text))
    if link := _choice(phase.supplementary_url_choice):
        found.append(Extra("supplementary_url", phase.supplementary_url_label, link, phase.supplementary_url_help_text))
    if phase.allow_submission_comments:
        shown = ("shown on your result's page" if phase.display_submission_comments
                 else "not shown on the site (it stays public in the repository, as the whole file)")
        found.append(Extra("comment", "Comment", "optional", f"at most {MAX_COMMENT} characters, {shown}"))
    return tuple(found)


def average_job_duration(results: Iterable[Result]) -> JobDuration | None:
    """The mean of the algorithm's measured running time (a per-case job's runs summed) over the succeeded
    `results` that hold it. Give it public records: a phase that withholds measurements then shows no mean."""
    times = [r.algorithm.wall_time_s for r in results
             if r.status == "succeeded" and r.algorithm is not None and r.algorithm.wall_time_s is not None]
    return JobDuration(statistics.fmean(times), len(times)) if times else None


def _resources(phase: Phase) -> str:
    limits = phase.algorithm
    runs = "over all cases" if phase.inference_mode != "per-case" else (
        "per case" if phase.cases_per_run == 1 else f"per run of {phase.cases_per_run} cases")
    gpus = plural(limits.gpus, "GPU") if limits.gpus else "no GPU"
    text = (f"{limits.cpus:g} CPU, {size_text(limits.memory)} memory, {gpus}, {limits.time_limit} s {runs}, "
            f"{size_text(limits.output)} of output; no network")
    if phase.submission_kind != "training":
        return text
    train = phase.training
    gpus = plural(train.gpus, "GPU") if train.gpus else "no GPU"
    return (f"training: {train.cpus:g} CPU, {size_text(train.memory)} memory, {gpus}, {train.time_limit} s in all "
            f"(resumes included), a model of up to {size_text(train.output)} in {phase.model_path}, checkpoints up "
            f"to {size_text(phase.checkpoint_max_size)} in {phase.checkpoint_path}; then predicting: {text}")


def _visibility(phase: Phase) -> str:
    notes = []
    shown = visibility(phase, now=dt.datetime.max.replace(tzinfo=dt.UTC), approved=False)
    if not shown.listed and phase.public:
        notes.append("published once an organizer approves them")
    if phase.blind:
        notes.append("scores withheld until submissions close")
    if phase.give_algorithm_editors_job_view_permissions:
        notes.append("you read your own full logs (a debugging phase)")
    return "; ".join(notes)


def example_yaml(phase: Phase) -> str:
    """The submission file a participant writes for `phase`, with every form and field the phase takes:
    an alternative commented out, each line's note aligned after it, placeholders in angle brackets."""
    rows = [(f"phase: {phase.slug}", "the folder this file sits in"), *_submitted(phase)]
    if paper := _paper(phase):
        rows += [("supplementary:", f"{_one_line(phase.supplementary_file_label)} ({paper}): a PDF beside this file"),
                 ("  file: <name>.pdf", ""), ("  sha256: <64 hex digits>", "sha256sum <name>.pdf")]
    if link := _choice(phase.supplementary_url_choice):
        rows += [("supplementary_url: https://<address>", f"{_one_line(phase.supplementary_url_label)} ({link})")]
    if phase.allow_submission_comments:
        rows += [("comment: <a note on this submission>", f"optional, at most {MAX_COMMENT} characters")]
    code = "the code that computed your metrics" if phase.self_reported else "optional: your code"
    rows += [("title: <a short name for this submission>", "optional, on the leaderboard"),
             ("description: <what this submission does differently>", "optional, on your result's page"),
             ("publication_url: https://<your paper or preprint>", "optional: your paper"),
             ("code_url: https://github.com/<you>/<code>", code)]
    width = max(len(line) for line, note in rows if note) + 2
    return "".join(f"{line:<{width}}# {note}\n" if note else f"{line}\n" for line, note in rows)


def _one_line(label: str) -> str:
    """An organizer's label on one line: it is a YAML comment."""
    return " ".join(label.split())


def _submitted(phase: Phase) -> list[tuple[str, str]]:
    """What is submitted: a predictions file; or an image, or a docker save archive of it instead (the
    algorithm and training phases take both)."""
    if not phase.runs_algorithms:
        return [("predictions:", ""), ("  file: <file committed beside this one>", ""),
                ("  sha256: <64 hex digits>", "sha256sum <file>")]
    allowed = phase.allowed_registries
    registries = f" from {' or '.join(allowed)}" if allowed else ""
    return [(f"image: {allowed[0] if allowed else 'ghcr.io'}/<you>/<algorithm>@sha256:<64 hex digits>",
             f"pinned by digest{registries}"),
            ("# or, instead of image, the image saved by docker save, at an https:// address:", ""),
            ("# image_archive:", ""), ("#   url: https://<host>/<algorithm>.tar", ""),
            ('#   sha256: "<64 hex digits>"', "sha256sum <algorithm>.tar"),
            ("#   encrypted: false", "true: encrypted to the runner's key")]


# --- the challenge's timeline ----------------------------------------------------------------------


@dataclass(frozen=True)
class Milestone:
    """One dated moment of a challenge, as its timeline, its countdown and the deadlines feed show it."""

    key: str  # what it is, stable across builds: the deadlines feed derives its entries' identifiers from it
    what: str
    at: dt.datetime
    phase: str | None = None  # the phase it belongs to, whose leaderboard the feed links


def milestones(challenge: Challenge, phases: Iterable[Phase]) -> list[Milestone]:
    """Every dated moment of the challenge in time order: its own milestones, registration's end and each
    phase's window. Days start at 00:00 UTC, except an end date, which is the end of its day."""
    found = [Milestone(key, what, _day_start(day)) for key, what, day in (
        ("data-release", "Data release", challenge.data_release_date),
        ("start", "Challenge starts", challenge.start_date),
        ("results", "Results announced", challenge.results_announcement_date)) if day]
    found += [Milestone(key, what, at) for key, what, at in (
        ("registration", "Registration closes", challenge.registration_closes_at),
        ("report", "Method reports due", challenge.report_deadline_at)) if at]
    if challenge.end_date:
        found.append(Milestone("end", "Challenge ends", dt.datetime.combine(challenge.end_date, dt.time(23, 59),
                                                                            dt.UTC)))
    for phase in phases:
        if phase.submissions_open_at:
            found.append(Milestone(f"{phase.slug}/opens", f"{phase.title}: submissions open",
                                   phase.submissions_open_at, phase.slug))
        if phase.submissions_close_at:  # keyed by the phase alone, as the feed named closings before
            found.append(Milestone(phase.slug, f"{phase.title}: submissions close", phase.submissions_close_at,
                                   phase.slug))
        if phase.method_reports_close_at:
            found.append(Milestone(f"{phase.slug}/reports", f"{phase.title}: method reports due",
                                   phase.method_reports_close_at, phase.slug))
    return sorted(found, key=lambda m: (m.at, m.what))


def next_milestone(found: list[Milestone], now: dt.datetime) -> Milestone | None:
    """The first milestone still ahead, whose countdown the timeline shows."""
    return next((m for m in found if m.at > now), None)


def _day_start(day: dt.date) -> dt.datetime:
    return dt.datetime.combine(day, dt.time(0, 0), dt.UTC)


def ranking_method(phase: Phase) -> str:
    """The ranking method explained in one sentence (its name is METHOD_NAMES')."""
    score, options, method = phase.score.title, phase.ranking_options, phase.scoring_method_choice
    if method == "absolute":
        how = f"results are ordered on {score} alone ({BETTER[phase.score.order]})"
    elif method in ("mean", "median"):
        ranked = "; ".join(f"{c.title}: {BETTER[c.order]}" for i, c in enumerate(phase.columns)
                           if i == 0 or not c.exclude_from_ranking)
        how = (f"each result is ranked on every ranked column separately ({ranked}), then ordered by the "
               f"{method} of those ranks")
    elif method == "aggregate-then-rank":
        how = f"results are ordered on the {options.aggregate} of their per-case {score} ({BETTER[phase.score.order]})"
    elif method == "rank-then-aggregate":
        how = (f"the results are ranked on {score} in each case ({BETTER[phase.score.order]}), then ordered by "
               f"the {options.aggregate} of their per-case ranks")
    elif method == "rank-then-average":
        return rank_then_average(phase, listed=listed(phase))
    else:
        adjusted = "" if options.p_adjust == "none" else f", p adjusted by {options.p_adjust}"
        how = (f"every pair of results is compared on {score} by a one-sided Wilcoxon signed-rank test over cases "
               f"(p ≤ {options.alpha}{adjusted}), and results are ordered by the share of the others they beat")
    return (f"{how}, equal ones sharing a rank (1, 2, 2, 4); {listed(phase)}, "
            "and one missing a ranked value is listed without a rank.")


def listed(phase: Phase) -> str:
    """Which results the leaderboard lists, and of which (L2L's best of the last N)."""
    which = LISTED[phase.result_display_choice]
    if phase.best_of_last:
        return f"only each participant's last {phase.best_of_last} results compete; {which}"
    return which


def rank_then_average(phase: Phase, *, listed: str) -> str:
    """FLARE's method in one sentence: what is ranked per case, how the ranks combine, and what a
    failed case counts as (its own rule, so it differs from the other methods' closing words)."""
    weighted = len({m.weight for m in phase.ranking_metrics}) > 1
    named = [f"{m.title} ({BETTER[m.order]}{f', weight {m.weight:g}' if weighted else ''})"
             for m in phase.ranking_metrics]
    metrics = ", ".join(named[:-1]) + f" and {named[-1]}" if len(named) > 1 else "".join(named)
    return (f"in every case each result is ranked on {metrics}, a failed or missing case ranking last; a result's "
            f"{'weighted ' if weighted else ''}mean rank divided by the number of results ranked orders them, the "
            f"smallest first, equal ones sharing a rank (1, 2, 2, 4); {listed}, and one with no value at all is "
            "listed without a rank.")
