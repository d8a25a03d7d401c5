"""Where each kind of file sits in the challenge tree: the one home of the folder layout.

`TreePaths` gives the files of a tree on disk; the patterns below read repository-relative paths
(a pull request's changed files, git history), so both sides agree on one layout:

    challenges/<challenge>/challenge.yml
    challenges/<challenge>/phases/<phase>.yml
    challenges/<challenge>/submissions/<phase>/<participant>/<id>.yml
    challenges/<challenge>/results/<phase>/<participant>/<id>.json
    challenges/<challenge>/reports/<phase>/<participant>/<id>.yml   a method report added to submission <id>
    challenges/<challenge>/approvals/<phase>.yml
    challenges/<challenge>/exclusions/<phase>.yml                   results taken out of a phase's rankings
    challenges/<challenge>/teams.yml
    challenges/<challenge>/registrations/<login>.yml
    challenges/<challenge>/data-access/<login>.age                  a data set's links, sealed for one login
    challenges/<challenge>/evaluation/                              the organizer's evaluation container
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

CHALLENGES = "challenges"
SUBMISSION_PATH = re.compile(rf"{CHALLENGES}/(?P<challenge>[^/]+)/submissions/(?P<phase>[^/]+)/"
                             r"(?P<participant>[^/]+)/(?P<id>[^/]+)\.yml")
RESULT_PATH = re.compile(rf"{CHALLENGES}/(?P<challenge>[^/]+)/results/(?P<phase>[^/]+)/"
                         r"(?P<participant>[^/]+)/(?P<id>[^/]+)\.json")
# The sealed parts beside a public record (tree/records.py): the whole result, a debugging phase's logs.
SEALED_PATH = re.compile(rf"{CHALLENGES}/(?P<challenge>[^/]+)/results/(?P<phase>[^/]+)/"
                         r"(?P<participant>[^/]+)/(?P<id>[^/]+)\.(sealed|logs)\.age")
# A method report added to a submission with a result: its own folder, never read as a submission (ids may
# hold dots, so a name beside the submission like <id>.report.yml would be one) nor one evaluated again.
REPORT_PATH = re.compile(rf"{CHALLENGES}/(?P<challenge>[^/]+)/reports/(?P<phase>[^/]+)/"
                         r"(?P<participant>[^/]+)/(?P<id>[^/]+)\.yml")
REGISTRATION_PATH = re.compile(rf"{CHALLENGES}/(?P<challenge>[^/]+)/registrations/(?P<login>[^/]+)\.yml")
LISTING_PATH = re.compile(rf"{CHALLENGES}/(?P<challenge>[^/]+)/challenge\.yml")  # a catalog entry, proposed
RESULT_GLOB = f"{CHALLENGES}/*/results/*/*/*.json"
IN_RESULTS = re.compile(rf"{CHALLENGES}/[^/]+/results/")  # anything under a challenge's results (.match)
SUBMISSION_WHERE = f"{CHALLENGES}/<challenge>/submissions/<phase>/<your login or team>/<id>.yml"
# A challenge's folders that hold data or code, not pages of its site.
NOT_PAGES = frozenset({"submissions", "results", "evaluation", "examples", "data", "phases", "approvals",
                       "registrations", "reports", "exclusions", "data-access"})
# A challenge's folder on the site that the site writes itself: its leaderboards (its result viewers sit under
# results/, above). Nothing an organizer puts there is published (`challenge check` warns of it).
LEADERBOARDS = "leaderboard"
# What the site publishes as the organizer wrote it: a file of these kinds outside the folders above.
PAGE_SUFFIXES = frozenset({".md", ".png", ".jpg", ".jpeg", ".gif", ".svg", ".webp", ".pdf", ".csv"})


def may_hold_pages(top: str) -> bool:
    """Whether the entry `top` of a challenge's folder may be, or hold, its organizer's pages (`organizer_page`)."""
    return top not in NOT_PAGES and top != LEADERBOARDS


def organizer_page(rel: str) -> bool:
    """Whether `rel` (a '/'-separated path inside a challenge's folder) is one of its organizer's pages: a file
    the site copies as it is, and that nothing read of the challenge's records, phases or results comes from."""
    return may_hold_pages(rel.split("/", 1)[0]) and PurePosixPath(rel).suffix.lower() in PAGE_SUFFIXES


def companion_file(folder: Path, name: str) -> Path | None:
    """The regular file `name` in a submission's `folder` (its predictions, its supplementary PDF), or
    None: a name that is a path, a link (even to a file beside it) or anything but a regular file is
    never read, so a submission can only ever point at its participant's own files."""
    if not name or "/" in name or name in (".", ".."):
        return None
    path = folder / name
    try:
        return path if stat.S_ISREG(os.lstat(path).st_mode) else None
    except OSError:
        return None


@dataclass(frozen=True)
class TreePaths:
    """The files of the tree whose repository root is `root`. Each path is made in one `Path` call:
    a build asks for the paths of 60,000 results several times, and `/` parses once per step."""

    root: Path

    @property
    def base(self) -> Path:
        return self.root / CHALLENGES

    def _at(self, *parts: str) -> Path:
        return Path(self.root, CHALLENGES, *parts)

    def challenge(self, slug: str) -> Path:
        return self._at(slug)

    def challenge_file(self, slug: str) -> Path:
        return self._at(slug, "challenge.yml")

    def phases(self, slug: str) -> Path:
        return self._at(slug, "phases")

    def phase_file(self, slug: str, phase: str) -> Path:
        return self._at(slug, "phases", f"{phase}.yml")

    def submissions(self, slug: str) -> Path:
        return self._at(slug, "submissions")

    def submission_file(self, slug: str, phase: str, participant: str, sub_id: str) -> Path:
        return self._at(slug, "submissions", phase, participant, f"{sub_id}.yml")

    def reports(self, slug: str, phase: str) -> Path:
        return self._at(slug, "reports", phase)

    def report_file(self, slug: str, phase: str, participant: str, sub_id: str) -> Path:
        return self._at(slug, "reports", phase, participant, f"{sub_id}.yml")

    def results(self, slug: str, phase: str) -> Path:
        return self._at(slug, "results", phase)

    def all_results(self, slug: str) -> Path:
        """The folder holding each phase's results."""
        return self._at(slug, "results")

    def result_file(self, slug: str, phase: str, participant: str, sub_id: str) -> Path:
        return Path(self.root, result_path(slug, phase, participant, sub_id))

    def approvals_file(self, slug: str, phase: str) -> Path:
        return self._at(slug, "approvals", f"{phase}.yml")

    def exclusions_file(self, slug: str, phase: str) -> Path:
        return self._at(slug, "exclusions", f"{phase}.yml")

    def data_access(self, slug: str) -> Path:
        return self._at(slug, "data-access")

    def data_access_file(self, slug: str, login: str) -> Path:
        return self._at(slug, "data-access", f"{login}.age")

    def teams_file(self, slug: str) -> Path:
        return self._at(slug, "teams.yml")

    def registrations(self, slug: str) -> Path:
        return self._at(slug, "registrations")

    def evaluation(self, slug: str) -> Path:
        return self._at(slug, "evaluation")


def phase_folder(slug: str, kind: str, phase: str) -> str:
    """The repository path of a phase's folder of `kind` ("results" or "submissions"), as git names it."""
    return f"{CHALLENGES}/{slug}/{kind}/{phase}"


def result_path(slug: str, phase: str, participant: str, sub_id: str) -> str:
    """A result file's repository path (as git names it), without making a Path."""
    return f"{CHALLENGES}/{slug}/results/{phase}/{participant}/{sub_id}.json"


def submission_of_result(rel: str) -> str | None:
    """The repository path of the submission a result file answers, or None for another path."""
    match = RESULT_PATH.fullmatch(rel)
    if match is None:
        return None
    return str(PurePosixPath(CHALLENGES, match["challenge"], "submissions", match["phase"], match["participant"],
                             f"{match['id']}.yml"))


def phase_of_result(rel: str) -> str | None:
    """`<challenge>/<phase>` of a result file's repository path, or None for another path."""
    match = RESULT_PATH.fullmatch(rel)
    return f"{match['challenge']}/{match['phase']}" if match else None
