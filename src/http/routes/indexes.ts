/** @module routes/indexes — the Pinecone-compatible /v1/indexes layer: control plane (snake_case) and data plane (camelCase). */
import type { FetchedVector } from "../../engine/collection.js";
import { SvcError } from "../../errors.js";
import { DEFAULT_PAGE, DEFAULT_TOP_K } from "../../input-rules.js";
import type { IndexCatalog, IndexRecord } from "../../memory/indexes.js";
import { checkSparse, MAX_SPARSE_INDEX_NNZ, MAX_SPARSE_NNZ, sparseBytes, sparseJson, sparseOf } from "../../engine/sparse.js";
import { upsertValuesBuffer } from "../../engine/upsert-buffers.js";
import type { ReadOptions, VectorIndex, Written } from "../../memory/vector-index.js";
import { countIn, type RequestContext, type Route, type Schema } from "../route.js";
import { INDEX_OPS } from "../../tools/index-ops.js";
import * as S from "./schemas.js";

/** Pinecone's name for the namespace "" (both spellings reach the same namespace). */
export const DEFAULT_NAMESPACE = "__default__";
/**
 * Read-your-writes in cluster mode: a write answers with the log sequence it was acknowledged at in
 * LOG_SEQ_HEADER; a read sending it back in AFTER_HEADER sees that write on every shard. On one node
 * neither is used (every acknowledged write is visible within milliseconds).
 */
export const LOG_SEQ_HEADER = "x-svc-log-seq";
export const AFTER_HEADER = "x-svc-after";

/** The read options of a request: its AFTER_HEADER (index and record routes). */
export function readOptions(ctx: RequestContext): ReadOptions {
  const v = ctx.headers?.[AFTER_HEADER];
  if (v === undefined || v === "") return {};
  const after = Number(v);
  if (!Number.isSafeInteger(after) || after < 0)
    throw new SvcError("E_BAD_REQUEST", `${AFTER_HEADER} must be a log sequence (a non-negative integer) from ${LOG_SEQ_HEADER}`, {
      field: AFTER_HEADER,
    });
  return { after };
}

/** The reply headers of a write: its LOG_SEQ_HEADER when the store returned one (cluster mode). */
export function seqHeaders(w: Written): Record<string, string> | undefined {
  return w.seq === undefined ? undefined : { [LOG_SEQ_HEADER]: String(w.seq) };
}

export function indexRoutes(indexes: IndexCatalog): Route[] {
  const tenant = (ctx: RequestContext) => ctx.principal.tenant;
  const name = (ctx: RequestContext) => ctx.params.name!;
  const use = <T>(ctx: RequestContext, fn: (ix: VectorIndex) => T | Promise<T>) => indexes.use(tenant(ctx), name(ctx), fn);
  const read = readOptions;
  const model = (ctx: RequestContext, r: IndexRecord) => indexModel(ctx.baseUrl, r);

  const upsert = async (ctx: RequestContext, namespace: unknown) => {
    const vectors = object(ctx.body).vectors as Record<string, unknown>[]; // INDEX_OPS.upsert: 1..MAX_UPSERT_VECTORS objects
    const res = await use(ctx, (ix) => {
      const bins = binaryFloats(vectors);
      const maxNnz = nnzLimit(ix);
      const input = vectors.map((v, i) => {
        const { id, values, metadata, sparseValues } = v;
        // Sparse values live in the row's payload (engine/sparse.ts); checked here so a bad one fails the batch before anything is logged.
        // A record may leave values out when it has sparse values (a sparse index's records have none; the index says which it takes).
        const payload =
          sparseValues === undefined ? undefined : sparseBytes(checkSparse(sparseValues, `vectors[${i}].sparseValues`, maxNnz));
        return {
          id: id as string,
          ...(values === undefined && (payload !== undefined || ix.vectorType === "sparse")
            ? {}
            : { values: floats(values, `vectors[${i}].values`, bins) }),
          metadata,
          ...(payload === undefined ? {} : { payload }),
        };
      });
      return ix.upsert(ns(namespace), input);
    });
    ctx.usage.written = res.upsertedCount;
    return { body: { upsertedCount: res.upsertedCount }, headers: seqHeaders(res) };
  };

  /** An upsert writes at most the vectors it sends. */
  const upsertBound = (ctx: RequestContext) => ({ written: countIn(ctx.body, "vectors") });

  const control: Route[] = [
    {
      method: "post",
      path: "/v1/indexes",
      operationId: "create_index",
      summary: "Create an index",
      tags: ["indexes"],
      auth: "tenant",
      meter: "create_index",
      input: INDEX_OPS.create_index,
      response: { status: 201, schema: S.indexModel, description: "The new index (ready at once)" },
      async handle(ctx) {
        const b = object(ctx.body);
        const r = await indexes.create(tenant(ctx), {
          name: b.name,
          dimension: b.dimension,
          vectorType: b.vector_type,
          metric: b.metric,
          spec: b.spec,
          deletionProtection: b.deletion_protection,
          tags: b.tags,
        });
        return { status: 201, body: model(ctx, r) };
      },
    },
    {
      method: "get",
      path: "/v1/indexes",
      operationId: "list_indexes",
      summary: "List the tenant's indexes",
      tags: ["indexes"],
      auth: "tenant",
      response: {
        status: 200,
        schema: { type: "object", properties: { indexes: { type: "array", items: S.indexModel } } },
        description: "Every index of the tenant",
      },
      handle: async (ctx) => ({ body: { indexes: (await indexes.list(tenant(ctx))).map((r) => model(ctx, r)) } }),
    },
    {
      method: "get",
      path: "/v1/indexes/{name}",
      operationId: "describe_index",
      summary: "Describe an index",
      tags: ["indexes"],
      auth: "tenant",
      response: { status: 200, schema: S.indexModel, description: "The index" },
      handle: async (ctx) => ({ body: model(ctx, await indexes.describe(tenant(ctx), name(ctx))) }),
    },
    {
      method: "patch",
      path: "/v1/indexes/{name}",
      operationId: "configure_index",
      summary: "Change deletion protection or tags",
      tags: ["indexes"],
      auth: "tenant",
      input: INDEX_OPS.configure_index,
      response: { status: 200, schema: S.indexModel, description: "The index as changed" },
      async handle(ctx) {
        const b = object(ctx.body);
        return {
          body: model(ctx, await indexes.configure(tenant(ctx), name(ctx), { deletionProtection: b.deletion_protection, tags: b.tags })),
        };
      },
    },
    {
      method: "delete",
      path: "/v1/indexes/{name}",
      operationId: "delete_index",
      summary: "Delete an index and all its vectors",
      tags: ["indexes"],
      auth: "tenant",
      response: { status: 202, description: "Deleted (empty body)" },
      async handle(ctx) {
        await indexes.delete(tenant(ctx), name(ctx));
        return { status: 202 };
      },
    },
  ];

  const data: Route[] = [
    {
      method: "post",
      path: "/v1/indexes/{name}/vectors/upsert",
      operationId: "upsert",
      summary: "Insert or replace vectors",
      tags: ["vectors"],
      auth: "tenant",
      meter: "upsert",
      usageBound: upsertBound,
      proto: { request: "UpsertRequest", response: "UpsertResponse" },
      input: INDEX_OPS.upsert,
      response: { status: 200, schema: S.upsertResponse, description: "Acknowledged: durable, visible to queries within milliseconds" },
      upsertBody: true,
      handle: (ctx) => upsert(ctx, object(ctx.body).namespace),
    },
    {
      method: "post",
      path: "/v1/indexes/{name}/namespaces/{namespace}/upsert",
      operationId: "upsert_namespace",
      summary: "Insert or replace vectors in the namespace named by the path",
      tags: ["vectors"],
      auth: "tenant",
      meter: "upsert",
      usageBound: upsertBound,
      proto: { request: "UpsertRequest", response: "UpsertResponse" },
      input: INDEX_OPS.upsert,
      response: { status: 200, schema: S.upsertResponse, description: "Acknowledged" },
      upsertBody: true,
      handle: (ctx) => upsert(ctx, ctx.params.namespace),
    },
    {
      method: "post",
      path: "/v1/indexes/{name}/query",
      operationId: "query",
      summary:
        "Nearest vectors by the index's metric, by vector or by the id of a stored vector, with an optional metadata filter; with sparseVector on a dotproduct index, scored dense dot + sparse dot product (exact scan); on a sparse index, by sparse dot product (postings)",
      tags: ["vectors"],
      auth: "tenant",
      meter: "query",
      readOnly: true,
      proto: { request: "QueryRequest", response: "QueryResponse" },
      queryBody: true,
      // A query scans at most the namespace's live rows (Collection.query caps `scanned` there).
      usageBound: async (ctx) => {
        const b = typeof ctx.body === "object" && ctx.body !== null ? (ctx.body as Record<string, unknown>) : {};
        return { scanned: await use(ctx, (ix) => ix.count(ns(b.namespace), undefined, read(ctx))) };
      },
      input: INDEX_OPS.query,
      response: { status: 200, schema: S.queryResponse, description: "Matches, best first" },
      async handle(ctx) {
        const b = object(ctx.body);
        if (b.vector !== undefined && b.id !== undefined)
          throw new SvcError("E_BAD_REQUEST", "give either vector or id, not both", { field: "id" });
        if (b.vector === undefined && b.id === undefined && b.sparseVector === undefined)
          throw new SvcError("E_BAD_REQUEST", "give vector (numbers), id (a stored vector's id) or sparseVector", { field: "vector" });
        const topK = (b.topK as number | null | undefined) ?? DEFAULT_TOP_K;
        const namespace = ns(b.namespace);
        const vector = b.vector === undefined ? undefined : floats(b.vector, "vector");
        const res = await use(ctx, (ix) => {
          if (b.sparseVector !== undefined) checkSparse(b.sparseVector, "sparseVector", nnzLimit(ix)); // here too: a shard would name it the same, but before any fan-out
          return ix.query(
            namespace,
            {
              vector,
              id: b.id as string | undefined,
              topK,
              filter: b.filter, // expired vectors (svc_expires_at <= now) never match
              includeValues: b.includeValues === true,
              includeMetadata: b.includeMetadata === true,
              exact: b.exact === true,
              ...(b.sparseVector === undefined ? {} : { sparseVector: b.sparseVector }),
            },
            read(ctx),
          );
        });
        ctx.usage.scanned = res.scanned;
        return {
          body: {
            matches: res.matches,
            namespace: typeof b.namespace === "string" ? b.namespace : "",
            usage: { readUnits: readUnits(res.scanned) },
          },
        };
      },
    },
    {
      method: "get",
      path: "/v1/indexes/{name}/vectors/fetch",
      operationId: "fetch",
      summary: "Vectors by id (values exactly as stored, float32)",
      tags: ["vectors"],
      auth: "tenant",
      meter: "fetch",
      proto: { response: "FetchResponse" },
      input: INDEX_OPS.fetch,
      response: { status: 200, schema: S.fetchResponse, description: "The vectors found, by id; missing ids are left out" },
      async handle(ctx) {
        const ids = ctx.query.getAll("ids"); // INDEX_OPS.fetch: 1..MAX_FETCH_IDS ids
        const namespace = ctx.query.get("namespace") ?? "";
        const found = await use(ctx, (ix) => ix.fetch(ns(namespace), ids, read(ctx))); // expired vectors are left out
        const vectors: Record<string, ReturnType<typeof wireVector>> = {};
        for (const v of found) vectors[v.id] = wireVector(v);
        return { body: { vectors, namespace, usage: { readUnits: Math.max(1, found.length) } } };
      },
    },
    {
      method: "get",
      path: "/v1/indexes/{name}/vectors/list",
      operationId: "list_vectors",
      summary: "Ids of a namespace's vectors in id order (UTF-8 bytes), optionally only those starting with a prefix, paginated",
      tags: ["vectors"],
      auth: "tenant",
      meter: "list_vectors",
      input: INDEX_OPS.list_vectors,
      response: { status: 200, schema: S.listResponse, description: "One page of ids; pagination.next when more remain" },
      async handle(ctx) {
        const limit = pageLimit(ctx.query.get("limit"));
        const prefix = ctx.query.get("prefix") ?? "";
        const after = pageToken(ctx.query.get("paginationToken") ?? ctx.query.get("pagination_token"));
        const namespace = ctx.query.get("namespace") ?? "";
        const page = await use(ctx, (ix) => ix.list(ns(namespace), { prefix, after, limit }, read(ctx))); // expired vectors are left out
        return { body: { vectors: page.ids.map((id) => ({ id })), ...nextPage(page), namespace, usage: { readUnits: 1 } } };
      },
    },
    {
      method: "post",
      path: "/v1/indexes/{name}/vectors/fetch_by_metadata",
      operationId: "fetch_by_metadata",
      summary: "Vectors matching a metadata filter, in id order, paginated",
      tags: ["vectors"],
      auth: "tenant",
      meter: "fetch_by_metadata",
      readOnly: true,
      input: INDEX_OPS.fetch_by_metadata,
      response: {
        status: 200,
        schema: S.fetchByMetadataResponse,
        description: "One page of the matching vectors, by id; pagination.next when more remain",
      },
      async handle(ctx) {
        const b = object(ctx.body);
        requireFilter(b.filter);
        const limit = (b.limit as number | null | undefined) ?? DEFAULT_PAGE;
        const after = pageToken((b.paginationToken as string | undefined) ?? null);
        const namespace = ns(b.namespace);
        const { page, found } = await use(ctx, async (ix) => {
          const page = await ix.list(namespace, { after, limit, filter: b.filter }, read(ctx));
          return { page, found: page.ids.length === 0 ? [] : await ix.fetch(namespace, page.ids, read(ctx)) };
        });
        const vectors: Record<string, ReturnType<typeof wireVector>> = {};
        for (const v of found) vectors[v.id] = wireVector(v);
        return {
          body: {
            vectors,
            namespace: typeof b.namespace === "string" ? b.namespace : "",
            ...nextPage(page),
            usage: { readUnits: Math.max(1, found.length) },
          },
        };
      },
    },
    {
      method: "post",
      path: "/v1/indexes/{name}/vectors/update",
      operationId: "update",
      summary:
        "By id: replace a vector's values and/or merge metadata into it; by filter: merge metadata into every matching vector (dryRun: only count them)",
      tags: ["vectors"],
      auth: "tenant",
      meter: "update",
      usageBound: () => ({ written: 1 }),
      input: INDEX_OPS.update,
      response: { status: 200, schema: S.updateResponse, description: "Updated: {} by id, {matchedRecords} by filter" },
      async handle(ctx) {
        const b = object(ctx.body);
        if (b.filter !== undefined) {
          if (b.id !== undefined)
            throw new SvcError("E_BAD_REQUEST", "give either id (one vector) or filter (every matching vector), not both", { field: "id" });
          if (b.values !== undefined || b.sparseValues !== undefined)
            throw new SvcError("E_BAD_REQUEST", "values cannot be updated by filter (only setMetadata); update by id instead", {
              field: b.values !== undefined ? "values" : "sparseValues",
            });
          requireFilter(b.filter);
          const w = await use(ctx, (ix) =>
            ix.updateWhere(ns(b.namespace), { filter: b.filter, setMetadata: b.setMetadata, dryRun: b.dryRun === true }),
          );
          ctx.usage.written = 0; // metadata only, as an update by id without values
          return { body: { matchedRecords: w.matched }, headers: seqHeaders(w) };
        }
        if (b.dryRun !== undefined) throw new SvcError("E_BAD_REQUEST", "dryRun applies to an update by filter", { field: "dryRun" });
        if (b.id === undefined)
          throw new SvcError("E_BAD_REQUEST", "give id (one vector) or filter (every matching vector)", { field: "id" });
        const values = b.values === undefined ? undefined : floats(b.values, "values");
        const w = await use(ctx, (ix) => {
          const payload = b.sparseValues === undefined ? undefined : sparseBytes(checkSparse(b.sparseValues, "sparseValues", nnzLimit(ix)));
          return ix.update(ns(b.namespace), { id: b.id as string, values, setMetadata: b.setMetadata, payload });
        });
        ctx.usage.written = b.values === undefined && b.sparseValues === undefined ? 0 : 1;
        return { body: {}, headers: seqHeaders(w) };
      },
    },
    {
      method: "post",
      path: "/v1/indexes/{name}/vectors/delete",
      operationId: "delete",
      summary: "Delete vectors by ids, by metadata filter, or all in a namespace",
      tags: ["vectors"],
      auth: "tenant",
      meter: "delete",
      input: INDEX_OPS.delete,
      response: { status: 200, schema: { type: "object" }, description: "Deleted ({})" },
      async handle(ctx) {
        const b = object(ctx.body);
        const given = [b.ids !== undefined, b.filter !== undefined, b.deleteAll === true].filter(Boolean).length;
        if (given !== 1) throw new SvcError("E_BAD_REQUEST", "give exactly one of ids, filter or deleteAll: true", { field: "ids" });
        const w = await use(ctx, (ix) =>
          ix.delete(ns(b.namespace), { ids: b.ids as string[] | undefined, filter: b.filter, deleteAll: b.deleteAll === true }),
        );
        return { body: {}, headers: seqHeaders(w) };
      },
    },
    ...(["get", "post"] as const).map((method): Route => ({
      method,
      path: "/v1/indexes/{name}/describe_index_stats",
      operationId: method === "get" ? "describe_index_stats_get" : "describe_index_stats",
      summary: "Vector counts per namespace (POST: optionally only those matching a filter)",
      tags: ["vectors"],
      auth: "tenant",
      meter: "describe_index_stats",
      readOnly: true,
      ...(method === "post" ? { input: INDEX_OPS.describe_index_stats } : {}),
      response: { status: 200, schema: S.statsResponse, description: "Counts" },
      async handle(ctx) {
        const filter = method === "post" && ctx.body !== undefined ? object(ctx.body).filter : undefined;
        const { s, vectorType } = await use(ctx, async (ix) => ({
          s: await ix.stats(filter, read(ctx)),
          vectorType: ix.vectorType ?? "dense",
        }));
        const namespaces: Record<string, { vectorCount: number }> = Object.create(null);
        for (const [n, v] of Object.entries(s.namespaces)) namespaces[n === "" ? DEFAULT_NAMESPACE : n] = v;
        return {
          body: {
            namespaces,
            dimension: s.dimension,
            indexFullness: 0,
            totalVectorCount: s.totalVectorCount,
            metric: s.metric,
            vectorType,
          },
        };
      },
    })),
    {
      method: "get",
      path: "/v1/indexes/{name}/namespaces",
      operationId: "list_namespaces",
      summary: "Namespaces holding vectors, by name, paginated",
      tags: ["namespaces"],
      auth: "tenant",
      meter: "list_namespaces",
      input: INDEX_OPS.list_namespaces,
      response: { status: 200, schema: S.namespaceList, description: "One page of namespaces" },
      async handle(ctx) {
        const limit = pageLimit(ctx.query.get("limit"));
        const token = ctx.query.get("paginationToken") ?? ctx.query.get("pagination_token");
        const after = token === null ? null : fromToken(token);
        const prefix = ctx.query.get("prefix") ?? "";
        const all = Object.entries((await use(ctx, (ix) => ix.stats(undefined, read(ctx)))).namespaces)
          .map(([n, v]) => ({ name: n === "" ? DEFAULT_NAMESPACE : n, record_count: v.vectorCount }))
          .filter((n) => n.name.startsWith(prefix))
          .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
        const rest = after === null ? all : all.filter((n) => n.name > after);
        const page = rest.slice(0, limit);
        return {
          body: {
            namespaces: page,
            ...(rest.length > limit ? { pagination: { next: toToken(page.at(-1)!.name) } } : {}),
            total_count: all.length,
          },
        };
      },
    },
    {
      method: "get",
      path: "/v1/indexes/{name}/namespaces/{namespace}",
      operationId: "describe_namespace",
      summary: "One namespace's vector count",
      tags: ["namespaces"],
      auth: "tenant",
      meter: "describe_namespace",
      response: { status: 200, schema: S.namespaceDescription, description: "The namespace" },
      async handle(ctx) {
        const n = ns(ctx.params.namespace);
        const count = (await use(ctx, (ix) => ix.stats(undefined, read(ctx)))).namespaces[n]?.vectorCount;
        if (count === undefined)
          throw new SvcError("E_NOT_FOUND", `no namespace '${ctx.params.namespace}' in index '${name(ctx)}'`, { field: "namespace" });
        return { body: { name: ctx.params.namespace, record_count: count } };
      },
    },
    {
      method: "delete",
      path: "/v1/indexes/{name}/namespaces/{namespace}",
      operationId: "delete_namespace",
      summary: "Delete a namespace and its vectors",
      tags: ["namespaces"],
      auth: "tenant",
      meter: "delete_namespace",
      response: { status: 202, schema: { type: "object" }, description: "Deleted ({})" },
      async handle(ctx) {
        const n = ns(ctx.params.namespace);
        const w = await use(ctx, async (ix) => {
          if ((await ix.stats(undefined, read(ctx))).namespaces[n] === undefined)
            throw new SvcError("E_NOT_FOUND", `no namespace '${ctx.params.namespace}' in index '${name(ctx)}'`, { field: "namespace" });
          return ix.delete(n, { deleteAll: true });
        });
        return { status: 202, body: {}, headers: seqHeaders(w) };
      },
    },
  ];
  return [...control, ...data];
}

/** Pinecone's IndexModel, snake_case. `host` points back at this server so data-plane calls land on /v1/indexes/{name}/... */
function indexModel(baseUrl: string, r: IndexRecord): Record<string, unknown> {
  return {
    name: r.name,
    ...(r.vectorType === "sparse" ? {} : { dimension: r.dimension }), // a sparse index has none (Pinecone leaves it out)
    metric: r.metric,
    host: `${baseUrl}/v1/indexes/${r.name}`,
    spec: r.spec,
    status: { ready: true, state: "Ready" },
    vector_type: r.vectorType ?? "dense",
    deletion_protection: r.deletionProtection,
    tags: r.tags,
    deployment: deployment(r.spec),
    schema: { fields: {} },
    created_at: new Date(r.createdAt).toISOString(),
  };
}

/** The newer API's `deployment` block, derived from the spec it was created with. */
function deployment(spec: Record<string, unknown>): Record<string, unknown> {
  const serverless = spec.serverless as { cloud?: unknown; region?: unknown } | undefined;
  if (serverless !== undefined) return { deployment_type: "serverless", cloud: serverless.cloud, region: serverless.region };
  return { deployment_type: Object.keys(spec)[0] ?? "serverless" };
}

function wireVector(v: FetchedVector): {
  id: string;
  values: number[];
  sparseValues?: { indices: number[]; values: number[] };
  metadata?: Record<string, unknown>;
} {
  const sparse = sparseOf(v.payload);
  return {
    id: v.id,
    values: Array.from(v.values),
    ...(sparse === null ? {} : { sparseValues: sparseJson(sparse) }),
    ...(Object.keys(v.metadata).length > 0 ? { metadata: v.metadata } : {}),
  };
}

/** Most entries of a sparse vector sent to this index: Pinecone's limits (2048 on a sparse index, 1000 on a dense one). */
function nnzLimit(ix: VectorIndex): number {
  return ix.vectorType === "sparse" ? MAX_SPARSE_INDEX_NNZ : MAX_SPARSE_NNZ;
}

function object(body: unknown): Record<string, unknown> {
  if (typeof body !== "object" || body === null || Array.isArray(body) || body instanceof Uint8Array) {
    throw new SvcError("E_BAD_REQUEST", "the body must be an object", { field: "body" });
  }
  return body as Record<string, unknown>;
}

/** "" and "__default__" are one namespace, stored as "". A body's or query's namespace was checked by its INDEX_OPS schema; one in the path by the engine. */
function ns(v: unknown): string {
  return v === undefined || v === null || v === DEFAULT_NAMESPACE ? "" : (v as string);
}

/**
 * Copies binary (little-endian float32) values into aligned Float32Arrays. The bytes of a
 * batch's binary values share one buffer, sized for all of them up front: one allocation per
 * request instead of one ArrayBuffer per vector, which dominated the main thread's CPU per vector
 * of a msgpack upsert (allocation and the garbage collection of a thousand small backing stores).
 * The buffer comes from upsertValuesBuffer: when every vector's values are such a bin of the
 * right length, the collection takes it as the batch's rows (no second copy of 4 KB a vector).
 */
function binaryFloats(vectors: readonly unknown[]): (v: Uint8Array) => Float32Array {
  let total = 0;
  for (const vec of vectors) {
    const values = typeof vec === "object" && vec !== null ? (vec as Record<string, unknown>).values : undefined;
    if (values instanceof Uint8Array && values.byteLength % 4 === 0) total += values.byteLength;
  }
  const buf = new Uint8Array(upsertValuesBuffer(total));
  let at = 0;
  return (v) => {
    if (at + v.byteLength > total) return ownFloats(v); // not counted above (a getter's changing value, say)
    buf.set(v, at);
    const f = new Float32Array(buf.buffer, at, v.byteLength / 4);
    at += v.byteLength;
    return f;
  };
}

/** A copy of its own: a binary value is an unaligned view into the request body (and Buffer's slice() would be a view too). */
function ownFloats(v: Uint8Array): Float32Array {
  const copy = new Uint8Array(v.byteLength);
  copy.set(v);
  return new Float32Array(copy.buffer);
}

/**
 * A vector's values as sent: an array of numbers (JSON, msgpack, protobuf), a msgpack bin of little-endian float32,
 * (svc extension, JSON) a base64 string of little-endian float32, which spares the server parsing 1024 decimal
 * numbers per vector (docs/API.md "Codecs"), or (a JSON upsert read by upsert-json.ts) a Float32Array already.
 * Lengths, finiteness and the dimension are checked by the engine.
 */
function floats(v: unknown, field: string, copy: (v: Uint8Array) => Float32Array = ownFloats): ArrayLike<number> {
  if (v instanceof Float32Array) return v; // a JSON upsert's values, read by upsert-json.ts
  if (v instanceof Uint8Array) {
    if (v.byteLength % 4 !== 0)
      throw new SvcError("E_BAD_REQUEST", `${field} as binary must be little-endian float32 (a multiple of 4 bytes)`, { field });
    return copy(v);
  }
  if (typeof v === "string") {
    // Padded base64 of n bytes has 4 * ceil(n / 3) characters. Node's decoder skips characters outside the alphabet
    // and stops at a "=" inside, so any such string decodes to fewer bytes than its length implies (a regular
    // expression over the string cost 40 µs per 1024-d vector; this check is free).
    const bytes = new Uint8Array(v.length % 4 === 0 ? (v.length / 4) * 3 - (v.endsWith("==") ? 2 : v.endsWith("=") ? 1 : 0) : 0);
    if (v.length % 4 !== 0 || Buffer.from(bytes.buffer, 0, bytes.length).write(v, "base64") !== bytes.length) {
      throw new SvcError("E_BAD_REQUEST", `${field} as a string must be base64 (RFC 4648, padded) of little-endian float32`, { field });
    }
    if (bytes.length % 4 !== 0)
      throw new SvcError(
        "E_BAD_REQUEST",
        `${field} as base64 must hold little-endian float32 (a multiple of 4 bytes, got ${bytes.length})`,
        { field },
      );
    return new Float32Array(bytes.buffer);
  }
  // Absent (a dense index's record without values) or not numbers: the elements were checked by fields.ts `values`.
  if (!Array.isArray(v))
    throw new SvcError("E_BAD_REQUEST", `${field} must be an array of numbers (or base64 of little-endian float32)`, { field });
  return v as number[];
}

/** A query's `limit` (checked by its INDEX_OPS schema), or the default page. */
function pageLimit(v: string | null): number {
  return v === null ? DEFAULT_PAGE : Number(v);
}

/** A filter that selects: an object with at least one condition (E_FILTER otherwise; its conditions are checked by the engine). */
function requireFilter(filter: unknown): void {
  if (typeof filter !== "object" || filter === null || Array.isArray(filter) || Object.keys(filter).length === 0) {
    throw new SvcError("E_FILTER", "filter must be a non-empty metadata filter object", { field: "filter" });
  }
}

/** The id a paginationToken continues after (null/absent: from the start). */
function pageToken(token: string | null): string | undefined {
  return token === null || token === "" ? undefined : fromToken(token);
}

/** `pagination.next` (the last id, as a token) when more ids remain. */
function nextPage(page: { ids: string[]; more: boolean }): { pagination?: { next: string } } {
  return page.more && page.ids.length > 0 ? { pagination: { next: toToken(page.ids.at(-1)!) } } : {};
}

function toToken(name: string): string {
  return Buffer.from(name).toString("base64url");
}

function fromToken(token: string): string {
  const name = Buffer.from(token, "base64url").toString();
  if (toToken(name) !== token)
    throw new SvcError("E_BAD_REQUEST", "paginationToken is not one this server issued", { field: "paginationToken" });
  return name;
}

/** Pinecone-style read units: 1 per 100k vectors scanned, at least 1. */
function readUnits(scanned: number): number {
  return Math.max(1, Math.ceil(scanned / 100_000));
}

export type { Schema };
