// Tests of the JavaScript client against a live okboost server at OKBOOST_URL
// (the Python test suite starts one: tests/e2e/test_clients.py). Run: node --test
import assert from "node:assert/strict";
import { createServer } from "node:net";
import { test } from "node:test";

import { Matrix, OKBoostClient, OKBoostError, rowsToInputs } from "../okboost.js";

const URL = process.env.OKBOOST_URL;
const skip = URL ? false : "OKBOOST_URL is not set: start a server (okboost serve) and point to it";

// The walk-through of docs/walkthrough.md: two communities of 4 vertices, A near (0, 1), B near (1, 0), one bridge.
const X = [
  [0.0, 1.0], [0.1, 0.9], [0.2, 1.0], [0.0, 0.8],
  [1.0, 0.0], [0.9, 0.1], [1.0, 0.2], [0.8, 0.0],
];
const EDGES = [
  [0, 1], [0, 2], [1, 2], [1, 3], [2, 3],
  [4, 5], [4, 6], [5, 6], [5, 7], [6, 7], [3, 7],
];
const NEW = [[0.05, 0.95], [0.95, 0.05]];
const PARAMS = { n_estimators: 50, learning_rate: 0.1, max_splits: 2, random_state: 0 };
const COMMUNITY_A = new Set([0, 1, 2, 3]);
const COMMUNITY_B = new Set([4, 5, 6, 7]);

async function trainWalkthrough(client, inputs, edges) {
  const accepted = await client.train(inputs, { type: "diffusion", beta: 1.0, edges }, {
    params: PARAMS,
    name: "js-client",
  });
  assert.ok(["queued", "running", "done"].includes(accepted.state), accepted.state);
  const seen = [];
  const job = await client.wait(accepted.job_id, { pollMs: 50, onProgress: (j) => seen.push(j) });
  assert.equal(job.state, "done");
  assert.equal(job.progress.total, PARAMS.n_estimators);
  assert.equal(job.progress.done, job.progress.total);
  assert.ok(seen.length >= 1);
  return accepted.model_id;
}

test("train with JSON arrays, poll the job, ask /kernel for the edges of new vertices", { skip }, async () => {
  const client = new OKBoostClient(URL);
  const modelId = await trainWalkthrough(client, X, EDGES);

  const out = await client.kernel(modelId, NEW, { against: "predicted", topK: 2 });
  assert.deepEqual(out.shape, [2, 2]);
  assert.equal(out.kernel[0][1], out.kernel[1][0]);
  const knownOf = (row) => out.edges.new_known.filter(([a]) => a === row).map(([, b]) => b);
  assert.equal(knownOf(0).length, 2);
  assert.ok(knownOf(0).every((b) => COMMUNITY_A.has(b)), `${knownOf(0)}`);
  assert.ok(knownOf(1).every((b) => COMMUNITY_B.has(b)), `${knownOf(1)}`);
  for (const [a, b, score] of out.edges.new_new) {
    assert.ok(a < b && score === out.kernel[a][b]);
  }

  const edgesOnly = await client.kernel(modelId, NEW, { threshold: 0.1, returnKernel: false });
  assert.equal(edgesOnly.kernel, null);
  assert.ok(edgesOnly.edges.new_known.every(([, , s]) => s >= 0.1));

  const pre = await client.predict(modelId, NEW, { topK: 1 });
  assert.ok(COMMUNITY_A.has(pre.indices[0][0]) && COMMUNITY_B.has(pre.indices[1][0]));

  assert.ok((await client.models()).some((m) => m.model_id === modelId));
  assert.equal((await client.model(modelId)).model_id, modelId);
  const described = await client.model(modelId, { curves: true, importances: true });
  assert.equal(described.train_loss.length, PARAMS.n_estimators);
  assert.equal(described.feature_importances.length, 2);
  const jobs = await client.jobs();
  const job = await client.job(jobs.find((j) => j.model_id === modelId).job_id, { curves: true });
  assert.equal(job.train_loss.length, PARAMS.n_estimators);
  await client.deleteModel(modelId);
  await assert.rejects(client.model(modelId), (e) => e instanceof OKBoostError && e.status === 404);
});

test("binary parts (typed arrays) give the same model and answers as JSON", { skip }, async () => {
  const client = new OKBoostClient(URL);
  const fromJson = await trainWalkthrough(client, X, EDGES);
  const fromBinary = await trainWalkthrough(
    client,
    Matrix.fromRows(X),
    Matrix.fromRows(EDGES, Int32Array),
  );
  const a = await client.kernel(fromJson, NEW, { topK: 2 });
  const b = await client.kernel(fromBinary, Matrix.fromRows(NEW), { topK: 2 });
  assert.deepEqual(b.kernel, a.kernel);
  assert.deepEqual(b.edges, a.edges);

  const f32 = await client.kernel(fromBinary, Matrix.fromRows(NEW, Float32Array), { topK: 2 });
  assert.deepEqual(f32.shape, [2, 2]);
  await client.deleteModel(fromJson);
  await client.deleteModel(fromBinary);
});

test("errors arrive as OKBoostError with the service's status, code and message", { skip }, async () => {
  const client = new OKBoostClient(URL);
  await assert.rejects(client.kernel("0".repeat(32), NEW), (e) => {
    assert.ok(e instanceof OKBoostError);
    assert.equal(e.status, 404);
    assert.equal(e.code, "not_found");
    return true;
  });
  await assert.rejects(
    client.train(X, { type: "diffusion", beta: 1.0, edges: [[0, 99]] }, { params: PARAMS }),
    (e) => e instanceof OKBoostError && e.status === 422 && /99/.test(e.message),
  );
  assert.throws(() => new Matrix(new Float64Array(3), [2, 2]), RangeError);
  assert.equal((await client.health()).status, "ready");
});

test("vertex ids: edges by id in, edges and pre-images by id out", { skip }, async () => {
  const client = new OKBoostClient(URL);
  const ids = X.map((_, i) => `paper-${i}`);
  const byId = EDGES.map(([a, b]) => [ids[a], ids[b]]);
  const accepted = await client.train(X, { type: "diffusion", beta: 1.0, edges: byId }, {
    params: PARAMS,
    ids,
  });
  await client.wait(accepted.job_id, { pollMs: 50 });
  const modelId = accepted.model_id;
  const out = await client.kernel(modelId, NEW, { topK: 2, ids: ["new-A", "new-B"] });
  const named = out.edges.new_known_ids;
  assert.equal(named.length, out.edges.new_known.length);
  out.edges.new_known.forEach(([a, b], i) => {
    assert.deepEqual(named[i], [["new-A", "new-B"][a], ids[b]]);
  });
  const pre = await client.predict(modelId, NEW, { topK: 1 });
  assert.deepEqual(pre.index_ids, pre.indices.map((row) => row.map((i) => ids[i])));
  await client.deleteModel(modelId);
});

test("binary answers (.npz) hold the same numbers as JSON answers", { skip }, async () => {
  const client = new OKBoostClient(URL);
  const ids = X.map((_, i) => `v${i}`);
  const accepted = await client.train(Matrix.fromRows(X), {
    type: "diffusion", beta: 1.0, edges: Matrix.fromRows(EDGES, Int32Array),
  }, { params: PARAMS, ids });
  await client.wait(accepted.job_id, { pollMs: 50 });
  const modelId = accepted.model_id;

  const ask = { topK: 2, ids: ["n0", "n1"] };
  const json = await client.kernel(modelId, NEW, ask);
  const npz = await client.kernel(modelId, NEW, { ...ask, format: "npz" });
  assert.equal(npz.model_id, modelId);
  assert.ok(npz.kernel instanceof Matrix && npz.kernel.data instanceof Float64Array);
  assert.deepEqual(npz.kernel.shape, [2, 2]);
  assert.deepEqual(npz.kernel.toRows(), json.kernel);
  assert.deepEqual(Array.from(npz.shape.data), json.shape);
  assert.deepEqual(npz.edges.new_known.shape, [json.edges.new_known.length, 3]);
  assert.deepEqual(npz.edges.new_known.toRows(), json.edges.new_known);
  assert.deepEqual(npz.edges.new_known_ids, json.edges.new_known_ids);

  const preJson = await client.predict(modelId, NEW, { topK: 2, weights: "sparse" });
  const preNpz = await client.predict(modelId, NEW, { topK: 2, weights: "sparse", format: "npz" });
  assert.deepEqual(preNpz.indices.toRows(), preJson.indices);
  assert.deepEqual(preNpz.scores.toRows(), preJson.scores);
  assert.deepEqual(preNpz.weights_sparse.toRows(), preJson.weights_sparse);
  assert.deepEqual(preNpz.index_ids, preJson.index_ids);
  assert.equal(preNpz.weights, undefined); // null in JSON, absent from the archive

  await assert.rejects(client.kernel(modelId, NEW, { format: "npz", inputs2: [[1]] }), OKBoostError);
  await client.deleteModel(modelId);
});

test("train with no model gets the server's default: the automatic choice for vector outputs", { skip }, async () => {
  const client = new OKBoostClient(URL);
  const outputs = X.map(([a, b]) => [a + b, a - b]);
  const fit = await client.train(X, { type: "linear", outputs }, {
    params: { max_cpu_seconds: 5, random_state: 0 },
    wait: true,
  });
  assert.equal(fit.model.model, "auto");
  assert.ok(fit.model.auto.leaderboard.length > 0);
});

/** A client whose fetch records each request's JSON body and answers `answer`. */
function recording(answer = {}) {
  const bodies = [];
  const fetch = async (url, init) => {
    bodies.push(JSON.parse(init.body));
    return new Response(JSON.stringify(answer), { headers: { "content-type": "application/json" } });
  };
  return { client: new OKBoostClient("http://okboost.test", { fetch }), bodies };
}

test("null leaves an option out, as undefined does: no model named sends none", async () => {
  const { client, bodies } = recording();
  const kernel = { type: "diffusion", beta: 1.0, edges: EDGES };
  await client.train(X, kernel, { model: null, params: null, name: null });
  await client.train(X, kernel);
  await client.trainBipartite(X, X, { edges: [[0, 1]], model: null, params: null });
  for (const body of bodies) {
    assert.ok(!("model" in body) && !("name" in body), JSON.stringify(Object.keys(body)));
  }
  assert.ok(!("params" in bodies[0]) && !("params" in bodies[2]));
  assert.deepEqual(bodies[1].params, {}); // left out: none
  await client.train(X, kernel, { model: "okboost", params: { n_estimators: 5 } });
  assert.equal(bodies[3].model, "okboost");
  assert.deepEqual(bodies[3].params, { n_estimators: 5 });
});

test("a server that cannot be reached is an error naming the URL, not 'fetch failed'", async () => {
  const port = await new Promise((resolve) => {
    const probe = createServer().listen(0, "127.0.0.1", () => {
      const { port: free } = probe.address();
      probe.close(() => resolve(free)); // closed again: nothing listens there
    });
  });
  const client = new OKBoostClient(`http://127.0.0.1:${port}`);
  await assert.rejects(client.health(), (e) => {
    assert.match(e.message, new RegExp(`cannot reach the okboost service at http://127.0.0.1:${port}/health/ready`));
    assert.match(e.message, /ECONNREFUSED/);
    assert.ok(e.cause instanceof Error);
    return true;
  });
  const slow = new OKBoostClient("http://okboost.test", {
    timeoutMs: 20,
    fetch: (url, init) =>
      new Promise((resolve, reject) => {
        const hold = setTimeout(resolve, 10_000); // a server that does not answer (keeps node alive)
        init.signal.addEventListener("abort", () => {
          clearTimeout(hold);
          reject(init.signal.reason);
        });
      }),
  });
  await assert.rejects(slow.models(), /GET http:\/\/okboost.test\/models.* got no answer within timeoutMs = 20 ms/);
});

test("null and NaN in tables and float matrices are missing values, never 0", () => {
  const table = rowsToInputs([{ f1: null, f2: NaN, name: "a" }]); // null is no id
  assert.deepEqual(table.ids, ["a"]);
  assert.deepEqual(table.inputs, [[null, NaN]]); // JSON sends both as null
  assert.throws(() => rowsToInputs([{ id: "a", f1: Infinity }]), /f1 = Infinity is not a finite number/);
  assert.throws(() => rowsToInputs([{ id: "a", f1: "n/a" }]), /f1 = "n\/a" is not a finite number/);
  assert.ok(Number.isNaN(Matrix.fromRows([[null, 1]]).data[0]));
  assert.ok(Number.isNaN(Matrix.fromRows([[null, 1]], Float32Array).data[0]));
  assert.throws(() => Matrix.fromRows([[0, null]], Int32Array), /column 1 = null is not a whole number/);
  assert.throws(() => Matrix.fromRows([[0, 1.5]], Int32Array), /1.5 is not a whole number/);
  assert.throws(() => Matrix.fromRows([[256]], Uint8Array), /256 is not a whole number/);
});

test("null and NaN are missing values: nested arrays, Matrix and rows of objects", { skip }, async () => {
  const client = new OKBoostClient(URL);
  const holes = X.map((row) => [...row]);
  holes[1][0] = null;
  holes[5][1] = NaN;
  const outputs = X.map(([a, b]) => [a + b, a - b]);
  const table = holes.map(([f1, f2], i) => ({ id: `v${i}`, f1, f2 }));
  const answers = [];
  for (const inputs of [holes, Matrix.fromRows(holes), table]) {
    const fit = await client.train(inputs, { type: "linear", outputs }, {
      model: "okboost", params: PARAMS, wait: true,
    });
    assert.equal(fit.model.status, "ready");
    answers.push((await client.predict(fit.model_id, [[null, 0.95], [0.95, NaN]], { topK: 2 })).indices);
    await client.deleteModel(fit.model_id);
  }
  assert.deepEqual(answers[1], answers[0]);
  assert.deepEqual(answers[2], answers[0]);
  await assert.rejects(
    client.train(holes, { type: "linear", outputs }, { model: "krr" }),
    (e) => e instanceof OKBoostError && e.status === 422 && /missing values/.test(e.message),
  );
});

test("export a model's archive and import it again: a 409 while its id is taken, else renamed", { skip }, async () => {
  const client = new OKBoostClient(URL);
  const modelId = await trainWalkthrough(client, X, EDGES);
  const archive = await client.exportModel(modelId);
  assert.ok(archive instanceof Uint8Array && archive[0] === 0x1f && archive[1] === 0x8b); // gzip
  await assert.rejects(client.importModel(archive), (e) => e instanceof OKBoostError && e.status === 409);
  const copy = await client.importModel(new Blob([archive]), { onConflict: "rename" });
  assert.notEqual(copy.model_id, modelId);
  assert.equal(copy.status, "ready");
  const a = await client.kernel(modelId, NEW);
  const b = await client.kernel(copy.model_id, NEW);
  assert.deepEqual(b.kernel, a.kernel);
  await client.deleteModel(modelId);
  const back = await client.importModel(archive); // its id is free again
  assert.equal(back.model_id, modelId);
  await assert.rejects(client.importModel(new Uint8Array([1, 2, 3])), (e) => e.status === 422);
  await assert.rejects(client.exportModel("0".repeat(32)), (e) => e.status === 404);
  for (const id of [modelId, copy.model_id]) await client.deleteModel(id);
});
