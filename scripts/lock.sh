#!/usr/bin/env bash
# Upgrades the locks on purpose: resolves every dependency again at today's newest versions allowed
# by pyproject.toml, writes requirements/test.lock (the suite's environment) and
# requirements/runtime.lock (workflows and runner hosts: the same versions, without the test tools),
# then installs them and runs the whole suite. Commit the locks only if it passes.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/uv ] || bash scripts/setup.sh
compile=(.venv/bin/uv pip compile --quiet --universal --python-version 3.11 --generate-hashes --no-header
         --upgrade requirements/build.in pyproject.toml)
"${compile[@]}" --extra test -o requirements/test.lock
"${compile[@]}" --constraint requirements/test.lock -o requirements/runtime.lock
bash scripts/test.sh "$@"
