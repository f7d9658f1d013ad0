"""The Python client stands apart from the server: importing it loads httpx and numpy only;
pandas is an optional extra, named where the docs use it."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

SERVER_SIDE = ("service", "okcore", "fastapi", "starlette", "pydantic", "scipy", "numba")


def test_importing_the_client_loads_no_server_package() -> None:
    code = (
        "import sys, okboost_client\n"
        f"print(sorted({{m.split('.')[0] for m in sys.modules}} & set({SERVER_SIDE!r})))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]", out


def test_the_client_never_imports_pandas() -> None:
    """DataFrames are recognised by their type's module: pandas stays an optional extra."""
    code = "import sys, okboost_client\nprint('pandas' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_every_python_example_that_uses_pandas_names_the_extra() -> None:
    """pandas is the `pandas` extra; each docs page whose Python example imports it says
    how to install it, and the extra is declared."""
    root = Path(__file__).resolve().parents[2]
    project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    extra = project["project"]["optional-dependencies"]["pandas"]
    assert any(req.startswith("pandas") for req in extra)
    pages = [p for p in sorted((root / "docs").glob("*.md")) if "import pandas" in p.read_text()]
    assert pages
    for page in pages:
        assert 'pip install "okboost[pandas]"' in page.read_text(encoding="utf-8"), page.name


def test_every_argument_of_every_client_method_is_documented() -> None:
    """docs/clients.md has a row per method of the Python client naming each argument."""
    import inspect

    from okboost_client import OKBoostClient

    root = Path(__file__).resolve().parents[2]
    text = (root / "docs" / "clients.md").read_text(encoding="utf-8")
    section = text.split("## Every method and its arguments", 1)[1].split("\n## ", 1)[0]
    rows = {line.split("`", 2)[1]: line for line in section.splitlines() if line.startswith("| `")}
    connecting = section.split("**Connecting.**", 1)[1].split("\n\n", 1)[0]
    for name in inspect.signature(OKBoostClient.__init__).parameters:
        assert name == "self" or f"`{name}" in connecting, name
    for name, method in inspect.getmembers(OKBoostClient, inspect.isfunction):
        if name.startswith("_") or name == "close":
            continue
        assert name in rows, f"{name} has no row in docs/clients.md"
        for arg in inspect.signature(method).parameters:
            assert arg == "self" or f"`{arg}`" in rows[name], (name, arg)
