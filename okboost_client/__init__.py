"""Python client of the okboost REST service; needs only httpx and numpy.

>>> from okboost_client import OKBoostClient, OKBoostError
"""

from __future__ import annotations

from okboost_client.client import OKBoostClient, OKBoostError

__all__ = ["OKBoostClient", "OKBoostError"]
