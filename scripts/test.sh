#!/usr/bin/env bash
# Sets up a virtual environment (.venv) with the package and its dev and bench extras (the
# bench extra lets the paper-reproduction smoke tests run instead of skipping), then runs the tests.
# Usage: bash scripts/test.sh [pytest args...]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/dev_env.sh
exec .venv/bin/python -m pytest -q "$@"
