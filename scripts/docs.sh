#!/usr/bin/env bash
# Builds the documentation site from docs/ into site/ (MkDocs, the material theme, the API
# reference from the docstrings by mkdocstrings) with --strict: a broken link, a missing
# anchor or page, or an unresolved API reference fails the build. Everything is local: no
# web fonts, MathJax served from the site, and scripts/check_site_offline.py fails the build
# if a page would load a script, style, font or image from another host.
# Usage: bash scripts/docs.sh [mkdocs build options]; open site/index.html in a browser.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/dev_env.sh docs  # the docs extra alone: no peer libraries, no test tools
export NO_MKDOCS_2_WARNING=1  # the theme's notice about its successor, not a problem of these docs
PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" .venv/bin/mkdocs build --strict --quiet "$@"
.venv/bin/python scripts/check_site_offline.py site
