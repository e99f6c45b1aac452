/** @module routes/schemas — JSON Schemas of the vector-index bodies, for the OpenAPI document. */
import { METRICS } from "../../memory/indexes.js";
import type { Schema } from "../route.js";

export const filter: Schema = {
  type: "object",
  description: "Metadata filter: {field: value | {$eq|$ne|$gt|$gte|$lt|$lte: v, $in|$nin: [..], $exists: bool}}, combined with $and / $or",
};
const metadata: Schema = {
  type: "object",
  description: "Values: string, finite number, boolean or list of strings; at most 40 KB as JSON",
};
const values: Schema = {
  oneOf: [
    { type: "array", items: { type: "number" } },
    { type: "string", contentEncoding: "binary", description: "msgpack only: a bin of little-endian float32" },
    {
      type: "string",
      contentEncoding: "base64",
      description: "svc extension (JSON): base64 (RFC 4648, padded) of little-endian float32; no per-number parsing",
    },
  ],
};
const sparse: Schema = {
  type: "object",
  required: ["indices", "values"],
  description:
    "Sparse vector: 1..1000 entries (2048 on a sparse index), indices integers in [0, 2^32) strictly ascending (unsorted or repeated: 400), one finite value per index",
  properties: {
    indices: { type: "array", items: { type: "integer", minimum: 0, maximum: 4294967295 } },
    values: { type: "array", items: { type: "number" } },
  },
};
const namespace: Schema = { type: "string", description: 'Namespace; "" and "__default__" are the same (default)' };
const usage: Schema = { type: "object", properties: { readUnits: { type: "integer" } } };

export const indexModel: Schema = {
  type: "object",
  required: ["name", "metric", "host", "spec", "status", "vector_type"],
  properties: {
    name: { type: "string" },
    dimension: { type: "integer", description: "dense indexes only (a sparse index has none)" },
    metric: { type: "string", enum: [...METRICS] },
    host: { type: "string", description: "http URL ending in /v1/indexes/{name}; data-plane paths are relative to it" },
    spec: { type: "object" },
    status: { type: "object", properties: { ready: { type: "boolean" }, state: { type: "string" } } },
    vector_type: { type: "string", enum: ["dense", "sparse"] },
    deletion_protection: { type: "string", enum: ["enabled", "disabled"] },
    tags: { type: ["object", "null"], additionalProperties: { type: "string" } },
    deployment: { type: "object" },
    schema: { type: "object" },
    created_at: { type: "string", format: "date-time" },
  },
};

export const createIndexRequest: Schema = {
  type: "object",
  required: ["name"],
  properties: {
    name: { type: "string", pattern: "^[a-z0-9](?:[a-z0-9-]{0,43}[a-z0-9])?$" },
    dimension: {
      type: "integer",
      minimum: 1,
      maximum: 20000,
      description: "required for a dense index; left out (or null) for a sparse one",
    },
    metric: {
      type: "string",
      enum: [...METRICS],
      description:
        "default cosine (dense), dotproduct (sparse: the only one). cosine and dotproduct score larger-first; euclidean scores are squared distances, smaller first. Sparse values on a dense index: dotproduct only",
    },
    spec: { type: "object", description: "Kept as given, e.g. {serverless: {cloud, region}}" },
    deletion_protection: { type: "string", enum: ["enabled", "disabled"] },
    tags: { type: "object", additionalProperties: { type: "string" } },
    vector_type: {
      type: "string",
      enum: ["dense", "sparse"],
      default: "dense",
      description:
        "sparse: records hold sparseValues only (up to 2048 entries), queried by sparseVector, ranked by sparse dot product; single node only (cluster mode refuses it)",
    },
  },
};

export const configureIndexRequest: Schema = {
  type: "object",
  properties: {
    deletion_protection: { type: "string", enum: ["enabled", "disabled"] },
    tags: { type: "object", additionalProperties: { type: "string" } },
  },
};

export const upsertRequest: Schema = {
  type: "object",
  required: ["vectors"],
  properties: {
    namespace,
    vectors: {
      type: "array",
      minItems: 1,
      maxItems: 10000,
      items: {
        type: "object",
        required: ["id"],
        description:
          "values required on a dense index; a sparse index takes sparseValues and no values (dense values there, or sparseValues on a cosine/euclidean index: 400)",
        properties: { id: { type: "string", maxLength: 512 }, values, sparseValues: sparse, metadata },
      },
    },
  },
};
export const upsertResponse: Schema = { type: "object", properties: { upsertedCount: { type: "integer" } } };

export const queryRequest: Schema = {
  type: "object",
  properties: {
    namespace,
    vector: values,
    id: { type: "string", description: "Query by a stored vector instead of `vector`" },
    topK: { type: "integer", minimum: 1, maximum: 10000, default: 10 },
    filter,
    includeValues: { type: "boolean", default: false },
    includeMetadata: { type: "boolean", default: false },
    exact: {
      type: "boolean",
      default: false,
      description:
        "The exact float top-k: every live vector (or filter match) scored with its stored values, no 1-bit stage (slow on large namespaces)",
    },
    sparseVector: {
      ...sparse,
      description:
        "Dotproduct index: hybrid, score = dot(vector, row) (when vector or id is given) + sparse dot product with the row's sparseValues, an exact scan of the matching rows (cosine/euclidean indexes: 400, as Pinecone). Sparse index: score = sparse dot product, top-k from the index's postings; rows sharing no index with it do not match",
    },
  },
};
export const queryResponse: Schema = {
  type: "object",
  properties: {
    matches: {
      type: "array",
      items: {
        type: "object",
        properties: {
          id: { type: "string" },
          score: { type: "number" },
          values: { type: "array", items: { type: "number" } },
          sparseValues: sparse,
          metadata,
        },
      },
    },
    namespace,
    usage,
  },
};

export const fetchResponse: Schema = {
  type: "object",
  properties: {
    vectors: {
      type: "object",
      additionalProperties: {
        type: "object",
        properties: { id: { type: "string" }, values: { type: "array", items: { type: "number" } }, sparseValues: sparse, metadata },
      },
    },
    namespace,
    usage,
  },
};

export const updateRequest: Schema = {
  type: "object",
  description: "Exactly one of id (that vector: values and/or setMetadata) or filter (every matching vector: setMetadata only)",
  properties: {
    id: { type: "string" },
    values: { type: "array", items: { type: "number" } },
    sparseValues: { ...sparse, description: "By id: replaces the vector's sparse values" },
    setMetadata: metadata,
    namespace,
    filter,
    dryRun: {
      type: "boolean",
      default: false,
      description: "With filter: only count the matching vectors (matchedRecords), change nothing",
    },
  },
};
export const updateResponse: Schema = {
  type: "object",
  properties: { matchedRecords: { type: "integer", description: "By filter: the vectors matched (and updated unless dryRun)" } },
};

const pagination: Schema = {
  type: "object",
  properties: { next: { type: "string", description: "Opaque; pass as paginationToken for the next page" } },
};

export const listResponse: Schema = {
  type: "object",
  properties: {
    vectors: { type: "array", items: { type: "object", properties: { id: { type: "string" } } } },
    pagination,
    namespace,
    usage,
  },
};

export const fetchByMetadataRequest: Schema = {
  type: "object",
  required: ["filter"],
  properties: {
    filter,
    namespace,
    limit: { type: "integer", minimum: 1, maximum: 1000, default: 100 },
    paginationToken: { type: "string", description: "pagination.next of the previous page" },
  },
};
export const fetchByMetadataResponse: Schema = {
  type: "object",
  properties: { vectors: (fetchResponse.properties as Record<string, Schema>).vectors, namespace, usage, pagination },
};

export const deleteRequest: Schema = {
  type: "object",
  description: "Exactly one of ids, filter or deleteAll",
  properties: { ids: { type: "array", items: { type: "string" } }, filter, deleteAll: { type: "boolean" }, namespace },
};

export const statsResponse: Schema = {
  type: "object",
  properties: {
    namespaces: { type: "object", additionalProperties: { type: "object", properties: { vectorCount: { type: "integer" } } } },
    dimension: { type: "integer" },
    indexFullness: { type: "number" },
    totalVectorCount: { type: "integer" },
    metric: { type: "string" },
    vectorType: { type: "string" },
  },
};

export const namespaceDescription: Schema = { type: "object", properties: { name: { type: "string" }, record_count: { type: "integer" } } };
export const namespaceList: Schema = {
  type: "object",
  properties: {
    namespaces: { type: "array", items: namespaceDescription },
    pagination: { type: "object", properties: { next: { type: "string" } } },
    total_count: { type: "integer" },
  },
};

export const errorBody: Schema = {
  type: "object",
  required: ["error"],
  properties: {
    error: {
      type: "object",
      required: ["code", "message"],
      properties: { code: { type: "string" }, message: { type: "string" }, field: { type: "string" } },
    },
  },
};
