"""Mutated files of every kind end in a verdict, never a traceback: `challenge check` (which runs
each kind's loader and schema) returns 0 or 1, the YAML loader raises ModelError alone, and each
file is judged within a bounded time.

Each kind starts from a real file (the example challenge's) or a small valid sample, and hypothesis
inserts, deletes and replaces bytes, splicing in the YAML that broke the loader before: anchors and
aliases, tags, brackets, control and non-UTF-8 bytes, deep nesting. Derandomized, so CI sees the
same examples every run.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runner.cli import main
from runner.evaluation.examples import prepare_workspace
from runner.pullrequests.rules import Change, Proposal, proposed_file
from runner.tree.located import ModelError, load_yaml
from tests.helpers import CHALLENGE, IMAGE, PHASE, REPO

BASE = f"challenges/{CHALLENGE}"
TOKENS = [
    b"&a ", b"*a", b"&b [*a, *a]", b"&a [*a]", b"!!int ", b"!!bool ", b"!!timestamp ", b"!!float ", b"!!str ",
    b"!!seq ", b"!!map ", b"!!binary ", b"!!set ", b"!!python/object:os.system ", b"!foo ", b"!<tag:x> ",
    b"%TAG !! tag:evil,2000:\n---\n", b"{", b"}", b"[", b"]", b"- ", b": ", b"? ", b", ", b"\n", b"\n  ",
    b"  ", b"\t", b"#", b"'", b'"', b"|", b">-", b"\\", b"~", b"<<: ", b"=", b"---\n", b"...\n", b"\x00", b"\x1b",
    b"\xff", b"\xc3", b"\xe2\x80\xa8", b"\xef\xbb\xbf", b"\r", b"2026-13-45", b"1:2:3:4", b"0x1F", b".inf",
    b"yes", b"null", b"1e999", b"[" * 70, b"- " * 70, b"{a: " * 70, b"\n" + b"  " * 80 + b"- x",
]


@dataclass(frozen=True)
class Kind:
    """One file kind: where it sits, what it starts as, and whether a pull request may add it."""

    rel: str
    seed: bytes
    participant: bool = False  # also read as a pull request's file, through the rules


def kinds() -> dict[str, Kind]:
    challenge = (REPO / BASE / "challenge.yml").read_bytes()
    phase = (REPO / BASE / "phases" / f"{PHASE}.yml").read_bytes()
    submission = f"phase: {PHASE}\nimage: {IMAGE}\ntitle: Threshold\ndescription: >-\n  first try\n".encode()
    return {
        "challenge": Kind(f"{BASE}/challenge.yml", challenge),
        "phase": Kind(f"{BASE}/phases/{PHASE}.yml", phase),
        "submission": Kind(f"{BASE}/submissions/{PHASE}/alice/v1.yml", submission, participant=True),
        "teams": Kind(f"{BASE}/teams.yml", b"lab:\n  - alice\n  - bob\nsolo: [carol]\n"),
        "registration": Kind(f"{BASE}/registrations/alice.yml",
                             b"name: Alice\naffiliation: Somewhere Lab\naccept_rules: true\n", participant=True),
        "approvals": Kind(f"{BASE}/approvals/{PHASE}.yml", b"- alice/v1\n- bob/v2\n"),
    }


@st.composite
def mutated(draw: st.DrawFn, seed: bytes) -> bytes:
    """`seed` after a few byte-level edits: insert a token (most often) or random bytes, delete a run,
    replace a byte."""
    data = bytearray(seed)
    for _ in range(draw(st.integers(1, 6))):
        at = draw(st.integers(0, len(data)))
        how = draw(st.sampled_from(["token", "token", "token", "bytes", "delete", "replace"]))
        if how == "token":
            data[at:at] = draw(st.sampled_from(TOKENS))
        elif how == "bytes":
            data[at:at] = draw(st.binary(min_size=1, max_size=8))
        elif how == "delete":
            del data[at:at + draw(st.integers(1, 16))]
        elif at < len(data):
            data[at] = draw(st.one_of(st.integers(0x20, 0x7E), st.integers(0, 255)))  # mostly text
    return bytes(data)


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    """One scratch repository for all examples: each example rewrites its one file."""
    return prepare_workspace(REPO, tmp_path_factory.mktemp("fuzz") / "repo")


def judge(root: Path, kind: Kind, content: bytes) -> None:
    """`challenge check` runs the kind's own loader and schema: any exception but the ones it reports
    as problems escapes main() and fails the example."""
    path = root / kind.rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    assert main(["--root", str(root), "check", str(path)]) in (0, 1)
    try:
        load_yaml(path)
    except ModelError as exc:
        assert "\n" not in str(exc)
    if kind.participant:
        proposal = Proposal("alice", (Change(kind.rel, "added"),), lambda _: content)
        try:
            proposed_file(proposal, kind.rel, load_yaml)
        except ModelError as exc:
            assert "\n" not in str(exc)


@pytest.mark.parametrize("name", ["challenge", "phase", "submission", "teams", "registration", "approvals"])
def test_a_mutated_file_gets_a_verdict_not_a_traceback(root, name):
    kind = kinds()[name]
    original = (root / kind.rel).read_bytes() if (root / kind.rel).is_file() else None
    judge(root, kind, kind.seed)  # the seed is valid, so mutants reach the kind's own loader
    assert main(["--root", str(root), "check", str(root / kind.rel)]) == 0

    @settings(max_examples=150, deadline=2000, derandomize=True, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(content=mutated(kind.seed))
    def fuzz(content: bytes) -> None:
        judge(root, kind, content)

    try:
        fuzz()
    finally:  # leave the scratch tree as the next kind expects it
        if original is None:
            (root / kind.rel).unlink(missing_ok=True)
        else:
            (root / kind.rel).write_bytes(original)
