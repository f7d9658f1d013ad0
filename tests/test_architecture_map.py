"""docs/ARCHITECTURE.md names every module of okcore/ and service/, so the map cannot go stale
when a module is added: a module is named by its path inside its package in backquotes
(`trees/oblivious.py`, `schemas/records.py`), a sub-package by its folder (`trees/`), in the
package's section or, for service's folders, in its folder's row (`inference/` ...
`predict.py`)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAP = ROOT / "docs" / "ARCHITECTURE.md"


def _section(text: str, package: str) -> str:
    """The text of ``## package`` up to the next level-2 heading."""
    match = re.search(rf"^## {package}\n(.*?)(?=^## )", text, flags=re.MULTILINE | re.DOTALL)
    assert match, f"docs/ARCHITECTURE.md has no '## {package}' section"
    return match.group(1)


def _named(section: str, relative: Path) -> bool:
    """Whether ``relative`` (a module inside its package) is named in ``section``: its path
    in backquotes, or its file name in backquotes on the row of its folder."""
    if relative.name == "__init__.py":
        wanted = f"`{relative.parent.as_posix()}/`" if relative.parent.parts else "`__init__.py`"
        return wanted in section
    if f"`{relative.as_posix()}`" in section:
        return True
    folder = relative.parent.as_posix()
    rows = [line for line in section.splitlines() if line.startswith(f"| `{folder}/`")]
    return bool(folder) and any(f"`{relative.name}`" in row for row in rows)


def test_every_module_is_named_in_the_architecture_map() -> None:
    text = MAP.read_text(encoding="utf-8")
    missing = []
    for package in ("okcore", "service"):
        section = _section(text, package)
        for path in sorted((ROOT / package).rglob("*.py")):
            relative = path.relative_to(ROOT / package)
            if not _named(section, relative):
                missing.append(f"{package}/{relative.as_posix()}")
    assert not missing, (
        "docs/ARCHITECTURE.md does not name these modules (add one line each on its job, "
        "in the okcore or service table): " + ", ".join(missing)
    )
