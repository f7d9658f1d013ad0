#!/usr/bin/env bash
# Lint and type checks that CI runs before the tests: ruff (rules and formatting) on the
# whole tree, mypy on okcore and service (configured in pyproject.toml).
# Usage: bash scripts/lint.sh
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/dev_env.sh dev,bench,dask
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/mypy okcore service
