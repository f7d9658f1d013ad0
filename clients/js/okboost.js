// Dependency-free client of the okboost REST service: ESM, global fetch, FormData and Blob,
// so it runs on Node >= 18 and in browsers.
//
//   import { OKBoostClient, Matrix } from "./okboost.js";
//   const c = new OKBoostClient("http://127.0.0.1:8000");
//   const fit = await c.train(X, { type: "diffusion", beta: 1, edges: E }, { params: { n_estimators: 100 } });
//   await c.wait(fit.job_id);
//   const out = await c.kernel(fit.model_id, Xnew, { topK: 5 });   // out.edges.new_known: [[a, b, score], ...]
//
// Arrays may be nested JS arrays (sent as JSON) or Matrix objects wrapping a typed array
// (sent as raw little-endian multipart parts with their shape and dtype: no JSON number
// formatting, and float32 / uint8 inputs at a half / an eighth of the bytes). Options are
// camelCase here and snake_case on the wire (topK -> top_k); answers are the service's JSON,
// or with {format: "npz"} (/kernel and /predict) its binary answer: numeric arrays as Matrix
// objects over Float64Array, ids as arrays of strings.
// Vertex ids: train(X, {type: "diffusion", edges: [["a", "b"], ...]}, {ids: ["a", "b", ...]});
// kernel(modelId, Xnew, {ids: [...]}) then also answers edges.new_known_ids = [["x", "a"], ...].
// Tables: wherever inputs go, an array of objects works too ([{id: "a", f1: 0.2, f2: 1.3}, ...]:
// the "id" column, or the first non-numeric one, gives the ids; see table.js), and edges may be
// an array of objects with two fields ([{source: "a", target: "b"}, ...]).
//
//   const scores = await c.evaluate(fit.model_id, Xtest, { newKnown: [[0, 3], [1, 5]], k: 5 });
//   scores.auc, scores.precision_at_k
//
// Bipartite networks and label sets:
//   await c.trainBipartite(drugs, { similarity: S, ids: targetIds }, { edges: [["d1", "t2"]], wait: true });
//   await c.kernelBipartite(modelId, { rows: newDrugs, topK: 5 });   // edges.new_rows_ids
// A table labelled by id, rows of objects with an id column ([{id: "d1", t1: 1, t2: 0}, ...]),
// is matched by id: as adjacency its rows and columns to the sides' ids, as a similarity its
// columns to its rows (training) or to the training vertices.
//   await c.trainMultilabel(X, labels, { labelNames: ["a", "b"], wait: true });
//   await c.predictLabels(modelId, Xnew);                             // probabilities, labels, label_sets

import { LITTLE_ENDIAN, Matrix } from "./matrix.js";
import { nest, readNpz } from "./npz.js";
import { isRows, rowsToEdges, rowsToInputs, rowsToSimilarity } from "./table.js";

export { Matrix, readNpz, rowsToEdges, rowsToInputs, rowsToSimilarity };

/** An error answer of the service, in its one JSON error shape. */
export class OKBoostError extends Error {
  constructor(status, code, message, details = []) {
    super(`${status} ${code}: ${message}`);
    this.name = "OKBoostError";
    this.status = status;
    this.code = code;
    this.details = details;
  }
}

const snake = (key) => key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

function snakeKeys(options) {
  const out = {};
  for (const [key, value] of Object.entries(options)) {
    if (value !== undefined && value !== null) out[snake(key)] = value;
  }
  return out;
}

/** Split Matrix values (up to two levels deep) out of a request into binary parts. */
function splitMatrices(body, prefix = "") {
  const plain = {};
  const parts = [];
  for (const [key, value] of Object.entries(body)) {
    const path = prefix + key;
    if (value instanceof Matrix) {
      parts.push([path, value]);
    } else if (!prefix && value && typeof value === "object" && !Array.isArray(value)) {
      const inner = splitMatrices(value, `${path}.`);
      plain[key] = inner.plain;
      parts.push(...inner.parts);
    } else {
      plain[key] = value;
    }
  }
  return { plain, parts };
}

function toMultipart(plain, parts) {
  if (!LITTLE_ENDIAN) throw new Error("binary parts need a little-endian platform");
  const form = new FormData();
  form.append("json", JSON.stringify(plain));
  for (const [path, m] of parts) {
    form.append(path, new Blob([m.data], { type: "application/octet-stream" }), `${path}.bin`);
    form.append(`${path}.shape`, m.shape.join(","));
    form.append(`${path}.dtype`, m.dtype);
  }
  return form;
}

/** Inputs given as rows of objects become a matrix, their id column the ids. */
function tableInputs(inputs, ids, name = "inputs") {
  if (!isRows(inputs)) return { inputs, ids };
  const table = rowsToInputs(inputs, { name });
  if (table.ids && ids) {
    throw new RangeError(`${name}: give the ids as an id column or as the ids option, not both`);
  }
  return { inputs: table.inputs, ids: table.ids ?? ids };
}

const edgeList = (edges, name) => (isRows(edges) ? rowsToEdges(edges, name) : edges);

/**
 * Label rows as the request takes them: rows of objects ([{a: 1, b: 0}, ...]) become 0/1 rows
 * whose column names name the labels (unless `names` are given); others go as they are.
 */
function labelRows(labels, names) {
  if (!isRows(labels)) return { labels, names };
  const table = rowsToInputs(labels, { idColumn: null, name: "labels" });
  return { labels: table.inputs, names: names ?? table.columns };
}

/**
 * One vertex set of a bipartite request: features directly (nested arrays, a Matrix, rows of
 * objects whose id column gives the ids), or {inputs, similarity, ids} with one of inputs and
 * similarity. A similarity as rows of objects labelled by id gives the ids and its columns are
 * matched by id (rowsToSimilarity): to its rows at `training`, else to the training vertices.
 */
function side(value, name, training = false) {
  if (value == null) return null;
  const direct = Array.isArray(value) || value instanceof Matrix;
  const given = direct ? { inputs: value } : value;
  if (given.inputs === undefined && isRows(given.similarity)) {
    const where = `${name}.similarity`;
    const s = rowsToSimilarity(given.similarity, { training, name: where });
    if (s.ids && given.ids) {
      throw new RangeError(`${where}: give the ids as its id column or as the ids option, not both`);
    }
    return snakeKeys({ similarity: s.similarity, ids: s.ids ?? given.ids, similarityIds: s.columns });
  }
  const table = given.inputs === undefined ? { ids: given.ids } : tableInputs(given.inputs, given.ids, name);
  return snakeKeys({ inputs: table.inputs, similarity: given.similarity, ids: table.ids });
}

/**
 * A bipartite adjacency as the request takes it: rows of objects labelled by id (the id
 * column naming its rows, the other columns' names its columns) go as numbers with
 * adjacencyRowIds / adjacencyColIds, matched to the sides by id by the service; nested
 * arrays or a Matrix go as they are, with those options when given.
 */
function adjacencyFields(adjacency, rowIds, colIds) {
  if (!isRows(adjacency)) {
    return { adjacency, adjacencyRowIds: rowIds, adjacencyColIds: colIds };
  }
  const table = rowsToInputs(adjacency, { name: "adjacency" });
  if ((table.ids && rowIds) || colIds) {
    throw new RangeError(
      "adjacency: give its ids as its id column and column names or as the adjacencyRowIds / " +
        "adjacencyColIds options, not both",
    );
  }
  return { adjacency: table.inputs, adjacencyRowIds: table.ids ?? rowIds, adjacencyColIds: table.columns };
}

const NPZ = "application/x-npz";
const ARCHIVE = "application/gzip";

/**
 * The error of a request that got no answer, saying which URL and why: fetch's own
 * ("fetch failed", "The operation was aborted due to timeout") name neither. The original
 * error is its `cause`.
 */
function unreachable(err, method, url, timeoutMs) {
  if (err?.name === "TimeoutError") {
    return new Error(
      `${method} ${url} got no answer within timeoutMs = ${timeoutMs} ms: ` +
        "give the client a larger timeoutMs (a long training: train without wait, then wait for the job)",
      { cause: err },
    );
  }
  const why = err?.cause?.message ?? err?.message ?? String(err);
  return new Error(
    `cannot reach the okboost service at ${url} (${why}): is it running, and is the URL right?`,
    { cause: err },
  );
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

export class OKBoostClient {
  /**
   * @param {string} baseUrl e.g. "http://127.0.0.1:8000"
   * @param {{token?: string, timeoutMs?: number, fetch?: typeof fetch}} [options]
   */
  constructor(baseUrl = "http://127.0.0.1:8000", { token, timeoutMs = 300_000, fetch: fetchFn } = {}) {
    this.baseUrl = baseUrl.replace(/\/+$/, "");
    this.headers = token ? { Authorization: `Bearer ${token}` } : {};
    this.timeoutMs = timeoutMs;
    this.fetch = fetchFn ?? globalThis.fetch;
  }

  async #request(method, path, body, { format = "json", archive } = {}) {
    if (format !== "json" && format !== "npz") throw new RangeError(`format must be "json" or "npz"`);
    const headers = { ...this.headers, Accept: format === "npz" ? NPZ : "application/json" };
    const init = { method, headers, signal: AbortSignal.timeout(this.timeoutMs) };
    if (archive !== undefined) {
      init.body = archive; // a model archive (/models/import), sent as it is
      headers["Content-Type"] = ARCHIVE;
    } else if (body !== undefined) {
      const { plain, parts } = splitMatrices(body);
      if (parts.length) {
        init.body = toMultipart(plain, parts); // fetch sets the multipart boundary
      } else {
        init.body = JSON.stringify(plain);
        headers["Content-Type"] = "application/json";
      }
    }
    const response = await this.fetch(this.baseUrl + path, init).catch((err) => {
      throw unreachable(err, method, this.baseUrl + path, this.timeoutMs);
    });
    if (response.ok && response.headers.get("content-type") === NPZ) {
      return nest(readNpz(await response.arrayBuffer()));
    }
    if (response.ok && response.headers.get("content-type") === ARCHIVE) {
      return new Uint8Array(await response.arrayBuffer());
    }
    const text = await response.text();
    let data = null;
    try {
      data = text ? JSON.parse(text) : null;
    } catch {
      data = null;
    }
    if (response.ok) return data;
    const err = data?.error ?? {};
    throw new OKBoostError(
      response.status,
      err.code ?? "http_error",
      err.message ?? text.slice(0, 500),
      err.details ?? [],
    );
  }

  /**
   * POST /train. `inputs`: nested arrays or a Matrix; `outputKernel`: e.g.
   * {type: "diffusion", beta: 1, edges} (edges nested [[i, j], ...] or an Int32Array Matrix),
   * {type: "precomputed", gram}, {type: "rbf", outputs, sigma}.
   * Options: model ("auto" | "okboost" | "ok3" | "ok3-forest" | "krr-boost" | "krr"; omitted:
   * the server's default, the automatic choice where it applies), params, name, ids,
   * evalSet, sampleWeight (one weight >= 0 per row of inputs), wait, cv, and any other field of the request (camelCase), e.g. inputKind:
   * "similarity" (inputs: the N x N similarity among the training items) with inputMap
   * ("kernel_map" | "kpca") and inputComponents.
   * `inputs` may be rows of objects (the id column gives `ids`), `outputKernel.edges` rows of
   * objects with two fields. `cv`: K-fold cross-validation before the final fit, e.g.
   * {folds: 5, grid: {max_splits: [2, 8]}, scoring: "auc", randomState: 0}; the model record
   * (model(id).cv) then holds the table and the chosen grid values. Any score name of the
   * service's cv.scoring (e.g. ["f1", "ranking_loss"] for 0/1 label rows) and
   * search: "halving" (candidates raced over n_estimators) pass as given.
   */
  train(inputs, outputKernel, { params = {}, cv, ...options } = {}) {
    const table = tableInputs(inputs, options.ids);
    const kernel = { ...outputKernel };
    if (kernel.edges !== undefined) kernel.edges = edgeList(kernel.edges, "outputKernel.edges");
    return this.#request("POST", "/train", {
      inputs: table.inputs,
      output_kernel: kernel,
      ...snakeKeys({ ...options, params, ids: table.ids, cv: cv && snakeKeys(cv) }),
    });
  }

  /** Every item of a paginated list (GET /models, /jobs), following next_cursor. */
  async #pages(path, key, query) {
    const items = [];
    let cursor = null;
    do {
      const params = new URLSearchParams(query);
      if (cursor) params.set("cursor", cursor);
      const page = await this.#request("GET", `${path}?${params}`);
      items.push(...page[key]);
      cursor = page.next_cursor;
    } while (cursor);
    return items;
  }

  /** GET /jobs/{id}; {curves: true} adds the loss curves so far. */
  job(jobId, { curves = false } = {}) {
    return this.#request("GET", `/jobs/${encodeURIComponent(jobId)}?curves=${curves}`);
  }

  /** Every job (all pages), oldest first. */
  jobs({ curves = false } = {}) {
    return this.#pages("/jobs", "jobs", { curves });
  }

  cancel(jobId) {
    return this.#request("DELETE", `/jobs/${encodeURIComponent(jobId)}`);
  }

  /** Poll GET /jobs/{id} until the job ends; resolves with the job when done, else throws. */
  async wait(jobId, { pollMs = 200, timeoutMs = Infinity, onProgress } = {}) {
    const start = Date.now();
    for (;;) {
      const info = await this.job(jobId);
      onProgress?.(info);
      if (info.state === "done") return info;
      if (info.state === "failed" || info.state === "cancelled") {
        throw new OKBoostError(409, `job_${info.state}`, info.error ?? "");
      }
      if (Date.now() - start > timeoutMs) {
        throw new Error(`job ${jobId} still ${info.state} after ${timeoutMs} ms`);
      }
      await sleep(pollMs);
    }
  }

  /**
   * POST /predict: pre-images (indices, scores; index_ids with vertex ids) and optionally
   * W^F weights. Options: topK, returnOutputs, weights ("none" | "dense" | "sparse"),
   * weightsTopK, candidates, candidateGram, candidateDiag, ids (of the new vertices), and
   * format: "npz" for a binary answer (Matrix objects; fields that are null in JSON absent).
   */
  predict(modelId, inputs, { format, ...options } = {}) {
    const table = tableInputs(inputs, options.ids);
    const body = {
      model_id: modelId,
      inputs: table.inputs,
      ...snakeKeys({ ...options, ids: table.ids }),
    };
    return this.#request("POST", "/predict", body, { format });
  }

  /**
   * POST /kernel: the predicted kernel and edges [a, b, score] of new vertices (and
   * edges.new_new_ids / new_known_ids, [a, b] by id, when the model or `ids` names them).
   * Options: inputs2, against ("predicted" | "training"), threshold, topK,
   * knownScores ("predicted" | "observed"), returnKernel, ids (of the new vertices), and
   * format: "npz" for a binary answer (kernel and edges as Matrix objects, E x 3).
   */
  kernel(modelId, inputs, { format, ...options } = {}) {
    const table = tableInputs(inputs, options.ids);
    const body = {
      model_id: modelId,
      inputs: table.inputs,
      ...snakeKeys({ ...options, ids: table.ids }),
    };
    return this.#request("POST", "/kernel", body, { format });
  }

  /**
   * POST /evaluate: the model's scores on test inputs with their truth (a score without its
   * truth is null). Options: outputs (Q x d, models trained on output vectors) or gramCross
   * (Q x N) with gramDiag (Q): err_phi, err_y; newNew (edges among the test vertices: pairs
   * of rows of `inputs`) and newKnown ([test row, training row]): auc, auc_new_new,
   * auc_new_known, precision_at_k; k (default 10), knownScores ("predicted" | "observed"),
   * ids (of the test vertices: the edges may then name vertices by id, newKnown's second id
   * being the model's). Edges may be nested arrays, Int32Array Matrix objects or rows of
   * objects with two fields; `inputs` rows of objects (the id column gives `ids`).
   */
  evaluate(modelId, inputs, { newNew, newKnown, ...options } = {}) {
    const table = tableInputs(inputs, options.ids);
    const edges = snakeKeys({
      newNew: newNew == null ? null : edgeList(newNew, "newNew"),
      newKnown: newKnown == null ? null : edgeList(newKnown, "newKnown"),
    });
    return this.#request("POST", "/evaluate", {
      model_id: modelId,
      inputs: table.inputs,
      ...snakeKeys({ ...options, ids: table.ids, edges: Object.keys(edges).length ? edges : null }),
    });
  }

  /**
   * POST /train of a bipartite network (task "bipartite"). `rows` and `cols`: each side's
   * features (nested arrays, a Matrix, rows of objects with an id column) or
   * {inputs | similarity, ids} (a similarity as rows of objects labelled by id gives the ids,
   * its columns matched to its rows by id). Options: edges ([row, column] pairs by row number
   * or by id, or rows of objects with two fields) or adjacency (n_rows x n_cols, 0/1 or
   * weights; null: an unknown pair; rows of objects labelled by id, [{id: "d1", t1: 1, t2: 0},
   * ...], or adjacencyRowIds / adjacencyColIds beside nested arrays or a Matrix: its rows and
   * columns matched to the sides' ids in any order), unknownPairs ([row, column] pairs of unknown interaction, as edges: not
   * negatives), model ("auto": okcore's default rank average, no params; or an estimator name),
   * params, newPairs ("two-step" | "refit"), cv ({folds: 3} or {folds: [4, 3]}, randomState,
   * rowFolds / colFolds: given fold ids 0..K-1 per vertex), name, wait.
   */
  trainBipartite(
    rows,
    cols,
    { edges, adjacency, adjacencyRowIds, adjacencyColIds, unknownPairs, model = "auto", params = {}, cv, ...options } = {},
  ) {
    return this.#request("POST", "/train", {
      task: "bipartite",
      rows: side(rows, "rows", true),
      cols: side(cols, "cols", true),
      ...snakeKeys({
        ...options,
        ...adjacencyFields(adjacency, adjacencyRowIds, adjacencyColIds),
        model,
        params,
        cv: cv && snakeKeys(cv),
        edges: edges == null ? null : edgeList(edges, "edges"),
        unknownPairs: unknownPairs == null ? null : edgeList(unknownPairs, "unknownPairs"),
      }),
    });
  }

  /**
   * POST /kernel of a bipartite model: `rows` (new rows: features or {similarity, ids} to the
   * training rows; a similarity as rows of objects labelled by id gives the ids, its columns
   * naming the training rows in any order) and / or `cols`. Answers scores per block (new_rows q x n_cols, new_cols
   * n_rows x q', new_pairs q x q') and, with threshold / topK, edges per block: [row, column,
   * score] grouped by new vertex, best first, and <block>_ids [row id, column id].
   * Options: threshold, topK, returnScores.
   */
  kernelBipartite(modelId, { rows, cols, ...options } = {}) {
    return this.#request("POST", "/kernel", {
      model_id: modelId,
      ...snakeKeys({ rows: side(rows, "rows"), cols: side(cols, "cols"), ...options }),
    });
  }

  /**
   * POST /evaluate of a bipartite model: AUROC and average precision per block and pooled.
   * Truth as [row, column] pairs: newRows [new row, training column], newCols [training row,
   * new column], newPairs [new row, new column] by row number, or byId [row id, column id].
   * unknownPairs: pairs of unknown interaction in the same form ({byId: [...]}, ...), left out
   * of every score (n_unknown per block).
   */
  evaluateBipartite(modelId, { rows, cols, newRows, newCols, newPairs, byId, unknownPairs } = {}) {
    const pairs = (given, where) =>
      snakeKeys(
        Object.fromEntries(
          Object.entries(given).map(([k, v]) => [k, v == null ? null : edgeList(v, `${where}${k}`)]),
        ),
      );
    return this.#request("POST", "/evaluate", {
      model_id: modelId,
      ...snakeKeys({ rows: side(rows, "rows"), cols: side(cols, "cols") }),
      edges: pairs({ newRows, newCols, newPairs, byId }, ""),
      unknown_pairs: unknownPairs == null ? null : pairs(unknownPairs, "unknownPairs."),
    });
  }

  /**
   * POST /train of label sets (task "multilabel"): `labels` N x L 0/1 rows (or rows of
   * objects, [{a: 1, b: 0}, ...]: their column names are the labelNames). Options:
   * labelNames, ids, model (left out: the server's default, "auto", okcore's stacked
   * MultiLabelClassifier(), which takes no params), params, threshold ("cv" or a number in
   * (0, 1)), perLabel, metric ("micro_f1" | "macro_f1" | "hamming_loss" |
   * "subset_accuracy"), scores ("label_sigmoid" | "sigmoid" | "clip"), maxCpuSeconds
   * (a CPU budget for the fit), nSplits, randomState, name, wait. Options left out take the server's defaults.
   */
  trainMultilabel(inputs, labels, options = {}) {
    const table = tableInputs(inputs, options.ids);
    const given = labelRows(labels, options.labelNames);
    return this.#request("POST", "/train", {
      task: "multilabel",
      inputs: table.inputs,
      labels: given.labels,
      ...snakeKeys({ ...options, ids: table.ids, labelNames: given.names }),
    });
  }

  /**
   * POST /predict of a multi-label model: probabilities (Q x L in [0, 1]), labels (0/1 rows),
   * thresholds, and with label names label_sets (each row's labels by name). metric: the
   * label sets of another measure's thresholds (chosen at training, no refit).
   */
  predictLabels(modelId, inputs, { ids, metric } = {}) {
    const table = tableInputs(inputs, ids);
    return this.#request("POST", "/predict", {
      model_id: modelId,
      inputs: table.inputs,
      ...snakeKeys({ ids: table.ids, metric }),
    });
  }

  /**
   * POST /evaluate of a multi-label model against the true 0/1 label rows: hamming_loss,
   * subset_accuracy, micro_f1, macro_f1, ranking_loss, one_error, coverage,
   * label_ranking_average_precision (the label sets of metric's thresholds when given).
   * labelNames (or, for rows of objects, their column names): the names of the columns of
   * labels, matched to the model's labels by name.
   */
  evaluateLabels(modelId, inputs, labels, { metric, labelNames } = {}) {
    const table = tableInputs(inputs, undefined);
    const given = labelRows(labels, labelNames);
    return this.#request("POST", "/evaluate", {
      model_id: modelId,
      inputs: table.inputs,
      outputs: given.labels,
      ...snakeKeys({ metric, outputColumns: given.names }),
    });
  }

  /** Every stored model (all pages), oldest first; curves / importances on request. */
  models({ curves = false, importances = false } = {}) {
    return this.#pages("/models", "models", { curves, importances });
  }

  model(modelId, { curves = false, importances = false } = {}) {
    const query = new URLSearchParams({ curves, importances });
    return this.#request("GET", `/models/${encodeURIComponent(modelId)}?${query}`);
  }

  deleteModel(modelId) {
    return this.#request("DELETE", `/models/${encodeURIComponent(modelId)}`);
  }

  /**
   * GET /models/{id}/export: the model's archive (.tar.gz) as a Uint8Array, to keep
   * (Node: fs.writeFileSync("model.tar.gz", bytes)) or to import on another server.
   */
  exportModel(modelId) {
    return this.#request("GET", `/models/${encodeURIComponent(modelId)}/export`);
  }

  /**
   * POST /models/import: upload an archive made by exportModel (here or on another server;
   * a Uint8Array, ArrayBuffer or Blob). onConflict, when the model's id is taken here:
   * "error" (a 409 OKBoostError) or "rename" (a new id). Resolves with the model's record.
   */
  importModel(archive, { onConflict = "error" } = {}) {
    const query = new URLSearchParams({ on_conflict: onConflict });
    return this.#request("POST", `/models/import?${query}`, undefined, { archive });
  }

  health() {
    return this.#request("GET", "/health/ready");
  }

  version() {
    return this.#request("GET", "/version");
  }
}
