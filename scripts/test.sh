#!/usr/bin/env bash
# Sets up a virtual environment (.venv) with the package and its dev and bench extras (the
# bench extra lets the paper-reproduction smoke tests run instead of skipping), then runs the tests.
# Usage: bash scripts/test.sh [pytest args...]
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e ".[dev,bench]"
exec .venv/bin/python -m pytest -q "$@"
