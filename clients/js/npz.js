// Reader of the okboost service's binary answers: uncompressed .npz (zip) archives of .npy
// files, one per field of the JSON answer, named by its dotted path (kernel, edges.new_known,
// index_ids ...). Numbers become Matrix objects over Float64Array (int64 and bool too),
// unicode arrays (ids) arrays of strings, 0-d members plain values.

import { Matrix } from "./matrix.js";

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

/** Members named by dotted paths as the nested object of the JSON answer. */
export function nest(members) {
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
