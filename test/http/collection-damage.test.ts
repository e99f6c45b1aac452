/**
 * Storage damage in a vector index, against the built `svc serve` as a child process (real HTTP,
 * real files): a damaged WAL frame no longer takes the index offline, a torn tail is reported
 * with what it dropped (health, damage entry, log line), and `svc repair` pads exactly the damaged frame.
 */
import { readFileSync, statSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { startServerProcess, type ServerProcess } from "../e2e/server-process.js";
import { call, cli } from "../e2e/client.js";

const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

const vec = (i: number) => Array.from({ length: 8 }, (_, j) => Math.round(Math.sin(i * 8 + j + 1) * 1000) / 1000);
const batch = (b: number, n: number) =>
  Array.from({ length: n }, (_, i) => ({ id: `b${b}-${i}`, values: vec(b * 100 + i), metadata: { b } }));

async function start(dataDir: string): Promise<ServerProcess> {
  return startServerProcess({ dataDir, args: ["--no-auth"] });
}

async function kill(srv: ServerProcess): Promise<void> {
  const exited = new Promise((r) => srv.child.once("exit", r));
  srv.child.kill("SIGKILL");
  await exited;
}

function flip(file: string, at: number): void {
  const b = readFileSync(file);
  b[at] = b[at]! ^ 0xff;
  writeFileSync(file, b);
}

async function upsert(url: string, vectors: unknown[]): Promise<void> {
  const r = await call(url, null, "POST", "/v1/indexes/idx/vectors/upsert", { vectors });
  expect(r.status, r.raw.toString()).toBe(200);
}

async function ids(url: string, want: string[]): Promise<string[]> {
  const r = await call(url, null, "GET", `/v1/indexes/idx/vectors/fetch?${want.map((i) => `ids=${i}`).join("&")}`);
  expect(r.status, r.raw.toString()).toBe(200);
  return Object.keys(r.body.vectors).sort();
}

async function setup(): Promise<{ data: string; seg: string; srv: ServerProcess }> {
  const data = await mkdtemp(join(tmpdir(), "svc-coll-damage-"));
  dirs.push(data);
  const srv = await start(data);
  const r = await call(srv.url, null, "POST", "/v1/indexes", { name: "idx", dimension: 8 });
  expect(r.status, r.raw.toString()).toBe(201);
  return { data, seg: join(data, "tenants/local/indexes/idx/wal/000001.seg"), srv };
}

const health = async (url: string) => (await call(url, null, "GET", "/v1/health")).body;

describe("a damaged log in a vector index (svc serve process)", () => {
  it("a damaged last frame (10 acknowledged vectors) is cut as a torn tail and reported with bytes and frames, in health and in the log", async () => {
    const { data, seg, srv } = await setup();
    await upsert(srv.url, batch(0, 5));
    const end0 = statSync(seg).size;
    await upsert(srv.url, batch(1, 10));
    const end1 = statSync(seg).size;
    await kill(srv); // a crash: nothing checkpointed since the create
    flip(seg, end0 + 30);

    const again = await start(data);
    try {
      expect(await ids(again.url, ["b0-0", "b0-4", "b1-0", "b1-9"])).toEqual(["b0-0", "b0-4"]);
      const h = await health(again.url);
      expect(h.status).toBe("degraded");
      expect(h.damage).toEqual([
        expect.objectContaining({
          store: "collection:local/idx",
          file: "tenants/local/indexes/idx/wal/000001.seg",
          kind: "torn-tail",
          dropped: 1,
          offline: false,
          detail: expect.stringContaining(`cut ${end1 - end0} bytes (1 frame(s)) off the log at offset ${end0}`),
        }),
      ]);
      const metrics = (await call(again.url, null, "GET", "/metrics")).raw.toString();
      expect(metrics).toMatch(/svc_store_damage\{[^}]*store="collection:local\/idx"[^}]*\} 1/);
      expect(again.output()).toContain("storage damage in collection:local/idx");
    } finally {
      await again.stop();
    }
  });

  it("a damaged frame the checkpoint already holds is skipped: every vector serves, the damage is named, nothing dropped", async () => {
    const { data, seg, srv } = await setup();
    await upsert(srv.url, batch(0, 5));
    const end0 = statSync(seg).size;
    await upsert(srv.url, batch(1, 5));
    expect(await srv.stop()).toBe(0); // clean stop: a checkpoint at the log's end; the active segment keeps its frames
    flip(seg, end0 - 20);

    const again = await start(data);
    try {
      expect(await ids(again.url, ["b0-0", "b0-4", "b1-0", "b1-4"])).toEqual(["b0-0", "b0-4", "b1-0", "b1-4"]);
      const h = await health(again.url);
      expect(h.damage).toEqual([
        expect.objectContaining({
          store: "collection:local/idx",
          kind: "bad-frame",
          dropped: 0,
          offline: false,
          detail: expect.stringContaining("the checkpoint already holds it"),
        }),
      ]);
    } finally {
      await again.stop();
    }
  });

  it("a damaged frame above the checkpoint takes only its own vectors; `svc repair` pads exactly that frame", async () => {
    const { data, seg, srv } = await setup();
    await upsert(srv.url, batch(0, 3));
    expect(await srv.stop()).toBe(0);
    const s2 = await start(data);
    const start1 = statSync(seg).size;
    await upsert(s2.url, batch(1, 4));
    const end1 = statSync(seg).size;
    await upsert(s2.url, batch(2, 4));
    await kill(s2);
    flip(seg, start1 + 40);

    const s3 = await start(data);
    try {
      expect(await ids(s3.url, ["b0-0", "b1-0", "b1-3", "b2-0", "b2-3"])).toEqual(["b0-0", "b2-0", "b2-3"]);
      const q = await call(s3.url, null, "POST", "/v1/indexes/idx/query", { vector: vec(200), topK: 3 });
      expect(q.status).toBe(200);
      expect(q.body.matches[0].id).toBe("b2-0");
      expect((await health(s3.url)).damage).toEqual([
        expect.objectContaining({
          kind: "bad-frame",
          dropped: 1,
          offline: false,
          detail: expect.stringContaining(`${end1 - start1} damaged bytes at offset ${start1}`),
        }),
      ]);
    } finally {
      await kill(s3); // no checkpoint over the damage: repair finds it where it was
    }
    const r = await cli(["repair", join(data, "tenants/local/indexes/idx")]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(`padded ${end1 - start1} bytes at offset ${start1}`);
    const s4 = await start(data);
    try {
      expect(await ids(s4.url, ["b0-0", "b1-0", "b2-3"])).toEqual(["b0-0", "b2-3"]);
      expect((await health(s4.url)).status).toBe("ok");
    } finally {
      await s4.stop();
    }
  });

  it("a flipped byte in values.f32 is found by `svc repair --check`, never served: the server rebuilds the rows from the log and rewrites the files clean", async () => {
    const { data, srv } = await setup();
    await upsert(srv.url, batch(0, 5));
    expect(await srv.stop()).toBe(0);
    const coll = join(data, "tenants/local/indexes/idx");
    const part = JSON.parse(readFileSync(join(coll, "checkpoint.json"), "utf8")).partitions[0].dir;
    const values = join(coll, "parts", part, "values.f32");
    flip(values, 2 * 8 * 4 + 1); // row 2 (b0-2)

    const check = await cli(["repair", "--check", data]);
    expect(check.code, check.stderr).toBe(1);
    expect(check.stdout).toContain(`namespace '' parts/${part}/values.f32: 1 damaged block(s), rows 0..4`);

    const again = await start(data);
    try {
      const r = await call(again.url, null, "GET", "/v1/indexes/idx/vectors/fetch?ids=b0-2");
      expect(r.body.vectors["b0-2"].values).toEqual(Array.from(Float32Array.from(vec(2))));
      expect((await health(again.url)).damage).toEqual([
        expect.objectContaining({
          store: "collection:local/idx",
          file: `tenants/local/indexes/idx/parts/${part}/values.f32`,
          kind: "bad-checksum",
          dropped: 0,
          detail: expect.stringContaining("5 rebuilt from the log, 0 dropped"),
        }),
      ]);
    } finally {
      await again.stop();
    }
    const after = await cli(["repair", "--check", data]);
    expect(after.code, after.stdout).toBe(0);
    expect(after.stdout).toContain("no damage found");
  });
});
