"""The client's tests run it against the app in process (httpx transport of a TestClient)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "service"))  # svc_data helpers
