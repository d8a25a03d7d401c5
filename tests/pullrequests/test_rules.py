"""The submission rules, each judged on a fork's pull request read through the local REST server."""

from __future__ import annotations

import datetime as dt
import hashlib
from pathlib import Path

import pytest

from runner.pullrequests.github import GitHub
from runner.pullrequests.review import LABELS, review
from runner.pullrequests.rules import (
    Change,
    Proposal,
    check,
    load_registration,
    load_teams,
)
from runner.tree.located import ModelError
from runner.tree.policy import when
from runner.tree.references import registry_of
from runner.tree.store import Store
from tests.github_server import OWNER_REPO, Link
from tests.helpers import (
    CHALLENGE,
    NOW,
    PHASE,
    REPO,
    UTC,
    Tree,
    edit_yaml,
    phase_file,
    sub,
    text,
    write_result,
)


@pytest.fixture
def tree(tree: Path) -> Path:
    """The built tree with a page of the challenge and the site's guides: what a submission may not touch."""
    (tree / "challenges" / CHALLENGE / "index.md").write_text("# The challenge\n")
    Tree(tree).site()
    return tree

pytestmark = pytest.mark.usefixtures("tree")  # every test on the built tree (`origin` clones it)


def judge(github, tree: Path, files: dict[str, str | None], *, author: str = "alice", now: dt.datetime = NOW):
    pull = github.open_pull(author, files)
    hub = GitHub(OWNER_REPO, token="test", api_url=github.url, pause=False)
    outcome = review(hub, Store(tree), number=pull.number, head_sha=pull.head, base="main", now=now, merge=True)
    return outcome, github.pulls[pull.number]


def refused(github, tree, files, **kwargs) -> str:
    """The one problem line a refused pull request gets; it is commented, labelled, not merged."""
    outcome, pull = judge(github, tree, files, **kwargs)
    assert not outcome.verdict.ok and not pull.merged
    assert pull.labels == [LABELS["invalid"]]
    assert len(pull.comments) == 1 and "cannot be accepted" in pull.comments[0]["body"]
    assert len(outcome.verdict.problems) == 1, outcome.verdict.problems
    assert f"- `{outcome.verdict.problems[0]}`" in pull.comments[0]["body"]  # quoted: shown as typed
    return outcome.verdict.problems[0]


# --- the pull request's shape ------------------------------------------------------------------------


def test_a_valid_submission_passes_every_rule(github, tree):
    outcome, pull = judge(github, tree, {sub(): text()})
    assert outcome.verdict.ok and outcome.verdict.kind == "submission"
    assert pull.merged and pull.labels == [LABELS["valid"]]


def test_a_file_elsewhere_is_no_submission(github, tree):
    line = refused(github, tree, {f"challenges/{CHALLENGE}/alice.yml": text()})
    assert line.startswith("this pull request adds no submission: add one file at challenges/<challenge>/")


def test_two_submissions_in_one_pull_request_are_refused(github, tree):
    line = refused(github, tree, {sub(sub_id="v1"): text(), sub(sub_id="v2"): text()})
    assert line.startswith("this pull request touches 2 submission or registration files")


def test_a_submission_that_also_edits_a_workflow_is_refused(github, tree):
    line = refused(github, tree, {sub(): text(), ".github/workflows/evaluate.yml": "on: push\n"})
    assert line == (".github/workflows/evaluate.yml: this pull request adds it, but a submission pull request "
                    "adds one file and changes nothing else")


def test_a_submission_that_also_edits_another_participants_file_is_refused(github, tree):
    assert judge(github, tree, {sub("bob"): text()}, author="bob")[0].merged
    line = refused(github, tree, {sub(): text(), sub("bob"): text(image="ghcr.io/alice/evil@sha256:" + "e" * 64)})
    assert line == (f"this pull request touches 2 submission or registration files ({sub()}, {sub('bob')}); "
                    "add exactly one per pull request")


def test_a_submission_that_also_edits_a_page_is_refused(github, tree):
    line = refused(github, tree, {sub(): text(), f"challenges/{CHALLENGE}/index.md": "# mine now\n"})
    assert line == (f"challenges/{CHALLENGE}/index.md: this pull request changes it, but a submission pull "
                    "request adds one file and changes nothing else")


def test_a_pull_request_that_adds_or_edits_a_result_is_refused(github, tree):
    result = f"challenges/{CHALLENGE}/results/{PHASE}/alice/v1.json"
    line = refused(github, tree, {sub(): text(), result: '{"status": "succeeded"}\n'})
    assert line == f"{result}: results are written and signed by the runner only; a pull request may not add, " \
                   "change or remove one"
    assert refused(github, tree, {result: '{"status": "succeeded"}\n'}) == line  # nor with no submission
    # Renaming a result away removes it: the old path counts.
    moved = Proposal("alice", (Change(sub(), "added"), Change("notes/v1.json", "renamed", result)), lambda _: text())
    assert check(Store(tree), moved, now=NOW).problems == (line,)


def test_changing_an_existing_submission_is_refused(github, tree):
    first, _ = judge(github, tree, {sub("bob"): text()}, author="bob")
    assert first.merged
    outcome, pull = judge(github, tree, {sub("bob"): text().replace("Threshold", "Mine")}, author="alice")
    assert not pull.merged
    assert outcome.verdict.problems[0].startswith(f"{sub('bob')} already exists: a submission is a new file")


# --- who submits -------------------------------------------------------------------------------------


def test_another_participants_folder_is_refused(github, tree):
    line = refused(github, tree, {sub("bob"): text()}, author="alice")
    assert line == (f"the folder 'bob' is neither your GitHub login (alice) nor a team of yours in "
                    f"challenges/{CHALLENGE}/teams.yml: submit under submissions/<phase>/alice/")


def test_a_folder_spelled_otherwise_than_the_login_is_refused(github, tree):
    # GitHub logins ignore case: 'Mallory' and 'mallory' would be two leaderboard rows and two limits.
    line = refused(github, tree, {sub("Mallory"): text()}, author="mallory")
    assert line == "the folder 'Mallory' must be spelled as your GitHub login: submissions/<phase>/mallory/"


def test_a_team_member_submits_for_the_team(github, tree):
    (tree / "challenges" / CHALLENGE / "teams.yml").write_text("vision-lab:\n  - Alice\n  - carol\n")
    outcome, pull = judge(github, tree, {sub("vision-lab"): text()}, author="alice")
    assert outcome.verdict.ok and pull.merged


def test_a_team_member_submits_as_the_team_alone(github, tree):
    """Under the login too, a member would have the team's limit and one of their own (a member of k teams,
    k + 1 of them)."""
    (tree / "challenges" / CHALLENGE / "teams.yml").write_text("vision-lab:\n  - Alice\n  - carol\n")
    assert refused(github, tree, {sub(): text()}) == (
        f"you are a member of team 'vision-lab' in challenges/{CHALLENGE}/teams.yml: submit as the team, under "
        "submissions/<phase>/vision-lab/, which shares one limit")


def test_a_team_whose_member_passed_the_parent_phase_on_their_own_may_go_on(github, tree):
    """A member submits as the team alone once in it: the result they made on their own before still counts."""
    child = phase_file(tree, "final-round")
    child.write_text(phase_file(tree).read_text())
    edit_yaml(child, title="Final round", parent=PHASE)
    write_result(tree, "alice", "v1")
    (tree / "challenges" / CHALLENGE / "teams.yml").write_text("vision-lab:\n  - Alice\n  - carol\n")
    outcome, _ = judge(github, tree, {sub("vision-lab", phase="final-round"): text(phase="final-round")},
                       author="carol")
    assert outcome.verdict.ok


def test_registration_is_required_when_the_challenge_says_so(github, tree):
    edit_yaml(tree / "challenges" / CHALLENGE / "challenge.yml", registration="required")
    line = refused(github, tree, {sub(): text()})
    assert line == (f"challenge 'Ellipsoid Segmentation' requires registration: open a pull request adding "
                    f"challenges/{CHALLENGE}/registrations/alice.yml and wait for an organizer to merge it")
    folder = tree / "challenges" / CHALLENGE / "registrations"
    folder.mkdir()
    (folder / "alice.yml").write_text("name: Alice Liddell\naccept_rules: true\n")
    outcome, _ = judge(github, tree, {sub(sub_id="v2"): text()})
    assert outcome.verdict.ok


def test_a_registration_pull_request_is_labelled_for_an_organizer_not_merged(github, tree):
    edit_yaml(tree / "challenges" / CHALLENGE / "challenge.yml", registration="required")
    path = f"challenges/{CHALLENGE}/registrations/alice.yml"
    outcome, pull = judge(github, tree, {path: "name: Alice\naccept_rules: true\n"})
    assert outcome.verdict.ok and outcome.verdict.kind == "registration"
    assert not pull.merged and pull.labels == [LABELS["registration"]]
    assert "An organizer reviews registrations" in pull.comments[0]["body"]


def test_a_registration_for_someone_else_is_refused(github, tree):
    edit_yaml(tree / "challenges" / CHALLENGE / "challenge.yml", registration="required")
    path = f"challenges/{CHALLENGE}/registrations/bob.yml"
    outcome, _ = judge(github, tree, {path: "name: Bob\naccept_rules: false\n"})
    assert outcome.verdict.problems == (
        f"{path}: a registration is named after its author: challenges/{CHALLENGE}/registrations/alice.yml",
        f"{path}:2: accept_rules: must be true: registering means accepting the challenge's rules")


# --- what is submitted -------------------------------------------------------------------------------


def test_invalid_yaml_is_refused_with_file_and_line(github, tree):
    line = refused(github, tree, {sub(): "phase: final-test\nimage: [unclosed\n"})
    assert line.startswith(f"{sub()}:3: invalid YAML:")


def test_a_symbolic_link_is_refused(github, tree):
    link = Link(f"/srv/challenge-data/{CHALLENGE}/{PHASE}/ground-truth/case-000.npy")
    line = refused(github, tree, {sub(): link})
    assert line == f"{sub()}: must be a regular file, not a symbolic link or submodule"


def test_an_image_by_tag_is_refused(github, tree):
    line = refused(github, tree, {sub(): text(image="ghcr.io/alice/algo:latest")})
    assert line.startswith(f"{sub()}:2: image: must be pinned by digest")


def test_a_local_image_id_is_refused(github, tree):
    line = refused(github, tree, {sub(): text(image="sha256:" + "b" * 64)})
    assert line.startswith(f"{sub()}: image: a local image ID is accepted only for local runs")


def test_a_registry_the_phase_does_not_accept_is_refused(github, tree):
    edit_yaml(phase_file(tree), allowed_registries=["ghcr.io", "registry.example.org:5000"])
    line = refused(github, tree, {sub(): text(image="alice/algo@sha256:" + "c" * 64)})
    assert line == (f"{sub()}: image: registry docker.io is not accepted in this phase; "
                    "push to ghcr.io or registry.example.org:5000")


def test_unknown_challenge_and_phase_are_named(github, tree):
    Tree(tree).challenge("other")
    Tree(tree).phase("new-scanner")
    line = refused(github, tree, {sub(challenge="nope"): text()})
    assert line.startswith("there is no challenge 'nope' (challenges: ") and f"{CHALLENGE}," in line
    line = refused(github, tree, {sub(phase="warm-up", sub_id="v2"): text(phase="warm-up")})
    assert line == f"challenge '{CHALLENGE}' has no phase 'warm-up' (phases: final-test, new-scanner)"


# --- the phase's rules -------------------------------------------------------------------------------


def test_a_closed_phase_says_when_it_closed(github, tree):
    line = refused(github, tree, {sub(): text()}, now=dt.datetime(2028, 1, 3, 12, tzinfo=UTC))
    assert line == "phase 'Final test' closed on 2027-12-31 23:59 UTC (2 days ago)"


def test_a_hidden_phase_takes_no_submissions(github, tree):
    edit_yaml(phase_file(tree), public=False)
    assert refused(github, tree, {sub(): text()}) == ("phase 'Final test' is not public (public: false): it takes "
                                                      "no submissions")


def test_a_phase_not_yet_open_says_when_it_opens(github, tree):
    line = refused(github, tree, {sub(): text()}, now=dt.datetime(2025, 12, 31, 21, tzinfo=UTC))
    assert line == "phase 'Final test' opens on 2026-01-01 00:00 UTC (in 3 hours)"


def test_a_limit_of_zero_closes_the_phase(github, tree):
    edit_yaml(phase_file(tree), submissions_limit_per_user_per_period=0)
    line = refused(github, tree, {sub(): text()})
    assert line == "phase 'Final test' takes no submissions (its limit per participant is 0)"


def test_a_child_phase_needs_a_succeeded_result_in_its_parent(github, tree):
    child = phase_file(tree, "final-round")
    child.write_text(phase_file(tree).read_text())
    edit_yaml(child, title="Final round", parent=PHASE)
    files = {sub(phase="final-round"): text(phase="final-round")}
    line = refused(github, tree, files)
    assert line == ("phase 'Final round' needs a succeeded result of 'alice' in phase 'Final test': "
                    "submit there first")
    write_result(tree, "alice", "v0", status="failed")
    assert refused(github, tree, files) == line
    write_result(tree, "alice", "v1")
    outcome, _ = judge(github, tree, files)
    assert outcome.verdict.ok


def test_the_limit_per_period_counts_results_and_pending_submissions(github, tree):
    # 3 per day. Failed results do not count; a pending submission does.
    edit_yaml(phase_file(tree), submissions_limit_per_user_per_period=3, submission_limit_period=1)
    write_result(tree, "alice", "a", created=NOW - dt.timedelta(hours=20))
    write_result(tree, "alice", "b", created=NOW - dt.timedelta(hours=2))
    write_result(tree, "alice", "c", status="failed")
    write_result(tree, "alice", "old", created=NOW - dt.timedelta(days=2))
    write_result(tree, "bob", "x")
    outcome, _ = judge(github, tree, {sub(sub_id="d"): text()})
    assert outcome.verdict.ok
    pending = tree / sub(sub_id="e")
    pending.parent.mkdir(parents=True, exist_ok=True)
    pending.write_text(text())
    line = refused(github, tree, {sub(sub_id="f"): text()})
    assert line == ("phase 'Final test' allows 3 submissions per day and 'alice' has 2 evaluated and 1 pending; "
                    "you can submit again on 2026-06-01 16:00 UTC (in 4 hours)")


def test_failed_results_count_when_the_phase_says_so(github, tree):
    edit_yaml(phase_file(tree), count_failed_submissions=True, submission_limit_period=None,
              submissions_limit_per_user_per_period=2)
    write_result(tree, "alice", "a", status="failed", created=NOW - dt.timedelta(days=300))
    write_result(tree, "alice", "b", status="failed")
    line = refused(github, tree, {sub(sub_id="c"): text()})
    assert line == "phase 'Final test' allows 2 submissions in all and 'alice' has 2 evaluated and 0 pending"


def test_every_failing_rule_gives_its_own_line(github, tree):
    outcome, pull = judge(github, tree, {sub("bob"): text(image="ghcr.io/bob/algo:v1"), "README.md": "hi\n"},
                          now=dt.datetime(2028, 1, 1, tzinfo=UTC))
    assert [p.split(":")[0] for p in outcome.verdict.problems] == [
        "README.md", "the folder 'bob' is neither your GitHub login (alice) nor a team of yours in challenges/"
        f"{CHALLENGE}/teams.yml", sub("bob"), "phase 'Final test' closed on 2027-12-31 23"]
    assert len(pull.comments) == 1 and pull.comments[0]["body"].count("\n- ") == 4


def predictions_proposal(name: str, sha256: str, files: dict[str, str]) -> Proposal:
    files = {sub(): f"phase: final-test\npredictions:\n  file: {name}\n  sha256: {sha256}\n", **files}
    return Proposal("alice", tuple(Change(p, "added") for p in files), lambda p: files[p].encode())


def test_a_predictions_file_may_come_with_its_submission(tree):
    edit_yaml(phase_file(tree), submission_kind="predictions")
    proposal = predictions_proposal("masks.zip", hashlib.sha256(b"zip").hexdigest(),
                                    {sub().replace("v1.yml", "masks.zip"): "zip"})
    assert check(Store(tree), proposal, now=NOW).ok


def test_a_predictions_file_must_be_the_one_pinned_and_beside_the_submission(tree):
    edit_yaml(phase_file(tree), submission_kind="predictions")
    wrong = predictions_proposal("masks.zip", "d" * 64, {sub().replace("v1.yml", "masks.zip"): "zip"})
    assert check(Store(tree), wrong, now=NOW).problems == (
        f"{sub()}: predictions.sha256: masks.zip has sha256 {hashlib.sha256(b'zip').hexdigest()}, not the pinned "
        "one; pin the file you committed (sha256sum FILE)",)
    missing = predictions_proposal("masks.zip", "d" * 64, {})
    assert check(Store(tree), missing, now=NOW).problems == (
        f"{sub()}: predictions.file: masks.zip was not found next to the submission (commit it in the same pull "
        "request)",)


@pytest.mark.parametrize("name", ["../../../../../README.md", "../bob/masks.zip", "/etc/passwd"])
def test_a_predictions_path_is_refused_whatever_it_names(tree, name):
    """The file must be the participant's own, beside the submission: a path is refused before anything is
    read, so no hash of another file (another participant's, the runner's) ever reaches a line."""
    edit_yaml(phase_file(tree), submission_kind="predictions")
    proposal = predictions_proposal(name, "d" * 64, {})
    assert check(Store(tree), proposal, now=NOW).problems == (
        f"{sub()}:3: predictions.file: name a file in the submission's own folder (letters, digits, '-', '_' "
        "and '.'), not a path",)


# --- the pieces --------------------------------------------------------------------------------------


def test_when_reads_in_utc_and_relative_words():
    closes = dt.datetime(2027, 12, 31, 23, 59, 59, tzinfo=UTC)
    assert when(closes, closes + dt.timedelta(days=3)) == "2027-12-31 23:59 UTC (3 days ago)"
    assert when(closes, closes - dt.timedelta(minutes=1)) == "2027-12-31 23:59 UTC (in 1 minute)"
    assert when(closes, closes + dt.timedelta(seconds=5)) == "2027-12-31 23:59 UTC (less than a minute ago)"


@pytest.mark.parametrize("image, registry", [
    ("ghcr.io/a/b@sha256:" + "a" * 64, "ghcr.io"), ("a/b@sha256:" + "a" * 64, "docker.io"),
    ("b@sha256:" + "a" * 64, "docker.io"), ("localhost/b@sha256:" + "a" * 64, "localhost"),
    ("reg:5000/b@sha256:" + "a" * 64, "reg:5000"), ("sha256:" + "a" * 64, None)])
def test_registry_of_reads_references_as_docker_does(image, registry):
    assert registry_of(image) == registry


def test_teams_and_registrations_errors_name_file_and_line(tmp_path):
    teams = tmp_path / "teams.yml"
    teams.write_text("lab:\n  - alice\nbad team:\n  - bob\n")
    with pytest.raises(ModelError, match=r"teams.yml:3: bad team: a team name may use"):
        load_teams(teams)
    teams.write_text("lab: alice\n")
    with pytest.raises(ModelError, match=r"teams.yml:1: lab: expected a list"):
        load_teams(teams)
    registration = tmp_path / "alice.yml"
    registration.write_text("name: Alice\naccept_rules: true\nemail: a@b.c\n")
    with pytest.raises(ModelError, match=r"alice.yml:3: email: unknown field"):
        load_registration(registration)


def test_a_submission_linking_to_another_participants_file_is_refused(github, tree):
    """GitHub's contents API follows a link that stays inside the repository and answers with the target's
    bytes: read so, mallory's link to alice's submission passed as mallory's own. Read through git's trees."""
    line = refused(github, tree, {sub("mallory"): Link("../alice/v1.yml")}, author="mallory")
    assert line == f"{sub('mallory')}: must be a regular file, not a symbolic link or submodule"


def test_the_runner_never_reads_a_submission_through_a_link(tree):
    (tree / sub("alice")).parent.mkdir(parents=True, exist_ok=True)
    (tree / sub("alice")).write_text(text())
    (tree / sub("mallory")).parent.mkdir(parents=True)
    (tree / sub("mallory")).symlink_to("../alice/v1.yml")
    store = Store(tree)
    with pytest.raises(ModelError, match="must be a regular file, not a symbolic link"):
        store.submission(tree / sub("mallory"))
    assert [s.participant for s in store.pending()] == ["alice"]


def test_what_a_pull_request_wrote_is_quoted_in_the_comment(github, tree):
    """An unknown field named like an image and a mention: in the verdict comment, GitHub shows it as typed
    (a code span), never an image in the bot's name or a mention of someone."""
    name = "![x](https://evil.example/p.png) @alice `code`"
    _, pull = judge(github, tree, {sub(): text() + f'"{name}": 1\n'})
    body = pull.comments[0]["body"]
    [line] = [ln for ln in body.splitlines() if ln.startswith("- ")]
    assert line.startswith("- ``") and line.endswith("``") and name in line  # one backtick inside: a fence of two
    assert line.count("``") == 2


def test_a_login_that_is_also_a_team_of_others_is_refused(github, tree):
    """A team named like a participant would share their folder, and its members would read their sealed logs."""
    (tree / "challenges" / CHALLENGE / "teams.yml").write_text("alice: [mallory]\n")
    assert refused(github, tree, {sub(): text()}) == (
        f"the folder 'alice' is also the name of a team in challenges/{CHALLENGE}/teams.yml that you are not in: "
        "ask the organizers to rename that team")


# --- catalog listings ------------------------------------------------------------------------------


LISTING = """\
name: Brain Tumor Segmentation 2026
headline: Segment gliomas in multi-parametric MRI
status: active
platform: synapse
website_url: https://www.synapse.org/brats2026
"""


def test_anyone_may_propose_a_challenge_hosted_elsewhere_for_the_catalog(github, tree):
    path = "challenges/brats-2026/challenge.yml"
    outcome, pull = judge(github, tree, {path: LISTING}, author="carol")
    assert outcome.verdict.ok and outcome.verdict.kind == "listing"
    assert not pull.merged and pull.labels == [LABELS["listing"]]  # an organizer merges it
    assert "Listing `challenges/brats-2026/challenge.yml` is complete" in pull.comments[0]["body"]


@pytest.mark.parametrize(("text", "problem"), [
    (LISTING.replace("platform: synapse", "platform: self-hosted"), "a pull request lists a challenge hosted "
                                                                    "elsewhere"),
    (LISTING.replace("website_url: https://www.synapse.org/brats2026\n", ""), "website_url: a challenge hosted "
                                                                               "elsewhere (platform: synapse) needs"),
    (LISTING + "slug: other\n", "slug: must match the folder name 'brats-2026'"),
    # What runs a challenge here is not a listing's to set.
    (LISTING + "recipients: [github:carol]\ndata:\n  - name: x\n    url: https://example.org/x.zip\n    size: 1\n"
               "    sha256: " + "a" * 64 + "\n", "data, recipients: a listing gives catalog fields only"),
    (LISTING + "registration: required\nregistration_closes_at: 9999-12-31T23:59:59-23:59\n",
     "is out of range"),
])
def test_a_listing_that_cannot_be_listed_says_why(github, tree, text, problem):
    assert problem in refused(github, tree, {"challenges/brats-2026/challenge.yml": text}, author="carol")


def test_a_listing_under_a_folder_that_is_no_slug_is_refused_before_it_is_read():
    for slug in ("..", ".", "Big Challenge", "-x", "a" * 300):
        path = f"challenges/{slug}/challenge.yml"
        proposal = Proposal("carol", (Change(path, "added"),), lambda _: LISTING.encode())
        assert check(Store(REPO), proposal, now=NOW).problems == (
            f"{path}: {slug!r} is not a challenge slug (at most 60 lowercase letters, digits and single '-')",)


def test_a_listed_challenge_is_changed_by_its_organizers_only(github, tree):
    line = refused(github, tree, {f"challenges/{CHALLENGE}/challenge.yml": LISTING}, author="carol")
    assert line == f"challenges/{CHALLENGE}/challenge.yml: this pull request changes a challenge; its organizers " \
                   "change it (the bot judges new listings only)"
    (tree / "challenges" / "taken").mkdir()
    (tree / "challenges" / "taken" / "faq.md").write_text("# FAQ\n")
    assert refused(github, tree, {"challenges/taken/challenge.yml": LISTING}, author="carol") == \
        "challenges/taken/challenge.yml: challenge 'taken' is listed already"
    # Nor may a listing take the name of a guide the site publishes.
    assert refused(github, tree, {"challenges/participants/challenge.yml": LISTING}, author="carol") == \
        "challenges/participants/challenge.yml: 'participants' is the name of a page of the site " \
        "(challenges/participants.md): choose another"


def test_the_organizers_guide_example_listing_is_accepted():
    guide = (REPO / "challenges" / "organizers.md").read_text()
    example = guide.split("for example `challenges/brats-2026/challenge.yml`:\n\n```yaml\n")[1].split("```")[0]
    path = "challenges/brats-2026/challenge.yml"
    verdict = check(Store(REPO), Proposal("carol", (Change(path, "added"),), lambda _: example.encode()), now=NOW)
    assert verdict.ok and verdict.kind == "listing"


def test_a_predictions_file_larger_than_the_phase_allows_is_refused(tree):
    """It would stay in the public repository's history for good, one per submission."""
    edit_yaml(phase_file(tree), submission_kind="predictions", predictions_max_size="1k")
    data = "x" * 1025
    proposal = predictions_proposal("masks.zip", hashlib.sha256(data.encode()).hexdigest(),
                                    {sub().replace("v1.yml", "masks.zip"): data})
    assert check(Store(tree), proposal, now=NOW).problems == (
        f"{sub()}: predictions.file: masks.zip is 1,025 bytes; the phase allows 1 KiB (predictions_max_size)",)
