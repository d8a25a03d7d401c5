"""`challenge verify`: every result checked against the runners' signatures and the tree's history;
`challenge reproduce`: a result's submission evaluated again and its metrics compared with the record."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
from pathlib import Path

from runner.errors import ChallengeError
from runner.evaluation.queue import evaluate_again
from runner.evaluation.reproduce import Tolerance, compare
from runner.tree.gitfiles import shallow
from runner.tree.records import read_sealed
from runner.tree.result_model import Result, load_result
from runner.tree.store import Store
from runner.tree.verification import Check, Verifier

from . import summary
from .common import SubParsers, UsageError, err, open_store, out, settings_here, stage
from .evaluate import add_runner_options, runner_config, runner_executor
from .keys import publish_keys, runner_keys, tree_verifier
from .leaderboard import leaderboard_keys


def register(sub: SubParsers) -> None:
    v = sub.add_parser("verify", help=summary("verify"))
    v.add_argument("path", nargs="?", type=Path, help="a result file or a folder of them (default: challenges/)")
    v.add_argument("--identity", "-i", type=Path, help="also check the sealed records this key opens (an "
                   "organizer's key; or the publish key in $CHALLENGE_PUBLISH_KEY)")
    v.add_argument("--signers", type=Path, help="trust the runner keys in this allowed_signers file, got apart from "
                   "the repository (default: $CHALLENGE_ALLOWED_SIGNERS, else challenges/allowed_signers); the "
                   "tree's file must then list the same keys")
    v.set_defaults(func=cmd_verify)
    r = sub.add_parser("reproduce", help=summary("reproduce"))
    r.add_argument("result", type=Path, help="the result's public record, results/<phase>/<participant>/<id>.json")
    r.add_argument("--rtol", type=float, default=Tolerance.relative, help="relative tolerance (default: %(default)g)")
    r.add_argument("--atol", type=float, default=Tolerance.absolute, help="absolute tolerance (default: %(default)g)")
    r.add_argument("--identity", "-i", type=Path, help="a key that opens the sealed record, where the public one "
                   "withholds metrics (the runner's own copy is used first)")
    add_runner_options(r)
    r.set_defaults(func=cmd_reproduce)


def cmd_verify(args: argparse.Namespace) -> int:
    root = args.root.resolve()
    settings = settings_here()
    verifier = tree_verifier(root, settings, signers=args.signers)
    keys = leaderboard_keys(args) if args.identity else publish_keys(settings)
    store = open_store(root, settings, keys=keys, copies=False)
    paths = _records(args.path.resolve() if args.path else store.base)
    if not paths:  # not "0 verified", which reads as a pass
        out.print(f"no result records under {args.path or store.base}: nothing to verify", markup=False)
        return 0
    failures: list[str] = []
    sealed = 0
    with stage(f"verifying {len(paths)} result(s)"):
        for path in paths:
            for what, check in _checks(path, store, verifier):
                sealed += what == "sealed"
                if not check.verified:
                    shown = path.relative_to(root) if path.is_relative_to(root) else path
                    failures.append(f"{shown}{' (sealed record)' if what == 'sealed' else ''}: "
                                    f"{check.reason}")
    for line in failures:
        out.print(line, markup=False, highlight=False)
    if shallow(root):
        err.print("note: this clone is shallow: a result put back over a newer one, or evaluated under a phase "
                  "file of the history it lacks, cannot be told; `git fetch --unshallow` first")
    if not verifier.enforced:
        err.print("note: the tree lists no runner keys (challenges/allowed_signers): nothing can verify; "
                  "`challenge keys runner` on each runner prints its line")
    checked = f"{len(paths)} result(s)" + (f" and {sealed} sealed record(s)" if sealed else "")
    if failures:
        raise ChallengeError(f"{len(failures)} of {checked} do not verify (listed above)")
    out.print(f"{checked} verified: signed by a listed runner key, as the tree's history says they were made")
    return 0


def _records(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise UsageError(f"{path} is neither a result file nor a folder")
    under_results = "results" in path.parts[-3:]  # a challenge's, a phase's or a participant's results
    return sorted(path.glob("**/*.json") if under_results else path.glob("**/results/*/*/*.json"))


def _checks(path: Path, store: Store, verifier: Verifier) -> list[tuple[str, Check]]:
    """The public record's verification, and the sealed one's where the keys open it."""
    try:
        public = load_result(path)
    except ChallengeError as exc:
        return [("public", Check(reason=str(exc)))]
    found = [("public", verifier.check_current(public, path))]
    try:
        whole = read_sealed(path, store.keys) if public.withheld else None
    except ChallengeError as exc:
        return [*found, ("sealed", Check(reason=str(exc)))]
    if whole is not None:
        found.append(("sealed", verifier.check_current(whole, path, public=public)))
    return found


def cmd_reproduce(args: argparse.Namespace) -> int:
    settings = settings_here(args)
    store = open_store(args.root, settings, keys=runner_keys(settings) if not args.identity else leaderboard_keys(args))
    path = args.result.resolve()
    recorded = _whole(store, path)
    submission = store.submission(store.paths.submission_file(recorded.challenge, recorded.phase,
                                                              recorded.participant, recorded.submission))
    config = dataclasses.replace(runner_config(settings, store), cache_dir=None)  # measured again, never reused
    executor, base = runner_executor(settings, root=store.root, gpus=config.gpu_ids, log=err.print)
    with contextlib.closing(executor), stage(f"evaluating {submission.key} again"):
        again = evaluate_again(submission, store=store, executor=executor, config=config, base=base, log=err.print)
    result = compare(recorded, again, Tolerance(absolute=args.atol, relative=args.rtol))
    for line in result.differences:
        out.print(f"differs: {line}", markup=False, highlight=False)
    for line in result.changes:
        out.print(f"changed: {line}", markup=False, highlight=False)
    if not result.equal:
        cause = "; ".join(result.changes) or "nothing it was made from changed: the algorithm or the evaluation " \
                                            "is not deterministic"
        raise ChallengeError(f"{len(result.differences)} of {result.compared} value(s) differ ({cause})")
    out.print(f"reproduced: all {result.compared} value(s) (status and metrics) equal within rtol {args.rtol:g}, "
              f"atol {args.atol:g}")
    return 0


def _whole(store: Store, path: Path) -> Result:
    """The record to compare with: the runner's own copy, the sealed record the keys open, or the public one."""
    if not path.is_file():
        raise UsageError(f"{path}: no such result file")
    recorded = store.read_result(path)
    if recorded.withheld:
        raise UsageError(f"{path}: its public record withholds metrics ({recorded.withheld}); run this on the "
                         "runner that keeps the whole result, or pass --identity with a key that opens it")
    return recorded
