"""Fixtures for the okcore unit tests: small data from okdata.py."""

from __future__ import annotations

import numpy as np
import pytest
from okdata import make_regression


@pytest.fixture
def data() -> tuple[np.ndarray, np.ndarray]:
    """X (40, 4), Y (40, 3)."""
    return make_regression()
