/**
 * One schema per operation (issue 34), the commons and directory families: for each operation with input, the route's
 * check (`Route.input`), the OpenAPI document and the MCP tool that is the operation come from the same zod object
 * (tools/commons-ops.ts, tools/directory-ops.ts); and fast-check-generated hostile bodies and queries sent through the
 * in-process request path (`server.request`, the path HTTP takes) get a 2xx or a 4xx carrying a stable code and the
 * offending field, never a 5xx, and a refused request leaves the stored data as it was.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startServer, type Server } from "../../src/app/start-server.js";
import { ERRORS } from "../../src/errors.js";
import { jsonSchemaOf, queryParamsOf } from "../../src/http/input.js";
import { openApiDocument } from "../../src/http/openapi.js";
import type { Route } from "../../src/http/route.js";
import { CATALOG } from "../../src/tools/catalog.js";
import { COMMONS_OPS } from "../../src/tools/commons-ops.js";
import { DIRECTORY_OPS } from "../../src/tools/directory-ops.js";
import { countInSrc } from "./src-text.js";

const OPS: Record<string, { body?: import("zod").ZodObject; query?: import("zod").ZodObject }> = { ...COMMONS_OPS, ...DIRECTORY_OPS };
/** Routes that are an operation of another name (the HTML search page takes the search's query). */
const OP_OF: Record<string, string> = { directory_page_search: "directory_search" };
/** Path parameters a tool adds to the operation's schema. */
const PATH_ARGS = new Set(["id"]);

let server: Server;
let dir: string;
let routes: Route[];
const BIZ = "oak-plumbing-test";
const OTHER = "elm-dental-test";
let post = "";

const json = (b: Buffer | string) => JSON.parse(b.toString()) as any;
async function send(method: string, url: string, body?: unknown, remoteAddress = "127.0.0.1") {
  const r = await server.request({
    method,
    url,
    remoteAddress,
    headers: { host: new URL(server.url).host, ...(body === undefined ? {} : { "content-type": "application/json" }) }, // auth off: a loopback Host
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: r.status, body: r.contentType.startsWith("application/json") ? json(r.body) : String(r.body) };
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "svc-one-schema-commons-"));
  const lifted = { count: 100_000, windowSeconds: 600 };
  await writeFile(
    join(dir, "config.json"),
    JSON.stringify({ commons: { rateLimits: { trust: lifted, board: lifted, ask: lifted, writes: lifted } } }),
  );
  const seed = join(dir, "seed.jsonl");
  await writeFile(
    seed,
    [
      { id: BIZ, name: "Oak Plumbing", category: "Plumber", areas: ["Bristol"] },
      { id: OTHER, name: "Elm Dental", category: "Dentist" },
    ]
      .map((x) => JSON.stringify(x))
      .join("\n") + "\n",
  );
  server = await startServer({ dataDir: dir, port: 0, auth: false, directorySeed: seed, durability: "batch" });
  routes = [...server.routes];
  // a bookable business (open every day) and a post to reply to, vote on and file into
  const claimed = await send("POST", `/api/admin/businesses/${BIZ}/claim`, { owner: { name: "Owner", email: "owner@oak.example" } });
  expect(claimed.status, JSON.stringify(claimed.body)).toBe(200);
  const hours = Object.fromEntries(["mon", "tue", "wed", "thu", "fri", "sat", "sun"].map((d) => [d, ["00:00-24:00"]]));
  const on = await send("POST", `/api/admin/businesses/${BIZ}/booking`, {
    booking: { utc_offset: "+00:00", hours, slot_minutes: 60, questions: [] },
  });
  expect(on.status, JSON.stringify(on.body)).toBe(200);
  const p = await send("POST", "/v1/board", { agent: "seed", message: "A first post to answer." });
  expect(p.status).toBe(200);
  post = p.body.id;
}, 120_000);
afterAll(async () => {
  await server?.close();
  await rm(dir, { recursive: true, force: true });
});

/** The converted routes of the two families, with the operation each one is. */
const converted = () =>
  routes
    .filter((r) => r.input !== undefined && (r.tags.some((t) => ["trust", "board", "ask", "commons", "directory"].includes(t)) || false))
    .map((r) => ({ route: r, op: OP_OF[r.operationId] ?? r.operationId }));

describe("one schema per operation: commons and directory", () => {
  it("every commons and directory operation schema is a route's input, the document's and the MCP tool's", () => {
    const ops = converted();
    // every schema is used by a route, and every route with input of these families takes one of them
    expect(new Set(ops.map((o) => o.op))).toEqual(new Set(Object.keys(OPS)));
    const doc = openApiDocument(routes, "test") as { paths: Record<string, Record<string, any>> };
    for (const { route, op } of ops) {
      const schema = OPS[op]!;
      const what = route.operationId;
      // the route checks with the operation's schema (board_file_add: its query; the JSON form arrives raw and is checked by the handler)
      if (route.rawBody) expect(route.input!.query, what).toBe(schema.query);
      else expect(route.input, what).toBe(schema);
      expect(route.requestBody === undefined || route.rawBody !== undefined, what).toBe(true);
      expect(route.queryParams, what).toBeUndefined();
      // the document shows that schema
      const d = doc.paths[route.path]![route.method]!;
      if (schema.body && !route.rawBody) {
        // the document closes a body the schema leaves open (additionalProperties: false, as refuseUnknownFields answers)
        const shown = d.requestBody.content["application/json"].schema;
        expect(shown, what).toEqual({ additionalProperties: false, ...jsonSchemaOf(schema.body) });
      }
      if (schema.body && route.rawBody) expect(JSON.stringify(d.requestBody), what).toContain(JSON.stringify(jsonSchemaOf(schema.body)));
      if (schema.query) {
        const params = (d.parameters as Array<{ name: string; in: string; schema: unknown }>).filter((p) => p.in === "query");
        expect(
          params.map((p) => p.name),
          what,
        ).toEqual(Object.keys(schema.query.shape));
        expect(
          params.map((p) => p.schema),
          what,
        ).toEqual(queryParamsOf(route).map((p) => p.schema));
        for (const [name, prop] of Object.entries((jsonSchemaOf(schema.query) as { properties: Record<string, object> }).properties))
          expect(params.find((p) => p.name === name)!.schema, `${what} ${name}`).toMatchObject(
            Object.fromEntries(Object.entries(prop).filter(([k]) => k !== "description")),
          );
      }
      // the MCP tool that is this operation takes the same schema (its fields as they are, plus the path's id)
      if (route.operationId !== op) continue;
      const found = CATALOG.find((t) => t.operations.length === 1 && t.operations[0] === route.operationId);
      expect(found, what).toBeDefined();
      const tool = found!;
      if (op === "commons_build") {
        // the helper's argument object, nested: {id, args} (the body is the object itself, checked by the helper)
        expect(Object.keys(tool.input.shape).sort(), what).toEqual(["args", "id"]);
        continue;
      }
      const own = (schema.body ?? schema.query)!;
      if (tool.input === own) continue;
      for (const [k, v] of Object.entries(tool.input.shape)) {
        if (PATH_ARGS.has(k) && !(k in own.shape)) continue;
        expect(v, `${tool.name}.${k}`).toBe(own.shape[k]);
      }
      expect(
        Object.keys(own.shape).every((k) => k in tool.input.shape),
        tool.name,
      ).toBe(true);
    }
  });

  it("writes each limit and pattern of these families once in src/", () => {
    expect(countInSrc("rec_[0-9a-f]{16}")).toBe(1); // commons/text-rules.ts REC_ID_RE
    expect(countInSrc("max: 4000")).toBe(1); // the board message: commons/text-rules.ts TEXT.message
    expect(countInSrc("maxLength: 4000")).toBe(0); // no hand-written JSON Schema copy of it
    expect(countInSrc("[\\p{L}\\p{N}_-]{1,32}")).toBe(1); // the topic: TOPIC_RE
  });
});

// ---- hostile requests through the request path -------------------------------------------------------------------

const str = fc.oneof(
  fc.string({ maxLength: 12 }),
  fc.string({ unit: "grapheme", minLength: 190, maxLength: 260 }),
  fc.constantFrom(
    "",
    " ",
    "a\nb",
    "hi\u200b there",
    "%41%42%43%44%45%46%47",
    "aGVsbG8gd29ybGQgdGhpcyBpcyBhIGxvbmcgYmFzZTY0IGJsb2I=",
    "rec_xyz",
  ),
);
const num = fc.oneof(
  fc.integer({ min: -5, max: 100_000_000 }),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.constantFrom(0, 1, 1.5),
);
const scalar = fc.oneof(fc.constant(null), fc.boolean(), num, str);
const anything = fc.oneof(scalar, fc.array(scalar, { maxLength: 3 }), fc.dictionary(fc.string({ maxLength: 6 }), scalar, { maxKeys: 3 }));
/** Blocked or unresolvable addresses only: a generated site or profile url never reaches the network. */
const address = fc.constantFrom(
  "10.0.0.1",
  "127.0.0.1",
  "http://127.0.0.1:1/ask",
  "https://169.254.169.254/",
  "not a domain!",
  "localhost",
  "",
);
const day = 86_400_000;
const slot = () => new Date(Math.ceil(Date.now() / 3_600_000) * 3_600_000 + day).toISOString();

/** A plausible-or-hostile value per argument name; anything for the rest. */
function arbOf(name: string): fc.Arbitrary<unknown> {
  const good: Record<string, fc.Arbitrary<unknown>> = {
    agent: fc.constantFrom("tester", "Agent (x)", "<b>eve</b>", "a".repeat(65)),
    message: fc.constantFrom("A plain message to the board.", "z".repeat(300)),
    note: fc.constantFrom("Working on the parser.", "two\nlines"),
    why: fc.constantFrom("It cites the wrong page."),
    subject: fc.constantFrom("A subject", "a\nb"),
    topic: fc.constantFrom("parsing", "two words"),
    reply_to: fc.constantFrom(() => post, "rec_0123456789abcdef"),
    post: fc.constantFrom(() => post, "rec_0123456789abcdef"),
    thread: fc.constantFrom(() => post, "rec_0123456789abcdef"),
    verdict: fc.constantFrom("useful", "disputed", "great"),
    outcome: fc.constantFrom("worked", "failed", "great"),
    mode: fc.constantFrom("list", "generate", "shout"),
    target: fc.constantFrom("example.com", "https://api.example.com/v1", "ftp://x", "not a domain!"),
    url: address,
    site: address,
    logo: address,
    latency_ms: fc.constantFrom(0, 120, -1, 86_400_001),
    filename: fc.constantFrom("data.csv", "../etc/passwd", "notes.md"),
    content: fc.oneof(fc.constantFrom("a,b\n1,2\n", ""), fc.array(fc.array(scalar, { maxLength: 2 }), { maxLength: 2 })),
    q: fc.constantFrom("plumber bristol", "parser"),
    category: fc.constantFrom("Plumber", "Dentist"),
    limit: fc.constantFrom(1, 5, 1000, 0, "x", ""),
    offset: fc.constantFrom(0, 3, -1, 2_000_000),
    start: fc.constantFrom(slot, () => new Date(Date.now() + 2 * day).toISOString(), "2026-06-01T09:00:00", "yesterday"),
    end: fc.constantFrom(
      () => new Date(Date.now() + 3 * day).toISOString(),
      () => new Date(Date.now() + 30 * day).toISOString(),
    ),
    customer: fc.oneof(
      fc.constant({ name: "Ana", email: "ana@customer.example" }),
      fc.record({ name: str, email: str, phone: str }, { requiredKeys: [] }),
    ),
    customer_confirmed: fc.constantFrom(true, false, "true"),
    answers: fc.oneof(fc.constant({}), fc.dictionary(str, scalar, { maxKeys: 2 })),
    owner: fc.oneof(fc.constant({ name: "Owner", email: "owner@oak.example" }), fc.record({ name: str, email: str }, { requiredKeys: [] })),
    fields: fc.oneof(
      fc.constant({ phone: "+44 20 7946 0111" }),
      fc.constant(["name", "category"]),
      fc.dictionary(fc.constantFrom("phone", "color", "email", "name"), scalar, { maxKeys: 2 }),
    ),
    booking: fc.oneof(fc.constant(null), fc.record({ utc_offset: str, hours: anything, slot_minutes: num }, { requiredKeys: [] })),
    listed: fc.constantFrom(true, false, "yes"),
    id: fc.constantFrom("rec_0123456789abcdef", "line-folder", ""),
  };
  const g = good[name];
  const resolved = g === undefined ? anything : g.map((v) => (typeof v === "function" ? (v as () => unknown)() : v));
  return fc.oneof({ weight: 3, arbitrary: resolved }, { weight: 1, arbitrary: anything });
}
const argsOf = (names: string[]) =>
  fc.record(Object.fromEntries(names.map((n) => [n, arbOf(n)])), { requiredKeys: [] }) as fc.Arbitrary<Record<string, unknown>>;

/** Everything these families store, as readers see it. */
const snapshot = async () =>
  JSON.stringify(
    await Promise.all(
      [
        "/v1/board?limit=200",
        "/v1/trust/recent?limit=100",
        "/v1/board/files?limit=500",
        "/v1/board/agents?limit=1000",
        "/v1/board/working",
        `/api/businesses/${BIZ}`,
        `/api/businesses/${OTHER}`,
        `/api/admin/businesses/${BIZ}/requests`,
      ].map(async (u) => (await send("GET", u)).body),
    ),
  );

let client = 0;
describe("hostile bodies and queries through the request path (property, fixed seed)", () => {
  it("get a 2xx or a 4xx with a stable code and the field; never a 5xx; a refusal stores nothing", async () => {
    const codes = new Set(Object.keys(ERRORS));
    const tally = { ok: 0, refused: 0 };
    for (const { route, op } of converted()) {
      if (route.rawBody || route.operationId === "commons_build") continue; // helper runs and raw uploads: their own tests
      const schema = OPS[op]!;
      const names = Object.keys((schema.body ?? schema.query)!.shape);
      const ids = fc.constantFrom(BIZ, OTHER, "no-such-business");
      await fc.assert(
        fc.asyncProperty(argsOf(names), ids, async (args, id) => {
          let url = route.path.replace("{id}", id);
          if (schema.query) {
            const q = new URLSearchParams();
            for (const [k, v] of Object.entries(args))
              if (v !== undefined) q.set(k, typeof v === "object" && v !== null ? JSON.stringify(v) : String(v));
            url += `?${q}`;
          }
          const before = await snapshot();
          const r = await send(route.method.toUpperCase(), url, schema.body ? args : undefined, `10.9.${client >> 8}.${client++ & 255}`);
          const label = `${route.operationId} ${url} ${JSON.stringify(args).slice(0, 300)} -> ${r.status} ${JSON.stringify(r.body).slice(0, 300)}`;
          expect(r.status, label).toBeLessThan(500);
          if (r.status < 300) {
            tally.ok++;
            return;
          }
          tally.refused++;
          expect(r.status, label).toBeGreaterThanOrEqual(400);
          expect(codes.has(r.body.error?.code), label).toBe(true);
          expect(typeof r.body.error.field === "string" && r.body.error.field !== "", label).toBe(true);
          expect(await snapshot(), label).toBe(before);
        }),
        { seed: 34, numRuns: 40 },
      );
    }
    // not vacuous: both verdicts occur
    expect(tally.ok).toBeGreaterThan(20);
    expect(tally.refused).toBeGreaterThan(100);
  }, 600_000);
});
