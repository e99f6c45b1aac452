/**
 * @module store-damage.test — one damaged byte in a store other than the collections (wallet ledger,
 * commons log, keys.json, directory.json): the real `svc serve` starts, `/v1/health` names the damage,
 * the other surfaces serve, and after `svc repair` only the damaged frame or record is lost.
 */
import { execFile } from "node:child_process";
import { readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { decode } from "@msgpack/msgpack";
import { afterEach, describe, expect, it } from "vitest";
import { FRAME_OVERHEAD, HEADER_SIZE } from "../../src/store/segment.js";
import { MAIN, startServerProcess, type ServerProcess } from "../e2e/server-process.js";

const run = promisify(execFile);
const servers: ServerProcess[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await s.dispose();
});

async function start(dataDir?: string): Promise<ServerProcess> {
  const s = await startServerProcess({ dataDir });
  servers.push(s);
  return s;
}

async function call(
  s: ServerProcess,
  path: string,
  opts: { key?: string | null; method?: string; body?: unknown } = {},
): Promise<{ status: number; body: any }> {
  const res = await fetch(`${s.url}${path}`, {
    method: opts.method ?? (opts.body === undefined ? "GET" : "POST"),
    headers: { ...(opts.key ? { "api-key": opts.key } : {}), ...(opts.body === undefined ? {} : { "content-type": "application/json" }) },
    body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
  });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // HTML or metrics text
  }
  return { status: res.status, body };
}

async function repair(dataDir: string): Promise<{ code: number; out: string }> {
  try {
    const { stdout } = await run(process.execPath, [MAIN, "repair", dataDir]);
    return { code: 0, out: stdout };
  } catch (e) {
    const err = e as { code: number; stdout: string };
    return { code: err.code, out: err.stdout };
  }
}

/** Frames of one segment file: offset, size, type and decoded body. */
async function frames(file: string): Promise<Array<{ offset: number; size: number; type: number; body: any }>> {
  const buf = await readFile(file);
  const out = [];
  for (let at = HEADER_SIZE; at + FRAME_OVERHEAD < buf.length;) {
    const size = FRAME_OVERHEAD + buf.readUInt32LE(at + 4);
    out.push({ offset: at, size, type: buf[at + 12]!, body: decode(buf.subarray(at + FRAME_OVERHEAD + 1, at + size)) });
    at += size;
  }
  return out;
}

async function flipByte(file: string, at: number): Promise<void> {
  const buf = await readFile(file);
  buf[at] = buf[at]! ^ 0x01;
  await writeFile(file, buf);
}

async function killHard(s: ServerProcess): Promise<void> {
  const exited = new Promise((r) => s.child.once("exit", r));
  s.child.kill("SIGKILL");
  await exited;
}

const health = async (s: ServerProcess) =>
  (await call(s, "/v1/health")).body as {
    status: string;
    damage?: Array<{ store: string; kind: string; file: string; dropped: number; offline: boolean }>;
  };

describe("a damaged store is named and the rest serves", () => {
  it("wallet ledger: a flipped byte in one charge takes that tenant's wallet offline; repair loses only that charge", async () => {
    const s1 = await start();
    const mk = async () => (await call(s1, "/v1/admin/keys", { key: s1.adminKey, body: {} })).body as { key: string; tenant: string };
    const a = await mk();
    const b = await mk();
    for (let i = 0; i < 3; i++) expect((await call(s1, "/v1/embed", { key: a.key, body: { texts: [`a ${i}`] } })).status).toBe(200);
    expect((await call(s1, "/v1/embed", { key: b.key, body: { texts: ["b"] } })).status).toBe(200);
    const before = (await call(s1, "/v1/wallet", { key: a.key })).body as { recent: unknown[] };
    expect(before.recent).toHaveLength(4); // signup + 3 charges
    await killHard(s1); // no closing checkpoint: the frames stay in the log
    const seg = join(s1.dataDir, "wallet", "wal", "000001.seg");
    const charges = (await frames(seg)).filter((f) => f.type === 2 && f.body.t === a.tenant);
    expect(charges).toHaveLength(3);
    await flipByte(seg, charges[1]!.offset + charges[1]!.size - 1); // inside the body: the CRC fails

    const s2 = await start(s1.dataDir);
    const h = await health(s2);
    expect(h.status).toBe("degraded");
    expect(h.damage).toEqual([
      expect.objectContaining({ store: "wallet-ledger", kind: "bad-frame", file: "wallet/wal/000001.seg", dropped: 1, offline: true }),
    ]);
    expect(s2.output()).toContain("storage damage in wallet-ledger");
    const offline = await call(s2, "/v1/embed", { key: a.key, body: { texts: ["x"] } });
    expect(offline.status).toBe(503);
    expect(offline.body.error).toMatchObject({ code: "E_STORE_OFFLINE", field: "wallet" });
    expect((await call(s2, "/v1/wallet", { key: a.key })).status).toBe(503);
    expect((await call(s2, "/v1/embed", { key: b.key, body: { texts: ["b2"] } })).status).toBe(200);
    expect((await call(s2, "/v1/board")).status).toBe(200);
    expect(await call(s2, "/metrics").then((r) => r.body as string)).toMatch(/svc_store_damage\{[^}]*store="wallet-ledger"/);
    await s2.stop();

    const r = await repair(s1.dataDir);
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/000001\.seg: padded \d+ bytes at offset \d+/);
    const s3 = await start(s1.dataDir);
    expect((await health(s3)).status).toBe("ok");
    const after = (await call(s3, "/v1/wallet", { key: a.key })).body as { recent: Array<{ op: string }> };
    expect(after.recent).toHaveLength(3); // only the damaged charge is gone
    expect((await call(s3, "/v1/embed", { key: a.key, body: { texts: ["again"] } })).status).toBe(200);
  });

  it("commons log: a damaged post is skipped and named, the board serves; repair loses only that post", async () => {
    const s1 = await start();
    let head = "";
    for (const m of ["first note about caching", "second note about indexes", "third note about backups"]) {
      // the third replies to the second: losing a thread's first post must not break its replies
      const r = await call(s1, "/v1/board", { body: { agent: "tester", message: m, ...(head ? { reply_to: head } : {}) } });
      expect(r.status).toBe(200);
      if (m.startsWith("second")) head = (r.body as { id: string }).id;
    }
    await s1.stop();
    const seg = join(s1.dataDir, "commons", "wal", "000001.seg");
    const posts = (await frames(seg)).filter((f) => f.type === 2);
    expect(posts).toHaveLength(3);
    await flipByte(seg, posts[1]!.offset + posts[1]!.size - 2);

    const s2 = await start(s1.dataDir);
    const h = await health(s2);
    expect(h.damage).toEqual([
      expect.objectContaining({ store: "commons-log", kind: "bad-frame", file: "commons/wal/000001.seg", dropped: 1, offline: false }),
    ]);
    const board = JSON.stringify((await call(s2, "/v1/board")).body);
    expect(board).toContain("first note about caching");
    expect(board).toContain("third note about backups");
    expect(board).not.toContain("second note about indexes");
    expect((await call(s2, "/v1/board", { body: { agent: "tester", message: "fourth note after the damage" } })).status).toBe(200);
    await s2.stop();

    const r = await repair(s1.dataDir);
    expect(r.out).toMatch(/commons[/]wal: .*\n.*padded/);
    const s3 = await start(s1.dataDir);
    expect((await health(s3)).status).toBe("ok");
    const after = JSON.stringify((await call(s3, "/v1/board")).body);
    for (const m of ["first note about caching", "third note about backups", "fourth note after the damage"]) expect(after).toContain(m);
  });

  it("keys.json: a garbled record fails closed (authenticated routes 503, public routes serve); repair drops only that record", async () => {
    const s1 = await start();
    const t = (await call(s1, "/v1/admin/keys", { key: s1.adminKey, body: { name: "tenant key" } })).body as { key: string };
    await s1.stop();
    const path = join(s1.dataDir, "keys.json");
    const text = await readFile(path, "utf8");
    const second = text.lastIndexOf('"revokedAt": null');
    await writeFile(path, `${text.slice(0, second)}"revokedAt": nul#${text.slice(second + '"revokedAt": null'.length)}`);

    const s2 = await start(s1.dataDir);
    expect(s2.output() + s2.errorOutput()).not.toMatch(/first admin key/); // the damaged file is never overwritten
    expect((await health(s2)).damage).toEqual([
      expect.objectContaining({ store: "keys", kind: "unreadable", file: "keys.json", offline: true }),
    ]);
    const refused = await call(s2, "/v1/admin/tenants", { key: s1.adminKey });
    expect(refused.status).toBe(503);
    expect(refused.body.error).toMatchObject({ code: "E_STORE_OFFLINE", field: "api-key" });
    expect((await call(s2, "/v1/embed", { key: t.key, body: { texts: ["x"] } })).status).toBe(503);
    expect((await call(s2, "/v1/board")).status).toBe(200);
    expect((await call(s2, "/api/businesses")).status).toBe(200);
    expect(await readFile(path, "utf8")).toContain("nul#");
    await s2.stop();

    const r = await repair(s1.dataDir);
    expect(r.out).toMatch(/keys\.json \(keys\): rewritten with 1 readable records, 1 dropped/);
    expect((await readdir(s1.dataDir)).some((f) => f.startsWith("keys.json.damaged-"))).toBe(true);
    const s3 = await start(s1.dataDir);
    expect((await health(s3)).status).toBe("ok");
    expect((await call(s3, "/v1/admin/tenants", { key: s1.adminKey })).status).toBe(200);
    expect((await call(s3, "/v1/embed", { key: t.key, body: { texts: ["x"] } })).status).toBe(401);
  });

  it("directory.json: a garbled business takes only the directory offline; repair drops only that business", async () => {
    const s1 = await start();
    const total = ((await call(s1, "/api/businesses")).body as { total: number }).total;
    expect(total).toBeGreaterThan(2);
    await s1.stop(); // the closing checkpoint writes directory.json
    const path = join(s1.dataDir, "directory", "directory.json");
    const text = await readFile(path, "utf8");
    const at = text.indexOf('"listed":', text.indexOf('"listed":') + 1); // the second business
    await writeFile(path, `${text.slice(0, at)}"listed":#${text.slice(at + '"listed":'.length + 1)}`);

    const s2 = await start(s1.dataDir);
    expect((await health(s2)).damage).toEqual([
      expect.objectContaining({ store: "directory", kind: "unreadable", file: "directory/directory.json", offline: true }),
    ]);
    const off = await call(s2, "/api/businesses");
    expect(off.status).toBe(503);
    expect(off.body.error).toMatchObject({ code: "E_STORE_OFFLINE", field: "directory" });
    expect((await call(s2, "/v1/board")).status).toBe(200);
    expect((await call(s2, "/v1/admin/tenants", { key: s1.adminKey })).status).toBe(200);
    await s2.stop();
    expect(await readFile(path, "utf8")).toContain('"listed":#'); // not overwritten by the closing server

    const r = await repair(s1.dataDir);
    expect(r.out).toMatch(/directory\/directory\.json \(directory\): rewritten with \d+ readable records, 1 dropped/);
    const s3 = await start(s1.dataDir);
    expect((await health(s3)).status).toBe("ok");
    expect(((await call(s3, "/api/businesses")).body as { total: number }).total).toBe(total - 1);
  });

  it("wallets.json: an unreadable ledger checkpoint takes every wallet offline, admin routes serve; repair refuses to guess a balance", async () => {
    const s1 = await start();
    const t = (await call(s1, "/v1/admin/keys", { key: s1.adminKey, body: {} })).body as { key: string };
    expect((await call(s1, "/v1/embed", { key: t.key, body: { texts: ["x"] } })).status).toBe(200);
    await s1.stop();
    const path = join(s1.dataDir, "wallet", "wallets.json");
    const text = await readFile(path, "utf8");
    await writeFile(path, text.replace('"balance":', '"bal#nce":'));

    const s2 = await start(s1.dataDir);
    expect((await health(s2)).damage).toEqual([
      expect.objectContaining({ store: "wallet-ledger", kind: "unreadable", file: "wallet/wallets.json", offline: true }),
    ]);
    expect((await call(s2, "/v1/embed", { key: t.key, body: { texts: ["x"] } })).body.error.code).toBe("E_STORE_OFFLINE");
    expect((await call(s2, "/v1/admin/tenants", { key: s1.adminKey })).status).toBe(200);
    await s2.stop();
    expect(await readFile(path, "utf8")).toContain('"bal#nce":');

    const r = await repair(s1.dataDir);
    expect(r.code).toBe(1);
    expect(r.out).toContain("wallet/wallets.json (wallet-ledger): NOT repaired");
  });

  it("knowledge graph: a damaged fact frame is skipped and named, other graphs serve; repair loses only that frame", async () => {
    const s1 = await start();
    const add = (name: string, subject: string) =>
      call(s1, `/v1/hd/kg/${name}/facts`, { key: s1.adminKey, body: { facts: [{ subject, relation: "knows", object: "carol" }] } });
    for (const who of ["alice", "bob", "dave"]) expect((await add("g1", who)).status).toBe(200);
    expect((await add("g2", "erin")).status).toBe(200);
    await killHard(s1); // no closing snapshot: the frames stay in the log
    const seg = join(s1.dataDir, "tenants", "admin", "hd", "kg", "g1", "wal", "000001.seg");
    const adds = await frames(seg);
    expect(adds).toHaveLength(3);
    await flipByte(seg, adds[1]!.offset + adds[1]!.size - 1);

    const s2 = await start(s1.dataDir);
    expect((await health(s2)).status).toBe("ok"); // graphs open on first use: the damage is found then
    expect(((await call(s2, "/v1/hd/kg/g1/stats", { key: s1.adminKey })).body as { facts: number }).facts).toBe(2);
    expect((await health(s2)).damage).toEqual([
      expect.objectContaining({
        store: "kg:admin/g1",
        kind: "bad-frame",
        file: "tenants/admin/hd/kg/g1/wal/000001.seg",
        dropped: 1,
        offline: false,
      }),
    ]);
    expect(((await call(s2, "/v1/hd/kg/g2/stats", { key: s1.adminKey })).body as { facts: number }).facts).toBe(1);
    await s2.stop();
    expect(await frames(seg)).toHaveLength(3); // the damaged segment was kept: no closing snapshot dropped it

    expect((await repair(s1.dataDir)).out).toMatch(/g1[/]wal: .*\n.*padded/);
    const s3 = await start(s1.dataDir);
    expect((await health(s3)).status).toBe("ok");
    expect(((await call(s3, "/v1/hd/kg/g1/stats", { key: s1.adminKey })).body as { facts: number }).facts).toBe(2);
  });

  it("causal model: a flipped byte takes only that model offline; repair moves it aside", async () => {
    const s1 = await start();
    const worlds = {
      n_vars: 2,
      vocab_per_var: [2, 2],
      worlds: [
        [0, 0],
        [1, 1],
        [1, 0],
        [0, 1],
      ],
    };
    for (const m of ["m1", "m2"])
      expect((await call(s1, `/v1/hd/causal/${m}/worlds`, { key: s1.adminKey, body: worlds })).status).toBe(200);
    await s1.stop();
    const file = join(s1.dataDir, "tenants", "admin", "hd", "causal", "m1", "model.hdscm");
    await flipByte(file, 30);

    const s2 = await start(s1.dataDir);
    const q = { query_type: "observation", condition_var: 0, condition_value: 1, query_var: 1, query_value: 1 };
    const off = await call(s2, "/v1/hd/causal/m1/query", { key: s1.adminKey, body: q });
    expect(off.status).toBe(503);
    expect(off.body.error).toMatchObject({ code: "E_STORE_OFFLINE", field: "name" });
    expect((await health(s2)).damage).toEqual([
      expect.objectContaining({
        store: "causal:admin/m1",
        kind: "unreadable",
        file: "tenants/admin/hd/causal/m1/model.hdscm",
        offline: true,
      }),
    ]);
    expect((await call(s2, "/v1/hd/causal/m2/query", { key: s1.adminKey, body: q })).status).toBe(200);
    expect(
      ((await call(s2, "/v1/hd/causal", { key: s1.adminKey })).body as { models: Array<{ name: string }> }).models.map((m) => m.name),
    ).toEqual(["m2"]);
    await s2.stop();

    expect((await repair(s1.dataDir)).out).toMatch(/model\.hdscm \(causal:admin\/m1\): unreadable .*moved aside/);
    const s3 = await start(s1.dataDir);
    expect((await health(s3)).status).toBe("ok");
    expect((await call(s3, "/v1/hd/causal/m1/query", { key: s1.adminKey, body: q })).status).toBe(404);
    expect((await call(s3, "/v1/hd/causal/m2/query", { key: s1.adminKey, body: q })).status).toBe(200);
  });
});
