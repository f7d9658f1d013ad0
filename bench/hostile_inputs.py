"""Hostile inputs against a live server: per attack, the answer and the server's peak RSS growth.

Starts `okboost serve` of this source tree on loopback with default settings (no token, a
temporary model store), trains one small model, then sends each attack below and reports
its status, its error code and how much the server's peak resident memory grew while it was
answered: the kernel's high-water mark (VmHWM) is reset before each attack (writing 5 to
/proc/<pid>/clear_refs) and compared with the resident size (VmRSS) just before. After
every attack, GET /models must answer 200.

Target: every attack a 4xx (403 for the cross-site ones; 202 for the queued bipartite jobs,
which are then deleted) with less than 50 MB growth, in less than 10 s (the drip-fed body,
sent alongside the others, is cut at the body deadline, 300 s), and the store's model files
byte-identical afterwards.

    python -m bench.hostile_inputs            # results in bench/results/hostile_inputs.*
"""

from __future__ import annotations

import argparse
import io
import json
import os
import platform
import shutil
import socket
import struct
import sys
import tarfile
import tempfile
import threading
import time
import zipfile
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from bench.bench_service import start_server
from bench.common import RESULTS_DIR, cpu_model, write_result

MB = 1_000_000
MiB = 1 << 20
TARGET_MB = 50.0
ROOT = "okboost-model"
GZIP = {"content-type": "application/gzip"}
EVIL = {"origin": "https://evil.example", "sec-fetch-site": "cross-site"}
BOUNDARY = "okboost-hostile"
EXPECTED = {"queued_bipartite_3_x_20000x1000": (202,), "csv_missing_values": (200,)}
"""Attacks whose right answer is not a 4xx: the fix bounds what they hold."""
REQUESTS = {"10000_unknown_model_ids": 10_000}
"""Attacks of many requests: the 10 s target is per request."""
DRIP_EVERY = 1.0
"""Seconds between two bytes of the drip-fed body (within the 30 s read timeout)."""


# ---------------------------------------------------------------- server memory
def _status_kb(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/{pid}/status")


def measure(pid: int, send: Callable[[], httpx.Response]) -> tuple[httpx.Response, float, float]:
    """(answer, peak RSS growth in MB, seconds) of one attack."""
    Path(f"/proc/{pid}/clear_refs").write_text("5")  # reset VmHWM to the current RSS
    before = _status_kb(pid, "VmRSS")
    start = time.perf_counter()
    answer = send()
    seconds = time.perf_counter() - start
    peak = _status_kb(pid, "VmHWM")
    return answer, (peak - before) * 1024 / MB, seconds


# ---------------------------------------------------------------- payloads
def _tar_gz(members: dict[str, bytes], *, fmt: int = tarfile.PAX_FORMAT, **first: Any) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz", format=fmt, compresslevel=6) as tar:
        for i, (name, data) in enumerate(members.items()):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            for key, value in (first if i == 0 else {}).items():
                setattr(info, key, value)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _members(archive: bytes) -> dict[str, bytes]:
    out = {}
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
        for m in tar.getmembers():
            f = tar.extractfile(m)
            if f is not None:
                out[m.name] = f.read()
    return out


def _relist(members: dict[str, bytes]) -> dict[str, bytes]:
    """export.json rewritten to match tampered members (what an attacker would do)."""
    import hashlib

    key = f"{ROOT}/export.json"
    manifest = json.loads(members[key])
    manifest["files"] = {
        n.removeprefix(f"{ROOT}/"): {"sha256": hashlib.sha256(d).hexdigest(), "size": len(d)}
        for n, d in members.items()
        if n != key
    }
    return {**members, key: json.dumps(manifest).encode()}


def _zeros_tar_gz(name: str, size: int) -> bytes:
    """A .tar.gz of one member of ``size`` zero bytes, compressed as it is produced."""
    info = tarfile.TarInfo(name)
    info.size = size
    header = info.tobuf(tarfile.USTAR_FORMAT)
    gz = zlib.compressobj(9, zlib.DEFLATED, 31)  # gzip wrapper
    out = [gz.compress(header)]
    block = bytes(MiB)
    for _ in range(size // MiB):
        out.append(gz.compress(block))
    out.append(gz.compress(bytes(size % MiB + (-size % 512) + 1024)))
    out.append(gz.flush())
    return b"".join(out)


def _npz_with_extra(arrays_npz: bytes, extra_bytes: int) -> bytes:
    buf = io.BytesIO()
    with (
        zipfile.ZipFile(io.BytesIO(arrays_npz)) as src,
        zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as dst,
    ):
        for info in src.infolist():
            dst.writestr(info.filename, src.read(info), zipfile.ZIP_STORED)
        header = io.BytesIO()
        np.lib.format.write_array_header_1_0(
            header, {"descr": "<f8", "fortran_order": False, "shape": (extra_bytes // 8,)}
        )
        with dst.open("zeros.npy", "w", force_zip64=True) as fh:
            fh.write(header.getvalue())
            block = bytes(MiB)
            for _ in range(extra_bytes // MiB):
                fh.write(block)
    return buf.getvalue()


def _coo_npz(rows: int) -> bytes:
    buf = io.BytesIO()
    np.savez_compressed(
        buf,
        format=np.array("coo"),
        shape=np.array([rows, 5]),
        row=np.array([0]),
        col=np.array([0]),
        data=np.array([1.0]),
    )
    return buf.getvalue()


def _lying_npz(declared: int, inflated: int) -> bytes:
    """An .npz whose member declares ``declared`` bytes but inflates to ``inflated``."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        with zf.open("format.npy", "w", force_zip64=True) as fh:
            block = bytes(MiB)
            for _ in range(inflated // MiB):
                fh.write(block)
    data = bytearray(buf.getvalue())
    central = data.index(b"PK\x01\x02")
    struct.pack_into("<I", data, central + 24, declared)
    return bytes(data)


# ---------------------------------------------------------------- attacks
Attack = tuple[str, str, Callable[[], httpx.Response]]


def _form(parts: dict[str, tuple[None, str]]) -> bytes:
    """A multipart body of text fields, with the boundary of :func:`_form_type`."""
    out = [f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="{k}"\r\n\r\n{v}\r\n'
           for k, (_, v) in parts.items()]  # fmt: skip
    return ("".join(out) + f"--{BOUNDARY}--\r\n").encode()


def _form_type(charset: str) -> dict[str, str]:
    return {"content-type": f"multipart/form-data; boundary={BOUNDARY}; charset={charset}"}


def attacks(
    http: httpx.Client, model: dict[str, Any], archive: bytes, store: Path
) -> Iterator[Attack]:
    """(name, what it is, send) for each attack; payloads are built before each is sent."""
    good = _members(archive)
    mid, p = model["model_id"], model["p"]
    row = [0.0] * p

    def post(path: str, **kw: Any) -> Callable[[], httpx.Response]:
        return lambda: http.post(path, **kw)

    body = _tar_gz(good, pax_headers={"comment": "a" * (300 * MB)})
    yield ("pax_header_bomb", f"{len(body) / MB:.1f} MB archive, 300 MB PAX comment",
           post("/models/import", content=body, headers=GZIP))  # fmt: skip
    body = _tar_gz({f"{ROOT}/" + "a" * (64 * MB): b"x", **good}, fmt=tarfile.GNU_FORMAT)
    yield ("gnu_long_name_bomb", f"{len(body) / MB:.1f} MB archive, 64 MB member name",
           post("/models/import", content=body, headers=GZIP))  # fmt: skip
    body = _zeros_tar_gz(f"{ROOT}/inputs.npy", (4 << 30) + MiB)
    yield ("gzip_bomb", f"{len(body) / MB:.1f} MB archive expanding to 4 GiB + 1 MiB",
           post("/models/import", content=body, headers=GZIP))  # fmt: skip
    key = f"{ROOT}/estimator/arrays.npz"
    body = _tar_gz(_relist({**good, key: _npz_with_extra(good[key], 400 * MB)}))
    yield ("npz_member_bomb", f"{len(body) / MB:.2f} MB archive, a 400 MB zero .npz member",
           post("/models/import", content=body, headers=GZIP))  # fmt: skip
    npy = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        npy, {"descr": "<f8", "fortran_order": False, "shape": (400 * MB // 8 // p, p)}
    )
    big = npy.getvalue() + bytes(400 * MB // 8 // p * p * 8)
    body = _tar_gz(_relist({**good, f"{ROOT}/inputs.npy": big}))
    del big
    yield ("training_array_bomb", f"{len(body) / MB:.2f} MB archive, a 400 MB inputs.npy",
           post("/models/import", content=body, headers=GZIP))  # fmt: skip
    record = json.loads(good[f"{ROOT}/record.json"])
    record["padding"] = "x" * (100 * MB)
    body = _tar_gz(_relist({**good, f"{ROOT}/record.json": json.dumps(record).encode()}))
    yield ("huge_record_json", f"{len(body) / MB:.1f} MB archive, 100 MB record.json",
           post("/models/import", content=body, headers=GZIP))  # fmt: skip
    part = _coo_npz(10_000_000)
    files = {"json": (None, json.dumps({"model_id": mid}))}
    files.update({f"x{i}": (f"x{i}.npz", part) for i in range(40)})
    yield ("many_sparse_parts", "40 parts of 1 KB, each a COO .npz declaring 10^7 rows",
           post("/predict", files=files))  # fmt: skip
    dup = [("json", (None, json.dumps({"model_id": mid})))]
    dup += [("inputs", ("inputs.npz", part))] * 40
    yield ("repeated_sparse_parts", "the same, all named 'inputs'",
           post("/predict", files=dup))  # fmt: skip
    part = _lying_npz(100, 1 << 30)
    files = {"json": (None, json.dumps({"model_id": mid})), "inputs": ("i.npz", part)}
    yield ("lying_zip_member", f"{len(part) / MB:.1f} MB part declaring 100 bytes, inflating to 1 GiB",
           post("/predict", files=files))  # fmt: skip
    text = json.dumps({"model_id": mid, "inputs": [row] * (100 * MB // (6 * p))})
    yield ("json_part_over_json_cap", f"{len(text) / MB:.0f} MB multipart json part",
           post("/predict", files={"json": (None, text)}))  # fmt: skip
    fields = {"json": (None, json.dumps({"model_id": mid}))}
    fields.update({f"inputs{i}": (None, "[" + " " * (30 * MB) + "]") for i in ("", "2")})
    fields["candidates"] = (None, "[" + " " * (30 * MB) + "]")
    yield ("text_fields_over_json_cap", "3 text fields of 30 MB, each under the JSON cap",
           post("/predict", files=fields))  # fmt: skip
    del fields
    yield ("json_body_over_json_cap", f"{len(text) / MB:.0f} MB JSON body",
           post("/predict", content=text, headers={"content-type": "application/json"}))  # fmt: skip
    yield ("cross_site_import", "text/plain archive from a page of another site",
           post("/models/import", content=archive, headers={**EVIL, "content-type": "text/plain"}))  # fmt: skip
    train = {"json": (None, json.dumps({"inputs": [row], "output_kernel": {}}))}
    yield ("cross_site_train_form", "multipart /train from a page of another site",
           post("/train", files=train, headers=EVIL))  # fmt: skip
    yield ("cross_site_delete", "DELETE /models/{id} from a page of another site",
           lambda: http.delete(f"/models/{mid}", headers=EVIL))  # fmt: skip
    yield ("text_plain_import", "text/plain archive, no Origin (a form a page posts)",
           post("/models/import", content=archive, headers={"content-type": "text/plain"}))  # fmt: skip
    q = 20_000_000 // min(10_000, model["n"]) + 1  # top_k beyond N returns N per row
    yield ("q_times_top_k", f"top_k 10,000 (N = {model['n']}) for {q} queries, cap 2 x 10^7",
           post("/predict", json={"model_id": mid, "inputs": [row] * q, "top_k": 10_000}))  # fmt: skip
    n_cand = 20_000_000 // model["n"] + 1
    cand = np.zeros((n_cand, model["d"])).tolist()
    yield ("candidates_times_n", f"{n_cand} candidates x N = {model['n']}",
           post("/predict", json={"model_id": mid, "inputs": [row], "candidates": cand}))  # fmt: skip
    yield ("kernel_top_k_10e6", "/kernel top_k = 10^6",
           post("/kernel", json={"model_id": mid, "inputs": [row], "top_k": 10**6}))  # fmt: skip
    yield ("ragged_row", "inputs with a short row",
           post("/predict", json={"model_id": mid, "inputs": [row, row[:-1]]}))  # fmt: skip
    yield ("na_value", "'NA' as a value",
           post("/predict", json={"model_id": mid, "inputs": [row, ["NA", *row[1:]]]}))  # fmt: skip
    yield ("job_id_as_model_id", "a job id sent as a model id",
           post("/predict", json={"model_id": model["job_id"], "inputs": [row]}))  # fmt: skip

    # ---- round 3: the multipart reader, tables, queued jobs, the store's boundaries
    one = {"json": (None, json.dumps({"model_id": mid}))}
    for codec in ("rot13", "base64", "punycode", "hex", "zlib", "bz2", "uu", "undefined"):
        yield (f"charset_{codec}", f"multipart charset={codec}",
               post("/predict", content=_form(one), headers=_form_type(codec)))  # fmt: skip
    csv = {"inputs": ("x.csv", b'1,2,3,4,5\n1,2,3,4,"3\n4"\n', "text/csv")}
    yield ("csv_quoted_newline", "a CSV cell holding a quoted newline",
           post("/predict", data={"json": json.dumps({"model_id": mid})}, files=csv))  # fmt: skip
    wide = ("\t".join(f"v{j}" for j in range(40_000)) + "\n").encode() * 2
    files = {"output_kernel.edges": ("e.tsv", wide, "text/tab-separated-values")}
    yield ("edges_tsv_40000_columns", f"an edges TSV of 2 rows x 40,000 columns ({len(wide) / 1e3:.0f} KB)",
           post("/train", data={"json": json.dumps({"inputs": [row], "output_kernel": {"type": "diffusion"}})},
                files=files))  # fmt: skip
    ids = {"ids": ("ids.txt", b"a\n" * 1_000_000, "text/plain")}
    yield ("ids_1e6_lines", "an ids part of 1,000,000 one-character lines (2 MB)",
           post("/predict", data={"json": json.dumps({"model_id": mid, "inputs": [row]})}, files=ids))  # fmt: skip
    long = {"inputs": ("x.csv", b"1,2,3\n" * 400_000, "text/csv")}
    yield ("inputs_csv_400000_rows", "an inputs CSV of 400,000 rows (2.4 MB)",
           post("/predict", data={"json": json.dumps({"model_id": mid})}, files=long))  # fmt: skip
    nan = {"inputs": ("x.csv", b"0.5,0.1,0.2,0.3,0.4\n1.5,nan,0.3,NA,\n", "text/csv")}
    yield ("csv_missing_values", "an inputs CSV with nan, NA and an empty cell (200 expected: the tree model takes missing values)",
           post("/predict", data={"json": json.dumps({"model_id": mid})}, files=nan))  # fmt: skip
    labelled = b",a,b\na,1,0.5\na,0.5,1\n"
    spec = {
        "input_kind": "similarity",
        "output_kernel": {"type": "linear", "outputs": [[0.0], [1.0]]},
    }
    yield ("labelled_similarity_duplicate_id", "a labelled similarity naming one id twice",
           post("/train", data={"json": json.dumps(spec)}, files={"inputs": ("s.csv", labelled, "text/csv")}))  # fmt: skip
    junk = [("json", (None, json.dumps({"model_id": mid})))]
    junk += [(f"x{i}", (f"x{i}.bin", bytes(MiB))) for i in range(100)]
    yield ("unknown_parts_100_x_1mb", "100 file parts of 1 MiB named after no field",
           post("/predict", files=junk))  # fmt: skip

    def queued_bipartite() -> httpx.Response:
        body = {"task": "bipartite", "rows": {"inputs": [[0.0]] * 20_000},
                "cols": {"inputs": [[0.0]] * 1_000}, "edges": [[0, 0]],
                "params": {"n_estimators": 2}, "wait": False}  # fmt: skip
        answers = [http.post("/train", json=body) for _ in range(3)]
        for a in answers:  # cancelled and removed: the store is as before
            if a.status_code == 202:
                http.delete(f"/models/{a.json()['model_id']}")
        return answers[-1]

    yield ("queued_bipartite_3_x_20000x1000", "3 queued bipartite jobs of 20,000 x 1,000, one edge each (202 expected)",
           queued_bipartite)  # fmt: skip

    def one_client_fills_the_queue() -> httpx.Response:
        # long jobs (estimated 2 minutes: not for the short-job slot): one runs, others wait
        X = np.random.default_rng(0).normal(size=(200, 5)).round(3).tolist()
        body = {"inputs": X, "output_kernel": {"type": "rbf", "gamma": 0.5,
                "outputs": [[float(i % 7)] for i in range(200)]},
                "params": {"n_estimators": 50_000}, "wait": False}  # fmt: skip
        answers = []
        while len(answers) < 40 and (not answers or answers[-1].status_code == 202):
            answers.append(http.post("/train", json=body))
        for a in answers:  # cancelled and removed: the store is as before
            if a.status_code == 202:
                http.delete(f"/models/{a.json()['model_id']}")
        print(f"  one client's jobs accepted before its 429: {len(answers) - 1}", flush=True)
        return answers[-1]

    yield ("one_client_fills_the_queue", "one client queues long jobs until refused (16 may "
           "wait: OKBOOST_MAX_QUEUED_JOBS_PER_CLIENT)", one_client_fills_the_queue)  # fmt: skip

    def linked_folder() -> httpx.Response:
        link = store / ("f" * 32)
        outside = store.parent / "outside-model"
        shutil.copytree(store / mid, outside)
        (outside / "secret.txt").write_text("outside the store")
        link.symlink_to(outside, target_is_directory=True)
        try:
            return http.get(f"/models/{'f' * 32}/export")
        finally:
            link.unlink()
            shutil.rmtree(outside)

    yield ("linked_model_folder_export", "export of a model folder linked outside the store",
           linked_folder)  # fmt: skip

    def unknown_ids() -> httpx.Response:
        last = None
        for i in range(10_000):
            last = http.post("/predict", json={"model_id": f"{i:032x}", "inputs": [row]})
        assert last is not None
        return last

    yield ("10000_unknown_model_ids", "10,000 /predict with unknown model ids", unknown_ids)


def train_model(http: httpx.Client) -> dict[str, Any]:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 5))
    Y = np.column_stack([np.sin(X[:, 0]), X[:, 1] * X[:, 2]])
    body = {
        "inputs": X.tolist(),
        "output_kernel": {"type": "rbf", "outputs": Y.tolist(), "gamma": 0.5},
        "params": {"n_estimators": 5},
        "wait": True,
    }
    r = http.post("/train", json=body)
    r.raise_for_status()
    return {**r.json(), "n": 200, "p": 5, "d": 2}


def store_digest(root: Path) -> dict[str, str]:
    """SHA-256 of every model file of the store (job records and temporaries aside)."""
    import hashlib

    out = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_file() and not rel.startswith(("jobs/", ".tmp-")):
            out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def drip(url: str, result: dict[str, Any]) -> None:
    """A body promised as 100,000 bytes, sent one byte every DRIP_EVERY seconds: each gap
    within the read timeout, the whole past the body deadline (OKBOOST_BODY_DEADLINE)."""
    host, port = url.removeprefix("http://").split(":")
    start = time.perf_counter()
    with socket.create_connection((host, int(port)), timeout=DRIP_EVERY) as sock:
        sock.sendall(
            b"POST /train HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Content-Length: 100000\r\n\r\n"
        )
        answer = b""
        while time.perf_counter() - start < 900:
            try:
                sock.sendall(b" ")
                answer = sock.recv(65536)
            except TimeoutError:
                continue
            except OSError:
                break
            if answer:
                break
        sock.settimeout(10)
        while chunk := sock.recv(65536):  # the rest of the answer, until the server closes
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    status = int(head.split()[1]) if head else 0
    try:
        error = json.loads(body).get("error", {})
    except ValueError:
        error = {}
    result.update(status=status, error=error, seconds=time.perf_counter() - start)


def run(out_stem: Path) -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory(prefix="okboost-hostile-") as tmp:
        store = Path(tmp) / "models"
        proc, url = start_server(store, Path(tmp) / "server.log")
        rows: list[dict[str, Any]] = []
        try:
            with httpx.Client(base_url=url, timeout=600) as http:
                model = train_model(http)
                archive = http.get(f"/models/{model['model_id']}/export").content
                before = store_digest(store)
                dripped: dict[str, Any] = {}
                dripper = threading.Thread(target=drip, args=(url, dripped), daemon=True)
                dripper.start()  # alongside the others: it lasts the body deadline
                for name, what, send in attacks(http, model, archive, store):
                    answer, growth, seconds = measure(proc.pid, send)
                    try:
                        error = answer.json().get("error", {})
                    except ValueError:
                        error = {}
                    rows.append(_row(name, what, answer.status_code, error, growth, seconds,
                                     http.get("/models").status_code))  # fmt: skip
                dripper.join()
                rows.append(_row("drip_fed_body", f"one byte every {DRIP_EVERY:g} s (defaults: "
                                 "30 s read timeout, 300 s body deadline); run alongside the others",
                                 dripped["status"], dripped["error"], None, dripped["seconds"],
                                 http.get("/models").status_code))  # fmt: skip
                models = http.get("/models").json()["models"]
                assert [m["model_id"] for m in models] == [model["model_id"]], models
                same = store_digest(store) == before
                print(f"store byte-identical after the attacks: {same}")
                for row in rows:
                    row["store_unchanged"] = same
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    return rows


def _row(
    name: str, what: str, status: int, error: dict[str, Any], growth: float | None,
    seconds: float, listing: int,
) -> dict[str, Any]:  # fmt: skip
    expected = EXPECTED.get(name)
    status_ok = status in expected if expected else 400 <= status < 500
    # the drip is cut at the 300 s deadline; a many-request attack: 10 s per request
    time_ok = seconds / REQUESTS.get(name, 1) < 10 or name == "drip_fed_body"
    row = {
        "attack": name,
        "what": what,
        "status": status,
        "code": error.get("code"),
        "message": str(error.get("message", ""))[:160],
        "peak_rss_growth_mb": None if growth is None else round(growth, 1),
        "seconds": round(seconds, 2),
        "get_models": listing,
        "ok": status_ok and (growth is None or growth < TARGET_MB) and time_ok and listing == 200,
    }
    shown = "   -  " if growth is None else f"{growth:6.1f}"
    print(
        f"{name:34s} {status} {str(row['code']):24s} {shown} MB {seconds:7.2f} s  "
        f"{'ok' if row['ok'] else 'OVER TARGET'}  {row['message'][:70]}",
        flush=True,
    )
    return row


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=str(RESULTS_DIR / "hostile_inputs"))
    args = parser.parse_args(argv)
    started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    rows = run(Path(args.out))
    report = {
        "started": started,
        "machine": {
            "cpu": cpu_model(),
            "cores": os.cpu_count(),
            "load_average_1_5_15": os.getloadavg(),
            "python": sys.version.split()[0],
            "platform": platform.platform(),
        },
        "settings": "defaults (no token, loopback), temporary model store",
        "target": f"every attack 4xx (202 where noted) with < {TARGET_MB:.0f} MB peak RSS growth, "
        "< 10 s, GET /models 200, the store byte-identical",
        "attacks": rows,
        "all_ok": all(r["ok"] for r in rows),
    }
    write_result(Path(args.out + ".json"), report)
    lines = [
        f"hostile inputs against a live server, {started}",
        f"machine: {report['machine']}",
        f"target: {report['target']}",
        "",
        f"{'attack':34s} {'status':6s} {'peak RSS growth':>16s} {'seconds':>8s}  message",
    ]
    for r in rows:
        growth = r["peak_rss_growth_mb"]
        shown = "       -" if growth is None else f"{growth:8.1f}"
        lines.append(
            f"{r['attack']:34s} {r['status']:<6d} {shown:>13s} MB {r['seconds']:8.2f}  "
            f"{r['message'][:90]}" + ("" if r["ok"] else "  OVER TARGET")
        )
    lines.append("")
    lines.append(f"all attacks within target: {report['all_ok']}")
    lines.append(f"store byte-identical afterwards: {all(r['store_unchanged'] for r in rows)}")
    write_result(Path(args.out + ".txt"), "\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
