#!/usr/bin/env bash
# Makes (or updates) the development environment .venv: the package with its dev, bench and
# dask extras (the bench extra lets the paper-reproduction smoke tests run instead of
# skipping; the dask one, the tests on a real Dask cluster).
# Used by scripts/test.sh and scripts/lint.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e ".[dev,bench,dask]"
