/** @module tools/indexes — the vector-index layer: indexes, vectors, namespaces, embedding, and the text tools that embed on the server first. */
import { z } from "zod";
import { DESTROY, json, op, out, READ, strings, UPSERT, WRITE } from "./define.js";
import * as F from "./fields.js";
import { EMBED_MODEL, EMBED_OPS } from "./embed-ops.js";
import { INDEX_OPS } from "./index-ops.js";
import { ToolError, type Api, type Tool } from "./tool.js";

// A tool that is one operation takes that operation's schema (index-ops.ts) plus the index it runs on.
const index = F.indexRef;
const namespace = F.namespace.nullish().describe('namespace inside the index; default ""');
const IDX = { index: "name" };
const filter = F.filter;
const tags = strings.describe("AND filter: only vectors whose metadata `tags` list holds every one of these");
const metadata = F.metadata;
const indexModel = out({
  name: z.string(),
  dimension: z.number().int().optional().describe("dense indexes only"),
  metric: z.string(),
  host: z.string(),
  vector_type: z.string().optional(),
});
const matches = out({ matches: z.array(out({ id: z.string(), score: z.number() })), namespace: z.string() });

const createIndexInput = INDEX_OPS.create_index.body.extend({
  dimension: F.dimension
    .nullish()
    .describe("dense indexes: default 1024 (the server's embed / upsert_text encoder); leave out for a sparse index"),
});
const createIndex: Tool<typeof createIndexInput> = {
  name: "create_index",
  title: "Create an index",
  access: "tenant",
  annotations: WRITE,
  operations: ["create_index"],
  description:
    "Create a vector index: metric cosine (default), dotproduct or euclidean (squared distance, smaller first); float values are kept and rank the candidates of a 1-bit scan of their directions. Sparse values (hybrid) need a dotproduct index; vector_type sparse makes a sparse-only index. dimension 1024 matches the server's embed / upsert_text encoder.",
  input: createIndexInput,
  output: indexModel,
  run: async ({ dimension, vector_type, ...rest }, api) =>
    json(
      await api.call("create_index", {
        args: {
          ...dropUndefined(rest),
          ...(vector_type === undefined ? {} : { vector_type }),
          ...(vector_type === "sparse" ? (dimension == null ? {} : { dimension }) : { dimension: dimension ?? 1024 }),
        },
      }),
    ),
};

function dropUndefined(o: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));
}
const listIndexes = op("list_indexes", {
  name: "list_indexes",
  title: "List indexes",
  annotations: READ,
  description: "Every vector index of this tenant with its dimension and host.",
  input: z.object({}),
  output: out({ indexes: z.array(indexModel) }),
});
const describeIndex = op("describe_index", {
  name: "describe_index",
  title: "Describe an index",
  annotations: READ,
  description: "One index: dimension, metric, status, deletion protection.",
  input: z.object({ name: index }),
  output: indexModel,
});
const configureIndex = op("configure_index", {
  name: "configure_index",
  title: "Configure an index",
  annotations: UPSERT,
  description: "Turn deletion protection on or off, or replace an index's tags.",
  input: z.object({ name: index, ...INDEX_OPS.configure_index.body.shape }),
  output: indexModel,
});
const deleteIndex = op("delete_index", {
  name: "delete_index",
  title: "Delete an index",
  annotations: DESTROY,
  description: "Delete an index and every vector in it (refused while deletion protection is enabled).",
  input: z.object({ name: index }),
  output: out({}),
});

const upsert = op("upsert", {
  name: "upsert",
  title: "Upsert vectors",
  rename: IDX,
  annotations: UPSERT,
  description:
    "Insert or replace vectors (id, values, optional sparseValues and metadata) in an index namespace; a sparse index takes sparseValues and no values. Visible to queries within milliseconds. To store text, use upsert_text.",
  input: z.object({ index, ...INDEX_OPS.upsert.body.shape }),
  output: out({ upsertedCount: z.number().int() }),
});

/** `tags` -> {$and: [filter, {tags: t1}, {tags: t2}, ...]}. */
function withTags(f: Record<string, unknown> | undefined, t: string[] | undefined): Record<string, unknown> | undefined {
  if (!t || t.length === 0) return f;
  const all = [...(f ? [f] : []), ...t.map((x) => ({ tags: { $eq: x } }))];
  return all.length === 1 ? all[0] : { $and: all };
}

const queryOp = INDEX_OPS.query.body.shape;
const queryInput = {
  index,
  namespace: queryOp.namespace,
  topK: queryOp.topK,
  filter: queryOp.filter,
  tags: tags.optional(),
  includeMetadata: queryOp.includeMetadata,
  includeValues: queryOp.includeValues,
};
const query: Tool = {
  name: "query",
  title: "Query vectors",
  access: "tenant",
  annotations: READ,
  operations: ["query"],
  description:
    "Nearest vectors by the index's metric (cosine, dotproduct, or euclidean: squared distance, smaller first) to a vector (or to a stored vector's id), best first, with an optional metadata filter; tags=[...] keeps only vectors tagged with all of them. For a text question use query_text.",
  input: z.object({ index, ...queryOp, tags: tags.optional() }),
  output: matches,
  run: async ({ index: name, tags: t, filter: f, ...rest }, api) =>
    json(
      await api.call("query", {
        args: { name, ...rest, filter: withTags(f as Record<string, unknown> | undefined, t as string[] | undefined) },
      }),
    ),
};

const fetchVectors = op("fetch", {
  name: "fetch",
  title: "Fetch vectors",
  rename: IDX,
  annotations: READ,
  description: "Vectors by id, with values and metadata; missing ids are left out.",
  input: z.object({ index, ...INDEX_OPS.fetch.query.shape }),
  output: out({ vectors: z.record(z.string(), z.unknown()), namespace: z.string() }),
});
const update = op("update", {
  name: "update",
  title: "Update a vector",
  rename: IDX,
  annotations: UPSERT,
  description: "Replace a vector's values and/or merge fields into its metadata.",
  input: z.object({ index, ...INDEX_OPS.update.body.pick({ namespace: true, values: true, setMetadata: true }).shape, id: F.vectorId }),
  output: out({}),
});
const updateByMetadata = op("update", {
  name: "update_by_metadata",
  title: "Update vectors by metadata",
  rename: IDX,
  annotations: UPSERT,
  description:
    "Merge fields into the metadata of every vector of a namespace matching a filter; dryRun: true only counts them. Answers matchedRecords.",
  input: z.object({ index, ...INDEX_OPS.update.body.pick({ namespace: true, setMetadata: true, dryRun: true }).shape, filter }),
  output: out({ matchedRecords: z.number().int() }),
});
const listVectors = op("list_vectors", {
  name: "list_vectors",
  title: "List vector ids",
  rename: IDX,
  annotations: READ,
  description:
    "Ids of a namespace's vectors in id order, optionally only those starting with prefix; paginated (pass pagination.next as paginationToken).",
  input: z.object({ index, ...INDEX_OPS.list_vectors.query.shape }),
  output: out({ vectors: z.array(out({ id: z.string() })), namespace: z.string() }),
});
const fetchByMetadata = op("fetch_by_metadata", {
  name: "fetch_by_metadata",
  title: "Fetch vectors by metadata",
  rename: IDX,
  annotations: READ,
  description:
    "Vectors (values and metadata) of a namespace matching a metadata filter, in id order; paginated (pass pagination.next as paginationToken).",
  input: z.object({ index, ...INDEX_OPS.fetch_by_metadata.body.shape }),
  output: out({ vectors: z.record(z.string(), z.unknown()), namespace: z.string() }),
});
const deleteVectors = op("delete", {
  name: "delete",
  title: "Delete vectors",
  rename: IDX,
  annotations: DESTROY,
  description: "Delete vectors by ids, by metadata filter, or all of a namespace (deleteAll: true). Give exactly one.",
  input: z.object({ index, ...INDEX_OPS.delete.body.shape }),
  output: out({}),
});
const stats = op("describe_index_stats", {
  name: "stats",
  title: "Index statistics",
  rename: IDX,
  annotations: READ,
  description: "Vector counts per namespace and in total (optionally only those matching a filter), dimension and fullness.",
  input: z.object({ index, ...INDEX_OPS.describe_index_stats.body.shape }),
  output: out({ namespaces: z.record(z.string(), z.unknown()), totalVectorCount: z.number().int(), dimension: z.number().int() }),
});
const listNamespaces = op("list_namespaces", {
  name: "list_namespaces",
  title: "List namespaces",
  rename: IDX,
  annotations: READ,
  description: "Namespaces of an index holding vectors, with counts; paginated (pass pagination.next as paginationToken).",
  input: z.object({ index, ...INDEX_OPS.list_namespaces.query.shape }),
  output: out({ namespaces: z.array(out({ name: z.string(), record_count: z.number().int() })) }),
});
const describeNamespace = op("describe_namespace", {
  name: "describe_namespace",
  title: "Describe a namespace",
  rename: IDX,
  annotations: READ,
  description: "One namespace of an index and its vector count.",
  input: z.object({ index, namespace: z.string() }),
  output: out({ name: z.string(), record_count: z.number().int() }),
});
const deleteNamespace = op("delete_namespace", {
  name: "delete_namespace",
  title: "Delete a namespace",
  rename: IDX,
  annotations: DESTROY,
  description: "Delete a namespace of an index with all its vectors.",
  input: z.object({ index, namespace: z.string() }),
  output: out({}),
});

const embed = op("embed", {
  name: "embed",
  title: "Embed texts",
  annotations: READ,
  description: "Texts to 1024-d unit vectors with the server's static encoder (the one records use); deterministic, no model call.",
  input: z.object({ texts: EMBED_OPS.embed.body.shape.texts.unwrap() }),
  output: out({ vectors: z.array(z.array(z.number())), dimension: z.number().int(), encoder: z.string() }),
});

const inferenceEmbed = op("embed", {
  name: "inference_embed",
  title: "Embed texts (Pinecone inference shape)",
  annotations: READ,
  description: `Pinecone's inference embed: {model: "${EMBED_MODEL}", inputs: [{text}], parameters} -> {model, vector_type, data: [{values}], usage}; the same 1024-d encoder as embed.`,
  input: z.object({
    model: EMBED_OPS.embed.body.shape.model.unwrap(),
    inputs: EMBED_OPS.embed.body.shape.inputs.unwrap(),
    parameters: EMBED_OPS.embed.body.shape.parameters,
  }),
  output: out({ model: z.string(), vector_type: z.string(), data: z.array(out({ values: z.array(z.number()) })), usage: out({}) }),
});

async function vectorsOf(api: Api, texts: string[]): Promise<number[][]> {
  return json(await api.call("embed", { args: { texts } })).vectors as number[][];
}

const textItem = z.object({
  id: F.vectorId,
  text: z.string().min(1),
  metadata: metadata.nullish(),
  tags: strings.optional(),
});
const upsertText: Tool = {
  name: "upsert_text",
  title: "Upsert texts",
  access: "tenant",
  annotations: UPSERT,
  operations: ["embed", "upsert"],
  description:
    "Store texts in a 1024-d index: the server embeds each text and upserts it under its id with metadata {text, tags, ...}. Find them again with query_text.",
  input: z.object({ index, namespace, items: z.array(textItem).min(1).max(256) }),
  output: out({ upsertedCount: z.number().int() }),
  async run({ index: name, namespace: ns, items }, api) {
    const list = items as z.infer<typeof textItem>[];
    const values = await vectorsOf(
      api,
      list.map((x) => x.text),
    );
    const vectors = list.map((x, i) => ({
      id: x.id,
      values: values[i],
      metadata: { ...x.metadata, text: x.text, ...(x.tags ? { tags: x.tags } : {}) },
    }));
    return json(await api.call("upsert", { args: { name, namespace: ns, vectors } }));
  },
};
const queryText: Tool = {
  name: "query_text",
  title: "Query by text",
  access: "tenant",
  annotations: READ,
  operations: ["embed", "query"],
  description:
    "Nearest stored texts to a question in a 1024-d index (embedded by the server), best first with their metadata; tags=[...] keeps only those tagged with all of them.",
  input: z.object({ ...queryInput, text: z.string().min(1) }),
  output: matches,
  async run({ index: name, text, tags: t, filter: f, includeMetadata, ...rest }, api) {
    const [vector] = await vectorsOf(api, [text as string]);
    return json(
      await api.call("query", {
        args: {
          name,
          ...rest,
          vector,
          includeMetadata: includeMetadata ?? true,
          filter: withTags(f as Record<string, unknown> | undefined, t as string[] | undefined),
        },
      }),
    );
  },
};
const replaceText: Tool = {
  name: "replace_text",
  title: "Replace a text",
  access: "tenant",
  annotations: UPSERT,
  operations: ["embed", "update"],
  description:
    "Give a stored text new content: re-embeds it and replaces the vector's values and metadata.text (other metadata kept; setMetadata merges more).",
  input: z.object({ index, namespace, id: F.vectorId, text: z.string().min(1), setMetadata: metadata.nullish() }),
  output: out({}),
  async run({ index: name, namespace: ns, id, text, setMetadata }, api) {
    const [values] = await vectorsOf(api, [text as string]);
    return json(
      await api.call("update", {
        args: { name, namespace: ns, id, values, setMetadata: { ...(setMetadata as object | undefined), text } },
      }),
    );
  },
};
const forgetWhere: Tool = {
  name: "forget_where",
  title: "Forget matching vectors",
  access: "tenant",
  annotations: DESTROY,
  operations: ["delete"],
  description: "Delete every vector of a namespace matching a metadata filter and/or carrying all the given tags.",
  input: z.object({ index, namespace, filter: filter.optional(), tags: tags.optional() }),
  output: out({}),
  async run({ index: name, namespace: ns, filter: f, tags: t }, api) {
    const where = withTags(f as Record<string, unknown> | undefined, t as string[] | undefined);
    if (where === undefined || Object.keys(where).length === 0)
      throw new ToolError("E_BAD_REQUEST", "give a non-empty filter or tags (to delete a whole namespace use delete_namespace)", "filter");
    return json(await api.call("delete", { args: { name, namespace: ns, filter: where } }));
  },
};

export const indexTools: Tool[] = [
  createIndex,
  listIndexes,
  describeIndex,
  configureIndex,
  deleteIndex,
  upsert,
  query,
  fetchVectors,
  fetchByMetadata,
  listVectors,
  update,
  updateByMetadata,
  deleteVectors,
  stats,
  listNamespaces,
  describeNamespace,
  deleteNamespace,
  embed,
  inferenceEmbed,
  upsertText,
  queryText,
  replaceText,
  forgetWhere,
];
