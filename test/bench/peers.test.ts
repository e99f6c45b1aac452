/** The benchmark's peer engines return exact Hamming top-k (so the same-run comparison compares equal work). */
import assert from "node:assert/strict";
import { describe, it } from "vitest";
import { mulberry32 } from "../../src/kernels/random.js";
import type { PeerEngine, TopK } from "../../bench/peers/peer.js";
import { NaiveJsEngine } from "../../bench/peers/naive-js.js";
import { UsearchEngine } from "../../bench/peers/usearch.js";
import { SqliteVecEngine } from "../../bench/peers/sqlite-vec.js";

const POP8 = Uint8Array.from({ length: 256 }, (_, b) => {
  let c = 0;
  for (let x = b; x; x &= x - 1) c++;
  return c;
});

interface Case {
  n: number;
  dimBits: number;
  bytesPerRow: number;
  nq: number;
  k: number;
  seed: number;
}

/**
 * Random rows with padding bits zeroed; the last 5% of rows duplicate earlier ones so exact ties
 * exist, and half the queries are dataset rows with a few bits flipped (ties among near neighbours).
 */
function makeData(c: Case): { rows: Uint8Array; queries: Uint8Array } {
  const rnd = mulberry32(c.seed);
  const { n, dimBits, bytesPerRow, nq } = c;
  const fill = (buf: Uint8Array, count: number): void => {
    for (let i = 0; i < count; i++) {
      for (let b = 0; b < bytesPerRow; b++) {
        const bitsHere = Math.max(0, Math.min(8, dimBits - b * 8));
        buf[i * bytesPerRow + b] = rnd() & ((1 << bitsHere) - 1);
      }
    }
  };
  const rows = new Uint8Array(n * bytesPerRow);
  fill(rows, n);
  const dups = Math.floor(n / 20);
  for (let i = 0; i < dups; i++) {
    const src = rnd() % (n - dups);
    rows.copyWithin((n - dups + i) * bytesPerRow, src * bytesPerRow, (src + 1) * bytesPerRow);
  }
  const queries = new Uint8Array(nq * bytesPerRow);
  fill(queries, nq);
  for (let q = 0; q < nq; q += 2) {
    const src = rnd() % n;
    queries.copyWithin(q * bytesPerRow, src * bytesPerRow, (src + 1) * bytesPerRow);
    for (let f = 0; f < 3; f++) {
      const bit = rnd() % dimBits;
      queries[q * bytesPerRow + (bit >> 3)]! ^= 1 << (bit & 7);
    }
  }
  return { rows, queries };
}

/** Hamming distance (bits) from `query` to every row, byte-table popcount. */
function allDists(rows: Uint8Array, n: number, bytesPerRow: number, query: Uint8Array): Int32Array {
  const d = new Int32Array(n);
  for (let i = 0; i < n; i++) {
    let s = 0;
    for (let b = 0; b < bytesPerRow; b++) s += POP8[rows[i * bytesPerRow + b]! ^ query[b]!]!;
    d[i] = s;
  }
  return d;
}

/**
 * Exactness up to tie order: distances equal the reference top-k distances; every returned row is
 * distinct and really at its reported distance; order is (dist asc, row asc).
 */
function assertTopK(got: TopK, ref: Int32Array, k: number, what: string): void {
  const order = Array.from(ref.keys())
    .sort((a, b) => ref[a]! - ref[b]! || a - b)
    .slice(0, k);
  assert.deepEqual(
    Array.from(got.dists),
    order.map((r) => ref[r]!),
    `${what}: distances differ`,
  );
  assert.equal(got.rows.length, k, `${what}: row count`);
  assert.equal(new Set(got.rows).size, k, `${what}: duplicate rows`);
  for (let i = 0; i < k; i++) {
    const r = got.rows[i]!;
    assert.ok(r >= 0 && r < ref.length, `${what}: row ${r} out of range`);
    assert.equal(ref[r], got.dists[i], `${what}: row ${r} reported at ${got.dists[i]}, actual ${ref[r]}`);
    if (i > 0) {
      const ordered = got.dists[i - 1]! < got.dists[i]! || (got.dists[i - 1] === got.dists[i] && got.rows[i - 1]! < r);
      assert.ok(ordered, `${what}: not sorted by (dist, row) at ${i}`);
    }
  }
}

const cases: Case[] = [
  { n: 3000, dimBits: 1024, bytesPerRow: 128, nq: 20, k: 10, seed: 0x5eed1 },
  { n: 3000, dimBits: 256, bytesPerRow: 32, nq: 20, k: 10, seed: 0x5eed2 },
  { n: 3000, dimBits: 200, bytesPerRow: 32, nq: 20, k: 10, seed: 0x5eed3 }, // zero padding bits/bytes
];

const engines: (() => PeerEngine)[] = [
  () => new NaiveJsEngine(),
  () => new UsearchEngine(),
  () => new UsearchEngine({ threads: 2 }),
  // better-sqlite3 12 aborts the process under Node 24 when a statement is collected ("Assertion failed: (env) !=
  // nullptr" in Statement::~Statement, mid-run): the sqlite-vec peer (dev-only, a benchmark peer) is checked on Node 20,
  // where `npm run bench` runs it. better-sqlite3 13.2 passes on Node 24 but declares Node >= 22 and its prebuilt
  // binary segfaults on Node 20 at the first statement (tried 2026-11-27): one release cannot serve both until Node 20 goes.
  ...(Number(process.versions.node.split(".")[0]) >= 24 ? [] : [() => new SqliteVecEngine()]),
];

describe.each(cases)("peer engines, n=$n dimBits=$dimBits bytesPerRow=$bytesPerRow", (c) => {
  const { rows, queries } = makeData(c);
  const refs = Array.from({ length: c.nq }, (_, q) =>
    allDists(rows, c.n, c.bytesPerRow, queries.subarray(q * c.bytesPerRow, (q + 1) * c.bytesPerRow)),
  );
  it.each(engines.map((make) => [make().name, make] as const))("%s returns the exact top-k", async (_name, make) => {
    const e = make();
    try {
      await e.build(rows, c.n, c.dimBits, c.bytesPerRow);
      for (let q = 0; q < c.nq; q++) {
        assertTopK(e.search(queries.subarray(q * c.bytesPerRow, (q + 1) * c.bytesPerRow), c.k), refs[q]!, c.k, `${e.name} q=${q}`);
      }
      if (e.searchBatch) {
        const all = e.searchBatch(queries, c.nq, c.k);
        assert.equal(all.length, c.nq, `${e.name}: batch length`);
        all.forEach((got, q) => assertTopK(got, refs[q]!, c.k, `${e.name} batch q=${q}`));
      }
    } finally {
      e.close();
    }
  });
});
