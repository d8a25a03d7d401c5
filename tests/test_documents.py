"""What README.md, the guides and the example challenges' pages tell people to type works as written.

A small collector rather than an executable-Markdown tool: the documents are mkdocs pages and a
GitHub README, so they must stay plain fenced blocks (no tool's cell syntax), and what a block
needs (a scratch copy of the repository, the offline base under the public base's name) is this
suite's own fixtures. Every ```bash block is checked for shell syntax, and every `challenge`
command in it is parsed by the real command line. Blocks run in order, one document per scratch
workspace, unless an HTML comment right above the fence says otherwise:

    <!-- commands: not run: why -->      syntax and arguments checked only (a GitHub runner, your own image)
    <!-- commands: exit N: why -->       runs, and must end with status N

Placeholders (`<challenge>`) are filled from PLACEHOLDERS, one declared value each; a placeholder
not declared there fails the test, so a new one is a decision, not an accident.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from runner.cli import parser
from runner.evaluation.examples import prepare_workspace
from tests.helpers import REPO, public_base_name

DOCUMENTS = (REPO / "README.md", *sorted((REPO / "challenges").glob("*.md")),
             *sorted((REPO / "challenges").glob("*/*.md")),
             REPO / "runner" / "pullrequests" / "runner_repository" / "README.md")
PLACEHOLDERS = {
    "<challenge>": "ellipsoid-segmentation",
    "<phase>": "final-test",
    "<org>": "example-org",
    "<challenges repository>": "challenges",
    "<registration token>": "AAAATOKEN",
    "<runner key>": "qexamplekey",
}
FENCE = re.compile(r"^(?P<indent> *)```(?P<lang>\S*)\s*$")
MARKER = re.compile(r"<!--\s*commands:\s*(?:(?P<skip>not run)|exit (?P<exit>\d+)):\s*(?P<why>[^-]+?)\s*-->")
PLACEHOLDER = re.compile(r"<[a-z][a-z ]*>")


@dataclass(frozen=True)
class Block:
    document: Path
    line: int  # of the opening fence, 1-based
    text: str
    run: bool
    exit_code: int

    @property
    def where(self) -> str:
        return f"{self.document.relative_to(REPO)}:{self.line}"

    @property
    def filled(self) -> str:
        text = self.text
        for placeholder, value in PLACEHOLDERS.items():
            text = text.replace(placeholder, value)
        return text


def blocks(document: Path) -> list[Block]:
    """The ```bash blocks of one Markdown document, with what the comment above each says."""
    found: list[Block] = []
    lines = document.read_text().splitlines()
    i = 0
    while i < len(lines):
        fence = FENCE.match(lines[i])
        if fence is None:
            i += 1
            continue
        end = next(j for j in range(i + 1, len(lines)) if lines[j].strip() == "```")
        if fence["lang"] == "bash":
            marker = MARKER.search(lines[i - 1]) if i else None
            body = "\n".join(line.removeprefix(fence["indent"]) for line in lines[i + 1:end])
            found.append(Block(document, i + 1, body, run=not (marker and marker["skip"]),
                               exit_code=int(marker["exit"]) if marker and marker["exit"] else 0))
        i = end + 1
    return found


ALL = [block for document in DOCUMENTS for block in blocks(document)]


def commands(text: str) -> Iterator[list[str]]:
    """Each `challenge ...` command of a shell text, as words (continuation lines joined)."""
    for line in text.replace("\\\n", " ").splitlines():
        words = shlex.split(line, comments=True)
        for start, word in enumerate(words):
            if word == "challenge" and (start == 0 or words[start - 1] in ("&&", "||", ";", "|")):
                rest = words[start + 1:]
                yield rest[:next((k for k, w in enumerate(rest) if w in ("&&", "||", ";", "|")), len(rest))]


def test_the_documents_have_commands():
    assert len(ALL) >= 15, [b.where for b in ALL]
    assert any(b.run for b in ALL) and any(not b.run for b in ALL)


@pytest.mark.parametrize("block", ALL, ids=lambda b: b.where)
def test_every_block_is_shell_and_every_challenge_command_parses(block: Block):
    undeclared = set(PLACEHOLDER.findall(block.filled))
    assert not undeclared, f"{block.where}: placeholders not declared in PLACEHOLDERS: {sorted(undeclared)}"
    syntax = subprocess.run(["bash", "-n"], input=block.filled, capture_output=True, text=True)
    assert syntax.returncode == 0, f"{block.where}: {syntax.stderr}"
    for words in commands(block.filled):
        try:
            parser(words).parse_args(words)
        except SystemExit:
            pytest.fail(f"{block.where}: `challenge {shlex.join(words)}` is refused by the command line")


RUN = sorted({b.document for b in ALL if b.run})


def readers_own(document: Path, workspace: Path, home: Path) -> None:
    """What a document assumes its reader has beside the repository: an organizer's runner
    settings; a participant's algorithm folder (the example challenge's baseline) and a folder of
    their own validation cases."""
    if document.name == "organizers.md":
        (home / "actions-runner").mkdir(parents=True)
        (home / "actions-runner" / ".env").write_text(f"CHALLENGE_DATA_ROOT={home / 'challenge-data'}\n")
        (home / "challenge-data").mkdir()
    if document.name != "participants.md":
        return
    challenge = REPO / "challenges" / PLACEHOLDERS["<challenge>"]
    shutil.copytree(challenge / "examples" / "baseline", workspace.parent / "my-algorithm")
    made = workspace.parent / "made"
    subprocess.run([sys.executable, str(challenge / "data" / "make_data.py"), str(made), "--cases", "2", "--seed", "7"],
                   check=True, capture_output=True)
    shutil.copytree(made / challenge.name / PLACEHOLDERS["<phase>"], workspace / "my-validation")


@pytest.mark.docker
@pytest.mark.parametrize("document", RUN, ids=lambda d: str(d.relative_to(REPO)))
def test_the_documents_commands_run_as_written(document: Path, tmp_path, docker_client, base_image):
    workspace = prepare_workspace(REPO, tmp_path / "repo")
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "HOME": str(tmp_path / "home"), "NO_COLOR": "1"}
    (tmp_path / "home").mkdir()
    readers_own(document, workspace, tmp_path / "home")
    with public_base_name(docker_client, base_image):
        for block in (b for b in blocks(document) if b.run):
            done = subprocess.run(["bash", "-euo", "pipefail", "-c", block.filled], cwd=workspace, env=env,
                                  capture_output=True, text=True, timeout=900)
            assert done.returncode == block.exit_code, (
                f"{block.where} ended with {done.returncode}, not {block.exit_code}:\n{block.filled}\n"
                f"--- stdout\n{done.stdout[-3000:]}\n--- stderr\n{done.stderr[-3000:]}")
