/** @module routes/schemas — JSON Schemas of the vector-index answers, for the OpenAPI document (request schemas: tools/index-ops.ts). */
import { METRICS } from "../../memory/indexes.js";
import type { Schema } from "../route.js";

const metadata: Schema = {
  type: "object",
  description: "Values: string, finite number, boolean or list of strings; at most 40 KB as JSON",
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

export const upsertResponse: Schema = { type: "object", properties: { upsertedCount: { type: "integer" } } };

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

export const fetchByMetadataResponse: Schema = {
  type: "object",
  properties: { vectors: (fetchResponse.properties as Record<string, Schema>).vectors, namespace, usage, pagination },
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
