"""Warnings about degenerate training data: graphs (okcore.graph) and sizes (model_selection)."""

from __future__ import annotations

import numpy as np

from okcore import graph, model_selection


def test_a_clean_graph_has_no_warnings() -> None:
    ring = np.array([[i, (i + 1) % 6] for i in range(6)])
    assert graph.graph_warnings(ring, 6) == []


def test_each_degenerate_graph_is_named() -> None:
    assert "no edges" in graph.graph_warnings(np.zeros((0, 2), dtype=int), 4)[0]
    edges = np.array([[0, 1], [1, 0], [0, 1], [2, 2], [1, 2]])
    warnings = graph.graph_warnings(edges, 6)
    assert len(warnings) == 3
    assert warnings[0].startswith("1 self-loops (the first: edge 3, vertex 2)")
    assert warnings[1].startswith("2 duplicate edges")
    assert warnings[2].startswith("3 of 6 training vertices have no edge (the first: 3, 4, 5)")


def test_training_warnings_for_tiny_sets_and_folds() -> None:
    assert model_selection.training_warnings(200, 5) == []
    tiny = model_selection.training_warnings(5, 5)
    assert len(tiny) == 2 and tiny[0].startswith("only 5 training rows")
    assert "5-fold CV of 5 rows tests each fold on 1 to 1 rows" in tiny[1]
    assert model_selection.training_warnings(40, 10)[0].startswith("10-fold CV of 40 rows")
    assert model_selection.training_warnings(40) == []
