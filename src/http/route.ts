/** @module route — what one HTTP route declares: method, path, auth, metering, codecs, schemas and its handler. */
import type { Principal } from "../account/keys.js";
import type { Usage } from "../account/prices.js";
import type { z } from "zod";
import type { ProtoMessages } from "./codecs.js";

export type Method = "get" | "post" | "patch" | "delete";

/** A JSON Schema (2020-12, as OpenAPI 3.1 embeds it). */
export type Schema = Record<string, unknown>;

export interface RequestContext {
  /** `x-request-id` from the client when it is sane, else generated. */
  id: string;
  /** Path parameters, percent-decoded, by name. */
  params: Record<string, string>;
  query: URLSearchParams;
  /** The decoded body (undefined when empty). */
  body: unknown;
  principal: Principal;
  /** `http://<Host header>`: what links in responses (an index's `host`) are built on. */
  baseUrl: string;
  /** Set by handlers of metered routes: vectors written and scanned. */
  usage: Usage;
  /** The Content-Type header as sent (routes with `rawBody` parse their own body). */
  contentType: string;
  /** The request headers routes read (`x-svc-after`: routes/indexes.ts), by lowercase name; only those sent. */
  headers?: Record<string, string>;
  /** The client's address as text (IPv4 dotted, IPv6 canonical); absent when the call did not come over HTTP. */
  remoteAddress?: string;
}

export interface Reply {
  /** Default 200. */
  status?: number;
  body?: unknown;
  /** A body sent as it is (the /metrics text, the OpenAPI document, a download). */
  raw?: { contentType: string; data: string | Buffer };
  /** Extra response headers (e.g. content-disposition). */
  headers?: Record<string, string>;
}

export interface Route {
  method: Method;
  /** OpenAPI style: /v1/indexes/{name}. */
  path: string;
  operationId: string;
  summary: string;
  tags: string[];
  /** "tenant": any live key; "admin": admin keys only; "none": public. */
  auth: "tenant" | "admin" | "none";
  /** Price-table operation charged on success to non-admin tenants; absent = free. */
  meter?: string;
  /**
   * A POST that changes no stored data (a query). Such reads, and every GET, have their charge made durable
   * by the ledger's next group commit just after the reply instead of before it (see invoke.ts).
   */
  readOnly?: true;
  /**
   * Metered routes whose handler reports `usage`: the most it can report for this request, computed before the
   * handler runs (reserved in the wallet, see invoke.ts). Absent: the request price alone is reserved. An invalid
   * request may answer anything (the handler refuses it).
   */
  usageBound?(ctx: RequestContext): Usage | Promise<Usage>;
  /** Routes that also speak msgpack and protobuf (request and Accept). */
  proto?: ProtoMessages;
  /** Upserts: a JSON body is read by upsert-json.ts (each vector's `values` straight into float32, a Float32Array). */
  upsertBody?: true;
  /** Queries: a JSON body's top-level `vector` is read by upsert-json.ts straight into float32 (a Float32Array). */
  queryBody?: true;
  /** Uploads: the handler gets the body undecoded (a Buffer) and parses it itself; the value is the media type it documents. */
  rawBody?: "multipart/form-data" | "application/octet-stream";
  /** Body cap in bytes for this route (413 past it); default and ceiling: the server's limit. */
  bodyLimit?: number;
  /**
   * The operation's request schema (tools/*-ops.ts): checked before the handler runs (http/input.ts
   * `checkInput`) and shown by the OpenAPI document; it replaces `requestBody` / `queryParams`.
   */
  input?: { body?: z.ZodObject; query?: z.ZodObject };
  /**
   * What a request must pass before its `input` is judged (invoke.ts runs it just before `checkInput`): a
   * per-address write limit that counts refused requests too (routes/rate-limited.ts), the thing a path names
   * existing (404 before 400, as the handler would answer). Throws to refuse.
   */
  gate?(ctx: RequestContext): void | Promise<void>;
  /** Query parameters, for the OpenAPI document (routes without `input.query`). */
  queryParams?: Array<{ name: string; schema: Schema; description: string; required?: boolean }>;
  requestBody?: Schema;
  /** Success status and body schema. */
  response: { status: number; schema?: Schema; description: string };
  handle(ctx: RequestContext): Promise<Reply> | Reply;
}

/** For a `usageBound`: the length of `body[field]` when it is an array, else 0 (a request the handler then refuses). */
export function countIn(body: unknown, field: string): number {
  const v = typeof body === "object" && body !== null ? (body as Record<string, unknown>)[field] : undefined;
  return Array.isArray(v) ? v.length : 0;
}
