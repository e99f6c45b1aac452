/**
 * @module imports — bulk imports into a vector index (Pinecone's import API): a Parquet or NDJSON file from a path under
 * the configured import root or from an http(s) URL, run as a background job that first checks every row and then
 * writes; progress, listing and cancel. Jobs live in memory (a restart forgets them; what they wrote stays).
 *
 * Never half an import silently: the check pass reads the whole file before anything is written. errorMode "abort"
 * (svc's default): any bad row fails the job and nothing is written; "continue": the bad rows are skipped, counted and
 * listed (first MAX_BAD_ROWS, by row number) and the rest is written. A job that stops while writing (cancel, the index
 * deleted, a write refused) says so with the number of records written and the last row reached.
 */
import { randomUUID } from "node:crypto";
import { realpathSync, statSync } from "node:fs";
import { isAbsolute, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import type { Reservation } from "../account/wallet-book.js";
import type { Usage } from "../account/prices.js";
import type { VectorInput } from "../engine/collection.js";
import { SvcError } from "../errors.js";
import { stderrReporter, type Reporter } from "../store/reporter.js";
import { openSource, type ImportBytes, type RowSource } from "./import-source.js";
import type { IndexCatalog } from "./indexes.js";

/** Import ids are UUIDs; anything else is refused before a lookup. */
export const IMPORT_ID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** Bad rows listed in a job (all are counted). */
export const MAX_BAD_ROWS = 100;
/** Finished jobs kept per tenant (oldest dropped first). */
const KEEP_FINISHED = 100;
/** Jobs waiting or running, server-wide: each may hold a fetched file in memory until it ends. */
export const MAX_QUEUED = 8;

export interface ImportConfig {
  /** Local files are imported only from under this directory (symlinks resolved); null: no local imports. */
  root: string | null;
  /** Largest file fetched from a URL (held in memory while the job runs). */
  maxUrlBytes: number;
}

export const DEFAULT_IMPORT_CONFIG: Readonly<ImportConfig> = Object.freeze({ root: null, maxUrlBytes: 256 << 20 });

/** The `imports` object of config.json: {root?: absolute path, maxUrlBytes?: bytes}; E_BAD_REQUEST names the setting. */
export function parseImportConfig(raw: unknown, field = "imports"): ImportConfig {
  if (raw === undefined) return { ...DEFAULT_IMPORT_CONFIG };
  const bad = (f: string, m: string) => new SvcError("E_BAD_REQUEST", `config.json: ${m}`, { field: f });
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) throw bad(field, `${field} must be an object`);
  const r = raw as Record<string, unknown>;
  for (const k of Object.keys(r))
    if (k !== "root" && k !== "maxUrlBytes") throw bad(`${field}.${k}`, `unknown setting '${field}.${k}' (known: root, maxUrlBytes)`);
  if (r.root !== undefined && (typeof r.root !== "string" || !isAbsolute(r.root)))
    throw bad(`${field}.root`, `${field}.root must be an absolute directory path`);
  const max = r.maxUrlBytes ?? DEFAULT_IMPORT_CONFIG.maxUrlBytes;
  if (typeof max !== "number" || !Number.isInteger(max) || max < 1 || max > 2 ** 31)
    throw bad(`${field}.maxUrlBytes`, `${field}.maxUrlBytes must be an integer in [1, 2^31]`);
  return { root: (r.root as string | undefined) ?? null, maxUrlBytes: max };
}

export type ImportStatus = "Pending" | "InProgress" | "Completed" | "Failed" | "Cancelled";

export interface ImportJob {
  id: string;
  index: string;
  uri: string;
  namespace: string;
  errorMode: "abort" | "continue";
  format: RowSource["format"];
  status: ImportStatus;
  /** InProgress: "checking" every row, then "writing". */
  phase: "checking" | "writing" | null;
  createdAt: number;
  finishedAt: number | null;
  /** Rows in the file (known up front for Parquet, after the check pass for NDJSON). */
  rowsTotal: number | null;
  /** Rows the write pass has gone through (written or skipped as bad). */
  rowsDone: number;
  recordsImported: number;
  badRowCount: number;
  badRows: Array<{ row: number; error: string }>;
  error: string | null;
}

/** What a job needs from the server: the SSRF-safe fetch of an http(s) URL (commons/outbound.ts) and the wallet. */
export interface ImportDeps {
  indexes: IndexCatalog;
  config: ImportConfig;
  /** Parse `uri` as an http(s) URL under the outbound rules and fetch it (E_OUTBOUND_BLOCKED, E_UPSTREAM); at most `maxBytes`. */
  fetchUrl(uri: string, field: string, maxBytes: number): Promise<Buffer>;
  /** Hold the price of writing `usage` (E_WALLET_EMPTY when it does not fit), then settle to what was written. */
  wallet?: {
    reserve(tenant: string, op: string, bound: Usage): Promise<Reservation>;
    settle(r: Reservation, op: string, usage: Usage): Promise<number>;
  };
  /** Told when a finished job's charge cannot be settled (default stderrReporter). */
  reporter?: Reporter;
}

/** The price-table operation an import's writes are charged under (per 1k vectors written, as upserts). */
export const IMPORT_METER = "import";

interface Entry {
  job: ImportJob;
  tenant: string;
  /** Dropped when the job ends (a URL import's bytes are held by it). */
  source: RowSource | null;
  metered: boolean;
  cancelled: boolean;
}

/** One node's import jobs; they run one at a time, in the order started. */
/** A start request as the route checked it (tools/backup-ops.ts start_import: uri 1..2000 characters, namespace at most 512 bytes, onError abort or continue in any case). */
export interface StartImport {
  uri: string;
  errorMode?: { onError: string } | null;
  namespace?: string;
  metered: boolean;
}

export class ImportService {
  private readonly jobs = new Map<string, Map<string, Entry>>();
  private queue: Promise<void> = Promise.resolve();
  private closed = false;

  constructor(private readonly deps: ImportDeps) {}

  /**
   * Start an import: the index must exist, the uri must be readable and, for Parquet, of the right schema
   * (E_IMPORT_SCHEMA) — all checked before this answers; the rows are checked and written in the background.
   */
  async start(tenant: string, index: string, input: StartImport): Promise<ImportJob> {
    if (this.closed) throw new SvcError("E_CLOSED", "the server is shutting down");
    // Pinecone's errorMode.onError in any case (the route's schema checked it is abort or continue); svc's default is abort
    const errorMode = (input.errorMode?.onError.toLowerCase() ?? "abort") as "abort" | "continue";
    const namespace = input.namespace === "__default__" ? "" : (input.namespace ?? "");
    const uri = input.uri;
    await this.deps.indexes.describe(tenant, index);
    if (this.queued() >= MAX_QUEUED)
      throw new SvcError(
        "E_CONFLICT",
        `${MAX_QUEUED} imports are already waiting or running on this server; start this one when one of them has ended`,
        { field: "uri" },
      );
    const source = await openSource(await this.bytesOf(uri));
    const job: ImportJob = {
      id: randomUUID(),
      index,
      uri,
      namespace,
      errorMode,
      format: source.format,
      status: "Pending",
      phase: null,
      createdAt: Date.now(),
      finishedAt: null,
      rowsTotal: source.rows,
      rowsDone: 0,
      recordsImported: 0,
      badRowCount: 0,
      badRows: [],
      error: null,
    };
    const entry: Entry = { job, tenant, source, metered: input.metered, cancelled: false };
    this.tenantJobs(tenant).set(job.id, entry);
    // A job that throws where no step expected it still ends, as Failed, with what it wrote.
    this.queue = this.queue
      .then(() => this.run(entry))
      .catch((err: unknown) =>
        this.finish(entry, "Failed", `internal error: ${(err as Error).message}; ${entry.job.recordsImported} records were written`),
      );
    return { ...job };
  }

  /** The tenant's jobs of one index, newest first, in pages of `limit` after the id `after`. */
  list(tenant: string, index: string, opts: { limit: number; after?: string }): { data: ImportJob[]; next?: string } {
    if (opts.after !== undefined && !IMPORT_ID_RE.test(opts.after))
      throw new SvcError("E_BAD_REQUEST", "paginationToken is not one this server issued", { field: "paginationToken" });
    const all = [...this.tenantJobs(tenant).values()]
      .map((e) => e.job)
      .filter((j) => j.index === index)
      .sort((a, b) => b.createdAt - a.createdAt || a.id.localeCompare(b.id));
    const start = opts.after === undefined ? 0 : all.findIndex((j) => j.id === opts.after) + 1;
    const data = all.slice(start, start + opts.limit).map((j) => ({ ...j }));
    return start + opts.limit < all.length && data.length > 0 ? { data, next: data.at(-1)!.id } : { data };
  }

  describe(tenant: string, index: string, id: string): ImportJob {
    return { ...this.entry(tenant, index, id).job };
  }

  /** Cancel a Pending or InProgress job: it stops before its next batch (what was written stays, and is reported). */
  cancel(tenant: string, index: string, id: string): ImportJob {
    const e = this.entry(tenant, index, id);
    if (e.job.status === "Pending" || e.job.status === "InProgress") e.cancelled = true;
    if (e.job.status === "Pending") this.finish(e, "Cancelled", "cancelled before it started; nothing was written");
    return { ...e.job };
  }

  /** Stop taking jobs; running ones stop at their next batch. */
  async close(): Promise<void> {
    this.closed = true;
    for (const m of this.jobs.values()) for (const e of m.values()) e.cancelled = true;
    await this.queue;
  }

  private entry(tenant: string, index: string, id: string): Entry {
    if (!IMPORT_ID_RE.test(id))
      throw new SvcError("E_BAD_REQUEST", "id must be an import id (a lowercase UUID, as start_import answers)", { field: "id" });
    const e = this.tenantJobs(tenant).get(id);
    if (e === undefined || e.job.index !== index)
      throw new SvcError("E_NOT_FOUND", `no import '${id}' on index '${index}'`, { field: "id" });
    return e;
  }

  private tenantJobs(tenant: string): Map<string, Entry> {
    let m = this.jobs.get(tenant);
    if (m === undefined) this.jobs.set(tenant, (m = new Map()));
    return m;
  }

  /** The bytes `uri` names: an http(s) URL through the outbound rules, else a file under the import root. */
  private async bytesOf(uri: string): Promise<ImportBytes> {
    if (/^https?:\/\//i.test(uri)) return { buffer: await this.deps.fetchUrl(uri, "uri", this.deps.config.maxUrlBytes) };
    if (/^[a-z][a-z0-9+.-]*:/i.test(uri) && !/^file:\/\//i.test(uri))
      throw new SvcError(
        "E_BAD_REQUEST",
        `uri scheme ${uri.slice(0, uri.indexOf(":") + 1)} is not read: give a path under the import root or an http(s) URL`,
        { field: "uri" },
      );
    return resolveImportPath(this.deps.config.root, uri);
  }

  private queued(): number {
    let n = 0;
    for (const m of this.jobs.values()) for (const e of m.values()) if (e.job.finishedAt === null) n++;
    return n;
  }

  private finish(e: Entry, status: ImportStatus, error: string | null): void {
    e.source = null;
    e.job.status = status;
    e.job.phase = null;
    e.job.error = error;
    e.job.finishedAt = Date.now();
    const m = this.tenantJobs(e.tenant);
    const done = [...m.values()].filter((x) => x.job.finishedAt !== null).sort((a, b) => a.job.finishedAt! - b.job.finishedAt!);
    for (const old of done.slice(0, Math.max(0, done.length - KEEP_FINISHED))) m.delete(old.job.id);
  }

  private async run(e: Entry): Promise<void> {
    const job = e.job;
    const source = e.source;
    if (job.status !== "Pending" || source === null) return; // cancelled while queued
    job.status = "InProgress";
    const described = await Promise.resolve(e.tenant)
      .then((t) => this.deps.indexes.describe(t, job.index))
      .catch((err: unknown) => (err instanceof SvcError && err.code === "E_NOT_FOUND" ? null : (err as Error))); // only "not found" is absent
    if (described instanceof Error) return this.finish(e, "Failed", `${described.message}; nothing was written`);
    const dimension = described?.dimension;
    if (dimension === undefined) return this.finish(e, "Failed", `index '${job.index}' no longer exists; nothing was written`);
    // Pass 1: check every row; nothing is written yet.
    job.phase = "checking";
    let rows = 0;
    let good = 0;
    try {
      for await (const batch of source.batches(dimension)) {
        if (e.cancelled) return this.finish(e, "Cancelled", "cancelled while checking rows; nothing was written");
        for (const r of batch) {
          rows++;
          if ("error" in r) {
            job.badRowCount++;
            if (job.badRows.length < MAX_BAD_ROWS) job.badRows.push({ row: r.row, error: r.error });
          } else good++;
        }
      }
    } catch (err) {
      return this.finish(e, "Failed", `the file could not be read to the end: ${(err as Error).message}; nothing was written`);
    }
    job.rowsTotal = rows;
    const first = job.badRows[0];
    if (job.badRowCount > 0 && job.errorMode === "abort") {
      return this.finish(
        e,
        "Failed",
        `${job.badRowCount} of ${rows} rows are bad (first: row ${first!.row}: ${first!.error}); errorMode abort: nothing was written`,
      );
    }
    // The price of the writes is held before the first one: a wallet that cannot cover them fails the job with nothing written.
    let hold: Reservation | null = null;
    if (e.metered && this.deps.wallet !== undefined && good > 0) {
      try {
        hold = await this.deps.wallet.reserve(e.tenant, IMPORT_METER, { written: good });
      } catch (err) {
        return this.finish(e, "Failed", `${(err as Error).message}; nothing was written`);
      }
    }
    // Pass 2: write the good rows batch by batch.
    job.phase = "writing";
    let lastRow = 0;
    let stopped: string | null = null;
    try {
      for await (const batch of source.batches(dimension)) {
        if (e.cancelled) {
          stopped = "cancelled";
          break;
        }
        const vectors: VectorInput[] = [];
        for (const r of batch) if ("vector" in r) vectors.push(r.vector);
        if (batch.length !== vectors.length && job.errorMode === "abort")
          throw new SvcError("E_CONFLICT", "the file changed after its rows were checked");
        if (vectors.length > 0) {
          const res = await this.deps.indexes.use(e.tenant, job.index, (ix) => ix.upsert(job.namespace, vectors));
          job.recordsImported += res.upsertedCount;
        }
        job.rowsDone += batch.length;
        lastRow = batch.at(-1)!.row;
      }
    } catch (err) {
      stopped = (err as Error).message;
    } finally {
      if (hold !== null)
        await this.deps
          .wallet!.settle(hold, IMPORT_METER, { written: job.recordsImported })
          .catch((err) =>
            (this.deps.reporter ?? stderrReporter).background(err, `settle of import ${job.id} (${job.recordsImported} records written)`),
          );
    }
    if (stopped === null) {
      return this.finish(e, "Completed", job.badRowCount > 0 ? `${job.badRowCount} bad rows skipped (errorMode continue)` : null);
    }
    const written = `${job.recordsImported} records were written (rows 1..${lastRow} of ${rows})`;
    return this.finish(
      e,
      stopped === "cancelled" ? "Cancelled" : "Failed",
      stopped === "cancelled" ? `cancelled: ${written}` : `stopped: ${stopped}; ${written}`,
    );
  }
}

/**
 * A local path (absolute, `file://`, or relative to the root) resolved with every symlink followed; E_IMPORT_PATH unless
 * it lies under the (also resolved) import root, E_NOT_FOUND when it does not exist, E_BAD_REQUEST when not a file.
 */
export function resolveImportPath(root: string | null, uri: string): { path: string; size: number } {
  if (root === null)
    throw new SvcError("E_IMPORT_PATH", "this server has no import root (config.json imports.root): import from an http(s) URL", {
      field: "uri",
    });
  if (uri.includes("\0")) throw new SvcError("E_BAD_REQUEST", "uri must not contain NUL", { field: "uri" });
  let p = uri;
  if (/^file:\/\//i.test(uri)) {
    try {
      p = fileURLToPath(uri);
    } catch (err) {
      throw new SvcError("E_BAD_REQUEST", `uri is not a file URL: ${(err as Error).message}`, { field: "uri" });
    }
  }
  let realRoot: string;
  try {
    realRoot = realpathSync(root);
  } catch {
    throw new SvcError("E_IMPORT_PATH", `the import root ${root} does not exist`, { field: "uri" });
  }
  const inside = (x: string) => x === realRoot || x.startsWith(realRoot.endsWith(sep) ? realRoot : realRoot + sep);
  // Lexically first (a path outside is refused whether or not it exists: no probing of the disk), then with symlinks resolved.
  if (!inside(resolve(realRoot, p)))
    throw new SvcError("E_IMPORT_PATH", `'${uri.slice(0, 200)}' is outside the import root`, { field: "uri" });
  let real: string;
  try {
    real = realpathSync(resolve(realRoot, p));
  } catch {
    throw new SvcError("E_NOT_FOUND", `no file '${uri.slice(0, 200)}' under the import root`, { field: "uri" });
  }
  if (!inside(real))
    throw new SvcError("E_IMPORT_PATH", `'${uri.slice(0, 200)}' leads outside the import root (through a symlink)`, { field: "uri" });
  const st = statSync(real);
  if (!st.isFile()) throw new SvcError("E_BAD_REQUEST", `'${uri.slice(0, 200)}' is not a file`, { field: "uri" });
  return { path: real, size: st.size };
}
