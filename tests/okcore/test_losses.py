"""The square loss in the output feature space (paper section 2.3)."""

from __future__ import annotations

import numpy as np

from okcore.losses import SquaredFeatureLoss


def test_squared_feature_loss():
    rng = np.random.default_rng(0)
    phi, F = rng.normal(size=(6, 4)), rng.normal(size=(6, 4))
    loss = SquaredFeatureLoss()
    assert loss.name == "squared"
    np.testing.assert_allclose(loss.init_estimate(phi), phi.mean(axis=0), rtol=1e-14)
    np.testing.assert_array_equal(loss.negative_gradient(phi, F), phi - F)
    # k(y, y) = ||phi(y)||^2 for an exact factor: the loss is the mean squared distance
    value = loss(phi, np.sum(phi**2, axis=1), F)
    assert isinstance(value, float)
    np.testing.assert_allclose(value, np.mean(np.sum((phi - F) ** 2, axis=1)), rtol=1e-12)
    # k(y, y) from the kernel counts what the factor misses: a larger diag adds to the loss
    np.testing.assert_allclose(loss(phi, np.sum(phi**2, axis=1) + 0.5, F), value + 0.5, rtol=1e-12)
