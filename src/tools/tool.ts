/** @module tools/tool — what one MCP tool declares, and the API it runs against (in-process or over REST). */
import type { z } from "zod";

/** Arguments of one REST operation: path parameters are taken by name, the rest go to the query (GET, DELETE) or the JSON body. */
export interface ApiRequest {
  args?: Record<string, unknown>;
  /** A body sent as it is (uploads): `args` then fill only path parameters and the query. */
  raw?: { contentType: string; data: Buffer };
}

export interface ApiReply {
  status: number;
  /** Decoded JSON, for JSON answers. */
  body?: unknown;
  /** Any other answer (a download), as bytes. */
  raw?: { contentType: string; data: Buffer };
  headers: Record<string, string>;
}

/** The REST API as a tool sees it: one call per operationId. Both implementations authenticate and meter exactly as REST does. */
export interface Api {
  call(operationId: string, req?: ApiRequest): Promise<ApiReply>;
}

/** A failed operation, as a tool result carries it: the stable code, message and offending field of the REST error. */
export class ToolError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly field?: string,
  ) {
    super(message);
    this.name = "ToolError";
  }
}

/**
 * The one rule for a REST answer that is not a success (any status outside 2xx), over both transports:
 * it becomes a ToolError carrying the body's stable code, message and field (`HTTP_<status>` when the
 * body is not our error shape), so the tool result is `isError` and never validated as output.
 */
export function replyError(status: number, body: unknown, fallback: string): ToolError {
  const e =
    typeof body === "object" && body !== null
      ? (body as { error?: { code?: unknown; message?: unknown; field?: unknown } }).error
      : undefined;
  const str = (v: unknown) => (typeof v === "string" && v !== "" ? v : undefined);
  return new ToolError(str(e?.code) ?? `HTTP_${status}`, str(e?.message) ?? fallback, str(e?.field));
}

/** True for the statuses `replyError` turns into failures. */
export const isFailure = (status: number): boolean => status < 200 || status > 299;

export interface Annotations {
  readOnlyHint: boolean;
  destructiveHint: boolean;
  idempotentHint?: boolean;
  openWorldHint?: boolean;
}

export interface Tool<I extends z.ZodObject = z.ZodObject> {
  /** Unique; ^[A-Za-z0-9_-]{1,64}$ (the rule of OpenAI's function names, which every major client accepts). */
  name: string;
  title: string;
  /** Written for a model: what it does, when to use it, what comes back. */
  description: string;
  input: I;
  output: z.ZodObject;
  annotations: Annotations;
  /** "public": listed and callable without a key; otherwise a tenant key is needed. */
  access: "public" | "tenant";
  /** The REST operations `run` calls (a test checks that the catalog covers the router). */
  operations: string[];
  run(args: z.infer<I>, api: Api): Promise<Record<string, unknown>>;
}
