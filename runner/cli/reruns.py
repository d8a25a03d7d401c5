"""`challenge rerun` and `challenge preserve`: a phase's algorithms run again on another phase's hidden
data (living benchmarks, retraining the best), and their images kept on the runner meanwhile."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime as dt
from pathlib import Path

from rich.markup import escape

from runner.errors import ChallengeError
from runner.evaluation import reruns
from runner.evaluation.archives import preserve_image
from runner.evaluation.job import pull_refusal
from runner.evaluation.reruns import Carried, Choice, Standing
from runner.execution.sandbox import Executor
from runner.ranking.leaderboard import phase_leaderboard
from runner.settings import add_options
from runner.tree.located import ModelError
from runner.tree.phase_model import Phase
from runner.tree.policy import visibility
from runner.tree.result_model import Result
from runner.tree.store import Store
from runner.tree.submission_model import Submission

from . import summary
from .common import Job, SubParsers, UsageError, err, open_store, progress_bar, settings_here
from .evaluate import (
    add_runner_options,
    evaluate_queue,
    preserved_dir,
    runner_engine,
)
from .keys import runner_keys, runner_store
from .leaderboard import leaderboard_keys

STYLES = {"written": "green", "kept": "dim", "conflict": "yellow"}


def register(sub: SubParsers) -> None:
    r = sub.add_parser("rerun", help=summary("rerun"))
    r.add_argument("challenge")
    r.add_argument("--from", dest="source", required=True, metavar="PHASE", help="the phase whose results are carried")
    r.add_argument("--to", dest="target", required=True, metavar="PHASE", help="the phase they are evaluated in")
    which = r.add_mutually_exclusive_group(required=True)
    which.add_argument("--all", dest="how", action="store_const", const="all", help="every succeeded result")
    which.add_argument("--best", dest="how", action="store_const", const="best",
                       help="each participant's best-ranked result")
    which.add_argument("--top", type=positive, metavar="N",
                       help="the results ranked N or better on the leaderboard (ties at the cut all go)")
    r.add_argument("--identity", "-i", type=Path, help="an organizer's private key (age or OpenSSH), to rank a "
                   "phase whose scores are withheld (blind, unapproved, not public)")
    r.add_argument("--publish-selection", action="store_true", help="with --best or --top from a phase whose "
                   "ranking is withheld now: write the selected results' files though they show who was selected "
                   "(never a rank)")
    add_runner_options(r)
    r.set_defaults(func=cmd_rerun)

    p = sub.add_parser("preserve", help=summary("preserve"))
    p.add_argument("challenge")
    p.add_argument("--phase", required=True)
    add_options(p, "preserved_dir", "allow_local_images")
    p.set_defaults(func=cmd_preserve)


def positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of 1 or more")
    return int(text)


def cmd_rerun(args: argparse.Namespace) -> int:
    # The organizer's key ranks a withheld phase; GitHub's keys seal the new results where the target withholds.
    job = Job.here()
    settings = job.settings(args)
    store = runner_store(args.root, settings=settings, keys=dataclasses.replace(
        runner_keys(settings), identities=leaderboard_keys(args).identities))
    choice = Choice("top", args.top) if args.top else Choice(args.how)
    carried = carry(store, args.challenge, source=args.source, target=args.target, choice=choice,
                    publish_selection=args.publish_selection)
    status = evaluate_queue(reruns.queue(store, carried), store=store, settings=settings, job=job)
    return 1 if any(c.state == "conflict" for c in carried) else status


def carry(store: Store, challenge: str, *, source: str, target: str, choice: Choice,
          publish_selection: bool = False) -> list[Carried]:
    """Write the submission files that carry `choice` of `source`'s results into `target`, saying each.
    Nothing written or printed depends on a ranking the source phase withholds now (this may run where
    others read its output, an Actions log)."""
    first, then = store.phase(challenge, source), store.phase(challenge, target)
    reruns.check_phases(first, then)
    results, now = store.results(challenge, source), dt.datetime.now(dt.UTC)
    # The ranking is public when every result's scores are (an unapproved result's are not, nor its rank).
    public = visibility(first, now=now).scores and all(store.visibility(first, r, now=now).scores for r in results)
    reruns.check_withheld(first, choice, ranking_public=public, publish_selection=publish_selection)
    chosen = reruns.select(standings(store, first, results), choice)
    if not public:  # best first would tell the ranking: in the log, and in the order the results are made
        chosen.sort(key=lambda s: (s.result.participant, s.result.submission))
    carried = reruns.write(store, reruns.plan(store, then, chosen, ranking_public=public))
    if not carried:
        err.print(f"{challenge}/{source}: no succeeded results to carry ({choice})")
    for c in carried:
        rank = "" if not public else f" (rank {c.plan.rank})" if c.plan.rank is not None else " (unranked)"
        why = f": {c.why}, skipped" if c.why else ""
        err.print(f"[{STYLES[c.state]}]{c.state}[/] {escape(c.plan.source.key)}{rank} -> "
                  f"{escape(str(c.plan.path.relative_to(store.root)))}{escape(why)}")
    return carried


def standings(store: Store, phase: Phase, results: list[Result]) -> list[Standing]:
    """Each of `results` (the phase's) with its rank on the leaderboard they make; what an organizer
    excluded from the rankings is left out of reruns too."""
    board = phase_leaderboard(store.paths, phase, results)
    ranks = {(r.participant, r.submission): r.rank for r in board.rows}
    out = {(e.result.participant, e.result.submission) for e in board.excluded}
    return [Standing(r, ranks.get((r.participant, r.submission))) for r in results
            if (r.participant, r.submission) not in out]


def cmd_preserve(args: argparse.Namespace) -> int:
    settings = settings_here(args)
    store = open_store(args.root, settings)
    phase = store.phase(args.challenge, args.phase)
    if not phase.runs_algorithms:
        raise UsageError(f"{args.challenge}/{args.phase} takes predictions files: there are no images to preserve")
    executor = runner_engine(settings, root=store.root)
    with contextlib.closing(executor):
        failed = preserve(store, phase, executor=executor, folder=preserved_dir(settings, store),
                          allow_local=settings.allow_local_images)
    return 1 if failed else 0


def preserve(store: Store, phase: Phase, *, executor: Executor, folder: Path, allow_local: bool = False) -> int:
    """Save as an archive in `folder`, once, each image of the phase's succeeded results (what a rerun carries;
    archives are files already), checked as the queue checks an image before it pulls one (a refused
    submission may name a registry on the runner's own networks); the number that could not be saved."""
    refs = sorted({s.image for s in _submissions(store, phase) if s.image and _succeeded(store, s)})
    if not refs:
        err.print(f"{phase.challenge}/{phase.slug}: no images of succeeded results to preserve")
    failed = 0
    with progress_bar(err) as progress:
        task = progress.add_task("preserving", total=len(refs))
        for ref in refs:
            try:
                if why := pull_refusal(ref, allowed=phase.allowed_registries, allow_local=allow_local):
                    raise ChallengeError(why)
                saved = preserve_image(ref, executor=executor, folder=folder)
                line = f"[green]saved[/] {escape(ref)}" if saved else f"[dim]kept[/] {escape(ref)} (saved before)"
            except (ChallengeError, OSError) as exc:
                failed += 1
                line = f"[red]error[/] {escape(ref)}: {escape(str(exc))}"
            progress.advance(task)
            progress.console.print(line, markup=True, highlight=False)
    return failed


def _succeeded(store: Store, submission: Submission) -> bool:
    result = store.result(submission)
    return result is not None and result.status == "succeeded"


def _submissions(store: Store, phase: Phase) -> list[Submission]:
    found = []
    for path in sorted((store.paths.submissions(phase.challenge) / phase.slug).glob("*/*.yml")):
        with contextlib.suppress(ModelError):  # an invalid file is `check`'s business
            found.append(store.submission(path))
    return found
