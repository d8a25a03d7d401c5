"""Sealed records open for the keys they were sealed to, and for nobody else."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from runner.tree.records import SEAL_BLOCK, padded
from runner.tree.sealing import (
    SealError,
    identity,
    new_identity,
    read_identity_file,
    recipient,
    seal,
    unseal,
)


def ssh_key(folder: Path, name: str) -> tuple[Path, str]:
    """A fresh unencrypted ed25519 key pair, as a participant has in ~/.ssh."""
    path = folder / name
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name, "-f", str(path)], check=True)
    return path, (folder / f"{name}.pub").read_text()


def test_sealed_to_age_and_ssh_keys_opens_for_each_and_no_other(tmp_path):
    organizer_secret, organizer_public = new_identity()
    participant_key, participant_public = ssh_key(tmp_path, "id_ed25519")
    stranger_secret, _ = new_identity()
    sealed = seal(b"per-case dice 0.123456", [recipient(organizer_public), recipient(participant_public)])
    assert sealed.startswith(b"-----BEGIN AGE ENCRYPTED FILE-----")
    assert b"0.123456" not in sealed
    assert unseal(sealed, [identity(organizer_secret)], where="r.age") == b"per-case dice 0.123456"
    assert unseal(sealed, read_identity_file(participant_key), where="r.age") == b"per-case dice 0.123456"
    with pytest.raises(SealError, match=r"^r.age: none of the given keys opens it"):
        unseal(sealed, [identity(stranger_secret)], where="r.age")


@pytest.mark.parametrize("text, message", [
    ("age1nope", "not a valid public key"),
    ("ssh-dss AAAAB3", "neither an age key"),
    ("", "neither an age key"),
])
def test_a_bad_recipient_is_one_line_naming_where(text, message):
    with pytest.raises(SealError, match=rf"^challenge.yml: recipients\[0\]: .*{message}"):
        recipient(text, where="challenge.yml: recipients[0]")


def test_sealing_to_nobody_is_refused():
    with pytest.raises(SealError, match="nobody to seal to"):
        seal(b"x", [])



def test_a_sealed_records_length_shows_only_to_the_block():
    """A blind phase's per-case value, 0.0 or a long float as the ground truth has it, no longer shows in the size
    of the sealed file every reader of the repository sees (age adds random bytes of its own besides)."""
    def document(value: float) -> bytes:
        return json.dumps({"metrics": {"case": {"c1": {"dice": value}}}, "title": "x" * 200}).encode()

    short, long = padded(document(0.0)), padded(document(0.123456789012345))
    assert len(short) == len(long) and len(short) % SEAL_BLOCK == 0
    assert json.loads(long) == json.loads(document(0.123456789012345))
