"""Programs outside Python that some tests drive (chromium, node, Rscript).

Without the program a test skips with a one-line reason; under CI (``CI=true``, where
``.ci/run`` installs them) it fails instead, so a broken install cannot pass as a skip.
"""

from __future__ import annotations

import os
import shutil

import pytest


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def require_tool(*names: str, install: str) -> str:
    """The path of the first of ``names`` on PATH, else skip (fail under CI) naming ``install``."""
    for name in names:
        path = shutil.which(name)
        if path is not None:
            return path
    reason = f"{names[0]} is not installed ({install})"
    if in_ci():
        pytest.fail(f"{reason}; .ci/run should have installed it")
    pytest.skip(reason)
