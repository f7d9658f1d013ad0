"""CSV / TSV parts with ids and headers on /train, /kernel, /predict and /evaluate."""

from __future__ import annotations

import json
import re
from typing import Any

import numpy as np
import pytest
from svc_data import SMALL, Graph, TestClient, diffusion_request

from service.errors import InvalidRequest
from service.http.tables import declared_header, edges_of, matrix_of, parse_table

CSV, TSV = "text/csv", "text/tab-separated-values"


def name(v: int) -> str:
    return f"YAL{v:03d}W"


def features_csv(g: Graph, rows: np.ndarray) -> bytes:
    lines = ["id," + ",".join(f"f{j}" for j in range(g.features.shape[1]))]
    lines += [name(v) + "," + ",".join(str(float(x)) for x in g.features[v]) for v in rows]
    return ("\n".join(lines) + "\n").encode()


def edges_tsv(pairs: list[tuple[int, int]], header: bool = True) -> bytes:
    lines = ["source\ttarget"] if header else []
    lines += [f"{name(a)}\t{name(b)}" for a, b in pairs]
    return ("\r\n".join(lines) + "\r\n").encode()


def train_pairs(g: Graph) -> list[tuple[int, int]]:
    train = set(g.train.tolist())
    return [(int(a), int(b)) for a, b in g.edges if a in train and b in train]


def train_tables(client: TestClient, g: Graph, files: dict[str, Any], **kernel: Any) -> Any:
    spec = {"output_kernel": {"type": "diffusion", **kernel}, "params": SMALL, "wait": True}
    return client.post("/train", data={"json": json.dumps(spec)}, files=files)


def test_features_csv_with_ids_and_edges_tsv_with_header_train_kernel_evaluate(
    client: TestClient, graph: Graph
) -> None:
    g = graph
    files = {
        "inputs": ("features.csv", features_csv(g, g.train), CSV),
        "output_kernel.edges": ("edges.tsv", edges_tsv(train_pairs(g)), TSV),
    }
    r = train_tables(client, g, files)
    assert r.status_code == 201, r.text
    model = r.json()["model"]
    assert model["has_ids"] and model["kernel"]["n_edges"] == len(train_pairs(g))
    # the same model trained from JSON arrays and ids
    by_json = {
        "inputs": g.features[g.train].tolist(),
        "ids": [name(v) for v in g.train],
        "output_kernel": {
            "type": "diffusion",
            "edges": [[name(a), name(b)] for a, b in train_pairs(g)],
        },
        "params": SMALL,
        "wait": True,
    }
    twin = client.post("/train", json=by_json).json()["model_id"]
    mid = r.json()["model_id"]

    new = {"inputs": ("new.csv", features_csv(g, g.test), CSV)}
    ask = {"model_id": mid, "top_k": 10, "return_kernel": False}
    got = client.post("/kernel", data={"json": json.dumps(ask)}, files=new).json()
    want = client.post(
        "/kernel",
        json={**ask, "model_id": twin, "inputs": g.features[g.test].tolist(),
              "ids": [name(v) for v in g.test]},
    ).json()  # fmt: skip
    assert got["edges"] == want["edges"]
    partners = got["edges"]["new_known_ids"]
    assert partners[0][0] == name(int(g.test[0])) and len(partners) == 10 * len(g.test)
    pred = client.post("/predict", data={"json": json.dumps({"model_id": mid})}, files=new)
    assert pred.status_code == 200 and len(pred.json()["index_ids"]) == len(g.test)

    test, train = set(g.test.tolist()), set(g.train.tolist())
    nk = [
        (a, b) if a in test else (b, a) for a, b in g.edges.tolist() if (a in test) != (b in test)
    ]
    nn = [(a, b) for a, b in g.edges.tolist() if a in test and b in test]
    assert nk and all(b in train for _, b in nk)
    files = {
        **new,
        "edges.new_known": ("test.tsv", edges_tsv(nk), TSV),
        "edges.new_new": ("test-nn.tsv", edges_tsv(nn, header=False), TSV),
    }
    ev = client.post("/evaluate", data={"json": json.dumps({"model_id": mid})}, files=files)
    assert ev.status_code == 200, ev.text
    by_json_ev = client.post(
        "/evaluate",
        json={"model_id": twin, "inputs": g.features[g.test].tolist(),
              "ids": [name(v) for v in g.test],
              "edges": {"new_known": [[name(a), name(b)] for a, b in nk],
                        "new_new": [[name(a), name(b)] for a, b in nn]}},
    ).json()  # fmt: skip
    assert ev.json()["auc"] == by_json_ev["auc"] and ev.json()["auc"] is not None
    # one TSV of every test edge, either order: split by the ids
    mixed = [(b, a) for a, b in nk[::2]] + nk[1::2] + nn
    files = {**new, "edges.by_id": ("all.tsv", edges_tsv(mixed), TSV)}
    one = client.post("/evaluate", data={"json": json.dumps({"model_id": mid})}, files=files)
    assert one.status_code == 200, one.text
    assert one.json() == ev.json()


def test_a_csv_without_a_content_type_is_read_as_a_table(client: TestClient, graph: Graph) -> None:
    g = graph
    files = {
        "inputs": ("features.csv", features_csv(g, g.train), "application/octet-stream"),
        "output_kernel.edges": ("edges.tsv", edges_tsv(train_pairs(g)), "application/octet-stream"),
    }
    r = train_tables(client, g, files)
    assert r.status_code == 201, r.text
    assert r.json()["model"]["kernel"]["n_edges"] == len(train_pairs(g))


def test_row_index_edges_with_a_header_and_weights_of_one(client: TestClient, graph: Graph) -> None:
    g = graph
    X = "\n".join(",".join(str(float(x)) for x in row) for row in g.features[g.train]).encode()
    e = "a,b,weight\n" + "".join(f"{a},{b},1\n" for a, b in g.train_edges().tolist())
    files = {"inputs": ("x.csv", X, CSV), "output_kernel.edges": ("e.csv", e.encode(), CSV)}
    r = train_tables(client, g, files)
    assert r.status_code == 201, r.text
    assert not r.json()["model"]["has_ids"]
    assert r.json()["model"]["kernel"]["n_edges"] == len(g.train_edges())


def test_weighted_edges_are_refused(client: TestClient, graph: Graph) -> None:
    g = graph
    e = "".join(f"{name(a)}\t{name(b)}\t0.5\n" for a, b in train_pairs(g))
    files = {
        "inputs": ("features.csv", features_csv(g, g.train), CSV),
        "output_kernel.edges": ("edges.tsv", e.encode(), TSV),
    }
    r = train_tables(client, g, files)
    assert r.status_code == 422
    assert "third column of edge weights" in r.json()["error"]["message"]
    assert "unweighted" in r.json()["error"]["message"]


def test_unknown_ids_are_counted_or_dropped(client: TestClient, graph: Graph) -> None:
    g = graph
    unknown = [(int(g.test[k]), int(g.train[k])) for k in range(6)]
    pairs = train_pairs(g) + unknown
    files = {
        "inputs": ("features.csv", features_csv(g, g.train), CSV),
        "output_kernel.edges": ("edges.tsv", edges_tsv(pairs), TSV),
    }
    r = train_tables(client, g, files)
    assert r.status_code == 422
    message = r.json()["error"]["message"]
    assert "6 unknown in all; the first 5:" in message and "drop_unknown_edges" in message
    assert name(unknown[4][0]) in message and name(unknown[5][0]) not in message
    r = train_tables(client, g, files, drop_unknown_edges=True)
    assert r.status_code == 201, r.text
    kernel = r.json()["model"]["kernel"]
    assert kernel["dropped_edges"] == 6 and kernel["n_edges"] == len(train_pairs(g))


def test_declared_header(client: TestClient, graph: Graph) -> None:
    g = graph
    pairs = train_pairs(g)
    body = edges_tsv(pairs, header=False)  # a first edge that is no header: keep it
    for ctype, fields in (
        (TSV + "; header=absent", {}),
        (TSV, {"output_kernel.edges.header": "false"}),
    ):
        files = {
            "inputs": ("features.csv", features_csv(g, g.train), CSV),
            "output_kernel.edges": ("edges.tsv", body, ctype),
        }
        spec = {"output_kernel": {"type": "diffusion"}, "params": SMALL, "wait": True}
        r = client.post("/train", data={"json": json.dumps(spec), **fields}, files=files)
        assert r.status_code == 201, r.text
        assert r.json()["model"]["kernel"]["n_edges"] == len(pairs)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (b"a,b\n1,2\n3\n", "line 3 has 1 columns but line 1 has 2"),
        (b"id,x\nv1,1\nv2,oops\nv3,2\n", "line 3 column 2 ('x') is 'oops', not a finite number"),
        (b"\n\n", "is empty"),
        (b"\xff\xfe1,2\n", "not UTF-8"),
    ],
)
def test_bad_tables_are_a_clear_422(text: bytes, message: str) -> None:
    with pytest.raises(InvalidRequest, match=re.escape(message)):
        matrix_of(parse_table(text, "inputs", separator=","), with_ids=True)


def test_header_detection_and_id_column() -> None:
    t = parse_table(b"name,x,y\nv1,1,2\nv2,3,4\n", "inputs")
    X, ids = matrix_of(t, with_ids=True)
    assert t.header == ["name", "x", "y"] and ids == ["v1", "v2"]
    assert X.tolist() == [[1, 2], [3, 4]]
    X, ids = matrix_of(parse_table(b"1\t2\n3\t4\n", "inputs"), with_ids=True)
    assert ids is None and X.shape == (2, 2)
    with pytest.raises(InvalidRequest, match="only 'inputs' takes one"):
        matrix_of(parse_table(b"id,y\nv1,1\nv2,2\n", "candidates"), with_ids=False)
    with pytest.raises(
        InvalidRequest, match=r"is 'v1', not a finite number \(numbers or missing values only"
    ):
        matrix_of(parse_table(b"v1,1\nv2,2\n", "candidates"), with_ids=False)
    edges = edges_of(parse_table(b"from\tto\na\tb\n", "e", kind="edges"), {"a", "b"})
    assert edges == [["a", "b"]]
    assert edges_of(parse_table(b"3,4\n5,6\n", "e", kind="edges"), None) == [[3, 4], [5, 6]]


def test_row_index_edges_past_n_are_counted_or_dropped(client: TestClient, graph: Graph) -> None:
    body = diffusion_request(graph)
    n = len(graph.train)
    body["output_kernel"]["edges"] += [[0, n], [n + 1, 2]]
    r = client.post("/train", json=body)
    assert r.status_code == 422
    assert "2 such edges in all; the first 2:" in r.json()["error"]["message"]
    body["output_kernel"]["drop_unknown_edges"] = True
    r = client.post("/train", json=body)
    assert r.status_code == 201, r.text
    model = r.json()["model"]
    assert model["kernel"]["dropped_edges"] == 2
    assert any("2 edges naming vertices outside" in w for w in model["warnings"])


# ------------------------------------------------------------------ streams, bounds, missing
def _peak(work: Any) -> tuple[Any, int]:
    import tracemalloc

    tracemalloc.start()
    try:
        out = work()
        return out, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_quoted_newline_is_one_cell_and_a_clear_422_in_a_number_column() -> None:
    t = parse_table(b'id,x\n"v\n1",1\nv2,2\n', "inputs", separator=",")
    X, ids = matrix_of(t, with_ids=True)
    assert ids == ["v\n1", "v2"] and X.tolist() == [[1.0], [2.0]]
    with pytest.raises(InvalidRequest, match=r"line 2 column 3 is '3\\n4', not a finite number"):
        matrix_of(parse_table(b'5,6,7\n1,2,"3\n4"\n', "inputs", separator=","), with_ids=True)
    # the row after a quoted newline is numbered by its own line
    with pytest.raises(InvalidRequest, match=r"line 4 column 2 \('y'\) is 'oops'"):
        matrix_of(parse_table(b'x,y\n"1\n",2\n3,oops\n', "c", separator=","), with_ids=False)


@pytest.mark.parametrize("cell", ["NA", "nan", "NaN", "", "N/A", "null"])
def test_missing_cells_are_nan_never_errors_nor_ids(cell: str) -> None:
    text = f"0.5,0.1,0.2\n1.5,{cell},0.3\n".encode()
    X, ids = matrix_of(parse_table(text, "inputs", separator=","), with_ids=True)
    assert ids is None and X.shape == (2, 3)
    assert np.isnan(X[1, 1]) and np.isfinite(np.delete(X.ravel(), 4)).all()
    # a first column of ids with one missing id is no id column: its text is an error
    text = f"v1,0.1\n{cell},0.2\n".encode()
    with pytest.raises(InvalidRequest, match="line 1 column 1 is 'v1', not a finite number"):
        matrix_of(parse_table(text, "inputs", separator=","), with_ids=True)


def test_the_id_column_rule() -> None:
    t = parse_table(b"a,1\nb,2\n", "inputs")  # a first column of text in every row
    assert matrix_of(t, with_ids=True)[1] == ["a", "b"]
    t = parse_table(b"x,id\n1,7\n2,8\n", "inputs", header=True)  # named, numbers kept as text
    X, ids = matrix_of(t, with_ids=True)
    assert ids == ["7", "8"] and X.tolist() == [[1.0], [2.0]]
    t = parse_table(b"x,gene\n1,7\n2,8\n", "inputs", header=True, id_column="gene")
    assert matrix_of(t, with_ids=True)[1] == ["7", "8"]
    t = parse_table(b"1,7\n2,8\n", "inputs", id_column="2")  # declared by number
    assert matrix_of(t, with_ids=True)[1] == ["7", "8"]
    with pytest.raises(InvalidRequest, match="no column 'gene'"):
        matrix_of(parse_table(b"1,7\n2,8\n", "inputs", id_column="gene"), with_ids=True)
    # a text column that is not the first is no id column
    with pytest.raises(InvalidRequest, match="column 2 is 'a', not a finite number"):
        matrix_of(parse_table(b"1,a\n2,b\n", "inputs"), with_ids=True)


def test_wide_and_long_tables_are_bounded_as_they_arrive() -> None:
    from service.errors import TooLarge
    from service.http.tables import MAX_CELL_CHARS, MAX_TABLE_COLUMNS

    wide = ("\t".join(f"v{j}" for j in range(40_000)) + "\n").encode() * 2
    with pytest.raises(InvalidRequest, match="40000 columns: edges are two columns"):
        edges_of(parse_table(wide, "output_kernel.edges", kind="edges"), None)
    wider = b"1," * MAX_TABLE_COLUMNS + b"1\n"
    with pytest.raises(InvalidRequest, match=f"over the limit of {MAX_TABLE_COLUMNS}"):
        parse_table(wider, "inputs")
    with pytest.raises(InvalidRequest, match=f"over the limit of {MAX_CELL_CHARS}"):
        parse_table(b"1," + b"2" * (MAX_CELL_CHARS + 1) + b"\n", "inputs")
    with pytest.raises(TooLarge, match="holds more than 10 rows of 3 numbers"):
        parse_table(b"1,2,3\n" * 100, "inputs", max_bytes=8 * 3 * 10)


def test_a_long_table_costs_its_numbers_not_an_object_per_cell() -> None:
    """100,000 rows of 3 numbers (600 KB of text): 2.4 MB of float64 (and a byte a cell
    while it is read); the former parser held ~37 MB of Python strings, lists and floats."""
    text = b"1.5,2,3\n" * 100_000
    (X, _), peak = _peak(lambda: matrix_of(parse_table(text, "inputs"), with_ids=True))
    assert X.shape == (100_000, 3)
    assert peak < 2 * X.nbytes + 2**20, f"{peak / 2**20:.1f} MiB for {X.nbytes / 2**20:.1f}"


def test_one_character_ids_cost_a_pointer_each() -> None:
    """200,000 one-character ids: a list of 1.6 MB (the former parser held ~40 MB)."""
    from service.http.tables import ids_of

    text = b"a\n" * 200_000
    ids, peak = _peak(lambda: ids_of(parse_table(text, "ids", separator="", kind="ids")))
    assert len(ids) == 200_000
    assert peak < 6 * 2**20, f"{peak / 2**20:.1f} MiB"


def _features_with_missing(g: Graph, rows: np.ndarray) -> tuple[bytes, np.ndarray]:
    """Features as CSV with ids, cells of rows 3 and 5 missing as ``NA``, empty and ``nan``
    (and the matrix they stand for)."""
    X = g.features[rows].copy()
    X[3, 0] = X[5, 1] = X[5, 2] = np.nan
    spelled = {(3, 0): "NA", (5, 1): "", (5, 2): "nan"}
    lines = ["id," + ",".join(f"f{j}" for j in range(X.shape[1]))]
    for i, v in enumerate(rows):
        cells = [spelled.get((i, j), str(float(x))) for j, x in enumerate(X[i])]
        lines.append(name(int(v)) + "," + ",".join(cells))
    return ("\n".join(lines) + "\n").encode(), X


def test_missing_cells_train_a_tree_model_and_are_a_clear_422_for_the_others(
    client: TestClient, graph: Graph
) -> None:
    """NA, empty and nan cells are missing values: okboost learns where they go (the model
    equals one trained on the same matrix with NaN sent as JSON null, and predicts for rows
    with missing cells); a kernel model answers 422 saying what to do."""
    g = graph
    text, X = _features_with_missing(g, g.train)
    edges = edges_tsv(train_pairs(g))
    files = {"inputs": ("x.csv", text, CSV), "output_kernel.edges": ("e.tsv", edges, TSV)}
    r = train_tables(client, g, files)
    assert r.status_code == 201, r.text
    assert r.json()["model"]["has_ids"]  # the id column stays the ids, NA cells or not
    mid = r.json()["model_id"]
    by_json = {
        "inputs": [[None if np.isnan(x) else float(x) for x in row] for row in X],
        "ids": [name(int(v)) for v in g.train],
        "output_kernel": {
            "type": "diffusion",
            "edges": [[name(a), name(b)] for a, b in train_pairs(g)],
        },
        "params": SMALL,
        "wait": True,
    }
    twin = client.post("/train", json=by_json)
    assert twin.status_code == 201, twin.text
    new_text, _ = _features_with_missing(g, g.test)
    new = {"inputs": ("new.csv", new_text, CSV)}
    got = client.post("/predict", data={"json": json.dumps({"model_id": mid})}, files=new)
    want = client.post(
        "/predict", data={"json": json.dumps({"model_id": twin.json()["model_id"]})}, files=new
    )
    assert got.status_code == 200, got.text
    drop = ("model_id", "job_id")
    assert {k: v for k, v in got.json().items() if k not in drop} == {
        k: v for k, v in want.json().items() if k not in drop
    }
    test, train = set(g.test.tolist()), set(g.train.tolist())
    nk = [
        (a, b) if a in test else (b, a) for a, b in g.edges.tolist() if (a in test) != (b in test)
    ]
    assert nk and all(b in train for _, b in nk)
    scored = {**new, "edges.new_known": ("test.tsv", edges_tsv(nk), TSV)}
    ev = client.post("/evaluate", data={"json": json.dumps({"model_id": mid})}, files=scored)
    assert ev.status_code == 200, ev.text
    assert ev.json()["auc_new_known"] is not None

    spec = {"model": "krr", "output_kernel": {"type": "diffusion"}, "wait": True}
    r = client.post("/train", data={"json": json.dumps(spec)}, files=files)
    assert r.status_code == 422, r.text
    message = r.json()["error"]["message"]
    assert "inputs has missing values (NaN) in rows 3, 5, the first at [3, 0]" in message
    assert "model 'krr' does not accept missing values" in message
    assert "impute" in message and "okboost (without params.init), ok3 or ok3-forest" in message
    # okboost started from kernel ridge (init) takes them no more than kernel ridge does
    spec = {**spec, "model": "okboost", "params": {"init": "kernel_ridge"}}
    r = client.post("/train", data={"json": json.dumps(spec)}, files=files)
    assert r.status_code == 422, r.text
    message = r.json()["error"]["message"]
    assert "model 'okboost' does not accept missing values" in message
    assert "train okboost (without params.init)" in message  # not 'train okboost' alone


def test_missing_cells_at_prediction_are_a_clear_422_for_a_kernel_model(
    client: TestClient, graph: Graph
) -> None:
    g = graph
    spec = {
        "model": "krr",
        "inputs": g.features[g.train].tolist(),
        "output_kernel": {"type": "diffusion", "edges": g.train_edges().tolist()},
        "wait": True,
    }
    r = client.post("/train", json=spec)
    assert r.status_code == 201, r.text
    text, _ = _features_with_missing(g, g.train[:6])
    new = {"inputs": ("new.csv", text, CSV)}
    ask = {"model_id": r.json()["model_id"]}
    got = client.post("/predict", data={"json": json.dumps(ask)}, files=new)
    assert got.status_code == 422, got.text
    message = got.json()["error"]["message"]
    assert "inputs has missing values (NaN) in rows 3, 5" in message
    assert "model 'krr' does not accept missing values" in message


def test_the_job_estimate_counts_the_second_search_of_features_with_missing_values(
    graph: Graph,
) -> None:
    """Trees search a feature holding missing values twice: the job's estimate prices it."""
    from service.training.budget import estimate_job

    X = graph.features.copy()
    kernel = {"type": "linear"}
    complete = estimate_job("okboost", SMALL, X, kernel, 2, X.nbytes)
    X[3, 0] = X[5, 2] = np.nan
    holed = estimate_job("okboost", SMALL, X, kernel, 2, X.nbytes)
    assert holed.n_features == complete.n_features == X.shape[1]
    assert holed.tree_seconds > complete.tree_seconds


# ------------------------------------------------------------------ pandas' own layouts
def _pandas_csv(a: np.ndarray, *, index: bool, named: bool, prefix: str = "c") -> bytes:
    """What pandas writes for ``a`` (DataFrame.to_csv), without importing pandas: a header
    of the column names (pandas' default names are 0, 1, ...), floats with a decimal
    point, and with ``index`` a first column of the row index under an empty header cell."""
    width = a.shape[1]
    names = [f"{prefix}{j}" if named else str(j) for j in range(width)]
    lines = [("," if index else "") + ",".join(names)]
    lines += [(f"{i}," if index else "") + ",".join(repr(float(x)) for x in row)
              for i, row in enumerate(a)]  # fmt: skip
    return ("\n".join(lines) + "\n").encode()


def test_the_pandas_writer_is_what_pandas_writes() -> None:
    pd = pytest.importorskip("pandas")
    a = np.array([[0.5, 1.0], [2.25, -3.0]])
    for index in (True, False):
        for named in (True, False):
            df = pd.DataFrame(a, columns=["c0", "c1"] if named else None)
            assert df.to_csv(index=index).encode() == _pandas_csv(a, index=index, named=named)


@pytest.mark.parametrize("index", [True, False], ids=["to_csv()", "index=False"])
@pytest.mark.parametrize("named", [True, False], ids=["named", "default-columns"])
@pytest.mark.parametrize("part", ["inputs", "output_kernel.outputs", "candidates"])
def test_pandas_tables_are_read_as_pandas_wrote_them(index: bool, named: bool, part: str) -> None:
    """pd.DataFrame(X).to_csv() was read with its header as a first data row (first cell
    missing) and its index as a feature; to_csv(index=False) with its header 0,1,2 as data."""
    a = np.random.default_rng(0).normal(size=(40, 3))
    table = parse_table(_pandas_csv(a, index=index, named=named), part)
    X, ids = matrix_of(table, with_ids=part == "inputs")
    assert ids is None and X.shape == (40, 3)
    np.testing.assert_array_equal(X, a)
    assert table.header is not None


def test_a_pandas_index_of_ids_or_of_a_filtered_frame() -> None:
    a = np.random.default_rng(1).normal(size=(5, 2))
    lines = [",0,1"] + [f"g{i},{x},{y}" for i, (x, y) in enumerate(a)]
    X, ids = matrix_of(parse_table(("\n".join(lines) + "\n").encode(), "inputs"), with_ids=True)
    assert ids == [f"g{i}" for i in range(5)] and np.array_equal(X, a)
    lines = [",a,b"] + [f"{i},{x},{y}" for i, (x, y) in zip([7, 2, 9, 4, 0], a, strict=True)]
    X, ids = matrix_of(parse_table(("\n".join(lines) + "\n").encode(), "c"), with_ids=False)
    assert ids is None and np.array_equal(X, a)  # a shuffled, filtered frame's index
    weights = parse_table(b",0\n0,1.0\n1,2.5\n2,0.5\n", "sample_weight")  # Series.to_csv()
    assert matrix_of(weights, with_ids=False)[0].tolist() == [[1.0], [2.5], [0.5]]


def test_one_column_pandas_tables_and_rows_missing_their_first_value() -> None:
    """pd.Series(w).to_csv(index=False) and a one-column frame's write a header 0, which was
    read as a row; a first row ',0.53,0.21' over a column of counts is a row of data missing
    its first value (pandas names no column 0.53), not a header over an index."""
    for part in ("sample_weight", "inputs", "candidates"):
        X, _ = matrix_of(parse_table(b"0\n0.5\n1.0\n2.25\n", part), with_ids=False)
        assert X.tolist() == [[0.5], [1.0], [2.25]]
    X, _ = matrix_of(parse_table(b"0\n0\n1\n2\n", "sample_weight"), with_ids=False)
    assert X.tolist() == [[0.0], [0.0], [1.0], [2.0]]  # integers only: 0 is a weight
    X, _ = matrix_of(parse_table(b",0.53,0.21\n1,0.2,0.1\n2,0.3,0.4\n", "inputs"), with_ids=True)
    assert X.shape == (3, 3) and np.isnan(X[0, 0]) and X[1].tolist() == [1.0, 0.2, 0.1]


def test_headerless_numbers_are_read_unchanged() -> None:
    """Ordinary numeric tables: no header, every column a feature, every row data."""
    for text, rows in (
        (b"0.5,1.5,2\n1,2,3\n", [[0.5, 1.5, 2.0], [1.0, 2.0, 3.0]]),
        (b"1,2,3\n3,4,5\n", [[1.0, 2.0, 3.0], [3.0, 4.0, 5.0]]),  # all integers: no header
        (b"0,1\n1,0\n", [[0.0, 1.0], [1.0, 0.0]]),  # 0/1 rows, e.g. labels: 0,1 is data
        (b",0.5,0.25\n1.5,2.5,3.5\n", [[np.nan, 0.5, 0.25], [1.5, 2.5, 3.5]]),  # a missing cell
        (b"1,0.5\n2,0.25\n3,0.125\n", [[1.0, 0.5], [2.0, 0.25], [3.0, 0.125]]),
    ):
        X, ids = matrix_of(parse_table(text, "inputs"), with_ids=True)
        assert ids is None
        np.testing.assert_array_equal(X, np.array(rows))
    # pandas' layouts are read as such unless the header is declared absent
    for text in (b"0,1,2\n0.5,1.5,2.5\n", b",1,2\n0,1.5,2.5\n"):
        X, _ = matrix_of(parse_table(text, "inputs", header=False), with_ids=True)
        assert X.shape == (2, 3)


def test_a_first_line_of_pandas_default_names_over_integers_is_a_422() -> None:
    """0,1,2 over integer rows: pandas' header of an integer frame, or a row of data."""
    with pytest.raises(InvalidRequest, match=r"'0,1,2'.*pandas.*header=present") as exc:
        matrix_of(parse_table(b"0,1,2\n5,3,1\n4,4,2\n", "inputs"), with_ids=True)
    assert "inputs.header" in str(exc.value)
    X, _ = matrix_of(parse_table(b"0,1,2\n5,3,1\n", "inputs", header=True), with_ids=True)
    assert X.tolist() == [[5, 3, 1]]
    X, _ = matrix_of(parse_table(b"0,1,2\n5,3,1\n", "inputs", header=False), with_ids=True)
    assert X.tolist() == [[0, 1, 2], [5, 3, 1]]


def test_a_header_without_rows_says_so() -> None:
    """'id,f0,f1,f2' alone said "line 1 column 2 is 'f0', not a finite number"."""
    for text in (b"id,f0,f1,f2\n", b"f0,f1\n"):
        with pytest.raises(InvalidRequest, match="has a header but no data rows"):
            matrix_of(parse_table(text, "inputs"), with_ids=True)


@pytest.mark.parametrize("index", [True, False], ids=["to_csv()", "index=False"])
@pytest.mark.parametrize("named", [True, False], ids=["named", "default-columns"])
def test_pandas_tables_train_as_json_arrays_do(
    client: TestClient, index: bool, named: bool
) -> None:
    rng = np.random.default_rng(3)
    X, Y, w = rng.normal(size=(40, 3)), rng.normal(size=(40, 2)), rng.uniform(0.5, 2, (40, 1))
    spec = {"output_kernel": {"type": "linear"}, "params": SMALL, "wait": True}
    files = {
        "inputs": ("X.csv", _pandas_csv(X, index=index, named=named, prefix="f"), CSV),
        "output_kernel.outputs": ("Y.csv", _pandas_csv(Y, index=index, named=named), CSV),
        "sample_weight": ("w.csv", _pandas_csv(w, index=index, named=True, prefix="w"), CSV),
    }
    r = client.post("/train", data={"json": json.dumps(spec)}, files=files)
    assert r.status_code == 201, r.text
    model = r.json()["model"]
    assert (model["n_train"], model["n_features"], model["output_dim"]) == (40, 3, 2)
    assert model["sample_weight"] is True


def test_a_labels_table_from_pandas_names_its_labels(client: TestClient) -> None:
    from svc_data import label_data

    X, labels = label_data(n=40)
    names = [f"L{j}" for j in range(labels.shape[1])]
    body = _pandas_csv(labels, index=True, named=True, prefix="L")
    spec = {"task": "multilabel", "model": "okboost", "params": SMALL, "wait": True}
    files = {"inputs": ("X.csv", _pandas_csv(X, index=True, named=False), CSV),
             "labels": ("labels.csv", body, CSV)}  # fmt: skip
    r = client.post("/train", data={"json": json.dumps(spec)}, files=files)
    assert r.status_code == 201, r.text
    assert r.json()["model"]["n_features"] == X.shape[1]
    assert r.json()["model"]["multilabel"]["label_names"] == names


def test_a_header_declared_both_ways_is_a_422() -> None:
    """header=present in the content type and the field '<part>.header' = false: one of the
    two was silently ignored."""
    with pytest.raises(InvalidRequest, match=r"declares its header twice and both ways"):
        declared_header("text/csv; header=present", "false", "inputs")
    assert declared_header("text/csv; header=present", "true", "inputs") is True
    assert declared_header("text/csv", "no", "inputs") is False
    assert declared_header("text/csv; header=absent", None, "inputs") is False
    assert declared_header(None, None, "inputs") is None
