#!/usr/bin/env bash
# Sets everything up, then runs the demo: example challenges evaluated for real in Docker, the
# site built and served on http://127.0.0.1:8000 (pass --no-serve to stop after the build).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/challenge demo "$@"
