// evaluate(), train({cv}) and tables (arrays of objects) of the JavaScript client against a
// live okboost server at OKBOOST_URL, compared with what okcore computes on the same data:
// the file OKBOOST_EXPECTED (written by tests/e2e/test_clients.py).
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { Matrix, OKBoostClient, OKBoostError, rowsToEdges, rowsToInputs } from "../okboost.js";

const URL = process.env.OKBOOST_URL;
const EXPECTED = process.env.OKBOOST_EXPECTED;
const skip =
  URL && EXPECTED
    ? false
    : "OKBOOST_URL and OKBOOST_EXPECTED are not set: run through tests/e2e/test_clients.py";
const expected = skip ? null : JSON.parse(readFileSync(EXPECTED, "utf8"));
const data = expected?.data;

const close = (got, want, name) =>
  assert.ok(Math.abs(got - want) <= 1e-10 * Math.abs(want) + 1e-14, `${name}: ${got} != ${want}`);

async function trainModel(client, inputs, edges, options = {}) {
  const accepted = await client.train(inputs, { type: "diffusion", beta: data.beta, edges }, {
    params: data.params,
    ...options,
  });
  const job = await client.wait(accepted.job_id, { pollMs: 50 });
  assert.equal(job.progress.done, job.progress.total);
  return accepted.model_id;
}

test("evaluate equals okcore's metrics, from JSON arrays and from binary parts", { skip }, async () => {
  const client = new OKBoostClient(URL);
  const modelId = await trainModel(client, data.inputs, data.edges);
  const truth = {
    gramCross: data.gram_cross,
    gramDiag: data.gram_diag,
    newNew: data.new_new,
    newKnown: data.new_known,
    k: data.k,
  };
  const json = await client.evaluate(modelId, data.test_inputs, truth);
  for (const [name, value] of Object.entries(expected.evaluate)) close(json[name], value, name);
  assert.equal(json.n_test, data.test_inputs.length);
  assert.equal(json.k, data.k);
  assert.equal(json.known_scores, "predicted");

  const binary = await client.evaluate(modelId, Matrix.fromRows(data.test_inputs), {
    ...truth,
    gramCross: Matrix.fromRows(data.gram_cross),
    gramDiag: new Matrix(Float64Array.from(data.gram_diag), [data.gram_diag.length]),
    newNew: Matrix.fromRows(data.new_new, Int32Array),
    newKnown: Matrix.fromRows(data.new_known, Int32Array),
  });
  for (const name of Object.keys(expected.evaluate)) assert.equal(binary[name], json[name], name);

  const observed = await client.evaluate(modelId, data.test_inputs, {
    newNew: data.new_new,
    newKnown: data.new_known,
    knownScores: "observed",
  });
  close(observed.auc, expected.evaluate_observed_auc, "observed auc");
  assert.equal(observed.err_phi, null);
  assert.equal(observed.k, data.inputs.length); // 10 by default, at most N
  await client.deleteModel(modelId);
});

test("tables: rows of objects with an id column, edges and test edges by id", { skip }, async () => {
  const client = new OKBoostClient(URL);
  const name = (i) => `ORF-${i}`;
  const rows = data.inputs.map(([a, b], i) => ({ id: name(i), f1: a, f2: b }));
  const edgeRows = data.edges.map(([a, b]) => ({ source: name(a), target: name(b) }));
  const modelId = await trainModel(client, rows, edgeRows);
  const record = await client.model(modelId);
  assert.equal(record.has_ids, true);

  const testName = (i) => `new-${i}`;
  const testRows = data.test_inputs.map(([a, b], i) => ({ f1: a, f2: b, gene: testName(i) }));
  const scores = await client.evaluate(modelId, testRows, {
    newNew: data.new_new.map(([a, b]) => ({ a: testName(a), b: testName(b) })),
    newKnown: data.new_known.map(([a, i]) => [testName(a), name(i)]),
    k: data.k,
  });
  for (const key of ["auc", "auc_new_new", "auc_new_known", "precision_at_k"]) {
    close(scores[key], expected.evaluate[key], key);
  }
  const out = await client.kernel(modelId, testRows, { topK: 2 });
  assert.ok(out.edges.new_known_ids.every(([a]) => a.startsWith("new-")));
  await client.deleteModel(modelId);

  assert.deepEqual(rowsToInputs([{ x: 1, name: "a", y: 2 }]), {
    inputs: [[1, 2]],
    ids: ["a"],
    columns: ["x", "y"],
  });
  assert.throws(() => rowsToInputs([{ id: "a", x: 1 }, { id: "b", x: "2" }]), /inputs\[1\]\.x/);
  assert.throws(() => rowsToEdges([{ a: "x", b: "y", w: 1 }]), /two fields/);
  assert.throws(
    () => client.evaluate(modelId, rows, { ids: ["x"], newKnown: [[0, 0]] }),
    /not both/,
  );
});

test("train with cv keeps okcore's grid-search table and fits the best", { skip }, async () => {
  const client = new OKBoostClient(URL);
  const { spec, table, best_params: best } = expected.cv;
  const cv = { folds: spec.folds, grid: spec.grid, scoring: spec.scoring, randomState: spec.random_state };
  const modelId = await trainModel(client, data.inputs, data.edges, { cv });
  const record = await client.model(modelId);
  assert.deepEqual(record.cv.table, table);
  assert.deepEqual(record.cv.best_params, best);
  for (const [key, value] of Object.entries(best)) assert.equal(record.params[key], value);
  await assert.rejects(
    client.train(data.inputs, { type: "diffusion", beta: 1, edges: data.edges }, { cv: { folds: 1 } }),
    (e) => e instanceof OKBoostError && e.status === 422 && /cv\.folds/.test(e.message),
  );
  await client.deleteModel(modelId);
});
