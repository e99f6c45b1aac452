/** @module maintenance — what keeps a collection's files in shape: recovery on open (replay, rows rebuilt after damage, damage reports), checkpoints, compaction and index builds (rewrites) with their triggers. */
import { readdirSync, rmSync } from "node:fs";
import { rename, rm } from "node:fs/promises";
import { join } from "node:path";
import { timing } from "../probes.js";
import { reportWalLosses } from "../store/damage.js";
import type { Reporter } from "../store/reporter.js";
import { atOrBefore, type OpenLog, type RecoveryReport } from "../store/log.js";
import { fsyncDir } from "../store/scan.js";
import type { Applier } from "./applier.js";
import { serializeSums } from "./block-sums.js";
import { CHECKPOINT_VERSION, writeDurable, type Checkpoint } from "./collection-files.js";
import type { CollectionState } from "./collection-state.js";
import { carryTombstones, copyLiveRows } from "./compaction.js";
import { calibrateDepth, depthDue } from "./depth.js";
import { copyClustered } from "./ivf-build.js";
import { ANN_DELTA_FRACTION, ANN_IDLE_DELTA_FRACTION, ANN_IDLE_MS, ANN_MIN_ROWS } from "./ivf.js";
import { LogHistory } from "./log-history.js";
import { OP, type Op } from "./ops.js";
import { IVF_FILE, type Partition } from "./partition.js";
import { DEPTH_MAX_FLOATS } from "./search.js";

/** Take a checkpoint once this many log bytes were written since the last one. */
export const DEFAULT_CHECKPOINT_BYTES = 256 << 20;
/** One partition as a checkpoint left it: live rows, and the length of each data file (bytes past it are cut on open). */
export interface PartitionAtCheckpoint {
  live: number;
  bytes: Record<string, number>;
}

/** Compact a partition in the background once this fraction of its rows is dead (and at least COMPACT_MIN_DEAD rows); checked as deletes and overwrites are applied. */
export const COMPACT_DEAD_FRACTION = 0.25;
export const COMPACT_MIN_DEAD = 1024;
/**
 * A due depth calibration (depth.ts) starts once no upsert reached its namespace for this many milliseconds, or once it
 * has waited CALIBRATE_WAIT_MAX_MS: a calibration reads every live row against 200 sample queries on the main thread,
 * so run inside a stream of upserts it took ~10 µs of main-thread CPU a vector from the ingest (40k x 1024-d,
 * bench/RESULTS.md); a stream calibrates at its end, on the rows it left, and queries meanwhile keep the depth before.
 * Not deferred once the partition holds half of DEPTH_MAX_FLOATS (search.ts): it is calibrated on at least that many, as before.
 */
export const CALIBRATE_QUIET_MS = 1000;
export const CALIBRATE_WAIT_MAX_MS = 10_000;

export class Maintenance {
  private readonly checkpointBytes: number;
  private readonly annMinRows: number;
  private readonly annIdleMs: number;
  private readonly calibrateQuietMs: number;
  private logBytesAtCheckpoint = 0;
  private readonly compacting = new Map<string, Promise<{ before: number; after: number }>>();
  /** Namespaces with an index and a delta: when an upsert last reached them, and the timer that checks for idleness. */
  private readonly lastUpsert = new Map<string, number>();
  private readonly idleTimers = new Map<string, NodeJS.Timeout>();
  /** Depth calibrations running (depth.ts), by namespace. */
  private readonly calibrating = new Map<string, Promise<void>>();
  /** Due depth calibrations waiting for their namespace to go quiet: when each fell due, and its timer. */
  private readonly calibrationDue = new Map<string, { since: number; timer: NodeJS.Timeout }>();
  /** Directories of the fresh partitions running rewrites are filling (in neither `partitions` nor `retired` yet). */
  private readonly building = new Set<string>();

  constructor(
    private readonly s: CollectionState,
    private readonly applier: Applier,
    private readonly opts: {
      checkpointBytes?: number;
      annMinRows?: number;
      annIdleMs?: number;
      calibrateQuietMs?: number;
    },
  ) {
    this.checkpointBytes = opts.checkpointBytes ?? DEFAULT_CHECKPOINT_BYTES;
    this.annMinRows = opts.annMinRows ?? ANN_MIN_ROWS;
    this.annIdleMs = opts.annIdleMs ?? ANN_IDLE_MS;
    this.calibrateQuietMs = opts.calibrateQuietMs ?? CALIBRATE_QUIET_MS;
  }

  /** The rejection handler of a background `task` (e.g. "index build of namespace 'docs'"): tells the reporter, unless the collection is closing (which abandons builds). */
  private failed(task: string): (err: unknown) => void {
    return (err) => {
      if (!this.s.closing && !this.s.closed) this.s.reporter.background(err, `${task} in ${this.s.damage.store}`);
    };
  }

  /**
   * Open the log and replay it after the checkpoint `cp` into the applier. Rows found damaged on
   * open are rebuilt from the frames before the checkpoint that are still in the log; a partition
   * with damaged rows is then rewritten without them, and any other is compacted or indexed when due.
   */
  async recover(cp: Checkpoint | null, openLog: OpenLog): Promise<RecoveryReport> {
    const s = this.s;
    const damaged = [...s.partitions.values()].flatMap((p) => p.damaged.filter((d) => d.live));
    const lost = new Set(damaged.filter((d) => d.id !== null).map((d) => d.id!));
    // A live row whose id is unreadable: follow every id, so the ids the log holds and the partition lacks are found.
    const unreadable = damaged.some((d) => d.id === null);
    const history = cp !== null && (lost.size > 0 || unreadable) ? new LogHistory(unreadable ? null : lost, s.rowBytes) : null;
    let rebuilt = false;
    const rebuild = () => {
      if (!rebuilt) this.rebuildDamaged(history);
      rebuilt = true;
    };
    const { log, report } = await openLog({
      from: cp?.wal,
      prefix: history !== null,
      onFrame: (f) => {
        if (history !== null && atOrBefore(f.end, cp!.wal)) return history.take({ type: f.type, body: f.body } as Op);
        rebuild();
        this.applier.replayed({ type: f.type, body: f.body } as Op, f.end);
      },
      onTail: (f) => this.applier.tailed({ type: f.type, body: f.body } as Op, f.end),
    });
    rebuild();
    s.log = log;
    this.applier.caughtUp(log.position);
    reportWalLosses(s.reporter, s.damage.store, s.damage.root, report);
    this.logBytesAtCheckpoint = this.logBytes();
    for (const p of s.partitions.values()) {
      // A partition with damaged rows is rewritten without them, so its files check clean again.
      if (p.damaged.length > 0)
        void this.rewrite(p.namespace, "auto").catch(this.failed(`rewrite of namespace '${p.namespace}' (damaged rows)`));
      else if (!this.maybeCompact(p)) this.maybeIndex(p);
      this.maybeCalibrate(p);
    }
    return report;
  }

  /**
   * Rows the partitions dropped on open (their block sums failed): append again, from the log, each
   * live one whose last logged state is still there; report per file what was rebuilt and what is lost.
   * Live rows whose id was unreadable are rebuilt by the log's ids: every id the log holds live in the
   * namespace at the checkpoint that the partition no longer has was in one of them.
   */
  private rebuildDamaged(history: LogHistory | null): void {
    for (const p of this.s.partitions.values()) {
      if (p.damaged.length === 0) continue;
      const logged = new Map<number, boolean>();
      for (const d of p.damaged) {
        const row = d.live && d.id !== null && p.rowOf(d.id) === undefined ? history?.get(p.namespace, d.id) : undefined;
        if (row !== undefined) p.append(this.s.rotation, [d.id!], row.v, [row.m], undefined, [row.p]);
        logged.set(d.row, row !== undefined);
      }
      const unreadable = p.damaged.filter((d) => d.live && d.id === null).map((d) => d.row);
      const found: string[] = [];
      if (unreadable.length > 0 && history !== null) {
        for (const [id, row] of history.entries(p.namespace)) {
          if (p.rowOf(id) !== undefined) continue;
          p.append(this.s.rotation, [id], row.v, [row.m], undefined, [row.p]);
          found.push(id);
        }
      }
      const list = (xs: Array<string | number>) => (xs.length > 20 ? `${xs.slice(0, 20).join(", ")}, ...` : xs.join(", "));
      const byFile = new Map<string, { rows: number[]; rebuilt: number; dropped: string[]; dead: number; unreadable: number }>();
      for (const d of p.damaged) {
        for (const f of d.files) {
          const e = byFile.get(f) ?? { rows: [], rebuilt: 0, dropped: [], dead: 0, unreadable: 0 };
          e.rows.push(d.row);
          if (!d.live) e.dead++;
          else if (d.id === null) e.unreadable++;
          else if (logged.get(d.row)) e.rebuilt++;
          else if (history?.deleted(p.namespace, d.id) === true)
            e.dead++; // deleted, as the log says (a lost tombstones file)
          else e.dropped.push(d.id);
          byFile.set(f, e);
        }
      }
      for (const [f, e] of byFile) {
        // The log's ids stand for unreadable rows by count only: which row each one was is unknown.
        const gone = Math.max(0, e.unreadable - found.length);
        const rebuilt = e.rebuilt + e.unreadable - gone;
        const named = gone === 0 ? [] : [`${gone === e.unreadable ? "" : `${gone} of `}rows ${rowRanges(unreadable)} (ids unreadable)`];
        const dropped = [...e.dropped, ...named];
        const fromIds =
          e.unreadable > 0 && found.length > 0 ? `; the log's ids for the ${e.unreadable} row(s) with unreadable ids: ${list(found)}` : "";
        // A data file's blocks failed their sums, or (svc repair) the tombstones file was lost: its ids' last rows were of unknown state.
        const lostFile = !(f === "bits.bin" || f === "values.f32" || f === "records.bin");
        const what = lostFile
          ? `the tombstones file is missing or unreadable: ${e.rows.length} row(s) of unknown state (each id's last row; rows ${list(e.rows)})`
          : `${e.rows.length} row(s) in blocks that failed their checksum (rows ${list(e.rows)})`;
        this.s.reportDamage({
          file: join(p.path, f),
          kind: lostFile ? "unreadable" : "bad-checksum",
          dropped: e.dropped.length + gone,
          detail: `${what} in namespace '${p.namespace}': ${rebuilt} rebuilt from the log, ${e.dropped.length + gone} dropped${lostFile && dropped.length > 0 ? " (not in the log: deleted, or written before its first segment)" : ""}${dropped.length > 0 ? ` (${list(dropped)})` : ""}, ${e.dead} already dead${fromIds}`,
        });
      }
    }
  }

  /** Bytes of log counted towards the next checkpoint: appended, or with a followed log applied from its tail (any writer's; vector and payload bytes). */
  private logBytes(): number {
    return this.s.log.head !== undefined ? this.applier.tailedBytes : this.s.log.stats.bytes;
  }

  /** After an append (or a frame from a followed log's tail): start a checkpoint once checkpointBytes of log were written since the last one. */
  afterAppend(): void {
    if (this.logBytes() - this.logBytesAtCheckpoint > this.checkpointBytes && this.s.checkpointing === null)
      void this.checkpoint().catch(this.failed("checkpoint"));
  }

  /** After an applied upsert, delete or update: compact the partition when due, else (after an upsert) index it when due. */
  afterApply(op: Op): void {
    if (op.type === OP.upsert || op.type === OP.delete || op.type === OP.update) {
      const p = this.s.partitions.get(op.body.ns);
      if (p !== undefined && !this.maybeCompact(p) && op.type === OP.upsert) this.maybeIndex(p);
      if (p !== undefined && op.type === OP.upsert) this.maybeCalibrate(p);
    }
  }

  /** Calibrate the rescoring depth of `p` in the background when due (depth.ts depthDue), once its writes paused (calibrateQuietMs); again when it grew meanwhile. */
  private maybeCalibrate(p: Partition): void {
    const s = this.s;
    if (s.closing || s.closed || s.rotation === null || this.calibrating.has(p.namespace) || !depthDue(p)) return;
    const ns = p.namespace;
    const due = this.calibrationDue.get(ns);
    // Past half of DEPTH_MAX_FLOATS, a partition still growing could pass it (and be calibrated no more) before it goes quiet.
    if (2 * p.liveCount * p.shape.dimension > DEPTH_MAX_FLOATS || (due !== undefined && Date.now() - due.since >= CALIBRATE_WAIT_MAX_MS))
      this.calibrateNow(ns);
    else if (due === undefined) {
      const timer = setTimeout(() => this.calibrateNow(ns), this.calibrateQuietMs).unref();
      this.calibrationDue.set(ns, { since: Date.now(), timer });
    } else due.timer.refresh(); // an upsert: calibrateQuietMs from now
  }

  /** Start `ns`'s due calibration (on its current partition) now. */
  private calibrateNow(ns: string): void {
    const s = this.s;
    const due = this.calibrationDue.get(ns);
    if (due !== undefined) clearTimeout(due.timer);
    this.calibrationDue.delete(ns);
    const p = s.partitions.get(ns);
    if (p === undefined || s.closing || s.closed || s.rotation === null || this.calibrating.has(ns) || !depthDue(p)) return;
    const run = calibrateDepth(s.kernels, s.pool, p, s.rotation, s.config.seed, () => s.closing)
      .then(
        ({ depth, rows }) => {
          p.depth = depth;
          p.depthRows = rows;
        },
        (err: unknown) => {
          // not again until the partition doubles (as after a success): a retry at once would fail alike, in a loop
          p.depthRows = Math.max(p.depthRows, p.liveCount);
          this.failed(`depth calibration of namespace '${ns}'`)(err);
        },
      )
      .finally(() => {
        this.calibrating.delete(ns);
        const now = s.partitions.get(ns);
        if (now !== undefined) this.maybeCalibrate(now);
      });
    this.calibrating.set(ns, run);
  }

  /** Starts the due depth calibrations without waiting for quiet; resolves once none runs or waits (those started meanwhile included). */
  async calibrated(): Promise<void> {
    for (;;) {
      for (const ns of [...this.calibrationDue.keys()]) this.calibrateNow(ns);
      if (this.calibrating.size === 0) return;
      await Promise.all(this.calibrating.values());
    }
  }

  /**
   * Persist the visible state so a restart replays only later frames: fsync the partition
   * files, write tombstones + metadata index per partition, then switch checkpoint.json
   * atomically and drop the log before it (Log.dropBefore).
   */
  checkpoint(): Promise<void> {
    this.s.checkpointing ??= this.writeCheckpoint()
      .then(() => {})
      .finally(() => {
        this.s.checkpointing = null;
        this.s.closeRetired();
      });
    return this.s.checkpointing;
  }

  /**
   * Take a checkpoint and run `fn` on it while still holding the checkpoint slot: no other checkpoint
   * can switch checkpoint.json, delete the files it names or drop a retired partition's directory until
   * `fn` settles, so `fn` may copy them while writes go on (backup.ts). `parts`: per partition directory,
   * its live rows and the bytes of its data files at the checkpoint (what an open cuts them to).
   */
  async checkpointThen<T>(fn: (cp: Checkpoint, parts: Map<string, PartitionAtCheckpoint>) => Promise<T>): Promise<T> {
    while (this.s.checkpointing !== null) await this.s.checkpointing.catch(() => {}); // only waits for the slot: the running checkpoint's failure goes to whoever started it
    let out: { v: T } | null = null;
    const run = this.writeCheckpoint().then(async ({ cp, parts }) => {
      out = { v: await fn(cp, parts) };
    });
    this.s.checkpointing = run.finally(() => {
      this.s.checkpointing = null;
      this.s.closeRetired();
    });
    await this.s.checkpointing;
    return (out as { v: T } | null)!.v;
  }

  /** For close(): no new background rewrites; wait for the running ones (a plain compaction or index build is abandoned). */
  async stop(): Promise<void> {
    this.s.closing = true;
    for (const running of this.compacting.values()) await running.catch(() => {}); // only waits: a rewrite's failure goes to its starter (failed(), or compact()'s caller)
    // a due calibration no longer starts; a running one stops at its next step (E_CLOSED, not reported while closing)
    for (const due of this.calibrationDue.values()) clearTimeout(due.timer);
    this.calibrationDue.clear();
    await Promise.all(this.calibrating.values());
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

  /**
   * Start a background compaction when the partition's dead rows (overwritten or deleted) reach
   * COMPACT_DEAD_FRACTION of its rows (and COMPACT_MIN_DEAD): dead rows cost every scan. Returns
   * whether one runs now. (Checked only at checkpoints before, which come every checkpointBytes
   * of log, so an overwrite-heavy namespace went 84% dead before one was considered.)
   */
  private maybeCompact(p: Partition): boolean {
    if (this.compacting.has(p.namespace)) return true;
    const dead = p.tombstones.size;
    if (this.s.closing || this.s.closed || dead < COMPACT_MIN_DEAD || dead <= COMPACT_DEAD_FRACTION * p.rows) return false;
    void this.rewrite(p.namespace, "auto").catch(this.failed(`compaction of namespace '${p.namespace}'`));
    return true;
  }

  /**
   * Start a background (re)build when a namespace is large enough and has no index, or its delta has outgrown
   * ANN_DELTA_FRACTION; with a smaller delta, watch for the namespace going idle (mergeWhenIdle).
   */
  private maybeIndex(p: Partition): void {
    if (this.s.closing || this.s.closed || this.compacting.has(p.namespace) || p.liveCount < this.annMinRows) return;
    if (p.ivf !== null && p.rows - p.ivf.indexedRows <= ANN_DELTA_FRACTION * p.ivf.indexedRows) return this.mergeWhenIdle(p.namespace);
    void this.rewrite(p.namespace, "auto").catch(this.failed(`index build of namespace '${p.namespace}'`));
  }

  /** Once no upsert reached `ns` for annIdleMs, merge its delta into the index when it holds ANN_IDLE_DELTA_FRACTION of the indexed rows. */
  private mergeWhenIdle(ns: string): void {
    this.lastUpsert.set(ns, Date.now());
    if (this.idleTimers.has(ns)) return;
    const check = () => {
      const quiet = Date.now() - (this.lastUpsert.get(ns) ?? 0);
      if (quiet < this.annIdleMs && !this.s.closing && !this.s.closed) {
        this.idleTimers.set(ns, setTimeout(check, this.annIdleMs - quiet).unref());
        return;
      }
      this.idleTimers.delete(ns);
      this.lastUpsert.delete(ns);
      const p = this.s.partitions.get(ns);
      if (this.s.closing || this.s.closed || p === undefined || p.ivf === null || this.compacting.has(ns)) return;
      if (p.rows - p.ivf.indexedRows >= Math.max(1, ANN_IDLE_DELTA_FRACTION * p.ivf.indexedRows))
        void this.rewrite(ns, "auto").catch(this.failed(`index merge of namespace '${ns}'`));
    };
    this.idleTimers.set(ns, setTimeout(check, this.annIdleMs).unref());
  }

  private rewrite(namespace: string, cluster: boolean | "auto"): Promise<{ before: number; after: number }> {
    let running = this.compacting.get(namespace);
    if (running === undefined) {
      running = this.timedCompaction(namespace, cluster).finally(() => this.compacting.delete(namespace));
      this.compacting.set(namespace, running);
    }
    return running;
  }

  /** runCompaction, its duration and outcome reported (probes.ts): an index build when it clusters the rows, else a compaction. */
  private async timedCompaction(ns: string, cluster: boolean | "auto"): Promise<{ before: number; after: number }> {
    const t0 = performance.now();
    const old = this.s.partitions.get(ns);
    const kind =
      cluster === true || (cluster === "auto" && old !== undefined && old.liveCount >= this.annMinRows) ? "index_build" : "compaction";
    try {
      const r = await this.runCompaction(ns, cluster);
      timing(kind, (performance.now() - t0) / 1000);
      return r;
    } catch (err) {
      timing(kind, (performance.now() - t0) / 1000, false);
      throw err;
    }
  }

  private async runCompaction(ns: string, cluster: boolean | "auto" = "auto"): Promise<{ before: number; after: number }> {
    await this.applier.drained();
    const old = this.s.partitions.get(ns);
    if (old === undefined) return { before: 0, after: 0 };
    const clustered = cluster === true || (cluster === "auto" && old.liveCount >= this.annMinRows);
    const fresh = this.s.freshPartition(ns);
    // A checkpoint during the copy must not take the fresh partition's directory for a dropped one.
    this.building.add(fresh.dir);
    old.pins++;
    let map: Int32Array;
    let before: number;
    try {
      if (clustered && old.liveCount > 0) {
        map = await copyClustered(
          this.s.kernels,
          this.s.pool,
          old,
          fresh,
          this.s.rotation,
          this.s.config.seed,
          () => this.s.closing,
          (ivf) => writeDurable(join(fresh.path, IVF_FILE), ivf.serialize()),
        );
      } else map = await copyLiveRows(old, fresh, this.s.rotation, () => this.s.closing);
      before = old.rows;
    } catch (err) {
      fresh.close();
      rmSync(fresh.path, { recursive: true, force: true });
      throw err;
    } finally {
      old.pins--;
      this.building.delete(fresh.dir);
    }
    if (this.s.partitions.get(ns) !== old) {
      // Deleted (deleteAll) while compacting: nothing to swap in.
      fresh.close();
      rmSync(fresh.path, { recursive: true, force: true });
      return { before, after: 0 };
    }
    carryTombstones(old, fresh, map);
    // The rows are the same: so is the depth they need, until they double (a calibration running on `old` sets it there only).
    fresh.depth = old.depth;
    fresh.depthRows = old.depthRows;
    this.s.partitions.set(ns, fresh);
    // Rows written while this build copied are its delta: merge them once writes go idle (none may come to arm it).
    if (fresh.ivf !== null && fresh.rows > fresh.ivf.indexedRows) this.mergeWhenIdle(ns);
    this.s.retired.push(old);
    this.s.closeRetired();
    while (this.s.checkpointing !== null) await this.s.checkpointing.catch(() => {}); // only waits for the slot: the running checkpoint's failure goes to whoever started it
    await this.checkpoint();
    return { before, after: fresh.liveCount };
  }

  private async writeCheckpoint(): Promise<{ cp: Checkpoint; parts: Map<string, PartitionAtCheckpoint> }> {
    await this.applier.drained();
    const seq = this.s.seq + 1;
    const pos = this.applier.visible;
    const logBytes = this.logBytes();
    // Snapshot synchronously: rows past these counts are cut on reopen and replayed from the log.
    const snaps = [...this.s.partitions.values()].map((p) => ({
      p,
      state: p.state(`tombstones-${seq}.roar`, `index-${seq}.bin`, `sums-${seq}.bin`),
      tombstones: p.tombstones.serialize("portable"),
      index: p.index.serialize(),
      sums: serializeSums(p.sums()),
    }));
    const parts = new Map<string, PartitionAtCheckpoint>(
      snaps.map(({ p, state }) => [
        state.dir,
        {
          live: p.liveCount,
          bytes: {
            "bits.bin": state.rows * p.bits.rowBytes,
            ...(p.values === null ? {} : { "values.f32": state.rows * p.values.rowBytes }),
            "records.bin": state.recordBytes,
          },
        },
      ]),
    );
    for (const s of snaps) s.p.pins++;
    let cp: Checkpoint;
    try {
      await Promise.all(
        snaps.map(async ({ p, state, tombstones, index, sums }) => {
          await p.sync();
          await writeDurable(join(p.path, state.tombstones), tombstones);
          await writeDurable(join(p.path, state.index), index);
          await writeDurable(join(p.path, state.sums!), sums);
        }),
      );
      cp = { version: CHECKPOINT_VERSION, seq, wal: pos, partitions: snaps.map((s) => s.state) };
      await writeDurable(join(this.s.dir, "checkpoint.json.tmp"), Buffer.from(JSON.stringify(cp)));
      await rename(join(this.s.dir, "checkpoint.json.tmp"), join(this.s.dir, "checkpoint.json"));
      await fsyncDir(this.s.dir);
      this.s.seq = seq;
      this.logBytesAtCheckpoint = logBytes;
      this.s.referenced = new Set(cp.partitions.map((p) => p.dir));
    } finally {
      for (const s of snaps) s.p.pins--;
    }
    // Older snapshot files and dropped partitions are no longer referenced.
    for (const s of snaps) {
      for (const f of readdirSync(s.p.path)) {
        const old =
          (f.startsWith("tombstones-") || f.startsWith("index-") || f.startsWith("sums-")) &&
          f !== s.state.tombstones &&
          f !== s.state.index &&
          f !== s.state.sums;
        if (old) await rm(join(s.p.path, f), { force: true });
      }
    }
    await this.s.log.dropBefore(pos);
    const open = new Set([...[...this.s.partitions.values(), ...this.s.retired].map((p) => p.dir), ...this.building]);
    for (const d of readdirSync(this.s.partsDir))
      if (!open.has(d) && !this.s.referenced.has(d)) await rm(join(this.s.partsDir, d), { recursive: true, force: true });
    for (const p of this.s.partitions.values()) this.maybeCompact(p);
    return { cp, parts };
  }
}

/** "0..3, 7" for ascending rows [0, 1, 2, 3, 7] (at most 20 ranges, then "..."). */
function rowRanges(rows: readonly number[]): string {
  const out: string[] = [];
  for (let i = 0; i < rows.length && out.length < 20;) {
    let j = i;
    while (j + 1 < rows.length && rows[j + 1] === rows[j]! + 1) j++;
    out.push(i === j ? String(rows[i]) : `${rows[i]}..${rows[j]}`);
    i = j + 1;
  }
  return out.length === 20 ? `${out.join(", ")}, ...` : out.join(", ");
}
