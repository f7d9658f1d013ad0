"""The results files the documentation names are in the tree: a run archived out of
bench/results (see bench/results/README.md) is not quoted by any page."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "bench" / "results"
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
# bench/results/<name> with an optional {a,b} alternation; names with * or <...> are patterns
NAMED = re.compile(r"bench/results/([A-Za-z0-9_.{},\-]+[A-Za-z0-9}])")


def _expand(name: str) -> list[str]:
    """``a_{x,y}.txt`` -> ``a_x.txt``, ``a_y.txt`` (every alternation, in order)."""
    parts = re.split(r"\{([^}]*)\}", name)
    choices = [[p] if i % 2 == 0 else p.split(",") for i, p in enumerate(parts)]
    return ["".join(c) for c in itertools.product(*choices)]


def _exists(name: str) -> bool:
    """The file is there; ``foldF`` (any fold) needs one fold's file."""
    folds = [name.replace("foldF", f"fold{k}") for k in range(10)] if "foldF" in name else [name]
    return any((RESULTS / n).exists() for n in folds)


def test_every_results_file_a_page_names_exists() -> None:
    missing = []
    for page in PAGES:
        for match in NAMED.finditer(page.read_text()):
            name = match.group(1)
            if name.endswith("}") or "." not in name:  # an alternation of suffixes, a folder
                continue
            missing += [f"{page.name}: bench/results/{n}" for n in _expand(name) if not _exists(n)]
    assert not missing, "named by the docs but not in bench/results:\n" + "\n".join(missing)


def test_expand_alternations() -> None:
    assert _expand("a_{x,y}_b.txt") == ["a_x_b.txt", "a_y_b.txt"]
    assert _expand("plain.json") == ["plain.json"]
