"""Confidential by construction: what a phase withholds is never readable in the public repository.

Five phases each withhold something (a blind phase, a debugging phase, an unapproved result, a
phase that is not public, a phase that shows only its columns). Every withheld value is a number
or word that no other file holds. After the runner evaluated and committed everything, none of
them is in any commit (`git log -p --all`) nor in the site built without the publish key; the
site built with the key after the closing date, the organizer's key and each participant's key
show exactly what they should.

The runner runs on the fake executor (the containers do not matter here; the records do); the
real engine walks the same path in tests/pullrequests/test_dry_run.py.
"""

from __future__ import annotations

import datetime as dt
import json
import subprocess
from collections.abc import Mapping
from pathlib import Path

import pytest

from runner.cli import main
from runner.errors import Retry
from runner.evaluation.job import RunnerConfig
from runner.evaluation.queue import run_jobs
from runner.pullrequests.review import result_comment
from runner.site import pages
from runner.site.build import SiteConfig, build_site
from runner.tree.policy import EVALUATION_FAILED
from runner.tree.records import SEAL_BLOCK, Keys, sealed_path
from runner.tree.result_model import load_result
from runner.tree.sealing import identities, new_identity, unseal
from runner.tree.store import Store
from tests.fake_executor import FAKE_BASE, Behaviour, FakeExecutor
from tests.helpers import CHALLENGE, PHASE, commit, edit_yaml, write_submission

CLOSES = dt.datetime(2027, 12, 31, 23, 59, 59, tzinfo=dt.UTC)
BEFORE, AFTER = dt.datetime(2027, 6, 1, tzinfo=dt.UTC), dt.datetime(2028, 1, 2, tzinfo=dt.UTC)
EVALUATION = f"challenge-eval/{CHALLENGE}"
PHASES = {  # phase -> what it withholds
    "blind": {"blind": True},
    "debugging": {"give_algorithm_editors_job_view_permissions": True},
    "approval": {"auto_publish_new_results": False},
    "private": {"public": False},
    "columns": {"display_all_metrics": False},
}
PARTICIPANTS = ("alice", "bob")
EVALUATION_SAID = "0.7412356831"  # what every evaluation prints: a score, in a debugging phase too


def secret(phase: str, participant: str, what: str) -> float:
    """A value no other file holds: 0.7 followed by digits derived from where it belongs."""
    digits = sum(ord(c) * (i + 7) for i, c in enumerate(f"{phase}/{participant}/{what}")) % 10**7
    return float(f"0.7{digits:07d}31")


def evaluation(inputs: Mapping[str, Path], output: Path) -> None:
    """Metrics whose every value is unique: the score, and per case a value only the case shows."""
    phase, participant = (inputs["/input"] / "who").read_text().split()
    cases = {f"case-{i}": {"dice": secret(phase, participant, f"case-{i}")} for i in range(3)}
    metrics = {"case": cases, "aggregates": {"dice": {"mean": secret(phase, participant, "mean")},
                                             "hidden": secret(phase, participant, "hidden")}}
    (output / "metrics.json").write_text(json.dumps(metrics))


def algorithm(phase: str, participant: str) -> Behaviour:
    def write(_inputs: Mapping[str, Path], output: Path) -> None:
        (output / "who").write_text(f"{phase} {participant}")
    return Behaviour(write=write, stderr=f"log-{phase}-{participant}-{secret(phase, participant, 'log')}")


def ssh_key(folder: Path, name: str) -> tuple[Path, str]:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name, "-f", str(folder / name)], check=True)
    return folder / name, (folder / f"{name}.pub").read_text().strip()


@pytest.fixture
def world(repo, tmp_path):
    """The example challenge with the five phases, each evaluated for alice and bob and committed."""
    organizer, publish = new_identity(), new_identity()
    (tmp_path / "organizer.key").write_text(organizer[0])
    keys = {login: ssh_key(tmp_path, login) for login in PARTICIPANTS}
    edit_yaml(repo / "challenges" / CHALLENGE / "challenge.yml", recipients=[organizer[1]], publish_key=publish[1])
    phases = repo / "challenges" / CHALLENGE / "phases"
    text = (phases / f"{PHASE}.yml").read_text()
    fake = FakeExecutor()
    fake.add_image(EVALUATION, Behaviour(write=evaluation, stderr=f"the evaluation printed {EVALUATION_SAID}"))
    for phase, options in PHASES.items():
        (phases / f"{phase}.yml").write_text(text)
        edit_yaml(phases / f"{phase}.yml", title=phase.capitalize(), **options)
        for participant in PARTICIPANTS:
            digest = f"{phase}{participant}".encode().hex()[:64].ljust(64, "0")
            image = f"ghcr.io/{participant}/{phase}@sha256:{digest}"
            fake.add_image(image, algorithm(phase, participant))
            write_submission(repo, participant, "v1", image, phase=phase)
    (phases / f"{PHASE}.yml").unlink()
    data = tmp_path / "data"
    for phase in PHASES:
        for sub in ("inputs", "ground-truth"):
            (data / CHALLENGE / phase / sub).mkdir(parents=True)
            (data / CHALLENGE / phase / sub / "case-0.npy").write_bytes(b"x")
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=repo, check=True)
    subprocess.run(["git", "add", "-A", "."], cwd=repo, check=True)  # the site's templates and mkdocs.yml too
    commit(repo, "2027-05-01T10:00:00Z", "The challenge and its submissions")
    store = Store(repo, keys=Keys(github_keys=lambda login: [keys[login.lower()][1]]))
    reports = run_jobs(store.pending(), store=store, executor=fake, config=RunnerConfig(data_root=data),
                       base=FAKE_BASE, retry=Retry(attempts=1))
    assert {r.status for r in reports} == {"succeeded"} and len(reports) == 10
    commit(repo, "2027-05-02T10:00:00Z", "Results")
    return {"organizer": tmp_path / "organizer.key", "publish": publish[0], "participants": keys}


def withheld() -> dict[str, list[str]]:
    """Each phase's values the public must not read (before the blind phase closes)."""
    values: dict[str, list[str]] = {}
    for phase in PHASES:
        for participant in PARTICIPANTS:
            cases = [repr(secret(phase, participant, f"case-{i}")) for i in range(3)]
            hidden = [repr(secret(phase, participant, "hidden"))]
            mean = [repr(secret(phase, participant, "mean"))]
            log = [f"log-{phase}-{participant}-{secret(phase, participant, 'log')}"]
            values.setdefault(phase, []).extend({"blind": cases + hidden + mean, "debugging": log,
                                                 "approval": cases + hidden + mean, "private": cases + hidden + mean,
                                                 "columns": cases + hidden}[phase])
    return values


def fresh_clone(repo: Path) -> Path:
    """What the publish workflow checks out: the repository alone, without the runner's build/."""
    clone = repo.parent / f"clone-{len(list(repo.parent.glob('clone-*')))}"
    subprocess.run(["git", "clone", "-q", str(repo), str(clone)], check=True)
    return clone


def site_text(repo: Path, *, now: dt.datetime, publish_key: str | None = None) -> str:
    """Every file of the staging folder and of the site MkDocs builds from it, as one text."""
    config = SiteConfig.read(repo)
    keys = Keys(identities=tuple(identities([publish_key]))) if publish_key else Keys()
    pages.generate(Store(repo, keys=keys), config.stage, config.templates, config.assets, now=now)
    site = build_site(config)
    files = [p for folder in (config.stage, site) for p in folder.rglob("*") if p.is_file()]
    return "\n".join(p.read_text(errors="replace") for p in files)


def test_no_commit_holds_a_withheld_value(world, repo):
    history = subprocess.run(["git", "log", "-p", "--all"], cwd=repo, capture_output=True, text=True, check=True)
    assert "sealed.age" in history.stdout and "logs.age" in history.stdout
    assert EVALUATION_SAID not in history.stdout
    for phase in ("blind", "approval", "private"):  # nor when it ran: a phase may rank on time
        record = json.loads((repo / "challenges" / CHALLENGE / "results" / phase / "alice" / "v1.json").read_text())
        assert (record["started_at"], record["finished_at"]) == (None, None) and record["created_at"]
    for phase, values in withheld().items():
        assert [v for v in values if v in history.stdout] == [], phase
    clone = fresh_clone(repo)
    text = "\n".join(p.read_text(errors="replace") for p in clone.rglob("*") if p.is_file() and ".git" not in p.parts)
    assert [v for values in withheld().values() for v in values if v in text] == []


def test_the_site_without_the_key_publishes_none_and_says_what_it_left_out(world, repo):
    repo = fresh_clone(repo)
    text = site_text(repo, now=AFTER)
    assert [v for values in withheld().values() for v in values if v in text] == []
    config, lines = SiteConfig.read(repo), []
    pages.generate(Store(repo), config.stage, config.templates, config.assets, now=AFTER, log=lines.append)
    assert lines == [f"{CHALLENGE}/blind: 2 result(s) published without their sealed part (scores, per-case "
                     "values): build with the publish key (CHALLENGE_PUBLISH_KEY)"]


def test_the_site_with_the_key_shows_what_the_phases_allow_now(world, repo):
    repo = fresh_clone(repo)
    before, after = site_text(repo, now=BEFORE, publish_key=world["publish"]), None
    blind_means = [repr(secret("blind", p, "mean")) for p in PARTICIPANTS]
    assert not any(v in before for v in blind_means)  # still open: withheld even from the key's build
    after = site_text(repo, now=AFTER, publish_key=world["publish"])
    assert all(v in after for v in blind_means)  # closed: published without a manual step
    shown = {"blind": [], "debugging": withheld()["debugging"], "approval": withheld()["approval"],
             "private": withheld()["private"], "columns": withheld()["columns"]}
    assert [v for values in shown.values() for v in values if v in after] == []
    assert all(repr(secret("columns", p, "mean")) in after for p in PARTICIPANTS)  # the column is public
    approvals = repo / "challenges" / CHALLENGE / "approvals" / "approval.yml"
    approvals.parent.mkdir(parents=True, exist_ok=True)
    approvals.write_text("- alice/v1\n")
    approved = site_text(repo, now=AFTER, publish_key=world["publish"])
    assert repr(secret("approval", "alice", "mean")) in approved
    assert repr(secret("approval", "bob", "mean")) not in approved


def test_a_phase_showing_only_its_columns_ranks_on_its_sealed_per_case_values(world, repo):
    """rank-then-aggregate ranks on per-case values the phase seals: the site built with the key ranks
    every result and still shows none of those values; without the key it cannot rank, and says so."""
    edit_yaml(repo / "challenges" / CHALLENGE / "phases" / "columns.yml", scoring_method_choice="rank-then-aggregate")
    commit(repo, "2027-05-03T10:00:00Z", "Rank on per-case values")
    repo = fresh_clone(repo)
    text = site_text(repo, now=BEFORE, publish_key=world["publish"])
    board = json.loads((SiteConfig.read(repo).stage / CHALLENGE / "leaderboard" / "columns" / "leaderboard.json")
                       .read_text())
    assert sorted(row["rank"] for row in board) == [1, 2]
    assert [v for v in withheld()["columns"] if v in text] == []
    config, lines = SiteConfig.read(repo), []
    pages.generate(Store(repo), config.stage, config.templates, config.assets, now=BEFORE, log=lines.append)
    assert lines == [f"{CHALLENGE}/columns: 2 result(s) published without their sealed part (scores, per-case "
                     "values): build with the publish key (CHALLENGE_PUBLISH_KEY)"]
    board = json.loads((SiteConfig.read(repo).stage / CHALLENGE / "leaderboard" / "columns" / "leaderboard.json")
                       .read_text())
    assert [row["rank"] for row in board] == [None, None]


def test_the_organizers_key_opens_every_sealed_result(world, repo, capsys):
    for phase in ("blind", "approval", "private", "columns"):
        record = repo / "challenges" / CHALLENGE / "results" / phase / "alice" / "v1.json"
        assert main(["--root", str(repo), "unseal", str(record), "--identity", str(world["organizer"])]) == 0
        whole = capsys.readouterr().out
        assert all(repr(secret(phase, "alice", what)) in whole for what in ("case-0", "hidden", "mean"))
        assert "log-" not in whole  # logs are the participant's (and sealed apart)
        opened = unseal(sealed_path(record).read_bytes(), identities([world["organizer"].read_text()]), where="")
        assert len(opened) % SEAL_BLOCK == 0  # its size tells the public its length to the block only


def test_each_participant_reads_their_own_logs_and_nobody_elses(world, repo, capsys):
    alice_key, bob_key = world["participants"]["alice"][0], world["participants"]["bob"][0]
    record = repo / "challenges" / CHALLENGE / "results" / "debugging" / "alice" / "v1.json"
    assert main(["--root", str(repo), "logs", str(record), "--identity", str(alice_key)]) == 0
    own = capsys.readouterr().out
    assert f"log-debugging-alice-{secret('debugging', 'alice', 'log')}" in own
    assert EVALUATION_SAID not in own and "== evaluation" not in own  # the evaluation's output is never hers
    assert main(["--root", str(repo), "logs", str(record), "--identity", str(bob_key)]) == 1
    assert "none of the given keys opens it" in capsys.readouterr().err


def test_the_organizers_leaderboard_holds_everything(world, repo, capsys):
    clone = fresh_clone(repo)  # no runner copies: only the key opens the sealed parts
    assert main(["--root", str(clone), "leaderboard", CHALLENGE, "blind", "--format", "json"]) == 0
    assert all(row["Dice (mean)"] is None for row in json.loads(capsys.readouterr().out))
    assert main(["--root", str(clone), "leaderboard", CHALLENGE, "blind", "--format", "json",
                 "--identity", str(world["organizer"])]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert sorted(row["Dice (mean)"] for row in rows) == sorted(secret("blind", p, "mean") for p in PARTICIPANTS)


def test_a_blind_phases_failed_evaluation_publishes_a_fixed_sentence(repo, tmp_path, capsys):
    """An evaluation that fails after reading the ground truth (an assert, a traceback) may print what the
    phase withholds: in a blind phase its line is sealed, and the record, the site and the comment say only
    that it failed; the organizer's key opens the real line."""
    leaked = "AssertionError: case-0 truth is 0.7901234531"
    organizer, publish = new_identity(), new_identity()
    (tmp_path / "organizer.key").write_text(organizer[0])
    edit_yaml(repo / "challenges" / CHALLENGE / "challenge.yml", recipients=[organizer[1]], publish_key=publish[1])
    edit_yaml(repo / "challenges" / CHALLENGE / "phases" / f"{PHASE}.yml", blind=True)
    fake = FakeExecutor()
    fake.add_image(EVALUATION, Behaviour(exit_code=1, stderr=f"Traceback (most recent call last):\n{leaked}"))
    image = f"ghcr.io/alice/a@sha256:{'a' * 64}"
    fake.add_image(image, Behaviour(files={"case-0.npy": b"m"}))
    write_submission(repo, "alice", "v1", image)
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=repo, check=True)
    subprocess.run(["git", "add", "-A", "."], cwd=repo, check=True)  # the site's templates and mkdocs.yml too
    commit(repo, "2027-05-01T10:00:00Z", "The challenge and its submission")
    data = tmp_path / "data"
    for sub in ("inputs", "ground-truth"):
        (data / CHALLENGE / PHASE / sub).mkdir(parents=True)
        (data / CHALLENGE / PHASE / sub / "case-0.npy").write_bytes(b"x")
    store = Store(repo)
    [report] = run_jobs(store.pending(), store=store, executor=fake, config=RunnerConfig(data_root=data),
                        base=FAKE_BASE, retry=Retry(attempts=1))
    record = repo / "challenges" / CHALLENGE / "results" / PHASE / "alice" / "v1.json"
    public = json.loads(record.read_text())
    assert (report.status, report.detail, public["error"]) == ("failed", EVALUATION_FAILED, EVALUATION_FAILED)
    assert leaked not in record.read_text()
    assert leaked not in result_comment(load_result(record), store.phase(CHALLENGE, PHASE),
                                        store.visibility(store.phase(CHALLENGE, PHASE), load_result(record), now=None))
    commit(repo, "2027-05-02T10:00:00Z", "Results")  # what the runner commits: challenges/ alone
    history = subprocess.run(["git", "log", "-p", "--all"], cwd=repo, capture_output=True, text=True, check=True)
    assert leaked not in history.stdout
    assert leaked not in site_text(fresh_clone(repo), now=BEFORE)
    # Neither where the whole result opens: the publish key, or the runner's own copies beside its checkout.
    assert leaked not in site_text(fresh_clone(repo), now=BEFORE, publish_key=publish[0])
    assert main(["--root", str(repo), "unseal", str(record), "--identity", str(tmp_path / "organizer.key")]) == 0
    assert leaked in capsys.readouterr().out
    assert leaked not in site_text(repo, now=BEFORE)


def test_commands_on_the_runners_own_checkout_show_what_the_site_shows(world, repo, tmp_path, capsys):
    """The runner keeps every whole result beside its checkout; `leaderboard` and `report` there once
    printed and plotted them to whoever ran them (an Actions log is public). Without a key they show
    what the phases allow now, as the site does; the organizer's key shows everything."""
    assert main(["--root", str(repo), "leaderboard", CHALLENGE, "blind", "--format", "json"]) == 0
    assert all(row["Dice (mean)"] is None for row in json.loads(capsys.readouterr().out))
    assert main(["--root", str(repo), "report", CHALLENGE, "--samples", "20", "--output", str(tmp_path / "r")]) == 0
    capsys.readouterr()
    text = "\n".join(p.read_text() for p in (tmp_path / "r").rglob("*") if p.is_file())
    assert [v for values in withheld().values() for v in values if v in text] == []
    assert main(["--root", str(repo), "leaderboard", CHALLENGE, "blind", "--format", "json",
                 "--identity", str(world["organizer"])]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert sorted(row["Dice (mean)"] for row in rows) == sorted(secret("blind", p, "mean") for p in PARTICIPANTS)
    # Any other key shows what it opens, not the runner's copies: a participant's opens no scores.
    assert main(["--root", str(repo), "leaderboard", CHALLENGE, "blind", "--format", "json",
                 "--identity", str(world["participants"]["alice"][0])]) == 0
    assert all(row["Dice (mean)"] is None for row in json.loads(capsys.readouterr().out))
