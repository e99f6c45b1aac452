/**
 * @module collection — a durable vector collection: the facade over its parts. Writes (writer.ts) go
 * to the log first and are applied asynchronously (applier.ts); reads (reader.ts) see the applied
 * state; checkpoints, compaction, index builds and recovery live in maintenance.ts; input checks in
 * input-checks.ts; the state they share in collection-state.ts. The log is any store/log.ts `Log`
 * (default: the WAL under `<dir>/wal`).
 */
import { existsSync, renameSync, rmSync } from "node:fs";
import { join, relative } from "node:path";
import { SvcError } from "../errors.js";
import { tracer } from "../probes.js";
import type { Kernels } from "../kernels/abi.js";
import type { ScanPool } from "../pool/scan-pool.js";
import type { LogPosition, LogStats, OpenLog, RecoveryReport } from "../store/log.js";
import { stderrReporter, type Reporter } from "../store/reporter.js";
import { Wal, type Durability } from "../store/wal.js";
import { Applier } from "./applier.js";
import { copyCheckpoint, type CollectionCopy } from "./backup.js";
import { lockDir, loadCheckpoint, loadConfig, removeUnreferenced, type Checkpoint, type CollectionConfig } from "./collection-files.js";
import { CollectionState } from "./collection-state.js";
import type { IdPage, IdPageInput } from "./id-order.js";
import type { ProbeParams } from "./ivf.js";
import { Maintenance } from "./maintenance.js";
import type { VectorShape } from "./partition.js";
import { Reader, type FetchedVector, type Match, type OrderedRow, type OrderInput, type QueryInput, type StoredRow } from "./reader.js";
import { queryDepth, type Plan, type Scoring, type SearchResult } from "./search.js";
import { Writer, type VectorInput } from "./writer.js";

export { MAX_APPLY_BACKLOG_BYTES } from "./applier.js";
export { MAX_ID_BYTES, MAX_ORDER_LIMIT, MAX_PAYLOAD_BYTES } from "./input-checks.js";
export { COMPACT_DEAD_FRACTION, COMPACT_MIN_DEAD, DEFAULT_CHECKPOINT_BYTES } from "./maintenance.js";
export type { IdPage, IdPageInput } from "./id-order.js";
export type { FetchedVector, Match, OrderedRow, OrderInput, QueryInput, StoredRow } from "./reader.js";
export type { VectorInput } from "./writer.js";
export type { Scoring } from "./search.js";
export type { CollectionCopy, CopiedFile } from "./backup.js";
export type { CollectionConfig };

export interface CollectionOptions {
  kernels: Kernels;
  pool: ScanPool;
  /** Required when creating; checked against the stored config when opening. */
  dimension?: number;
  metric?: VectorShape["metric"];
  seed?: number;
  /** Of the default log (the WAL under `<dir>/wal`); ignored with `openLog`. */
  durability?: Durability;
  segmentBytes?: number;
  /** How the collection opens and replays its log (store/log.ts); default: `Wal.opener(<dir>/wal, {durability, segmentBytes})`. */
  openLog?: OpenLog;
  checkpointBytes?: number;
  /** Live rows from which a namespace gets an approximate index, built in the background (default ANN_MIN_ROWS; Infinity: never). */
  annMinRows?: number;
  /** Milliseconds without upserts after which a namespace's delta is merged into its index (default ANN_IDLE_MS; see ivf.ts). */
  annIdleMs?: number;
  /** Milliseconds without upserts after which a namespace's due depth calibration starts (default CALIBRATE_QUIET_MS; see maintenance.ts). */
  calibrateQuietMs?: number;
  /** How damage found here is named in damage reports (store/damage.ts): the store name and the directory file names are relative to (default: `collection:<dir>`, the collection dir). */
  damage?: { store: string; root: string };
  /** Told of damage found here and of background failures: a compaction, an index build or merge, a checkpoint (each is tried again on a later write); default: stderrReporter. */
  reporter?: Reporter;
  /**
   * `svc repair` only: open what damaged files still allow and rebuild the rest from the log (a data file
   * shorter than the checkpoint says, a missing tombstones, index or ivf file, an unreadable checkpoint when
   * the log holds every write since the collection was created). Without it such damage takes the
   * collection offline: open rejects with E_STORE_OFFLINE and the reporter is told.
   */
  salvage?: boolean;
}

/** Codes of an open that failed on damaged files (others are the caller's input, another owner, shutdown, a cluster log's availability). */
const DAMAGE = new Set(["E_IO", "E_WAL_CORRUPT", "E_INTERNAL"]);

/**
 * Write path: validate -> log append (group commit; the promise is the acknowledgement) ->
 * the applier adds the rows to the partition on a later tick (visible to queries). Read
 * path: the partition's visible state only. Everything logged is logical (ids, not rows),
 * so replay works on any generation of the partition files.
 */
export class Collection {
  readonly dir: string;
  readonly config: CollectionConfig;
  readonly recovery: RecoveryReport = { segments: 0, frames: 0, bytes: 0, tornTail: null, damaged: [] };
  private readonly s: CollectionState;
  private readonly applier: Applier;
  private readonly writer: Writer;
  private readonly reader: Reader;
  private readonly maintenance: Maintenance;

  private constructor(dir: string, config: CollectionConfig, opts: CollectionOptions, cp: Checkpoint | null) {
    this.dir = dir;
    this.config = config;
    this.s = new CollectionState(dir, config, opts, cp);
    this.applier = new Applier(
      this.s,
      { afterAppend: () => this.maintenance.afterAppend(), afterApply: (op) => this.maintenance.afterApply(op) },
      cp?.wal ?? { segment: 0, offset: 0 },
    );
    this.writer = new Writer(this.s, this.applier);
    this.reader = new Reader(this.s);
    this.maintenance = new Maintenance(this.s, this.applier, opts);
  }

  /** Open a collection directory, creating it when `dimension` is given; replays the log after the last checkpoint. */
  static async open(dir: string, opts: CollectionOptions): Promise<Collection> {
    try {
      return await Collection.openFiles(dir, opts);
    } catch (err) {
      // A plain error (ENOENT, a JSON or decoding error) comes from the files, unless a non-WAL log (a cluster stream) may have thrown it.
      if (err instanceof SvcError ? !DAMAGE.has(err.code) : opts.openLog !== undefined) throw err;
      // Damage the open cannot get past: told to the reporter (health "degraded"), this collection alone is offline.
      const damage = opts.damage ?? { store: `collection:${dir}`, root: dir };
      const file = (err as { details?: { file?: unknown } }).details?.file ?? (err as { path?: unknown }).path;
      const why = (err as Error).message.replaceAll(`${damage.root}/`, "");
      (opts.reporter ?? stderrReporter).damage({
        store: damage.store,
        file: relative(damage.root, typeof file === "string" ? file : dir),
        kind: "unopenable",
        dropped: 0,
        offline: true,
        detail: `${why}; offline (503 E_STORE_OFFLINE) until \`svc repair\` rebuilds it`,
      });
      throw new SvcError("E_STORE_OFFLINE", `${damage.store} is damaged and offline: ${why}`, { field: "name", cause: err });
    }
  }

  private static async openFiles(dir: string, opts: CollectionOptions): Promise<Collection> {
    const config = loadConfig(dir, opts);
    lockDir(dir);
    try {
      const cp = opts.salvage ? loadOrSetAsideCheckpoint(dir, opts) : loadCheckpoint(dir);
      removeUnreferenced(join(dir, "parts"), cp);
      const c = new Collection(dir, config, opts, cp);
      const openLog = opts.openLog ?? Wal.opener(join(dir, "wal"), { durability: opts.durability, segmentBytes: opts.segmentBytes });
      Object.assign(c.recovery, await c.maintenance.recover(cp, openLog));
      return c;
    } catch (err) {
      rmSync(join(dir, "LOCK"), { force: true });
      throw err;
    }
  }

  /** The log's counters (frames, bytes, fsyncs). */
  get walStats(): LogStats {
    return this.s.log.stats;
  }

  get dimension(): number {
    return this.config.dimension;
  }

  /** Record durable -> visible delays in `visibleDelays` (for the benchmark). */
  get trackVisibility(): boolean {
    return this.applier.trackVisibility;
  }
  set trackVisibility(on: boolean) {
    this.applier.trackVisibility = on;
  }
  get visibleDelays(): number[] {
    return this.applier.visibleDelays;
  }

  // ---- writes (writer.ts) ---------------------------------------------------------------

  /** Insert or replace vectors; resolves once the batch is durable (acknowledged), before it is visible. */
  upsert(namespace: string, vectors: readonly VectorInput[]): Promise<{ upsertedCount: number }> {
    return tracer === null
      ? this.writer.upsert(namespace, vectors)
      : tracer.span("engine.upsert", { "svc.namespace": namespace, "svc.vectors": vectors.length }, () =>
          this.writer.upsert(namespace, vectors),
        );
  }

  /** Delete by ids, by filter (evaluated on everything acknowledged so far) or everything in the namespace. */
  delete(namespace: string, req: { ids?: readonly string[]; filter?: unknown; deleteAll?: boolean }): Promise<{ deleted: number }> {
    return tracer === null
      ? this.writer.delete(namespace, req)
      : tracer.span("engine.delete", { "svc.namespace": namespace }, () => this.writer.delete(namespace, req));
  }

  /** Replace the values, merge metadata and/or replace the payload of an existing id (what is not given is kept). */
  update(
    namespace: string,
    req: { id: string; values?: ArrayLike<number>; bits?: Uint8Array; setMetadata?: unknown; payload?: Uint8Array },
  ): Promise<void> {
    return this.writer.update(namespace, req);
  }

  /** Merge `setMetadata` into every row matching `filter` (`dryRun`: only count them); `matched`: how many. */
  updateWhere(namespace: string, req: { filter: unknown; setMetadata?: unknown; dryRun?: boolean }): Promise<{ matched: number }> {
    return this.writer.updateWhere(namespace, req);
  }

  /** Make namespace `to` hold exactly what `from` holds and empty `from`, in one logged step. */
  moveNamespace(from: string, to: string): Promise<{ moved: number }> {
    return this.writer.moveNamespace(from, to);
  }

  // ---- reads (reader.ts) ----------------------------------------------------------------

  fetch(namespace: string, ids: readonly string[]): FetchedVector[] {
    return this.reader.fetch(namespace, ids);
  }

  /** fetch without the vectors (what records read: a vector is 4 KB at 1024-d). */
  rows(namespace: string, ids: readonly string[]): StoredRow[] {
    return this.reader.rows(namespace, ids);
  }

  query(
    namespace: string,
    req: QueryInput,
  ): Promise<{ matches: Match[]; plan: Plan; scanned: number; matched?: number; timings?: SearchResult["timings"]; probed?: number }> {
    if (tracer === null) return this.reader.query(namespace, req);
    return tracer.span("engine.query", { "svc.namespace": namespace }, async (span) => {
      const r = await this.reader.query(namespace, req);
      span.setAttribute("svc.plan", r.plan);
      span.setAttribute("svc.scanned", r.scanned);
      return r;
    });
  }

  queryBatch(
    namespace: string,
    req: { bits: readonly Uint8Array[]; topK: number; exact?: boolean; probe?: ProbeParams },
  ): Promise<{ matches: Match[][]; plan: Plan }> {
    return this.reader.queryBatch(namespace, req);
  }

  stats(filter?: unknown): {
    dimension: number;
    metric: string;
    namespaces: Record<string, { vectorCount: number }>;
    totalVectorCount: number;
  } {
    return this.reader.stats(filter);
  }

  order(namespace: string, req: OrderInput): OrderedRow[] {
    return this.reader.order(namespace, req);
  }

  facet(namespace: string, field: string, filter?: unknown): Record<string, number> {
    return this.reader.facet(namespace, field, filter);
  }

  range(namespace: string, field: string, filter?: unknown): { min: number; max: number } | null {
    return this.reader.range(namespace, field, filter);
  }

  ids(namespace: string, filter?: unknown): string[] {
    return this.reader.ids(namespace, filter);
  }

  /** One page of live ids in id order (id-order.ts), optionally only those matching `filter`. */
  list(namespace: string, req: IdPageInput & { filter?: unknown }): IdPage {
    return this.reader.list(namespace, req);
  }

  count(namespace: string, filter?: unknown): number {
    return this.reader.count(namespace, filter);
  }

  namespaces(): string[] {
    return this.reader.namespaces();
  }

  indexStats(namespace: string): ReturnType<Reader["indexStats"]> {
    return this.reader.indexStats(namespace);
  }

  // ---- visibility (applier.ts) ----------------------------------------------------------

  /**
   * Resolves once every write acknowledged before the call is visible: this collection's own, and
   * with a followed log (cluster/jetstream-log.ts `follow`) every writer's on the log at the time of the call.
   */
  settled(): Promise<void> {
    return this.applier.settled();
  }

  /** Resolves once no background calibration of a partition's rescoring depth runs (engine/depth.ts); queries meanwhile use the depth calibrated before (or the dimension's default). */
  depthCalibrated(): Promise<void> {
    return this.maintenance.calibrated();
  }

  /** The rescoring depth a namespace's queries use (search.ts queryDepth; Infinity: scored exactly), null before its first calibration or without the namespace. */
  depthOf(namespace: string): number | null {
    const p = this.s.partitions.get(namespace);
    return p === undefined || p.depth === null ? null : queryDepth(p);
  }

  /** End of the last op applied (visible to queries); with a JetStream log `offset` is its stream sequence. */
  get applied(): LogPosition {
    return this.applier.visible;
  }

  /** End of the last acknowledged append (after open: of the log as replayed): a read-your-writes token for whenVisible on any replica of the log. */
  get logPosition(): LogPosition {
    return this.s.log.position;
  }

  /** The lowest log offset a replica starting after `pos` still reads (Log.neededAfter; 0: unknown, keep the log). */
  neededAfter(pos: LogPosition): number {
    return this.s.log.neededAfter?.(pos) ?? 0;
  }

  /** Resolves once the frame ending at `pos` (and everything before it) is applied. */
  whenVisible(pos: LogPosition): Promise<void> {
    return this.applier.whenVisible(pos);
  }

  // ---- maintenance (maintenance.ts) -----------------------------------------------------

  /** Persist the visible state so a restart replays only later frames. */
  checkpoint(): Promise<void> {
    return this.maintenance.checkpoint();
  }

  /**
   * Copy the collection as of a fresh checkpoint into `dest` (backup.ts), while writes go on: what the copy holds
   * is every write acknowledged before the call (and perhaps some made during it), never half a write.
   */
  backup(dest: string): Promise<CollectionCopy> {
    if (this.s.closed || this.s.closing) return Promise.reject(new SvcError("E_CLOSED", "the collection is closing"));
    return this.maintenance.checkpointThen((cp, parts) => copyCheckpoint(this.dir, cp, parts, dest));
  }

  /** Rewrite a namespace's live rows into a fresh partition and drop the dead ones. */
  compact(namespace: string): Promise<{ before: number; after: number }> {
    return this.maintenance.compact(namespace);
  }

  /** Build (or rebuild) the namespace's approximate index now, whatever its size. */
  buildIndex(namespace: string): Promise<{ before: number; after: number }> {
    return this.maintenance.buildIndex(namespace);
  }

  /** Wait for running rewrites, apply everything acknowledged, checkpoint, close the log and the partitions, release the LOCK. */
  async close(): Promise<void> {
    const s = this.s;
    if (s.closed) return;
    await this.maintenance.stop();
    await this.applier.drained();
    await this.maintenance.checkpoint();
    s.closed = true;
    await s.log.close();
    for (const p of s.partitions.values()) s.retired.push(p);
    s.partitions.clear();
    s.closeRetired();
    s.rotation?.dispose();
    rmSync(join(this.dir, "LOCK"), { force: true });
  }
}

/**
 * Salvage: an unreadable checkpoint.json is set aside (with parts/) and the collection is rebuilt
 * by replaying the whole log, which needs the log's first segment (000001.seg: nothing was dropped
 * yet); otherwise nothing is touched and E_IO says why (a restore of checkpoint.json is needed).
 */
function loadOrSetAsideCheckpoint(dir: string, opts: CollectionOptions): Checkpoint | null {
  try {
    return loadCheckpoint(dir);
  } catch (err) {
    if (opts.openLog !== undefined || !existsSync(join(dir, "wal", "000001.seg"))) {
      throw new SvcError(
        "E_IO",
        `${join(dir, "checkpoint.json")}: ${(err as Error).message}; the log no longer holds every write (its first segment was dropped), so it cannot be rebuilt from it: restore checkpoint.json from a backup`,
        { details: { file: join(dir, "checkpoint.json") }, cause: err },
      );
    }
    const stamp = Date.now();
    renameSync(join(dir, "checkpoint.json"), join(dir, `checkpoint.json.damaged-${stamp}`));
    if (existsSync(join(dir, "parts"))) renameSync(join(dir, "parts"), join(dir, `parts.damaged-${stamp}`));
    const damage = opts.damage ?? { store: `collection:${dir}`, root: dir };
    (opts.reporter ?? stderrReporter).damage({
      store: damage.store,
      file: relative(damage.root, join(dir, "checkpoint.json")),
      kind: "unreadable",
      dropped: 0,
      offline: false,
      detail: `${(err as Error).message}; rebuilt from the log, which holds every write since the collection was created (the damaged file is kept as checkpoint.json.damaged-${stamp}, the old partitions as parts.damaged-${stamp})`,
    });
    return null;
  }
}
