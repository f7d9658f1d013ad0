"""The deployment's quotas wherever a job or a model enters: the queue's bounds on a Dask
cluster as in the local pool (one admission), the store's quotas on POST /models/import as
on /train, and who a client is (its token when the deployment gives each client its own,
else its address)."""

from __future__ import annotations

import io
import json
import os
import tarfile
import time
from pathlib import Path
from typing import Any

import pytest
from svc_data import TestClient, diffusion_request, make_settings, model_record
from test_errors import assert_error

from service.app import create_app
from service.errors import Busy
from service.jobs.manager import JobManager, QueueQuotas
from service.store.ids import new_id
from service.store.model_store import ModelStore


# ------------------------------------------------------------------ the queue on a cluster
def _gated(gate: str) -> Any:
    """A task that waits for the file ``gate`` (a local function: Dask pickles it whole)."""

    def task(progress: Any) -> str:
        while not os.path.exists(gate):
            time.sleep(0.05)
        return "cancelled"  # no model written: the job ends cancelled

    return task


@pytest.mark.slow
def test_the_queue_bounds_hold_on_a_dask_cluster(dask_client: Any, tmp_path: Path) -> None:
    """The per-client and held-bytes bounds count the jobs waiting on the cluster, as the
    local queue counts its own (the cluster's two workers are kept busy first)."""
    store = ModelStore(tmp_path)
    quotas = QueueQuotas(max_queued_per_client=2, max_queued_bytes=1000)
    jobs = JobManager(store, dask_scheduler=dask_client.scheduler.address, quotas=quotas)
    gate = str(tmp_path / "gate")
    task = _gated(gate)

    def submit(**kw: Any) -> Any:
        model_id = new_id()
        store.create_record(model_record(model_id))
        return jobs.submit(model_id, task, total=1, **kw)

    try:
        running = [submit(), submit()]  # one on each worker
        deadline = time.monotonic() + 60
        while any(store.root.joinpath("jobs", f"{j.job_id}.json").read_text().count('"running"')
                  == 0 for j in running):  # fmt: skip
            assert time.monotonic() < deadline, "the cluster's workers did not start the jobs"
            time.sleep(0.1)
        submit(client="10.0.0.1", held=300)
        submit(client="10.0.0.1", held=300)
        with pytest.raises(Busy, match=r"this client \(10.0.0.1\).*QUEUED_JOBS_PER_CLIENT"):
            submit(client="10.0.0.1")
        with pytest.raises(Busy, match="hold 600 bytes of data and this one 600.*QUEUED_BYTES"):
            submit(client="10.0.0.2", held=600)
        submit(client="10.0.0.2", held=400)  # another client, within the bytes
    finally:
        Path(gate).touch()
        for job in list(jobs.cluster.unsettled()):  # type: ignore[union-attr]
            jobs.wait(job.job_id, 60)
        jobs.shutdown()


# ------------------------------------------------------------------ imports
def _import(client: TestClient, archive: bytes) -> Any:
    return client.post(
        "/models/import",
        content=archive,
        params={"on_conflict": "rename"},
        headers={"content-type": "application/gzip"},
    )


def _store_entries(root: Path) -> list[str]:
    return sorted(p.name for p in root.iterdir() if p.name != "jobs")


def test_an_import_is_refused_by_the_store_quotas_as_a_train_is(
    client: TestClient, trained: dict[str, Any], graph: Any, tmp_path: Path
) -> None:
    archive = client.get(f"/models/{trained['model_id']}/export").content
    settings = make_settings(tmp_path / "q", max_models_per_client=1)
    with TestClient(create_app(settings)) as c:
        r = _import(c, archive)
        assert r.status_code == 201, r.text
        record = json.loads((settings.model_dir / r.json()["model_id"] / "record.json").read_text())
        assert record["client"] == "testclient"  # counted as the importer's
        for again in (
            lambda: _import(c, archive),
            lambda: c.post("/train", json=diffusion_request(graph)),
        ):
            r = again()
            assert_error(r, 429, "too_many_jobs", "this client (testclient) has 1 models",
                         "OKBOOST_MAX_MODELS_PER_CLIENT")  # fmt: skip
    for limit, name in (("max_store_bytes", "OKBOOST_MAX_STORE_BYTES"),
                        ("max_store_bytes_per_client", "OKBOOST_MAX_STORE_BYTES_PER_CLIENT")):  # fmt: skip
        settings = make_settings(tmp_path / limit, **{limit: 2048})
        with TestClient(create_app(settings)) as c:
            r = _import(c, archive)
            assert_error(r, 507, "insufficient_storage", " holds ", f"({name})")
            assert c.post("/train", json=diffusion_request(graph)).status_code == 507
            assert _store_entries(settings.model_dir) == []  # nothing left behind


def test_the_import_quota_is_checked_before_a_member_is_written(tmp_path: Path) -> None:
    """The sizes the members declare count as their headers arrive: a member that would
    pass the store's limit is refused (507) before it is written, ahead of any other check
    of the archive (here: members no model has)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for i in range(3):
            info = tarfile.TarInfo(f"okboost-model/part-{i}.bin")
            info.size = 40_000
            tar.addfile(info, io.BytesIO(bytes(info.size)))
    for limit, status in ((100_000, 507), (None, 422)):
        settings = make_settings(tmp_path / str(limit), max_store_bytes=limit)
        with TestClient(create_app(settings)) as c:
            r = _import(c, buf.getvalue())
            assert r.status_code == status, r.text
            if status == 507:
                assert "this model holds 120000 bytes" in r.json()["error"]["message"]
            assert _store_entries(settings.model_dir) == []


# ------------------------------------------------------------------ who a client is
def test_client_tokens_tell_clients_apart(graph: Any, tmp_path: Path) -> None:
    """With client tokens, the per-client quotas count by token (its hash, never the token),
    not by address (every request here comes from the same one); the shared token's
    holders are still told apart by their addresses."""
    tokens = tmp_path / "client-tokens"
    tokens.write_text("alice-token-0123456789\n\nbob-token-0123456789\n")
    settings = make_settings(
        tmp_path, token="shared-token", client_tokens_file=tokens, max_models_per_client=1
    )

    def train(token: str) -> Any:
        headers = {"authorization": f"Bearer {token}"}
        return c.post("/train", json=diffusion_request(graph), headers=headers)

    with TestClient(create_app(settings)) as c:
        assert train("alice-token-0123456789").status_code == 201
        r = train("alice-token-0123456789")
        assert_error(
            r, 429, "too_many_jobs", "this client (token:", "OKBOOST_MAX_MODELS_PER_CLIENT"
        )
        assert "alice" not in r.text
        assert train("bob-token-0123456789").status_code == 201  # same address, another client
        assert train("shared-token").status_code == 201  # by its address: a third client
        assert train("wrong").status_code == 401
    clients = sorted(
        json.loads(p.read_text())["client"] for p in settings.model_dir.glob("*/record.json")
    )
    assert len(clients) == 3 and clients[0] == "testclient"
    assert all(c.startswith("token:") and len(c) == 22 for c in clients[1:])
    texts = [p.read_text() for p in settings.model_dir.rglob("*.json")]
    assert not any("alice-token" in t or "bob-token" in t for t in texts)


def test_client_tokens_are_each_a_clients_own(tmp_path: Path) -> None:
    tokens = tmp_path / "client-tokens"
    for text in ("a-token\na-token\n", "shared\n", "\n"):
        tokens.write_text(text)
        with pytest.raises(ValueError, match="client_tokens_file"):
            make_settings(tmp_path, token="shared", client_tokens_file=tokens)
