#!/usr/bin/env bash
# Sets everything up, then checks the code and runs the whole test suite (what CI runs):
# ruff over everything, mypy --strict over the whole package, then pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/ruff check runner tests benchmarks
.venv/bin/mypy --strict runner
exec .venv/bin/python -m pytest "$@"
