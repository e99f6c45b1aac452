/** @module tools/records — typed records: ingest, query, timeline, get, delete, forget, stats, export and import of .svc containers. */
import { z } from "zod";
import { bytesOf, DESTROY, file, fileOutput, json, op, out, READ, strings, WRITE } from "./define.js";
import { RECORD_OPS, recordNamespace as namespace } from "./record-ops.js";
import type { Tool } from "./tool.js";

// A tool that is one operation takes that operation's fields (record-ops.ts) plus the namespace it runs on.
const NS = { namespace: "ns" };
const record = out({ id: z.string(), kind: z.string(), tags: strings, ts: z.number() });
const records = out({ records: z.array(record), namespace: z.string() });

const ingest = op("records_ingest", {
  name: "records_ingest",
  title: "Ingest records",
  rename: NS,
  annotations: WRITE,
  description:
    "Store typed records (decisions, mistakes, handoffs, notes...) in a namespace. The server embeds each text so records_query can find it by meaning later. Returns the new ids.",
  input: z.object({ namespace, ...RECORD_OPS.records_ingest.body.shape }),
  output: out({ ids: strings, count: z.number().int() }),
});

const query = op("records_query", {
  name: "records_query",
  title: "Search records",
  rename: NS,
  annotations: READ,
  description:
    "Find records by meaning (give text; best first with a cosine score) or list the newest (omit text), filtered by kind, tags and time. Use before acting to recall earlier decisions and mistakes.",
  input: z.object({ namespace, ...RECORD_OPS.records_query.body.shape }),
  output: records,
});

const timeline = op("records_timeline", {
  name: "records_timeline",
  title: "Records timeline",
  rename: NS,
  annotations: READ,
  description:
    "Records newest first, one page at a time; pass the returned nextCursor as `until` to page back (and nextAfter as `after` when it is given). Filters: time window, kinds, tags.",
  input: z.object({ namespace, ...RECORD_OPS.records_timeline.query.shape }),
  output: out({ records: z.array(record), namespace: z.string(), nextCursor: z.number().nullable(), nextAfter: z.string().optional() }),
});

const get = op("records_get", {
  name: "records_get",
  title: "Get a record",
  rename: NS,
  annotations: READ,
  description: "One record by id (rec_<hex>), with its text and meta.",
  input: z.object({ namespace, id: z.string().min(1) }),
  output: record,
});

const del = op("records_delete", {
  name: "records_delete",
  title: "Delete a record",
  rename: NS,
  annotations: DESTROY,
  description: "Delete one record by id. deleted is false when there was no such record.",
  input: z.object({ namespace, id: z.string().min(1) }),
  output: out({ deleted: z.boolean() }),
});

const forget = op("records_forget", {
  name: "records_forget",
  title: "Forget records",
  rename: NS,
  annotations: DESTROY,
  description: "Delete every record matching ALL the given criteria (kinds, tags, time window, ids). Give at least one criterion.",
  input: z.object({ namespace, ...RECORD_OPS.records_forget.body.shape }),
  output: out({ forgottenCount: z.number().int() }),
});

const stats = op("records_stats", {
  name: "records_stats",
  title: "Namespace statistics",
  rename: NS,
  annotations: READ,
  description: "How many records a namespace holds, per kind, and the oldest and newest ts.",
  input: z.object({ namespace }),
  output: out({
    count: z.number().int(),
    byKind: z.record(z.string(), z.number()),
    oldestTs: z.number().nullable(),
    newestTs: z.number().nullable(),
  }),
});

const exportNs: Tool = {
  name: "export",
  title: "Export a namespace",
  access: "tenant",
  annotations: READ,
  operations: ["records_export"],
  description:
    "The namespace as a portable .svc container (a zip), base64-encoded. schema 2 also carries the tenant's knowledge graphs and causal models. Pass base64 to `import` to restore it.",
  input: z.object({ namespace, ...RECORD_OPS.records_export.query.shape }),
  output: fileOutput,
  run: async (args, api) =>
    file(await api.call("records_export", { args: { ns: args.namespace, schema: args.schema } }), `${String(args.namespace)}.svc`),
};

const importNs: Tool = {
  name: "import",
  title: "Import a container",
  access: "tenant",
  annotations: DESTROY,
  operations: ["records_import"],
  description:
    "Load a .svc container (base64, as `export` returns it) into a namespace: schema 1 replaces the namespace's records; schema 2 merges by id and replaces the graphs and models it carries.",
  input: z.object({ namespace, base64: z.string().min(1).describe("the .svc container, base64") }),
  output: out({ imported: z.number().int(), manifest: z.record(z.string(), z.unknown()) }),
  async run(args, api) {
    const zip = bytesOf(args.base64 as string, "base64");
    const boundary = `svc-${Date.now().toString(36)}`;
    const data = Buffer.concat([
      Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="import.svc"\r\nContent-Type: application/x-svc\r\n\r\n`,
      ),
      zip,
      Buffer.from(`\r\n--${boundary}--\r\n`),
    ]);
    return json(
      await api.call("records_import", {
        args: { ns: args.namespace },
        raw: { contentType: `multipart/form-data; boundary=${boundary}`, data },
      }),
    );
  },
};

const namespaces = op("records_namespaces", {
  name: "records_namespaces",
  title: "Record namespaces",
  annotations: READ,
  description: "The namespaces holding records, with their live record counts.",
  input: z.object({}),
  output: out({ namespaces: z.array(out({ namespace: z.string(), count: z.number().int() })) }),
});

export const recordTools: Tool[] = [namespaces, ingest, query, timeline, get, del, forget, stats, exportNs, importNs];
