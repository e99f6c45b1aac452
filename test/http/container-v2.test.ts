/**
 * The schema 2 .svc container over the built `svc serve` process: a tenant's knowledge graph and
 * causal model travel with a namespace's records (GET export?schema=2), and an import into a fresh
 * tenant answers the same graph query and the same probability, with the records merged by id; a
 * damaged section refuses the whole import.
 */
import JSZip from "jszip";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startServerProcess, type ServerProcess } from "../e2e/server-process.js";
import { call, newTenantKey, type Reply } from "../e2e/client.js";

const form = (data: Buffer) => {
  const f = new FormData();
  f.append("file", new Blob([new Uint8Array(data)], { type: "application/x-svc" }), "upload.svc");
  return f;
};

const FACTS = [
  { subject: "ana", relation: "works_at", object: "acme" },
  { subject: "bo", relation: "works_at", object: "globex" },
  { subject: "ana", relation: "lives_in", object: "lisbon" },
];
// Z -> X -> Y with Z -> Y over binary variables, small and exact
const WORLDS = {
  n_vars: 3,
  vocab_per_var: [2, 2, 2],
  worlds: [
    [0, 0, 0],
    [0, 1, 1],
    [1, 1, 1],
    [1, 0, 1],
    [0, 0, 1],
    [1, 1, 0],
  ],
  seed: 1,
  parents: [[], [0], [0, 1]],
};
const Q = (query_type: string) => ({ query_type, condition_var: 1, condition_value: 1, query_var: 2, query_value: 1 });

describe("schema 2 .svc containers over HTTP (svc serve process)", () => {
  let srv: ServerProcess;
  let src: string;
  let dst: string;

  beforeAll(async () => {
    srv = await startServerProcess();
    [src, dst] = [(await newTenantKey(srv)).key, (await newTenantKey(srv)).key];
    const ok = (r: Reply) => expect(r.status, r.raw.toString()).toBe(200);
    ok(
      await call(srv.url, src, "POST", "/v1/records/notes", {
        items: [
          { kind: "note", text: "the graph knows where ana works", ts: 10 },
          { kind: "decision", text: "use a causal model", ts: 20, tags: ["hd"] },
        ],
      }),
    );
    ok(await call(srv.url, src, "POST", "/v1/hd/kg/people/facts", { facts: FACTS }));
    ok(await call(srv.url, src, "POST", "/v1/hd/causal/world/worlds", WORLDS));
    ok(await call(srv.url, dst, "POST", "/v1/records/notes", { items: [{ kind: "note", text: "already in the fresh tenant", ts: 5 }] }));
  });
  afterAll(async () => {
    await srv?.dispose();
  });

  it("export ?schema=2 -> import into another tenant: same graph answer, same probabilities, records merged", async () => {
    const v1 = await call(srv.url, src, "GET", "/v1/records/notes/export");
    expect(Object.keys((await JSZip.loadAsync(v1.raw)).files).sort()).toEqual(["manifest.json", "records.nmm"]);
    expect((await call(srv.url, src, "GET", "/v1/records/notes/export?schema=3")).body.error).toMatchObject({
      code: "E_BAD_REQUEST",
      field: "schema",
    });

    const r = await call(srv.url, src, "GET", "/v1/records/notes/export?schema=2");
    expect(r.status, r.raw.toString()).toBe(200);
    expect(r.headers.get("content-type")).toBe("application/x-svc");
    expect(r.headers.get("content-disposition")).toBe('attachment; filename="notes.svc"');
    const z = await JSZip.loadAsync(r.raw);
    expect(
      Object.keys(z.files)
        .filter((f) => !z.files[f]!.dir)
        .sort(),
    ).toEqual(["kg/people.hdkg", "manifest.json", "records.nmm", "scm/world.hdscm"]);
    const manifest = JSON.parse(await z.file("manifest.json")!.async("string"));
    expect(manifest).toMatchObject({
      schema_version: 2,
      namespace: "notes",
      sections: ["records", "kg", "scm"],
      counts: { records: 2, kg: 1, scm: 1 },
    });
    // the sections are the HD layer's own export bytes
    expect(
      (await z.file("kg/people.hdkg")!.async("nodebuffer")).equals((await call(srv.url, src, "GET", "/v1/hd/kg/people/export")).raw),
    ).toBe(true);
    expect(
      (await z.file("scm/world.hdscm")!.async("nodebuffer")).equals((await call(srv.url, src, "GET", "/v1/hd/causal/world/export")).raw),
    ).toBe(true);

    expect((await call(srv.url, dst, "POST", "/v1/hd/kg/people/query", { subject: "ana", relation: "works_at" })).status).toBe(404);
    const imp = await call(srv.url, dst, "POST", "/v1/records/notes/import", form(r.raw));
    expect(imp.status, imp.raw.toString()).toBe(200);
    expect(imp.body).toEqual({ imported: 2, manifest, graphs: 1, models: 1 });

    const ask = (key: string) => call(srv.url, key, "POST", "/v1/hd/kg/people/query", { subject: "ana", relation: "works_at" });
    const [a, b] = [await ask(src), await ask(dst)];
    expect(b.status, b.raw.toString()).toBe(200);
    expect(b.body).toEqual(a.body);
    expect(b.body.object).toBe("acme");
    for (const t of ["observation", "intervention"]) {
      const [p, q] = [
        await call(srv.url, src, "POST", "/v1/hd/causal/world/query", Q(t)),
        await call(srv.url, dst, "POST", "/v1/hd/causal/world/query", Q(t)),
      ];
      expect(q.status, q.raw.toString()).toBe(200);
      expect(q.body.probability).toBe(p.body.probability);
      expect(typeof q.body.probability).toBe("number");
    }
    // merged: the fresh tenant's own record is kept
    expect((await call(srv.url, dst, "GET", "/v1/records/notes/stats")).body.count).toBe(3);
  });

  it("a damaged kg section is 400 E_CONTAINER naming it, and nothing is written", async () => {
    const z = await JSZip.loadAsync((await call(srv.url, src, "GET", "/v1/records/notes/export?schema=2")).raw);
    const hdkg = await z.file("kg/people.hdkg")!.async("nodebuffer");
    z.file("kg/people.hdkg", hdkg.subarray(0, hdkg.length - 3));
    const fresh = (await newTenantKey(srv)).key;
    const r = await call(srv.url, fresh, "POST", "/v1/records/notes/import", form(await z.generateAsync({ type: "nodebuffer" })));
    expect(r.status, r.raw.toString()).toBe(400);
    expect(r.body.error).toMatchObject({ code: "E_CONTAINER", field: "file" });
    expect(r.body.error.message).toMatch(/kg\/people\.hdkg/);
    expect((await call(srv.url, fresh, "GET", "/v1/records/notes/stats")).body.count).toBe(0);
    expect((await call(srv.url, fresh, "GET", "/v1/hd/causal/world/export")).status).toBe(404);
  });
});
