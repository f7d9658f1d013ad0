#!/usr/bin/env bash
# Fuzzes a live service through its OpenAPI schema with schemathesis: every
# operation, schema-valid and invalid requests, stateful sequences (train -> job -> model).
# schemathesis goes into its own virtual environment (.venv-schemathesis, ~50 s and ~30
# packages the first time) so the test install stays lean; the service runs from .venv
# (make it with `bash scripts/test.sh`; SERVER_PYTHON=/path/to/python runs it from another
# environment) on a free port with a temporary model store.
#
# Usage: bash scripts/schemathesis.sh [schemathesis run options, e.g. --max-examples 500]
#        CHECKS=all bash scripts/schemathesis.sh
#
# The checks: every one schemathesis has except two whose premise this API does not share
# (CHECKS=all runs them too; docs/API.md, "Fuzzing the API", has the counts of both runs):
# positive_data_acceptance (a multipart array part must be a .npy file, raw values with
# a shape part or a table, which a JSON Schema's "binary string" cannot say; the JSON
# bodies' cross-field rules are in the schema) and use_after_free (DELETE /jobs/{id}
# cancels a job; its record stays readable).
set -euo pipefail
cd "$(dirname "$0")/.."
SERVER_PY="${SERVER_PYTHON:-.venv/bin/python}"  # the interpreter that runs the service
[ -x "$SERVER_PY" ] || { echo "no .venv: run 'bash scripts/test.sh' first" >&2; exit 1; }
PY="${PYTHON:-python3}"
if [ ! -x .venv-schemathesis/bin/schemathesis ]; then
  "$PY" -m venv .venv-schemathesis
  .venv-schemathesis/bin/python -m pip install --quiet "schemathesis>=4.30,<5"
fi
CHECKS="${CHECKS:-not_a_server_error,status_code_conformance,content_type_conformance,response_headers_conformance,response_schema_conformance,negative_data_rejection,missing_required_header,unsupported_method,allow_header_conformance,ensure_resource_availability}"

work="$(mktemp -d)"
port="$("$SERVER_PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
OKBOOST_LOG_LEVEL=warning "$SERVER_PY" -m service.cli serve --port "$port" --model-dir "$work/models" \
  >"$work/server.log" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null; wait "$server" 2>/dev/null || true; rm -rf "$work"' EXIT
for _ in $(seq 300); do
  curl -fsS "http://127.0.0.1:$port/health/live" >/dev/null 2>&1 && break
  sleep 0.2
done

# --request-timeout: POST /train with "wait": true answers when its model is trained (a
# training process starts first), longer than schemathesis's 10 s default on a loaded machine.
# /models/import takes a .tar.gz upload, which schemathesis cannot generate (tests/service/test_archive.py covers it)
status=0
.venv-schemathesis/bin/schemathesis run "http://127.0.0.1:$port/openapi.json" \
  --checks "$CHECKS" --exclude-path /models/import \
  --seed 1 --max-examples 200 --workers 2 --request-timeout 120 --no-color "$@" || status=$?
if grep -q "Traceback" "$work/server.log"; then
  echo "the server logged a traceback:" >&2
  cat "$work/server.log" >&2
  exit 1
fi
exit "$status"
