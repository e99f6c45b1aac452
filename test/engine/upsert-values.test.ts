/**
 * checkUpsert takes a buffer from upsertValuesBuffer as the batch's rows (no copy) only when every vector's values
 * are views of it in order; any other batch is copied, and both build the same op and fail with the same errors.
 * A taken buffer is handed out again only once its batch is applied: many batches through a real collection
 * (WAL, files) reusing buffers store exactly what each batch held, also after a reopen (replay of the WAL).
 * Property: fast-check, fixed seed.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { engineFixture } from "./engine-fixture.js";
import { SvcError } from "../../src/errors.js";
import { Collection } from "../../src/engine/collection.js";
import { upsertValuesBuffer } from "../../src/engine/upsert-buffers.js";
import { checkUpsert, type VectorInput } from "../../src/engine/writer.js";

const fx = engineFixture("svc-upsert-values-");
const DIM = 8;
const SHAPE = { rowBytes: DIM * 4, dimension: DIM, cosine: true };

/** The batch's values as views, in order, of one buffer: given away (upsertValuesBuffer) or not. */
function batch(rows: number[][], given: boolean): { vectors: VectorInput[]; buf: ArrayBuffer } {
  const buf = given ? upsertValuesBuffer(rows.length * DIM * 4) : new ArrayBuffer(rows.length * DIM * 4);
  const vectors = rows.map((r, i) => {
    const values = new Float32Array(buf, i * DIM * 4, DIM);
    values.set(r);
    return { id: `v${i}`, values, metadata: { i } };
  });
  return { vectors, buf };
}

function errorOf(f: () => unknown): { code: string; field: string | undefined } | null {
  try {
    f();
    return null;
  } catch (e) {
    expect(e).toBeInstanceOf(SvcError);
    return { code: (e as SvcError).code, field: (e as SvcError).field };
  }
}

describe("checkUpsert and given value buffers", () => {
  const row = fc
    .array(fc.float({ noNaN: true, min: -10, max: 10 }), { minLength: DIM, maxLength: DIM })
    .filter((r) => r.some((x) => x !== 0));

  it("takes a given buffer as the rows, copies any other, and both ops are the same", () => {
    fc.assert(
      fc.property(fc.array(row, { minLength: 1, maxLength: 20 }), (rows) => {
        const given = batch(rows, true);
        const plain = batch(rows, false);
        const a = checkUpsert("ns", given.vectors, SHAPE);
        const b = checkUpsert("ns", plain.vectors, SHAPE);
        expect(a.v.buffer).toBe(given.buf); // taken: the op holds the buffer itself
        expect(b.v.buffer).not.toBe(plain.buf); // not given: copied
        expect(Buffer.from(a.v)).toEqual(Buffer.from(b.v));
        expect(a.ids).toEqual(b.ids);
        expect(a.m).toEqual(b.m);
        new Float32Array(plain.buf).fill(1); // the caller keeps its own buffer: the op does not change
        expect(Buffer.from(b.v)).toEqual(Buffer.from(a.v));
        // taken once: the same views in a second upsert are copied
        expect(checkUpsert("ns", given.vectors, SHAPE).v.buffer).not.toBe(given.buf);
      }),
      { seed: 20261126, numRuns: 50 },
    );
  });

  it("a given buffer whose views are not the batch's rows in order is copied, with the copy path's errors", () => {
    const rows = Array.from({ length: 4 }, (_, i) => Array.from({ length: DIM }, (_, d) => i + d + 1));
    // out of order
    const swapped = batch(rows, true);
    [swapped.vectors[1], swapped.vectors[2]] = [swapped.vectors[2]!, swapped.vectors[1]!];
    const op = checkUpsert("ns", swapped.vectors, SHAPE);
    expect(op.v.buffer).not.toBe(swapped.buf);
    expect(Array.from(new Float32Array(op.v.buffer, 8 * 4, DIM))).toEqual(rows[2]);
    // one vector a value short, one NaN, one all zeros: the same errors as a plain batch
    const cases: Array<(v: VectorInput[], buf: ArrayBuffer) => void> = [
      (v, buf) => (v[2] = { ...v[2]!, values: new Float32Array(buf, 2 * DIM * 4, DIM - 1) }),
      (v) => ((v[1]!.values as Float32Array)[3] = Number.NaN),
      (v) => (v[3]!.values as Float32Array).fill(0),
      (v) => (v[0] = { ...v[0]!, id: "" }),
    ];
    for (const spoil of cases) {
      const given = batch(rows, true);
      const plain = batch(rows, false);
      spoil(given.vectors, given.buf);
      spoil(plain.vectors, plain.buf);
      const e = errorOf(() => checkUpsert("ns", given.vectors, SHAPE));
      expect(e).not.toBeNull();
      expect(e).toEqual(errorOf(() => checkUpsert("ns", plain.vectors, SHAPE)));
    }
  });

  it("a taken buffer is reused only after its batch is applied, and every batch stores what it held", async () => {
    const dir = fx.newDir();
    const open = () => Collection.open(dir, { kernels: fx.kernels, pool: fx.pool, dimension: DIM });
    let c = await open();
    const value = (b: number, i: number, d: number) => Math.fround(Math.sin(b * 131 + i * 17 + d) + 1.5);
    const batches = 24;
    const seen = new Set<ArrayBuffer>();
    let reused = 0;
    const writes: Promise<unknown>[] = [];
    for (let b = 0; b < batches; b++) {
      const buf = upsertValuesBuffer(10 * DIM * 4);
      if (seen.has(buf)) reused++;
      seen.add(buf);
      const f = new Float32Array(buf);
      for (let i = 0; i < 10; i++) for (let d = 0; d < DIM; d++) f[i * DIM + d] = value(b, i, d);
      // ids repeat across batches: later batches overwrite earlier rows of the same id
      writes.push(
        c.upsert(
          "ns",
          Array.from({ length: 10 }, (_, i) => ({ id: `b${b}-${i}`, values: new Float32Array(buf, i * DIM * 4, DIM) })),
        ),
      );
      if (b % 3 === 2) await Promise.all(writes.splice(0)); // some batches wait for their acknowledgement, some are in flight together
      if (b % 6 === 5) await c.settled(); // applied: their buffers come back
    }
    await Promise.all(writes);
    await c.settled();
    expect(reused).toBeGreaterThan(0);
    const check = (col: Collection) => {
      for (let b = 0; b < batches; b++) {
        const got = col.fetch(
          "ns",
          Array.from({ length: 10 }, (_, i) => `b${b}-${i}`),
        );
        expect(got.length).toBe(10);
        got.forEach((v, i) => expect(Array.from(v.values!), v.id).toEqual(Array.from({ length: DIM }, (_, d) => value(b, i, d))));
      }
    };
    check(c);
    await c.close();
    c = await open(); // replayed from the WAL (no checkpoint was taken): the logged bytes are the batches' too
    check(c);
    await c.close();
  });
});
