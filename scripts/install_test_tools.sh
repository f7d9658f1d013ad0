#!/usr/bin/env bash
# Installs, from Debian's packages, the programs that some tests drive and that pip cannot
# install: chromium (tests/e2e/test_docs_browser.py), node >= 18 (clients/js) and R with
# httr2, jsonlite and testthat (clients/r). Only what is missing is installed, quietly and
# without questions; needs root (or sudo). .ci/run calls it before scripts/test.sh.
set -euo pipefail

need=()
command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || need+=(chromium)
command -v node >/dev/null 2>&1 || need+=(nodejs)
command -v Rscript >/dev/null 2>&1 || need+=(r-base-core)
for pkg in httr2 jsonlite testthat; do
    Rscript -e "quit(status = !requireNamespace('$pkg', quietly = TRUE))" >/dev/null 2>&1 ||
        need+=("r-cran-$pkg")
done

if [ ${#need[@]} -eq 0 ]; then
    echo "test tools: chromium, node and R with httr2, jsonlite, testthat are installed"
    exit 0
fi

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
start=$SECONDS
echo "test tools: installing Debian packages ${need[*]}"
$sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq
$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    "${need[@]}" >/dev/null
echo "test tools: installed in $((SECONDS - start)) s"
