/**
 * @module hostile-requests — fast-check generators of hostile HTTP requests for EVERY route of
 * the route table (read from the server's /v1/openapi.json, which is generated from that table),
 * the world they run against (a victim tenant whose data must not change, an attacker tenant
 * holding resources of the same names), the sender with hang detection and the answer check.
 * Shared by test/http/route-fuzz.test.ts (a short, seeded run inside `npm test`) and
 * bench/fuzz.ts (`npx tsx bench/fuzz.ts --minutes 10`).
 */
import { createHash } from "node:crypto";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { Agent, request } from "node:http";
import { join } from "node:path";
import { encode as msgpackEncode } from "@msgpack/msgpack";
import fc from "fast-check";
import { ERRORS } from "../../src/errors.js";

export const DIM = 8;
/** Resource names both tenants use: a request of the attacker's that leaked across tenants would hit the victim's. */
export const NAMES = { index: "vault", ns: "secrets", graph: "g1", model: "m1" } as const;

// ---- the route table ------------------------------------------------------------------------

export interface Target {
  method: string;
  /** OpenAPI path, e.g. /v1/indexes/{name}/query */
  path: string;
  params: string[];
  query: Array<{ name: string; schema: Record<string, unknown> }>;
  /** Media types of the request body and its JSON schema (undefined: no body declared). */
  body?: { types: string[]; schema: Record<string, unknown> };
  auth: "tenant" | "admin" | "none";
}

/** Every operation of the OpenAPI document (that is, of the route table). */
export function targetsFrom(openapi: { paths: Record<string, Record<string, Record<string, unknown>>> }): Target[] {
  const out: Target[] = [];
  for (const [path, ops] of Object.entries(openapi.paths)) {
    for (const [method, op] of Object.entries(ops)) {
      const parameters = (op.parameters ?? []) as Array<{ name: string; in: string; schema: Record<string, unknown> }>;
      const content = (op.requestBody as { content?: Record<string, { schema?: Record<string, unknown> }> } | undefined)?.content;
      const types = content ? Object.keys(content) : [];
      out.push({
        method: method.toUpperCase(),
        path,
        params: parameters.filter((p) => p.in === "path").map((p) => p.name),
        query: parameters.filter((p) => p.in === "query").map((p) => ({ name: p.name, schema: p.schema ?? {} })),
        body: content ? { types, schema: content[types[0]!]?.schema ?? {} } : undefined,
        auth: op["x-svc-admin"] ? "admin" : Array.isArray(op.security) ? "none" : "tenant",
      });
    }
  }
  return out;
}

// ---- values -----------------------------------------------------------------------------------

/** Strings that broke or could break parsers, paths and lookups. */
export const HOSTILE_STRINGS = [
  "",
  " ",
  "%ZZ",
  "%",
  "%00",
  "%E2%82",
  "..",
  "../..",
  "../../etc/passwd",
  "/etc/passwd",
  "x/",
  "dir/",
  "a/b",
  "\\",
  "\\..\\x",
  "__proto__",
  "constructor",
  "toString",
  "prototype",
  "hasOwnProperty",
  "null",
  "undefined",
  "-1",
  "0",
  "1e309",
  "NaN",
  "Infinity",
  "true",
  "[]",
  "{}",
  "$ne",
  "$where",
  "\u0000",
  "\ud800",
  "\u202e",
  "😀",
  "名前",
  "é".repeat(200),
  "a".repeat(300),
  "b".repeat(5000),
  `${"c".repeat(256)}.pdf`,
  "out.pdf",
  "out.docx",
  "out.xlsx",
  "out.pptx",
  "out.eml",
  "out.ics",
  "x.",
  ".",
  "-",
  "__default__",
  "<script>alert(1)</script>",
  "' OR 1=1 --",
  "http://127.0.0.1/",
  "https://example.invalid/",
  "file:///etc/passwd",
  "data:text/plain,x",
];
const HOSTILE_NUMBERS = [
  0,
  -0,
  -1,
  1,
  2,
  7,
  1.5,
  -2.5,
  255,
  256,
  1024,
  65535,
  65536,
  2 ** 31,
  2 ** 32,
  2 ** 53,
  -(2 ** 53),
  1e21,
  1e308,
  -1e308,
  5e-324,
];

export interface World {
  /** Known-good values per path-parameter name (ids of real rungs, businesses, the shared NAMES, ...). */
  known: Record<string, string[]>;
  keys: { attacker: string; admin: string };
}

const hostileString = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...HOSTILE_STRINGS) },
  { weight: 2, arbitrary: fc.string({ maxLength: 24 }) },
  { weight: 1, arbitrary: fc.string({ unit: "binary", maxLength: 12 }) },
  { weight: 1, arbitrary: fc.constantFrom(...Object.values(NAMES)) },
);

/** Any JSON value, shallow, hostile leaves. */
const junk: fc.Arbitrary<unknown> = fc.letrec<{ v: unknown }>((tie) => ({
  v: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    fc.constant(null),
    fc.boolean(),
    fc.constantFrom(...HOSTILE_NUMBERS),
    hostileString,
    fc.array(tie("v"), { maxLength: 4 }),
    fc.dictionary(
      fc.oneof(
        hostileString,
        fc.constantFrom("name", "id", "vector", "values", "filter", "topK", "output_path", "outputPath", "items", "facts", "worlds"),
      ),
      tie("v"),
      { maxKeys: 4 },
    ),
  ),
})).v;

/** A value shaped by a JSON schema (mostly valid, with hostile leaves), so requests get past the first checks. */
export function fromSchema(schema: Record<string, unknown> | undefined, depth = 0): fc.Arbitrary<unknown> {
  if (schema === undefined || depth > 5) return junk;
  if (Array.isArray(schema.enum))
    return fc.oneof({ weight: 4, arbitrary: fc.constantFrom(...(schema.enum as unknown[])) }, { weight: 1, arbitrary: junk });
  if ("const" in schema) return fc.constant(schema.const);
  const alts = (schema.oneOf ?? schema.anyOf) as Record<string, unknown>[] | undefined;
  if (alts) return fc.oneof(...alts.map((s) => fromSchema(s, depth + 1)));
  const type = Array.isArray(schema.type) ? (schema.type[0] as string) : (schema.type as string | undefined);
  switch (type) {
    case "object": {
      const props = (schema.properties ?? {}) as Record<string, Record<string, unknown>>;
      const required = new Set((schema.required ?? []) as string[]);
      const names = Object.keys(props);
      if (names.length === 0) return fc.oneof(fc.constant({}), junk);
      return fc.record(Object.fromEntries(names.map((n) => [n, fromSchema(props[n], depth + 1)])), {
        requiredKeys: names.filter((n) => required.has(n)),
      });
    }
    case "array":
      return fc.array(fromSchema(schema.items as Record<string, unknown> | undefined, depth + 1), { maxLength: depth === 0 ? 6 : 4 });
    case "string":
      return fc.oneof({ weight: 3, arbitrary: hostileString }, { weight: 1, arbitrary: fc.string({ maxLength: 40 }) });
    case "integer": {
      const lo = typeof schema.minimum === "number" ? schema.minimum : -3;
      const hi = typeof schema.maximum === "number" ? schema.maximum : 40;
      return fc.oneof(
        { weight: 3, arbitrary: fc.integer({ min: Math.max(lo, -(2 ** 31)), max: Math.min(hi, 2 ** 31) }) },
        { weight: 1, arbitrary: fc.constantFrom(...HOSTILE_NUMBERS) },
      );
    }
    case "number":
      return fc.oneof(fc.double({ min: -1e6, max: 1e6, noNaN: true }), fc.constantFrom(...HOSTILE_NUMBERS));
    case "boolean":
      return fc.oneof({ weight: 4, arbitrary: fc.boolean() }, { weight: 1, arbitrary: junk });
    default:
      return junk;
  }
}

/** One hostile change to a (mostly valid) value: a leaf replaced, a key dropped or added, the whole wrapped. */
function mutate(v: unknown, pickPath: number, replacement: unknown, kind: number): unknown {
  const clone = structuredClone(v);
  const containers: Array<Record<string, unknown> | unknown[]> = [];
  const walk = (x: unknown) => {
    if (typeof x === "object" && x !== null) {
      containers.push(x as Record<string, unknown>);
      for (const c of Object.values(x)) walk(c);
    }
  };
  walk(clone);
  if (containers.length === 0 || kind === 0) return replacement;
  const c = containers[pickPath % containers.length]!;
  const keys = Object.keys(c);
  if (kind === 1 && keys.length > 0) (c as Record<string, unknown>)[keys[pickPath % keys.length]!] = replacement;
  else if (kind === 2 && keys.length > 0 && !Array.isArray(c)) delete (c as Record<string, unknown>)[keys[pickPath % keys.length]!];
  else if (kind === 3 && !Array.isArray(c)) (c as Record<string, unknown>)[`unknown_${pickPath % 7}`] = replacement;
  else if (kind === 4) return [clone];
  return clone;
}

// ---- requests -------------------------------------------------------------------------------

export interface HostileRequest {
  method: string;
  /** The raw request target: path and query exactly as sent. */
  target: string;
  headers: Record<string, string>;
  body: Buffer | null;
  /** What the generator meant (for the report). */
  route: string;
}

/** Percent-encode the UTF-8 bytes (a lone surrogate becomes U+FFFD, which encodeURIComponent refuses). */
const enc = (s: string) =>
  [...Buffer.from(s, "utf8")]
    .map((b) =>
      /[A-Za-z0-9._~-]/.test(String.fromCharCode(b)) ? String.fromCharCode(b) : `%${b.toString(16).toUpperCase().padStart(2, "0")}`,
    )
    .join("");
/** A raw path segment: a known value, an encoded hostile string, or broken percent-encoding. */
const segment = (known: string[]) =>
  fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom(...(known.length > 0 ? known : ["x"])).map(enc) },
    { weight: 3, arbitrary: hostileString.map(enc).filter((s) => s.length > 0) },
    { weight: 1, arbitrary: fc.constantFrom("%ZZ", "%", "%E2%82", "%C0%AF", "..%2F..%2F", "%2e%2e", "a%00b", "%FF%FE") },
  );

/** The query string: declared parameters with good or hostile values, unknown ones, broken encoding. */
function queryString(t: Target): fc.Arbitrary<string> {
  const declared = t.query.map((q) =>
    fc.option(
      fc.oneof(
        {
          weight: 3,
          arbitrary: fromSchema(q.schema).map((v) => `${enc(q.name)}=${enc(typeof v === "string" ? v : (JSON.stringify(v) ?? ""))}`),
        },
        { weight: 1, arbitrary: fc.constantFrom("%ZZ", "%", "", "%E2%82", "a".repeat(3000)).map((v) => `${q.name}=${v}`) },
        {
          weight: 1,
          arbitrary: fc.array(hostileString, { minLength: 2, maxLength: 3 }).map((vs) => vs.map((v) => `${q.name}=${enc(v)}`).join("&")),
        },
      ),
      { freq: 2 },
    ),
  );
  const extra = fc.array(
    fc.oneof(
      fc.constantFrom("start=%ZZ", "%ZZ=1", "&&", "=", "a", "__proto__=1", "limit=-1", "limit=1e309", "namespace=%00"),
      hostileString.map((s) => `${enc(s)}=${enc(s)}`),
    ),
    { maxLength: 2 },
  );
  return fc.tuple(fc.tuple(...declared), extra).map(([d, e]) => {
    const parts = [...d.filter((x): x is string => x !== null), ...e];
    return parts.length === 0 ? "" : `?${parts.join("&")}`;
  });
}

const CONTENT_TYPES = [
  "application/json",
  "application/json; charset=utf-8",
  "application/msgpack",
  "application/x-protobuf",
  "application/octet-stream",
  "multipart/form-data; boundary=xyz",
  "multipart/form-data",
  "text/plain",
  "application/x-www-form-urlencoded",
  "",
  "garbage/;;;",
];

/** A body: schema-shaped and mutated, junk, 40 KB of unknown fields, deep nesting, truncated JSON, random bytes, msgpack, multipart. */
function body(t: Target): fc.Arbitrary<{ data: Buffer | null; type: string }> {
  const declaredType = t.body?.types[0] ?? "application/json";
  const shaped = fc
    .tuple(fromSchema(t.body?.schema), fc.nat(), junk, fc.integer({ min: 0, max: 7 }))
    .map(([v, p, r, k]) => (k >= 5 ? v : mutate(v, p, r, k)));
  const asJson = (v: unknown) => Buffer.from(JSON.stringify(v) ?? "null");
  return fc.oneof(
    { weight: 6, arbitrary: shaped.map((v) => ({ data: asJson(v), type: "application/json" })) },
    { weight: 1, arbitrary: shaped.map((v) => ({ data: Buffer.from(msgpackEncode(v)), type: "application/msgpack" })) },
    { weight: 1, arbitrary: junk.map((v) => ({ data: asJson(v), type: "application/json" })) },
    {
      weight: 1,
      arbitrary: fc.nat({ max: 40 }).map((n) => ({
        data: asJson(Object.fromEntries(Array.from({ length: 400 + n }, (_, i) => [`unknown_field_${i}`, "x".repeat(90)]))),
        type: "application/json",
      })),
    },
    {
      weight: 1,
      arbitrary: fc
        .integer({ min: 100, max: 3000 })
        .map((n) => ({ data: Buffer.from("[".repeat(n) + "]".repeat(n)), type: "application/json" })),
    },
    {
      weight: 1,
      arbitrary: shaped.chain((v) => {
        const s = JSON.stringify(v) ?? "{}";
        return fc.nat({ max: Math.max(0, s.length - 1) }).map((cut) => ({ data: Buffer.from(s.slice(0, cut)), type: "application/json" }));
      }),
    },
    { weight: 1, arbitrary: fc.uint8Array({ maxLength: 300 }).map((b) => ({ data: Buffer.from(b), type: declaredType })) },
    {
      weight: 1,
      arbitrary: fc.tuple(fc.uint8Array({ maxLength: 200 }), fc.constantFrom("xyz", "")).map(([b, bd]) => ({
        data: Buffer.concat([
          Buffer.from(
            `--${bd}\r\nContent-Disposition: form-data; name="file"; filename="a.svc"\r\nContent-Type: application/zip\r\n\r\nPK\u0003\u0004`,
          ),
          Buffer.from(b),
          Buffer.from(`\r\n--${bd}--\r\n`),
        ]),
        type: "multipart/form-data; boundary=xyz",
      })),
    },
    { weight: 1, arbitrary: fc.constant({ data: null, type: declaredType }) },
  );
}

/** A hostile request for one route: path parameters, query, credentials, headers and body all generated. */
export function hostileRequest(t: Target, world: World): fc.Arbitrary<HostileRequest> {
  const segs = fc.tuple(...t.params.map((p) => segment(world.known[p] ?? [])));
  const auth = fc.oneof(
    {
      weight: 6,
      arbitrary: fc.constant<Record<string, string>>(
        t.auth === "admin" ? { "api-key": world.keys.admin } : { "api-key": world.keys.attacker },
      ),
    },
    { weight: 1, arbitrary: fc.constant<Record<string, string>>({ authorization: `Bearer ${world.keys.attacker}` }) },
    {
      weight: 1,
      arbitrary: fc.constantFrom<Record<string, string>>(
        {},
        { "api-key": "svc_nope" },
        { authorization: "Bearer" },
        { authorization: "Basic eDp5" },
        { "api-key": world.keys.attacker.slice(0, -1) },
      ),
    },
  );
  const extraHeaders = fc.record(
    {
      accept: fc.constantFrom("application/json", "application/msgpack", "application/x-protobuf", "*/*", "text/html", "garbage", ""),
      "x-request-id": fc.oneof(
        fc.constant("fz-1"),
        fc.string({ maxLength: 80 }).map((s) => s.replace(/[^\x21-\x7e]/g, "_")),
      ),
    },
    { requiredKeys: [] },
  );
  const ct = fc.option(fc.constantFrom(...CONTENT_TYPES), { freq: 5 });
  return fc.tuple(segs, queryString(t), auth, extraHeaders, body(t), ct, fc.boolean()).map(([ps, q, a, h, b, forcedType, sendBody]) => {
    let i = 0;
    const path = t.path.replace(/\{\w+\}/g, () => ps[i++]!);
    const withBody = t.method !== "GET" && t.method !== "DELETE" ? b.data : sendBody ? b.data : null;
    const headers: Record<string, string> = {
      ...a,
      ...Object.fromEntries(Object.entries(h).filter(([, v]) => v !== undefined && v !== "")),
    };
    if (withBody !== null) headers["content-type"] = forcedType ?? b.type;
    return { method: t.method, target: path + q, headers, body: withBody, route: `${t.method} ${t.path}` };
  });
}

// ---- sending and checking -------------------------------------------------------------------

export interface Answer {
  status: number;
  body: Buffer;
}

const agent = new Agent({ keepAlive: true, maxSockets: 8 });

/** Send one request; "hang" when no full answer came within `timeoutMs`, "dropped" when the connection broke. */
export function send(
  base: URL,
  r: { method: string; target: string; headers: Record<string, string>; body: Buffer | null },
  timeoutMs = 30_000,
): Promise<Answer | "hang" | "dropped"> {
  return new Promise((resolve) => {
    const req = request(
      {
        host: base.hostname,
        port: base.port,
        method: r.method,
        path: r.target,
        headers: { ...r.headers, ...(r.body ? { "content-length": String(r.body.length) } : {}) },
        agent,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => {
          clearTimeout(timer);
          resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) });
        });
        res.on("error", () => {
          clearTimeout(timer);
          resolve("dropped");
        });
      },
    );
    const timer = setTimeout(() => {
      req.destroy();
      resolve("hang");
    }, timeoutMs);
    req.on("error", () => {
      clearTimeout(timer);
      resolve("dropped");
    });
    req.end(r.body ?? undefined);
  });
}

/** null when the answer is acceptable, else what is wrong: a 5xx, a hang, a dropped connection, a 4xx without a known code or with a code of another status. */
export function violation(a: Answer | "hang" | "dropped"): string | null {
  if (a === "hang") return "no answer within the time-out (hang)";
  if (a === "dropped") return "the connection was dropped without an answer";
  if (a.status >= 500) return `${a.status} ${a.body.toString("utf8", 0, 300)}`;
  if (a.status >= 400) {
    let code: unknown;
    try {
      code = (JSON.parse(a.body.toString("utf8")) as { error?: { code?: unknown } }).error?.code;
    } catch {
      return `${a.status} whose body is not the JSON error body: ${a.body.toString("utf8", 0, 200)}`;
    }
    if (typeof code !== "string" || !(code in ERRORS)) return `${a.status} with a code not in src/errors.ts: ${String(code)}`;
    if (ERRORS[code as keyof typeof ERRORS].status !== a.status)
      return `${a.status} carries ${code}, which the table maps to ${ERRORS[code as keyof typeof ERRORS].status}`;
  }
  return null;
}

// ---- the world: two tenants, the victim's data and its snapshot ----------------------------

async function call(
  base: URL,
  key: string,
  method: string,
  path: string,
  json?: unknown,
  type = "application/json",
  raw?: Buffer,
): Promise<Answer> {
  const data = raw ?? (json === undefined ? null : Buffer.from(JSON.stringify(json)));
  const a = await send(base, { method, target: path, headers: { "api-key": key, ...(data ? { "content-type": type } : {}) }, body: data });
  if (typeof a === "string") throw new Error(`${method} ${path}: ${a}`);
  return a;
}

async function ok(base: URL, key: string, method: string, path: string, json?: unknown): Promise<unknown> {
  const a = await call(base, key, method, path, json);
  if (a.status >= 300) throw new Error(`${method} ${path}: ${a.status} ${a.body.toString()}`);
  return a.body.length > 0 && a.body[0] === 0x7b ? JSON.parse(a.body.toString()) : a.body;
}

/** The same resources (by name) in one tenant: an index with vectors, records, a graph, a causal model. */
async function seedTenant(base: URL, key: string, label: string): Promise<void> {
  const list = (await ok(base, key, "GET", "/v1/indexes")) as { indexes: Array<{ name: string }> };
  if (!list.indexes.some((i) => i.name === NAMES.index))
    await ok(base, key, "POST", "/v1/indexes", { name: NAMES.index, dimension: DIM, metric: "cosine" });
  const vectors = Array.from({ length: 12 }, (_, i) => ({
    id: `${label}-${i}`,
    values: Array.from({ length: DIM }, (_, j) => Math.sin(i * 7 + j + 1)),
    metadata: { owner: label, n: i },
  }));
  await ok(base, key, "POST", `/v1/indexes/${NAMES.index}/vectors/upsert`, { vectors, namespace: NAMES.ns });
  await ok(base, key, "POST", `/v1/records/${NAMES.ns}`, {
    items: Array.from({ length: 6 }, (_, i) => ({
      kind: "note",
      text: `${label} private note ${i}`,
      tags: [label],
      ts: 1_700_000_000_000 + i,
    })),
  });
  await ok(base, key, "POST", `/v1/hd/kg/${NAMES.graph}/facts`, {
    facts: [{ subject: `${label}-s`, relation: "owns", object: `${label}-o` }],
  });
  await ok(base, key, "POST", `/v1/hd/causal/${NAMES.model}/worlds`, {
    n_vars: 2,
    vocab_per_var: [2, 2],
    worlds: [
      [0, 1],
      [1, 1],
      [1, 0],
    ],
  });
}

export interface FuzzWorld extends World {
  /** The victim's data read through the API (with an unmetered key of its tenant) and hashes of its files. */
  snapshot(): Promise<Record<string, string>>;
  /** Re-create the attacker's resources (the fuzz may delete them). */
  reseed(): Promise<void>;
}

/** Build the world on a fresh server: `adminKey` is the first admin key it printed, `dataDir` its --data. */
export async function buildWorld(baseUrl: string, adminKey: string, dataDir: string): Promise<FuzzWorld> {
  const base = new URL(baseUrl);
  const key = async (tenant: string, admin: boolean) =>
    ((await ok(base, adminKey, "POST", "/v1/admin/keys", { tenant, admin, name: `${tenant} fuzz` })) as { key: string }).key;
  const victim = await key("victim", false);
  const victimReader = await key("victim", true); // unmetered: snapshot reads do not move the victim's wallet
  const attacker = await key("attacker", false);
  await ok(base, adminKey, "POST", "/v1/admin/tenants/attacker/credit", { usd: 1000 });
  await seedTenant(base, victim, "victim");
  await seedTenant(base, attacker, "attacker");
  const rungs = ((await ok(base, adminKey, "GET", "/v1/commons/rungs")) as { rungs: Array<{ id: string }> }).rungs.map((r) => r.id);
  const businesses = (await ok(base, adminKey, "GET", "/api/businesses?limit=3")) as {
    results?: Array<{ id: string }>;
    businesses?: Array<{ id: string }>;
  };
  const bizIds = (businesses.results ?? businesses.businesses ?? []).map((b) => b.id);
  const known: Record<string, string[]> = {
    name: [NAMES.index, NAMES.graph, NAMES.model],
    namespace: [NAMES.ns, "__default__"],
    ns: [NAMES.ns],
    id: [...rungs, ...bizIds, "attacker-1"],
    tenant: ["attacker"],
    keyId: ["key_nope"],
    file: ["index.html", "app.js", "style.css"],
    fileId: ["f_1"],
  };
  const read = async (path: string, json?: unknown): Promise<string> => {
    const a = await call(base, victimReader, json === undefined ? "GET" : "POST", path, json);
    return `${a.status} ${createHash("sha256").update(a.body).digest("hex")}${a.status >= 300 ? ` ${a.body.toString().slice(0, 200)}` : ""}`;
  };
  const tenantDir = join(dataDir, "tenants", "victim");
  const files = (): Record<string, string> => {
    const out: Record<string, string> = {};
    const walk = (d: string) => {
      for (const e of readdirSync(d).sort()) {
        const p = join(d, e);
        if (statSync(p).isDirectory()) walk(p);
        else out[`file ${p.slice(tenantDir.length)}`] = createHash("sha256").update(readFileSync(p)).digest("hex");
      }
    };
    walk(tenantDir);
    return out;
  };
  return {
    known,
    keys: { attacker, admin: adminKey },
    async snapshot() {
      const reads: Record<string, string> = {
        indexes: await read("/v1/indexes"),
        index: await read(`/v1/indexes/${NAMES.index}`),
        stats: await read(`/v1/indexes/${NAMES.index}/describe_index_stats`),
        fetch: await read(
          `/v1/indexes/${NAMES.index}/vectors/fetch?namespace=${NAMES.ns}&${Array.from({ length: 12 }, (_, i) => `ids=victim-${i}`).join("&")}`,
        ),
        query: await read(`/v1/indexes/${NAMES.index}/query`, {
          vector: Array.from({ length: DIM }, (_, j) => Math.cos(j)),
          topK: 12,
          namespace: NAMES.ns,
          includeMetadata: true,
          includeValues: true,
        }),
        timeline: await read(`/v1/records/${NAMES.ns}/timeline?limit=100`),
        recordStats: await read(`/v1/records/${NAMES.ns}/stats`),
        kg: await read(`/v1/hd/kg/${NAMES.graph}/export`),
        causal: await read(`/v1/hd/causal/${NAMES.model}/export`),
        wallet: await read("/v1/wallet?limit=100"),
      };
      return { ...reads, ...files() };
    },
    async reseed() {
      await seedTenant(base, attacker, "attacker").catch(() => undefined);
    },
  };
}

/** `<data>/config.json` for a fuzz server: commons limits off (so requests reach the handlers), short outbound time-out, no outbound reach. */
export const FUZZ_CONFIG = {
  commons: {
    rateLimits: {
      trust: { count: 0, windowSeconds: 1 },
      board: { count: 0, windowSeconds: 1 },
      ask: { count: 0, windowSeconds: 1 },
      writes: { count: 0, windowSeconds: 1 },
    },
    outbound: { timeoutMs: 1000 },
  },
};
