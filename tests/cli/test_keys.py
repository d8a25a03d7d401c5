"""Organizers' keys against GitHub's (the local REST server): `reseal` with the `github:` recipients the
docs show first, an organizer whose GitHub keys age cannot use (ECDSA) reported by `check` rather than
found as pending results, and team names that would share a participant's folder and logs."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from runner.cli import main
from runner.tree.records import Keys, logs_path, sealed_path
from runner.tree.result_model import Result
from runner.tree.sealing import new_identity, read_identity_file, unseal
from runner.tree.store import Store
from tests.helpers import CHALLENGE, PHASE, edit_yaml, phase_file, write_submission

WHEN = "2026-03-01T10:00:00+00:00"


def ssh_key(folder: Path, name: str, kind: str = "ed25519") -> tuple[Path, str]:
    subprocess.run(["ssh-keygen", "-q", "-t", kind, "-N", "", "-C", name, "-f", str(folder / name)], check=True)
    return folder / name, (folder / f"{name}.pub").read_text().strip()


@pytest.fixture
def keys(tmp_path) -> dict[str, tuple[Path, str]]:
    return {name: ssh_key(tmp_path, name, kind) for name, kind in
            (("alice", "ed25519"), ("carol", "ed25519"), ("carol-ecdsa", "ecdsa"), ("dave", "ecdsa"))}


@pytest.fixture
def online(github, monkeypatch):
    """`challenge` commands read GitHub's keys from the local server, as Actions would from GitHub."""
    monkeypatch.setenv("GITHUB_API_URL", github.url)
    monkeypatch.delenv("GITHUB_TOKEN", raising=False)
    return github


def debugging_result(repo: Path, keys: dict[str, tuple[Path, str]], organizer: str) -> Path:
    """alice's result of a debugging phase, sealed to the organizer and her logs to her."""
    edit_yaml(repo / "challenges" / CHALLENGE / "challenge.yml", recipients=[organizer])
    edit_yaml(phase_file(repo), give_algorithm_editors_job_view_permissions=True)
    store = Store(repo, keys=Keys(github_keys=lambda login: [keys[login.lower()][1]]))
    submission = store.submission(write_submission(repo, "alice", "v1", f"ghcr.io/alice/a@sha256:{'a' * 64}"))
    return store.write_result(submission, Result(
        challenge=CHALLENGE, phase=PHASE, participant="alice", submission="v1", status="succeeded",
        created_at=WHEN, started_at=WHEN, finished_at=WHEN, metrics={"aggregates": {"dice": {"mean": 0.8}}},
        logs={"algorithm": "epoch 1 of alice's model"}))


def opens(path: Path, key: Path) -> bool:
    try:
        unseal(path.read_bytes(), read_identity_file(key), where=str(path))
        return True
    except Exception:
        return False


def test_reseal_reads_github_recipients_and_seals_the_logs_again(repo, tmp_path, keys, online, capsys):
    """reseal once refused `github:` recipients (it had no way to GitHub) and left the logs as they were;
    an organizer with an ECDSA key besides an ed25519 one is sealed to by the one age can use."""
    secret, public = new_identity()
    (tmp_path / "organizer.key").write_text(secret)
    record = debugging_result(repo, keys, public)
    online.ssh_keys.update(carol=[keys["carol-ecdsa"][1], keys["carol"][1]], alice=[keys["alice"][1]])
    edit_yaml(repo / "challenges" / CHALLENGE / "challenge.yml", recipients=[public, "github:carol"])
    assert main(["--root", str(repo), "reseal", "--identity", str(tmp_path / "organizer.key")]) == 0
    assert "2 sealed file(s) sealed again" in capsys.readouterr().out
    assert opens(sealed_path(record), keys["carol"][0]) and opens(logs_path(record), keys["carol"][0])
    assert opens(logs_path(record), keys["alice"][0]) and not opens(sealed_path(record), keys["alice"][0])


def test_check_reports_an_organizer_whose_github_keys_cannot_be_sealed_to(repo, keys, online, capsys):
    online.ssh_keys.update(dave=[keys["dave"][1]], carol=[keys["carol"][1]])
    challenge = repo / "challenges" / CHALLENGE / "challenge.yml"
    edit_yaml(challenge, recipients=["github:carol", "github:dave"])
    assert main(["--root", str(repo), "check"]) == 1
    assert (f"{challenge}:" in (printed := capsys.readouterr().out) and "recipients[1]: github:dave has no ed25519 or "
            "RSA key on GitHub (ecdsa-sha2-nistp256): nothing can be sealed to them" in printed)


def test_a_team_named_like_a_registered_participant_is_refused(repo, capsys):
    challenge = repo / "challenges" / CHALLENGE
    (challenge / "registrations").mkdir()
    (challenge / "registrations" / "alice.yml").write_text("name: Alice\naccept_rules: true\n")
    (challenge / "teams.yml").write_text("alice: [mallory]\nunet-team: [alice, bob]\n")
    assert main(["--root", str(repo), "check"]) == 1
    assert f"{challenge / 'teams.yml'}:1: alice: team 'alice' has the name of the registered participant alice, who " \
           "is not in it: rename the team" in capsys.readouterr().out


def test_a_team_named_like_someone_elses_github_account_is_refused_where_github_is_configured(repo, online, capsys):
    """bob has not registered (nor submitted) yet: a team named bob would take his folder when he does."""
    online.ssh_keys.update(bob=[])
    challenge = repo / "challenges" / CHALLENGE
    (challenge / "teams.yml").write_text("bob: [mallory]\nunet-team: [alice]\nnew-lab: [new-lab, carol]\n")
    assert main(["--root", str(repo), "check"]) == 1
    printed = capsys.readouterr().out
    assert f"{challenge / 'teams.yml'}:1: bob: team 'bob' has the name of the GitHub account bob, who is not in it: " \
           "rename the team" in printed
    assert "unet-team" not in printed and "new-lab" not in printed  # no such account; a team that is its own login
