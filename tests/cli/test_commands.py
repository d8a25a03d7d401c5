"""The command table: `challenge --help` lists every command without importing their modules."""

from __future__ import annotations

import subprocess
import sys

import pytest

from runner.cli import COMMANDS, parser


def test_help_lists_every_command_with_its_summary_and_imports_none_of_them():
    probe = ("import sys\nfrom runner.cli import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
             "print(sorted(m for m in sys.modules if m.startswith('runner.') or m.split('.')[0] in "
             "('pandas', 'scipy', 'numpy', 'docker', 'github', 'jinja2', 'pydantic', 'rich')))")
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    *help_lines, imported = run.stdout.strip().splitlines()
    assert imported == "['runner.cli', 'runner.cli.warm_client']"
    shown = " ".join(" ".join(help_lines).split())  # argparse wraps summaries
    for name, command in COMMANDS.items():
        assert f"{name} {' '.join(command.summary.split())}" in shown


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_each_command_is_registered_by_its_module_with_the_tables_summary(name, capsys):
    with pytest.raises(SystemExit) as stop:
        parser([name]).parse_args([name, "--help"])  # the module's own options: registered there
    assert stop.value.code == 0 and capsys.readouterr().out.startswith(f"usage: challenge {name} ")
    listed = " ".join(parser([name]).format_help().split())
    assert f"{name} {' '.join(COMMANDS[name].summary.split())}" in listed


def test_an_unknown_command_is_a_usage_error():
    with pytest.raises(SystemExit) as stop:
        parser(["nope"]).parse_args(["nope"])
    assert stop.value.code == 2


NESTED = [("keys", "new"), ("keys", "runner"), ("data", "download"), ("data", "seal"), ("pr", "review")]


@pytest.mark.parametrize("words", [(name,) for name in sorted(COMMANDS)] + NESTED, ids=" ".join)
def test_verbose_is_taken_after_each_command_as_after_challenge(words, capsys):
    with pytest.raises(SystemExit) as stop:
        parser([words[0]]).parse_args([*words, "--help"])
    assert stop.value.code == 0 and "-v, --verbose" in capsys.readouterr().out


def test_verbose_after_the_command_or_before_it_holds_and_is_false_without_it():
    for argv, verbose in ((["build", "--verbose"], True), (["-v", "build"], True), (["build", "-v"], True),
                          (["build"], False), (["keys", "new", "-v"], True), (["keys", "new"], False)):
        assert parser(argv).parse_args(argv).verbose is verbose, argv


def test_an_error_shows_its_traceback_with_verbose_after_the_command(tmp_path):
    def build(*words: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "runner.cli", "--root", str(tmp_path), *words],
                              capture_output=True, text=True)
    plain, verbose = build("build"), build("build", "--verbose")
    assert plain.returncode == verbose.returncode == 1
    assert plain.stderr.strip().splitlines() == [f"error: {tmp_path}/mkdocs.yml not found: run from the "
                                                 "repository root or pass --root"]
    assert "Traceback (most recent call last)" in verbose.stderr and verbose.stderr.endswith(plain.stderr)
