"""Submissions by pull request: the workflow steps that judge, merge, dispatch, shard, commit and report.

In the public repository, validate.yml runs `check-submission` on the pull request's own checkout
(read-only token); review.yml runs `pr review` from the default branch; issue-submission.yml runs
`pr from-issue`, which turns an answered submission form into that pull request and reviews it;
dispatch.yml runs `dispatch`, which asks the private runner repository (`runner-repo` writes it) to
evaluate. There, evaluate.yml runs `pending`, then per shard `evaluate --shard`, `commit-results` and
`pr notify`. `dry-run` walks one pull request through all of them against a local server that speaks
GitHub's REST API.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import json
import shutil
from collections.abc import Callable
from pathlib import Path

from runner.pullrequests import gitops, workflows
from runner.pullrequests.github import GitHub
from runner.pullrequests.issueform import submit_issue
from runner.pullrequests.review import notify, review
from runner.pullrequests.rules import Proposal, Verdict, check
from runner.settings import Settings, variable

from . import summary
from .common import SubParsers, UsageError, err, github, open_store, out, settings_here

VERDICT_FILE = "verdict.json"
DISPATCH_EVENT = "evaluate"  # what the runner repository's evaluate workflow listens for


def register(sub: SubParsers) -> None:
    c = sub.add_parser("check-submission", help=summary("check-submission"))
    c.add_argument("--author", required=True, help="the pull request author's GitHub login")
    c.add_argument("--base", default="HEAD^1", help="the base commit (default: HEAD^1 of the merge checkout)")
    c.add_argument("--head", default="HEAD", help="the proposed tree (default: HEAD)")
    c.add_argument("--pr", type=int, help="the pull request's number, recorded in the verdict file")
    c.add_argument("--output", type=Path, help=f"write the verdict as JSON here (the workflow's {VERDICT_FILE})")
    _local_images(c)
    c.set_defaults(func=(cmd_check_submission))
    _register_pr(sub)
    _register_runner(sub)
    _register_dry_run(sub)
    _register_runner_repository(sub)


def _register_pr(sub: SubParsers) -> None:
    pr = sub.add_parser("pr", help=summary("pr")).add_subparsers(
        dest="pr_command", required=True)
    r = pr.add_parser("review", help="judge a pull request at a commit, comment, label and merge it")
    which = r.add_mutually_exclusive_group(required=True)
    which.add_argument("--pr", type=int, help="the pull request's number")
    which.add_argument("--verdict", type=Path, help="the validate workflow's verdict file (gives the number)")
    r.add_argument("--head-sha", required=True, help="the commit that was validated; a moved head is skipped")
    r.add_argument("--base", help="the branch it must target (default: the checked-out branch)")
    r.add_argument("--merge", action="store_true", help="merge the pull request when it is valid")
    _api(r)
    _local_images(r)
    r.set_defaults(func=(cmd_review))
    f = pr.add_parser("from-issue", help="open the pull request an issue's submission form asks for, review it by "
                      "the same rules and link it from the issue; or comment why not")
    f.add_argument("--issue", type=int, required=True, help="the issue's number")
    f.add_argument("--base", help="the branch the pull request targets (default: the checked-out branch)")
    f.add_argument("--merge", action="store_true", help="merge the pull request when it is valid")
    _api(f)
    f.set_defaults(func=(cmd_from_issue))
    n = pr.add_parser("notify", help="comment each result a commit added on its submission's pull request")
    n.add_argument("--commit", default="HEAD")
    _api(n)
    n.set_defaults(func=(cmd_notify))


def _register_runner(sub: SubParsers) -> None:
    p = sub.add_parser("pending", help=summary("pending"))
    p.add_argument("--shards", type=int, default=1, help="at most this many shards")
    p.add_argument("--format", choices=("text", "json", "github"), default="text",
                   help="github: count=N and shards=[...] lines for $GITHUB_OUTPUT")
    p.set_defaults(func=cmd_pending)

    d = sub.add_parser("dispatch", help=summary("dispatch"))
    d.add_argument("--to", required=True, metavar="OWNER/NAME", help="the runner repository (the public "
                   "repository's variable RUNNER_REPOSITORY)")
    d.add_argument("--event", default=DISPATCH_EVENT, help=f"the repository_dispatch type (default: {DISPATCH_EVENT})")
    d.add_argument("--api-url", help="GitHub's REST API (default: $GITHUB_API_URL, else api.github.com)")
    d.set_defaults(func=cmd_dispatch)

    cr = sub.add_parser("commit-results", help=summary("commit-results"))
    cr.add_argument("--message", default="Evaluation results")
    cr.add_argument("--remote", default="origin")
    cr.add_argument("--branch", help="the branch to push to (default: the checked-out branch)")
    cr.add_argument("--attempts", type=int, default=5)
    cr.set_defaults(func=(cmd_commit_results))


def _register_dry_run(sub: SubParsers) -> None:
    d = sub.add_parser("dry-run", help=summary("dry-run"))
    d.add_argument("--pr", type=int, required=True)
    d.add_argument("--remote", required=True, help="the git repository that server serves (a path or URL)")
    d.add_argument("--api-url", required=True, help="the local server speaking GitHub's REST API")
    d.add_argument("--repo", default="local/challenges", help="OWNER/NAME on that server")
    d.add_argument("--data-root", type=Path, required=True, help="hidden data for the evaluation")
    d.add_argument("--base-image", help="Python base for building evaluation images")
    d.add_argument("--runner-repo", metavar="OWNER/NAME", help="the runner repository on that server (default: "
                   "the repository's name with -runner)")
    d.add_argument("--shards", type=int, default=2)
    d.add_argument("--workspace", type=Path, help="where to clone (default: ROOT/build/dry-run)")
    d.set_defaults(func=(cmd_dry_run))


def _register_runner_repository(sub: SubParsers) -> None:
    r = sub.add_parser("runner-repo", help=summary("runner-repo"))
    r.add_argument("dest", type=Path, help="the runner repository's folder (a new clone, say)")
    r.add_argument("--public", required=True, metavar="OWNER/NAME", help="this public challenge repository")
    r.add_argument("--force", action="store_true", help="replace the files if they are there")
    r.set_defaults(func=cmd_runner_repository)


def _api(p: argparse.ArgumentParser) -> None:
    p.add_argument("--repo", help="OWNER/NAME (default: $GITHUB_REPOSITORY)")
    p.add_argument("--api-url", help="GitHub's REST API (default: $GITHUB_API_URL, else api.github.com)")


def _local_images(p: argparse.ArgumentParser) -> None:
    p.add_argument("--allow-local-images", action="store_true", help="accept local image IDs (dry runs only)")


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def _hub(args: argparse.Namespace, settings: Settings, repository: str | None = None) -> GitHub:
    """GitHub at --api-url, for `repository`, else --repo (else the settings' repository and API)."""
    return github(settings, repository or args.repo, args.api_url, log=lambda line: err.print(line, markup=False))


def _print_verdict(verdict: Verdict) -> None:
    for problem in verdict.problems:
        out.print(problem, markup=False)
    what = verdict.path or "no submission"
    out.print(f"{'ok' if verdict.ok else 'refused'}: {what} ({verdict.kind})", markup=False)


# --- validate ---------------------------------------------------------------------------------------


def cmd_check_submission(args: argparse.Namespace) -> int:
    root = args.root.resolve()
    proposal = Proposal(args.author, gitops.changes(root, args.base, args.head),
                        lambda path: gitops.show(root, args.head, path))
    verdict = check(open_store(root, settings_here()), proposal, now=_now(), allow_local_images=args.allow_local_images)
    _print_verdict(verdict)
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(json.dumps({"pull_request": args.pr, "kind": verdict.kind, "path": verdict.path,
                                           "problems": list(verdict.problems)}, indent=2) + "\n")
    return 0 if verdict.ok else 1


# --- review and notify --------------------------------------------------------------------------------


def cmd_review(args: argparse.Namespace) -> int:
    root, settings = args.root.resolve(), settings_here()
    number = args.pr if args.pr is not None else _number(args.verdict)
    result = review(_hub(args, settings), open_store(root, settings), number=number, head_sha=args.head_sha,
                    base=args.base or gitops.current_branch(root), now=_now(), merge=args.merge,
                    allow_local_images=args.allow_local_images)
    if result.skipped:
        out.print(f"skipped: {result.skipped}", markup=False)
        return 0
    assert result.verdict is not None  # review() judges every pull request it does not skip
    _print_verdict(result.verdict)
    out.print(f"#{number}: comment {result.comment}" + (f", merged as {result.merged}" if result.merged else ""))
    if result.merge_error:
        raise UsageError(result.merge_error)
    return 0


def cmd_from_issue(args: argparse.Namespace) -> int:
    """Exit 0 whatever the issue's answers are (a refusal is a comment on the issue); 1 when GitHub or the
    merge failed, which an organizer sees as a failed run."""
    if args.issue < 1:
        raise UsageError(f"--issue {args.issue}: not an issue number")
    root, settings = args.root.resolve(), settings_here()
    done = submit_issue(_hub(args, settings), open_store(root, settings), number=args.issue,
                        base=args.base or gitops.current_branch(root), now=_now(), merge=args.merge)
    if done.review is not None and done.review.verdict is not None:
        _print_verdict(done.review.verdict)
    for problem in done.problems:
        out.print(problem, markup=False)
    if done.skipped:
        out.print(f"skipped: {done.skipped}", markup=False)
    elif done.problems:
        out.print(f"refused: issue #{args.issue} opens no pull request (comment {done.comment})", markup=False)
    else:
        merged = done.review.merged if done.review else None
        out.print(f"#{args.issue}: pull request #{done.pull} {'opened' if done.opened else 'found'}, comment "
                  f"{done.comment}" + (f", merged as {merged}" if merged else ""), markup=False)
    if done.review is not None and done.review.merge_error:
        raise UsageError(done.review.merge_error)
    return 0


def _number(verdict_file: Path) -> int:
    """The pull request number from the validate run's artifact; nothing else in it is trusted."""
    try:
        number = json.loads(verdict_file.read_text())["pull_request"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise UsageError(f"{verdict_file}: not a verdict file ({exc})") from None
    if not isinstance(number, int) or isinstance(number, bool) or number < 1:
        raise UsageError(f"{verdict_file}: pull_request is not a pull request number")
    return number


def cmd_notify(args: argparse.Namespace) -> int:
    settings = settings_here()
    notices = notify(_hub(args, settings), open_store(args.root, settings), commit=args.commit, now=_now())
    for notice in notices:
        where = ", ".join(f"#{n} ({c})" for n, c in zip(notice.pulls, notice.comments)) or "no pull request"
        out.print(f"{notice.result}: {where}", markup=False)
    if not notices:
        out.print(f"no results added by {args.commit}")
    return 0


# --- evaluate ---------------------------------------------------------------------------------------


def cmd_pending(args: argparse.Namespace) -> int:
    if args.shards < 1:
        raise UsageError("--shards must be at least 1")
    pending = open_store(args.root, settings_here()).pending()
    shards = shard_labels(len(pending), args.shards)
    if args.format == "json":
        print(json.dumps({"count": len(pending), "shards": shards}))
    elif args.format == "github":
        print(f"count={len(pending)}\nshards={json.dumps(shards)}")
    else:
        for submission in pending:
            out.print(submission.key, markup=False)
        out.print(f"{len(pending)} pending; shards: {' '.join(shards) or 'none'}")
    return 0


def shard_labels(pending: int, most: int) -> list[str]:
    """I/N for each shard: no more shards than pending submissions, so none starts idle."""
    count = min(most, pending)
    return [f"{i}/{count}" for i in range(1, count + 1)]


def cmd_dispatch(args: argparse.Namespace) -> int:
    return _dispatch(args, settings_here())


def _dispatch(args: argparse.Namespace, settings: Settings) -> int:
    """From the public repository's default branch: a repository_dispatch to the runner repository, when
    this checkout has pending submissions (the runner repository's schedule catches any missed)."""
    if not workflows.REPOSITORY.fullmatch(args.to or ""):
        raise UsageError(f"--to {args.to!r} is not OWNER/NAME: set the repository variable RUNNER_REPOSITORY to "
                         "the runner repository (challenges/organizers.md)")
    if not settings.github_token:
        raise UsageError(f"no token: set {variable('github_token')} (the workflow passes the secret "
                         "RUNNER_DISPATCH_TOKEN)")
    pending = len(open_store(args.root, settings).pending())
    if not pending:
        out.print("nothing pending: no evaluation asked for")
        return 0
    head = gitops.git(args.root.resolve(), "rev-parse", "HEAD").strip()
    _hub(args, settings, args.to).dispatch(args.event, {"pending": pending, "commit": head})
    out.print(f"asked {args.to} to {args.event}: {pending} pending at {head[:12]}")
    return 0


def cmd_runner_repository(args: argparse.Namespace) -> int:
    written = workflows.write_runner_repository(args.dest, args.public, force=args.force)
    for path in written:
        out.print(f"wrote {path}", markup=False)
    out.print(f"next: follow {args.dest / 'README.md'} (a GitHub App, the dispatch token, ephemeral runners)",
              markup=False)
    return 0


def cmd_commit_results(args: argparse.Namespace) -> int:
    settings = settings_here()
    env = gitops.token_env(settings.github_token, settings.github_server_url)
    pushed = gitops.commit_results(args.root.resolve(), message=args.message, remote=args.remote, branch=args.branch,
                                   attempts=args.attempts, env=env,
                                   log=lambda line: err.print(line, markup=False))
    if pushed.commit is None:
        out.print("no new results to commit")
    else:
        out.print(f"results committed as {pushed.commit} and pushed (try {pushed.tries})")
    return 0


# --- dry run ----------------------------------------------------------------------------------------


def cmd_dry_run(args: argparse.Namespace) -> int:
    """The workflows' steps in order, each the same `challenge` call a workflow makes: the public repository's,
    then the runner repository's on a checkout of its own (the runner host's), then the public one's again."""
    workspace = (args.workspace or args.root / "build" / "dry-run").resolve()
    shutil.rmtree(workspace, ignore_errors=True)
    workspace.mkdir(parents=True)
    api = ("--repo", args.repo, "--api-url", args.api_url)
    pr = GitHub(args.repo, token=None, api_url=args.api_url, pause=False).pull(args.pr)
    verdict = _dry_validate(args, workspace, pr.author)
    default_branch = _dry_review(args, workspace, verdict, pr.head_sha, api)
    if _dry_dispatch(args, default_branch):
        _dry_evaluate(args, workspace, api)
    _step("publish.yml: the site from the default branch")
    gitops.git(default_branch, "pull", "--quiet", "--ff-only")
    _challenge(default_branch, "build")
    out.print(f"dry run done: pull request #{args.pr} went through every step in {workspace}")
    return 0


def _dry_validate(args: argparse.Namespace, workspace: Path, author: str) -> Path:
    _step("validate.yml: checkout of the pull request merged into its base")
    checkout, verdict = workspace / "validate", workspace / "verdict" / VERDICT_FILE
    gitops.git(workspace, "clone", "--quiet", str(args.remote), str(checkout))
    gitops.checkout_pull(checkout, args.pr)
    _challenge(checkout, "check-submission", "--author", author, "--pr", str(args.pr), "--output", str(verdict),
               "--allow-local-images", ok=(0, 1))
    return verdict


def _dry_review(args: argparse.Namespace, workspace: Path, verdict: Path, head_sha: str,
                api: tuple[str, ...]) -> Path:
    _step("review.yml: the default branch judges the pull request through the API")
    default_branch = workspace / "main"
    gitops.git(workspace, "clone", "--quiet", str(args.remote), str(default_branch))
    _challenge(default_branch, "pr", "review", "--verdict", str(verdict), "--head-sha", head_sha, "--merge",
               "--allow-local-images", *api)
    return default_branch


def _dry_dispatch(args: argparse.Namespace, checkout: Path) -> bool:
    """Whether the default branch, now holding the merge, asked the runner repository to evaluate."""
    _step("dispatch.yml: the default branch asks the runner repository to evaluate")
    gitops.git(checkout, "pull", "--quiet", "--ff-only")
    runner = args.runner_repo or f"{args.repo}-runner"
    settings = settings_here()
    token = settings.github_token or "dry-run-dispatch-token"  # the workflow's RUNNER_DISPATCH_TOKEN
    dispatching = dataclasses.replace(settings, github_token=token)
    _challenge(checkout, "dispatch", "--to", runner, "--api-url", args.api_url,
               run=lambda parsed: _dispatch(parsed, dispatching))
    return bool(open_store(checkout, settings).pending())


def _dry_evaluate(args: argparse.Namespace, workspace: Path, api: tuple[str, ...]) -> None:
    _step("runner-repository/evaluate.yml: the runner host checks out the public main and plans shards")
    checkout = workspace / "runner-host"
    gitops.git(workspace, "clone", "--quiet", str(args.remote), str(checkout))
    _challenge(checkout, "pending", "--shards", str(args.shards))
    base = ("--base-image", args.base_image) if args.base_image else ()
    for shard in shard_labels(len(open_store(checkout, settings_here()).pending()), args.shards):
        _step(f"runner-repository/evaluate.yml: shard {shard} on the GPU runner")
        _challenge(checkout, "evaluate", "--pending", "--shard", shard, "--data-root", str(args.data_root),
                   "--allow-local-images", *base)
        _challenge(checkout, "commit-results", "--message", f"Results of shard {shard} (dry run)")
        _challenge(checkout, "pr", "notify", "--commit", "HEAD", *api)


def _step(title: str) -> None:
    out.print(f"\n[bold]== {title}[/]")


def _challenge(root: Path, *argv: str, ok: tuple[int, ...] = (0,),
               run: Callable[[argparse.Namespace], int] | None = None) -> int:
    """`challenge argv`, run in this process as a workflow runs it; `run`: the command's function to call instead
    of the one `main` finds (to give it settings of the dry run's own)."""
    from . import (  # the package's entry point imports this module; importing it here avoids a cycle
        dispatch,
        main,
        parser,
    )
    out.print(f"$ challenge {' '.join(argv)}", markup=False)
    full = ["--root", str(root), *argv]
    if run is None:
        code = main(full)
    else:
        parsed = parser(full).parse_args(full)
        parsed.func = run
        code = dispatch(parsed)
    if code not in ok:
        raise UsageError(f"dry run stopped: `challenge {argv[0]}` exited {code}")
    return code
