"""The submission form: an issue's answers become the ordinary pull request (branch, one file, review by
the same rules, merge, a link on the issue), or a refusal on the issue; hostile answers never make an
error or run anything, and no pull request but the form's own takes an issue author's identity. With
the real PyGithub client against the local REST server."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import pytest
import yaml

from runner.cli import main
from runner.errors import Retry
from runner.pullrequests.github import GitHub, GitHubError
from runner.pullrequests.issueform import FORM_LABEL, ISSUE_MARKER, MAX_ANSWER, QUESTIONS, submit_issue
from runner.pullrequests.review import LABELS, judged_author, review
from runner.pullrequests.rules import MAX_LISTED
from runner.tree.store import Store
from tests.github_server import BOT, OWNER_REPO, git
from tests.helpers import CHALLENGE, IMAGE, NOW, PHASE, REPO, UTC, Tree, edit_yaml, phase_file, sub, text


@pytest.fixture
def tree(tree: Path) -> Path:
    """The built tree, its phase allowing 3 submissions per day, and a phase that takes predictions files."""
    edit_yaml(phase_file(tree), submissions_limit_per_user_per_period=3, submission_limit_period=1)
    Tree(tree).phase("stage1", title="Stage 1 test set", submission_kind="predictions")
    return tree

pytestmark = pytest.mark.usefixtures("tree")  # every test on the built tree (`origin` clones it)

FORM = REPO / ".github" / "ISSUE_TEMPLATE" / "submission.yml"
WORKFLOW = REPO / ".github" / "workflows" / "issue-submission.yml"
BRANCH = "issue-submission/1"


@pytest.fixture
def hub(github):
    return GitHub(OWNER_REPO, token="test", api_url=github.url, pause=False, retry=Retry(attempts=1))


def form(**answers: str | None) -> str:
    """An issue's body as GitHub writes the form's answers; a None answer as GitHub writes an empty one."""
    given = {"challenge": CHALLENGE, "phase": PHASE, "image": IMAGE, "team": None, "title": "Threshold", **answers}
    return "\n\n".join(f"### {q.label}\n\n{given[q.id] or '_No response_'}" for q in QUESTIONS)


def submit(hub, tree, issue, *, merge=True, now=NOW):
    return submit_issue(hub, Store(tree), number=issue.number, base="main", now=now, merge=merge)


def branches(origin) -> list[str]:
    return git(origin, "for-each-ref", "--format=%(refname:short)", "refs/heads").split()


def issue_comment(issue) -> str:
    [comment] = issue.comments
    assert comment["body"].startswith(ISSUE_MARKER)
    return comment["body"]


# --- a valid form -------------------------------------------------------------------------------------


def test_a_valid_form_becomes_the_ordinary_pull_request_reviewed_and_merged(github, hub, tree, origin):
    issue = github.open_issue("alice", form())
    done = submit(hub, tree, issue)
    path = sub("alice", "issue-1")
    pull = github.pulls[done.pull]
    assert done.opened and not done.problems and done.review.verdict.ok
    # Opened by the workflow token from the form's branch of this repository, naming the issue and its author.
    assert (pull.author, pull.head_ref, pull.head_repo) == (BOT["login"], BRANCH, OWNER_REPO)
    assert pull.title == f"Submission {path} (issue #1)" and "@alice" in pull.body and "#1" in pull.body
    # Judged as alice's by the same rules, commented, labelled and merged as review.yml does.
    assert pull.merged and pull.labels == [LABELS["valid"]]
    assert f"Submission `{path}` accepted" in pull.comments[0]["body"]
    assert "'alice' has 0 evaluated and 1 pending" in pull.comments[0]["body"]
    # One file, nothing else, written by safe_dump.
    assert git(origin, "diff", "--name-only", "main~1", "main") == path
    assert yaml.safe_load(git(origin, "show", f"main:{path}")) == {"phase": PHASE, "image": IMAGE, "title": "Threshold"}
    assert git(origin, "log", "-1", "--format=%s", "main") == f"Submission {path} (#{pull.number})"
    # The issue links the pull request and is closed.
    assert f"Submitted in #{pull.number}" in issue_comment(issue) and issue.state == "closed"
    assert Store(tree).phase(CHALLENGE, PHASE)  # the checkout itself is untouched: only the API wrote


def test_the_same_issue_run_again_opens_no_second_pull_request(github, hub, tree, origin):
    issue = github.open_issue("alice", form())
    first = submit(hub, tree, issue, merge=False)
    head = github.pulls[first.pull].head
    again = submit(hub, tree, issue, merge=False)
    assert (again.pull, again.opened, again.comment) == (first.pull, False, "unchanged")
    assert github.pulls[first.pull].head == head  # nothing pushed: the branch already held the file
    assert len(github.pulls) == 1 and branches(origin) == sorted(["main", BRANCH])
    merged = submit(hub, tree, issue)
    assert merged.pull == first.pull and merged.review.merged and issue.state == "closed"
    assert submit(hub, tree, issue).skipped == "#1 is closed" and len(github.pulls) == 1
    issue.state = "open"  # reopened by hand: still the one merged pull request
    assert submit(hub, tree, issue).skipped == f"#{first.pull} is merged" and len(github.pulls) == 1


def test_an_edited_issue_updates_its_open_pull_request(github, hub, tree, origin):
    (tree / "challenges" / CHALLENGE / "teams.yml").write_text("vision-lab:\n  - alice\nother-lab:\n  - alice\n")
    issue = github.open_issue("alice", form(team="other-lab"))
    first = submit(hub, tree, issue, merge=False)
    issue.body = form(team="vision-lab", title="Better")  # another folder, another title
    again = submit(hub, tree, issue, merge=False)
    pull = github.pulls[first.pull]
    assert again.pull == first.pull and not again.opened and len(github.pulls) == 1
    path = sub("vision-lab", "issue-1")
    assert git(origin, "diff", "--name-only", "main", pull.head) == path  # the earlier file is gone
    assert yaml.safe_load(git(origin, "show", f"{pull.head}:{path}"))["title"] == "Better"
    assert again.review.verdict.ok and f"#{pull.number} is valid" in issue_comment(issue)


def test_the_review_waits_until_github_has_settled_the_new_pull_request(github, tree):
    """GitHub moves a pull request's head after its branch, and works out whether it merges, a moment later."""
    waits: list[float] = []
    hub = GitHub(OWNER_REPO, token="test", api_url=github.url, pause=False,
                 retry=Retry(attempts=4, first=2.0, sleep=waits.append))
    issue = github.open_issue("alice", form())
    github.unsettled = 2
    assert submit(hub, tree, issue).review.merged and waits == [2.0, 4.0]


def test_a_pull_request_closed_by_an_organizer_is_not_opened_again(github, hub, tree):
    issue = github.open_issue("alice", form())
    first = submit(hub, tree, issue, merge=False)
    github.pulls[first.pull].state = "closed"
    done = submit(hub, tree, issue)
    assert done.skipped == f"#{first.pull} is closed" and len(github.pulls) == 1
    assert "closed without being merged" in issue_comment(issue)


# --- hostile answers ----------------------------------------------------------------------------------


REFUSED = [
    ({"challenge": "../../etc"}, "Challenge: '../../etc' is not a challenge's slug"),
    ({"challenge": f"{CHALLENGE}/../x"}, "Challenge: 'ellipsoid-segmentation/../x' is not a challenge's slug"),
    ({"phase": "final-test/../../../.github/workflows"}, "Phase: 'final-test/../../../.github/workflows' is not"),
    ({"team": "../bob"}, "Team: '../bob' is not a team's name"),
    ({"team": "bob/x"}, "Team: 'bob/x' is not a team's name"),
    ({"title": "x\nimage: evil"}, "Title: write the answer on one line"),
    ({"image": f"{IMAGE}\nphase: other"}, "Image: write the answer on one line"),
    ({"image": "$(rm -rf /)"}, "image: must be pinned by digest"),
    ({"image": "`id`@sha256:" + "a" * 64}, "image: must be pinned by digest"),
    ({"image": "${{ github.token }}"}, "image: must be pinned by digest"),
    ({"image": "x" * 1_000_000}, f"Image: 1,000,000 characters; an answer has at most {MAX_ANSWER:,}"),
    ({"challenge": "еllipsoid-segmentation"}, "Challenge: 'еllipsoid-segmentation' is not"),  # a Cyrillic е
    ({"image": IMAGE.replace("a", "а")}, "image: must be pinned by digest"),  # Cyrillic а
    ({"title": "Threshold\u202egnp.exe"}, r"Title: 'Threshold\u202egnp.exe' holds a control or invisible"),
    ({"title": "\x1b[2Jred"}, r"Title: '\x1b[2Jred' holds a control or invisible character"),
    ({"image": None}, "Image: no answer; this question must be answered"),
    ({"challenge": "no-such-challenge"}, "there is no challenge 'no-such-challenge'"),
    ({"phase": "no-such-phase"}, f"challenge '{CHALLENGE}' has no phase 'no-such-phase'"),
    ({"team": "vision-lab"}, "the folder 'vision-lab' is neither your GitHub login (alice) nor a team of yours"),
    ({"image": "docker.io/alice/algo@sha256:" + "a" * 64}, "registry docker.io is not accepted in this phase"),
    ({"phase": "stage1"},
     "Phase: 'Stage 1 test set' takes a predictions or metrics file, which an issue cannot carry"),
]


@pytest.mark.parametrize("answers, refusal", REFUSED, ids=[r[1][:40] for r in REFUSED])
def test_a_hostile_or_wrong_answer_is_refused_on_the_issue_and_opens_nothing(github, hub, tree, origin, answers,
                                                                              refusal):
    edit_yaml(phase_file(tree), allowed_registries=["ghcr.io"])
    issue = github.open_issue("alice", form(**answers))
    done = submit(hub, tree, issue)
    assert any(refusal in line for line in done.problems), done.problems
    assert not github.pulls and branches(origin) == ["main"]
    comment = issue_comment(issue)
    assert comment.startswith(f"{ISSUE_MARKER}\n### ❌ No pull request was opened") and "Edit this issue" in comment
    assert len(comment) < 10_000 and "\x1b" not in comment and "\u202e" not in comment
    assert submit(hub, tree, issue).comment == "unchanged" and issue.state == "open"


def test_a_closed_phase_is_refused_with_the_rules_words(github, hub, tree):
    issue = github.open_issue("alice", form())
    done = submit(hub, tree, issue, now=dt.datetime(2028, 1, 3, 12, tzinfo=UTC))
    assert done.problems == ("phase 'Final test' closed on 2027-12-31 23:59 UTC (2 days ago)",)
    assert not github.pulls


@pytest.mark.parametrize("title", ["$(touch PWNED)", "`touch PWNED`", "${{ github.token }}", "x: [y, {z: 1}] # &a *a",
                                   "null", "'; DROP TABLE results; --", "Ελλειψοειδές 楕円 🧠"])
def test_a_title_that_is_only_text_is_submitted_as_that_text_and_runs_nothing(github, hub, tree, origin, title,
                                                                              monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    issue = github.open_issue("alice", form(title=title))
    done = submit(hub, tree, issue)
    assert done.review.merged and not (tmp_path / "PWNED").exists()
    submitted = yaml.safe_load(git(origin, "show", f"main:{sub('alice', 'issue-1')}"))
    assert submitted == {"phase": PHASE, "image": IMAGE, "title": title}


@pytest.mark.parametrize("body, refusal", [
    ("", "Challenge: no answer"),
    ("I would like to submit ghcr.io/x/y@sha256:...", "the issue's text does not start with the form's first question"),
    (form() + "\n\n### Image\n\nghcr.io/mallory/evil@sha256:" + "b" * 64, "Image: answered twice"),
    (form() + "\n\n### Participant\n\nbob", "'Participant' is not a question of the submission form"),
    (form().replace("### Title\n\nThreshold", "### Title\n\nThreshold\n\nimage: evil"), "Title: write the answer on"),
    ("### Image\n" * 200_000, "Image: answered twice"),
])
def test_a_body_that_is_no_form_is_refused(github, hub, tree, body, refusal):
    issue = github.open_issue("alice", body)
    done = submit(hub, tree, issue)
    assert any(line.startswith(refusal) for line in done.problems), done.problems[:3]
    assert not github.pulls
    assert issue_comment(issue).count("\n- ") <= MAX_LISTED + 1  # a long list is cut, not posted whole


def test_windows_line_endings_and_spaces_around_answers_are_read(github, hub, tree):
    issue = github.open_issue("alice", form(image=f"  {IMAGE}  ").replace("\n", "\r\n"))
    assert submit(hub, tree, issue).review.merged


@pytest.mark.parametrize("change, skipped", [
    ({"labels": []}, "#1 has no label 'submission-form': it was not opened with the submission form"),
    ({"state": "closed"}, "#1 is closed"),
    ({"author": "renovate[bot]"}, "#1 was opened by 'renovate[bot]', not by a person's GitHub account"),
])
def test_an_issue_that_is_no_submission_is_left_alone(github, hub, tree, change, skipped):
    issue = github.open_issue("alice", form())
    for name, value in change.items():
        setattr(issue, name, value)
    assert submit(hub, tree, issue).skipped == skipped
    assert not github.pulls and not issue.comments


# --- whose submission: the issue's author, for the form's own pull request only ---------------------------


def test_the_forms_pull_request_is_judged_as_the_issues_author(github, hub, tree):
    github.open_issue("alice", form())
    pull = github.open_pull(BOT["login"], {sub("alice", "issue-1"): text()}, head_ref=BRANCH, head_repo=OWNER_REPO)
    assert judged_author(hub, hub.pull(pull.number)) == "alice"


@pytest.mark.parametrize("author, head_ref, head_repo", [
    ("mallory", BRANCH, None),  # a fork's pull request from a branch named like the form's
    ("mallory", BRANCH, OWNER_REPO),
    (BOT["login"], BRANCH, "mallory/challenges"),  # the bot's, from another repository
    (BOT["login"], "issue-submission/01", OWNER_REPO),
    (BOT["login"], "main", OWNER_REPO),
])
def test_no_other_pull_request_takes_the_issue_authors_identity(github, hub, tree, author, head_ref, head_repo):
    github.open_issue("alice", form())
    pull = github.open_pull(author, {sub("alice", "issue-1"): text()}, head_ref=head_ref, head_repo=head_repo)
    assert judged_author(hub, hub.pull(pull.number)) == author
    outcome = review(hub, Store(tree), number=pull.number, head_sha=pull.head, base="main", now=NOW, merge=True)
    assert not outcome.verdict.ok and not pull.merged
    assert any("is neither your GitHub login" in line for line in outcome.verdict.problems)


def test_a_branch_naming_a_pull_request_instead_of_an_issue_gives_no_identity(github, hub, tree):
    github.open_pull("alice", {sub("alice", "v1"): text()})  # #1 is alice's pull request, not an issue
    pull = github.open_pull(BOT["login"], {sub("alice", "v2"): text()}, head_ref=BRANCH, head_repo=OWNER_REPO)
    assert judged_author(hub, hub.pull(pull.number)) == BOT["login"]


# --- the command the workflow runs ------------------------------------------------------------------------


def run(github, tree, number: int) -> list[str]:
    return ["--root", str(tree), "pr", "from-issue", "--issue", str(number), "--merge", "--repo", OWNER_REPO,
            "--api-url", github.url]


def test_the_command_exits_0_for_a_refusal_and_1_only_when_github_fails(github, tree, capsys):
    github.open_issue("alice", form(challenge="../../etc"))
    assert main(run(github, tree, 1)) == 0
    printed = capsys.readouterr()
    assert "refused: issue #1 opens no pull request (comment created)" in printed.out and not printed.err
    github.open_issue("alice", form())
    assert main(run(github, tree, 2)) == 0
    assert re.search(r"#2: pull request #3 opened, comment created, merged as [0-9a-f]{40}", capsys.readouterr().out)
    assert main(run(github, tree, 9)) == 1
    assert capsys.readouterr().err.strip() == "error: reading issue #9: GitHub answered 404: Not Found"


# --- the form and its workflow agree -----------------------------------------------------


def test_the_form_asks_what_the_bot_reads():
    template = yaml.safe_load(FORM.read_text())
    asked = [(e["id"], e["attributes"]["label"], e.get("validations", {}).get("required", False))
             for e in template["body"] if e["type"] != "markdown"]
    assert asked == [(q.id, q.label, q.required) for q in QUESTIONS]
    assert {e["type"] for e in template["body"]} == {"markdown", "input"}  # one line each
    assert template["labels"] == [FORM_LABEL]
    assert f"'{FORM_LABEL}'" in yaml.safe_load(WORKFLOW.read_text())["jobs"]["submit"]["if"]


def test_a_collaborators_pull_request_on_the_form_branch_is_never_taken_for_the_issues(github, hub, tree, origin):
    """Only a pull request the workflow token opened is the form's: one a collaborator opened from the branch
    issue-submission/N is neither reviewed as issue N's author's nor merged by the form's run."""
    issue = github.open_issue("alice", form())
    carol = github.open_pull("carol", {"README.md": "carol's work\n"}, head_ref="issue-submission/1",
                             head_repo=OWNER_REPO)
    with pytest.raises(GitHubError, match="422"):  # GitHub opens no second pull request from one branch
        submit(hub, tree, issue)
    assert github.pulls[carol.number].state == "open" and not github.pulls[carol.number].merged
