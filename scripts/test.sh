#!/usr/bin/env bash
# Sets up a virtual environment (.venv, scripts/dev_env.sh), then runs the tests.
#
#   bash scripts/test.sh [pytest args...]        the fast tier: every test but those marked
#                                                server, browser, clients, bench or slow
#                                                (pyproject.toml lists the markers)
#   bash scripts/test.sh --all [pytest args...]  every test, in parallel processes (what CI
#                                                runs; OKBOOST_TEST_WORKERS, default 2)
#
# Extra arguments go to pytest after the tier's, e.g. `bash scripts/test.sh tests/okcore -x`;
# a `-m` among them replaces the tier's marker expression. In the fast tier, arguments that
# select only tests of the slow tiers are not an error: the script says so and exits 0.
set -euo pipefail
cd "$(dirname "$0")/.."
FAST="not (server or browser or clients or bench or slow)"
tier=fast
if [ "${1:-}" = "--all" ]; then
    tier=all
    shift
fi
bash scripts/dev_env.sh dev,bench,dask
if [ "$tier" = all ]; then
    # --dist loadgroup: tests marked with one xdist_group run in one process (tests/conftest.py)
    args=(-n "${OKBOOST_TEST_WORKERS:-2}" --dist loadgroup)
else
    args=(-m "$FAST")
fi
status=0
.venv/bin/python -m pytest -q "${args[@]}" "$@" || status=$?
if [ "$status" -eq 5 ] && [ "$tier" = fast ]; then  # pytest: no test collected or selected
    echo "no test of the fast tier was selected: run them with bash scripts/test.sh --all ..."
    exit 0
fi
exit "$status"
