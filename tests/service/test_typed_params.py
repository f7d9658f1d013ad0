"""The OpenAPI schema of POST /train types `params` per model, from okcore: every parameter of
every estimator's __init__, with its default and range; validation stays okcore's (the same
422 messages, JSON or multipart)."""

from __future__ import annotations

import inspect
import io
import json
from typing import Any, get_args

import numpy as np
import pytest
from svc_data import TestClient

import okcore
from service.schemas.params import PARAM_MODELS, ModelName

jsonschema = pytest.importorskip("jsonschema")

#: The schema component of each model /train fits (OKBoostRegressor -> OKBoostParams ...).
COMPONENT = {
    name: okcore.estimator_class(name).__name__.removesuffix("Regressor") + "Params"
    for name in get_args(ModelName)
}


@pytest.fixture
def spec(client: TestClient) -> dict[str, Any]:
    schema: dict[str, Any] = client.get("/openapi.json").json()
    return schema


def _init_parameters(name: str) -> dict[str, Any]:
    """The estimator's __init__ keywords and defaults, read from its signature here."""
    signature = inspect.signature(okcore.estimator_class(name).__init__)
    return {p.name: p.default for p in signature.parameters.values() if p.name != "self"}


@pytest.mark.parametrize("name", sorted(COMPONENT))
def test_the_schema_lists_every_okcore_parameter_of_each_model(
    spec: dict[str, Any], name: str
) -> None:
    schema = spec["components"]["schemas"][COMPONENT[name]]
    parameters = _init_parameters(name)
    assert set(schema["properties"]) == set(parameters)
    assert schema["additionalProperties"] is False
    for param, default in parameters.items():
        prop = schema["properties"][param]
        assert prop["default"] == default, param
        assert prop["description"] and ("type" in prop or "anyOf" in prop or "enum" in prop)
    assert set(PARAM_MODELS) == set(COMPONENT)
    assert {"OKBoostParams", "OK3Params", "OK3ForestParams"} <= set(COMPONENT.values())


def test_ranges_come_from_okcore(spec: dict[str, Any]) -> None:
    props = spec["components"]["schemas"]["OKBoostParams"]["properties"]
    assert props["learning_rate"]["exclusiveMinimum"] == 0.0
    assert props["learning_rate"]["maximum"] == 1.0
    assert {"type": "integer", "minimum": 1} in props["n_estimators"]["anyOf"]
    assert {"enum": ["auto"]} in props["n_estimators"]["anyOf"]
    assert props["n_estimators"]["default"] == "auto"
    assert props["loss"]["enum"] == ["squared", "absolute", "huber"]
    assert {"type": "null"} in props["max_depth"]["anyOf"]


def _validator(spec: dict[str, Any]) -> Any:
    root = {"$ref": "#/components/schemas/TrainRequest", "components": spec["components"]}
    return jsonschema.Draft202012Validator(root)


def test_the_train_schema_ties_params_to_the_model(spec: dict[str, Any]) -> None:
    validator = _validator(spec)
    body = {"inputs": [[0.0]], "output_kernel": {"type": "linear", "outputs": [[1.0]]}}
    # no model: auto, or okboost for okboost's params
    assert validator.is_valid({**body, "params": {"learning_rate": 0.1}})
    assert validator.is_valid({**body, "params": {"max_cpu_seconds": 30.0}})
    assert validator.is_valid({**body, "model": "ok3", "params": {"max_splits": 2}})
    assert not validator.is_valid({**body, "model": "ok3", "params": {"learning_rate": 0.1}})
    assert validator.is_valid({**body, "model": "ok3-forest", "params": {"bootstrap": False}})
    assert not validator.is_valid({**body, "params": {"bootstrap": False}})
    assert not validator.is_valid({**body, "params": {"max_splits": 0}})
    assert not validator.is_valid({**body, "params": {"n_trees": 5}})
    example = spec["components"]["schemas"]["TrainRequest"]["examples"][0]
    assert validator.is_valid(example)
    for name in COMPONENT:
        params = spec["components"]["schemas"][COMPONENT[name]]["examples"][0]
        assert validator.is_valid({**body, "model": name, "params": params}), name


def _npy(array: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, array)
    return buf.getvalue()


def test_bad_params_in_a_multipart_request_are_okcores_422(client: TestClient) -> None:
    body = {"output_kernel": {"type": "linear", "outputs": [[0.0], [1.0], [2.0]]}}
    for params, code, message in [
        ({"max_splits": 0}, "invalid_parameter", "The 'max_splits' parameter of OKBoostRegressor"),
        ({"n_trees": 5}, "invalid_data", "unknown parameter 'n_trees' for model 'okboost'"),
        ({"warm_start": True}, "invalid_data", "every /train job fits a new model"),
        ([1, 2], "invalid_data", "params must be an object"),
    ]:
        r = client.post(
            "/train",
            data={"json": json.dumps({**body, "params": params})},
            files={"inputs": ("x.npy", _npy(np.array([[0.0], [1.0], [2.0]])))},
        )
        assert r.status_code == 422, r.text
        error = r.json()["error"]
        assert error["code"] == code and message in error["message"], error


KERNEL_SPECS = {"rbf": "RBFKernelSpec", "polynomial": "PolynomialKernelSpec"}
KERNEL_SPECS["diffusion"] = "DiffusionKernelSpec"
RANGE_KEYS = ("type", "minimum", "exclusiveMinimum", "maximum", "default")


@pytest.mark.parametrize("kind", sorted(KERNEL_SPECS))
def test_the_kernel_specs_are_okcores(spec: dict[str, Any], kind: str) -> None:
    """Each output kernel's parameters in the request schema have okcore's type, range and
    default (okcore.kernel_parameter_schema): a drift fails here."""
    props = spec["components"]["schemas"][KERNEL_SPECS[kind]]["properties"]
    for name, declared in okcore.kernel_parameter_schema(kind).items():
        branches = props[name].get("anyOf", [props[name]])
        typed = next(b for b in branches if b.get("type") != "null")
        got = {k: typed.get(k, props[name].get(k)) for k in RANGE_KEYS}
        assert got == {k: declared.get(k) for k in RANGE_KEYS}, (kind, name)


def test_an_rbf_gamma_out_of_okcores_range_is_a_422_with_okcores_message(
    client: TestClient, spec: dict[str, Any]
) -> None:
    high = okcore.kernel_parameter_schema("rbf")["gamma"]["maximum"]
    body = {"inputs": [[0.0], [1.0]], "output_kernel": {"type": "rbf", "outputs": [[0.0], [1.0]]}}
    body["output_kernel"]["gamma"] = high * 10
    gamma = spec["components"]["schemas"]["RBFKernelSpec"]["properties"]["gamma"]["anyOf"][0]
    with pytest.raises(jsonschema.ValidationError, match="is greater than the maximum"):
        jsonschema.validate(high * 10, gamma)  # the schema says so ...
    r = client.post("/train", json=body)  # ... and the service refuses it
    assert r.status_code == 422, r.text
    assert r.json()["error"]["code"] == "invalid_kernel"
    assert "rbf kernel 'gamma' must be in [1e-300, 1e+300]" in r.json()["error"]["message"]
