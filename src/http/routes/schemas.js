/** @module routes/schemas — JSON Schemas of the vector-index bodies, for the OpenAPI document. */
import { METRICS } from "../../memory/indexes.js";
export const filter = {
    type: "object",
    description: "Metadata filter: {field: value | {$eq|$ne|$gt|$gte|$lt|$lte: v, $in|$nin: [..], $exists: bool}}, combined with $and / $or",
};
const metadata = { type: "object", description: "Values: string, finite number, boolean or list of strings; at most 40 KB as JSON" };
const values = {
    oneOf: [
        { type: "array", items: { type: "number" } },
        { type: "string", contentEncoding: "binary", description: "msgpack only: a bin of little-endian float32" },
        { type: "string", contentEncoding: "base64", description: "svc extension (JSON): base64 (RFC 4648, padded) of little-endian float32; no per-number parsing" },
    ],
};
const sparse = {
    type: "object",
    required: ["indices", "values"],
    description: "Sparse vector: 1..1000 entries, indices integers in [0, 2^32) strictly ascending (unsorted or repeated: 400), one finite value per index",
    properties: { indices: { type: "array", items: { type: "integer", minimum: 0, maximum: 4294967295 } }, values: { type: "array", items: { type: "number" } } },
};
const namespace = { type: "string", description: "Namespace; \"\" and \"__default__\" are the same (default)" };
const usage = { type: "object", properties: { readUnits: { type: "integer" } } };
export const indexModel = {
    type: "object",
    required: ["name", "dimension", "metric", "host", "spec", "status"],
    properties: {
        name: { type: "string" },
        dimension: { type: "integer" },
        metric: { type: "string", enum: [...METRICS] },
        host: { type: "string", description: "http URL ending in /v1/indexes/{name}; data-plane paths are relative to it" },
        spec: { type: "object" },
        status: { type: "object", properties: { ready: { type: "boolean" }, state: { type: "string" } } },
        vector_type: { type: "string", enum: ["dense"] },
        deletion_protection: { type: "string", enum: ["enabled", "disabled"] },
        tags: { type: ["object", "null"], additionalProperties: { type: "string" } },
        deployment: { type: "object" },
        schema: { type: "object" },
        created_at: { type: "string", format: "date-time" },
    },
};
export const createIndexRequest = {
    type: "object",
    required: ["name", "dimension"],
    properties: {
        name: { type: "string", pattern: "^[a-z0-9](?:[a-z0-9-]{0,43}[a-z0-9])?$" },
        dimension: { type: "integer", minimum: 1, maximum: 20000 },
        metric: { type: "string", enum: [...METRICS], default: "cosine", description: "cosine and dotproduct score larger-first; euclidean scores are squared distances, smaller first" },
        spec: { type: "object", description: "Kept as given, e.g. {serverless: {cloud, region}}" },
        deletion_protection: { type: "string", enum: ["enabled", "disabled"] },
        tags: { type: "object", additionalProperties: { type: "string" } },
        vector_type: { type: "string", enum: ["dense"], description: "only dense indexes exist (the official clients send it)" },
    },
};
export const configureIndexRequest = {
    type: "object",
    properties: { deletion_protection: { type: "string", enum: ["enabled", "disabled"] }, tags: { type: "object", additionalProperties: { type: "string" } } },
};
export const upsertRequest = {
    type: "object",
    required: ["vectors"],
    properties: {
        namespace,
        vectors: {
            type: "array",
            minItems: 1,
            maxItems: 10000,
            items: { type: "object", required: ["id", "values"], properties: { id: { type: "string", maxLength: 512 }, values, sparseValues: sparse, metadata } },
        },
    },
};
export const upsertResponse = { type: "object", properties: { upsertedCount: { type: "integer" } } };
export const queryRequest = {
    type: "object",
    properties: {
        namespace,
        vector: values,
        id: { type: "string", description: "Query by a stored vector instead of `vector`" },
        topK: { type: "integer", minimum: 1, maximum: 10000, default: 10 },
        filter,
        includeValues: { type: "boolean", default: false },
        includeMetadata: { type: "boolean", default: false },
        exact: { type: "boolean", default: false, description: "The exact float top-k: every live vector (or filter match) scored with its stored values, no 1-bit stage (slow on large namespaces)" },
        sparseVector: { ...sparse, description: "Hybrid query: score = cosine(vector, row) (when vector or id is given) + sparse dot product with the row's sparseValues; an exact scan of the matching rows" },
    },
};
export const queryResponse = {
    type: "object",
    properties: {
        matches: { type: "array", items: { type: "object", properties: { id: { type: "string" }, score: { type: "number" }, values: { type: "array", items: { type: "number" } }, sparseValues: sparse, metadata } } },
        namespace,
        usage,
    },
};
export const fetchResponse = {
    type: "object",
    properties: {
        vectors: { type: "object", additionalProperties: { type: "object", properties: { id: { type: "string" }, values: { type: "array", items: { type: "number" } }, sparseValues: sparse, metadata } } },
        namespace,
        usage,
    },
};
export const updateRequest = {
    type: "object",
    description: "Exactly one of id (that vector: values and/or setMetadata) or filter (every matching vector: setMetadata only)",
    properties: {
        id: { type: "string" },
        values: { type: "array", items: { type: "number" } },
        sparseValues: { ...sparse, description: "By id: replaces the vector's sparse values" },
        setMetadata: metadata,
        namespace,
        filter,
        dryRun: { type: "boolean", default: false, description: "With filter: only count the matching vectors (matchedRecords), change nothing" },
    },
};
export const updateResponse = { type: "object", properties: { matchedRecords: { type: "integer", description: "By filter: the vectors matched (and updated unless dryRun)" } } };
const pagination = { type: "object", properties: { next: { type: "string", description: "Opaque; pass as paginationToken for the next page" } } };
export const listResponse = {
    type: "object",
    properties: { vectors: { type: "array", items: { type: "object", properties: { id: { type: "string" } } } }, pagination, namespace, usage },
};
export const fetchByMetadataRequest = {
    type: "object",
    required: ["filter"],
    properties: {
        filter,
        namespace,
        limit: { type: "integer", minimum: 1, maximum: 1000, default: 100 },
        paginationToken: { type: "string", description: "pagination.next of the previous page" },
    },
};
export const fetchByMetadataResponse = {
    type: "object",
    properties: { vectors: fetchResponse.properties.vectors, namespace, usage, pagination },
};
export const deleteRequest = {
    type: "object",
    description: "Exactly one of ids, filter or deleteAll",
    properties: { ids: { type: "array", items: { type: "string" } }, filter, deleteAll: { type: "boolean" }, namespace },
};
export const statsResponse = {
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
export const namespaceDescription = { type: "object", properties: { name: { type: "string" }, record_count: { type: "integer" } } };
export const namespaceList = {
    type: "object",
    properties: {
        namespaces: { type: "array", items: namespaceDescription },
        pagination: { type: "object", properties: { next: { type: "string" } } },
        total_count: { type: "integer" },
    },
};
export const errorBody = {
    type: "object",
    required: ["error"],
    properties: { error: { type: "object", required: ["code", "message"], properties: { code: { type: "string" }, message: { type: "string" }, field: { type: "string" } } } },
};
//# sourceMappingURL=schemas.js.map