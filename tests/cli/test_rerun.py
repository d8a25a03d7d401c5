"""`challenge rerun` and `challenge preserve`: ranks from the leaderboard the site shows, withheld
phases ranked with an organizer's key only, and the example challenge's living benchmark run for
real (final-test's algorithms on the new scanner's data), twice, evaluating nothing twice."""

from __future__ import annotations

import json
import shutil

import pytest
import yaml

from runner.cli import main
from runner.cli.reruns import carry, preserve
from runner.evaluation.archives import preserved_archive
from runner.evaluation.reruns import Choice, RerunError
from runner.tree.records import Keys
from runner.tree.sealing import identities, new_identity
from runner.tree.store import Store
from tests.evaluation.test_challenges_examples import submit_example
from tests.fake_executor import FakeExecutor
from tests.helpers import CHALLENGE, PHASE, add_result, edit_yaml, phase_file, write_result, write_submission

TARGET = "new-scanner"


def carried_files(repo) -> dict[str, str]:
    folder = repo / "challenges" / CHALLENGE / "submissions" / TARGET
    return {f"{p.parent.name}/{p.stem}": yaml.safe_load(p.read_text())["description"]
            for p in sorted(folder.glob("*/*.yml"))}


def test_top_n_follows_the_leaderboard_with_ties_and_leaves_out_exclusions(repo):
    for participant, dice in (("alice", 0.9), ("bob", 0.8), ("carol", 0.8), ("dave", 0.7), ("erin", 0.95)):
        add_result(repo, participant, "v1", dice)
    add_result(repo, "frank", "v1", None, status="failed", error="Algorithm failed: boom")
    exclusions = repo / "challenges" / CHALLENGE / "exclusions" / f"{PHASE}.yml"
    exclusions.parent.mkdir()
    exclusions.write_text("- result: erin/v1\n  reason: a second account of alice\n")

    carry(Store(repo), CHALLENGE, source=PHASE, target=TARGET, choice=Choice("top", 2))
    assert carried_files(repo) == {
        "alice/v1": "Re-run of final-test result alice/v1 (rank 1 in final-test).",
        "bob/v1": "Re-run of final-test result bob/v1 (rank 2 in final-test).",
        "carol/v1": "Re-run of final-test result carol/v1 (rank 2 in final-test).",
    }
    carry(Store(repo), CHALLENGE, source=PHASE, target=TARGET, choice=Choice("all"))
    assert sorted(carried_files(repo)) == ["alice/v1", "bob/v1", "carol/v1", "dave/v1"]  # no erin, no frank


def test_a_blind_phase_is_ranked_with_an_organizers_key_only(repo, tmp_path, capsys):
    secret, public = new_identity()
    (tmp_path / "organizer.key").write_text(secret)
    edit_yaml(repo / "challenges" / CHALLENGE / "challenge.yml", recipients=[public])
    edit_yaml(phase_file(repo), blind=True)  # closes 2027-12-31: scores withheld until then
    add_result(repo, "alice", "v1", 0.6)
    add_result(repo, "bob", "v1", 0.9)
    shutil.rmtree(repo / "build" / "withheld")  # an organizer's clone: the public records and the sealed ones

    args = ["--root", str(repo), "rerun", CHALLENGE, "--from", PHASE, "--to", TARGET, "--best",
            "--data-root", str(tmp_path), "--publish-selection"]
    assert main(args) == 1
    assert capsys.readouterr().err.strip() == (
        "error: ellipsoid-segmentation/final-test: the scores of 2 result(s) are withheld (scores withheld until "
        "2027-12-31 23:59 UTC); pass --identity with an organizer's key to rank them")
    assert carried_files(repo) == {}

    keys = Keys(identities=tuple(identities([secret])))
    carry(Store(repo, keys=keys), CHALLENGE, source=PHASE, target=TARGET, choice=Choice("top", 1),
          publish_selection=True)
    assert carried_files(repo) == {"bob/v1": "Re-run by the organizers."}  # no rank, no source phase


def test_a_selection_from_a_phase_that_withholds_its_ranking_is_refused_unless_published_on_purpose(repo, tmp_path,
                                                                                                    capsys):
    """The files a --top or --best rerun writes show who was selected: from a blind phase, that is the
    organizer's explicit choice, and even then no file names a rank, the source phase or an order."""
    edit_yaml(phase_file(repo), blind=True)
    for participant, dice in (("alice", 0.6), ("bob", 0.9), ("carol", 0.8)):
        add_result(repo, participant, "v1", dice)
    args = ["--root", str(repo), "rerun", CHALLENGE, "--from", PHASE, "--to", TARGET, "--top", "2",
            "--data-root", str(tmp_path)]
    assert main(args) == 1
    assert capsys.readouterr().err.strip() == (
        "error: ellipsoid-segmentation/final-test withholds its ranking now: the files --top writes would publish "
        "who was selected; rerun --all, wait until it is revealed, or pass --publish-selection to publish the "
        "selection (never the ranks)")
    assert carried_files(repo) == {}
    carry(Store(repo), CHALLENGE, source=PHASE, target=TARGET, choice=Choice("top", 2), publish_selection=True)
    assert carried_files(repo) == {"bob/v1": "Re-run by the organizers.", "carol/v1": "Re-run by the organizers."}
    printed = capsys.readouterr().err
    assert "rank" not in printed and printed.index("bob/v1") < printed.index("carol/v1")  # by name, not by rank
    written = "".join(p.read_text() for p in (repo / "challenges" / CHALLENGE / "submissions" / TARGET).rglob("*.yml"))
    assert "rank" not in written and PHASE not in written


def test_a_phase_that_publishes_on_approval_withholds_its_ranking_until_every_result_is_approved(repo, capsys):
    """An unapproved result's scores are withheld: a ranking that counts it is withheld too."""
    edit_yaml(phase_file(repo), auto_publish_new_results=False)
    for participant, dice in (("alice", 0.6), ("bob", 0.9)):
        add_result(repo, participant, "v1", dice)
    approvals = repo / "challenges" / CHALLENGE / "approvals" / f"{PHASE}.yml"
    approvals.parent.mkdir()
    approvals.write_text("- alice/v1\n")
    with pytest.raises(RerunError, match="withholds its ranking now"):
        carry(Store(repo), CHALLENGE, source=PHASE, target=TARGET, choice=Choice("best"))
    carried = carry(Store(repo), CHALLENGE, source=PHASE, target=TARGET, choice=Choice("all"))
    assert carried_files(repo) == {"alice/v1": "Re-run by the organizers.", "bob/v1": "Re-run by the organizers."}
    assert "rank" not in capsys.readouterr().err
    assert [c.plan.source.participant for c in carried] == ["alice", "bob"]  # evaluated by name, not best first
    approvals.write_text("- alice/v1\n- bob/v1\n")  # every result approved: its ranking is public
    shutil.rmtree(repo / "challenges" / CHALLENGE / "submissions" / TARGET)
    carry(Store(repo), CHALLENGE, source=PHASE, target=TARGET, choice=Choice("top", 1))
    assert carried_files(repo) == {"bob/v1": "Re-run of final-test result bob/v1 (rank 1 in final-test)."}


@pytest.mark.parametrize(("kind", "message"), [
    ("predictions", "error: ellipsoid-segmentation/new-scanner takes predictions files, which cannot run on other "
                    "data; only algorithm and training phases can be re-run"),
    ("training", "error: ellipsoid-segmentation: 'final-test' takes algorithm submissions but 'new-scanner' takes "
                 "training; a rerun needs the same submission_kind"),
])
def test_phases_that_cannot_be_carried_are_one_line_errors(repo, tmp_path, capsys, kind, message):
    add_result(repo, "alice", "v1", 0.6)
    edit_yaml(phase_file(repo, TARGET), submission_kind=kind)
    assert main(["--root", str(repo), "rerun", CHALLENGE, "--from", PHASE, "--to", TARGET, "--all",
                 "--data-root", str(tmp_path)]) == 1
    assert capsys.readouterr().err.strip() == message
    assert carried_files(repo) == {}


def test_top_takes_a_positive_number(repo, capsys):
    with pytest.raises(SystemExit):
        main(["--root", str(repo), "rerun", CHALLENGE, "--from", PHASE, "--to", TARGET, "--top", "0"])
    assert "'0' is not a whole number of 1 or more" in capsys.readouterr().err


@pytest.mark.docker
def test_the_living_benchmark_runs_for_real_and_resumes(repo, engine, base_image, data_root, capsys):
    for name in ("baseline", "smoothed", "no-output"):  # an image, an image archive, one that fails
        submit_example(repo, CHALLENGE, name, engine=engine, base=base_image)
    runner = ["--data-root", str(data_root), "--allow-local-images", "--base-image", base_image]
    assert main(["--root", str(repo), "evaluate", "--pending", *runner]) == 0
    preserved = repo / "build" / "preserved"
    preserve = ["--root", str(repo), "preserve", CHALLENGE, "--phase", PHASE, "--allow-local-images"]
    assert main(preserve) == 0
    submitted = {p.stem: yaml.safe_load(p.read_text()) for p in (repo / "challenges" / CHALLENGE / "submissions" /
                                                                  PHASE).glob("*/*.yml")}
    images = {name: s["image"] for name, s in submitted.items() if "image" in s}
    # What a rerun carries: the succeeded result's image, not the one whose result failed.
    assert {name: preserved_archive(preserved, ref).is_file() for name, ref in images.items()} == {
        "threshold-baseline": True, "first-try": False}

    capsys.readouterr()
    rerun = ["--root", str(repo), "rerun", CHALLENGE, "--from", PHASE, "--to", TARGET, "--all", *runner]
    assert main(rerun) == 0
    results = repo / "challenges" / CHALLENGE / "results"
    made = {p.relative_to(results / TARGET).as_posix(): json.loads(p.read_text())
            for p in sorted((results / TARGET).glob("*/*.json"))}
    assert sorted(made) == ["alice/smoothed-v1.json", "organizers/threshold-baseline.json"]  # the failed one stays
    assert {r["status"] for r in made.values()} == {"succeeded"}
    smoothed = made["alice/smoothed-v1.json"]
    assert smoothed["details"]["title"] == "5x5x5 mean filter, then threshold"
    assert smoothed["details"]["description"] == "Re-run of final-test result alice/smoothed-v1 (rank 1 in final-test)."
    before = json.loads((results / PHASE / "alice" / "smoothed-v1.json").read_text())
    dice = [r["metrics"]["aggregates"]["dice"]["mean"] for r in (before, smoothed)]
    assert dice[1] < dice[0]  # the new scanner is harder: the living benchmark shows it

    # Both again: everything is there, nothing is evaluated twice.
    stamps = {p: p.stat().st_mtime_ns for p in (results / TARGET).glob("*/*.json")}
    capsys.readouterr()
    assert main(rerun) == 0
    assert main(preserve) == 0
    printed = capsys.readouterr()
    assert "nothing to evaluate" in printed.out
    assert printed.err.count("kept") == 3  # two submission files, one archive
    assert {p: p.stat().st_mtime_ns for p in (results / TARGET).glob("*/*.json")} == stamps


def test_preserve_saves_succeeded_results_images_and_pulls_none_on_the_runners_networks(repo, tmp_path):
    """Checked as the queue checks an image before it pulls one: a registry on the runner's own networks is
    refused, never pulled, and a failed result's image is not what a rerun carries."""
    fake = FakeExecutor()
    images = {"alice": "ghcr.io/alice/algo@sha256:" + "a" * 64, "bob": "169.254.169.254/probe@sha256:" + "b" * 64,
              "carol": "ghcr.io/carol/algo@sha256:" + "c" * 64}
    for participant, image in images.items():
        fake.add_image(image)
        write_submission(repo, participant, "v1", image)
        write_result(repo, participant, "v1", status="failed" if participant == "carol" else "succeeded")
    store = Store(repo)
    folder = tmp_path / "preserved"
    assert preserve(store, store.phase(CHALLENGE, PHASE), executor=fake, folder=folder) == 1  # bob's refused
    assert {p: preserved_archive(folder, image).is_file() for p, image in images.items()} == {
        "alice": True, "bob": False, "carol": False}
