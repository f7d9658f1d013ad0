"""The OpenAPI schema validates and documents every endpoint with examples."""

from __future__ import annotations

from typing import Any

import pytest
from svc_data import TestClient

from service.schemas import api as schemas
from service.schemas import examples as ex
from service.schemas.evaluate import EvaluateRequest

openapi_spec_validator = pytest.importorskip("openapi_spec_validator")

ENDPOINTS = {
    ("post", "/train"),
    ("post", "/predict"),
    ("post", "/kernel"),
    ("post", "/evaluate"),
    ("get", "/models"),
    ("get", "/models/{model_id}"),
    ("delete", "/models/{model_id}"),
    ("get", "/jobs"),
    ("get", "/jobs/{job_id}"),
    ("delete", "/jobs/{job_id}"),
    ("get", "/health/live"),
    ("get", "/health/ready"),
    ("get", "/version"),
    ("get", "/metrics"),
    ("get", "/models/{model_id}/export"),
    ("post", "/models/import"),
}


@pytest.fixture
def spec(client: TestClient) -> dict[str, Any]:
    schema: dict[str, Any] = client.get("/openapi.json").json()
    return schema


def _operations(spec: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(m, p): op for p, item in spec["paths"].items() for m, op in item.items()}


def test_schema_validates(spec: dict[str, Any]) -> None:
    openapi_spec_validator.validate(spec)
    assert set(_operations(spec)) == ENDPOINTS


def test_every_endpoint_has_request_and_response_examples(spec: dict[str, Any]) -> None:
    for key, op in _operations(spec).items():
        body = op.get("requestBody")
        if key[0] == "post":
            assert body is not None, key
            for media, content in body["content"].items():
                assert "example" in content or "examples" in content, (key, media)
        for param in op.get("parameters", []):
            assert (
                "example" in param or "examples" in param or "examples" in param.get("schema", {})
            ), (key, param["name"])
        assert any(s.startswith("2") for s in op["responses"]), key
        for status, response in op["responses"].items():
            for media, content in response.get("content", {}).items():
                assert "example" in content or "examples" in content, (key, status, media)


def test_request_models_document_every_field(spec: dict[str, Any]) -> None:
    schemas = spec["components"]["schemas"]
    for name in ("TrainRequest", "PredictRequest", "KernelRequest"):
        model = schemas[name]
        assert model.get("examples"), name
        for field, prop in model["properties"].items():
            assert prop.get("description"), (name, field)
    kinds = {
        s["$ref"].rsplit("/", 1)[1]
        for s in schemas["TrainRequest"]["properties"]["output_kernel"]["oneOf"]
    }
    assert kinds == {
        "PrecomputedKernelSpec",
        "LinearKernelSpec",
        "RBFKernelSpec",
        "PolynomialKernelSpec",
        "DiffusionKernelSpec",
    }


def test_every_schema_field_has_an_example(spec: dict[str, Any]) -> None:
    for name, schema in spec["components"]["schemas"].items():
        if name in ("HTTPValidationError", "ValidationError"):
            continue
        assert schema.get("examples"), name
        for field, prop in schema.get("properties", {}).items():
            assert prop.get("examples"), (name, field)


def test_request_examples_are_valid_requests(spec: dict[str, Any]) -> None:
    for name in ("TrainRequest", "PredictRequest", "KernelRequest"):
        model = getattr(schemas, name)
        model.model_validate(spec["components"]["schemas"][name]["examples"][0])
    for kernel in ex.KERNELS.values():
        schemas.TrainRequest.model_validate(
            {"inputs": ex.X4[: len(kernel.get("gram", ex.X4))], "output_kernel": kernel}
        )


def test_error_responses_use_the_one_shape(spec: dict[str, Any]) -> None:
    for key, op in _operations(spec).items():
        for status, response in op["responses"].items():
            if status.startswith(("4", "5")):
                example = response["content"]["application/json"]["example"]
                assert set(example) == {"error"}, key
                assert example["error"]["status"] == int(status), key


def test_every_json_answer_has_a_schema(spec: dict[str, Any]) -> None:
    """Every route declares its response model: the schema schemathesis checks answers
    against (binary answers, the archive and the metrics text, excepted)."""
    for key, op in _operations(spec).items():
        for status, response in op["responses"].items():
            json_content = response.get("content", {}).get("application/json")
            if status.startswith("2") and json_content is not None:
                assert "schema" in json_content, (key, status)


@pytest.mark.parametrize(
    ("model", "body", "message"),
    [
        (
            schemas.PredictRequest,
            {"candidates": [[0.0]], "candidate_gram": [[0.0]], "candidate_diag": [1.0]},
            "not both",
        ),
        (schemas.PredictRequest, {"candidate_gram": [[0.0]]}, "go together"),
        (schemas.PredictRequest, {"candidate_diag": [1.0]}, "go together"),
        (
            EvaluateRequest,
            {"outputs": [[0.0]], "gram_cross": [[0.0]], "gram_diag": [1.0]},
            "not both",
        ),
        (EvaluateRequest, {"gram_diag": [1.0]}, "go together"),
        (EvaluateRequest, {}, "outputs"),
    ],
)
def test_the_schema_states_the_cross_field_rules(
    model: type[Any], body: dict[str, Any], message: str
) -> None:
    """A request the validators refuse for a rule between fields is refused by the schema
    too, and one the schema allows (null counts as not given) is accepted."""
    from jsonschema import Draft202012Validator

    base = {"model_id": "0" * 32, "inputs": [[0.0]]}
    schema = model.model_json_schema()
    assert not Draft202012Validator(schema).is_valid({**base, **body})
    with pytest.raises(ValueError, match=message):
        model.model_validate({**base, **body})
    allowed = {
        **base,
        **{k: None for k in body},
        **({"edges": None, "outputs": [[0.0]]} if model is EvaluateRequest else {}),
    }
    assert Draft202012Validator(schema).is_valid(allowed)
    model.model_validate(allowed)
