#!/usr/bin/env bash
# Sets everything up, then checks the code and runs the whole test suite (what CI runs):
# ruff over everything, mypy --strict over the stages every other one reads (errors, tree, ranking)
# and the evaluation kit, then pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/ruff check runner tests benchmarks
.venv/bin/mypy --strict runner/errors.py runner/codekey.py runner/tree runner/ranking runner/evalkit
exec .venv/bin/python -m pytest "$@"
