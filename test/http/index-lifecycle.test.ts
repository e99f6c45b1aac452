/**
 * Index lifecycle under concurrency, against the built `svc serve` (real HTTP, real files):
 * clients create, delete, upsert, query and fetch the same few index names in any
 * interleaving (fast-check, fixed seed) and may only get 2xx, 404 or 409; after a restart the
 * listing is exactly the index folders on disk, each of which opens. And a delete while a
 * namespace's approximate index is being built in the background.
 */
import { existsSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { call } from "../e2e/client.js";
import { until } from "../e2e/until.js";
import { startServerProcess, type ServerProcess } from "../e2e/server-process.js";

const DIM = 4;
const NAMES = ["a", "b", "c"];
/** The background-build case: wide enough that the build takes a while. */
const BIG_DIM = 96;

type Cmd =
  | { op: "create"; name: string }
  | { op: "delete"; name: string }
  | { op: "upsert"; name: string; id: number }
  | { op: "query"; name: string }
  | { op: "fetch"; name: string; id: number };

const name = fc.constantFrom(...NAMES);
const cmd: fc.Arbitrary<Cmd> = fc.oneof(
  fc.record({ op: fc.constant("create" as const), name }),
  fc.record({ op: fc.constant("delete" as const), name }),
  fc.record({ op: fc.constant("upsert" as const), name, id: fc.nat(20) }),
  fc.record({ op: fc.constant("query" as const), name }),
  fc.record({ op: fc.constant("fetch" as const), name, id: fc.nat(20) }),
);

function request(base: string, key: string, c: Cmd) {
  switch (c.op) {
    case "create":
      return call(base, key, "POST", "/v1/indexes", { name: c.name, dimension: DIM });
    case "delete":
      return call(base, key, "DELETE", `/v1/indexes/${c.name}`);
    case "upsert":
      return call(base, key, "POST", `/v1/indexes/${c.name}/vectors/upsert`, {
        vectors: [{ id: `v${c.id}`, values: [1, c.id + 1, 2, 3] }],
      });
    case "query":
      return call(base, key, "POST", `/v1/indexes/${c.name}/query`, { vector: [1, 2, 3, 4], topK: 3 });
    case "fetch":
      return call(base, key, "GET", `/v1/indexes/${c.name}/vectors/fetch?ids=v${c.id}`);
  }
}

/** Index names with a complete folder (index.json) under every tenant; fails on any leftover dot-folder. */
function onDisk(dataDir: string): string[] {
  const out: string[] = [];
  const tenants = join(dataDir, "tenants");
  for (const t of existsSync(tenants) ? readdirSync(tenants) : []) {
    const root = join(tenants, t, "indexes");
    if (!existsSync(root)) continue;
    for (const n of readdirSync(root)) {
      expect(n.startsWith("."), `leftover ${n}`).toBe(false);
      if (existsSync(join(root, n, "index.json"))) out.push(n);
    }
  }
  return out.sort();
}

describe("index lifecycle races", () => {
  let srv: ServerProcess | undefined;
  afterAll(async () => {
    await srv?.dispose();
  });

  it("create/delete/upsert/query/fetch on a few names from concurrent clients: only 2xx/404/409, and a restart lists what is on disk", async () => {
    srv = await startServerProcess();
    const key = srv.adminKey!;
    const dataDir = srv.dataDir;
    const statuses = new Map<number, number>();
    await fc.assert(
      fc.asyncProperty(fc.array(fc.array(cmd, { minLength: 5, maxLength: 25 }), { minLength: 4, maxLength: 6 }), async (clients) => {
        const bad: string[] = [];
        await Promise.all(
          clients.map(async (cmds) => {
            for (const c of cmds) {
              const r = await request(srv!.url, key, c);
              statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
              if (!(r.status < 300 || r.status === 404 || r.status === 409))
                bad.push(`${JSON.stringify(c)} -> ${r.status} ${r.raw.toString()}`);
            }
          }),
        );
        expect(bad).toEqual([]);
      }),
      { seed: 20_2, numRuns: 12 },
    );
    // every kind of answer happened, so the interleavings really raced
    expect([...statuses.keys()].sort()).toEqual(expect.arrayContaining([200, 201, 202, 404, 409]));

    const before = (await call(srv.url, key, "GET", "/v1/indexes")).body.indexes.map((i: { name: string }) => i.name).sort();
    expect(before).toEqual(onDisk(dataDir));
    expect(await srv.stop()).toBe(0);
    // what a crash mid-create or mid-delete leaves behind: removed, never listed
    const root = join(dataDir, "tenants", readdirSync(join(dataDir, "tenants"))[0]!, "indexes");
    for (const d of [".creating-c-0a1b2c", ".deleted-a-3d4e5f"]) {
      mkdirSync(join(root, d, "wal"), { recursive: true });
      writeFileSync(join(root, d, "index.json"), JSON.stringify({ name: d, dimension: DIM }));
    }

    srv = await startServerProcess({ dataDir });
    const after = (await call(srv.url, key, "GET", "/v1/indexes")).body.indexes.map((i: { name: string }) => i.name).sort();
    expect(after).toEqual(before);
    expect(after).toEqual(onDisk(dataDir));
    for (const n of after) {
      const stats = await call(srv.url, key, "GET", `/v1/indexes/${n}/describe_index_stats`);
      expect(stats.status).toBe(200);
      expect(stats.body.dimension).toBe(DIM);
    }
    await srv.stop();
  }, 120_000);

  it("deletes an index while its approximate index is being built in the background, then recreates it empty", async () => {
    srv = await startServerProcess();
    const key = srv.adminKey!;
    expect((await call(srv.url, key, "POST", "/v1/indexes", { name: "big", dimension: BIG_DIM })).status).toBe(201);
    // 50k live rows start the background build (ANN_MIN_ROWS).
    for (let b = 0; b < 6; b++) {
      const vectors = Array.from({ length: 10_000 }, (_, i) => {
        const x = b * 10_000 + i;
        return { id: `v${x}`, values: Array.from({ length: BIG_DIM }, (_, j) => Math.sin(x * (j + 1) * 0.01) + ((x + j) % 7) / 7) };
      });
      expect((await call(srv.url, key, "POST", "/v1/indexes/big/vectors/upsert", { vectors })).status).toBe(200);
    }
    // wait until the build's new partition generation exists on disk: the build is running
    const parts = join(srv.dataDir, "tenants", readdirSync(join(srv.dataDir, "tenants"))[0]!, "indexes", "big", "parts");
    await until(
      "the background index build",
      async () => readdirSync(parts).length,
      (n) => n >= 2,
      30_000,
    );
    // queries keep running while the index is deleted under them
    const queries = Array.from({ length: 20 }, () =>
      call(srv!.url, key, "POST", "/v1/indexes/big/query", { vector: Array.from({ length: BIG_DIM }, (_, j) => j + 1), topK: 5 }),
    );
    const del = await call(srv.url, key, "DELETE", "/v1/indexes/big");
    expect(del.status, del.raw.toString()).toBe(202);
    for (const q of await Promise.all(queries)) expect([200, 404], q.raw.toString()).toContain(q.status);
    expect((await call(srv.url, key, "GET", "/v1/indexes/big/describe_index_stats")).status).toBe(404);
    expect(onDisk(srv.dataDir)).toEqual([]);

    expect((await call(srv.url, key, "POST", "/v1/indexes", { name: "big", dimension: BIG_DIM })).status).toBe(201);
    const stats = await call(srv.url, key, "GET", "/v1/indexes/big/describe_index_stats");
    expect(stats.body.totalVectorCount).toBe(0);
    expect(await srv.stop()).toBe(0);
  }, 120_000);
});
