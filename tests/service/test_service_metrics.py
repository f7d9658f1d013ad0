"""GET /metrics (service.prometheus): Prometheus text format, route templates as labels, jobs, cache,
auth. (Named apart from tests/okcore/test_metrics.py: test modules share one namespace.)"""

from __future__ import annotations

from typing import Any

from prometheus_client.parser import text_string_to_metric_families
from svc_data import Graph, TestClient, make_settings

from service.app import create_app


def _samples(client: TestClient) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    r = client.get("/metrics")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    out = {}
    for family in text_string_to_metric_families(r.text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def _requests(samples: dict[Any, float], method: str, route: str, status: str) -> float:
    key = (
        "okboost_http_requests_total",
        (("method", method), ("route", route), ("status", status)),
    )
    return samples.get(key, 0.0)


def test_requests_are_counted_by_route_template_and_status(
    client: TestClient, trained: dict[str, Any], graph: Graph
) -> None:
    for _ in range(3):
        assert client.get(f"/models/{trained['model_id']}").status_code == 200
    for i in range(5):  # five distinct unknown ids: one label set, not five
        assert client.get(f"/models/{i:032x}").status_code == 404
    for path in ("/no/such/path", "/models/x/y/z", "/%00"):
        client.get(path)
    body = {"model_id": trained["model_id"], "inputs": graph.features[graph.test].tolist()}
    assert client.post("/kernel", json=body).status_code == 200
    s = _samples(client)
    assert _requests(s, "GET", "/models/{model_id}", "200") == 3
    assert _requests(s, "GET", "/models/{model_id}", "404") == 5
    assert _requests(s, "GET", "unmatched", "404") == 3
    assert _requests(s, "POST", "/kernel", "200") == 1
    assert _requests(s, "POST", "/train", "201") == 1
    routes = {dict(k[1]).get("route") for k in s if k[0] == "okboost_http_requests_total"}
    assert routes <= {"/models/{model_id}", "unmatched", "/kernel", "/train", "/metrics"}
    latency = (
        "okboost_http_request_duration_seconds_count",
        (("method", "POST"), ("route", "/kernel")),
    )
    assert s[latency] == 1


def test_jobs_cache_and_training_seconds(
    client: TestClient, trained: dict[str, Any], graph: Graph
) -> None:
    body = {"model_id": trained["model_id"], "inputs": graph.features[graph.test].tolist()}
    for _ in range(3):
        assert client.post("/predict", json=body).status_code == 200
    s = _samples(client)
    assert s[("okboost_jobs", (("state", "done"),))] == 1
    assert s[("okboost_jobs", (("state", "failed"),))] == 0
    assert s[("okboost_training_seconds_count", ())] == 1
    assert s[("okboost_training_seconds_sum", ())] > 0
    assert s[("okboost_model_cache_misses_total", ())] == 1
    assert s[("okboost_model_cache_hits_total", ())] == 2
    assert s[("okboost_model_cache_models", ())] == 1
    assert s[("process_resident_memory_bytes", ())] > 0


def test_metrics_need_the_token_when_one_is_set(tmp_path: Any) -> None:
    with TestClient(create_app(make_settings(tmp_path, token="s3cret"))) as c:
        r = c.get("/metrics")
        assert r.status_code == 401 and r.json()["error"]["code"] == "unauthorized"
        r = c.get("/metrics", headers={"authorization": "Bearer s3cret"})
        assert r.status_code == 200
        # the refused scrape was counted too, under its route
        assert 'route="/metrics",status="401"' in r.text


def test_requests_refused_before_routing_keep_their_route(tmp_path: Any) -> None:
    with TestClient(create_app(make_settings(tmp_path, max_request_bytes=2048))) as c:
        r = c.post(
            "/train",
            content=b"x" * 4096,
            headers={"content-type": "multipart/form-data; boundary=b"},
        )
        assert r.status_code == 413
        assert _requests(_samples(c), "POST", "/train", "413") == 1
