#!/usr/bin/env bash
# Makes (or updates) the development environment .venv: the package with its dev, bench,
# dask and docs extras (the bench extra lets the paper-reproduction smoke tests run instead of
# skipping; the dask one, the tests on a real Dask cluster; docs, scripts/docs.sh).
# Used by scripts/test.sh, scripts/lint.sh and scripts/docs.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e ".[dev,bench,dask,docs]"
