"""evalkit works as a lone folder copied into an evaluation image, importing no image package up front."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

EVALKIT = Path(__file__).resolve().parents[2] / "runner" / "evalkit"

SCRIPT = """
import sys
import evalkit
loaded = set(sys.modules)
assert not {m for m in loaded if m == "runner" or m.startswith("runner.")}, "imported runner"
assert not loaded & {"SimpleITK", "nibabel", "sklearn"}, "imported an optional package eagerly"
evalkit.write_metrics({"c": {"dsc": evalkit.dice([[1, 0]], [[1, 1]])}}, "metrics.json")
print(open("metrics.json").read().count("dsc"))
"""


def test_copied_folder_imports_alone(tmp_path):
    shutil.copytree(EVALKIT, tmp_path / "evalkit", ignore=shutil.ignore_patterns("__pycache__"))
    result = subprocess.run(
        [sys.executable, "-I", "-c", f"import sys; sys.path.insert(0, {str(tmp_path)!r})\n{SCRIPT}"],
        cwd=tmp_path, capture_output=True, text=True, check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "2"  # the case value and the aggregate


def test_only_relative_imports_within_the_package():
    for path in EVALKIT.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 0:
                assert not (node.module or "").startswith("runner"), f"{path.name} imports {node.module}"
            if isinstance(node, ast.Import):
                assert not any(a.name.startswith("runner") for a in node.names), path.name
