"""Output kernels are one table (service.schemas.api.OUTPUT_KERNEL_SPECS): the request
schema, the multipart parts, the okcore fit arguments and the record's summary all come
from each spec class, so a new kernel is one class listed there."""

from __future__ import annotations

import numpy as np
import pytest

import okcore
from service.schemas.api import OUTPUT_KERNEL_PARTS, OUTPUT_KERNEL_SPECS, TrainRequest

Y = [[0.0, 1.0], [1.0, 0.0], [1.0, 1.0]]
SPECS = {
    "precomputed": {"type": "precomputed", "gram": np.eye(3).tolist()},
    "linear": {"type": "linear", "outputs": Y},
    "rbf": {"type": "rbf", "outputs": Y, "gamma": 0.5},
    "polynomial": {"type": "polynomial", "outputs": Y},
    "diffusion": {"type": "diffusion", "edges": [[0, 1], [1, 2]]},
}


def test_the_request_schema_takes_exactly_the_table() -> None:
    schema = TrainRequest.model_json_schema()["properties"]["output_kernel"]
    mapping = schema["discriminator"]["mapping"]
    assert set(mapping) == set(SPECS)
    assert {ref.rsplit("/", 1)[1] for ref in mapping.values()} == {
        spec.__name__ for spec in OUTPUT_KERNEL_SPECS
    }
    assert OUTPUT_KERNEL_PARTS == (
        "output_kernel.gram",
        "output_kernel.outputs",
        "output_kernel.edges",
    )


@pytest.mark.parametrize("kind", sorted(SPECS))
def test_each_spec_gives_okcore_its_fit_and_the_record_its_summary(kind: str) -> None:
    req = TrainRequest.model_validate(
        {"inputs": [[0.0], [1.0], [2.0]], "output_kernel": SPECS[kind]}
    )
    spec = req.output_kernel
    kwargs = spec.fit_kwargs()
    if "kernel" in kwargs:
        okcore.make_kernel(kwargs["kernel"])  # okcore takes it
    assert spec.summary()["type"] == kind
    assert all(isinstance(a, np.ndarray) for a in spec.arrays())
    assert (spec.outputs_array() is not None) == (kind in ("linear", "rbf", "polynomial"))
    assert (spec.graph_edges() is not None) == (kind == "diffusion")
