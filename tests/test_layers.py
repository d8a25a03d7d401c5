"""Knowledge flows one way: no module imports a higher stage, and only execution imports docker.

The stages and what each may import are written in each subpackage's docstring; this test holds
the code to them.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "runner"
# stage -> the stages it may import (besides itself)
ALLOWED = {
    "errors": set(),
    "codekey": set(),
    "tree": {"errors", "codekey"},
    "settings": {"errors", "codekey", "tree"},  # the runner's settings: given to lower stages as values
    "execution": {"errors", "codekey"},
    "evaluation": {"errors", "codekey", "tree", "settings", "execution"},
    "ranking": {"errors", "codekey", "tree"},
    "site": {"errors", "codekey", "tree", "ranking"},
    "pullrequests": {"errors", "codekey", "tree", "ranking"},
    "evalkit": set(),  # copied alone into evaluation images
    "cli": {"errors", "codekey", "tree", "settings", "execution", "evaluation", "ranking", "site", "pullrequests",
            "evalkit"},
}
MODULES = sorted(p for p in PACKAGE.rglob("*.py") if p.parent != PACKAGE or p.stem not in ("__init__", "__main__"))


def stage(path: Path) -> str:
    return path.relative_to(PACKAGE).parts[0].removesuffix(".py")


def imported(path: Path) -> set[str]:
    """Every module name `path` imports, at any depth (lazy imports inside functions count)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
        elif isinstance(node, ast.ImportFrom) and node.level > 1:
            raise AssertionError(f"{path}: imports from a parent package; write runner.<stage>... so the stage shows")
    return names


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_module_imports_a_higher_stage(path):
    mine = stage(path)
    assert mine in ALLOWED, f"{path}: unknown stage {mine!r}; add it to ALLOWED and to runner/__init__.py"
    used = {name.split(".")[1] for name in imported(path) if name.startswith("runner.")} - {mine}
    assert used <= ALLOWED[mine], f"{path} ({mine}) imports {sorted(used - ALLOWED[mine])}"


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_only_execution_talks_to_docker(path):
    if stage(path) != "execution":
        assert not {n for n in imported(path) if n == "docker" or n.startswith("docker.")}, path


def test_each_stage_says_what_it_knows():
    for package in sorted(p for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()):
        doc = ast.get_docstring(ast.parse((package / "__init__.py").read_text())) or ""
        assert package.name == "cli" or "Must not import" in doc, f"{package.name}: say what it may and may not import"


RECORDS = ("model", "phase_model", "submission_model", "result_model")  # the tree's record declarations, in order


@pytest.mark.parametrize("name", RECORDS)
def test_records_are_declared_below_their_loaders(name):
    """`loading` reads files into the records, so no record module imports it, nor a record module after it."""
    used = {n for n in imported(PACKAGE / "tree" / f"{name}.py") if n.startswith("runner.tree.")}
    later = {f"runner.tree.{other}" for other in ("loading", *RECORDS[RECORDS.index(name) + 1:])}
    assert not used & later, f"runner/tree/{name}.py imports {sorted(used & later)}"
