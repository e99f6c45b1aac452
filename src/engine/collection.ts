/** @module collection — a durable vector collection: WAL-first writes applied asynchronously, namespaces, queries, ordered/aggregate reads, checkpoints, compaction. */
import { readdirSync, readFileSync, rmSync } from "node:fs";
import { rename, rm } from "node:fs/promises";
import { join, relative } from "node:path";
import { SvcError } from "../errors.js";
import type { Kernels } from "../kernels/abi.js";
import { Rotation } from "../kernels/rotation.js";
import type { ScanPool } from "../pool/scan-pool.js";
import { reportDamage, reportWalLosses } from "../store/damage.js";
import { fsyncDir } from "../store/scan.js";
import { Wal, type Durability, type RecoveryReport, type WalPosition } from "../store/wal.js";
import { mergeMetadata, validateMetadata, type Metadata } from "./filter/metadata.js";
import { MetadataIndex } from "./filter/metadata-index.js";
import { parseFilter } from "./filter/parse.js";
import { OP, type DeleteAllOp, type DeleteOp, type MoveOp, type Op, type UpdateOp, type UpsertOp } from "./ops.js";
import { CHECKPOINT_VERSION, lockDir, loadCheckpoint, loadConfig, removeUnreferenced, writeDurable, type Checkpoint, type CollectionConfig } from "./collection-files.js";
import { Partition, type VectorShape } from "./partition.js";
import { RoaringBitmap32 } from "./roaring.js";
import { carryTombstones, copyLiveRows } from "./compaction.js";
import { search, searchBatch, TOMBSTONE_SKIP_MAX, type Plan, type SearchResult } from "./search.js";
import { ANN_DELTA_FRACTION, ANN_MIN_ROWS, type ProbeParams } from "./ivf.js";
import { copyClustered } from "./ivf-build.js";
import { IVF_FILE } from "./partition.js";
import { parseSums, serializeSums } from "./block-sums.js";
import { LogHistory } from "./log-history.js";

export const MAX_ID_BYTES = 512;
/** Largest payload of one row (opaque bytes stored with it, not indexed). */
export const MAX_PAYLOAD_BYTES = 1 << 20;
/** Largest `limit` of order(). */
export const MAX_ORDER_LIMIT = 10_000;
/** Take a checkpoint once this many WAL bytes were written since the last one. */
export const DEFAULT_CHECKPOINT_BYTES = 256 << 20;
/** Compact a partition in the background once this fraction of its rows is dead (and at least COMPACT_MIN_DEAD rows); checked as deletes and overwrites are applied. */
export const COMPACT_DEAD_FRACTION = 0.25;
export const COMPACT_MIN_DEAD = 1024;
/**
 * Acknowledged-but-invisible vector and payload bytes above which acknowledgements wait for visibility
 * (16 MiB = 4k vectors of 1024-d: ~0.1 s of applying on the 2-core target).
 */
export const MAX_APPLY_BACKLOG_BYTES = 16 << 20;

export type { CollectionConfig };

export interface CollectionOptions {
  kernels: Kernels;
  pool: ScanPool;
  /** Required when creating; checked against the stored config when opening. */
  dimension?: number;
  metric?: VectorShape["metric"];
  seed?: number;
  durability?: Durability;
  segmentBytes?: number;
  checkpointBytes?: number;
  /** Live rows from which a namespace gets an approximate index, built in the background (default ANN_MIN_ROWS; Infinity: never). */
  annMinRows?: number;
  /** How damage found here is named in the damage register (store/damage.ts): the store name and the directory file names are relative to (default: `collection:<dir>`, the collection dir). */
  damage?: { store: string; root: string };
}

export interface VectorInput {
  id: string;
  /** Float values (cosine) — or packed bits (hamming), ceil(dimension / 8) bytes. */
  values?: ArrayLike<number>;
  bits?: Uint8Array;
  metadata?: unknown;
  /** Opaque bytes stored with the row, not indexed (at most MAX_PAYLOAD_BYTES). */
  payload?: Uint8Array;
}

export interface QueryInput {
  vector?: ArrayLike<number>;
  bits?: Uint8Array;
  id?: string;
  topK: number;
  filter?: unknown;
  includeValues?: boolean;
  includeMetadata?: boolean;
  includePayload?: boolean;
  /** Rows the 1-bit scan keeps, and rows rescored with float32 values (cosine); see search.ts. */
  candidates?: number;
  rescore?: number;
  /** Scan every row even when the namespace has an approximate index. */
  exact?: boolean;
  /** How the approximate index is probed (benchmarks and tuning; default DEFAULT_PROBE in ivf.ts). */
  probe?: ProbeParams;
}

export interface Match {
  id: string;
  score: number;
  values?: number[] | Uint8Array;
  metadata?: Metadata;
  /** With includePayload, when the row has one. */
  payload?: Uint8Array;
}

export interface FetchedVector {
  id: string;
  values: Float32Array | Uint8Array;
  metadata: Metadata;
  payload: Uint8Array | null;
}

export interface OrderInput {
  /** The metadata field whose numbers order the rows; rows without a number there are left out. */
  field: string;
  filter?: unknown;
  /** An integer in [1, MAX_ORDER_LIMIT]. */
  limit: number;
  /** Largest first (default); ties: the later-appended row first, or the earlier one ascending. */
  desc?: boolean;
  includeMetadata?: boolean;
  includePayload?: boolean;
}

export interface OrderedRow {
  id: string;
  value: number;
  metadata?: Metadata;
  payload?: Uint8Array;
}

/**
 * Write path: validate -> WAL append (group commit; the promise is the acknowledgement) ->
 * the applier adds the rows to the partition on a later tick (visible to queries). Read
 * path: the partition's visible state only. Everything logged is logical (ids, not rows),
 * so replay works on any generation of the partition files.
 */
export class Collection {
  readonly dir: string;
  readonly config: CollectionConfig;
  readonly recovery: RecoveryReport;
  private readonly damage: { store: string; root: string };
  private readonly kernels: Kernels;
  private readonly pool: ScanPool;
  private readonly rotation: Rotation | null;
  private readonly partitions = new Map<string, Partition>();
  private wal!: Wal;
  private readonly queue: Array<{ op: Op; pos: WalPosition; bytes: number }> = [];
  /** Vector bytes acknowledged but not yet applied. */
  private backlogBytes = 0;
  private applyScheduled = false;
  private visiblePos: WalPosition;
  private readonly waiters: Array<{ pos: WalPosition; resolve: () => void }> = [];
  private seq: number;
  private nextGen: number;
  private walBytesAtCheckpoint = 0;
  private readonly checkpointBytes: number;
  private readonly annMinRows: number;
  private checkpointing: Promise<void> | null = null;
  private retired: Partition[] = [];
  private closed = false;
  private closing = false;
  private readonly compacting = new Map<string, Promise<{ before: number; after: number }>>();
  /** Partition directories the durable checkpoint refers to. */
  private referenced = new Set<string>();
  /** Timestamps (performance.now) of acknowledgements not yet applied, for ack -> visible. */
  private readonly ackedAt: number[] = [];
  readonly visibleDelays: number[] = [];
  trackVisibility = false;

  private constructor(dir: string, config: CollectionConfig, opts: CollectionOptions, cp: Checkpoint | null) {
    this.dir = dir;
    this.config = config;
    this.kernels = opts.kernels;
    this.pool = opts.pool;
    this.rotation = config.metric === "cosine" ? new Rotation(opts.kernels, config.dimension, config.seed) : null;
    this.checkpointBytes = opts.checkpointBytes ?? DEFAULT_CHECKPOINT_BYTES;
    this.annMinRows = opts.annMinRows ?? ANN_MIN_ROWS;
    this.seq = cp?.seq ?? 0;
    this.visiblePos = cp?.wal ?? { segment: 0, offset: 0 };
    this.recovery = { segments: 0, frames: 0, bytes: 0, tornTail: null, damaged: [] };
    this.damage = opts.damage ?? { store: `collection:${dir}`, root: dir };
    let gen = 0;
    for (const s of cp?.partitions ?? []) {
      const tombstones = RoaringBitmap32.deserialize(readFileSync(join(this.partsDir, s.dir, s.tombstones)), "portable");
      const index = MetadataIndex.deserialize(readFileSync(join(this.partsDir, s.dir, s.index)));
      let sums: ReturnType<typeof parseSums> | undefined;
      if (s.sums !== undefined) {
        const path = join(this.partsDir, s.dir, s.sums);
        try {
          sums = parseSums(readFileSync(path), path);
        } catch (err) {
          // Without the sums the files cannot be checked this time; the next checkpoint writes new ones.
          this.reportDamage({ file: path, kind: "unreadable", dropped: 0, detail: `block sums unreadable, files opened unchecked: ${(err as Error).message}` });
        }
      }
      this.partitions.set(s.namespace, new Partition(this.kernels, this.partsDir, config, { ...s, tombstones, index, sums }));
      gen = Math.max(gen, Number(s.dir.slice(1)) + 1);
    }
    this.nextGen = gen;
    this.referenced = new Set(cp?.partitions.map((p) => p.dir));
  }

  /** Open a collection directory, creating it when `dimension` is given; replays the WAL after the last checkpoint. */
  static async open(dir: string, opts: CollectionOptions): Promise<Collection> {
    const config = loadConfig(dir, opts);
    lockDir(dir);
    try {
      const cp = loadCheckpoint(dir);
      removeUnreferenced(join(dir, "parts"), cp);
      const c = new Collection(dir, config, opts, cp);
      // Rows found damaged on open are rebuilt from the frames before the checkpoint that are still in the log.
      const lost = new Set([...c.partitions.values()].flatMap((p) => p.damaged.filter((d) => d.live && d.id !== null).map((d) => d.id!)));
      const history = cp !== null && lost.size > 0 ? new LogHistory(lost, c.rowBytes) : null;
      let rebuilt = false;
      const rebuild = () => {
        if (!rebuilt) c.rebuildDamaged(history);
        rebuilt = true;
      };
      const { wal, report } = await Wal.open(join(dir, "wal"), {
        durability: opts.durability,
        segmentBytes: opts.segmentBytes,
        from: cp?.wal,
        salvage: true,
        prefix: history !== null,
        onFrame: (f) => {
          if (history !== null && before(f.end, cp!.wal)) return history.take({ type: f.type, body: f.body } as Op);
          rebuild();
          c.apply({ type: f.type, body: f.body } as Op);
          c.visiblePos = f.end;
        },
      });
      rebuild();
      c.wal = wal;
      c.visiblePos = wal.position;
      Object.assign(c.recovery, report);
      reportWalLosses(c.damage.store, c.damage.root, report);
      c.walBytesAtCheckpoint = wal.stats.bytes;
      for (const p of c.partitions.values()) {
        // A partition with damaged rows is rewritten without them, so its files check clean again.
        if (p.damaged.length > 0) void c.rewrite(p.namespace, "auto").catch(() => {});
        else if (!c.maybeCompact(p)) c.maybeIndex(p);
      }
      return c;
    } catch (err) {
      rmSync(join(dir, "LOCK"), { force: true });
      throw err;
    }
  }

  /**
   * Rows the partitions dropped on open (their block sums failed): append again, from the log, each
   * live one whose last logged state is still there; report per file what was rebuilt and what is lost.
   */
  private rebuildDamaged(history: LogHistory | null): void {
    for (const p of this.partitions.values()) {
      if (p.damaged.length === 0) continue;
      const byFile = new Map<string, { rows: number[]; rebuilt: number; dropped: string[]; dead: number }>();
      for (const d of p.damaged) {
        const logged = d.live && d.id !== null && p.rowOf(d.id) === undefined ? history?.get(p.namespace, d.id) : undefined;
        if (logged !== undefined) p.append(this.rotation, [d.id!], logged.v, [logged.m], undefined, [logged.p]);
        for (const f of d.files) {
          const e = byFile.get(f) ?? { rows: [], rebuilt: 0, dropped: [], dead: 0 };
          e.rows.push(d.row);
          if (!d.live) e.dead++;
          else if (logged !== undefined) e.rebuilt++;
          else e.dropped.push(d.id ?? `row ${d.row} (id unreadable)`);
          byFile.set(f, e);
        }
      }
      for (const [f, e] of byFile) {
        const rows = e.rows.length > 20 ? `${e.rows.slice(0, 20).join(", ")}, ...` : e.rows.join(", ");
        const dropped = e.dropped.length > 20 ? `${e.dropped.slice(0, 20).join(", ")}, ...` : e.dropped.join(", ");
        this.reportDamage({
          file: join(p.path, f),
          kind: "bad-checksum",
          dropped: e.dropped.length,
          detail: `${e.rows.length} row(s) in blocks that failed their checksum (rows ${rows}) in namespace '${p.namespace}': ${e.rebuilt} rebuilt from the log, ${e.dropped.length} dropped${e.dropped.length > 0 ? ` (${dropped})` : ""}, ${e.dead} already dead`,
        });
      }
    }
  }

  private reportDamage(r: { file: string; kind: string; dropped: number; detail: string }): void {
    reportDamage({ store: this.damage.store, file: relative(this.damage.root, r.file), kind: r.kind, detail: r.detail, dropped: r.dropped, offline: false });
  }

  private get partsDir(): string {
    return join(this.dir, "parts");
  }

  /** The WAL's counters (frames, bytes, fsyncs). */
  get walStats() {
    return this.wal.stats;
  }

  get dimension(): number {
    return this.config.dimension;
  }

  // ---- writes -------------------------------------------------------------------------

  /** Insert or replace vectors; resolves once the batch is durable (acknowledged), before it is visible. */
  async upsert(namespace: string, vectors: readonly VectorInput[]): Promise<{ upsertedCount: number }> {
    checkNamespace(namespace);
    if (!Array.isArray(vectors) || vectors.length === 0) throw new SvcError("E_BAD_REQUEST", "vectors must be a non-empty array", { field: "vectors" });
    const rowBytes = this.rowBytes;
    const v = new Uint8Array(vectors.length * rowBytes);
    const f32 = this.rotation ? new Float32Array(v.buffer) : null;
    const ids: string[] = [];
    const m: (Metadata | null)[] = [];
    const p: (Uint8Array | null)[] = [];
    let payloads = false;
    vectors.forEach((vec, i) => {
      const field = `vectors[${i}]`;
      ids.push(checkId(vec?.id, `${field}.id`));
      if (f32) f32.set(this.checkLength(vec.values, `${field}.values`), i * this.dimension);
      else v.set(this.checkBits(vec.bits, `${field}.bits`), i * rowBytes);
      const meta = validateMetadata(vec.metadata, `${field}.metadata`);
      m.push(Object.keys(meta).length === 0 ? null : meta);
      const payload = checkPayload(vec.payload, `${field}.payload`);
      p.push(payload);
      payloads ||= payload !== null;
    });
    if (f32) this.checkFinite(f32, (i) => `vectors[${i}].values`);
    await this.log({ type: OP.upsert, body: { ns: namespace, ids, v, m, ...(payloads ? { p } : {}) } satisfies UpsertOp });
    return { upsertedCount: vectors.length };
  }

  /**
   * Delete by ids, by filter (evaluated on everything acknowledged so far) or everything in
   * the namespace. `deleted` counts the ids submitted (with ids), matched (with a filter) or
   * live (with deleteAll).
   */
  async delete(namespace: string, req: { ids?: readonly string[]; filter?: unknown; deleteAll?: boolean }): Promise<{ deleted: number }> {
    checkNamespace(namespace);
    if (req.deleteAll) {
      const count = this.partitions.get(namespace)?.liveCount ?? 0;
      await this.log({ type: OP.deleteAll, body: { ns: namespace } satisfies DeleteAllOp });
      return { deleted: count };
    }
    let ids: string[];
    if (req.ids !== undefined) {
      if (!Array.isArray(req.ids)) throw new SvcError("E_BAD_REQUEST", "ids must be an array of strings", { field: "ids" });
      ids = req.ids.map((id, i) => checkId(id, `ids[${i}]`));
    } else if (req.filter !== undefined) {
      const filter = parseFilter(req.filter);
      if (filter === null) throw new SvcError("E_FILTER", "filter must not be empty; use deleteAll to delete everything", { field: "filter" });
      await this.settled();
      const p = this.partitions.get(namespace);
      ids = p === undefined ? [] : p.index.evaluate(filter, p.live()).toArray().map((r) => p.idOf(r));
    } else {
      throw new SvcError("E_BAD_REQUEST", "give ids, filter or deleteAll", { field: "ids" });
    }
    if (ids.length === 0) return { deleted: 0 };
    await this.log({ type: OP.delete, body: { ns: namespace, ids } satisfies DeleteOp });
    return { deleted: ids.length };
  }

  /** Replace the values, merge metadata and/or replace the payload of an existing id (what is not given is kept). */
  async update(namespace: string, req: { id: string; values?: ArrayLike<number>; bits?: Uint8Array; setMetadata?: unknown; payload?: Uint8Array }): Promise<void> {
    checkNamespace(namespace);
    const id = checkId(req?.id, "id");
    let v: Uint8Array | null = null;
    if (req.values !== undefined || req.bits !== undefined) {
      // a copy: the caller's array may be a view into a larger buffer, and the WAL writes binaries without copying
      v = this.rotation ? new Uint8Array(Float32Array.from(this.checkValues(req.values, "values")).buffer) : this.checkBits(req.bits, "bits");
    }
    const m = req.setMetadata === undefined ? null : validateMetadata(req.setMetadata, "setMetadata");
    const p = checkPayload(req.payload, "payload");
    if (v === null && m === null && p === null) throw new SvcError("E_BAD_REQUEST", "give values, setMetadata or payload", { field: "values" });
    await this.settled();
    if (this.partitions.get(namespace)?.rowOf(id) === undefined) throw new SvcError("E_NOT_FOUND", `no vector '${id}' in namespace '${namespace}'`, { field: "id" });
    await this.log({ type: OP.update, body: { ns: namespace, id, v, m, ...(p === null ? {} : { p }) } satisfies UpdateOp });
  }

  /**
   * Make namespace `to` hold exactly what `from` holds (its own rows are dropped) and empty
   * `from`, in one logged step: replay applies it whole or not at all, and queries see the old
   * or the new `to`, never a mix. An empty or unknown `from` empties `to`. `moved` counts the
   * live rows of `from` once everything acknowledged before the call is visible.
   */
  async moveNamespace(from: string, to: string): Promise<{ moved: number }> {
    checkNamespace(from, "from");
    checkNamespace(to, "to");
    if (from === to) throw new SvcError("E_BAD_REQUEST", "from and to must be different namespaces", { field: "to" });
    await this.settled();
    const moved = this.partitions.get(from)?.liveCount ?? 0;
    await this.log({ type: OP.move, body: { from, to } satisfies MoveOp });
    return { moved };
  }

  // ---- reads --------------------------------------------------------------------------

  fetch(namespace: string, ids: readonly string[]): FetchedVector[] {
    const p = this.partitions.get(namespace);
    const out: FetchedVector[] = [];
    if (p === undefined) return out;
    for (const id of ids) {
      const row = p.rowOf(id);
      if (row !== undefined) out.push({ id, values: p.vector(row), metadata: p.metadata(row), payload: p.payload(row) });
    }
    return out;
  }

  /** `scanned`: the rows the query had to consider (the namespace's live rows, those its filter matched, or about those an index probe compared, at most the live rows); what metering charges. */
  async query(namespace: string, req: QueryInput): Promise<{ matches: Match[]; plan: Plan; scanned: number; matched?: number; timings?: SearchResult["timings"]; probed?: number }> {
    const k = req.topK;
    if (!Number.isInteger(k) || k < 1 || k > 10_000) throw new SvcError("E_TOP_K", `topK must be an integer in [1, 10000], got ${k}`, { field: "topK" });
    const filter = parseFilter(req.filter);
    const p = this.partitions.get(namespace);
    let vector: Float32Array | Uint8Array;
    if (req.id !== undefined) {
      const row = p?.rowOf(req.id);
      if (row === undefined) throw new SvcError("E_NOT_FOUND", `no vector '${req.id}' in namespace '${namespace}'`, { field: "id" });
      vector = p!.vector(row);
    } else if (this.rotation) vector = this.checkValues(req.vector, "vector");
    else vector = this.checkBits(req.bits, "bits");
    if (p === undefined || p.liveCount === 0) return { matches: [], plan: "empty", scanned: 0 };

    const heap = this.kernels.heap;
    const bits = heap.alloc(this.rowBytes);
    const unitPtr = this.rotation ? heap.alloc(this.dimension * 4) : 0;
    let unit: Float32Array | null = null;
    let rotated: Float32Array | null = null;
    try {
      if (this.rotation) {
        this.rotation.encode(vector as Float32Array, bits, unitPtr);
        rotated = this.rotation.lastRotated();
        unit = heap.f32(unitPtr, this.dimension).slice();
      } else heap.bytes().set(vector, bits);
      p.pins++;
      try {
        const res = await search(this.kernels, this.pool, p, { bits, unit, rotated, k, filter, candidates: req.candidates, rescore: req.rescore, exact: req.exact === true, probe: req.probe });
        const matches = res.hits.map(({ row, score }) => {
          const match: Match = { id: p.idOf(row), score };
          if (req.includeValues) {
            const v = p.vector(row);
            match.values = v instanceof Float32Array ? Array.from(v) : v;
          }
          if (req.includeMetadata) match.metadata = p.metadata(row);
          if (req.includePayload) {
            const payload = p.payload(row);
            if (payload !== null) match.payload = payload;
          }
          return match;
        });
        // An index probe's estimate is capped at the live rows: never more than an exact scan (the wallet reserves that bound).
        return { matches, plan: res.plan, scanned: Math.min(res.scanned ?? res.matched ?? p.liveCount, p.liveCount), matched: res.matched, timings: res.timings, ...(res.probed === undefined ? {} : { probed: res.probed }) };
      } finally {
        p.pins--;
        this.closeRetired();
      }
    } finally {
      heap.release(bits);
      if (unitPtr) heap.release(unitPtr);
    }
  }

  /**
   * Top-k of many packed-bit queries at once (hamming collections, no filter): the
   * throughput path. With an index the probes run on the pool's workers (each takes a share
   * of the queries); without one, or with `exact`, one blocked exact scan. Matches carry id
   * and score only.
   */
  async queryBatch(namespace: string, req: { bits: readonly Uint8Array[]; topK: number; exact?: boolean; probe?: ProbeParams }): Promise<{ matches: Match[][]; plan: Plan }> {
    if (this.rotation) throw new SvcError("E_BAD_REQUEST", "queryBatch takes packed bits: it serves hamming collections", { field: "bits" });
    const k = req.topK;
    if (!Number.isInteger(k) || k < 1 || k > 10_000) throw new SvcError("E_TOP_K", `topK must be an integer in [1, 10000], got ${k}`, { field: "topK" });
    if (!Array.isArray(req.bits) || req.bits.length === 0) throw new SvcError("E_BAD_REQUEST", "bits must be a non-empty array of packed rows", { field: "bits" });
    const rowBytes = this.rowBytes;
    const block = new Uint8Array(req.bits.length * rowBytes);
    req.bits.forEach((b, i) => block.set(this.checkBits(b, `bits[${i}]`), i * rowBytes));
    const p = this.partitions.get(namespace);
    if (p === undefined || p.liveCount === 0) return { matches: req.bits.map(() => []), plan: "empty" };
    if (p.tombstones.size > TOMBSTONE_SKIP_MAX) {
      const each = await Promise.all(req.bits.map((bits) => this.query(namespace, { bits, topK: k, exact: req.exact, probe: req.probe })));
      return { matches: each.map((r) => r.matches), plan: each[0]!.plan };
    }
    const ptr = this.kernels.heap.put(block);
    p.pins++;
    try {
      const res = await searchBatch(this.pool, p, ptr, req.bits.length, k, { exact: req.exact === true, probe: req.probe });
      return { matches: res.hits.map((hits) => hits.map(({ row, score }) => ({ id: p.idOf(row), score }))), plan: res.plan };
    } finally {
      p.pins--;
      this.kernels.heap.release(ptr);
      this.closeRetired();
    }
  }

  /** Per-namespace live counts; with a filter, only the vectors it matches (namespaces with none are left out). */
  stats(filter?: unknown): { dimension: number; metric: string; namespaces: Record<string, { vectorCount: number }>; totalVectorCount: number } {
    const f = parseFilter(filter);
    // no prototype: a namespace named "__proto__" or "constructor" is a key like any other
    const namespaces: Record<string, { vectorCount: number }> = Object.create(null);
    let total = 0;
    for (const [ns, p] of this.partitions) {
      const count = f === null ? p.liveCount : p.index.evaluate(f, p.live()).size;
      if (count === 0) continue;
      namespaces[ns] = { vectorCount: count };
      total += count;
    }
    return { dimension: this.dimension, metric: this.config.metric, namespaces, totalVectorCount: total };
  }

  /**
   * Live rows (matching `filter`) holding a number in `req.field`, by that number: largest
   * first unless `desc` is false; ties go to the later-appended row first (descending) or the
   * earlier one (ascending). At most `limit`. Walks the field's sorted numeric column from
   * one end testing membership in the filter's rows, so no per-call sort of the namespace.
   */
  order(namespace: string, req: OrderInput): OrderedRow[] {
    const limit = req.limit;
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_ORDER_LIMIT) throw new SvcError("E_BAD_REQUEST", `limit must be an integer in [1, ${MAX_ORDER_LIMIT}], got ${limit}`, { field: "limit" });
    checkField(req.field, "field");
    const desc = req.desc ?? true;
    if (typeof desc !== "boolean") throw new SvcError("E_BAD_REQUEST", "desc must be a boolean", { field: "desc" });
    const filter = parseFilter(req.filter);
    const p = this.partitions.get(namespace);
    if (p === undefined) return [];
    const universe = filter === null ? p.live() : p.index.evaluate(filter, p.live());
    const { rows, values } = p.index.ordered(req.field, universe, limit, desc);
    return Array.from(rows, (row, i) => {
      const out: OrderedRow = { id: p.idOf(row), value: values[i]! };
      if (req.includeMetadata) out.metadata = p.metadata(row);
      if (req.includePayload) {
        const payload = p.payload(row);
        if (payload !== null) out.payload = payload;
      }
      return out;
    });
  }

  /** Live rows (matching `filter`) per string value of `field`; a list of strings counts once per distinct value. No prototype. */
  facet(namespace: string, field: string, filter?: unknown): Record<string, number> {
    checkField(field, "field");
    const f = parseFilter(filter);
    const p = this.partitions.get(namespace);
    if (p === undefined) return Object.create(null) as Record<string, number>;
    return p.index.facet(field, f === null ? p.live() : p.index.evaluate(f, p.live()));
  }

  /** Smallest and largest number in `field` over the live rows (matching `filter`) holding one; null when none does. */
  range(namespace: string, field: string, filter?: unknown): { min: number; max: number } | null {
    checkField(field, "field");
    const f = parseFilter(filter);
    const p = this.partitions.get(namespace);
    if (p === undefined) return null;
    const universe = f === null ? p.live() : p.index.evaluate(f, p.live());
    const low = p.index.ordered(field, universe, 1, false);
    if (low.rows.length === 0) return null;
    return { min: low.values[0]!, max: p.index.ordered(field, universe, 1, true).values[0]! };
  }

  /** Ids of the namespace's live rows matching `filter`, in row order. */
  ids(namespace: string, filter?: unknown): string[] {
    const f = parseFilter(filter);
    const p = this.partitions.get(namespace);
    if (p === undefined) return [];
    const rows = f === null ? p.live() : p.index.evaluate(f, p.live());
    return Array.from(rows.toUint32Array(), (row) => p.idOf(row));
  }

  /** Live rows of the namespace (matching `filter`). */
  count(namespace: string, filter?: unknown): number {
    const f = parseFilter(filter);
    const p = this.partitions.get(namespace);
    if (p === undefined) return 0;
    return f === null ? p.liveCount : p.index.evaluate(f, p.live()).size;
  }

  /** Namespaces holding live rows, sorted. */
  namespaces(): string[] {
    const out: string[] = [];
    for (const [ns, p] of this.partitions) if (p.liveCount > 0) out.push(ns);
    return out.sort();
  }

  /** Resolves once every write acknowledged before the call is visible. */
  settled(): Promise<void> {
    return this.whenVisible(this.wal.position);
  }

  /** Resolves once the frame ending at `pos` (and everything before it) is applied. */
  whenVisible(pos: WalPosition): Promise<void> {
    if (before(pos, this.visiblePos)) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ pos, resolve }));
  }

  // ---- durability ---------------------------------------------------------------------

  /**
   * Persist the visible state so a restart replays only later frames: fsync the partition
   * files, write tombstones + metadata index per partition, then switch checkpoint.json
   * atomically and drop WAL segments before it.
   */
  checkpoint(): Promise<void> {
    this.checkpointing ??= this.writeCheckpoint().finally(() => {
      this.checkpointing = null;
      this.closeRetired();
    });
    return this.checkpointing;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closing = true;
    for (const running of this.compacting.values()) await running.catch(() => {});
    await this.settled();
    await this.checkpoint();
    this.closed = true;
    await this.wal.close();
    for (const p of this.partitions.values()) this.retired.push(p);
    this.partitions.clear();
    this.closeRetired();
    this.rotation?.dispose();
    rmSync(join(this.dir, "LOCK"), { force: true });
  }

  /**
   * Rewrite a namespace's live rows into a fresh partition and drop the dead ones. Copies in
   * chunks between which queries and the applier run; rows appended meanwhile are copied
   * too and deletes made meanwhile are carried over at the swap, which is synchronous.
   */
  compact(namespace: string): Promise<{ before: number; after: number }> {
    return this.rewrite(namespace, "auto");
  }

  /**
   * Build (or rebuild, merging the rows written since into it) the namespace's approximate
   * index now, whatever its size: a compaction that groups rows by nearest centroid
   * (ivf-build.ts). Queries and writes go on meanwhile; the swap is synchronous.
   */
  buildIndex(namespace: string): Promise<{ before: number; after: number }> {
    return this.rewrite(namespace, true);
  }

  /** The namespace's index, if any: lists, indexed rows and the delta of rows written since. */
  indexStats(namespace: string): { lists: number; indexedRows: number; deltaRows: number; bytes: number; probe: ProbeParams | null } | null {
    const p = this.partitions.get(namespace);
    if (p?.ivf == null) return null;
    return { lists: p.ivf.lists, indexedRows: p.ivf.indexedRows, deltaRows: p.rows - p.ivf.indexedRows, bytes: p.ivf.bytes, probe: p.ivf.calibrated };
  }

  /**
   * Start a background compaction when the partition's dead rows (overwritten or deleted) reach
   * COMPACT_DEAD_FRACTION of its rows (and COMPACT_MIN_DEAD): dead rows cost every scan. Returns
   * whether one runs now. (Checked only at checkpoints before, which come every checkpointBytes
   * of log, so an overwrite-heavy namespace went 84% dead before one was considered.)
   */
  private maybeCompact(p: Partition): boolean {
    if (this.compacting.has(p.namespace)) return true;
    const dead = p.tombstones.size;
    if (this.closing || this.closed || dead < COMPACT_MIN_DEAD || dead <= COMPACT_DEAD_FRACTION * p.rows) return false;
    void this.rewrite(p.namespace, "auto").catch(() => {});
    return true;
  }

  /** Start a background (re)build when a namespace is large enough and has no index, or its delta has outgrown ANN_DELTA_FRACTION. */
  private maybeIndex(p: Partition): void {
    if (this.closing || this.closed || this.compacting.has(p.namespace) || p.liveCount < this.annMinRows) return;
    if (p.ivf !== null && p.rows - p.ivf.indexedRows <= ANN_DELTA_FRACTION * p.ivf.indexedRows) return;
    void this.rewrite(p.namespace, "auto").catch(() => {});
  }

  private rewrite(namespace: string, cluster: boolean | "auto"): Promise<{ before: number; after: number }> {
    let running = this.compacting.get(namespace);
    if (running === undefined) {
      running = this.runCompaction(namespace, cluster).finally(() => this.compacting.delete(namespace));
      this.compacting.set(namespace, running);
    }
    return running;
  }

  // ---- internals ----------------------------------------------------------------------

  private get rowBytes(): number {
    return this.rotation ? this.dimension * 4 : Math.ceil(this.dimension / 128) * 16;
  }

  /** Values of the right length, as float32 (not yet checked for NaN/Infinity: see checkFinite). */
  private checkLength(values: ArrayLike<number> | undefined, field: string): Float32Array {
    if (values === undefined || values === null || typeof values !== "object" || typeof values.length !== "number") {
      throw new SvcError("E_BAD_REQUEST", `${field} must be an array of ${this.dimension} numbers`, { field });
    }
    if (values.length !== this.dimension) throw new SvcError("E_DIMENSION", `${field} has ${values.length} values, the collection has dimension ${this.dimension}`, { field });
    return values instanceof Float32Array ? values : Float32Array.from(values as ArrayLike<number>);
  }

  /**
   * One monomorphic pass over a batch of float32 rows: no NaN/Infinity (x - x is 0 only for
   * finite x; a float64 value too large for float32 became Infinity on conversion) and no
   * all-zero vector, which has no direction for cosine.
   */
  private checkFinite(f32: Float32Array, field: (i: number) => string): void {
    const dim = this.dimension;
    for (let i = 0, o = 0; o < f32.length; i++, o += dim) {
      // four accumulators: one float add chain per lane instead of one long dependency chain
      let n0 = 0, n1 = 0, n2 = 0, n3 = 0, bad = 0;
      let j = o;
      for (const end4 = o + (dim & ~3); j < end4; j += 4) {
        const x0 = f32[j]!, x1 = f32[j + 1]!, x2 = f32[j + 2]!, x3 = f32[j + 3]!;
        bad += x0 - x0 + (x1 - x1) + (x2 - x2) + (x3 - x3);
        n0 += x0 * x0;
        n1 += x1 * x1;
        n2 += x2 * x2;
        n3 += x3 * x3;
      }
      for (; j < o + dim; j++) {
        const x = f32[j]!;
        bad += x - x;
        n0 += x * x;
      }
      const norm = n0 + n1 + n2 + n3;
      if (bad !== 0) {
        const j = f32.subarray(o, o + dim).findIndex((x) => !Number.isFinite(x));
        throw new SvcError("E_NON_FINITE", `${field(i)}[${j}] is not a finite float32`, { field: `${field(i)}[${j}]` });
      }
      if (norm === 0) throw new SvcError("E_BAD_REQUEST", `${field(i)} is all zeros; cosine needs a non-zero vector`, { field: field(i) });
    }
  }

  private checkValues(values: ArrayLike<number> | undefined, field: string): Float32Array {
    const out = this.checkLength(values, field);
    this.checkFinite(out, () => field);
    return out;
  }

  private checkBits(bits: Uint8Array | undefined, field: string): Uint8Array {
    const bytes = Math.ceil(this.dimension / 8);
    if (!(bits instanceof Uint8Array) || bits.byteLength !== bytes) throw new SvcError("E_DIMENSION", `${field} must be ${bytes} packed bytes (dimension ${this.dimension} bits)`, { field });
    const row = new Uint8Array(this.rowBytes);
    row.set(bits);
    if (this.dimension % 8 !== 0) row[bytes - 1]! &= (1 << (this.dimension % 8)) - 1;
    return row;
  }

  /** Append to the WAL; on acknowledgement queue the op for the applier. */
  private async log(op: Op): Promise<void> {
    if (this.closed) throw new SvcError("E_CLOSED", "the collection is closed");
    const pos = await this.wal.append(op.type, op.body);
    let bytes = 0;
    if (op.type === OP.upsert) {
      bytes = op.body.v.byteLength;
      for (const p of op.body.p ?? []) bytes += p?.byteLength ?? 0;
    }
    this.queue.push({ op, pos, bytes });
    this.backlogBytes += bytes;
    if (this.trackVisibility) this.ackedAt.push(performance.now());
    if (!this.applyScheduled) {
      this.applyScheduled = true;
      setImmediate(() => void this.drain());
    }
    if (this.wal.stats.bytes - this.walBytesAtCheckpoint > this.checkpointBytes && this.checkpointing === null) void this.checkpoint().catch(() => {});
    // Backpressure: when the applier is this far behind, the acknowledgement waits until the
    // write is visible, so writers slow to the apply rate and staleness stays bounded.
    if (this.backlogBytes > MAX_APPLY_BACKLOG_BYTES) await this.whenVisible(pos);
  }

  /**
   * Apply acknowledged ops in log order. Float upserts are encoded by the pool's workers, and
   * the next op's encode starts before this one is applied: encoding depends only on the
   * op's own values, so the workers encode batch i+1 while the main thread writes batch i
   * (measured: 12 ms encode + 9 ms apply per 1000 x 1024-d batch, formerly in series).
   */
  private async drain(): Promise<void> {
    let next = this.encodeAhead(this.queue[0]);
    try {
      while (this.queue.length > 0) {
        const { op, pos, bytes } = this.queue.shift()!;
        const bits = await next;
        next = this.encodeAhead(this.queue[0]);
        this.apply(op, bits);
        if (op.type === OP.upsert || op.type === OP.delete || op.type === OP.update) {
          const p = this.partitions.get(op.body.ns);
          if (p !== undefined && !this.maybeCompact(p) && op.type === OP.upsert) this.maybeIndex(p);
        }
        this.backlogBytes -= bytes;
        this.visiblePos = pos;
        if (this.trackVisibility) this.visibleDelays.push(performance.now() - this.ackedAt.shift()!);
        this.releaseWaiters();
      }
    } finally {
      // After an exception the encode started ahead is never awaited: keep its rejection handled.
      next.catch(() => {});
      this.applyScheduled = false;
    }
  }

  /** The packed rows of a queued float upsert, encoded on the workers; undefined for any other op. */
  private encodeAhead(item: { op: Op } | undefined): Promise<Uint8Array | undefined> {
    if (item === undefined || item.op.type !== OP.upsert || this.rotation === null) return Promise.resolve(undefined);
    const v = item.op.body.v.byteOffset % 4 === 0 ? item.op.body.v : item.op.body.v.slice();
    return this.pool.encode(this.rotation, this.dimension, new Float32Array(v.buffer, v.byteOffset, v.byteLength / 4));
  }

  private releaseWaiters(): void {
    for (let i = this.waiters.length - 1; i >= 0; i--) {
      const w = this.waiters[i]!;
      if (before(w.pos, this.visiblePos)) {
        this.waiters.splice(i, 1);
        w.resolve();
      }
    }
  }

  /** Apply one logged op to the in-memory state and partition files (replay uses it too); `bits` = the upsert's rows already encoded. */
  private apply(op: Op, bits?: Uint8Array): void {
    switch (op.type) {
      case OP.upsert: {
        const { ns, ids, v, m, p } = op.body;
        this.partition(ns).append(this.rotation, ids, v, m, bits, p);
        return;
      }
      case OP.delete:
        this.partitions.get(op.body.ns)?.remove(op.body.ids);
        return;
      case OP.deleteAll:
        this.retire(op.body.ns);
        return;
      case OP.update: {
        const { ns, id, v, m, p: payload } = op.body;
        const p = this.partitions.get(ns);
        const row = p?.rowOf(id);
        if (p === undefined || row === undefined) return;
        const vector = v ?? (p.values ? new Uint8Array(p.vector(row).buffer) : this.checkBits(p.vector(row) as Uint8Array, "bits"));
        const meta = m === null ? p.metadata(row) : mergeMetadata(p.metadata(row), m);
        p.append(this.rotation, [id], vector, [Object.keys(meta).length === 0 ? null : meta], undefined, [payload ?? p.payload(row)]);
        return;
      }
      case OP.move: {
        // Synchronous: a query holds the partition it started with, so it sees the old or the new `to`.
        const { from, to } = op.body;
        const p = this.partitions.get(from);
        this.retire(to);
        if (p === undefined) return;
        this.partitions.delete(from);
        p.namespace = to;
        this.partitions.set(to, p);
        return;
      }
    }
  }

  /** Drop a namespace's partition; its files go once nothing reads them and no checkpoint refers to them. */
  private retire(ns: string): void {
    const p = this.partitions.get(ns);
    if (p === undefined) return;
    this.partitions.delete(ns);
    this.retired.push(p);
    this.closeRetired();
  }

  private partition(ns: string): Partition {
    let p = this.partitions.get(ns);
    if (p === undefined) {
      p = new Partition(this.kernels, this.partsDir, this.config, { namespace: ns, dir: `p${this.nextGen++}`, rows: 0, recordBytes: 0 });
      this.partitions.set(ns, p);
    }
    return p;
  }

  /** Close retired partitions nothing reads any more; delete their files unless the checkpoint still needs them. */
  private closeRetired(): void {
    if (this.checkpointing !== null) return;
    this.retired = this.retired.filter((p) => {
      if (p.pins > 0) return true;
      p.close();
      if (!this.referenced.has(p.dir)) rmSync(p.path, { recursive: true, force: true });
      return false;
    });
  }

  private async runCompaction(ns: string, cluster: boolean | "auto" = "auto"): Promise<{ before: number; after: number }> {
    await this.settled();
    const old = this.partitions.get(ns);
    if (old === undefined) return { before: 0, after: 0 };
    const clustered = cluster === true || (cluster === "auto" && old.liveCount >= this.annMinRows);
    const fresh = new Partition(this.kernels, this.partsDir, this.config, { namespace: ns, dir: `p${this.nextGen++}`, rows: 0, recordBytes: 0 });
    old.pins++;
    let map: Int32Array;
    let before: number;
    try {
      if (clustered && old.liveCount > 0) {
        map = await copyClustered(this.kernels, this.pool, old, fresh, this.rotation, this.config.seed, () => this.closing);
        await writeDurable(join(fresh.path, IVF_FILE), fresh.ivf!.serialize());
      } else map = await copyLiveRows(old, fresh, this.rotation, () => this.closing);
      before = old.rows;
    } catch (err) {
      fresh.close();
      rmSync(fresh.path, { recursive: true, force: true });
      throw err;
    } finally {
      old.pins--;
    }
    if (this.partitions.get(ns) !== old) {
      // Deleted (deleteAll) while compacting: nothing to swap in.
      fresh.close();
      rmSync(fresh.path, { recursive: true, force: true });
      return { before, after: 0 };
    }
    carryTombstones(old, fresh, map);
    this.partitions.set(ns, fresh);
    this.retired.push(old);
    this.closeRetired();
    while (this.checkpointing !== null) await this.checkpointing.catch(() => {});
    await this.checkpoint();
    return { before, after: fresh.liveCount };
  }

  private async writeCheckpoint(): Promise<void> {
    await this.settled();
    const seq = this.seq + 1;
    const pos = this.visiblePos;
    const walBytes = this.wal.stats.bytes;
    // Snapshot synchronously: rows past these counts are cut on reopen and replayed from the WAL.
    const snaps = [...this.partitions.values()].map((p) => ({
      p,
      state: p.state(`tombstones-${seq}.roar`, `index-${seq}.bin`, `sums-${seq}.bin`),
      tombstones: p.tombstones.serialize("portable"),
      index: p.index.serialize(),
      sums: serializeSums(p.sums()),
    }));
    for (const s of snaps) s.p.pins++;
    try {
      await Promise.all(
        snaps.map(async ({ p, state, tombstones, index, sums }) => {
          await p.sync();
          await writeDurable(join(p.path, state.tombstones), tombstones);
          await writeDurable(join(p.path, state.index), index);
          await writeDurable(join(p.path, state.sums!), sums);
        }),
      );
      const cp: Checkpoint = { version: CHECKPOINT_VERSION, seq, wal: pos, partitions: snaps.map((s) => s.state) };
      await writeDurable(join(this.dir, "checkpoint.json.tmp"), Buffer.from(JSON.stringify(cp)));
      await rename(join(this.dir, "checkpoint.json.tmp"), join(this.dir, "checkpoint.json"));
      await fsyncDir(this.dir);
      this.seq = seq;
      this.walBytesAtCheckpoint = walBytes;
      this.referenced = new Set(cp.partitions.map((p) => p.dir));
    } finally {
      for (const s of snaps) s.p.pins--;
    }
    // Older snapshot files and dropped partitions are no longer referenced.
    for (const s of snaps) {
      for (const f of readdirSync(s.p.path)) {
        const old = (f.startsWith("tombstones-") || f.startsWith("index-") || f.startsWith("sums-")) && f !== s.state.tombstones && f !== s.state.index && f !== s.state.sums;
        if (old) await rm(join(s.p.path, f), { force: true });
      }
    }
    await this.wal.dropBefore(pos);
    const open = new Set([...this.partitions.values(), ...this.retired].map((p) => p.dir));
    for (const d of readdirSync(this.partsDir)) if (!open.has(d) && !this.referenced.has(d)) await rm(join(this.partsDir, d), { recursive: true, force: true });
    for (const p of this.partitions.values()) this.maybeCompact(p);
  }
}

// ---- helpers ------------------------------------------------------------------------------

function before(a: WalPosition, b: WalPosition): boolean {
  return a.segment < b.segment || (a.segment === b.segment && a.offset <= b.offset);
}

function checkNamespace(ns: unknown, field = "namespace"): asserts ns is string {
  if (typeof ns !== "string" || Buffer.byteLength(ns) > MAX_ID_BYTES) throw new SvcError("E_BAD_REQUEST", `${field} must be a string of at most ${MAX_ID_BYTES} bytes`, { field });
}

function checkField(name: unknown, field: string): asserts name is string {
  if (typeof name !== "string" || name.length === 0) throw new SvcError("E_BAD_REQUEST", `${field} must be a non-empty metadata field name`, { field });
}

/**
 * A payload as stored: null for none (undefined or null), else a copy of the bytes (the op
 * waits in the apply queue after the acknowledgement, and the caller may reuse its buffer).
 */
function checkPayload(payload: unknown, field: string): Uint8Array | null {
  if (payload === undefined || payload === null) return null;
  if (!(payload instanceof Uint8Array)) throw new SvcError("E_BAD_REQUEST", `${field} must be bytes (a Uint8Array)`, { field });
  if (payload.byteLength > MAX_PAYLOAD_BYTES) throw new SvcError("E_BAD_REQUEST", `${field} is ${payload.byteLength} bytes; the limit is ${MAX_PAYLOAD_BYTES}`, { field });
  return new Uint8Array(payload);
}

function checkId(id: unknown, field: string): string {
  if (typeof id !== "string" || id.length === 0 || Buffer.byteLength(id) > MAX_ID_BYTES) {
    throw new SvcError("E_BAD_REQUEST", `${field} must be a non-empty string of at most ${MAX_ID_BYTES} bytes`, { field });
  }
  return id;
}
