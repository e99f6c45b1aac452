/** @module records — typed records per tenant: text embedded by the static encoder, kind/tags/ts filters, timeline pages, TTL, forget.
 * The service checks each operation and runs it on a tenant's RecordStore (record-store.ts): one Collection on this node
 * (record-local-stores.ts), or in cluster mode shards on the replicated log (cluster/sharded-records.ts). Its parts, one job each:
 * ranking (record-ranking.ts), timeline paging (record-timeline.ts), read filters and expiry (record-filters.ts, record-expiry-sweep.ts),
 * import and export (record-import-export.ts); the BM25 indexes are the local stores' (record-lexical.ts). */
import type { Collection } from "../engine/collection.js";
import { SvcError } from "../errors.js";
import type { Kernels } from "../kernels/abi.js";
import type { ScanPool } from "../pool/scan-pool.js";
import { stderrReporter, type Reporter } from "../store/reporter.js";
import type { Durability } from "../store/wal.js";
import { SWEEP_MS, sweepExpired } from "./record-expiry-sweep.js";
import { DEFAULT_RECORD_TOP_K } from "../input-rules.js";
import {
  checkNamespace,
  matches,
  newId,
  predicate,
  toRow,
  toView,
  type ContainerRecord,
  type ForgetRequest,
  type QueryRequest,
  type RecordInput,
  type RecordView,
} from "./record-fields.js";
import { isExpired, liveFilter, readFilter } from "./record-filters.js";
import { exportRecords, importRecords, STAGING_PREFIX } from "./record-import-export.js";
import { LocalRecordStores } from "./record-local-stores.js";
import { rankByVector, rankHybrid } from "./record-ranking.js";
import { writeRows, type Embedder, type RecordStore } from "./record-store.js";
import { Timeline, type TimelinePage, type TimelineRequest } from "./record-timeline.js";
import type { ReadOptions, Written } from "./vector-index.js";

export {
  DAY_MS,
  MAX_ITEMS,
  MAX_META_BYTES,
  MAX_TAGS,
  MAX_TEXT_BYTES,
  NAMESPACE_RE,
  checkNamespace,
  type ForgetRequest,
  type Predicate,
  type QueryRequest,
  type RecordInput,
  type RecordView,
} from "./record-fields.js";
export { SWEEP_MS } from "./record-expiry-sweep.js";
export { RRF_K, fuse } from "./record-ranking.js";
export type { Embedder } from "./record-store.js";
export { DEFAULT_TIMELINE, MAX_TIMELINE, type TimelineRequest } from "./record-timeline.js";

export interface RecordServiceOptions {
  kernels: Kernels;
  pool: ScanPool;
  encoder: Embedder;
  durability?: Durability;
  /** Told of damage and of background failures: the expiry sweep's, a collection's (CollectionOptions); default stderrReporter. */
  reporter?: Reporter;
  /** Clock (ms); tests move it to expire records. */
  now?: () => number;
  /**
   * Cluster mode: the tenant's store on the shared log (cluster/sharded-records.ts); with `create`
   * false, null when the tenant has none yet. Absent: one Collection per tenant in this data dir.
   * Such a store expires and sweeps on its own shards (the service's sweeper leaves it alone).
   */
  stores?: (tenant: string, create: boolean) => Promise<RecordStore | null>;
}

/**
 * Records by tenant, each tenant's in one RecordStore: on one node one Collection per tenant at
 * <data>/tenants/<tenant>/records, record namespaces its namespaces. Expiry: a record with ttlDays
 * carries `exp` = ingest time + ttlDays days; every read adds "exp absent or > now" to its filter,
 * so an expired record vanishes at once, and the sweeper deletes expired rows every SWEEP_MS.
 */
export class RecordService {
  /** This node's collections; null in cluster mode (opts.stores). */
  private readonly local: LocalRecordStores | null;
  private readonly now: () => number;
  private sweeper: NodeJS.Timeout | null = null;
  private closed = false;

  constructor(
    readonly dataDir: string,
    private readonly opts: RecordServiceOptions,
  ) {
    this.now = opts.now ?? Date.now;
    this.local =
      opts.stores === undefined
        ? new LocalRecordStores(dataDir, {
            kernels: opts.kernels,
            pool: opts.pool,
            durability: opts.durability,
            dimension: opts.encoder.dimension,
            reporter: opts.reporter,
          })
        : null;
    if (this.local !== null) {
      const reporter = opts.reporter ?? stderrReporter;
      this.sweeper = setInterval(() => void this.sweep().catch((err) => reporter.background(err, "expiry sweep of the records")), SWEEP_MS);
      this.sweeper.unref();
    }
  }

  /** BM25 indexes built from a namespace's records so far in this node's collections (writes update a built index; they never cause a build). */
  get lexicalBuilds(): number {
    return this.local?.lexicalBuilds ?? 0;
  }

  /** `items` as the route checked them (1..MAX_RECORD_ITEMS, each in range: tools/record-ops.ts); the namespace, a path parameter, is checked here. */
  async ingest(tenant: string, ns: string, items: RecordInput[]): Promise<{ ids: string[]; count: number } & Written> {
    checkNamespace(ns);
    const now = this.now();
    const rows = items.map((item, i) => toRow(item, `items[${i}]`, now));
    return writeRows(
      (await this.store(tenant, true))!,
      this.opts.encoder,
      ns,
      rows.map((r) => ({ ...r, id: newId() })),
    );
  }

  /**
   * Ranked by cosine when `text` is given (`score` = the cosine), or by reciprocal rank fusion of
   * cosine and BM25 with `mode: "hybrid"` (`score` = the fused score); else the newest first.
   * Typed filters apply either way. `usage.scanned` is set to the rows the vector ranking considered (what metering charges).
   * `q` as the route checked it (types and ranges: tools/record-ops.ts); the cross-field rules are checked here. */
  async query(
    tenant: string,
    ns: string,
    q: QueryRequest,
    usage: { scanned?: number } = {},
    read: ReadOptions = {},
  ): Promise<{ records: RecordView[]; namespace: string }> {
    checkNamespace(ns);
    const topK = q.topK ?? DEFAULT_RECORD_TOP_K;
    const pred = predicate(q);
    const includeText = q.includeText ?? false;
    const includeMeta = q.includeMeta ?? false;
    // With text the default ranks by cosine and `score` is the cosine (the API document's contract); hybrid is asked for by name.
    const mode = q.mode ?? "vector";
    if (mode === "hybrid" && typeof q.text !== "string") throw new SvcError("E_BAD_REQUEST", "mode 'hybrid' needs text", { field: "text" });
    const s = await this.visible(tenant, read);
    if (s === null) return { records: [], namespace: ns };
    const now = this.now();
    const filter = await readFilter(s, ns, pred, now, read);
    if (typeof q.text === "string") {
      const rank = mode === "hybrid" ? rankHybrid : rankByVector;
      const req = { ns, text: q.text, topK, pred, filter, includeText, includeMeta, now };
      return { records: await rank(s, this.opts.encoder, req, usage, read), namespace: ns };
    }
    const rows = await s.order(ns, { filter, limit: topK, rows: true, payload: includeText || includeMeta }, read);
    return { records: rows.map((r) => toView(r.id, r.metadata!, r.payload, includeText, includeMeta)), namespace: ns };
  }

  /** A page of the namespace newest first (record-timeline.ts); `req` as the route parsed it from the query string. */
  async timeline(tenant: string, ns: string, req: TimelineRequest, read: ReadOptions = {}): Promise<TimelinePage & { namespace: string }> {
    checkNamespace(ns);
    const timeline = new Timeline(req, this.now);
    const s = await this.visible(tenant, read);
    if (s === null) return { records: [], namespace: ns, nextCursor: null };
    const { records, ...cursor } = await timeline.page(s, ns, read);
    return { records, namespace: ns, ...cursor };
  }

  async get(tenant: string, ns: string, id: string, read: ReadOptions = {}): Promise<RecordView> {
    checkNamespace(ns);
    const s = await this.visible(tenant, read);
    const v = s === null ? undefined : (await s.fetch(ns, [id], read))[0];
    if (v === undefined || isExpired(v.metadata, this.now()))
      throw new SvcError("E_NOT_FOUND", `no record '${id}' in namespace '${ns}'`, { field: "id" });
    return toView(v.id, v.metadata, v.payload, true, true);
  }

  async delete(tenant: string, ns: string, id: string, read: ReadOptions = {}): Promise<{ deleted: boolean } & Written> {
    checkNamespace(ns);
    const s = await this.visible(tenant, read);
    const v = s === null ? undefined : (await s.fetch(ns, [id], read))[0];
    if (v === undefined || isExpired(v.metadata, this.now())) return { deleted: false };
    const w = await s!.delete(ns, [id]);
    return { deleted: true, ...(w.seq === undefined ? {} : { seq: w.seq }) };
  }

  /** Delete what matches every given criterion (kind, tagsAny, tagsAll, tsGte, tsLt, ids); at least one is required (a cross-field rule, checked here). */
  async forget(tenant: string, ns: string, body: ForgetRequest, read: ReadOptions = {}): Promise<{ forgottenCount: number } & Written> {
    checkNamespace(ns);
    const pred = predicate(body);
    const ids = body.ids;
    if (ids === undefined && Object.values(pred).every((v) => v === undefined)) {
      throw new SvcError("E_BAD_REQUEST", "give at least one of kind, tagsAny, tagsAll, tsGte, tsLt or ids", { field: "kind" });
    }
    const s = await this.visible(tenant, read);
    if (s === null) return { forgottenCount: 0 };
    let seq: number | undefined;
    const seen = (w: Written) => void (w.seq !== undefined && (seq = Math.max(seq ?? 0, w.seq)));
    const done = (forgottenCount: number) => ({ forgottenCount, ...(seq === undefined ? {} : { seq }) });
    if (ids !== undefined) {
      const targets = (await s.fetch(ns, [...new Set(ids)], read)).filter((v) => matches(pred, v.metadata, this.now())).map((v) => v.id);
      if (targets.length === 0) return done(0);
      const w = await s.delete(ns, targets);
      seen(w);
      return done(w.deleted);
    }
    // By predicate: delete the matching ids in pages (expired rows are the sweeper's).
    const filter = liveFilter(pred, this.now());
    let forgotten = 0;
    for (;;) {
      const targets = (await s.order(ns, { filter, limit: 10_000, rows: false }, seq === undefined ? read : { after: seq })).map(
        (r) => r.id,
      );
      if (targets.length === 0) break;
      const w = await s.delete(ns, targets);
      seen(w);
      forgotten += w.deleted;
      await s.settled();
    }
    return done(forgotten);
  }

  async stats(
    tenant: string,
    ns: string,
    read: ReadOptions = {},
  ): Promise<{ count: number; byKind: Record<string, number>; oldestTs: number | null; newestTs: number | null }> {
    checkNamespace(ns);
    const s = await this.visible(tenant, read);
    if (s === null) return { count: 0, byKind: {}, oldestTs: null, newestTs: null };
    const filter = liveFilter({}, this.now());
    const [range, count, byKind] = await Promise.all([
      s.range(ns, "ts", filter, read),
      s.count(ns, filter, read),
      s.facet(ns, "kind", filter, read),
    ]);
    return { count, byKind, oldestTs: range?.min ?? null, newestTs: range?.max ?? null };
  }

  /** The tenant's namespaces holding live (unexpired) records, sorted, with their counts; opens nothing for a tenant without records. */
  async namespaces(tenant: string, read: ReadOptions = {}): Promise<Array<{ namespace: string; count: number }>> {
    if (this.local !== null && !this.local.has(tenant)) return [];
    const s = await this.visible(tenant, read);
    if (s === null) return [];
    const filter = liveFilter({}, this.now());
    const names = (await s.namespaces(read)).filter((ns) => !ns.startsWith(STAGING_PREFIX)).sort();
    const counts = await Promise.all(names.map((namespace) => s.count(namespace, filter, read)));
    return names.map((namespace, i) => ({ namespace, count: counts[i]! })).filter((n) => n.count > 0);
  }

  /** Every live record of a namespace with its expiry, oldest first (ties by id): what an export writes. */
  async all(tenant: string, ns: string, read: ReadOptions = {}): Promise<ContainerRecord[]> {
    checkNamespace(ns);
    const s = await this.visible(tenant, read);
    return s === null ? [] : exportRecords(s, ns, this.now(), read);
  }

  /** Replace (schema 1) or merge into (schema 2) a namespace with exported records (record-import-export.ts). */
  async restore(tenant: string, ns: string, records: ContainerRecord[], mode: "replace" | "merge"): Promise<number> {
    checkNamespace(ns);
    return importRecords((await this.store(tenant, true))!, this.opts.encoder, ns, records, mode);
  }

  /** Delete expired records in this node's collections (cluster mode: the shards sweep themselves). */
  async sweep(): Promise<number> {
    return this.local === null ? 0 : sweepExpired(this.local.all(), this.now);
  }

  /** Open (replay) every tenant's records collection on disk; what failed is returned, not thrown. */
  async openAll(onOpened: () => void = () => {}): Promise<Array<{ store: string; error: unknown }>> {
    return this.local === null ? [] : this.local.openAll(onOpened);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.sweeper) clearInterval(this.sweeper);
    await this.local?.close();
  }

  // ---- internals ------------------------------------------------------------------------

  /**
   * The tenant's store once every write acknowledged before the call is visible, so reads see the caller's own acknowledged writes
   * (an ingest, delete or import that has answered; in cluster mode those whose seq the read passes as `after`). Null: none yet (cluster mode).
   */
  private async visible(tenant: string, read: ReadOptions): Promise<RecordStore | null> {
    const s = await this.store(tenant, false);
    if (s !== null && read.after === undefined) await s.settled();
    return s;
  }

  private store(tenant: string, create: boolean): Promise<RecordStore | null> {
    if (this.closed) throw new SvcError("E_CLOSED", "the server is shutting down");
    return this.local !== null ? this.local.get(tenant) : this.opts.stores!(tenant, create);
  }

  /** The tenant's Collection on this node (tests look behind the API with it). */
  private async collection(tenant: string): Promise<Collection> {
    return (await this.local!.get(tenant)).collection;
  }
}
