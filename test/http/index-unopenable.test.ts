/**
 * Vector indexes whose files keep them from opening (issue 29 item 9), against the built `svc serve`
 * and `svc repair` (real HTTP, real files): values.f32 cut by 12,305 bytes, checkpoint.json cut in
 * half, tombstones-<seq>.roar deleted. Each is named in /v1/health (degraded, offline damage),
 * answers 503 E_STORE_OFFLINE while the other index serves, is found by `svc repair --check`, and
 * `svc repair` rebuilds all three from their logs (every vector back, deletes kept) in one run.
 */
import { readdirSync, readFileSync, rmSync, statSync, truncateSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { call, cli } from "../e2e/client.js";
import { startServerProcess, type ServerProcess } from "../e2e/server-process.js";

const DIM = 64; // 256 bytes a row in values.f32: 400 rows = 102,400 bytes
const N = 400;
const vec = (i: number) => Array.from({ length: DIM }, (_, j) => Math.round(Math.sin(i * DIM + j + 1) * 1000) / 1000 + 0); // + 0: no -0 (JSON has none)
const NAMES = ["cut-values", "cut-checkpoint", "no-tombstones", "healthy"];
const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

const start = (dataDir: string): Promise<ServerProcess> => startServerProcess({ dataDir, args: ["--no-auth"] });

async function fetchIds(url: string, name: string, ids: string[]): Promise<{ status: number; found: string[]; body: any }> {
  const found: string[] = [];
  for (let i = 0; i < ids.length; i += 100) {
    const r = await call(
      url,
      null,
      "GET",
      `/v1/indexes/${name}/vectors/fetch?${ids
        .slice(i, i + 100)
        .map((x) => `ids=${x}`)
        .join("&")}`,
    );
    if (r.status !== 200) return { status: r.status, found, body: r.body };
    for (const [id, v] of Object.entries(r.body.vectors as Record<string, { values: number[]; metadata: { i: number } }>)) {
      expect(v.values).toEqual(Array.from(Float32Array.from(vec(v.metadata.i))));
      found.push(id);
    }
  }
  return { status: 200, found: found.sort(), body: null };
}

const ids = Array.from({ length: N }, (_, i) => `v${i}`);
const live = ids.filter((_, i) => i % 10 !== 3).sort(); // every 10th (3, 13, ...) deleted

describe("an index that cannot open (svc serve process + svc repair)", () => {
  it("is named in health, answers 503 E_STORE_OFFLINE alone, and svc repair rebuilds each from the log, all in one run", async () => {
    const data = await mkdtemp(join(tmpdir(), "svc-unopenable-"));
    dirs.push(data);
    const srv = await start(data);
    for (const name of NAMES) {
      expect((await call(srv.url, null, "POST", "/v1/indexes", { name, dimension: DIM })).status).toBe(201);
      for (let b = 0; b < N; b += 100) {
        const r = await call(srv.url, null, "POST", `/v1/indexes/${name}/vectors/upsert`, {
          vectors: ids.slice(b, b + 100).map((id, k) => ({ id, values: vec(b + k), metadata: { i: b + k } })),
        });
        expect(r.status, r.raw.toString()).toBe(200);
      }
      const d = await call(srv.url, null, "POST", `/v1/indexes/${name}/vectors/delete`, { ids: ids.filter((_, i) => i % 10 === 3) });
      expect(d.status, d.raw.toString()).toBe(200);
    }
    expect(await srv.stop()).toBe(0); // a clean stop: a checkpoint; each log keeps its one segment

    const coll = (name: string) => join(data, "tenants/local/indexes", name);
    const part = (name: string) =>
      join(coll(name), "parts", JSON.parse(readFileSync(join(coll(name), "checkpoint.json"), "utf8")).partitions[0].dir);
    const values = join(part("cut-values"), "values.f32");
    expect(statSync(values).size).toBe(N * DIM * 4);
    truncateSync(values, N * DIM * 4 - 12_305);
    const cpPath = join(coll("cut-checkpoint"), "checkpoint.json");
    const cp = readFileSync(cpPath);
    writeFileSync(cpPath, cp.subarray(0, Math.floor(cp.length / 2)));
    const tomb = readdirSync(part("no-tombstones")).find((f) => f.startsWith("tombstones-"))!;
    rmSync(join(part("no-tombstones"), tomb));

    const s2 = await start(data);
    try {
      for (const name of NAMES.slice(0, 3)) {
        const r = await fetchIds(s2.url, name, ["v0"]);
        expect(r.status, name).toBe(503);
        expect(r.body.error.code).toBe("E_STORE_OFFLINE");
        expect((await call(s2.url, null, "POST", `/v1/indexes/${name}/query`, { vector: vec(0), topK: 1 })).status).toBe(503);
      }
      expect((await fetchIds(s2.url, "healthy", ids)).found).toEqual(live);
      const h = (await call(s2.url, null, "GET", "/v1/health")).body;
      expect(h.status).toBe("degraded");
      for (const name of NAMES.slice(0, 3))
        expect(h.damage, name).toContainEqual(
          expect.objectContaining({ store: `collection:local/${name}`, kind: "unopenable", offline: true }),
        );
      expect(h.damage.filter((d: { store: string }) => d.store === "collection:local/healthy")).toEqual([]);
      expect(h.damage.find((d: { store: string }) => d.store === "collection:local/cut-values").file).toBe(
        `tenants/local/indexes/cut-values/parts/${part("cut-values").split("/").at(-1)}/values.f32`,
      );
      expect(h.damage.find((d: { store: string }) => d.store === "collection:local/cut-checkpoint").detail).toMatch(/JSON/);
      expect(h.damage.find((d: { store: string }) => d.store === "collection:local/no-tombstones").file).toMatch(/tombstones-\d+\.roar$/);
      const ready = (await call(s2.url, null, "GET", "/v1/ready")).body;
      expect(ready.failed.sort()).toEqual(
        NAMES.slice(0, 3)
          .map((n) => `index:local/${n}`)
          .sort(),
      );
    } finally {
      expect(await s2.stop()).toBe(0);
    }

    const check = await cli(["repair", "--check", data]);
    expect(check.code, check.stdout + check.stderr).toBe(1);
    expect(check.stdout).toMatch(/values\.f32: holds \d+ bytes, the checkpoint expects 102400/);
    expect(check.stdout).toMatch(/checkpoint\.json: unreadable: .*JSON/);
    expect(check.stdout).toMatch(new RegExp(`${tomb.replace(".", "\\.")}: missing`));

    const repair = await cli(["repair", data]);
    expect(repair.code, repair.stdout + repair.stderr).toBe(0);
    expect(repair.stdout).toMatch(/values\.f32: \d+ row\(s\) in blocks that failed their checksum .*: \d+ rebuilt from the log, 0 dropped/);
    expect(repair.stdout).toContain("rebuilt from the log, which holds every write since the collection was created");
    expect(repair.stdout).toMatch(
      /the tombstones file is missing or unreadable: 400 row\(s\) of unknown state.*: 360 rebuilt from the log, 0 dropped, 40 already dead/,
    );
    const after = await cli(["repair", "--check", data]);
    expect(after.code, after.stdout).toBe(0);

    const s3 = await start(data);
    try {
      for (const name of NAMES) expect((await fetchIds(s3.url, name, ids)).found, name).toEqual(live);
      const q = await call(s3.url, null, "POST", "/v1/indexes/cut-values/query", { vector: vec(399), topK: 1 });
      expect(q.body.matches[0].id).toBe("v399");
      const h = (await call(s3.url, null, "GET", "/v1/health")).body;
      expect(h.damage ?? []).toEqual([]);
      expect(h.status).toBe("ok");
    } finally {
      await s3.stop();
    }
  }, 300_000);
});
