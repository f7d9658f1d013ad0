"""The API reference pages (docs/reference/) have an entry for every public name of okcore
and of the Python client, so a name added to ``__all__`` cannot go undocumented."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import okboost_client
import okcore

REFERENCE = Path(__file__).resolve().parents[1] / "docs" / "reference"


@pytest.mark.parametrize(
    ("module", "page"),
    [(okcore, "okcore.md"), (okboost_client, "client.md")],
    ids=["okcore", "client"],
)
def test_every_public_name_has_a_reference_entry(module: object, page: str) -> None:
    text = (REFERENCE / page).read_text(encoding="utf-8")
    name = module.__name__  # type: ignore[attr-defined]
    entries = set(re.findall(rf"^::: {name}\.(\w+)$", text, flags=re.MULTILINE))
    public = {n for n in module.__all__ if n != "__version__"}  # type: ignore[attr-defined]
    assert public - entries == set(), f"docs/reference/{page} lacks entries for these names"
    assert entries - public == set(), f"docs/reference/{page} documents names not in __all__"
