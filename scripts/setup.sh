#!/usr/bin/env bash
# Installs what the project needs on a fresh Debian machine with Docker: system tools (when root),
# then a virtual environment in .venv with the package and its test dependencies, from the lock.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v debootstrap >/dev/null || need+=(debootstrap)   # offline Python base image when no registry answers
command -v chromium >/dev/null || need+=(chromium)         # the site opened in a real browser (tests/test_browser.py)
command -v chromedriver >/dev/null || need+=(chromium-driver)
command -v ssh-keygen >/dev/null || need+=(openssh-client)    # stock OpenSSH checks the runner's result signatures (tests)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    echo "installing system packages: ${need[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
  else
    echo "note: missing ${need[*]}; install them (or set CHALLENGE_BASE_IMAGE to a Python image you have)" >&2
  fi
fi

if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
# Exactly the versions the suite passed with, each checked against its hash (scripts/lock.sh upgrades
# them on purpose): a release made tomorrow changes nothing here until someone locks it.
.venv/bin/python -m pip install -q --disable-pip-version-check --require-hashes --no-deps -r requirements/test.lock
.venv/bin/python -m pip install -q --disable-pip-version-check --no-deps --no-build-isolation -e .
