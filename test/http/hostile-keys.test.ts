/**
 * Reserved keys (__proto__, constructor, prototype) against the built `svc serve`: every write
 * path refuses them with 400 E_METADATA naming the field (REST JSON, msgpack and protobuf bodies, filters,
 * MCP tool arguments, container import, board JSON files, KG uploads, directory import), and a
 * WAL holding such a key (frames written as the old encoder wrote them) replays after a restart:
 * the index and the records serve, reads and new writes alike.
 */
import { appendFileSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { encode as msgpackEncode } from "@msgpack/msgpack";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import JSZip from "jszip";
import protobuf from "protobufjs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { crc32c } from "../../src/store/crc32c.js";
import { call, cli, type Reply } from "../e2e/client.js";
import { startServerProcess, type ServerProcess } from "../e2e/server-process.js";

const RESERVED = ["__proto__", "constructor", "prototype"] as const;

/** JSON text with `key` spelled literally (an object literal or JSON.stringify could not hold "__proto__" as a key). */
const withKey = (key: string, value: string) => `{"${key}": ${value}, "ok": "yes"}`;

function refused(r: Reply, field: string): void {
  expect([r.status, r.body?.error?.code, r.body?.error?.field], r.raw.toString()).toEqual([400, "E_METADATA", field]);
}

/** A request whose body is the given JSON text, sent as is. */
async function rawJson(base: string, method: string, path: string, text: string): Promise<Reply> {
  return call(base, null, method, path, new Uint8Array(Buffer.from(text)), "application/json");
}

let srv: ServerProcess;

beforeAll(async () => {
  srv = await startServerProcess({ args: ["--no-auth"] });
  expect((await call(srv.url, null, "POST", "/v1/indexes", { name: "hk", dimension: 4, metric: "cosine" })).status).toBe(201);
}, 60_000);

afterAll(async () => {
  await srv?.dispose();
});

describe("reserved keys are refused on every write path", () => {
  it("records: POST /v1/records/{ns} (meta at any depth)", async () => {
    for (const key of RESERVED) {
      refused(
        await rawJson(srv.url, "POST", "/v1/records/hk", `{"items": [{"kind": "k", "text": "t", "meta": ${withKey(key, '{"x": 1}')}}]}`),
        `items[0].meta.${key}`,
      );
      refused(
        await rawJson(srv.url, "POST", "/v1/records/hk", `{"items": [{"kind": "k", "text": "t", "meta": {"a": [${withKey(key, "1")}]}}]}`),
        `items[0].meta.a[0].${key}`,
      );
    }
    // Nothing was written: the namespace is still empty, and every read answers.
    const tl = await call(srv.url, null, "GET", "/v1/records/hk/timeline");
    expect([tl.status, tl.body.records]).toEqual([200, []]);
  });

  it("indexes: upsert metadata, update setMetadata, query and delete filters, JSON and msgpack", async () => {
    for (const key of RESERVED) {
      refused(
        await rawJson(
          srv.url,
          "POST",
          "/v1/indexes/hk/vectors/upsert",
          `{"vectors": [{"id": "a", "values": [1, 2, 3, 4], "metadata": ${withKey(key, '"x"')}}]}`,
        ),
        `vectors[0].metadata.${key}`,
      );
      refused(
        await rawJson(srv.url, "POST", "/v1/indexes/hk/query", `{"vector": [1, 2, 3, 4], "topK": 1, "filter": ${withKey(key, '"x"')}}`),
        `filter.${key}`,
      );
      refused(await rawJson(srv.url, "POST", "/v1/indexes/hk/vectors/delete", `{"filter": ${withKey(key, '"x"')}}`), `filter.${key}`);
    }
    expect(
      (await call(srv.url, null, "POST", "/v1/indexes/hk/vectors/upsert", { vectors: [{ id: "a", values: [1, 2, 3, 4] }] })).status,
    ).toBe(200);
    refused(
      await rawJson(srv.url, "POST", "/v1/indexes/hk/vectors/update", `{"id": "a", "setMetadata": ${withKey("constructor", '"x"')}}`),
      "setMetadata.constructor",
    );
    // msgpack: the encoder writes an own "__proto__" key as a map key like any other.
    const body = msgpackEncode(
      JSON.parse(`{"vectors": [{"id": "b", "values": [1, 2, 3, 4], "metadata": ${withKey("__proto__", '"x"')}}]}`),
    );
    refused(
      await call(srv.url, null, "POST", "/v1/indexes/hk/vectors/upsert", body, "application/msgpack"),
      "vectors[0].metadata.__proto__",
    );
    // protobuf: a Struct field named "__proto__".
    const Upsert = protobuf
      .loadSync(fileURLToPath(new URL("../../src/http/proto/vectors.proto", import.meta.url)))
      .lookupType("svc.v1.UpsertRequest");
    const pb = Upsert.encode(
      Upsert.fromObject(
        JSON.parse('{"vectors": [{"id": "b", "values": [1, 2, 3, 4], "metadata": {"fields": {"__proto__": {"stringValue": "x"}}}}]}'),
      ),
    ).finish();
    refused(
      await call(srv.url, null, "POST", "/v1/indexes/hk/vectors/upsert", pb, "application/x-protobuf"),
      "vectors[0].metadata.__proto__",
    );
    const f = await call(srv.url, null, "GET", "/v1/indexes/hk/vectors/fetch?ids=a&ids=b");
    expect([f.status, Object.keys(f.body.vectors)]).toEqual([200, ["a"]]);
  });

  it("knowledge graph facts and a board JSON file", async () => {
    refused(
      await rawJson(srv.url, "POST", "/v1/hd/kg/g1/facts", `{"facts": [${withKey("__proto__", '{"subject": "a"}')}]}`),
      "facts[0].__proto__",
    );
    refused(
      await rawJson(
        srv.url,
        "POST",
        "/v1/board/files",
        `{"agent": "alpha", "filename": "x.json", "content": ${withKey("prototype", "{}")}}`,
      ),
      "content.prototype",
    );
    refused(
      await rawJson(
        srv.url,
        "POST",
        "/v1/board/files",
        `{"agent": "alpha", "filename": "x.json", "content": ${withKey("__proto__", '{"a": 1}')}}`,
      ),
      "content.__proto__",
    );
  });

  it("container import: a record whose meta holds the key", async () => {
    const record = JSON.parse(
      `{"id": "rec_01", "kind": "k", "text": "t", "tags": [], "ts": 1, "meta": ${withKey("__proto__", '{"x": 1}')}}`,
    );
    const frame = Buffer.from(msgpackEncode(record));
    const len = Buffer.alloc(4);
    len.writeUInt32LE(frame.length);
    const zip = new JSZip();
    zip.file(
      "manifest.json",
      JSON.stringify({
        schema_version: 1,
        exported_at_ms: 1,
        namespace: "hk",
        sections: ["records"],
        counts: { records: 1 },
        exported_by: "test",
      }),
    );
    zip.file("records.nmm", Buffer.concat([Buffer.from("SVCNMM01"), len, frame]));
    const form = new FormData();
    form.append("file", new Blob([await zip.generateAsync({ type: "arraybuffer" })]), "x.svc");
    refused(await call(srv.url, null, "POST", "/v1/records/hk/import", form), "records.nmm[0].meta.__proto__");
  });

  it("MCP tool arguments (streamable HTTP)", async () => {
    const client = new Client({ name: "hostile-keys", version: "1.0.0" });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${srv.url}/mcp`)));
    try {
      const args = JSON.parse(`{"namespace": "hk", "items": [{"kind": "k", "text": "t", "meta": ${withKey("constructor", "1")}}]}`);
      const r = (await client.callTool({ name: "records_ingest", arguments: args })) as {
        isError?: boolean;
        content: Array<{ text: string }>;
      };
      expect(r.isError).toBe(true);
      expect(JSON.parse(r.content[0]!.text).error).toMatchObject({ code: "E_METADATA", field: "arguments.items[0].meta.constructor" });
    } finally {
      await client.close();
    }
  });

  it("directory import (svc directory import): the line is rejected naming the field", async () => {
    const dir = mkdtempSync(join(tmpdir(), "svc-hk-dir-"));
    try {
      const file = join(dir, "in.jsonl");
      writeFileSync(
        file,
        `{"name": "Good Bakery", "category": "bakery"}\n{"name": "Bad", "category": "bakery", "booking": ${withKey("__proto__", '{"x": 1}')}}\n`,
      );
      const r = await cli(["directory", "import", file, "--data", join(dir, "data"), "--json"]);
      expect([r.code, JSON.parse(r.stdout)], r.stderr).toEqual([2, expect.objectContaining({ lines: 2, created: 1, rejected: 1 })]);
      expect(r.stderr).toContain('line 2: booking.__proto__: the key "__proto__" is reserved');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

// ---- a WAL that already holds such a key ------------------------------------------------------

const SYNC = 0x1cd65af7;

/** One WAL frame (docs/FORMAT.md): sync, length, crc32c(length ++ type ++ payload), type, payload. */
function walFrame(type: number, payload: Uint8Array): Buffer {
  const head = Buffer.alloc(13);
  head.writeUInt32LE(SYNC, 0);
  head.writeUInt32LE(payload.length + 1, 4);
  head[12] = type;
  head.writeUInt32LE(crc32c(Buffer.concat([head.subarray(4, 8), head.subarray(12, 13), payload])), 8);
  return Buffer.concat([head, payload]);
}

function lastSegment(walDir: string): string {
  return join(
    walDir,
    readdirSync(walDir)
      .filter((n) => n.endsWith(".seg"))
      .sort()
      .at(-1)!,
  );
}

const f32 = (xs: number[]) => Buffer.from(new Float32Array(xs).buffer);

describe("a WAL holding a __proto__ key (written by the old encoder) replays", () => {
  it("after a restart the index and the records serve, reads and writes", async () => {
    const s1 = await startServerProcess({ args: ["--no-auth"] });
    const dataDir = s1.dataDir;
    try {
      expect((await call(s1.url, null, "POST", "/v1/indexes", { name: "old", dimension: 4, metric: "cosine" })).status).toBe(201);
      expect(
        (
          await call(s1.url, null, "POST", "/v1/indexes/old/vectors/upsert", {
            vectors: [{ id: "ok", values: [1, 0, 0, 0], metadata: { genre: "a" } }],
          })
        ).status,
      ).toBe(200);
      expect((await call(s1.url, null, "POST", "/v1/records/old", { items: [{ kind: "note", text: "a fine record" }] })).status).toBe(200);
      expect(await s1.stop()).toBe(0);

      // Frames as the server wrote them before such keys were refused: the msgpack encoder writes an own "__proto__" key.
      const tenant = join(dataDir, "tenants", "local");
      const poisoned = (extra: string) => JSON.parse(`{"__proto__": {"x": 1}, "genre": "b"${extra}}`);
      appendFileSync(
        lastSegment(join(tenant, "indexes", "old", "wal")),
        Buffer.concat([
          walFrame(1, msgpackEncode({ ns: "", ids: ["p"], v: f32([0, 1, 0, 0]), m: [poisoned("")] })),
          walFrame(4, msgpackEncode({ ns: "", id: "ok", v: null, m: JSON.parse('{"__proto__": "z", "year": 2001}') })),
        ]),
      );
      const vec = new Array<number>(1024).fill(0);
      vec[7] = 1;
      const payload = msgpackEncode({ text: "a poisoned record", meta: poisoned(', "deep": {"__proto__": [1]}') });
      appendFileSync(
        lastSegment(join(tenant, "records", "wal")),
        walFrame(
          1,
          msgpackEncode({ ns: "old", ids: ["rec_00000000000000aa"], v: f32(vec), m: [{ kind: "note", tags: [], ts: 5 }], p: [payload] }),
        ),
      );

      const s2 = await startServerProcess({ dataDir, args: ["--no-auth"] });
      try {
        const f = await call(s2.url, null, "GET", "/v1/indexes/old/vectors/fetch?ids=ok&ids=p");
        expect(f.status, f.raw.toString()).toBe(200);
        expect(f.body.vectors.p.metadata).toEqual({ genre: "b" });
        expect(f.body.vectors.ok.metadata).toEqual({ genre: "a", year: 2001 });
        const q = await call(s2.url, null, "POST", "/v1/indexes/old/query", {
          vector: [0, 1, 0, 0],
          topK: 2,
          includeMetadata: true,
          filter: { genre: "b" },
        });
        expect([q.status, q.body.matches?.map((m: { id: string }) => m.id)]).toEqual([200, ["p"]]);
        expect(
          (await call(s2.url, null, "POST", "/v1/indexes/old/vectors/upsert", { vectors: [{ id: "new", values: [0, 0, 1, 0] }] })).status,
        ).toBe(200);

        const one = await call(s2.url, null, "GET", "/v1/records/old/rec_00000000000000aa");
        expect([one.status, one.body.meta]).toEqual([200, { genre: "b", deep: {} }]);
        const tl = await call(s2.url, null, "GET", "/v1/records/old/timeline");
        expect([tl.status, tl.body.records?.length]).toEqual([200, 2]);
        for (const mode of ["vector", "hybrid"]) {
          const rq = await call(s2.url, null, "POST", "/v1/records/old/query", { text: "poisoned record", mode, includeMeta: true });
          expect(rq.status, mode).toBe(200);
          expect(rq.body.records.find((r: { id: string }) => r.id === "rec_00000000000000aa")?.meta, mode).toEqual({
            genre: "b",
            deep: {},
          });
        }
        const ex = await call(s2.url, null, "GET", "/v1/records/old/export");
        expect(ex.status).toBe(200);
        expect((await call(s2.url, null, "POST", "/v1/records/old", { items: [{ kind: "note", text: "after the restart" }] })).status).toBe(
          200,
        );
      } finally {
        await s2.stop();
      }
    } finally {
      await s1.stop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 60_000);
});
