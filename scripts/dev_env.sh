#!/usr/bin/env bash
# Makes (or updates) the virtual environment .venv with the package, editable, and the given
# extras: bash scripts/dev_env.sh [EXTRA,EXTRA...] (none: the package alone).
#   scripts/test.sh, scripts/lint.sh  dev,bench,dask (bench lets the paper-reproduction smoke
#                                     tests run instead of skipping; dask, the tests on a real
#                                     Dask cluster)
#   scripts/docs.sh                   docs
#   scripts/serve.sh                  the package alone
# pip runs only when something it reads changed: a stamp in .venv holds the hash of
# pyproject.toml, the extras and the interpreter, and pip runs when the hash differs. The
# install is editable, so a change to the code needs none; OKBOOST_REINSTALL=1 forces one.
set -euo pipefail
cd "$(dirname "$0")/.."
extras="${1:-}"
PY="${PYTHON:-python3}"
[ -x .venv/bin/python ] || "$PY" -m venv .venv
target="."
[ -z "$extras" ] || target=".[$extras]"
stamp=".venv/okboost-install-${extras:-package}.sha256"
hash="$(.venv/bin/python -c '
import hashlib, pathlib, sys
text = pathlib.Path("pyproject.toml").read_bytes() + sys.argv[1].encode() + sys.version.encode()
print(hashlib.sha256(text).hexdigest())' "$target")"
if [ "${OKBOOST_REINSTALL:-0}" != 1 ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$hash" ]; then
    exit 0
fi
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e "$target"
echo "$hash" >"$stamp"
