/** @module applier — turns acknowledged log frames into visible state: the apply queue and its backlog (backpressure), encode-ahead on the pool, the apply of each op kind, and the waiters for visibility. */
import { SvcError } from "../errors.js";
import { atOrBefore, type LogPosition } from "../store/log.js";
import type { CollectionState } from "./collection-state.js";
import { mergeMetadata } from "./filter/metadata.js";
import { checkBits } from "./input-checks.js";
import { OP, type Op } from "./ops.js";
import { returnRows } from "./upsert-buffers.js";

/**
 * Acknowledged-but-invisible vector and payload bytes above which acknowledgements wait for visibility
 * (16 MiB = 4k vectors of 1024-d: ~0.1 s of applying on the 2-core target).
 */
export const MAX_APPLY_BACKLOG_BYTES = 16 << 20;

/** What the applier tells the collection's maintenance (maintenance.ts), without depending on it. */
export interface ApplierHooks {
  /** After an op was appended to the log (a checkpoint may be due). */
  afterAppend(): void;
  /** After an acknowledged op was applied (a compaction or index build may be due). */
  afterApply(op: Op): void;
}

/**
 * Ops reach the applier in log order, from any Log: append() after the log acknowledged them,
 * replayed() while the log is replayed on open. The applier is the only writer of the
 * partitions' rows, tombstones and metadata index. With a followed log (Log.head, several
 * writers) every op after the replay comes through tailed() instead, own appends included, in the
 * log's order; append() then only waits for the acknowledgement.
 */
export class Applier {
  private readonly queue: Array<{ op: Op; pos: LogPosition; bytes: number }> = [];
  /** Vector bytes acknowledged but not yet applied. */
  private backlogBytes = 0;
  private applyScheduled = false;
  /** End of the last op applied (visible to queries). */
  private visiblePos: LogPosition;
  /** End of the last op queued (follow mode: handed over by the log's tail). */
  private queuedPos: LogPosition;
  private readonly waiters: Array<{ pos: LogPosition; resolve: () => void }> = [];
  /** Timestamps (performance.now) of acknowledgements not yet applied, for ack -> visible. */
  private readonly ackedAt: number[] = [];
  readonly visibleDelays: number[] = [];
  /** Follow mode: vector and payload bytes of the ops handed over by the tail (what triggers checkpoints there). */
  tailedBytes = 0;
  trackVisibility = false;

  constructor(
    private readonly s: CollectionState,
    private readonly hooks: ApplierHooks,
    from: LogPosition,
  ) {
    this.visiblePos = from;
    this.queuedPos = from;
  }

  /** Whether the log is followed: it hands over every frame, own appends included, through tailed(). */
  private get follow(): boolean {
    return this.s.log?.head !== undefined;
  }

  /** End of the last op applied: a checkpoint taken now holds everything up to it. */
  get visible(): LogPosition {
    return this.visiblePos;
  }

  /** Append to the log; on acknowledgement queue the op for the applier. */
  async append(op: Op): Promise<void> {
    if (this.s.closed) throw new SvcError("E_CLOSED", "the collection is closed");
    const pos = await this.s.log.append(op.type, op.body);
    if (!this.follow) this.enqueue(op, pos);
    this.hooks.afterAppend();
    // Backpressure: when the applier is this far behind, the acknowledgement waits until the
    // write is visible, so writers slow to the apply rate and staleness stays bounded.
    if (this.backlogBytes > MAX_APPLY_BACKLOG_BYTES) await this.whenVisible(pos);
  }

  /** Follow mode: an op the log's tail read (any writer's), queued in log order; one at or before a position already queued is ignored. */
  tailed(op: Op, end: LogPosition): void {
    // While closing nothing new is applied: the checkpoint holds what is visible and a reopen replays the rest.
    if (this.s.closing || atOrBefore(end, this.queuedPos)) return;
    this.tailedBytes += this.enqueue(op, end);
    this.hooks.afterAppend();
  }

  /** Queue an acknowledged op for the apply loop; returns its vector and payload bytes. */
  private enqueue(op: Op, pos: LogPosition): number {
    let bytes = 0;
    if (op.type === OP.upsert) {
      bytes = op.body.v.byteLength;
      for (const p of op.body.p ?? []) bytes += p?.byteLength ?? 0;
    }
    this.queue.push({ op, pos, bytes });
    this.queuedPos = pos;
    this.backlogBytes += bytes;
    if (this.trackVisibility) this.ackedAt.push(performance.now());
    if (!this.applyScheduled) {
      this.applyScheduled = true;
      setImmediate(() => void this.drain());
    }
    return bytes;
  }

  /** Apply an op found while replaying the log on open (synchronously, nothing queued). */
  replayed(op: Op, end: LogPosition): void {
    this.apply(op);
    this.visiblePos = end;
    this.queuedPos = end;
  }

  /** After replay: everything up to the log's end is visible (a followed log may have queued later ops already). */
  caughtUp(end: LogPosition): void {
    if (atOrBefore(this.queuedPos, end)) this.queuedPos = end;
    if (atOrBefore(this.visiblePos, end)) this.visiblePos = end;
    this.releaseWaiters();
  }

  /**
   * Resolves once every write acknowledged before the call is visible: this collection's own, and
   * with a followed log every writer's (up to the log's head when asked).
   */
  async settled(): Promise<void> {
    if (!this.follow) return this.whenVisible(this.s.log.position);
    return this.whenVisible(await this.s.log.head!());
  }

  /** Resolves once what this collection has queued (or, without follow, appended) is applied; local, it never asks the log. */
  drained(): Promise<void> {
    return this.whenVisible(this.follow ? this.queuedPos : this.s.log.position);
  }

  /** Resolves once the frame ending at `pos` (and everything before it) is applied. */
  whenVisible(pos: LogPosition): Promise<void> {
    if (atOrBefore(pos, this.visiblePos)) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ pos, resolve }));
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
        this.hooks.afterApply(op);
        // the log write settled before the op was queued, and the rows are in the partition now
        if (op.type === OP.upsert) returnRows(op.body.v);
        this.backlogBytes -= bytes;
        this.visiblePos = pos;
        if (this.trackVisibility) this.visibleDelays.push(performance.now() - this.ackedAt.shift()!);
        this.releaseWaiters();
      }
    } finally {
      // After an exception the encode started ahead is never awaited: keep its rejection handled.
      next.catch(() => {}); // the exception leaving this loop is the failure that is reported; the encode ahead only shares its cause
      this.applyScheduled = false;
    }
  }

  /** The packed rows of a queued float upsert, encoded on the workers; undefined for any other op. */
  private encodeAhead(item: { op: Op } | undefined): Promise<Uint8Array | undefined> {
    const rotation = this.s.rotation;
    if (item === undefined || item.op.type !== OP.upsert || rotation === null) return Promise.resolve(undefined);
    const v = item.op.body.v.byteOffset % 4 === 0 ? item.op.body.v : item.op.body.v.slice();
    return this.s.pool.encode(rotation, this.s.dimension, new Float32Array(v.buffer, v.byteOffset, v.byteLength / 4));
  }

  private releaseWaiters(): void {
    for (let i = this.waiters.length - 1; i >= 0; i--) {
      const w = this.waiters[i]!;
      if (atOrBefore(w.pos, this.visiblePos)) {
        this.waiters.splice(i, 1);
        w.resolve();
      }
    }
  }

  /** Apply one logged op to the in-memory state and partition files; `bits` = the upsert's rows already encoded. */
  private apply(op: Op, bits?: Uint8Array): void {
    const s = this.s;
    switch (op.type) {
      case OP.upsert: {
        const { ns, ids, v, m, p } = op.body;
        s.partition(ns).append(s.rotation, ids, v, m, bits, p);
        return;
      }
      case OP.delete:
        s.partitions.get(op.body.ns)?.remove(op.body.ids);
        return;
      case OP.deleteAll:
        s.retire(op.body.ns);
        return;
      case OP.update: {
        const { ns, id, v, m, p: payload } = op.body;
        const p = s.partitions.get(ns);
        const row = p?.rowOf(id);
        if (p === undefined || row === undefined) return;
        const vector = v ?? (p.values ? new Uint8Array(p.vector(row).buffer) : checkBits(p.vector(row) as Uint8Array, "bits", s.dimension));
        const meta = m === null ? p.metadata(row) : mergeMetadata(p.metadata(row), m);
        p.append(s.rotation, [id], vector, [Object.keys(meta).length === 0 ? null : meta], undefined, [payload ?? p.payload(row)]);
        return;
      }
      case OP.move: {
        // Synchronous: a query holds the partition it started with, so it sees the old or the new `to`.
        const { from, to } = op.body;
        const p = s.partitions.get(from);
        s.retire(to);
        if (p === undefined) return;
        s.partitions.delete(from);
        p.namespace = to;
        s.partitions.set(to, p);
        return;
      }
    }
  }
}
