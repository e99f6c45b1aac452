/**
 * @module tools/index-ops — the request schema of each /v1/indexes operation (zod), the one source of its rules:
 * the route parses its body or query with it (http/input.ts), the OpenAPI document shows it, and the MCP tools
 * that are that operation take it as their input (tools/indexes.ts). Cross-field rules (exactly one of ids, filter
 * or deleteAll; a dense index needs values) stay in the handler, rules that depend on the index in the engine.
 */
import { z } from "zod";
import * as F from "./fields.js";

const ns = F.namespace.nullish();

export const INDEX_OPS = {
  create_index: {
    body: z.object({
      name: F.indexName,
      vector_type: F.vectorType
        .nullish()
        .describe(
          "dense (default): float vectors of `dimension` values; sparse: sparseValues only (up to 2048 entries), no dimension, dotproduct, queried by sparseVector, ranked by sparse dot product; single node only (cluster mode refuses it)",
        ),
      dimension: F.dimension.nullish(),
      metric: F.metric
        .nullish()
        .describe(
          "default cosine (dense), dotproduct (sparse: the only one). cosine and dotproduct score larger-first; euclidean scores are squared distances, smaller first. Sparse values on a dense index: dotproduct only",
        ),
      spec: z.record(z.string(), z.unknown()).nullish().describe("Kept as given, e.g. {serverless: {cloud, region}}"),
      deletion_protection: F.deletionProtection.optional(),
      tags: F.indexTags.nullish(),
    }),
  },
  configure_index: {
    body: z.object({ deletion_protection: F.deletionProtection.optional(), tags: F.indexTags.optional() }),
  },
  upsert: {
    // required: a z.unknown() field is optional to zod's JSON Schema; upsertVectors refuses an absent one
    body: z.object({ namespace: ns, vectors: F.upsertVectors }).meta({ required: ["vectors"] }),
  },
  query: {
    body: z.object({
      namespace: ns,
      vector: F.values.optional(),
      id: F.vectorId.optional().describe("Query by a stored vector instead of `vector`"),
      topK: F.topK.nullish(),
      filter: F.filter.nullish(),
      includeValues: z.boolean().optional(),
      includeMetadata: z.boolean().optional(),
      exact: z
        .boolean()
        .optional()
        .describe(
          "The exact float top-k: every live vector (or filter match) scored with its stored values, no 1-bit stage (slow on large namespaces)",
        ),
      sparseVector: F.sparse
        .optional()
        .describe(
          "Dotproduct index: hybrid, score = dot(vector, row) (when vector or id is given) + sparse dot product with the row's sparseValues, an exact scan of the matching rows (cosine/euclidean indexes: 400, as Pinecone). Sparse index: score = sparse dot product, top-k from the index's postings; rows sharing no index with it do not match",
        ),
    }),
  },
  fetch: {
    query: z.object({ ids: F.fetchIds, namespace: F.namespace.optional() }),
  },
  list_vectors: {
    query: z.object({
      prefix: F.prefix.optional().describe("Only ids starting with this"),
      limit: F.pageLimit.optional(),
      paginationToken: F.paginationToken.optional(),
      namespace: F.namespace.optional(),
    }),
  },
  fetch_by_metadata: {
    body: z.object({
      filter: F.filter,
      namespace: ns,
      limit: F.pageLimit.nullish(),
      paginationToken: F.paginationToken.optional(),
    }),
  },
  update: {
    body: z
      .object({
        id: F.vectorId.optional(),
        values: F.values.optional(),
        sparseValues: F.sparse.optional().describe("By id: replaces the vector's sparse values"),
        setMetadata: F.metadata.nullish(),
        namespace: ns,
        filter: F.filter.optional(),
        dryRun: z.boolean().optional().describe("With filter: only count the matching vectors (matchedRecords), change nothing"),
      })
      .describe("Exactly one of id (that vector: values and/or setMetadata) or filter (every matching vector: setMetadata only)"),
  },
  delete: {
    body: z
      .object({ ids: z.array(F.vectorId).nullish(), filter: F.filter.nullish(), deleteAll: z.boolean().optional(), namespace: ns })
      .describe("Exactly one of ids, filter or deleteAll"),
  },
  describe_index_stats: {
    body: z.object({ filter: F.filter.nullish() }),
  },
  list_namespaces: {
    query: z.object({
      limit: F.pageLimit.optional(),
      paginationToken: F.paginationToken.optional(),
      prefix: z.string().optional().describe("Only namespaces whose name starts with this"),
    }),
  },
} satisfies Record<string, { body?: z.ZodObject; query?: z.ZodObject }>;
