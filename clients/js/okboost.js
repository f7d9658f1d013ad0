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

const DTYPES = new Map([
  [Float64Array, "<f8"],
  [Float32Array, "<f4"],
  [Uint8Array, "|u1"],
  [Int32Array, "<i4"],
  [BigInt64Array, "<i8"],
]);

const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/** A row-major matrix (or vector) over a typed array, sent as one binary part. */
export class Matrix {
  /**
   * @param {Float64Array|Float32Array|Uint8Array|Int32Array|BigInt64Array} data row-major values
   * @param {number[]} shape e.g. [rows, cols], or [n] for a vector
   */
  constructor(data, shape) {
    if (!DTYPES.has(data?.constructor)) {
      throw new TypeError(
        "Matrix data must be a Float64Array, Float32Array, Uint8Array, Int32Array or BigInt64Array",
      );
    }
    const size = shape.reduce((a, b) => a * b, 1);
    if (size !== data.length) {
      throw new RangeError(`shape ${shape.join(" x ")} needs ${size} values, got ${data.length}`);
    }
    this.data = data;
    this.shape = shape;
  }

  /** A Matrix from nested arrays (rows of equal length), by default as float64. */
  static fromRows(rows, Type = Float64Array) {
    const cols = rows.length ? rows[0].length : 0;
    const data = new Type(rows.length * cols);
    rows.forEach((row, i) => {
      if (row.length !== cols) throw new RangeError(`row ${i} has ${row.length} values, not ${cols}`);
      data.set(Type === BigInt64Array ? row.map(BigInt) : row, i * cols);
    });
    return new Matrix(data, [rows.length, cols]);
  }

  get dtype() {
    return DTYPES.get(this.data.constructor);
  }

  /** The rows as nested arrays (a vector as one flat array). */
  toRows() {
    if (this.shape.length < 2) return Array.from(this.data);
    const cols = this.shape[1];
    return Array.from({ length: this.shape[0] }, (_, i) =>
      Array.from(this.data.subarray(i * cols, (i + 1) * cols)),
    );
  }
}

// ------------------------------------------------------------------ binary answers (.npz)
// The service's .npz answers are uncompressed zip archives of .npy files, one per field of
// the JSON answer, named by its dotted path (kernel, edges.new_known, index_ids ...).

function readNpy(bytes, name) {
  const magic = String.fromCharCode(...bytes.subarray(1, 6));
  if (bytes[0] !== 0x93 || magic !== "NUMPY") throw new Error(`${name} is not a .npy file`);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const major = bytes[6];
  const start = major === 1 ? 10 : 12;
  const headerLength = major === 1 ? view.getUint16(8, true) : view.getUint32(8, true);
  const header = new TextDecoder().decode(bytes.subarray(start, start + headerLength));
  const descr = /'descr':\s*'([^']+)'/.exec(header)?.[1];
  const shape = (/'shape':\s*\(([^)]*)\)/.exec(header)?.[1] ?? "")
    .split(",")
    .filter((d) => d.trim())
    .map(Number);
  if (/'fortran_order':\s*True/.test(header)) throw new Error(`${name}: Fortran order`);
  const body = bytes.slice(start + headerLength); // a copy: aligned for typed arrays
  const size = shape.reduce((a, b) => a * b, 1);
  let values;
  if (descr === "<f8") values = new Float64Array(body.buffer, 0, size);
  else if (descr === "<i8") values = Float64Array.from(new BigInt64Array(body.buffer, 0, size), Number);
  else if (descr === "|b1") values = Float64Array.from(body.subarray(0, size));
  else if (descr?.startsWith("<U")) {
    const width = Number(descr.slice(2));
    const points = new Uint32Array(body.buffer, 0, size * width);
    values = Array.from({ length: size }, (_, i) => {
      const chars = points.subarray(i * width, (i + 1) * width);
      const end = chars.indexOf(0);
      return String.fromCodePoint(...(end < 0 ? chars : chars.subarray(0, end)));
    });
  } else throw new Error(`${name}: unsupported dtype ${descr}`);
  if (shape.length === 0) return values[0];
  if (!Array.isArray(values)) return new Matrix(values, shape);
  if (shape.length === 1) return values;
  const cols = shape[1]; // strings (ids): rows of names
  return Array.from({ length: shape[0] }, (_, i) => values.slice(i * cols, (i + 1) * cols));
}

/** The members of an uncompressed .npz (zip) archive, as {path: value}. */
export function readNpz(buffer) {
  const bytes = new Uint8Array(buffer);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let end = bytes.length - 22;
  while (end >= 0 && view.getUint32(end, true) !== 0x06054b50) end--;
  if (end < 0) throw new Error("the answer is not a .npz (zip) archive");
  const count = view.getUint16(end + 10, true);
  let entry = view.getUint32(end + 16, true);
  const members = {};
  for (let k = 0; k < count; k++) {
    if (view.getUint32(entry, true) !== 0x02014b50) throw new Error("corrupt .npz directory");
    const method = view.getUint16(entry + 10, true);
    const size = view.getUint32(entry + 20, true);
    const nameLength = view.getUint16(entry + 28, true);
    const skip = view.getUint16(entry + 30, true) + view.getUint16(entry + 32, true);
    const local = view.getUint32(entry + 42, true);
    const name = new TextDecoder().decode(bytes.subarray(entry + 46, entry + 46 + nameLength));
    if (method !== 0 || size === 0xffffffff) throw new Error(`${name}: compressed or zip64 member`);
    const data = local + 30 + view.getUint16(local + 26, true) + view.getUint16(local + 28, true);
    members[name.replace(/\.npy$/, "")] = readNpy(bytes.subarray(data, data + size), name);
    entry += 46 + nameLength + skip;
  }
  return members;
}

function nest(members) {
  const out = {};
  for (const [path, value] of Object.entries(members)) {
    const keys = path.split(".");
    const leaf = keys.pop();
    let node = out;
    for (const key of keys) node = node[key] ??= {};
    node[leaf] = value;
  }
  return out;
}

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
   * Options: model ("okboost" | "ok3" | "ok3-forest"), params, name, evalSet, wait, and any
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

  job(jobId) {
    return this.#request("GET", `/jobs/${encodeURIComponent(jobId)}`);
  }

  async jobs() {
    return (await this.#request("GET", "/jobs")).jobs;
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

  async models() {
    return (await this.#request("GET", "/models")).models;
  }

  model(modelId) {
    return this.#request("GET", `/models/${encodeURIComponent(modelId)}`);
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
