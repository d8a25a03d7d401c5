"""Every YAML file is read as hostile: each way a participant broke the loader is refused in one
located line, fast and small, whether it reaches `challenge check` or a pull request's review."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import yaml

from runner.cli import main
from runner.errors import ChallengeError
from runner.pullrequests.rules import Change, Proposal, proposed_file
from runner.tree.located import ORGANIZER, PARTICIPANT, ModelError, YamlPolicy, load_yaml, policy_for
from tests.helpers import CHALLENGE, PHASE, REPO

SUBMISSION = f"challenges/{CHALLENGE}/submissions/{PHASE}/alice/v1.yml"
NO_ALIASES = "aliases (*name) are not allowed in submission files"
MIB = 1024 * 1024


def billion_laughs() -> str:
    """The classic: nine levels of nine aliases each, a few hundred bytes standing for 9**9 strings."""
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for prev, name in zip("abcdefgh", "bcdefghi"):
        lines.append(f"{name}: &{name} [{','.join(['*' + prev] * 9)}]")
    return "\n".join(lines) + "\n"


def write(path: Path, content: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, str):
        content = content.encode()
    path.write_bytes(content)
    return path


def refusal(path: Path, policy: YamlPolicy | None = None, *, libyaml: bool = True) -> str:
    with pytest.raises(ModelError) as info:
        load_yaml(path, policy, libyaml=libyaml)
    assert "\n" not in str(info.value)
    return str(info.value)


def proposed(content: bytes, rel: str = SUBMISSION) -> str:
    """The one line a pull request adding `content` at `rel` gets from the rules' reading of it."""
    proposal = Proposal("alice", (Change(rel, "added"),), lambda _: content)
    with pytest.raises(ModelError) as info:
        proposed_file(proposal, rel, load_yaml)
    return str(info.value)


# A fresh interpreter measures one call: its time, and its peak allocation with tracemalloc. Its
# address space is capped 1 GiB above what the imports took, so a regression fails fast instead of
# eating the machine's memory.
PROBE = textwrap.dedent("""\
    import json, resource, sys, time, tracemalloc
    from pathlib import Path
    import runner.cli, runner.cli.tree, runner.pullrequests.rules
    from runner.tree.located import ModelError, load_yaml
    how, root, rel = sys.argv[1:4]
    pages = int(open("/proc/self/statm").read().split()[0])
    resource.setrlimit(resource.RLIMIT_AS, (pages * resource.getpagesize() + 2**30,) * 2)

    def call():
        if how == "cli":
            return runner.cli.main(["--root", root, "check", str(Path(root, rel))])
        rules = runner.pullrequests.rules
        content = Path(root, rel).read_bytes()
        try:
            rules.proposed_file(rules.Proposal("alice", (rules.Change(rel, "added"),), lambda _: content), rel,
                                 load_yaml)
        except ModelError as exc:
            print(exc)
            return 1
        return 0

    tracemalloc.start()
    start = time.perf_counter()
    rc = call()
    seconds = time.perf_counter() - start
    print(json.dumps({"rc": rc, "seconds": seconds, "peak": tracemalloc.get_traced_memory()[1]}))
    """)


def probe(how: str, root: Path, rel: str) -> tuple[list[str], dict[str, float]]:
    """Run one check in a fresh interpreter: its printed lines, and its rc, seconds and peak bytes."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", PROBE, how, str(root), rel], capture_output=True, text=True,
                          timeout=120, env=env, cwd=REPO)
    assert done.returncode == 0, done.stderr
    *printed, figures = done.stdout.strip().splitlines()
    return printed, json.loads(figures)


# --- expansion bombs ---------------------------------------------------------------------------------


def test_billion_laughs_is_refused_fast_and_small_by_challenge_check(tree):
    path = write(tree / SUBMISSION, billion_laughs())
    assert path.stat().st_size < 500
    printed, figures = probe("cli", tree, SUBMISSION)
    assert printed == [f"{path.resolve()}:2: {NO_ALIASES}"]
    assert figures["rc"] == 1 and figures["seconds"] < 1 and figures["peak"] < 100 * MIB, figures


def test_billion_laughs_is_refused_fast_and_small_in_a_pull_request(tree):
    write(tree / SUBMISSION, billion_laughs())
    printed, figures = probe("rules", tree, SUBMISSION)
    assert printed == [f"{SUBMISSION}:2: {NO_ALIASES}"]
    assert figures["rc"] == 1 and figures["seconds"] < 1 and figures["peak"] < 100 * MIB, figures


def test_billion_laughs_is_bounded_in_an_organizer_file(tmp_path):
    path = write(tmp_path / "challenge.yml", billion_laughs())
    start = time.perf_counter()
    assert refusal(path, ORGANIZER) == (f"{path}:6: more than 100000 values, counting each alias as the values "
                                        "it stands for")
    assert time.perf_counter() - start < 1


def test_billion_laughs_is_refused_through_the_pure_python_parser_too(tmp_path):
    path = write(tmp_path / "challenge.yml", billion_laughs())
    assert refusal(path, ORGANIZER, libyaml=False).startswith(f"{path}:6: more than 100000 values")
    assert refusal(path, PARTICIPANT, libyaml=False) == f"{path}:2: {NO_ALIASES}"


def test_organizer_aliases_are_counted(tmp_path):
    path = write(tmp_path / "phase.yml", "a: &a 1\nb: [" + ", ".join(["*a"] * 1001) + "]\n")
    assert refusal(path, ORGANIZER) == f"{path}:2: more than 1000 aliases"


def test_aliases_cannot_nest_past_the_depth_bound(tmp_path):
    """Each alias adds its anchor's height where it is used, so nesting aliases cannot pass the bound."""
    nest = "[" * 29 + "1" + "]" * 29  # 30 levels under the root mapping
    path = write(tmp_path / "phase.yml", f"a: &a {nest}\nb: &b [[[[*a]]]]\nc: {'[' * 30}*b{']' * 30}\n")
    assert refusal(path, ORGANIZER) == f"{path}:3: alias *b nests values deeper than 64 levels"
    path.write_text(f"a: &a {nest}\nb: &b [[[[*a]]]]\nc: {'[' * 25}*b{']' * 25}\n")
    data = load_yaml(path, ORGANIZER).data
    assert data["b"][0][0][0][0] == data["a"]


def test_organizer_aliases_still_share_blocks(tmp_path):
    path = write(tmp_path / "phase.yml", "base: &base {memory: 1g, cpus: 1}\nalgorithm_resources: *base\n")
    doc = load_yaml(path)
    assert doc.data == {"base": {"memory": "1g", "cpus": 1}, "algorithm_resources": {"memory": "1g", "cpus": 1}}
    assert doc.line(("algorithm_resources",)) == 2 and doc.line(("algorithm_resources", "cpus")) == 1


@pytest.mark.parametrize("text", ["a: &a [*a]\n", "a: &a {b: [1, {c: *a}]}\n"])
def test_a_recursive_alias_is_refused(tmp_path, text):
    path = write(tmp_path / "challenge.yml", text)
    assert refusal(path, ORGANIZER) == f"{path}:1: alias *a refers to the block that contains it"
    assert refusal(path, PARTICIPANT) == f"{path}:1: {NO_ALIASES}"


def test_an_undefined_alias_is_located(tmp_path):
    path = write(tmp_path / "challenge.yml", "name: x\nheadline: *nope\n")
    assert refusal(path) == f"{path}:2: alias *nope names no anchor (&nope) written before it"


def test_deep_nesting_is_refused_before_recursion(tmp_path):
    path = write(tmp_path / "challenge.yml", "a:\n  b: " + "[" * 30_000 + "]" * 30_000 + "\n")
    assert refusal(path) == f"{path}:2: nested deeper than 64 levels"
    assert refusal(path, PARTICIPANT) == f"{path}:2: nested deeper than 32 levels"


def test_a_huge_flat_document_stops_at_the_value_bound(tmp_path):
    path = write(tmp_path / "challenge.yml", "a: [" + "0," * (ORGANIZER.max_bytes // 2 - 10) + "0]\n")
    start = time.perf_counter()
    assert refusal(path).startswith(f"{path}:1: more than 100000 values")
    assert time.perf_counter() - start < 5


# --- size --------------------------------------------------------------------------------------------


def test_a_20_mb_comment_file_is_refused_by_size(tree):
    path = write(tree / SUBMISSION, b"# lol\n" * (20 * MIB // 6))
    size = path.stat().st_size
    assert refusal(path) == f"{path}: is {size} bytes; at most 65536 are allowed"
    assert main(["--root", str(tree), "check", str(path)]) == 1
    assert proposed(path.read_bytes()) == f"{SUBMISSION}: is {size} bytes; at most 65536 are allowed"


def test_size_is_checked_before_reading(tmp_path):
    """A sparse 64 GiB file would take minutes to read: it is refused by its size alone."""
    path = tmp_path / "challenge.yml"
    with path.open("wb") as handle:
        handle.truncate(64 * 1024**3)
    start = time.perf_counter()
    assert refusal(path) == f"{path}: is {64 * 1024**3} bytes; at most {MIB} are allowed"
    assert time.perf_counter() - start < 1


def test_organizer_files_may_be_larger_than_participant_files(tmp_path):
    path = write(tmp_path / "challenge.yml", "description: >-\n" + "  lorem ipsum\n" * 10_000)
    assert load_yaml(path).data["description"].startswith("lorem ipsum lorem")
    assert refusal(path, PARTICIPANT) == f"{path}: is {path.stat().st_size} bytes; at most 65536 are allowed"


# --- bytes and characters ----------------------------------------------------------------------------


def test_non_utf8_bytes_name_their_line(tree):
    content = b"phase: final-test\ntitle: caf\xe9\nimage: x\n"
    path = write(tree / SUBMISSION, content)
    assert refusal(path) == f"{path}:2: is not UTF-8 text: byte 0xe9 cannot be decoded"
    assert proposed(content) == f"{SUBMISSION}:2: is not UTF-8 text: byte 0xe9 cannot be decoded"


@pytest.mark.parametrize("char", ["\x00", "\x1b", "\x7f", "\x85"])
def test_control_characters_are_refused_with_their_line(tmp_path, char):
    path = write(tmp_path / "challenge.yml", f"name: x\nheadline: a{char}b\n")
    assert refusal(path) == (f"{path}:2: control character U+{ord(char):04X} is not allowed; "
                             "write text, tabs and newlines")


def test_tabs_and_crlf_line_ends_are_text(tmp_path):
    path = write(tmp_path / "challenge.yml", "name: x\r\nheadline: \"a\tb\"\r\n")
    assert load_yaml(path).data == {"name": "x", "headline": "a\tb"}


def test_a_nul_in_a_pull_request_is_one_located_line():
    assert proposed(b"phase: final-test\nimage: \x00\n") == (
        f"{SUBMISSION}:2: control character U+0000 is not allowed; write text, tabs and newlines")


# --- tags --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("value, tag", [
    ("!foo x", "!foo"),
    ("!!python/object:os.system x", "!!python/object:os.system"),
    ("!!python/object/apply:os.system [ls]", "!!python/object/apply:os.system"),
    ("!!python/name:os.system ''", "!!python/name:os.system"),
    ("!!binary aGVsbG8=", "!!binary"),
    ("!!set {a, b}", "!!set"),
    ("!!omap [a: 1]", "!!omap"),
    ("!!pairs [a: 1]", "!!pairs"),
    ("!<tag:evil.example,2000:x> y", "tag:evil.example,2000:x"),
])
def test_only_standard_tags_are_taken(tmp_path, value, tag):
    path = write(tmp_path / "challenge.yml", f"name: x\nheadline: {value}\n")
    assert refusal(path) == (f"{path}:2: headline: tag {tag} is not allowed; only YAML's standard tags are "
                             "(!!str, !!int, !!float, !!bool, !!null, !!timestamp, !!seq, !!map)")


@pytest.mark.parametrize("value, message", [
    ("!!int abc", "'abc' is not a valid !!int"),
    ("!!bool maybe", "'maybe' is not a valid !!bool"),
    ("!!timestamp nope", "'nope' is not a valid !!timestamp"),
    ("!!float x", "'x' is not a valid !!float"),
    ("2026-13-45", "'2026-13-45' is not a valid !!timestamp"),
    ("!!str {a: 1}", "!!str cannot tag a mapping"),
    ("!!map [1]", "!!map cannot tag a list"),
    ("!!seq x", "!!seq cannot tag a single value"),
    ("1" + ":10" * 50, "a number of 151 characters; at most 100"),
])
def test_a_standard_tag_that_does_not_fit_is_located(tmp_path, value, message):
    path = write(tmp_path / "phase.yml", f"title: x\nlimits:\n  memory: {value}\n")
    assert refusal(path) == f"{path}:3: limits.memory: {message}"


def test_standard_tags_still_read(tmp_path):
    path = write(tmp_path / "phase.yml", "a: !!str 1\nb: !!int '2'\nc: !!float 3\nd: !!bool yes\ne: !!null x\n"
                                         "f: !!timestamp 2026-01-01\ng: !!seq [1]\nh: !!map {i: 1}\nj: <<\nk: =\n")
    data = load_yaml(path).data
    assert data == {"a": "1", "b": 2, "c": 3.0, "d": True, "e": None, "f": dt.date(2026, 1, 1),
                    "g": [1], "h": {"i": 1}, "j": "<<", "k": "="}


# --- what stays as it was ----------------------------------------------------------------------------


def test_duplicate_keys_and_lines_are_kept(tmp_path):
    path = write(tmp_path / "phase.yml", "title: x\nlimits:\n  memory: 1g\n  memory: 2g\n")
    assert refusal(path) == f"{path}:4: limits.memory: written twice"
    path.write_text("title: x\nlimits:\n  memory: 1g\n  cpus:\n    - 1\n")
    doc = load_yaml(path)
    assert doc.lines == {(): 1, ("title",): 1, ("limits",): 2, ("limits", "memory"): 3, ("limits", "cpus"): 4,
                         ("limits", "cpus", 0): 5}


def test_syntax_errors_and_second_documents_are_located(tmp_path):
    path = write(tmp_path / "phase.yml", "title: x\n---\ntitle: y\n")
    assert refusal(path) == (f"{path}:2: invalid YAML: expected a single document in the stream, "
                             "but found another document")
    path.write_text("title: [x\n")
    assert refusal(path).startswith(f"{path}:2: invalid YAML: ")


def test_model_error_is_a_challenge_error_and_one_line():
    error = ModelError(Path("a\nb.yml"), 3, "name\u2028x", "bad\rvalue")
    assert isinstance(error, ChallengeError) and isinstance(error, ValueError)
    assert str(error) == "a\\nb.yml:3: name\\u2028x: bad\\rvalue"
    assert (error.line, error.field, error.message) == (3, "name\u2028x", "bad\rvalue")


@pytest.mark.parametrize("rel, policy", [
    (SUBMISSION, PARTICIPANT),
    (f"challenges/{CHALLENGE}/registrations/alice.yml", PARTICIPANT),
    (f"challenges/{CHALLENGE}/challenge.yml", ORGANIZER),
    (f"challenges/{CHALLENGE}/phases/{PHASE}.yml", ORGANIZER),
    (f"challenges/{CHALLENGE}/teams.yml", ORGANIZER),
    (f"challenges/{CHALLENGE}/approvals/{PHASE}.yml", ORGANIZER),
    ("elsewhere/submissions/a/b/c.yml", ORGANIZER),
])
def test_participants_files_get_the_participant_policy_by_default(rel, policy):
    assert policy_for(REPO / rel) is policy


@pytest.mark.skipif(not yaml.__with_libyaml__, reason="PyYAML without libyaml")
@pytest.mark.parametrize("text", [
    billion_laughs(), "a: &a [*a]\n", "a: *x\n", "a: !foo x\n", "a: !!int abc\n", "a: " + "[" * 70 + "]" * 70,
    "a: &a 1\nb: [" + ", ".join(["*a"] * 1001) + "]\n", "a: &a {b: 1}\nc: *a\nd: <<\n", "a: 1\na: 2\n",
])
def test_libyaml_and_pure_python_events_read_alike(tmp_path, text):
    """libyaml is used where PyYAML has it; the pure-Python parser is the fallback: same verdicts."""
    path = write(tmp_path / "challenge.yml", text)

    def verdict(libyaml: bool) -> object:
        try:
            doc = load_yaml(path, ORGANIZER, libyaml=libyaml)
        except ModelError as exc:
            return str(exc)
        return doc.data, doc.lines

    assert verdict(False) == verdict(True)
