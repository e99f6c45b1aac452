/** @module records — typed records per tenant: text embedded by the static encoder, kind/tags/ts filters, timeline pages, TTL, forget.
 * One service whose parts (ingest, query modes, timeline cursor, TTL sweep, import) run on a tenant's RecordStore (record-store.ts):
 * one Collection on this node, or in cluster mode shards on the replicated log (cluster/sharded-records.ts). */
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { Collection } from "../engine/collection.js";
import type { Metadata } from "../engine/filter/metadata.js";
import { SvcError } from "../errors.js";
import type { Kernels } from "../kernels/abi.js";
import type { ScanPool } from "../pool/scan-pool.js";
import { stderrReporter, type Reporter } from "../store/reporter.js";
import type { Durability } from "../store/wal.js";
import {
  bool,
  checkNamespace,
  intIn,
  list,
  matches,
  newId,
  predicate,
  queryInt,
  restoredRow,
  stringList,
  toRow,
  toView,
  type ContainerRecord,
  type Predicate,
  type RecordView,
  type Row,
} from "./record-fields.js";
import { LocalRecordStore, type RecordStore } from "./record-store.js";
import type { ReadOptions, Written } from "./vector-index.js";

export {
  DAY_MS,
  MAX_META_BYTES,
  MAX_TAGS,
  MAX_TEXT_BYTES,
  NAMESPACE_RE,
  checkNamespace,
  type Predicate,
  type RecordView,
} from "./record-fields.js";

/** What records need of a text encoder (src/encoder/): a fixed dimension and batch encoding to unit vectors. */
export interface Embedder {
  readonly dimension: number;
  /** n texts -> n * dimension floats, each row L2-normalized. */
  encodeBatch(texts: string[]): Float32Array;
}

export const MAX_ITEMS = 1000;
export const MAX_TOP_K = 1000;
export const MAX_TIMELINE = 500;
export const DEFAULT_TIMELINE = 50;
/** Expired records are deleted by the sweeper this often (reads hide them at once). */
export const SWEEP_MS = 60_000;
/** Hybrid queries (`mode: "hybrid"`) fuse the vector and BM25 rankings by reciprocal rank: score = sum of 1 / (RRF_K + rank), rank from 1, so at most 2 / (RRF_K + 1). */
export const RRF_K = 60;
/** Namespaces an import fills before it is moved into place; never valid as user namespaces. */
const STAGING_PREFIX = "~import~";

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
  private readonly local = new Map<string, Promise<LocalRecordStore>>();
  /** The local stores opened so far. */
  private readonly opened: LocalRecordStore[] = [];
  private readonly now: () => number;
  private sweeper: NodeJS.Timeout | null = null;
  private closed = false;

  constructor(
    readonly dataDir: string,
    private readonly opts: RecordServiceOptions,
  ) {
    this.now = opts.now ?? Date.now;
    if (opts.stores === undefined) {
      const reporter = opts.reporter ?? stderrReporter;
      this.sweeper = setInterval(() => void this.sweep().catch((err) => reporter.background(err, "expiry sweep of the records")), SWEEP_MS);
      this.sweeper.unref();
    }
  }

  /** BM25 indexes built from a namespace's records so far in this node's collections (writes update a built index; they never cause a build). */
  get lexicalBuilds(): number {
    return this.opened.reduce((n, s) => n + s.lexicon.builds, 0);
  }

  async ingest(tenant: string, ns: string, items: unknown): Promise<{ ids: string[]; count: number } & Written> {
    checkNamespace(ns);
    if (!Array.isArray(items) || items.length === 0)
      throw new SvcError("E_BAD_REQUEST", "items must be a non-empty array", { field: "items" });
    if (items.length > MAX_ITEMS)
      throw new SvcError("E_BAD_REQUEST", `at most ${MAX_ITEMS} items per call, got ${items.length}`, { field: "items" });
    const now = this.now();
    const rows = items.map((item, i) => toRow(item, `items[${i}]`, now));
    return this.write(
      (await this.store(tenant, true))!,
      ns,
      rows.map((r) => ({ ...r, id: newId() })),
    );
  }

  /**
   * Ranked by cosine when `text` is given (`score` = the cosine), or by reciprocal rank fusion of
   * cosine and BM25 with `mode: "hybrid"` (`score` = the fused score); else the newest first.
   * Typed filters apply either way. `usage.scanned` is set to the rows the vector ranking considered (what metering charges). */
  async query(
    tenant: string,
    ns: string,
    q: Record<string, unknown>,
    usage: { scanned?: number } = {},
    read: ReadOptions = {},
  ): Promise<{ records: RecordView[]; namespace: string }> {
    checkNamespace(ns);
    const topK = intIn(q.topK, "topK", 1, MAX_TOP_K, 10);
    const pred = predicate(q);
    const includeText = bool(q.includeText, "includeText", false);
    const includeMeta = bool(q.includeMeta, "includeMeta", false);
    if (q.text !== undefined && (typeof q.text !== "string" || q.text.trim() === ""))
      throw new SvcError("E_BAD_REQUEST", "text must be a non-empty string (omit it to list by time)", { field: "text" });
    // With text the default ranks by cosine and `score` is the cosine (the API document's contract); hybrid is asked for by name.
    const mode = q.mode ?? "vector";
    if (mode !== "vector" && mode !== "hybrid") throw new SvcError("E_BAD_REQUEST", "mode must be 'vector' or 'hybrid'", { field: "mode" });
    if (mode === "hybrid" && typeof q.text !== "string") throw new SvcError("E_BAD_REQUEST", "mode 'hybrid' needs text", { field: "text" });
    const s = await this.visible(tenant, read);
    if (s === null) return { records: [], namespace: ns };
    const filter = await this.readFilter(s, ns, pred, read);
    const view = (id: string, metadata: Metadata | undefined, payload: Uint8Array | undefined, score?: number) =>
      toView(id, metadata!, payload, includeText, includeMeta, score);
    if (mode === "hybrid")
      return {
        records: await this.hybrid(s, ns, q.text as string, topK, pred, filter, includeText, includeMeta, usage, read),
        namespace: ns,
      };
    if (typeof q.text === "string") {
      const vector = this.opts.encoder.encodeBatch([q.text]);
      const res = await s.search(ns, { vector, topK, filter, payload: includeText || includeMeta }, read);
      usage.scanned = res.scanned;
      return { records: res.matches.map((m) => view(m.id, m.metadata, m.payload, m.score)), namespace: ns };
    }
    const rows = await s.order(ns, { filter, limit: topK, rows: true, payload: includeText || includeMeta }, read);
    return { records: rows.map((r) => view(r.id, r.metadata, r.payload)), namespace: ns };
  }

  /**
   * Newest first: by ts descending, records sharing a ts by id descending (code-unit order), at
   * most `limit` per page. `nextCursor` (null on the last page) is always the oldest ts returned,
   * passed back as `until` (exclusive) for the next page. So that paging by `until` alone neither
   * skips nor repeats records sharing that ts, a page ends at a ts boundary: the trailing group of
   * equal ts moves whole to the next page. Only when one group alone exceeds `limit` does a page end
   * inside it; then `nextAfter` is the id of its last record, and `until` = nextCursor with
   * `after` = nextAfter continues right after that record (the rest of the group, then older ts).
   */
  async timeline(
    tenant: string,
    ns: string,
    params: URLSearchParams,
    read: ReadOptions = {},
  ): Promise<{ records: RecordView[]; namespace: string; nextCursor: number | null; nextAfter?: string }> {
    checkNamespace(ns);
    const limit = intIn(queryInt(params, "limit"), "limit", 1, MAX_TIMELINE, DEFAULT_TIMELINE);
    const until = queryInt(params, "until");
    const after = afterId(params, until);
    const pred = predicate(
      {
        kind: list(params, "kind"),
        tagsAny: list(params, "tagsAny"),
        tagsAll: list(params, "tagsAll"),
        tsGte: queryInt(params, "since"),
        // with `after`, the records at ts `until` itself are in the window too
        tsLt: until === undefined ? undefined : after === undefined ? until : until + 1,
      },
      { tsGte: "since", tsLt: "until" },
    );
    const s = await this.visible(tenant, read);
    if (s === null) return { records: [], namespace: ns, nextCursor: null };
    // The stream after the position, in timeline order: the rest of the group at `until` (after `after`), then ts < until.
    const rest =
      after === undefined
        ? []
        : (await this.group(s, ns, pred, until!, read)).filter((id) => id < after).map((id) => ({ id, value: until! }));
    let page: Array<{ id: string; value: number }>;
    let more: boolean;
    let nextAfter: string | undefined;
    if (rest.length > limit) {
      page = rest.slice(0, limit);
      more = true;
      nextAfter = page.at(-1)!.id;
    } else {
      // rows ordered by ts only (ties in no set order): every group but the last one is whole
      const older = await s.order(
        ns,
        { filter: this.filter({ ...pred, tsLt: after === undefined ? pred.tsLt : until }), limit: limit + 1 - rest.length, rows: false },
        read,
      );
      const stream = [...rest, ...older];
      more = stream.length > limit;
      if (!more) page = stream;
      else {
        const lastTs = stream[limit - 1]!.value;
        if (stream[limit]!.value !== lastTs) page = stream.slice(0, limit);
        else {
          // the group at lastTs runs past the page: it moves whole to the next page, unless it alone fills the page
          const cut = stream.findIndex((r) => r.value === lastTs);
          if (cut > 0) page = stream.slice(0, cut);
          else {
            page = (await this.group(s, ns, pred, lastTs, read)).slice(0, limit).map((id) => ({ id, value: lastTs }));
            nextAfter = page.at(-1)!.id;
          }
        }
      }
    }
    const ids = sortGroups(page);
    const byId = new Map((await s.fetch(ns, ids, read)).map((v) => [v.id, v]));
    const records = ids
      .filter((id) => byId.has(id))
      .map((id) => byId.get(id)!)
      .map((v) => toView(v.id, v.metadata, v.payload, true, true));
    return { records, namespace: ns, nextCursor: more ? page.at(-1)!.value : null, ...(nextAfter === undefined ? {} : { nextAfter }) };
  }

  /** Ids of the records at exactly `ts` under the predicate, in timeline order (id descending). */
  private async group(s: RecordStore, ns: string, pred: Predicate, ts: number, read: ReadOptions): Promise<string[]> {
    const ids = await s.ids(ns, this.filter({ ...pred, tsGte: Math.max(ts, pred.tsGte ?? ts), tsLt: ts + 1 }), read);
    return ids.sort((a, b) => (a < b ? 1 : a > b ? -1 : 0));
  }

  async get(tenant: string, ns: string, id: string, read: ReadOptions = {}): Promise<RecordView> {
    checkNamespace(ns);
    const s = await this.visible(tenant, read);
    const v = s === null ? undefined : (await s.fetch(ns, [id], read))[0];
    if (v === undefined || this.expired(v.metadata))
      throw new SvcError("E_NOT_FOUND", `no record '${id}' in namespace '${ns}'`, { field: "id" });
    return toView(v.id, v.metadata, v.payload, true, true);
  }

  async delete(tenant: string, ns: string, id: string, read: ReadOptions = {}): Promise<{ deleted: boolean } & Written> {
    checkNamespace(ns);
    const s = await this.visible(tenant, read);
    const v = s === null ? undefined : (await s.fetch(ns, [id], read))[0];
    if (v === undefined || this.expired(v.metadata)) return { deleted: false };
    const w = await s!.delete(ns, [id]);
    return { deleted: true, ...(w.seq === undefined ? {} : { seq: w.seq }) };
  }

  /** Delete what matches every given criterion (kind, tagsAny, tagsAll, tsGte, tsLt, ids); at least one is required. */
  async forget(
    tenant: string,
    ns: string,
    body: Record<string, unknown>,
    read: ReadOptions = {},
  ): Promise<{ forgottenCount: number } & Written> {
    checkNamespace(ns);
    const pred = predicate(body);
    const ids = body.ids === undefined ? undefined : stringList(body.ids, "ids", 10_000);
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
    const filter = this.filter(pred);
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
    const filter = this.filter({});
    const [range, count, byKind] = await Promise.all([
      s.range(ns, "ts", filter, read),
      s.count(ns, filter, read),
      s.facet(ns, "kind", filter, read),
    ]);
    return { count, byKind, oldestTs: range?.min ?? null, newestTs: range?.max ?? null };
  }

  /** The tenant's namespaces holding live (unexpired) records, sorted, with their counts; opens nothing for a tenant without records. */
  async namespaces(tenant: string, read: ReadOptions = {}): Promise<Array<{ namespace: string; count: number }>> {
    if (this.opts.stores === undefined && !this.local.has(tenant) && !existsSync(join(this.dataDir, "tenants", tenant, "records")))
      return [];
    const s = await this.visible(tenant, read);
    if (s === null) return [];
    const filter = this.filter({});
    const names = (await s.namespaces(read)).filter((ns) => !ns.startsWith(STAGING_PREFIX)).sort();
    const counts = await Promise.all(names.map((namespace) => s.count(namespace, filter, read)));
    return names.map((namespace, i) => ({ namespace, count: counts[i]! })).filter((n) => n.count > 0);
  }

  /** Every live record of a namespace with its expiry, oldest first (ties by id): what an export writes. */
  async all(tenant: string, ns: string, read: ReadOptions = {}): Promise<ContainerRecord[]> {
    checkNamespace(ns);
    const s = await this.visible(tenant, read);
    if (s === null) return [];
    const out: ContainerRecord[] = [];
    let tsLt: number | undefined;
    // Pages of 10k by ts descending; a page ending inside a ts group is cut before that group.
    for (;;) {
      const rows = await s.order(ns, { filter: this.filter({ tsLt }), limit: 10_000, rows: true }, read);
      let page = rows;
      if (rows.length === 10_000) {
        const last = rows.at(-1)!.value;
        page = rows.filter((r) => r.value !== last);
        if (page.length === 0)
          throw new SvcError("E_CONFLICT", `more than 10,000 records share ts ${last}; cannot page through them`, { field: "ts" });
      }
      for (const r of page)
        out.push({
          ...toView(r.id, r.metadata!, r.payload, true, true),
          ...(typeof r.metadata!.exp === "number" ? { exp: r.metadata!.exp } : {}),
        });
      if (rows.length < 10_000) break;
      tsLt = page.at(-1)!.value;
    }
    return out.sort((a, b) => a.ts - b.ts || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }

  /**
   * Replace (schema 1) or merge into (schema 2) a namespace with exported records. Replace
   * writes everything into a staging namespace first and then moves it into place in one
   * logged step, so the namespace is either untouched or fully replaced (in cluster mode: per
   * shard, each shard's move one logged step).
   */
  async restore(tenant: string, ns: string, records: ContainerRecord[], mode: "replace" | "merge"): Promise<number> {
    checkNamespace(ns);
    const s = (await this.store(tenant, true))!;
    const target = mode === "replace" ? `${STAGING_PREFIX}${ns}~${randomBytes(4).toString("hex")}` : ns;
    try {
      for (let i = 0; i < records.length; i += MAX_ITEMS) {
        const rows = records.slice(i, i + MAX_ITEMS).map((r) => ({ ...restoredRow(r), id: r.id }));
        await this.write(s, target, rows);
      }
      if (mode === "replace") await s.move(target, ns);
    } catch (err) {
      if (mode === "replace") await s.deleteAll(target).catch(() => {}); // the staging namespace is dropped at the next open anyway
      throw err;
    }
    return records.length;
  }

  /** Delete expired records in this node's collections; also drops staging namespaces a crash left behind. */
  async sweep(): Promise<number> {
    let n = 0;
    for (const p of this.local.values()) {
      const s = await p.catch(() => null); // a store that failed to open is dropped from `local` and its failure went to its caller
      if (s === null) continue;
      const c = s.collection;
      for (const ns of c.namespaces()) {
        if (ns.startsWith(STAGING_PREFIX)) continue;
        const ids = c.ids(ns, { exp: { $lte: this.now() } });
        if (ids.length > 0) n += (await s.delete(ns, ids)).deleted;
      }
    }
    return n;
  }

  /** Open (replay) every tenant's records collection on disk; what failed is returned, not thrown. */
  async openAll(onOpened: () => void = () => {}): Promise<Array<{ store: string; error: unknown }>> {
    const failed: Array<{ store: string; error: unknown }> = [];
    if (this.opts.stores !== undefined) return failed;
    const root = join(this.dataDir, "tenants");
    for (const tenant of existsSync(root) ? readdirSync(root).sort() : []) {
      if (this.closed) break;
      if (existsSync(join(root, tenant, "records")))
        await this.localStore(tenant).then(onOpened, (error: unknown) => failed.push({ store: `records:${tenant}`, error }));
    }
    return failed;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.sweeper) clearInterval(this.sweeper);
    await Promise.all([...this.local.values()].map(async (p) => (await p.catch(() => null))?.close())); // one that failed to open has nothing to close
  }

  // ---- internals ------------------------------------------------------------------------

  private async write(s: RecordStore, ns: string, rows: Array<Row & { id: string }>): Promise<{ ids: string[]; count: number } & Written> {
    const vectors = this.opts.encoder.encodeBatch(rows.map((r) => r.text));
    const dim = this.opts.encoder.dimension;
    const w = await s.upsert(
      ns,
      rows.map((r, i) => ({
        id: r.id,
        values: vectors.subarray(i * dim, (i + 1) * dim),
        text: r.text,
        metadata: r.metadata,
        payload: r.payload,
      })),
    );
    return { ids: rows.map((r) => r.id), count: rows.length, ...(w.seq === undefined ? {} : { seq: w.seq }) };
  }

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
    return this.opts.stores === undefined ? this.localStore(tenant) : this.opts.stores(tenant, create);
  }

  /** The tenant's Collection on this node (tests look behind the API with it). */
  private async collection(tenant: string): Promise<Collection> {
    return (await this.localStore(tenant)).collection;
  }

  private localStore(tenant: string): Promise<LocalRecordStore> {
    let p = this.local.get(tenant);
    if (p === undefined) {
      const dir = join(this.dataDir, "tenants", tenant, "records");
      mkdirSync(dir, { recursive: true });
      p = Collection.open(dir, {
        kernels: this.opts.kernels,
        pool: this.opts.pool,
        durability: this.opts.durability,
        dimension: this.opts.encoder.dimension,
        metric: "cosine",
        damage: { store: `records:${tenant}`, root: this.dataDir },
        reporter: this.opts.reporter,
      }).then(async (c) => {
        // An import interrupted by a crash leaves its staging namespace: drop it.
        for (const ns of c.namespaces()) if (ns.startsWith(STAGING_PREFIX)) await c.delete(ns, { deleteAll: true });
        const s = new LocalRecordStore(c);
        this.opened.push(s);
        return s;
      });
      p.catch(() => this.local.delete(tenant));
      this.local.set(tenant, p);
    }
    return p;
  }

  /**
   * Reciprocal rank fusion of the vector ranking and the BM25 ranking (each cut to the
   * records matching the predicate), best `topK`; `score` is the fused score.
   * `filter`: readFilter's engine filter of `pred` (the vector half's); BM25 checks `pred` itself.
   */
  private async hybrid(
    s: RecordStore,
    ns: string,
    text: string,
    topK: number,
    pred: Predicate,
    filter: Record<string, unknown> | undefined,
    includeText: boolean,
    includeMeta: boolean,
    usage: { scanned?: number },
    read: ReadOptions,
  ): Promise<RecordView[]> {
    const depth = Math.max(50, topK * 5);
    const vector = this.opts.encoder.encodeBatch([text]);
    // The BM25 top `depth` among the records the predicate keeps: the fusion reads no deeper.
    const [res, words] = await Promise.all([
      s.search(ns, { vector, topK: depth, filter, payload: false }, read),
      s.lexical(ns, text, depth, pred, this.now(), read),
    ]);
    usage.scanned = res.scanned;
    const fused = fuse([res.matches.map((m) => m.id), words.map((h) => h.id)]).slice(0, topK);
    const rows = new Map(
      (
        await s.fetch(
          ns,
          fused.map(([id]) => id),
          read,
        )
      ).map((v) => [v.id, v]),
    );
    return fused
      .filter(([id]) => rows.has(id))
      .map(([id, score]) => toView(id, rows.get(id)!.metadata, rows.get(id)!.payload, includeText, includeMeta, score));
  }

  /** The engine filter for a predicate, plus "not expired". */
  private filter(p: Predicate): Record<string, unknown> {
    return { $and: [{ $or: [{ exp: { $exists: false } }, { exp: { $gt: this.now() } }] }, ...this.clauses(p)] };
  }

  /**
   * The engine filter of a query: the predicate, plus "not expired" only while the namespace holds an expired
   * record (until the sweeper deletes it); undefined when that leaves nothing. So a query without a predicate
   * takes the unfiltered plans (the full scan or the approximate index) instead of a row list of every record
   * (at 100k records the list scan took 2.3 ms p50 of the vector query's 3.7; bench/RESULTS.md "records-mode").
   */
  private async readFilter(s: RecordStore, ns: string, p: Predicate, read: ReadOptions): Promise<Record<string, unknown> | undefined> {
    if ((await s.count(ns, { exp: { $lte: this.now() } }, read)) > 0) return this.filter(p);
    const and = this.clauses(p);
    return and.length === 0 ? undefined : { $and: and };
  }

  /** The predicate's engine clauses (kind, tags, ts). */
  private clauses(p: Predicate): Record<string, unknown>[] {
    const and: Record<string, unknown>[] = [];
    if (p.kind) and.push({ kind: { $in: p.kind } });
    if (p.tagsAny) and.push({ tags: { $in: p.tagsAny } });
    for (const t of p.tagsAll ?? []) and.push({ tags: { $eq: t } });
    if (p.tsGte !== undefined || p.tsLt !== undefined)
      and.push({ ts: { ...(p.tsGte === undefined ? {} : { $gte: p.tsGte }), ...(p.tsLt === undefined ? {} : { $lt: p.tsLt }) } });
    return and;
  }

  private expired(m: Metadata): boolean {
    return typeof m.exp === "number" && m.exp <= this.now();
  }
}

/** Reciprocal rank fusion of rankings (ids, best first): id -> sum of 1 / (RRF_K + rank), rank from 1; best first, ties by id. */
export function fuse(rankings: ReadonlyArray<readonly string[]>): Array<[string, number]> {
  const fused = new Map<string, number>();
  for (const ranking of rankings) ranking.forEach((id, rank) => fused.set(id, (fused.get(id) ?? 0) + 1 / (RRF_K + rank + 1)));
  return [...fused].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
}

/** `after` as given: the id of the last record of the previous page (its `nextAfter`); it needs `until`. */
function afterId(params: URLSearchParams, until: number | undefined): string | undefined {
  const raw = params.get("after");
  if (raw === null) return undefined;
  if (raw === "" || raw.length > 256)
    throw new SvcError("E_BAD_REQUEST", "after must be a record id: the nextAfter of the previous page", { field: "after" });
  if (until === undefined)
    throw new SvcError("E_BAD_REQUEST", "after needs until: pass the previous page's nextCursor as until and its nextAfter as after", {
      field: "after",
    });
  return raw;
}

/** Complete ts groups (ts descending) in timeline order: ts descending, then id descending. */
function sortGroups(rows: readonly { id: string; value: number }[]): string[] {
  return [...rows].sort((a, b) => b.value - a.value || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0)).map((r) => r.id);
}
