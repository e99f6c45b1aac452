/** @module errors — SvcError and the one table of stable error codes with their HTTP statuses. */
import { readdirSync } from "node:fs";

/** Stable codes; clients match on these, so never rename one. */
export const ERRORS = {
  E_BAD_REQUEST: { status: 400, summary: "the request is malformed" },
  E_BODY: { status: 400, summary: "the request body could not be decoded (malformed JSON, msgpack or protobuf)" },
  E_CONTAINER: { status: 400, summary: "the .svc container is malformed, truncated or of an unknown schema version" },
  E_AUTH: { status: 401, summary: "missing, unknown or revoked API key" },
  E_WALLET_EMPTY: { status: 402, summary: "the tenant's wallet is exhausted" },
  E_FORBIDDEN: { status: 403, summary: "the operation needs an admin key" },
  E_HOST_NOT_ALLOWED: {
    status: 403,
    summary:
      "the Host or Origin header names a host the server does not serve (DNS-rebinding and cross-site protection: /mcp always, every route with --no-auth)",
  },
  E_METHOD: { status: 405, summary: "the path does not accept this method" },
  E_TOO_LARGE: { status: 413, summary: "the request body exceeds the size limit" },
  E_MEDIA_TYPE: { status: 415, summary: "unsupported Content-Type for this route" },
  E_DIMENSION: { status: 400, summary: "vector dimension does not match" },
  E_TOP_K: { status: 400, summary: "topK must be a positive integer" },
  E_NON_FINITE: { status: 400, summary: "vector holds NaN or Infinity" },
  E_RANGE: { status: 400, summary: "row range or row id out of bounds" },
  E_FILTER: { status: 400, summary: "the metadata filter is malformed: unknown operator, wrong operand type or too deep" },
  E_METADATA: {
    status: 400,
    summary:
      "a metadata value is not a string, finite number, boolean or list of strings, or a key anywhere in the input is reserved (__proto__, constructor, prototype)",
  },
  E_TOO_DEEP: { status: 400, summary: "a value in the input nests objects or arrays more than 32 levels deep (the body is level 1)" },
  E_NOT_FOUND: { status: 404, summary: "no such collection, namespace or id" },
  E_CONFLICT: { status: 409, summary: "the resource already exists or is being changed" },
  E_ADDRESS_IN_USE: { status: 409, summary: "svc serve: another process already listens on this host and port (the CLI exits 3)" },
  E_DATA_LOCKED: {
    status: 409,
    summary: "svc serve: another live process serves this data directory (<data>/LOCK holds its pid; the CLI exits 4)",
  },
  E_DELETION_PROTECTED: { status: 403, summary: "deletion protection is enabled for this index" },
  E_NOT_IMPLEMENTED: {
    status: 501,
    summary: 'the operation is not built for this mode yet (cluster mode: backups; docs/API.md "Backups")',
  },
  E_BACKUP_DAMAGED: {
    status: 500,
    summary:
      "a backup's files do not match the SHA-256 sums of its manifest (damaged, or copied from another node incompletely); nothing was restored",
  },
  E_IMPORT_SCHEMA: {
    status: 400,
    summary:
      "the import file is not what an import reads: a Parquet file without the columns id (string) and values (list of float) or with others of the wrong type, or not Parquet/NDJSON at all",
  },
  E_IMPORT_PATH: {
    status: 403,
    summary:
      "the import path lies outside the configured import root (after resolving symlinks), or the server has no import root (config.json imports.root)",
  },
  E_NOT_READY: {
    status: 503,
    summary: "the server is still opening its stores (write-ahead log replay); GET /v1/ready answers 200 once every store is open",
  },
  E_CLOSED: { status: 503, summary: "the collection is closed or shutting down" },
  E_NO_QUORUM: {
    status: 503,
    summary:
      "cluster mode: the replicated log (or a replicated bucket) did not answer in time (fewer than a quorum of NATS servers reachable); a write's outcome is unknown: it may have taken effect, but never after a later acknowledged write to the same id; retry after the Retry-After seconds (writes are idempotent by id)",
  },
  E_OUTCOME_UNKNOWN: {
    status: 503,
    summary:
      "cluster mode: the write reached no answer in time (a NATS server or svc node stalled); it may have taken effect, but never after a later acknowledged write to the same id; retry after the Retry-After seconds (writes are idempotent by id)",
  },
  E_HOME_UNAVAILABLE: {
    status: 503,
    summary:
      "cluster mode: the leader of the home stores (the directory, the commons, the knowledge graphs, the causal models) is not live or did not answer, or they are changing leader (another node takes over within seconds; a write refused so did not take effect); retry after the Retry-After seconds",
  },
  E_SHARD_UNAVAILABLE: {
    status: 503,
    summary:
      "cluster mode: no svc node serving a shard of this index answered (its replicas are down or still opening); retry after the Retry-After seconds",
  },
  E_NOT_CAUGHT_UP: {
    status: 503,
    summary: "cluster mode: a shard has not yet applied the write named by x-svc-after; retry after the Retry-After seconds",
  },
  E_STORE_OFFLINE: {
    status: 503,
    summary:
      "a store this operation needs was found damaged and is offline (GET /v1/health names it); run `svc repair` with the server stopped",
  },
  E_WAL_CORRUPT: { status: 500, summary: "a write-ahead log frame failed its checksum before the tail; run `svc repair`" },
  E_IO: { status: 500, summary: "a file operation failed" },
  E_OUT_OF_MEMORY: { status: 507, summary: "the shared arena cannot grow further" },
  E_WORKER_FAILED: { status: 503, summary: "a scan worker died; the task was not completed" },
  E_INSECURE_URL: {
    status: 400,
    summary:
      "a client of svc (svc mcp, recorders, hooks, svc export/import) refuses to send the API key over plain http to a non-loopback host; use https, or set SVC_ALLOW_INSECURE=1",
  },
  E_UNREACHABLE: { status: 502, summary: "the stdio tool server cannot reach the svc REST API (SVC_URL)" },
  E_INTERNAL: { status: 500, summary: "an unexpected server error; the log has the details" },
  E_KERNEL: { status: 500, summary: "a WASM kernel failed" },
  E_ABI: { status: 500, summary: "build/kernels.wasm does not match this code's ABI version" },
  E_CODE_MISMATCH: { status: 500, summary: "a document helper's code no longer matches its published hash or signature; it is not run" },
  // Agent commons (trust, board, profiles, ask).
  E_REFUSED: {
    status: 400,
    summary:
      "the commons refused the text: encoded data, invisible or bidi-control characters, a long unbroken run, an empty or over-long field, or a reply_to/thread that does not exist",
  },
  E_OUTBOUND_BLOCKED: {
    status: 400,
    summary:
      "the site or url resolves to a private, loopback, link-local or metadata address (not allow-listed), or uses a scheme the server does not fetch",
  },
  E_UPSTREAM: {
    status: 400,
    summary:
      "the site named in the request did not answer usably: unreachable, timed out, too large, or no question-answering endpoint (400 as the commons contract says for POST /v1/ask: a request never gets a 5xx for what a remote site does)",
  },
  // Spelled as the commons-and-directory contract names them (not_available: directory; rate_limited: commons and directory).
  not_available: { status: 409, summary: "the business has no bookable action (unclaimed, or booking is off)" },
  E_TOO_MANY_SESSIONS: {
    status: 429,
    summary: "this client address (keyless) or API key already holds its share of open MCP sessions; close idle ones with DELETE /mcp",
  },
  rate_limited: {
    status: 429,
    summary:
      "too many requests from this client address (commons writes: trust, board, ask; business writes: 10 per 10 minutes); retry after the Retry-After seconds (details.retryAfterSeconds)",
  },
} as const satisfies Record<string, { status: number; summary: string }>;

export type ErrorCode = keyof typeof ERRORS;

export class SvcError extends Error {
  readonly code: ErrorCode;
  readonly field: string | undefined;
  readonly details: Record<string, unknown> | undefined;

  constructor(code: ErrorCode, message: string, opts: { field?: string; details?: Record<string, unknown>; cause?: unknown } = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = "SvcError";
    this.code = code;
    this.field = opts.field;
    this.details = opts.details;
  }

  get status(): number {
    return ERRORS[this.code].status;
  }

  /** The wire body: {"error":{"code","message","field"}}. */
  toJSON(): { error: { code: ErrorCode; message: string; field?: string } } {
    return { error: { code: this.code, message: this.message, ...(this.field === undefined ? {} : { field: this.field }) } };
  }
}

/** An absolute file path in a message: "/" + a top-level directory of this machine (so not a route like /v1/health), up to a delimiter. */
const ABSOLUTE_PATH = (() => {
  let roots: string[] = [];
  try {
    roots = readdirSync("/").map((n) => n.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
  } catch {
    // no listing: nothing to match
  }
  return roots.length === 0
    ? /$^/g
    : new RegExp(`(^|[\\s'"\`(\\[=])\\/(?:${roots.join("|")})(?:\\/[^\\s'"\`,;:()<>\\[\\]]*)?(?=$|[\\s'"\`,;:()<>\\[\\]])`, "g");
})();

/**
 * The error a client may see for `err` (the one place every error reply, REST or MCP, comes
 * from): an SvcError as it is, anything else E_INTERNAL; a 5xx message has its absolute paths
 * replaced by "<server path>" (the server log keeps the original as the cause).
 */
export function publicError(err: unknown): SvcError {
  const e = err instanceof SvcError ? err : new SvcError("E_INTERNAL", "internal error; see the server log", { cause: err });
  if (e.status < 500) return e;
  const message = e.message.replace(ABSOLUTE_PATH, "$1<server path>");
  return message === e.message ? e : new SvcError(e.code, message, { field: e.field, details: e.details, cause: err });
}
