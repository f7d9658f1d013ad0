"""Imported once by the training fork server (see service.jobs.process): load okcore and its
compiled numba kernels there, so that every training process forked from it starts warm
instead of loading the kernels from the on-disk cache again (~0.7 s a job)."""

from __future__ import annotations

import numpy as np

import okcore
import service.training.fit  # noqa: F401 - what the children unpickle their task from


def _warm_up() -> None:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(12, 2))
    Y = rng.normal(size=(12, 2))
    edges = [[i, i + 1] for i in range(11)]
    for est in (
        okcore.OKBoostRegressor(n_estimators=2, max_splits=2),
        okcore.OKBoostRegressor(n_estimators=2, max_splits=2, splitter="random", random_state=0),
        okcore.OK3ForestRegressor(n_estimators=2, max_splits=2, random_state=0),
    ):
        est.fit(X, kernel={"type": "diffusion", "beta": 1.0, "edges": edges})
        est.fit(X, Y, kernel={"type": "rbf", "gamma": 0.5})
    okcore.OK3Regressor(max_splits=2).fit(X, Y)


try:
    _warm_up()
except Exception:  # noqa: BLE001 - a warm-up must never stop the service; jobs still run cold
    pass
