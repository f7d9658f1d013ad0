#!/usr/bin/env bash
# Sets up .venv with the package and starts the service on 127.0.0.1:8000 with the store in ./models.
# Usage: bash scripts/serve.sh [okboost serve options, e.g. --port 9000 --model-dir /data/models]
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e .
exec .venv/bin/okboost serve "$@"
