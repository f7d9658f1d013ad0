"""Fail when the built documentation site would load anything from another host.

Looks at what a browser fetches by itself when it shows a page: ``<link href>``,
``<script src>``, ``<img src>``, ``<iframe src>`` and ``<source src>`` in the HTML, and
``@import`` / ``url(...)`` in inline styles and the site's CSS files. Links a reader may
click (``<a href>``) are not fetches and are not checked.
Usage: python scripts/check_site_offline.py SITE_DIR
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

FETCHED_ATTRIBUTE = re.compile(
    r"<(?:link|script|img|iframe|source|audio|video)\b[^>]*?\b(?:href|src)\s*=\s*[\"']?((?:https?:)?//[^\"' >]+)",
    re.IGNORECASE,
)
CSS_FETCH = re.compile(
    r"(?:@import\s+(?:url\()?|url\()\s*[\"']?((?:https?:)?//[^\"') ;]+)", re.IGNORECASE
)


def remote_fetches(site: Path) -> list[str]:
    """``path: url`` for every fetch of another host found in the site's HTML and CSS."""
    found = []
    for path in sorted(site.rglob("*")):
        if path.suffix not in {".html", ".css"}:
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        patterns = [CSS_FETCH] if path.suffix == ".css" else [FETCHED_ATTRIBUTE, CSS_FETCH]
        for pattern in patterns:
            found += [f"{path.relative_to(site)}: {m.group(1)}" for m in pattern.finditer(text)]
    return found


def main(argv: list[str]) -> int:
    site = Path(argv[1] if len(argv) > 1 else "site")
    if not (site / "index.html").is_file():
        print(f"{site}/index.html not found: build the site first (bash scripts/docs.sh)")
        return 2
    found = remote_fetches(site)
    for line in found:
        print(f"fetches from another host: {line}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
