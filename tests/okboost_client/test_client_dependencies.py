"""The Python client stands apart from the server: importing it loads httpx and numpy only."""

from __future__ import annotations

import subprocess
import sys

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
