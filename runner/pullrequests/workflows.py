"""Where each workflow runs: the public repository's on GitHub-hosted runners only, evaluations on the
self-hosted GPU runners of a private runner repository.

For a `pull_request`, GitHub runs the workflow files of the pull request itself: any job a fork writes
with `runs-on: [self-hosted, gpu]` would run on a runner registered to the public repository, where the
hidden data, the runner's keys and the Docker socket are. So no runner is registered there, and no
workflow of the public repository names one (`self_hosted_problems`, which `challenge check`
reports). The runners belong to a private runner repository that only organizers can write
(`write_runner_repository` scaffolds it from `runner_repository/`): its one workflow starts on a
`repository_dispatch` sent by the public repository's default branch (`challenge dispatch`), on a
schedule or by hand, evaluates the public repository's main branch and pushes the results back with a
token that reaches the public repository alone.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from runner.errors import ChallengeError
from runner.tree.located import ORGANIZER, Document, ModelError, load_yaml

WORKFLOWS = Path(".github", "workflows")
# The labels of GitHub's standard hosted runners, and no other: a self-hosted runner may carry any label,
# `ubuntu-gpu` too. (An organization's larger runners have names of its own: run them in the runner repository.)
HOSTED = re.compile(r"ubuntu-(latest|slim|\d\d\.\d\d)(-arm)?|windows-(latest|\d{4}|11)(-arm)?"
                    r"|macos-(latest|\d\d)(-large|-xlarge|-intel)?")
REPOSITORY = re.compile(r"(?P<owner>[A-Za-z0-9][A-Za-z0-9-]{0,38})/(?P<name>(?!\.\.?$)[A-Za-z0-9._-]{1,100})")
TEMPLATE = Path(__file__).parent / "runner_repository"
# What the runner repository holds, and where each file comes from in TEMPLATE.
RUNNER_FILES = {Path(".github", "workflows", "evaluate.yml"): "workflows/evaluate.yml",
                Path(".github", "actionlint.yaml"): "actionlint.yaml", Path("README.md"): "README.md"}


def workflow_files(root: Path) -> list[Path]:
    folder = root / WORKFLOWS
    return sorted(p for p in folder.glob("*") if p.suffix.lower() in (".yml", ".yaml") and p.is_file())


def self_hosted_problems(root: Path) -> list[ModelError]:
    """A problem at each job of the repository's workflows that may run anywhere but on a GitHub-hosted
    runner: the public repository's workflows run what a pull request changes."""
    problems = []
    for path in workflow_files(root):
        try:
            document = load_yaml(path, ORGANIZER)
        except ModelError as exc:
            problems.append(exc)
            continue
        jobs = document.data.get("jobs") if isinstance(document.data, dict) else None
        if isinstance(jobs, dict):
            for name, job in jobs.items():
                problems += _job_problems(document, str(name), job)
    return problems


def _job_problems(document: Document, name: str, job: Any) -> list[ModelError]:
    if not isinstance(job, dict):
        return []
    if "runs-on" in job:
        why = _not_hosted(job["runs-on"])
        return [document.error(("jobs", name, "runs-on"), why + SEE)] if why else []
    called = job.get("uses")
    if isinstance(called, str) and not called.startswith("./"):
        return [document.error(("jobs", name, "uses"), f"{called!r} is a workflow of another repository, which "
                                                       "may name any runner" + SEE)]
    return []


SEE = ("; this public repository's workflows run what pull requests change, so they run on GitHub-hosted "
       "runners only, and evaluations run from the private runner repository (`challenge runner-repo`)")


def _not_hosted(runs_on: Any) -> str | None:
    """Why `runs-on` may name a runner that is not GitHub-hosted; None for a GitHub-hosted label."""
    labels = [runs_on] if isinstance(runs_on, str) else runs_on if isinstance(runs_on, list) else None
    if labels is None:
        return f"{runs_on!r} names a runner group or labels, which may hold self-hosted runners"
    for label in labels:
        if not isinstance(label, str) or "${{" in label:
            return f"{label!r} cannot be checked (an expression): name a GitHub-hosted runner such as ubuntu-latest"
        if not HOSTED.fullmatch(label):
            return f"{label!r} is not a GitHub-hosted runner"
    return None


def write_runner_repository(dest: Path, public: str, *, force: bool = False) -> list[Path]:
    """The runner repository's files for the public repository `public` (OWNER/NAME), written into
    `dest`; the paths written. Refuses to replace a file unless `force`."""
    match = REPOSITORY.fullmatch(public)
    if match is None:
        raise ChallengeError(f"{public!r} is not OWNER/NAME of a GitHub repository")
    targets = {dest / relative: source for relative, source in RUNNER_FILES.items()}
    existing = [str(path) for path in targets if path.exists()]
    if existing and not force:
        raise ChallengeError(f"{', '.join(existing)} already exists (--force replaces it)")
    for path, source in targets.items():
        text = (TEMPLATE / source).read_text()
        for key, value in (("@PUBLIC_REPOSITORY@", public), ("@PUBLIC_OWNER@", match["owner"]),
                           ("@PUBLIC_NAME@", match["name"])):
            text = text.replace(key, value)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return list(targets)
