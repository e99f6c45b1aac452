/**
 * @module shard-host — the shards this node serves. On every change of the live nodes or of the
 * catalog it computes the shards it owns (registry.owners(shardKey, replicas) includes this node),
 * opens each one's local Collection under `<data>/cluster/shards/<tenant>/<index>/<incarnation>/<shard>`
 * with its log on the shard's subject in follow mode (it replays the subject, then applies every
 * frame from any writer in stream order), and only then subscribes the shard's request subject in
 * the queue group; shards it no longer owns (or whose index is gone) are unsubscribed, drained,
 * closed and removed. Requests are msgpack `{op, args, after}` (shards.ts), run on the Collection.
 */
import type { NatsConnection, Msg, Subscription } from "@nats-io/transport-node";
import { readdir, rm, rmdir } from "node:fs/promises";
import { dirname, join, sep } from "node:path";
import { Collection, type VectorInput } from "../engine/collection.js";
import { stderrReporter, type Reporter } from "../store/reporter.js";
import { SvcError } from "../errors.js";
import type { Kernels } from "../kernels/abi.js";
import { collectionDimension, SWEEP_MS } from "../memory/indexes.js";
import { CollectionIndex, EXPIRES_AT } from "../memory/vector-index.js";
import type { ScanPool } from "../pool/scan-pool.js";
import { CLOCK_SKEW_MS, jetStreamLog, withDeadline } from "./jetstream-log.js";
import type { NodeRegistry } from "./nodes.js";
import { isRecordOp, RecordShard } from "./record-shard.js";
import { behindPurge, prepareReplica, SNAPSHOT_CHECK_MS, snapshotDue, takeSnapshot, type ShardSnapshotOptions } from "./shard-snapshots.js";
import {
  bytesF32,
  decodeMessage,
  encodeMessage,
  errorReply,
  isWrite,
  replicaSubject,
  SHARD_QUEUE,
  shardKey,
  shardLogName,
  shardLogSubject,
  shardStream,
  shardSubject,
  type ClusterIndexRecord,
  type ShardReply,
  type ShardRequest,
} from "./shards.js";

/** How long a read carrying `after` waits for its shard to apply that far before E_NOT_CAUGHT_UP. */
export const CATCH_UP_MS = 3000;
/** A shard that failed to open is tried again after this long. */
const RETRY_OPEN_MS = 2000;
/** How often the host checks that its event loop ran (ms). */
const TICK_MS = 250;
/** A gap this long between ticks means the process was frozen (SIGSTOP, a paused VM) or starved: its replicas may be behind. */
const PAUSE_MS = 2000;

export interface ShardHostOptions {
  nc: NatsConnection;
  registry: NodeRegistry;
  dataDir: string;
  kernels: Kernels;
  pool: ScanPool;
  /** The catalog's indexes, as this node currently sees them. */
  indexes: () => Iterable<ClusterIndexRecord>;
  /** The clock expiry is judged by (default Date.now). */
  now?: () => number;
  /** Told of damage and of background failures: sweeps, snapshots, shard opens, a replica's own (CollectionOptions); default stderrReporter. */
  reporter?: Reporter;
  /**
   * Snapshots of the shards (shard-snapshots.ts): a replica starts from the newest one when it is
   * ahead of its own checkpoint, and each shard's first owner writes one whenever enough was read on
   * its subject, then purges the subject below the older one. Absent: the stream keeps every frame.
   */
  snapshots?: ShardSnapshotOptions;
}

interface Shard {
  key: string;
  replicas: number;
  dir: string;
  collection: Collection;
  index: CollectionIndex;
  /** The shard's queue-group subscription and this replica's own subject. */
  subs: Subscription[];
  inFlight: Set<Promise<void>>;
  /**
   * Set when this replica may be behind the stream without knowing it: the process was frozen, or
   * its NATS connection was lost. Reads then wait for settled() first (at most CATCH_UP_MS, else
   * E_NOT_CAUGHT_UP, which the sender takes to another replica), so a returning node serves no stale read.
   */
  stale: boolean;
  record: ClusterIndexRecord;
  shard: number;
  /** The shard's log subject. */
  subject: string;
  /** Applied sequence at the ticker's last run (before a freeze). */
  appliedAtTick: number;
  /**
   * With snapshots: set (to the applied sequence before the freeze or disconnect) while it is unknown
   * whether a purge took frames this replica had not read; reads and snapshots wait for verify().
   */
  verifyFrom: number | null;
  /** Bytes read on the subject (since open) at this replica's last two snapshots. */
  readAt: { last: number; prev: number };
  /** A snapshot was written and the purge after it has not run yet. */
  purgePending: boolean;
  /** A records shard's BM25 indexes and record reads (record-shard.ts); absent for a vector index. */
  records?: RecordShard;
}

export class ShardHost {
  private readonly open = new Map<string, Shard>();
  /** Reconciles run one at a time; a change during one schedules one more. */
  private running: Promise<void> = Promise.resolve();
  private again = false;
  private pending = false;
  private closed = false;
  private swept = false;
  private retry: NodeJS.Timeout | null = null;
  /** A snapshot round is running (rounds do not overlap). */
  private snapshotting = false;
  /**
   * Whether a backup holds the index's shards (cluster/backups.ts): while it does, no snapshot is
   * written and nothing purged, so the snapshot and the frames its copy reads stay (an error reads as held).
   */
  held: ((r: ClusterIndexRecord) => Promise<boolean>) | null = null;

  private readonly sweeper: NodeJS.Timeout;
  private readonly ticker: NodeJS.Timeout;
  private readonly snapshotter: NodeJS.Timeout | null = null;
  private lastTick = Date.now();
  private readonly status: AsyncIterable<{ type: string }> & { stop?(): void };

  private readonly reporter: Reporter;

  constructor(private readonly opts: ShardHostOptions) {
    this.reporter = opts.reporter ?? stderrReporter;
    this.sweeper = setInterval(
      () => void this.sweep().catch((err) => this.reporter.background(err, "expiry sweep of the shards")),
      SWEEP_MS,
    );
    this.sweeper.unref();
    this.ticker = setInterval(() => this.checkPause(), TICK_MS);
    this.ticker.unref();
    if (opts.snapshots !== undefined) {
      this.snapshotter = setInterval(() => void this.snapshotRound(), opts.snapshots.checkMs ?? SNAPSHOT_CHECK_MS);
      this.snapshotter.unref();
    }
    // a lost connection: the tails may have missed frames until they recreate their consumers
    const status = opts.nc.status() as AsyncIterable<{ type: string }> & { stop?(): void };
    this.status = status;
    void (async () => {
      for await (const st of status) if (st.type === "reconnect" || st.type === "disconnect") this.markStale(false);
    })().catch(() => undefined); // the status iterator ends with the connection (close): nothing is left to mark
  }

  /** Marks every replica stale when the event loop did not run for PAUSE_MS (checked by the ticker and before each read: after a SIGCONT, requests may be read before timers run). */
  private checkPause(): void {
    const now = Date.now();
    if (now - this.lastTick > PAUSE_MS) this.markStale(true);
    else for (const s of this.open.values()) s.appliedAtTick = s.collection.applied.offset;
    this.lastTick = now;
  }

  /** `frozen`: the process did not run (the replicas' positions before it are the last tick's); else the connection dropped. */
  private markStale(frozen: boolean): void {
    for (const s of this.open.values()) {
      s.stale = true;
      if (this.opts.snapshots === undefined) continue;
      const from = frozen ? s.appliedAtTick : s.collection.applied.offset;
      s.verifyFrom = Math.min(s.verifyFrom ?? Infinity, from);
      void this.verify(s).catch(() => undefined); // verify acts itself (drops a replica behind a purge); a check that failed leaves verifyFrom set, so the next read checks again
    }
  }

  /**
   * After a freeze or a lost connection: if a purge may have taken frames this replica had not read
   * (its position then is below the subject's older snapshot), it is dropped with its files and
   * opened again from the newest snapshot (E_NOT_CAUGHT_UP meanwhile: reads go to another replica).
   */
  private async verify(s: Shard): Promise<void> {
    const from = s.verifyFrom;
    if (from === null || this.opts.snapshots === undefined) return;
    if (await behindPurge(this.opts.snapshots.store, s.subject, from)) {
      if (this.open.get(s.key) === s) void this.drop(s.key, true).then(() => this.reconcile());
      throw new SvcError(
        "E_NOT_CAUGHT_UP",
        `shard ${s.key}: frames this replica had not read were purged while it was away; it starts again from the snapshot`,
        { details: { retryAfterSeconds: 1 } },
      );
    }
    if (s.verifyFrom === from) s.verifyFrom = null;
  }

  /**
   * Every SNAPSHOT_CHECK_MS: for each shard this node is first owner of (one taker per shard), a
   * snapshot when due (snapshotDue), then the purge below the older snapshot — only once every other
   * live owner said how far it has applied (the purge stays below that); one shard at a time.
   */
  private async snapshotRound(): Promise<void> {
    const snaps = this.opts.snapshots;
    if (snaps === undefined || this.snapshotting) return;
    this.snapshotting = true;
    try {
      for (const s of [...this.open.values()]) {
        if (this.closed || this.open.get(s.key) !== s || s.verifyFrom !== null) continue;
        if (this.opts.registry.owners(s.key, s.replicas)[0] !== this.opts.registry.self.id) continue;
        const run = this.snapshotShard(s, snaps).catch((e) => this.reporter.background(e, `snapshot of shard ${s.key}`));
        s.inFlight.add(run);
        void run.finally(() => s.inFlight.delete(run));
        await run;
      }
    } finally {
      this.snapshotting = false;
    }
  }

  private async snapshotShard(s: Shard, snaps: ShardSnapshotOptions): Promise<void> {
    const held = () => this.held?.(s.record).catch(() => true) ?? false;
    if (await held()) return;
    if (snapshotDue(s.collection, s.readAt, snaps.minBytes)) {
      const read = s.collection.walStats.read ?? 0;
      await takeSnapshot(snaps.store, s.collection, {
        stream: shardStream(s.record, s.shard),
        subject: s.subject,
        staging: join(this.opts.dataDir, "cluster", "snapshot-staging", s.key),
      });
      s.readAt = { last: read, prev: s.readAt.last };
      s.purgePending = true;
    }
    if (!s.purgePending) return;
    const low = await this.lowestApplied(s);
    if (low === null) return; // an owner did not answer (frozen, or still opening): not now
    if (await held()) return; // a backup began while the snapshot was written: its copy may read below it
    await snaps.store.purgeBelow(shardStream(s.record, s.shard), s.subject, { cap: low + 1 });
    s.purgePending = false;
  }

  /** The lowest applied sequence among this replica and the shard's other live owners; null when one of them does not answer. */
  private async lowestApplied(s: Shard): Promise<number | null> {
    let low = s.collection.applied.offset;
    for (const node of this.opts.registry.owners(s.key, s.replicas)) {
      if (node === this.opts.registry.self.id) continue;
      try {
        const msg = await this.opts.nc.request(replicaSubject(s.record, s.shard, node), encodeMessage({ op: "applied", args: {} }), {
          timeout: 2000,
        });
        const reply = decodeMessage<ShardReply>(msg.data);
        if (!("ok" in reply) || typeof reply.ok !== "number") return null;
        low = Math.min(low, reply.ok);
      } catch {
        return null;
      }
    }
    return low;
  }

  /**
   * Delete the expired vectors (svc_expires_at <= now) of the shards this node is the first owner of
   * (one deleter per shard; reads hide them at once anyway); returns how many. Run every SWEEP_MS.
   */
  async sweep(): Promise<number> {
    const now = (this.opts.now ?? Date.now)();
    let gone = 0;
    const runs: Promise<void>[] = [];
    for (const s of [...this.open.values()]) {
      if (this.closed || s.verifyFrom !== null || this.opts.registry.owners(s.key, s.replicas)[0] !== this.opts.registry.self.id) continue;
      const run = (async () => {
        await s.collection.settled(); // every acknowledged write of any node applied here first
        if (s.records !== undefined) gone += await s.records.sweep(s.collection, now);
        else
          for (const ns of s.collection.namespaces()) {
            if (s.collection.count(ns, { [EXPIRES_AT]: { $exists: true } }) === 0) continue;
            const { deleted } = await s.collection.delete(ns, { filter: { [EXPIRES_AT]: { $lte: now } } });
            gone += deleted; // after the await: the shards' runs interleave
          }
      })().catch((err) => this.reporter.background(err, `expiry sweep of shard ${s.key}`));
      // as a request in flight: a drop of the shard waits for it before closing the collection
      s.inFlight.add(run);
      void run.finally(() => s.inFlight.delete(run));
      runs.push(run);
    }
    await Promise.all(runs);
    return gone;
  }

  /** Placement keys of the shards open here (tests, /v1/health). */
  get shards(): string[] {
    return [...this.open.keys()].sort();
  }

  /** This node's replica of the shard with this placement key, when open here. */
  replica(key: string): Collection | undefined {
    return this.open.get(key)?.collection;
  }

  /** Bring the open shards in line with placement; resolves once this and any queued reconcile ran. */
  reconcile(): Promise<void> {
    if (this.pending) {
      this.again = true;
      return this.running;
    }
    this.pending = true;
    this.running = this.running.then(async () => {
      do {
        this.again = false;
        await this.step().catch((err) => this.reporter.background(err, "reconcile of the shards with placement"));
      } while (this.again && !this.closed);
      this.pending = false;
    });
    return this.running;
  }

  private async step(): Promise<void> {
    if (this.closed) return;
    const self = this.opts.registry.self.id;
    const wanted = new Map<string, { r: ClusterIndexRecord; shard: number }>();
    for (const r of this.opts.indexes()) {
      for (let s = 0; s < r.shards; s++) {
        const key = shardKey(r, s);
        if (this.opts.registry.owners(key, r.replicas).includes(self)) wanted.set(key, { r, shard: s });
      }
    }
    await Promise.all([...this.open.keys()].filter((k) => !wanted.has(k)).map((k) => this.drop(k, true)));
    if (!this.swept) {
      // Once, at start: replicas left on disk that this node no longer owns (placement moved, or the index went while it was down).
      this.swept = true;
      await this.removeStrays(new Set([...wanted.values()].map(({ r, shard }) => this.dirOf(r, shard))));
    }
    const failed = await Promise.all(
      [...wanted]
        .filter(([k]) => !this.open.has(k))
        .map(([k, { r, shard }]) =>
          this.openShard(k, r, shard).then(
            () => false,
            (err) => {
              if (!this.closed) this.reporter.background(err, `open of shard ${k} (tried again in ${RETRY_OPEN_MS} ms)`);
              return true;
            },
          ),
        ),
    );
    // A shard that failed to open (e.g. no JetStream quorum) is retried shortly; its other replicas serve it meanwhile.
    if (failed.includes(true) && !this.closed && this.retry === null) {
      this.retry = setTimeout(() => {
        this.retry = null;
        void this.reconcile();
      }, RETRY_OPEN_MS);
      this.retry.unref();
    }
  }

  private dirOf(r: ClusterIndexRecord, shard: number): string {
    return join(this.opts.dataDir, "cluster", "shards", r.tenant, r.name, r.incarnation, String(shard));
  }

  /** Remove every replica folder under <data>/cluster/shards/<tenant>/<index>/<incarnation>/<shard> not in `keep`. */
  private async removeStrays(keep: Set<string>): Promise<void> {
    const top = join(this.opts.dataDir, "cluster", "shards");
    const ls = async (d: string) =>
      (await readdir(d, { withFileTypes: true }).catch(() => [])).filter((e) => e.isDirectory()).map((e) => join(d, e.name)); // a folder gone (or never made) holds no strays
    for (const t of await ls(top)) {
      for (const i of await ls(t)) {
        for (const inc of await ls(i)) {
          for (const sh of await ls(inc)) if (!keep.has(sh)) await rm(sh, { recursive: true, force: true });
          await rmdir(inc).catch(() => undefined); // not empty (a replica kept) or gone: it stays
        }
        await rmdir(i).catch(() => undefined); // not empty (a replica kept) or gone: it stays
      }
      await rmdir(t).catch(() => undefined); // not empty (a replica kept) or gone: it stays
    }
  }

  private async openShard(key: string, r: ClusterIndexRecord, shard: number): Promise<void> {
    const dir = this.dirOf(r, shard);
    const subject = shardLogSubject(r, shard);
    const snaps = this.opts.snapshots;
    // The sequence this replica starts after: its checkpoint, or the newest snapshot when that is ahead (written over dir).
    const base = snaps === undefined ? 0 : await prepareReplica(snaps.store, dir, subject);
    const records = r.kind === "records" ? new RecordShard() : undefined;
    const openLog = jetStreamLog(this.opts.nc, { name: shardLogName(r, shard), stream: shardStream(r, shard), follow: true });
    const collection = await Collection.open(dir, {
      kernels: this.opts.kernels,
      pool: this.opts.pool,
      dimension: collectionDimension(r),
      metric: "cosine",
      openLog: records?.tap(openLog) ?? openLog,
      damage: { store: `shard:${key}`, root: this.opts.dataDir },
      reporter: this.reporter,
    });
    if (this.closed) {
      await collection.close();
      return;
    }
    const inFlight = new Set<Promise<void>>();
    const index = new CollectionIndex(collection, this.opts.now, r.metric, r.vectorType ?? "dense");
    records?.attach(collection);
    const entry: Shard = {
      key,
      replicas: r.replicas,
      dir,
      collection,
      index,
      subs: [],
      inFlight,
      stale: false,
      record: r,
      shard,
      subject,
      appliedAtTick: collection.applied.offset,
      verifyFrom: null,
      readAt: { last: 0, prev: 0 },
      purgePending: false,
      ...(records === undefined ? {} : { records }),
    };
    const callback = (err: Error | null, msg: Msg) => {
      if (err) return;
      const p = this.answer(entry, msg);
      inFlight.add(p);
      void p.finally(() => inFlight.delete(p));
    };
    // The queue group (any replica) and this replica's own subject (a sender choosing a live replica, sharded-index.ts).
    entry.subs.push(this.opts.nc.subscribe(shardSubject(r, shard), { queue: SHARD_QUEUE, callback }));
    entry.subs.push(this.opts.nc.subscribe(replicaSubject(r, shard, this.opts.registry.self.id), { callback }));
    this.open.set(key, entry);
    // Subscribed, so the snapshot taker now waits for this replica's answer before it purges; a purge
    // before that went at most up to the older snapshot: if that is past where this replica started,
    // frames it had to read may be gone, and it starts again.
    if (snaps !== undefined && (await behindPurge(snaps.store, subject, base).catch(() => true))) {
      // unknown counts as behind: the replica starts again
      await this.drop(key, true);
      throw new SvcError(
        "E_NOT_CAUGHT_UP",
        `shard ${key}: the stream was purged past where this replica started (${base}); it opens again`,
      );
    }
  }

  /** Stop serving a shard: unsubscribe (later requests go to the other replicas), let requests in flight finish, close; `remove` deletes its files. */
  private async drop(key: string, remove: boolean): Promise<void> {
    const s = this.open.get(key);
    if (s === undefined) return;
    this.open.delete(key);
    for (const sub of s.subs) sub.unsubscribe();
    await Promise.all(s.inFlight);
    await s.collection.close().catch((err) => this.reporter.background(err, `close of shard ${key}`)); // the stream still holds what its checkpoint missed
    if (!remove) return;
    await rm(s.dir, { recursive: true, force: true });
    // and the folders of its incarnation, index and tenant once they are empty
    const top = join(this.opts.dataDir, "cluster", "shards");
    for (let d = dirname(s.dir); d.startsWith(top + sep); d = dirname(d))
      if (
        !(await rmdir(d).then(
          () => true,
          () => false,
        ))
      )
        break;
  }

  private async answer(s: Shard, msg: Msg): Promise<void> {
    let reply: Uint8Array;
    let write = false;
    try {
      const req = decodeMessage<ShardRequest>(msg.data);
      write = isWrite(req?.op);
      reply = encodeMessage({ ok: await this.run(s, req) });
    } catch (e) {
      reply = encodeMessage(errorReply(e, write));
    }
    try {
      msg.respond(reply);
    } catch (e) {
      // Larger than the server's max_payload (a query with includeValues and a huge topK): say so instead.
      msg.respond(
        encodeMessage(
          errorReply(
            new SvcError(
              "E_TOO_LARGE",
              `the shard's answer (${reply.byteLength} bytes) exceeds NATS max_payload; ask for fewer results or leave out values`,
              { field: "topK", cause: e },
            ),
          ),
        ),
      );
    }
  }

  private async run(s: Shard, req: ShardRequest): Promise<unknown> {
    const { collection: c, index: ix } = s;
    const a = (req?.args ?? {}) as Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
    const seq = () => c.logPosition.offset;
    const op = req?.op;
    if (op === "applied") return c.applied.offset;
    if (isWrite(op)) {
      // A write carries its deadline and id into the log (its frames are dropped by every replica if stored later;
      // copies of one request sent to several replicas are one frame: every reader drops the repeats, jetstream-log.ts FRAME_HEADER); one arriving too late is not run.
      const deadline = typeof req.deadline === "number" && Number.isFinite(req.deadline) ? req.deadline : undefined;
      if (deadline !== undefined && Date.now() >= deadline - CLOCK_SKEW_MS) {
        throw new SvcError(
          "E_SHARD_UNAVAILABLE",
          "the write reached its shard after its deadline (a stalled NATS server or node); it was not applied; retry",
          { details: { retryAfterSeconds: 1 } },
        );
      }
      const id = typeof req.id === "string" && /^[A-Za-z0-9_-]{1,64}$/.test(req.id) ? req.id : undefined;
      // a records shard's rows carry the record payload (text, meta), not sparse values: written as they come
      const w = s.records === undefined ? ix : new CollectionIndex(c, this.opts.now, "dotproduct");
      return deadline === undefined ? this.write(c, w, op, a, seq) : withDeadline(deadline, () => this.write(c, w, op, a, seq), id);
    }
    this.checkPause();
    if (s.stale) {
      if (s.verifyFrom !== null) await this.verify(s);
      await caughtUp(c, Infinity);
      s.stale = false;
    }
    if (s.records !== undefined && isRecordOp(op)) {
      await caughtUp(c, req.after);
      return s.records.read(c, op, a);
    }
    return this.read(c, ix, req, a);
  }

  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  private async write(
    c: Collection,
    ix: CollectionIndex,
    op: "upsert" | "delete" | "update" | "updateWhere" | "move",
    a: Record<string, any>,
    seq: () => number,
  ): Promise<unknown> {
    switch (op) {
      case "move":
        await c.moveNamespace(a.from, a.to);
        return { seq: seq() };
      case "upsert": {
        const vectors = Array.isArray(a.vectors)
          ? (a.vectors as Array<Record<string, unknown>>).map((v) =>
              typeof v === "object" && v !== null ? { ...v, values: bytesF32(v.values) } : v,
            )
          : a.vectors;
        const r = await ix.upsert(a.ns, vectors as VectorInput[]);
        return { upsertedCount: r.upsertedCount, seq: seq() };
      }
      case "delete": {
        const r = await ix.delete(a.ns, { ids: a.ids, filter: a.filter, deleteAll: a.deleteAll });
        return { deleted: r.deleted, seq: seq() };
      }
      case "update":
        await ix.update(a.ns, {
          id: a.id,
          values: bytesF32(a.values) as ArrayLike<number> | undefined,
          setMetadata: a.setMetadata,
          payload: a.payload,
        });
        return { seq: seq() };
      case "updateWhere": {
        const r = await ix.updateWhere(a.ns, { filter: a.filter, setMetadata: a.setMetadata, dryRun: a.dryRun });
        return { matched: r.matched, seq: seq() };
      }
    }
  }

  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  private async read(c: Collection, ix: CollectionIndex, req: ShardRequest, a: Record<string, any>): Promise<unknown> {
    await caughtUp(c, req?.after);
    switch (req?.op) {
      case "fetch":
        return ix
          .fetch(a.ns, a.ids)
          .map((v) => ({ id: v.id, values: v.values, metadata: v.metadata, ...(v.payload === null ? {} : { payload: v.payload }) }));
      case "query": {
        const q = a.req ?? {};
        const r = await ix.query(a.ns, { ...q, vector: bytesF32(q.vector) as ArrayLike<number> | undefined });
        return { matches: r.matches, scanned: r.scanned };
      }
      case "stats":
        return ix.stats(a.filter);
      case "count":
        return ix.count(a.ns, a.filter);
      case "list":
        return ix.list(a.ns, { prefix: a.prefix, after: a.after, limit: a.limit, filter: a.filter });
      default:
        throw new SvcError("E_BAD_REQUEST", `unknown shard op '${String(req?.op)}'`, { field: "op" });
    }
  }

  /** Unsubscribe and close every shard (their files stay: a restart resumes from their checkpoints). */
  async close(): Promise<void> {
    this.closed = true;
    if (this.retry !== null) clearTimeout(this.retry);
    clearInterval(this.sweeper);
    clearInterval(this.ticker);
    if (this.snapshotter !== null) clearInterval(this.snapshotter);
    this.status.stop?.();
    await this.running;
    await Promise.all([...this.open.keys()].map((k) => this.drop(k, false)));
  }
}

/**
 * Read-your-writes: when `after` (a write's x-svc-log-seq) is past what `c` has applied, wait until `c`
 * has applied everything on its subject up to the stream's end now (settled()), not until its offset
 * passes `after`: the token is a sequence of the writer's log stream, which this shard's stream may
 * never reach (an index's shards spread over several streams), while an acknowledged write on this
 * shard's stream is below the end. Infinity: a replica that may be behind. Bounded by CATCH_UP_MS,
 * then 503 E_NOT_CAUGHT_UP.
 */
async function caughtUp(c: Collection, after: unknown): Promise<void> {
  if (typeof after !== "number" || c.applied.offset >= after) return;
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    const what =
      after === Infinity
        ? "this replica is catching up after a pause or a lost NATS connection"
        : `this shard has not yet applied log sequence ${after} (it has ${c.applied.offset})`;
    timer = setTimeout(
      () => reject(new SvcError("E_NOT_CAUGHT_UP", `${what}; retry shortly`, { field: "x-svc-after", details: { retryAfterSeconds: 1 } })),
      CATCH_UP_MS,
    );
  });
  try {
    await Promise.race([c.settled(), late]);
  } finally {
    clearTimeout(timer);
  }
}
