import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SvcError } from "../../src/errors.js";
import { AnalogyService, MAX_FEATURES } from "../../src/hd/analogy/service.js";
import { buildItemTable, codebook } from "../../src/hd/analogy/item-table.js";
import { Kernels } from "../../src/kernels/abi.js";
import { mulberry32 } from "../../src/kernels/random.js";
import { ScanPool } from "../../src/pool/scan-pool.js";
import { hdAnalogyRoutes } from "../../src/http/routes/hd-analogy.js";
import { refusal } from "./route-check.js";

describe("hd analogy", () => {
  let kernels: Kernels;
  let pool: ScanPool;
  let svc: AnalogyService;
  beforeAll(() => {
    kernels = Kernels.create();
    pool = new ScanPool(kernels, { threads: 2 });
    svc = new AnalogyService({ kernels, pool });
  });
  afterAll(async () => {
    await pool.close();
  });

  it("item i is XOR over features of codebook[f][bit_f(i)]", () => {
    const dim = svc.dimBits;
    const cb = codebook(5, 9, dim);
    const t = buildItemTable(kernels.heap, 5, 9, dim);
    try {
      const lanes = dim / 32;
      for (let i = 0; i < 32; i++) {
        const want = new Uint32Array(lanes);
        for (let f = 0; f < 5; f++) for (let j = 0; j < lanes; j++) want[j]! ^= cb[f]![(i >>> f) & 1]![j]!;
        expect(Array.from(new Uint32Array(kernels.heap.memory.buffer, t.arena.rowPtr(i), lanes))).toEqual(Array.from(want));
      }
    } finally {
      t.arena.dispose();
    }
  });

  it("is correct for every (a, b, c) at n_feat 1..6", async () => {
    for (let n = 1; n <= 6; n++) {
      const items = 2 ** n;
      for (let a = 0; a < items; a++) {
        for (let b = 0; b < items; b++) {
          for (let c = 0; c < items; c++) {
            const r = await svc.analogy({ n_feat: n, a, b, c, seed: 3 });
            if (r.candidate !== (a ^ b ^ c) || r.cosine !== 1 || r.runner_up === r.candidate) {
              throw new Error(`n_feat ${n} (${a}, ${b}, ${c}) -> ${JSON.stringify(r)}`);
            }
          }
        }
      }
    }
  }, 120_000);

  it("is correct on a seeded random sample at n_feat 20", async () => {
    const next = mulberry32(20261123);
    const items = 2 ** MAX_FEATURES;
    for (let i = 0; i < 20; i++) {
      const [a, b, c] = [next() % items, next() % items, next() % items];
      const r = await svc.analogy({ n_feat: 20, a, b, c, seed: 11 });
      const want = a ^ b ^ c;
      expect(r.candidate).toBe(want);
      expect(r.candidate_bits).toEqual(Array.from({ length: 20 }, (_, f) => (want >>> f) & 1));
      expect(r.cosine).toBe(1);
      expect(r.runner_up).not.toBe(want);
      expect(r.ambiguity).toBeGreaterThan(0);
      expect(r.ambiguity).toBeLessThan(0.5);
      expect(r.confidence).toBeCloseTo(1 - r.ambiguity, 12);
    }
  }, 60_000);

  it("is deterministic: same request, same bytes (also after eviction and rebuild)", async () => {
    const req = { n_feat: 12, a: 5, b: 1000, c: 77, seed: 42 };
    const first = JSON.stringify(await svc.analogy(req));
    const small = new AnalogyService({ kernels, pool }, { cacheBytes: 1 });
    expect(JSON.stringify(await small.analogy(req))).toBe(first);
    await small.analogy({ n_feat: 11, a: 0, b: 0, c: 0 });
    expect(small.cachedBytes).toBe(2 ** 11 * (small.dimBits / 8));
    expect(JSON.stringify(await small.analogy(req))).toBe(first);
    // another seed, another codebook: same candidate, other runner-up statistics
    const other = await svc.analogy({ ...req, seed: 43 });
    expect(other.candidate).toBe(5 ^ 1000 ^ 77);
  });

  it("keeps cached tables under the memory bound (LRU)", async () => {
    const bounded = new AnalogyService({ kernels, pool }, { cacheBytes: 3 * 2 ** 10 * (svc.dimBits / 8) });
    for (const seed of [1, 2, 3, 4]) await bounded.analogy({ n_feat: 10, a: 1, b: 2, c: 3, seed });
    expect(bounded.cachedBytes).toBe(3 * 2 ** 10 * (svc.dimBits / 8));
  });

  // types and ranges: the route's schema (tools/hd-ops.ts), run as a request runs it
  it.each([
    [{ n_feat: 0, a: 0, b: 0, c: 0 }, "n_feat"],
    [{ n_feat: 21, a: 0, b: 0, c: 0 }, "n_feat"],
    [{ n_feat: 2.5, a: 0, b: 0, c: 0 }, "n_feat"],
    [{ n_feat: "3", a: 0, b: 0, c: 0 }, "n_feat"],
    [{ a: 0, b: 0, c: 0 }, "n_feat"],
    [{ n_feat: 3, a: 0, b: -1, c: 0 }, "b"],
    [{ n_feat: 3, a: 0, b: 0, c: 1.5 }, "c"],
    [{ n_feat: 3, a: 0, b: 0 }, "c"],
    [{ n_feat: 3, a: 0, b: 0, c: 0, seed: 0.5 }, "seed"],
    [{ n_feat: 3, a: 0, b: 0, c: 0, seed: -1 }, "seed"],
    [[], "body"],
  ])("the route refuses %j with E_BAD_REQUEST on %s", (body, field) => {
    expect(refusal(hdAnalogyRoutes(svc)[0]!, body)).toEqual({ code: "E_BAD_REQUEST", status: 400, field });
  });

  // an item index against n_feat relates two fields: the service checks it
  it.each([
    [{ n_feat: 3, a: 8, b: 0, c: 0 }, "a"],
    [{ n_feat: 3, a: 0, b: 8, c: 0 }, "b"],
    [{ n_feat: 1, a: 0, b: 0, c: 2 }, "c"],
  ])("rejects %j with E_BAD_REQUEST on %s", async (body, field) => {
    expect(refusal(hdAnalogyRoutes(svc)[0]!, body)).toBeNull();
    const err = await svc.analogy(body).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SvcError);
    expect((err as SvcError).code).toBe("E_BAD_REQUEST");
    expect((err as SvcError).status).toBe(400);
    expect((err as SvcError).field).toBe(field);
  });
});
