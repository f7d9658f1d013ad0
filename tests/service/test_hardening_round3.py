"""Hostile inputs, round 3: text codecs, part names checked as they arrive, the parts held
in memory together, and a whole-request deadline for bodies. One regression test each."""

from __future__ import annotations

import socket
import time
import tracemalloc
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from svc_data import TestClient
from test_errors import assert_error
from test_hostile_inputs import _live, _read_response

from service.app import create_app
from service.config import Settings
from service.http.multipart import read_form

MiB = 1 << 20
BOUNDARY = "okboost-round3"


def _multipart(parts: list[tuple[str, str | None, bytes]]) -> bytes:
    out = []
    for name, filename, content in parts:
        disposition = f'form-data; name="{name}"' + (f'; filename="{filename}"' if filename else "")
        out.append(f"--{BOUNDARY}\r\nContent-Disposition: {disposition}\r\n\r\n".encode())
        out.append(content + b"\r\n")
    out.append(f"--{BOUNDARY}--\r\n".encode())
    return b"".join(out)


def _streamed(app: Any, path: str, body: bytes, charset: str | None = None) -> httpx.Response:
    """POST ``body`` to ``app`` in 64 KiB chunks, as a server receives it."""
    import anyio

    async def send() -> httpx.Response:
        async def chunks() -> AsyncIterator[bytes]:
            for start in range(0, len(body), 65536):
                yield body[start : start + 65536]

        ctype = f"multipart/form-data; boundary={BOUNDARY}"
        if charset is not None:
            ctype += f"; charset={charset}"
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as http:
            return await http.post(path, content=chunks(), headers={"content-type": ctype})

    return anyio.run(send)


def _peak(send: Any) -> tuple[Any, int]:
    tracemalloc.start()
    try:
        answer = send()
        return answer, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


# ------------------------------------------------------------------ text codecs
@pytest.mark.parametrize(
    "charset", ["rot13", "base64", "punycode", "hex", "zlib", "bz2", "uu", "undefined", "idna"]
)
def test_a_charset_that_is_not_a_text_encoding_is_a_415(client: TestClient, charset: str) -> None:
    body = _multipart([("json", None, b'{"model_id": "' + b"0" * 32 + b'"}')])
    r = _streamed(client.app, "/predict", body, charset=charset)
    assert_error(r, 415, "unsupported_media_type", f"charset '{charset}'", "not a text encoding")


@pytest.mark.parametrize("charset", ["utf-8", "UTF8", "latin-1"])
def test_text_encodings_are_still_read(client: TestClient, charset: str) -> None:
    body = _multipart([("json", None, b'{"model_id": "' + b"0" * 32 + b'"}')])
    r = _streamed(client.app, "/predict", body, charset=charset)
    assert_error(r, 422, "invalid_data", "inputs: Field required")  # read, then validated


# ------------------------------------------------------------------ part names, part memory
def test_unknown_parts_are_refused_when_their_headers_arrive(client: TestClient) -> None:
    """100 file parts of 1 MiB named after no field: refused at the first one's headers,
    before its body is spooled (each was held in memory, 100 MiB in all, before)."""
    body = _multipart([(f"x{i}", f"x{i}.bin", b"\0" * MiB) for i in range(100)])
    r, peak = _peak(lambda: _streamed(client.app, "/predict", body))
    assert_error(r, 422, "invalid_data", "part 'x0' is not a field of the request")
    assert peak < len(body) + 8 * MiB, f"{peak / MiB:.0f} MiB allocated"  # the body itself


def test_the_parts_held_in_memory_are_bounded_together() -> None:
    """40 parts of 1 MiB, each within the 1 MiB a part may keep in memory: past 8 MiB in
    all, later parts go to disk as they stream (all 40 MiB stayed in memory before)."""
    import anyio
    from starlette.requests import Request

    body = _multipart([(f"p{i}", f"p{i}.bin", b"\1" * MiB) for i in range(40)])
    chunks = [body[k : k + 65536] for k in range(0, len(body), 65536)]

    async def main() -> None:
        async def receive() -> dict[str, Any]:
            if chunks:
                return {"type": "http.request", "body": chunks.pop(0), "more_body": bool(chunks)}
            return {"type": "http.disconnect"}

        ctype = f"multipart/form-data; boundary={BOUNDARY}".encode()
        scope = {"type": "http", "method": "POST", "headers": [(b"content-type", ctype)]}
        form = await read_form(
            Request(scope, receive), max_files=256, max_fields=256, max_text_bytes=MiB
        )
        try:
            for _, value in form.multi_items():
                assert await value.read(1) == b"\1"  # type: ignore[union-attr]
        finally:
            await form.close()

    del body
    _, peak = _peak(lambda: anyio.run(main))
    assert peak < 16 * MiB, f"{peak / MiB:.0f} MiB held by 40 MiB of parts"


# ------------------------------------------------------------------ drip-fed body
def test_a_body_sent_one_byte_at_a_time_is_cut_off_at_the_deadline(settings: Settings) -> None:
    """One byte every 0.3 s, each within the 1 s read timeout: 408 once the 2 s deadline
    for the whole body passes (the per-gap timeout alone never cut it off)."""
    update = {"body_read_timeout": 1.0, "body_deadline": 2.0}
    app = create_app(settings.model_copy(update=update))
    with _live(app) as port, socket.create_connection(("127.0.0.1", port), timeout=60) as sock:
        sock.sendall(
            b"POST /train HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Content-Length: 100\r\n\r\n"
        )
        sock.settimeout(0.3)
        start = time.monotonic()
        answer = b""
        while time.monotonic() - start < 20:
            try:
                sock.sendall(b" ")
            except OSError:
                break
            try:
                answer = sock.recv(65536, socket.MSG_PEEK)
            except TimeoutError:
                continue
            if answer:
                break
        sock.settimeout(10)
        status, headers, text = _read_response(sock)
        assert status == 408 and headers["connection"] == "close"
        assert "did not arrive in full within 2 s" in text.decode()
        assert "OKBOOST_BODY_DEADLINE" in text.decode()


# ------------------------------------------------------------------ store: links
def _store_root(client: TestClient) -> Any:
    return client.app.state.services.store.root  # type: ignore[attr-defined]


def test_a_model_folder_linked_outside_the_store_is_refused(
    client: TestClient, trained: dict[str, Any], tmp_path: Any
) -> None:
    """A model folder replaced by a link to a folder outside the store (holding a copy of
    the model and a secret): export, load and record reads refuse it with a 409; the
    listing says it is invalid; DELETE removes the link, never what it points to."""
    import shutil

    mid = trained["model_id"]
    folder = _store_root(client) / mid
    outside = tmp_path / "outside"
    shutil.copytree(folder, outside)
    (outside / "secret.txt").write_text("not the store's")
    shutil.rmtree(folder)
    folder.symlink_to(outside, target_is_directory=True)
    client.app.state.services.store._cache.clear()  # type: ignore[attr-defined]
    r = client.get(f"/models/{mid}/export")
    assert_error(r, 409, "model_invalid", "symbolic link", f"DELETE /models/{mid}")
    assert "secret" not in r.text
    r = client.post("/predict", json={"model_id": mid, "inputs": [[0.0] * 4]})
    assert_error(r, 409, "model_invalid", "symbolic link")
    listed = {m["model_id"]: m for m in client.get("/models").json()["models"]}
    assert listed[mid]["status"] == "invalid"
    assert client.delete(f"/models/{mid}").status_code == 200
    assert not folder.exists() and not folder.is_symlink()
    assert (outside / "secret.txt").read_text() == "not the store's"


def test_a_link_inside_a_model_folder_is_refused(
    client: TestClient, trained: dict[str, Any], tmp_path: Any
) -> None:
    mid = trained["model_id"]
    secret = tmp_path / "secret.txt"
    secret.write_text("not the store's")
    (_store_root(client) / mid / "notes.txt").symlink_to(secret)
    client.app.state.services.store._cache.clear()  # type: ignore[attr-defined]
    r = client.get(f"/models/{mid}/export")
    assert_error(r, 409, "model_invalid", "'notes.txt', is a symbolic link")
    assert "not the store" not in r.text


def test_a_job_record_linked_outside_the_store_is_refused(
    client: TestClient, trained: dict[str, Any], tmp_path: Any
) -> None:
    """A job record replaced by a link to a file outside the store (here another server's
    record of the same job) is quarantined, never read; DELETE removes the link only."""
    job_id = trained["job_id"]
    record = _store_root(client) / "jobs" / f"{job_id}.json"
    outside = tmp_path / "elsewhere.json"
    outside.write_text(record.read_text())
    record.unlink()
    record.symlink_to(outside)
    client.app.state.services.jobs._jobs.clear()  # type: ignore[attr-defined]
    r = client.get(f"/jobs/{job_id}")
    assert r.json()["state"] == "invalid" and "symbolic link" in r.json()["error"]
    assert r.json()["model_id"] is None  # nothing of the file it points to was read
    assert client.delete(f"/jobs/{job_id}").status_code == 200
    assert not record.exists() and not record.is_symlink() and outside.exists()


# ------------------------------------------------------------------ queued jobs, quotas
def test_a_queued_bipartite_job_holds_its_edges_not_a_dense_matrix() -> None:
    """20,000 x 1,000 with one edge: the plan a queued job holds is its inputs and one
    edge (the dense 160 MB interaction matrix was built at planning time and held)."""
    from service.schemas.bipartite import BipartiteTrainRequest
    from service.training.bipartite import plan_bipartite
    from service.training.budget import held_bytes

    body = {
        "task": "bipartite",
        "model": "okboost",
        "rows": {"inputs": [[0.0]] * 20_000},
        "cols": {"inputs": [[0.0]] * 1_000},
        "edges": [[0, 0]],
        "params": {"n_estimators": 2},
    }
    req = BipartiteTrainRequest.model_validate(body)
    plan, peak = _peak(lambda: plan_bipartite(req, 20_000_000))
    inputs = 8 * (20_000 + 1_000)
    assert held_bytes(plan) < inputs + 1_000_000
    assert peak < 16 * MiB, f"{peak / MiB:.0f} MiB allocated while planning"
    assert plan.record["bipartite"]["n_interactions"] == 1


def _blocked_manager(tmp_path: Any, **quotas: Any) -> tuple[Any, Any, Any]:
    import threading

    from svc_data import model_record

    from service.jobs.manager import JobManager, QueueQuotas
    from service.store.ids import new_id
    from service.store.model_store import ModelStore

    store = ModelStore(tmp_path)
    jobs = JobManager(store, max_workers=1, quotas=QueueQuotas(**quotas))
    gate = threading.Event()

    def blocked(progress: Any) -> str:
        gate.wait(10)
        return "done"

    def model() -> str:
        mid = new_id()
        store.create_record(model_record(mid))
        return mid

    jobs.submit(model(), blocked, total=1)  # runs, holding the only worker
    time.sleep(0.05)
    return jobs, gate, lambda **kw: jobs.submit(model(), blocked, total=1, **kw)


def test_the_bytes_waiting_jobs_hold_are_bounded(tmp_path: Any) -> None:
    from service.errors import Busy

    jobs, gate, submit = _blocked_manager(tmp_path, max_queued_bytes=1000)
    submit(held=600)
    with pytest.raises(
        Busy, match="hold 600 bytes of data and this one 600.*OKBOOST_MAX_QUEUED_BYTES"
    ):
        submit(held=600)
    submit(held=400)
    gate.set()
    jobs.shutdown()


def test_one_client_cannot_fill_the_queue(tmp_path: Any) -> None:
    from service.errors import Busy

    jobs, gate, submit = _blocked_manager(tmp_path, max_queued_per_client=2)
    submit(client="10.0.0.1")
    submit(client="10.0.0.1")
    with pytest.raises(Busy, match=r"this client \(10.0.0.1\).*QUEUED_JOBS_PER_CLIENT"):
        submit(client="10.0.0.1")
    submit(client="10.0.0.2")  # another client still queues
    gate.set()
    jobs.shutdown()


def test_a_job_running_past_the_time_limit_is_stopped_and_failed(tmp_path: Any) -> None:
    from svc_data import model_record

    from service.jobs.manager import JobManager, QueueQuotas
    from service.store.ids import new_id
    from service.store.model_store import ModelStore

    store = ModelStore(tmp_path)
    jobs = JobManager(store, quotas=QueueQuotas(max_seconds=0.3))

    class Tree:
        done, total, elapsed, train_loss, val_loss = 1, 1000, 0.0, 1.0, None

    def endless(progress: Any) -> str:
        for _ in range(1000):
            if progress(Tree()):
                return "cancelled"
            time.sleep(0.05)
        return "done"

    mid = new_id()
    store.create_record(model_record(mid))
    job = jobs.submit(mid, endless, total=1000)
    assert jobs.wait(job.job_id, 20)
    assert job.state == "failed" and "OKBOOST_MAX_JOB_SECONDS" in (job.error or "")
    jobs.shutdown()


def test_store_quotas(tmp_path: Any, graph: Any) -> None:
    from svc_data import diffusion_request, make_settings

    settings = make_settings(tmp_path, max_models_per_client=1)
    with TestClient(create_app(settings)) as c:
        assert c.post("/train", json=diffusion_request(graph)).status_code == 201
        r = c.post("/train", json=diffusion_request(graph))
        assert_error(r, 429, "too_many_jobs", "has 1 models", "OKBOOST_MAX_MODELS_PER_CLIENT")
    settings = make_settings(tmp_path, max_store_bytes=2048)
    with TestClient(create_app(settings)) as c:
        r = c.post("/train", json=diffusion_request(graph))
        assert_error(r, 507, "insufficient_storage", "OKBOOST_MAX_STORE_BYTES")
    settings = make_settings(tmp_path, max_store_bytes_per_client=2048)
    with TestClient(create_app(settings)) as c:
        r = c.post("/train", json=diffusion_request(graph))
        assert_error(r, 507, "insufficient_storage", "OKBOOST_MAX_STORE_BYTES_PER_CLIENT")


# ------------------------------------------------------------------ docs agree with the server
def test_the_settings_docs_agree_with_the_server(tmp_path: Any) -> None:
    """Every setting has its row in configuration.md, every OKBOOST_ name SECURITY.md uses
    is a setting, and both say what a token leaves public, as the server does."""
    import re
    from pathlib import Path

    from svc_data import make_settings

    docs = Path(__file__).resolve().parents[2] / "docs"
    config, security = ((docs / n).read_text() for n in ("configuration.md", "SECURITY.md"))
    names = {f"OKBOOST_{name.upper()}" for name in Settings.model_fields}
    rows = set(re.findall(r"^\| `(OKBOOST_[A-Z_]+)`", config, re.M))
    assert names - rows == set(), "settings without a row in configuration.md"
    assert set(re.findall(r"OKBOOST_[A-Z_]+[A-Z]", security)) - names == set()
    for page in (config, security):
        assert all(p in page for p in ("/docs", "/redoc", "/openapi.json", "/health/live"))
    app = create_app(make_settings(tmp_path, token="s3cret"))
    with TestClient(app) as c:
        for path in ("/docs", "/redoc", "/openapi.json", "/health/live", "/health/ready"):
            assert c.get(path).status_code == 200, path
        for path in ("/version", "/models", "/jobs", "/metrics"):
            assert c.get(path).status_code == 401, path
        # every path a request without the token reaches is one both pages name as public
        public = {r.path for r in app.routes if isinstance(getattr(r, "path", None), str)}
        for path, operations in app.openapi()["paths"].items():
            concrete = re.sub(r"\{[a-z_]+\}", "0" * 32, path)
            if any(c.request(m.upper(), concrete).status_code != 401 for m in operations):
                public.add(path)
    for page in (config, security):
        assert {p for p in public if f"`{p}`" not in page} == set()
