/** @module records — typed records per tenant: text embedded by the static encoder, kind/tags/ts filters, timeline pages, TTL, forget.
 * ~460 lines: one service whose parts (ingest, query modes, timeline cursor, TTL sweep, import) share one per-tenant collection and BM25 index. */
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { Bm25Index } from "../encoder/bm25.js";
import { Collection, type MaintenanceErrorHandler } from "../engine/collection.js";
import type { Metadata } from "../engine/filter/metadata.js";
import { SvcError } from "../errors.js";
import type { Kernels } from "../kernels/abi.js";
import type { ScanPool } from "../pool/scan-pool.js";
import type { Durability } from "../store/wal.js";
import {
  bool, checkNamespace, intIn, list, matches, newId, predicate, queryInt, restoredRow, stringList, toRow, toView,
  type ContainerRecord, type Predicate, type RecordView, type Row,
} from "./record-fields.js";

export { DAY_MS, MAX_META_BYTES, MAX_TAGS, MAX_TEXT_BYTES, NAMESPACE_RE, checkNamespace, type Predicate, type RecordView } from "./record-fields.js";

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
  /** Told when a collection's background task fails (CollectionOptions). */
  onMaintenanceError?: MaintenanceErrorHandler;
  /** Clock (ms); tests move it to expire records. */
  now?: () => number;
}

/**
 * One Collection per tenant at <data>/tenants/<tenant>/records; record namespaces are its
 * namespaces. Expiry: a record with ttlDays carries `exp` = ingest time + ttlDays days; every
 * read adds "exp absent or > now" to its filter, so an expired record vanishes at once, and
 * the sweeper deletes expired rows every SWEEP_MS.
 */
export class RecordService {
  private readonly collections = new Map<string, Promise<Collection>>();
  /** BM25 over a namespace's texts for hybrid queries, built on first use, then kept current by every write (postings updated in place). Key: tenant + "\0" + ns. */
  private readonly lexical = new Map<string, Promise<Lexical>>();
  /** BM25 indexes built from a namespace's records so far (writes update a built index; they never cause a build). */
  lexicalBuilds = 0;
  private readonly now: () => number;
  private sweeper: NodeJS.Timeout | null = null;
  private closed = false;

  constructor(
    readonly dataDir: string,
    private readonly opts: RecordServiceOptions,
  ) {
    this.now = opts.now ?? Date.now;
    this.sweeper = setInterval(() => void this.sweep().catch(() => {}), SWEEP_MS);
    this.sweeper.unref();
  }

  async ingest(tenant: string, ns: string, items: unknown): Promise<{ ids: string[]; count: number }> {
    checkNamespace(ns);
    if (!Array.isArray(items) || items.length === 0) throw new SvcError("E_BAD_REQUEST", "items must be a non-empty array", { field: "items" });
    if (items.length > MAX_ITEMS) throw new SvcError("E_BAD_REQUEST", `at most ${MAX_ITEMS} items per call, got ${items.length}`, { field: "items" });
    const now = this.now();
    const rows = items.map((item, i) => toRow(item, `items[${i}]`, now));
    return this.write(tenant, ns, rows.map((r) => ({ ...r, id: newId() })));
  }

  /**
   * Ranked by cosine when `text` is given (`score` = the cosine), or by reciprocal rank fusion of
   * cosine and BM25 with `mode: "hybrid"` (`score` = the fused score); else the newest first.
   * Typed filters apply either way. `usage.scanned` is set to the rows the vector ranking considered (what metering charges). */
  async query(tenant: string, ns: string, q: Record<string, unknown>, usage: { scanned?: number } = {}): Promise<{ records: RecordView[]; namespace: string }> {
    checkNamespace(ns);
    const topK = intIn(q.topK, "topK", 1, MAX_TOP_K, 10);
    const pred = predicate(q);
    const includeText = bool(q.includeText, "includeText", false);
    const includeMeta = bool(q.includeMeta, "includeMeta", false);
    if (q.text !== undefined && (typeof q.text !== "string" || q.text.trim() === "")) throw new SvcError("E_BAD_REQUEST", "text must be a non-empty string (omit it to list by time)", { field: "text" });
    const c = await this.visible(tenant);
    const filter = this.readFilter(c, ns, pred);
    const view = (id: string, metadata: Metadata | undefined, payload: Uint8Array | undefined, score?: number) => toView(id, metadata!, payload, includeText, includeMeta, score);
    // With text the default ranks by cosine and `score` is the cosine (the API document's contract); hybrid is asked for by name.
    const mode = q.mode ?? "vector";
    if (mode !== "vector" && mode !== "hybrid") throw new SvcError("E_BAD_REQUEST", "mode must be 'vector' or 'hybrid'", { field: "mode" });
    if (mode === "hybrid") {
      if (typeof q.text !== "string") throw new SvcError("E_BAD_REQUEST", "mode 'hybrid' needs text", { field: "text" });
      return { records: await this.hybrid(tenant, ns, c, q.text, topK, pred, filter, includeText, includeMeta, usage), namespace: ns };
    }
    if (typeof q.text === "string") {
      const vector = this.opts.encoder.encodeBatch([q.text]);
      const res = await c.query(ns, { vector, topK, filter, includeMetadata: true, includePayload: includeText || includeMeta });
      usage.scanned = res.scanned;
      return { records: res.matches.map((m) => view(m.id, m.metadata, m.payload, m.score)), namespace: ns };
    }
    const rows = c.order(ns, { field: "ts", filter, limit: topK, includeMetadata: true, includePayload: includeText || includeMeta });
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
  async timeline(tenant: string, ns: string, params: URLSearchParams): Promise<{ records: RecordView[]; namespace: string; nextCursor: number | null; nextAfter?: string }> {
    checkNamespace(ns);
    const limit = intIn(queryInt(params, "limit"), "limit", 1, MAX_TIMELINE, DEFAULT_TIMELINE);
    const until = queryInt(params, "until");
    const after = afterId(params, until);
    const pred = predicate({
      kind: list(params, "kind"),
      tagsAny: list(params, "tagsAny"),
      tagsAll: list(params, "tagsAll"),
      tsGte: queryInt(params, "since"),
      // with `after`, the records at ts `until` itself are in the window too
      tsLt: until === undefined ? undefined : after === undefined ? until : until + 1,
    }, { tsGte: "since", tsLt: "until" });
    const c = await this.visible(tenant);
    // The stream after the position, in timeline order: the rest of the group at `until` (after `after`), then ts < until.
    const rest = after === undefined ? [] : this.group(c, ns, pred, until!).filter((id) => id < after).map((id) => ({ id, value: until! }));
    let page: Array<{ id: string; value: number }>;
    let more: boolean;
    let nextAfter: string | undefined;
    if (rest.length > limit) {
      page = rest.slice(0, limit);
      more = true;
      nextAfter = page.at(-1)!.id;
    } else {
      // rows ordered by ts only (ties in no set order): every group but the last one is whole
      const older = c.order(ns, { field: "ts", filter: this.filter({ ...pred, tsLt: after === undefined ? pred.tsLt : until }), limit: limit + 1 - rest.length });
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
            page = this.group(c, ns, pred, lastTs).slice(0, limit).map((id) => ({ id, value: lastTs }));
            nextAfter = page.at(-1)!.id;
          }
        }
      }
    }
    const ids = sortGroups(page);
    const records = c.fetch(ns, ids).map((v) => toView(v.id, v.metadata, v.payload ?? undefined, true, true));
    return { records, namespace: ns, nextCursor: more ? page.at(-1)!.value : null, ...(nextAfter === undefined ? {} : { nextAfter }) };
  }

  /** Ids of the records at exactly `ts` under the predicate, in timeline order (id descending). */
  private group(c: Collection, ns: string, pred: Predicate, ts: number): string[] {
    const ids = c.ids(ns, this.filter({ ...pred, tsGte: Math.max(ts, pred.tsGte ?? ts), tsLt: ts + 1 }));
    return ids.sort((a, b) => (a < b ? 1 : a > b ? -1 : 0));
  }

  async get(tenant: string, ns: string, id: string): Promise<RecordView> {
    checkNamespace(ns);
    const v = (await this.visible(tenant)).fetch(ns, [id])[0];
    if (v === undefined || this.expired(v.metadata)) throw new SvcError("E_NOT_FOUND", `no record '${id}' in namespace '${ns}'`, { field: "id" });
    return toView(v.id, v.metadata, v.payload ?? undefined, true, true);
  }

  async delete(tenant: string, ns: string, id: string): Promise<{ deleted: boolean }> {
    checkNamespace(ns);
    const c = await this.visible(tenant);
    const v = c.fetch(ns, [id])[0];
    if (v === undefined || this.expired(v.metadata)) return { deleted: false };
    await c.delete(ns, { ids: [id] });
    this.lexRemove(tenant, ns, [id]);
    return { deleted: true };
  }

  /** Delete what matches every given criterion (kind, tagsAny, tagsAll, tsGte, tsLt, ids); at least one is required. */
  async forget(tenant: string, ns: string, body: Record<string, unknown>): Promise<{ forgottenCount: number }> {
    checkNamespace(ns);
    const pred = predicate(body);
    const ids = body.ids === undefined ? undefined : stringList(body.ids, "ids", 10_000);
    if (ids === undefined && Object.values(pred).every((v) => v === undefined)) {
      throw new SvcError("E_BAD_REQUEST", "give at least one of kind, tagsAny, tagsAll, tsGte, tsLt or ids", { field: "kind" });
    }
    const c = await this.collection(tenant);
    await c.settled();
    if (ids !== undefined) {
      const targets = c.fetch(ns, [...new Set(ids)]).filter((v) => matches(pred, v.metadata, this.now())).map((v) => v.id);
      const forgottenCount = targets.length === 0 ? 0 : (await c.delete(ns, { ids: targets })).deleted;
      this.lexRemove(tenant, ns, targets);
      return { forgottenCount };
    }
    // By predicate: delete the matching ids in pages (expired rows are the sweeper's).
    const filter = this.filter(pred);
    let forgotten = 0;
    for (;;) {
      const targets = c.order(ns, { field: "ts", filter, limit: 10_000 }).map((r) => r.id);
      if (targets.length === 0) break;
      forgotten += (await c.delete(ns, { ids: targets })).deleted;
      this.lexRemove(tenant, ns, targets);
      await c.settled();
    }
    return { forgottenCount: forgotten };
  }

  async stats(tenant: string, ns: string): Promise<{ count: number; byKind: Record<string, number>; oldestTs: number | null; newestTs: number | null }> {
    checkNamespace(ns);
    const c = await this.visible(tenant);
    const filter = this.filter({});
    const range = c.range(ns, "ts", filter);
    return { count: c.count(ns, filter), byKind: c.facet(ns, "kind", filter), oldestTs: range?.min ?? null, newestTs: range?.max ?? null };
  }

  /** The tenant's namespaces holding live (unexpired) records, sorted, with their counts; opens nothing for a tenant without records. */
  async namespaces(tenant: string): Promise<Array<{ namespace: string; count: number }>> {
    if (!this.collections.has(tenant) && !existsSync(join(this.dataDir, "tenants", tenant, "records"))) return [];
    const c = await this.visible(tenant);
    const filter = this.filter({});
    return c.namespaces()
      .filter((ns) => !ns.startsWith(STAGING_PREFIX))
      .map((namespace) => ({ namespace, count: c.count(namespace, filter) }))
      .filter((n) => n.count > 0);
  }

  /** Every live record of a namespace with its expiry, oldest first (ties by id): what an export writes. */
  async all(tenant: string, ns: string): Promise<ContainerRecord[]> {
    checkNamespace(ns);
    const c = await this.visible(tenant);
    const out: ContainerRecord[] = [];
    let tsLt: number | undefined;
    // Pages of 10k by ts descending; a page ending inside a ts group is cut before that group.
    for (;;) {
      const rows = c.order(ns, { field: "ts", filter: this.filter({ tsLt }), limit: 10_000, includeMetadata: true, includePayload: true });
      let page = rows;
      if (rows.length === 10_000) {
        const last = rows.at(-1)!.value;
        page = rows.filter((r) => r.value !== last);
        if (page.length === 0) throw new SvcError("E_CONFLICT", `more than 10,000 records share ts ${last}; cannot page through them`, { field: "ts" });
      }
      for (const r of page) out.push({ ...toView(r.id, r.metadata!, r.payload, true, true), ...(typeof r.metadata!.exp === "number" ? { exp: r.metadata!.exp } : {}) });
      if (rows.length < 10_000) break;
      tsLt = page.at(-1)!.value;
    }
    return out.sort((a, b) => a.ts - b.ts || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }

  /**
   * Replace (schema 1) or merge into (schema 2) a namespace with exported records. Replace
   * writes everything into a staging namespace first and then moves it into place in one
   * logged step, so the namespace is either untouched or fully replaced.
   */
  async restore(tenant: string, ns: string, records: ContainerRecord[], mode: "replace" | "merge"): Promise<number> {
    checkNamespace(ns);
    const c = await this.collection(tenant);
    const target = mode === "replace" ? `${STAGING_PREFIX}${ns}~${randomBytes(4).toString("hex")}` : ns;
    try {
      for (let i = 0; i < records.length; i += MAX_ITEMS) {
        const rows = records.slice(i, i + MAX_ITEMS).map((r) => ({ ...restoredRow(r), id: r.id }));
        await this.write(tenant, target, rows, c);
      }
      if (mode === "replace") {
        await c.moveNamespace(target, ns);
        this.lexical.delete(`${tenant}\0${ns}`); // the namespace was replaced wholesale: rebuilt on next use
        this.lexical.delete(`${tenant}\0${target}`);
      }
    } catch (err) {
      if (mode === "replace") await c.delete(target, { deleteAll: true }).catch(() => {});
      throw err;
    }
    return records.length;
  }

  /** Delete expired records everywhere; also drops staging namespaces a crash left behind. */
  async sweep(): Promise<number> {
    let n = 0;
    for (const [tenant, p] of this.collections) {
      const c = await p.catch(() => null);
      if (c === null) continue;
      for (const ns of c.namespaces()) {
        if (ns.startsWith(STAGING_PREFIX)) continue;
        const gone = (await c.delete(ns, { filter: { exp: { $lte: this.now() } } })).deleted;
        if (gone > 0) this.lexApply(tenant, ns, (lex) => {
          for (const [id, m] of lex.meta) if (this.expired(m)) lex.remove(id);
        });
        n += gone;
      }
    }
    return n;
  }

  /** Open (replay) every tenant's records collection on disk; what failed is returned, not thrown. */
  async openAll(onOpened: () => void = () => {}): Promise<Array<{ store: string; error: unknown }>> {
    const failed: Array<{ store: string; error: unknown }> = [];
    const root = join(this.dataDir, "tenants");
    for (const tenant of existsSync(root) ? readdirSync(root).sort() : []) {
      if (this.closed) break;
      if (existsSync(join(root, tenant, "records"))) await this.collection(tenant).then(onOpened, (error: unknown) => failed.push({ store: `records:${tenant}`, error }));
    }
    return failed;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.sweeper) clearInterval(this.sweeper);
    await Promise.all([...this.collections.values()].map(async (p) => (await p.catch(() => null))?.close()));
  }

  // ---- internals ------------------------------------------------------------------------

  private async write(tenant: string, ns: string, rows: Array<Row & { id: string }>, coll?: Collection): Promise<{ ids: string[]; count: number }> {
    const c = coll ?? (await this.collection(tenant));
    const vectors = this.opts.encoder.encodeBatch(rows.map((r) => r.text));
    const dim = this.opts.encoder.dimension;
    await c.upsert(ns, rows.map((r, i) => ({ id: r.id, values: vectors.subarray(i * dim, (i + 1) * dim), metadata: r.metadata, payload: r.payload })));
    this.lexApply(tenant, ns, (lex) => {
      for (const r of rows) lex.add(r.id, r.text, r.metadata);
    });
    return { ids: rows.map((r) => r.id), count: rows.length };
  }

  /** The tenant's collection once every write acknowledged before the call is visible, so reads see the caller's own acknowledged writes (an ingest, delete or import that has answered). */
  private async visible(tenant: string): Promise<Collection> {
    const c = await this.collection(tenant);
    await c.settled();
    return c;
  }

  private collection(tenant: string): Promise<Collection> {
    if (this.closed) throw new SvcError("E_CLOSED", "the server is shutting down");
    let p = this.collections.get(tenant);
    if (p === undefined) {
      const dir = join(this.dataDir, "tenants", tenant, "records");
      mkdirSync(dir, { recursive: true });
      p = Collection.open(dir, { kernels: this.opts.kernels, pool: this.opts.pool, durability: this.opts.durability, dimension: this.opts.encoder.dimension, metric: "cosine", damage: { store: `records:${tenant}`, root: this.dataDir }, onMaintenanceError: this.opts.onMaintenanceError }).then(async (c) => {
        // An import interrupted by a crash leaves its staging namespace: drop it.
        for (const ns of c.namespaces()) if (ns.startsWith(STAGING_PREFIX)) await c.delete(ns, { deleteAll: true });
        return c;
      });
      p.catch(() => this.collections.delete(tenant));
      this.collections.set(tenant, p);
    }
    return p;
  }

  /**
   * Reciprocal rank fusion of the vector ranking and the BM25 ranking (each cut to the
   * records matching the predicate), best `topK`; `score` is the fused score.
   */
  /** `filter`: readFilter's engine filter of `pred` (the vector half's); BM25 checks `pred` itself. */
  private async hybrid(tenant: string, ns: string, c: Collection, text: string, topK: number, pred: Predicate, filter: Record<string, unknown> | undefined, includeText: boolean, includeMeta: boolean, usage: { scanned?: number }): Promise<RecordView[]> {
    const depth = Math.max(50, topK * 5);
    const vector = this.opts.encoder.encodeBatch([text]);
    const res = await c.query(ns, { vector, topK: depth, filter });
    usage.scanned = res.scanned;
    const byVector = res.matches.map((m) => m.id);
    const lex = await this.lexicalIndex(tenant, ns, c);
    const now = this.now();
    // The BM25 top `depth` among the records the predicate keeps: the fusion reads no deeper.
    const byWords = lex.bm25.search(text, depth, (id) => matches(pred, lex.meta.get(id)!, now)).map((h) => h.id);
    const fused = new Map<string, number>();
    for (const ranking of [byVector, byWords]) ranking.forEach((id, rank) => fused.set(id, (fused.get(id) ?? 0) + 1 / (RRF_K + rank + 1)));
    const best = [...fused].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).slice(0, topK);
    const rows = new Map(c.fetch(ns, best.map(([id]) => id)).map((v) => [v.id, v]));
    return best.filter(([id]) => rows.has(id)).map(([id, score]) => toView(id, rows.get(id)!.metadata, rows.get(id)!.payload ?? undefined, includeText, includeMeta, score));
  }

  private lexicalIndex(tenant: string, ns: string, c: Collection): Promise<Lexical> {
    const key = `${tenant}\0${ns}`;
    let p = this.lexical.get(key);
    if (p === undefined) {
      this.lexicalBuilds++;
      p = (async () => {
        await c.settled();
        const lex = new Lexical();
        for (const r of await this.all(tenant, ns)) lex.add(r.id, r.text!, { kind: r.kind, tags: r.tags, ts: r.ts, ...(r.exp === undefined ? {} : { exp: r.exp }) });
        return lex;
      })();
      p.catch(() => this.lexical.delete(key));
      this.lexical.set(key, p);
    }
    return p;
  }

  /**
   * An acknowledged write to (tenant, ns): apply it to the namespace's BM25 index if one is built
   * or building (none: nothing to do; the first hybrid query builds it). Chained after the build,
   * so a build that already read the write applies it twice, which is harmless: add replaces an
   * id, remove of an absent id does nothing.
   */
  private lexApply(tenant: string, ns: string, f: (lex: Lexical) => void): void {
    const key = `${tenant}\0${ns}`;
    const p = this.lexical.get(key);
    if (p === undefined) return;
    const next = p.then((lex) => {
      f(lex);
      return lex;
    });
    next.catch(() => this.lexical.delete(key));
    this.lexical.set(key, next);
  }

  private lexRemove(tenant: string, ns: string, ids: readonly string[]): void {
    if (ids.length > 0) this.lexApply(tenant, ns, (lex) => {
      for (const id of ids) lex.remove(id);
    });
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
  private readFilter(c: Collection, ns: string, p: Predicate): Record<string, unknown> | undefined {
    if (c.count(ns, { exp: { $lte: this.now() } }) > 0) return this.filter(p);
    const and = this.clauses(p);
    return and.length === 0 ? undefined : { $and: and };
  }

  /** The predicate's engine clauses (kind, tags, ts). */
  private clauses(p: Predicate): Record<string, unknown>[] {
    const and: Record<string, unknown>[] = [];
    if (p.kind) and.push({ kind: { $in: p.kind } });
    if (p.tagsAny) and.push({ tags: { $in: p.tagsAny } });
    for (const t of p.tagsAll ?? []) and.push({ tags: { $eq: t } });
    if (p.tsGte !== undefined || p.tsLt !== undefined) and.push({ ts: { ...(p.tsGte === undefined ? {} : { $gte: p.tsGte }), ...(p.tsLt === undefined ? {} : { $lt: p.tsLt }) } });
    return and;
  }

  private expired(m: Metadata): boolean {
    return typeof m.exp === "number" && m.exp <= this.now();
  }
}

/** A namespace's BM25 index with each record's kind, tags, ts and exp (to apply predicates to BM25 hits). */
class Lexical {
  readonly bm25 = new Bm25Index();
  readonly meta = new Map<string, Metadata>();

  add(id: string, text: string, meta: Metadata): void {
    this.bm25.add(id, text);
    this.meta.set(id, meta);
  }

  remove(id: string): void {
    this.bm25.remove(id);
    this.meta.delete(id);
  }
}

/** `after` as given: the id of the last record of the previous page (its `nextAfter`); it needs `until`. */
function afterId(params: URLSearchParams, until: number | undefined): string | undefined {
  const raw = params.get("after");
  if (raw === null) return undefined;
  if (raw === "" || raw.length > 256) throw new SvcError("E_BAD_REQUEST", "after must be a record id: the nextAfter of the previous page", { field: "after" });
  if (until === undefined) throw new SvcError("E_BAD_REQUEST", "after needs until: pass the previous page's nextCursor as until and its nextAfter as after", { field: "after" });
  return raw;
}

/** Complete ts groups (ts descending) in timeline order: ts descending, then id descending. */
function sortGroups(rows: readonly { id: string; value: number }[]): string[] {
  return [...rows].sort((a, b) => b.value - a.value || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0)).map((r) => r.id);
}
