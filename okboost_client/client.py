"""Python client of the okboost service (httpx + numpy), taking and returning numpy arrays.

>>> from okboost_client import OKBoostClient
>>> c = OKBoostClient("http://127.0.0.1:8000")
>>> fit = c.train(X, {"type": "diffusion", "beta": 1.0, "edges": E}, params={"n_estimators": 100})
>>> job = c.wait(fit["job_id"])
>>> out = c.kernel(fit["model_id"], X_new, threshold=0.5)
>>> out["kernel"].shape, out["edges"]["new_known"][:3]
>>> c.evaluate(fit["model_id"], X_test, new_known=E_test)["auc"]

Bipartite networks (``train_bipartite``, ``kernel_bipartite``, ``evaluate_bipartite``) and
label sets (``train_multilabel``, ``predict_labels``, ``evaluate_labels``) have their own
methods.

Arrays are sent as ``.npy`` parts of a multipart request (``binary=True``, the
default) or as JSON lists (``binary=False``). Inputs keep their dtype when it is
float64, float32 or uint8 (others are sent as float64), and may be scipy sparse
matrices: sent in CSR layout as parts ``inputs.data``, ``inputs.indices``,
``inputs.indptr`` and the text field ``inputs.shape`` (or as a JSON object
``{data, indices, indptr, shape}`` with ``binary=False``). Vertex ids (``ids=``, and
edges given as pairs of ids) travel as text parts. With ``binary=True`` the answers of
/kernel and /predict also come back binary (``Accept: application/x-npz``), read with
``allow_pickle=False``; either way their arrays are returned as ndarrays. Wherever inputs
go, a pandas DataFrame works too: its ``id`` column (or else its first non-numeric column)
gives the ids, the other columns the inputs; edges may be a two-column DataFrame.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from okboost_client.encoding import (
    as_inputs,
    edge_arrays,
    from_npz,
    id_array,
    jsonable,
    pairs,
    split_arrays,
    table_inputs,
)
from okboost_client.tasks import TaskMethods

NPZ = "application/x-npz"
# fields a binary answer leaves out when they are null (the JSON answer has them as null)
KERNEL_FIELDS: dict[str, Any] = {"kernel": None, "edges": None}
PREDICT_FIELDS: dict[str, Any] = dict.fromkeys(
    ("outputs", "weights", "weights_sparse", "index_ids", "weights_sparse_ids")
)


class OKBoostError(Exception):
    """An error answer of the service, in its one JSON error shape."""

    def __init__(
        self, status: int, code: str, message: str, details: list[dict[str, Any]] | None = None
    ) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.details = details or []


class _Http(httpx.Client):
    """httpx's client whose transport errors name the URL: httpx says only "[Errno 111]
    Connection refused" or "timed out". The error keeps its type (``httpx.ConnectError``,
    ``httpx.ReadTimeout`` ...), the original as its ``__cause__``."""

    def send(self, request: httpx.Request, **kwargs: Any) -> httpx.Response:
        try:
            return super().send(request, **kwargs)
        except httpx.TimeoutException as exc:
            limit = self.timeout.read
            raise type(exc)(
                f"{request.method} {request.url} got no answer within timeout = {limit} s "
                f"({exc}): give the client a larger timeout (a long training: train without "
                "wait, then wait for the job)",
                request=request,
            ) from exc
        except httpx.TransportError as exc:
            raise type(exc)(
                f"cannot reach the okboost service at {request.url} ({exc}): is it running, "
                "and is the URL right?",
                request=request,
            ) from exc


class OKBoostClient(TaskMethods):
    """Mirrors the service's endpoints. Errors raise :class:`OKBoostError`."""

    def __init__(
        self,
        base_url: str = "http://127.0.0.1:8000",
        *,
        token: str | None = None,
        timeout: float = 300.0,
        binary: bool = True,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.binary = binary
        self._http = _Http(base_url=base_url, headers=headers, timeout=timeout, transport=transport)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> OKBoostClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------ plumbing
    def _check(self, response: httpx.Response) -> Any:
        if response.is_success and response.headers.get("content-type") == NPZ:
            return from_npz(response.content)
        try:
            data = response.json()
        except ValueError:
            data = None
        if response.is_success:
            return data
        err = (data or {}).get("error", {}) if isinstance(data, dict) else {}
        raise OKBoostError(
            response.status_code,
            err.get("code", "http_error"),
            err.get("message", response.text[:500]),
            err.get("details"),
        )

    def _post(self, path: str, body: dict[str, Any], *, binary_answer: bool = False) -> Any:
        body = {k: v for k, v in body.items() if v is not None}
        headers = {"Accept": NPZ} if self.binary and binary_answer else None
        if self.binary:
            plain, parts, texts = split_arrays(body)
            if parts:
                fields = {"json": json.dumps(jsonable(plain)), **texts}
                return self._check(self._http.post(path, data=fields, files=parts, headers=headers))
        return self._check(self._http.post(path, json=jsonable(body), headers=headers))

    # ------------------------------------------------------------ endpoints
    def train(
        self,
        inputs: Any,
        output_kernel: dict[str, Any],
        *,
        model: str | None = None,
        params: dict[str, Any] | None = None,
        name: str | None = None,
        eval_set: dict[str, Any] | None = None,
        ids: Any = None,
        cv: dict[str, Any] | None = None,
        input_kind: str = "features",
        input_map: str | None = None,
        input_components: int | None = None,
        sample_weight: Any = None,
        output_weight: Any = None,
        wait: bool = False,
    ) -> dict[str, Any]:
        """POST /train. ``model``: an estimator of the server's registry, or None for its
        default (the automatic choice, "auto", where it applies). ``inputs``: array (float64, float32 and uint8 sent as they are) or
        scipy sparse matrix (sent as CSR). ``output_kernel`` is the request's dict, arrays as
        ndarrays or lists, e.g. ``{"type": "precomputed", "gram": K}``; with ``ids`` (one
        string per row) the diffusion kernel's ``edges`` may be pairs of ids.

        ``cv``: K-fold cross-validation before the final fit, e.g. ``{"folds": 5, "grid":
        {"max_splits": [2, 8]}, "scoring": "auc", "random_state": 0}``; the best grid values
        are fitted on all rows and the model record's ``cv`` holds the table. Any score name
        of the service's ``cv.scoring`` (e.g. ``["f1", "ranking_loss"]`` for 0/1 label rows)
        and ``"search": "halving"`` (candidates raced over ``n_estimators``) pass as given.

        ``input_kind="similarity"``: ``inputs`` is the N x N similarity among the training
        items (predict, kernel and evaluate then take the Q x N similarity of new items to
        them); ``input_map`` "kernel_map" (default) or "kpca" with ``input_components``
        chooses how tree models read it (kernel models use it as their input kernel).

        ``sample_weight``: one weight >= 0 per row of ``inputs`` (not all 0), the loss a
        weighted sum (scikit-learn's ``sample_weight``); with ``cv`` the folds split them.
        ``output_weight``: one weight >= 0 per output column (linear kernel, okboost); unknown
        output entries go as NaN in ``output_kernel["outputs"]``.

        ``wait=True`` blocks until the model is trained (the answer's ``model``), at most the
        server's ``OKBOOST_WAIT_TIMEOUT`` seconds: then ``timed_out`` is True, ``wait_timeout``
        says the limit, and :meth:`wait` follows the job (``job_id``)."""
        inputs, ids = table_inputs(inputs, ids)
        kernel = {
            k: (pairs(v) if k == "edges" else np.asarray(v) if k in ("gram", "outputs") else v)
            for k, v in output_kernel.items()
        }
        body: dict[str, Any] = {
            "inputs": as_inputs(inputs),
            "output_kernel": kernel,
            "params": params or {},
            "name": name,
            "ids": None if ids is None else id_array(ids),
            "cv": cv,
            "wait": wait,
        }
        if model is not None:  # else the server's default model
            body["model"] = model
        if input_kind != "features":
            body["input_kind"] = input_kind
        if input_map is not None:
            body["input_map"] = input_map
        if input_components is not None:
            body["input_components"] = input_components
        if sample_weight is not None:
            body["sample_weight"] = np.asarray(sample_weight, dtype=np.float64)
        if output_weight is not None:
            body["output_weight"] = np.asarray(output_weight, dtype=np.float64)
        if eval_set is not None:
            body["eval_set"] = {
                k: as_inputs(v) if k == "inputs" else np.asarray(v) for k, v in eval_set.items()
            }
        result: dict[str, Any] = self._post("/train", body)
        return result

    def _pages(self, path: str, key: str, **params: Any) -> list[dict[str, Any]]:
        """Every item of a paginated list, following ``next_cursor`` page by page."""
        items: list[dict[str, Any]] = []
        cursor = None
        while True:
            query = {**params, **({"cursor": cursor} if cursor else {})}
            page = self._check(self._http.get(path, params=query))
            items.extend(page[key])
            cursor = page.get("next_cursor")
            if not cursor:
                return items

    def job(self, job_id: str, *, curves: bool = False) -> dict[str, Any]:
        """GET /jobs/{id}; ``curves=True`` adds the loss curves so far."""
        params = {"curves": "true"} if curves else None
        result: dict[str, Any] = self._check(self._http.get(f"/jobs/{job_id}", params=params))
        return result

    def jobs(self, *, curves: bool = False) -> list[dict[str, Any]]:
        """Every job (GET /jobs, all pages), oldest first."""
        return self._pages("/jobs", "jobs", curves=str(curves).lower())

    def cancel(self, job_id: str) -> dict[str, Any]:
        result: dict[str, Any] = self._check(self._http.delete(f"/jobs/{job_id}"))
        return result

    def wait(
        self,
        job_id: str,
        *,
        poll: float = 0.2,
        timeout: float | None = None,
        on_progress: Callable[[dict[str, Any]], None] | None = None,
    ) -> dict[str, Any]:
        """Poll GET /jobs/{id} until the job ends; raise OKBoostError unless it is done."""
        start = time.monotonic()
        while True:
            info = self.job(job_id)
            if on_progress is not None:
                on_progress(info)
            if info["state"] == "done":
                return info
            if info["state"] in ("failed", "cancelled"):
                raise OKBoostError(409, f"job_{info['state']}", info.get("error") or "")
            if timeout is not None and time.monotonic() - start > timeout:
                raise TimeoutError(f"job {job_id} still {info['state']} after {timeout} s")
            time.sleep(poll)

    def predict(
        self,
        model_id: str,
        inputs: Any,
        *,
        top_k: int = 1,
        return_outputs: bool = False,
        weights: str = "none",
        weights_top_k: int = 10,
        candidates: Any = None,
        candidate_gram: Any = None,
        candidate_diag: Any = None,
        ids: Any = None,
        input_columns: list[str] | None = None,
    ) -> dict[str, Any]:
        """POST /predict; arrays in the answer come back as ndarrays (``index_ids`` and
        ``weights_sparse_ids`` as string arrays when the model or ``ids`` names vertices).
        ``input_columns`` (also for ``kernel`` and ``evaluate``): names of the inputs'
        columns; for a model trained on a similarity with ids, the training items' ids in
        any order, matched by id by the service."""
        inputs, ids = table_inputs(inputs, ids)
        body = {
            "model_id": model_id,
            "input_columns": input_columns,
            "inputs": as_inputs(inputs),
            "ids": None if ids is None else id_array(ids),
            "top_k": top_k,
            "return_outputs": return_outputs,
            "weights": weights,
            "weights_top_k": weights_top_k,
            "candidates": None if candidates is None else np.asarray(candidates, dtype=float),
            "candidate_gram": None if candidate_gram is None else np.asarray(candidate_gram),
            "candidate_diag": None if candidate_diag is None else np.asarray(candidate_diag),
        }
        out: dict[str, Any] = {**PREDICT_FIELDS, **self._post("/predict", body, binary_answer=True)}
        out["indices"] = np.asarray(out["indices"], dtype=np.int64)
        out["scores"] = np.asarray(out["scores"], dtype=float)
        for key in ("outputs", "weights", "weights_sparse"):
            if out[key] is not None:
                out[key] = np.asarray(out[key], dtype=float)
        for key in ("index_ids", "weights_sparse_ids"):
            if out[key] is not None:
                out[key] = np.asarray(out[key], dtype=str)
        return out

    def kernel(
        self,
        model_id: str,
        inputs: Any,
        inputs2: Any = None,
        *,
        against: str = "predicted",
        threshold: float | None = None,
        top_k: int | None = None,
        known_scores: str = "predicted",
        return_kernel: bool = True,
        ids: Any = None,
        input_columns: list[str] | None = None,
    ) -> dict[str, Any]:
        """POST /kernel; ``kernel`` and the edge lists come back as ndarrays (edges of shape
        (E, 3): [a, b, score]; ``edges["new_new_ids"]`` / ``["new_known_ids"]`` (E, 2)
        strings when the model or ``ids`` names vertices)."""
        inputs, ids = table_inputs(inputs, ids)
        body = {
            "model_id": model_id,
            "input_columns": input_columns,
            "inputs": as_inputs(inputs),
            "ids": None if ids is None else id_array(ids),
            "inputs2": None if inputs2 is None else as_inputs(inputs2),
            "against": against,
            "threshold": threshold,
            "top_k": top_k,
            "known_scores": known_scores,
            "return_kernel": return_kernel,
        }
        out: dict[str, Any] = {**KERNEL_FIELDS, **self._post("/kernel", body, binary_answer=True)}
        out["shape"] = [int(n) for n in out["shape"]]
        if out["kernel"] is not None:
            out["kernel"] = np.asarray(out["kernel"], dtype=float)
        if out["edges"] is not None:
            out["edges"] = edge_arrays(out["edges"])
        return out

    def evaluate(
        self,
        model_id: str,
        inputs: Any,
        *,
        outputs: Any = None,
        gram_cross: Any = None,
        gram_diag: Any = None,
        new_new: Any = None,
        new_known: Any = None,
        ids: Any = None,
        input_columns: list[str] | None = None,
        k: int = 10,
        known_scores: str = "predicted",
    ) -> dict[str, Any]:
        """POST /evaluate: the model's scores on Q test inputs with their truth; a score
        whose truth is not given is None.

        ``outputs`` (Q x d, models trained on output vectors) or ``gram_cross`` (Q x N) with
        ``gram_diag`` (Q) give ``err_phi`` and ``err_y``. ``new_new`` (edges among the test
        vertices, pairs of rows of ``inputs``) and ``new_known`` (pairs [test row, training
        row]) give ``auc``, ``auc_new_new``, ``auc_new_known`` and ``precision_at_k`` (at
        ``k``); pairs not listed are non-edges. With ``ids`` (one string per test row) the
        edges may be pairs of ids instead (``new_known``: [test id, the model's training
        id])."""
        inputs, ids = table_inputs(inputs, ids)
        edges = {
            key: self._test_edges(value, key)
            for key, value in (("new_new", new_new), ("new_known", new_known))
            if value is not None
        }
        body = {
            "model_id": model_id,
            "input_columns": input_columns,
            "inputs": as_inputs(inputs),
            "ids": None if ids is None else id_array(ids),
            "outputs": None if outputs is None else np.asarray(outputs, dtype=float),
            "gram_cross": None if gram_cross is None else np.asarray(gram_cross, dtype=float),
            "gram_diag": None if gram_diag is None else np.asarray(gram_diag, dtype=float),
            "edges": edges or None,
            "k": k,
            "known_scores": known_scores,
        }
        result: dict[str, Any] = self._post("/evaluate", body)
        return result

    @staticmethod
    def _test_edges(value: Any, name: str) -> Any:
        """Test edges as the request takes them: pairs of rows as an int64 array (a binary
        part), pairs of ids as a JSON list (/evaluate reads ids from JSON only)."""
        arr = pairs(value)
        if arr.size == 0:
            return np.zeros((0, 2), dtype=np.int64)
        if arr.dtype.kind == "U":
            return id_array(arr, name).tolist()
        if arr.dtype.kind == "f" and not np.array_equal(arr, np.round(arr)):
            raise TypeError(f"{name} must be pairs of row indices (integers) or of ids (strings)")
        return arr.astype(np.int64)

    def models(self, *, curves: bool = False, importances: bool = False) -> list[dict[str, Any]]:
        """Every stored model (GET /models, all pages), oldest first; ``curves`` and
        ``importances`` add the loss curves and feature importances."""
        flags = {"curves": str(curves).lower(), "importances": str(importances).lower()}
        return self._pages("/models", "models", **flags)

    def model(
        self, model_id: str, *, curves: bool = False, importances: bool = False
    ) -> dict[str, Any]:
        """GET /models/{id}; ``curves`` and ``importances`` as in :meth:`models`."""
        flags = {"curves": str(curves).lower(), "importances": str(importances).lower()}
        result: dict[str, Any] = self._check(self._http.get(f"/models/{model_id}", params=flags))
        return result

    def delete_model(self, model_id: str) -> dict[str, Any]:
        result: dict[str, Any] = self._check(self._http.delete(f"/models/{model_id}"))
        return result

    def export_model(self, model_id: str, path: str | Path) -> Path:
        """GET /models/{id}/export: save the model's archive (.tar.gz) at ``path``."""
        path = Path(path)
        with self._http.stream("GET", f"/models/{model_id}/export") as response:
            if not response.is_success:
                response.read()
                self._check(response)
            with path.open("wb") as fh:
                for chunk in response.iter_bytes():
                    fh.write(chunk)
        return path

    def import_model(self, path: str | Path, *, on_conflict: str = "error") -> dict[str, Any]:
        """POST /models/import: upload an archive made by :meth:`export_model` (here or on
        another server); ``on_conflict="rename"`` gives it a new id when its id is taken.
        Answers the imported model's record."""
        with Path(path).open("rb") as fh:
            response = self._http.post(
                "/models/import",
                params={"on_conflict": on_conflict},
                content=fh,
                headers={"Content-Type": "application/gzip"},
            )
        result: dict[str, Any] = self._check(response)
        return result

    def health(self) -> dict[str, Any]:
        result: dict[str, Any] = self._check(self._http.get("/health/ready"))
        return result

    def version(self) -> dict[str, Any]:
        result: dict[str, Any] = self._check(self._http.get("/version"))
        return result
