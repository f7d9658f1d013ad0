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

import { LITTLE_ENDIAN, Matrix } from "./matrix.js";
import { nest, readNpz } from "./npz.js";

export { Matrix, readNpz };

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

const NPZ = "application/x-npz";

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

  async #request(method, path, body, { format = "json" } = {}) {
    if (format !== "json" && format !== "npz") throw new RangeError(`format must be "json" or "npz"`);
    const headers = { ...this.headers, Accept: format === "npz" ? NPZ : "application/json" };
    const init = { method, headers, signal: AbortSignal.timeout(this.timeoutMs) };
    if (body !== undefined) {
      const { plain, parts } = splitMatrices(body);
      if (parts.length) {
        init.body = toMultipart(plain, parts); // fetch sets the multipart boundary
      } else {
        init.body = JSON.stringify(plain);
        headers["Content-Type"] = "application/json";
      }
    }
    const response = await this.fetch(this.baseUrl + path, init);
    if (response.ok && response.headers.get("content-type") === NPZ) {
      return nest(readNpz(await response.arrayBuffer()));
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
   * Options: model ("okboost" | "ok3" | "ok3-forest" | "krr-boost"), params, name, evalSet, wait, and any
   * other field of the request (camelCase).
   */
  train(inputs, outputKernel, { model = "okboost", params = {}, ...options } = {}) {
    return this.#request("POST", "/train", {
      inputs,
      output_kernel: outputKernel,
      model,
      params,
      ...snakeKeys(options),
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
    const body = { model_id: modelId, inputs, ...snakeKeys(options) };
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
    const body = { model_id: modelId, inputs, ...snakeKeys(options) };
    return this.#request("POST", "/kernel", body, { format });
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

  health() {
    return this.#request("GET", "/health/ready");
  }

  version() {
    return this.#request("GET", "/version");
  }
}
