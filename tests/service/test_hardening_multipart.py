"""Multipart bombs: the parts of one request are bounded together, decoded, before they are
held (unknown and repeated part names refused before decoding, the JSON text under the JSON
cap, .npz members never inflated past their declared size)."""

from __future__ import annotations

import io
import json
import struct
import tracemalloc
import zipfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
from svc_data import TestClient, make_settings
from test_errors import assert_error

from service.app import create_app

MiB = 1 << 20


def _coo_npz(rows: int) -> bytes:
    """A scipy COO .npz of one entry that declares ``rows`` rows (about 1 KB)."""
    buf = io.BytesIO()
    np.savez_compressed(
        buf,
        format=np.array("coo"),
        shape=np.array([rows, 3]),
        row=np.array([0]),
        col=np.array([0]),
        data=np.array([1.0]),
    )
    return buf.getvalue()


def _peak(send: Any) -> tuple[Any, int]:
    """(answer of send(), bytes allocated at the peak while it ran)."""
    tracemalloc.start()
    try:
        answer = send()
        return answer, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.fixture
def small(tmp_path: Path) -> Iterator[TestClient]:
    settings = make_settings(tmp_path, max_request_bytes=24 * MiB, max_json_bytes=4096)
    with TestClient(create_app(settings)) as c:
        yield c


def test_many_sparse_parts_with_unknown_names_are_refused_before_decoding(
    client: TestClient, trained: dict[str, Any]
) -> None:
    part = _coo_npz(10_000_000)
    files = {"json": (None, json.dumps({"model_id": trained["model_id"]}))}
    files.update({f"x{i}": (f"x{i}.npz", part) for i in range(40)})
    r, peak = _peak(lambda: client.post("/predict", files=files))
    assert_error(r, 422, "invalid_data", "part 'x0' is not a field of the request")
    assert peak < 16 * MiB, f"{peak / MiB:.0f} MiB allocated while refusing the request"


def test_a_part_sent_twice_is_refused_before_decoding(
    client: TestClient, trained: dict[str, Any]
) -> None:
    part = _coo_npz(10_000_000)
    files = [("json", (None, json.dumps({"model_id": trained["model_id"]})))]
    files += [("inputs", ("inputs.npz", part))] * 20
    r, peak = _peak(lambda: client.post("/predict", files=files))
    assert_error(r, 422, "invalid_data", "part 'inputs' is sent twice")
    assert peak < 16 * MiB, f"{peak / MiB:.0f} MiB allocated while refusing the request"


def test_decoded_parts_are_bounded_together(small: TestClient) -> None:
    """Two sparse parts each declaring 10^6 rows (16 MB of row pointers once decoded,
    each under the 24 MiB request cap): together they are over it."""
    files = {
        "json": (None, json.dumps({"model_id": "0" * 32})),
        "inputs": ("inputs.npz", _coo_npz(1_000_000)),
        "inputs2": ("inputs2.npz", _coo_npz(1_000_000)),
    }
    r = small.post("/kernel", files=files)
    assert_error(r, 413, "request_too_large", "part 'inputs2'", "after", "other parts")
    assert "OKBOOST_MAX_REQUEST_BYTES" in r.json()["error"]["message"]


@pytest.mark.parametrize("as_file", [False, True], ids=["field", "file"])
def test_the_json_part_is_under_the_json_cap(small: TestClient, as_file: bool) -> None:
    text = json.dumps({"model_id": "0" * 32, "inputs": [[1.0] * 1000]})
    assert len(text) > 4096
    files = {"json": ("request.json", text) if as_file else (None, text)}
    r = small.post("/predict", files=files)
    assert_error(r, 413, "request_too_large", "OKBOOST_MAX_JSON_BYTES")


def test_json_text_parts_count_towards_the_json_cap(small: TestClient) -> None:
    row = json.dumps([[1.0] * 500])
    files = {"json": (None, json.dumps({"model_id": "0" * 32})), "inputs": (None, row)}
    files["inputs2"] = (None, row)
    assert len(row) < 4096 < 2 * len(row)
    r = small.post("/kernel", files=files)
    assert_error(r, 413, "request_too_large", "text part 'inputs2'", "OKBOOST_MAX_JSON_BYTES")


def _lying_npz(declared: int, inflated: int) -> bytes:
    """An .npz whose first member declares ``declared`` bytes but whose deflate stream
    expands to ``inflated`` (its central-directory size field rewritten)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("format.npy", bytes(inflated))
    data = bytearray(buf.getvalue())
    central = data.index(b"PK\x01\x02")
    struct.pack_into("<I", data, central + 24, declared)
    return bytes(data)


def test_a_zip_member_is_not_inflated_past_its_declared_size(
    client: TestClient, trained: dict[str, Any]
) -> None:
    part = _lying_npz(100, 256 * MiB)
    assert len(part) < 512 * 1024
    files = {
        "json": (None, json.dumps({"model_id": trained["model_id"]})),
        "inputs": ("inputs.npz", part),
    }
    r, peak = _peak(lambda: client.post("/predict", files=files))
    assert_error(r, 422, "invalid_data", "part 'inputs'")
    assert peak < 16 * MiB, f"{peak / MiB:.0f} MiB allocated while refusing the part"


def test_multipart_requests_within_the_caps_still_work(
    client: TestClient, trained: dict[str, Any], graph: Any
) -> None:
    buf = io.BytesIO()
    np.save(buf, graph.features[graph.test])
    files = {
        "json": (None, json.dumps({"model_id": trained["model_id"], "top_k": 2})),
        "inputs": ("inputs.npy", buf.getvalue()),
    }
    r = client.post("/predict", files=files)
    assert r.status_code == 200, r.text


# ---------------------------------------------------------------- text fields
BOUNDARY = "okboost-test-boundary"


def _multipart(parts: list[tuple[str, str | None, bytes]]) -> bytes:
    """A multipart body of (name, filename or None for a text field, content) parts."""
    out = []
    for name, filename, content in parts:
        disposition = f'form-data; name="{name}"' + (f'; filename="{filename}"' if filename else "")
        out.append(f"--{BOUNDARY}\r\nContent-Disposition: {disposition}\r\n\r\n".encode())
        out.append(content + b"\r\n")
    out.append(f"--{BOUNDARY}--\r\n".encode())
    return b"".join(out)


def _post_streamed(client: TestClient, path: str, body: bytes, chunk: int = 64 * 1024) -> Any:
    """POST ``body`` to the app in chunks of ``chunk`` bytes, as a server receives it from
    the network (the test client would hand the app the whole body at once)."""

    async def send() -> httpx.Response:
        async def chunks() -> AsyncIterator[bytes]:
            for start in range(0, len(body), chunk):
                yield body[start : start + chunk]

        transport = httpx.ASGITransport(app=client.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as http:
            headers = {"content-type": f"multipart/form-data; boundary={BOUNDARY}"}
            return await http.post(path, content=chunks(), headers=headers)

    assert client.portal is not None  # inside the client's context: the app is started
    return client.portal.call(send)


@pytest.fixture
def json_8mib(tmp_path: Path) -> Iterator[TestClient]:
    settings = make_settings(tmp_path, max_request_bytes=64 * MiB, max_json_bytes=8 * MiB)
    with TestClient(create_app(settings)) as c:
        yield c


def test_a_text_field_over_the_json_cap_is_refused_before_it_is_held(
    json_8mib: TestClient,
) -> None:
    """A 12 MB text field against an 8 MiB JSON cap: refused while it streams, without
    holding the 8 MiB it was allowed (a form parser that buffers text fields holds it)."""
    body = _multipart([("json", None, b" " * (12 * MiB))])
    r, peak = _peak(lambda: _post_streamed(json_8mib, "/predict", body))
    assert_error(r, 413, "request_too_large", "text part 'json'", "OKBOOST_MAX_JSON_BYTES")
    assert "as a file part" in r.json()["error"]["message"]
    assert peak < 4 * MiB, f"{peak / MiB:.1f} MiB allocated while refusing the text field"


def test_text_fields_are_bounded_together_while_they_stream(json_8mib: TestClient) -> None:
    """Four 3 MiB text fields, each under the 8 MiB cap, 12 MiB together."""
    names = ("inputs", "candidates", "candidate_gram", "candidate_diag")
    body = _multipart([(name, None, b"[" + b" " * (3 * MiB) + b"]") for name in names])
    r, peak = _peak(lambda: _post_streamed(json_8mib, "/predict", body))
    assert_error(
        r, 413, "request_too_large", "text part 'candidate_gram'", "OKBOOST_MAX_JSON_BYTES"
    )
    assert peak < 4 * MiB, f"{peak / MiB:.1f} MiB allocated while refusing the text fields"


def test_a_text_field_larger_than_the_spool_is_read_whole(
    client: TestClient, trained: dict[str, Any], graph: Any
) -> None:
    """A json text field of 3 MB (spooled to disk past 1 MiB) is read back intact."""
    request = {"model_id": trained["model_id"], "inputs": graph.features[graph.test].tolist()}
    text = json.dumps(request).encode() + b" " * (3 * MiB)
    r = _post_streamed(client, "/predict", _multipart([("json", None, text)]))
    assert r.status_code == 200, r.text
    assert len(r.json()["indices"]) == len(graph.test)


def test_a_text_field_that_is_not_utf8_is_refused(client: TestClient) -> None:
    body = _multipart([("json", None, b'{"model_id": "\xff"}')])
    r = _post_streamed(client, "/predict", body)
    assert_error(r, 422, "invalid_data", "text part 'json'", "UTF-8")


def test_a_part_without_a_name_is_refused(client: TestClient) -> None:
    body = (
        f"--{BOUNDARY}\r\nContent-Disposition: form-data\r\n\r\n{{}}\r\n--{BOUNDARY}--\r\n"
    ).encode()
    r = _post_streamed(client, "/predict", body)
    assert_error(r, 422, "invalid_data", "has no name")


def test_too_many_text_fields_are_refused(client: TestClient) -> None:
    """257 text fields (named after no field here: the form reader is asked alone)."""
    from starlette.requests import Request

    from service.errors import InvalidRequest
    from service.http.multipart import read_form

    body = _multipart([(f"f{i}", None, b"1") for i in range(257)])

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}

    ctype = f"multipart/form-data; boundary={BOUNDARY}".encode()
    request = Request(
        {"type": "http", "method": "POST", "headers": [(b"content-type", ctype)]}, receive
    )
    with pytest.raises(InvalidRequest, match="more than 256 text fields"):
        client.portal.call(  # type: ignore[union-attr]
            lambda: read_form(request, max_files=256, max_fields=256, max_text_bytes=MiB)
        )


def test_a_body_cut_before_its_closing_boundary_is_refused(client: TestClient) -> None:
    body = _multipart([("json", None, b'{"model_id": "' + b"0" * 32 + b'"}')])
    cut = body[: body.rindex(f"--{BOUNDARY}--".encode())]
    r = _post_streamed(client, "/predict", cut[:-10])
    assert_error(r, 422, "invalid_data", "inside part 'json'", "closing boundary")


@pytest.mark.parametrize(
    ("part", "upload"),
    [
        ("inputs", ("q.csv", b"0.1,0.2,0.3,0.4\n0.5,0.6,0.7,0.8\n", "text/csv")),
        ("inputs", ("q.npy", b"")),  # filled in below: a .npy part
        ("inputs", (None, "[[0.5, 0.6, 0.7, 0.8]]")),  # a JSON text part
    ],
    ids=["table", "npy", "text"],
)
def test_a_field_in_the_json_part_and_as_a_part_is_refused(
    client: TestClient, trained: dict[str, Any], part: str, upload: tuple[Any, ...]
) -> None:
    """The file part silently won over the json part's `inputs` (200, its rows answered)."""
    if upload[0] == "q.npy":
        buf = io.BytesIO()
        np.save(buf, np.full((2, 4), 0.5))
        upload = ("q.npy", buf.getvalue())
    spec = {"model_id": trained["model_id"], "inputs": [[0.1, 0.2, 0.3, 0.4]]}
    files = {"json": (None, json.dumps(spec)), part: upload}
    r = client.post("/kernel", files=files)
    assert_error(
        r, 422, "invalid_data", "'inputs' is given twice", "send it once", "json", "file part"
    )


def test_a_nested_field_in_the_json_part_and_as_a_part_is_refused(client: TestClient) -> None:
    X = np.random.default_rng(0).normal(size=(10, 2))
    spec = {"inputs": X.tolist(), "output_kernel": {"type": "linear", "outputs": X.tolist()}}
    buf = io.BytesIO()
    np.save(buf, X)
    files = {"json": (None, json.dumps(spec)), "output_kernel.outputs": ("Y.npy", buf.getvalue())}
    r = client.post("/train", files=files)
    assert_error(r, 422, "invalid_data", "'output_kernel.outputs' is given twice")
