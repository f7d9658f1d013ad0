"""okcore.estimator_parameter_schema: the JSON Schema of every parameter accepts exactly the
JSON values that the estimator's own checks accept (so an API schema built on it cannot
drift from what fit does). One difference JSON Schema cannot express: it counts 1.0 as an
integer, where okcore (Python) refuses 1.0 for an int parameter; integral floats are
therefore only probed on parameters without an integer branch."""

from __future__ import annotations

import pytest

import okcore
from okcore import ESTIMATORS, estimator_parameter_schema, make_estimator
from okcore.exceptions import InvalidParameterError

jsonschema = pytest.importorskip("jsonschema")

#: JSON values to try on every parameter: each kind, both sides of every bound in use.
PROBES = [
    None, True, False, -1, 0, 1, 2, 3, 254, 255, 256, 2**32 - 1, 2**32,
    -0.5, 0.0, 1e-12, 0.5, 0.9, 1.0, 1.5, 2.0, 10.0,
    "auto", "best", "random", "sqrt", "log2", "variance", "gain",
    "squared", "absolute", "huber", "lad", "", [1], {"a": 1},
]  # fmt: skip


def _okcore_accepts(name: str, param: str, value: object) -> bool:
    try:
        make_estimator(name, {param: value})
    except InvalidParameterError:
        return False
    return True


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_the_schema_names_every_parameter_with_its_default(name):
    schema = estimator_parameter_schema(name)
    defaults = okcore.estimator_parameters(name)
    assert list(schema) == list(defaults)
    for param, prop in schema.items():
        assert prop["default"] == defaults[param], param
        assert prop["description"].endswith("."), param


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_the_schema_accepts_what_the_estimator_accepts(name):
    for param, prop in estimator_parameter_schema(name).items():
        validator = jsonschema.Draft202012Validator(prop)
        has_int = "integer" in str(prop)
        for value in PROBES:
            if has_int and isinstance(value, float) and value.is_integer():
                continue
            in_schema = validator.is_valid(value)
            assert in_schema == _okcore_accepts(name, param, value), (param, value, prop)
