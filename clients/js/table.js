// Tables as JavaScript programs hold them: arrays of objects (rows of a CSV parsed by any
// library, records from a database), turned into what the okboost service takes: a
// matrix of numbers plus, from an id column, the vertex ids.
//
//   rowsToInputs([{ id: "YAL001C", f1: 0.2, f2: 1.3 }, ...])
//     -> { inputs: [[0.2, 1.3], ...], ids: ["YAL001C", ...], columns: ["f1", "f2"] }
//   rowsToEdges([{ source: "YAL001C", target: "YBR002W" }, ...]) -> [["YAL001C", "YBR002W"], ...]
//
// A table labelled by id (an id column naming its rows, the other columns' names naming its
// columns) is matched by id where the service matches a labelled table: a bipartite
// adjacency to the two sides (rowsToInputs's ids and columns), a similarity's columns to its
// rows or to the training vertices (rowsToSimilarity).

/** True for a non-empty array of plain objects (rows of a table), not of arrays. */
export function isRows(value) {
  return (
    Array.isArray(value) &&
    value.length > 0 &&
    value.every((row) => row !== null && typeof row === "object" && !Array.isArray(row))
  );
}

const isNumber = (v) => typeof v === "number" && Number.isFinite(v);
/** A missing value: null or NaN (sent as JSON null; the service says which fields take one). */
const isMissing = (v) => v === null || Number.isNaN(v);

/**
 * Inputs from rows of objects: every column holds numbers except the id column, which is
 * `idColumn` when given (null: none, every column holds numbers), else "id" when present,
 * else the first column holding a non-number. Columns follow the first row's key order; every row must have them all.
 * null or NaN is a missing value (the tree models take missing inputs).
 * @returns {{inputs: number[][], ids: string[] | null, columns: string[]}}
 */
export function rowsToInputs(rows, { idColumn, name = "inputs" } = {}) {
  const keys = Object.keys(rows[0]);
  let id = idColumn;
  if (id === undefined) {
    const text = (key) => !isNumber(rows[0][key]) && !isMissing(rows[0][key]);
    id = keys.includes("id") ? "id" : keys.find(text);
  }
  if (id != null && !keys.includes(id)) {
    throw new RangeError(`${name}: no column "${id}" (the columns are ${keys.join(", ")})`);
  }
  const columns = keys.filter((key) => key !== id);
  if (!columns.length) throw new RangeError(`${name}: no numeric column besides the id column`);
  const inputs = rows.map((row, i) => {
    const extra = Object.keys(row).find((key) => !keys.includes(key));
    if (extra !== undefined) {
      throw new RangeError(`${name}[${i}] has a column "${extra}" that row 0 has not`);
    }
    return columns.map((key) => {
      const value = row[key];
      if (!isNumber(value) && !isMissing(value)) {
        const shown = typeof value === "number" ? String(value) : JSON.stringify(value);
        throw new TypeError(
          `${name}[${i}].${key} = ${shown} is not a finite number (a missing value is null)` +
            (id == null ? "" : ` (the id column is "${id}")`),
        );
      }
      return value;
    });
  });
  const ids =
    id == null
      ? null
      : rows.map((row, i) => {
          const value = row[id];
          if (typeof value !== "string" && !isNumber(value)) {
            throw new TypeError(`${name}[${i}].${id} = ${JSON.stringify(value)} is not an id`);
          }
          return String(value);
        });
  return { inputs, ids, columns };
}

/**
 * A similarity from rows of objects labelled by id ([{id: "t1", t1: 1, t2: 0.4}, ...]: the
 * id column names its rows, the other columns' names its columns), as the service matches
 * it. `training`: the square similarity among one side's vertices, its columns put in its
 * rows' order by id (`columns` then null); else the Q x N similarity of new vertices, whose
 * `columns` name the training vertices (the request's similarity_ids). Rows without an id
 * column are returned by position (`ids` and `columns` null).
 * @returns {{similarity: number[][], ids: string[] | null, columns: string[] | null}}
 */
export function rowsToSimilarity(rows, { training = false, name = "similarity" } = {}) {
  const table = rowsToInputs(rows, { name });
  if (table.ids === null) return { similarity: table.inputs, ids: null, columns: null };
  if (!training) return { similarity: table.inputs, ids: table.ids, columns: table.columns };
  const position = new Map(table.columns.map((id, j) => [id, j]));
  const same =
    table.ids.length === table.columns.length &&
    new Set(table.ids).size === table.ids.length &&
    table.ids.every((id) => position.has(id));
  if (!same) {
    throw new RangeError(
      `${name}: a labelled similarity names the same items once each in its id column and ` +
        "its other columns, in any order",
    );
  }
  const order = table.ids.map((id) => position.get(id));
  return {
    similarity: table.inputs.map((row) => order.map((j) => row[j])),
    ids: table.ids,
    columns: null,
  };
}

/**
 * Edges from rows of objects with two fields (the first two keys of row 0, e.g. source and
 * target): numbers are row indices, strings vertex ids.
 * @returns {Array<[number, number] | [string, string]>}
 */
export function rowsToEdges(rows, name = "edges") {
  const keys = Object.keys(rows[0]);
  if (keys.length !== 2) {
    throw new RangeError(
      `${name}: rows must have two fields (the two vertices), got ${keys.join(", ")}`,
    );
  }
  return rows.map((row, i) => {
    const pair = keys.map((key) => row[key]);
    if (pair.some((v) => v === undefined)) {
      throw new RangeError(`${name}[${i}] lacks "${keys.find((k) => row[k] === undefined)}"`);
    }
    return pair;
  });
}
