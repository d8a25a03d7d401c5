"""Runner signatures: OpenSSH's SSHSIG made in-process, checked by stock ssh-keygen and by us, and the
allowed-signers file with rotation."""

from __future__ import annotations

import concurrent.futures
import datetime as dt
import subprocess
from pathlib import Path

import pytest

from runner.tree.signing import (
    BadSignature,
    SigningError,
    armored,
    canonical,
    key_text,
    load_or_create,
    new_key,
    parse_signers,
    signers_line,
)

WHEN = dt.datetime(2026, 6, 1, tzinfo=dt.UTC)


def signed(key, document):
    return {**document, "signature": key.sign(canonical(document))}


def test_a_signed_record_verifies_and_any_change_fails():
    key = new_key()
    signers = parse_signers(signers_line("gpu-1", key) + "\n", source="allowed_signers")
    record = signed(key, {"metrics": {"dice": 0.8123}, "participant": "alice"})
    assert signers.verify(record, when=WHEN) == "gpu-1"
    with pytest.raises(BadSignature, match="changed after the runner signed it"):
        signers.verify({**record, "metrics": {"dice": 0.8124}}, when=WHEN)
    with pytest.raises(BadSignature, match="not signed"):
        signers.verify({"participant": "alice"}, when=WHEN)
    with pytest.raises(BadSignature, match="does not list"):
        signers.verify(signed(new_key(), {"participant": "alice"}), when=WHEN)
    with pytest.raises(BadSignature, match=r"not base64|not an SSH signature|truncated"):
        signers.verify({**record, "signature": record["signature"][:40]}, when=WHEN)


def test_key_order_and_spacing_do_not_matter_but_values_do():
    key = new_key()
    signers = parse_signers(signers_line("gpu-1", key), source="s")
    record = signed(key, {"b": [1, 2.5], "a": "é"})
    assert signers.verify({"a": "é", "b": [1, 2.5], "signature": record["signature"]}, when=WHEN)
    with pytest.raises(BadSignature):
        signers.verify({"a": "é", "b": [1, 2.50001], "signature": record["signature"]}, when=WHEN)


def test_stock_openssh_verifies_our_signatures_and_we_verify_its(tmp_path):
    key = new_key()
    (tmp_path / "allowed").write_text(signers_line("gpu-1", key) + "\n")
    message = canonical({"participant": "alice", "metrics": {"dice": 0.9}})
    (tmp_path / "record").write_bytes(message)
    (tmp_path / "record.sig").write_text(armored(key.sign(message)))
    done = subprocess.run(["ssh-keygen", "-Y", "verify", "-f", "allowed", "-I", "gpu-1", "-n", "challenge-result",
                           "-s", "record.sig"], cwd=tmp_path, input=message, capture_output=True)
    assert done.returncode == 0, done.stderr
    # ...and a signature ssh-keygen made with the same key is the one we read.
    (tmp_path / "key").write_bytes(key_text(key))
    (tmp_path / "key").chmod(0o600)
    subprocess.run(["ssh-keygen", "-q", "-Y", "sign", "-f", "key", "-n", "challenge-result", "record"], cwd=tmp_path,
                   check=True, capture_output=True)
    theirs = "".join((tmp_path / "record.sig").read_text().splitlines()[1:-1])
    signers = parse_signers((tmp_path / "allowed").read_text(), source="allowed")
    assert signers.verify({"participant": "alice", "metrics": {"dice": 0.9}, "signature": theirs}, when=WHEN)


def test_rotation_by_validity_windows():
    old, new = new_key(), new_key()
    text = (f'gpu-1 namespaces="challenge-result",valid-before="20260301Z" {old.public}\n'
            f'# rotated on 1 March\n'
            f'gpu-1 namespaces="challenge-result",valid-after="20260301Z" {new.public} gpu-1@lab\n')
    signers = parse_signers(text, source="allowed_signers")
    early, late = dt.datetime(2026, 2, 1, tzinfo=dt.UTC), dt.datetime(2026, 4, 1, tzinfo=dt.UTC)
    assert signers.verify(signed(old, {"a": 1}), when=early) == "gpu-1"
    assert signers.verify(signed(new, {"a": 1}), when=late) == "gpu-1"
    with pytest.raises(BadSignature, match="outside its key's validity"):
        signers.verify(signed(old, {"a": 1}), when=late)
    with pytest.raises(BadSignature, match="outside its key's validity"):
        signers.verify(signed(new, {"a": 1}), when=early)


def test_fields_part_at_tabs_as_openssh_reads_them():
    key = new_key()
    signers = parse_signers(f'gpu-1\tnamespaces="challenge-result",valid-before="20200101Z"\t{key.public}', source="s")
    with pytest.raises(BadSignature, match="outside its key's validity"):  # expired, as ssh-keygen says too
        signers.verify(signed(key, {"a": 1}), when=WHEN)


def test_a_key_for_another_namespace_signs_no_result():
    key = new_key()
    signers = parse_signers(f'gpu-1 namespaces="git" {key.public}', source="s")
    with pytest.raises(BadSignature, match="not allowed to sign challenge-result"):
        signers.verify(signed(key, {"a": 1}), when=WHEN)


@pytest.mark.parametrize(("line", "message"), [
    ("gpu-1 ssh-rsa AAAAB3NzaC1yc2E", "line 2: 'ssh-rsa' keys are not accepted"),
    ("gpu-1 ssh-ed25519 !!!", "line 2: the ssh-ed25519 key is not valid base64"),
    ('gpu-1 valid-after="2026" ssh-ed25519 AAAA', "line 2: '2026' is not a time"),
    ('gpu-1 cert-authority ssh-ed25519 AAAA', "line 2: option 'cert-authority' is not supported"),
    ('gpu-1 namespaces="x ssh-ed25519 AAAA', "quote is not closed"),
    ("gpu-1 valid-before ssh-ed25519 AAAA", "line 2: option 'valid-before' needs a value"),
    # OpenSSH strips only spaces and tabs: to it this is a key of principal "\xa0#x", not a comment.
    ("\u00a0#x ssh-ed25519 AAAA", "line 2: holds characters other than printable ASCII"),
    ("gpu-1\x0bssh-ed25519 AAAA", "line 2: holds characters other than printable ASCII"),
])
def test_allowed_signers_errors_name_the_line(line, message):
    with pytest.raises(SigningError, match=message):
        parse_signers(f"# runners\n{line}\n", source="challenges/allowed_signers")


def test_the_runner_key_is_made_once_private(tmp_path):
    path = tmp_path / "state" / "signing_key"
    key = load_or_create(path)
    assert path.stat().st_mode & 0o777 == 0o600
    assert load_or_create(path).public == key.public
    path.write_text("not a key")
    with pytest.raises(SigningError, match="not an unencrypted OpenSSH private key"):
        load_or_create(path)


def _public_of_new_key(path: str) -> str:
    return load_or_create(Path(path)).public


def test_runners_starting_together_all_sign_with_the_one_key_made(tmp_path):
    """Four runners on one checkout once read the key while another was still writing it (an empty file)."""
    for attempt in range(5):
        path = tmp_path / f"state-{attempt}" / "signing_key"
        with concurrent.futures.ProcessPoolExecutor(8) as pool:
            publics = set(pool.map(_public_of_new_key, [str(path)] * 16))
        assert publics == {load_or_create(path).public}
        assert [p.name for p in path.parent.iterdir()] == ["signing_key"]  # no draft left behind


def test_a_runner_key_is_allowed_only_while_its_line_lets_it_sign():
    key = new_key()
    signers = parse_signers(f'gpu-1 namespaces="challenge-result",valid-before="20260301Z" {key.public}', source="s")
    assert signers.allows(key, when=dt.datetime(2026, 2, 1, tzinfo=dt.UTC))
    assert not signers.allows(key, when=WHEN)
    assert not signers.allows(new_key(), when=dt.datetime(2026, 2, 1, tzinfo=dt.UTC))
