// Matrix: a row-major typed array with its shape, the binary form of an array for the
// okboost clients (sent as one raw little-endian part; read back from .npz answers).

const DTYPES = new Map([
  [Float64Array, "<f8"],
  [Float32Array, "<f4"],
  [Uint8Array, "|u1"],
  [Int32Array, "<i4"],
  [BigInt64Array, "<i8"],
]);

export const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

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

  /**
   * A Matrix from nested arrays (rows of equal length), by default as float64. In a float
   * matrix null is a missing value (NaN), as it is in JSON; an integer matrix takes whole
   * numbers in its type's range only (a typed array would turn null or NaN into 0 and cut
   * 1.5 to 1 without a word).
   */
  static fromRows(rows, Type = Float64Array) {
    const cols = rows.length ? rows[0].length : 0;
    const data = new Type(rows.length * cols);
    const float = Type === Float64Array || Type === Float32Array;
    rows.forEach((row, i) => {
      if (row.length !== cols) throw new RangeError(`row ${i} has ${row.length} values, not ${cols}`);
      if (Type === BigInt64Array) {
        data.set(row.map(BigInt), i * cols);
        return;
      }
      row.forEach((value, j) => {
        data[i * cols + j] = float && value === null ? NaN : value;
        if (!float && data[i * cols + j] !== value) {
          throw new RangeError(
            `row ${i}, column ${j} = ${value} is not a whole number a ${Type.name} holds`,
          );
        }
      });
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
