#!/usr/bin/env bash
# Sets up .venv with the package (pip runs only the first time and when pyproject.toml
# changed: scripts/dev_env.sh) and starts the service on 127.0.0.1:8000 with the store in ./models.
# Usage: bash scripts/serve.sh [okboost serve options, e.g. --port 9000 --model-dir /data/models]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/dev_env.sh
exec .venv/bin/okboost serve "$@"
