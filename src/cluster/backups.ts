/**
 * @module cluster/backups — backups of sharded indexes (Pinecone's backup API in cluster mode): a
 * consistent point-in-time copy of every shard, stored in the object store `svc_snapshots`, its
 * metadata in the KV bucket `svc_backups` (readable from any node), restorable into a new index.
 *
 * The point in time (the cut): when the backup is created, each shard's last frame is asked of its
 * log stream, all shards at once, before the create answers: every write acknowledged before the
 * create was sent is at or below its shard's cut, and the copy of a shard holds exactly the frames
 * of its subject up to its cut. A copy is built on the node that took the create, away from the
 * serving replicas: the shard's newest snapshot at or below the cut (or nothing) opened in a staging
 * directory, the subject replayed from there up to the cut (jetstream-log.ts `until`), checkpointed
 * and stored as one object `backup.<tenant>.<backup_id>.<shard>` (snapshots.ts format). Writes go on
 * meanwhile: they land after the cut and are not read. The replay needs that snapshot and the frames
 * between it and the cut: before the cut the backup stores a hold on the index (KV key
 * `hold.<tenant>.<index>.<incarnation>`, renewed while the copy is built) under which its shards'
 * snapshot takers write no snapshot and purge nothing (shard-host.ts); a purge past the snapshot
 * all the same (a hold not seen) is found after the replay, and the backup is Failed, never short.
 *
 * A restore creates the index with the backup's shard count and, before the catalog names it, stores
 * each shard's copy as the new shard subject's snapshot (its checkpoint moved to the log stream's
 * current last sequence, before any frame the new subject can get): its replicas open from it.
 */
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { Kvm, type KV } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import { randomUUID } from "node:crypto";
import { mkdir, rm } from "node:fs/promises";
import { join } from "node:path";
import { Collection } from "../engine/collection.js";
import { SvcError } from "../errors.js";
import type { Kernels } from "../kernels/abi.js";
import {
  type BackupText,
  checkId,
  pageOf,
  RestoreLog,
  type BackupPage,
  type BackupRecord,
  type Backups,
  type RestoreJob,
} from "../memory/backups.js";
import { collectionDimension, type IndexRecord } from "../memory/indexes.js";
import type { ScanPool } from "../pool/scan-pool.js";
import { parseStoredJson } from "../safe-values.js";
import type { ClusterIndexes } from "./catalog.js";
import { captureCollection, restoreCollection } from "./collection-snapshot.js";
import { jetStreamLog } from "./jetstream-log.js";
import { untilQuorum } from "./quorum.js";
import { behindPurge } from "./shard-snapshots.js";
import { shardLogName, shardLogSubject, shardStream, type ClusterIndexRecord } from "./shards.js";
import type { Snapshot, SnapshotFile, Snapshots } from "./snapshots.js";

/** The KV bucket of backup records, key `<tenant>.<backup_id>`. */
export const BACKUP_BUCKET = "svc_backups";
const QUORUM_MS = 15_000;
/** A backup's hold on its index's snapshots and purges lasts this long past its last renewal (ms); renewed every HOLD_MS / 3 while the copy is built. */
const HOLD_MS = 30_000;

/** A backup record of cluster mode: the one-node record plus where its copy comes from. */
export interface ClusterBackupRecord extends BackupRecord {
  /** The source index's catalog record when the backup began (shards, log streams, incarnation). */
  source: ClusterIndexRecord;
  /** Per shard, the stream sequence of its last frame at the cut (0: none): the copy holds every frame up to it. */
  cut: number[];
  /** The node building the copy (one still Initializing after that node left is shown Failed). */
  node: string;
}

export interface ClusterBackupsOptions {
  nc: NatsConnection;
  catalog: ClusterIndexes;
  store: Snapshots;
  dataDir: string;
  kernels: Kernels;
  pool: ScanPool;
  /** This node's id, and whether a node is live now (registry). */
  self: string;
  isLive(node: string): boolean;
  /** Replicas of the KV bucket (default 3). */
  replicas?: number;
}

/** The KV key of a backup's hold on an index incarnation. */
function holdKey(r: ClusterIndexRecord): string {
  return `hold.${r.tenant}.${r.name}.${r.incarnation}`;
}

/** The object holding shard `shard` of a backup. */
function objectName(tenant: string, backupId: string, shard: number): string {
  return `backup.${tenant}.${backupId}.${shard}`;
}

export class ClusterBackups implements Backups {
  /** Copies this node is building, by backup id. */
  private readonly running = new Map<string, Promise<void>>();
  private readonly restores = new RestoreLog();

  private constructor(
    private readonly opts: ClusterBackupsOptions,
    private readonly kv: KV,
  ) {}

  static async open(opts: ClusterBackupsOptions): Promise<ClusterBackups> {
    const kv = await new Kvm(opts.nc).create(BACKUP_BUCKET, { replicas: opts.replicas ?? 3, history: 1 });
    const b = new ClusterBackups(opts, kv);
    opts.catalog.shards.held = (r) => b.held(r);
    return b;
  }

  /** Whether a backup holds the index (its snapshot takers then write no snapshot and purge nothing). */
  private async held(r: ClusterIndexRecord): Promise<boolean> {
    const e = await this.kv.get(holdKey(r));
    return e !== null && e.operation === "PUT" && Number(e.string()) > Date.now();
  }

  /** Hold the index's snapshots and purges for HOLD_MS from now (a longer hold of another backup stays). */
  private async hold(r: ClusterIndexRecord): Promise<void> {
    const e = await this.kv.get(holdKey(r)).catch(() => null); // unread: no longer hold to keep; the put below needs the bucket anyway
    const until = Math.max(Date.now() + HOLD_MS, e?.operation === "PUT" ? Number(e.string()) || 0 : 0);
    await untilQuorum("hold the index for a backup", QUORUM_MS, () => this.kv.put(holdKey(r), String(until)));
  }

  /** Take the cut of index `indexName` now, record the backup (Initializing) and build its copy in the background. */
  async create(tenant: string, indexName: string, input: BackupText): Promise<BackupRecord> {
    const name = input.name ?? null;
    const description = input.description ?? null;
    const source = await this.opts.catalog.record(tenant, indexName); // 404 once a delete won
    // First the hold: from here at most one snapshot of a shard begun before it ends, and no purge, until the copies are built.
    await this.hold(source);
    const jsm = await jetstreamManager(this.opts.nc, { timeout: 2000 });
    const cut = await Promise.all(
      Array.from({ length: source.shards }, (_, s) =>
        untilQuorum(`backup cut of ${shardLogSubject(source, s)}`, QUORUM_MS, () =>
          jsm.streams.getMessage(shardStream(source, s), { last_by_subj: shardLogSubject(source, s) }),
        ).then((m) => m?.seq ?? 0),
      ),
    );
    // A delete that won meanwhile purges the frames: its index is gone (404), as for a backup asked after it.
    const now = await this.opts.catalog.record(tenant, indexName);
    if (now.incarnation !== source.incarnation)
      throw new SvcError("E_CONFLICT", `index '${indexName}' was deleted and created again while the backup began; retry`, {
        field: "index_name",
      });
    const record: ClusterBackupRecord = {
      version: 1,
      backupId: randomUUID(),
      name,
      description,
      status: "Initializing",
      index: await this.opts.catalog.describe(tenant, indexName),
      createdAt: Date.now(),
      source,
      cut,
      node: this.opts.self,
    };
    await this.put(tenant, record);
    const run = this.build(tenant, record).finally(() => this.running.delete(record.backupId));
    this.running.set(record.backupId, run);
    return this.shown(record);
  }

  async list(tenant: string, opts: { indexName?: string; limit: number; after?: string }): Promise<BackupPage> {
    if (opts.after !== undefined) checkId(opts.after, "paginationToken");
    const keys: string[] = [];
    for await (const k of await untilQuorum("list backups", QUORUM_MS, () => this.kv.keys(`${tenant}.*`))) keys.push(k);
    const all: BackupRecord[] = [];
    for (const k of keys) {
      const b = await this.read(k);
      if (b !== null && (opts.indexName === undefined || b.index.name === opts.indexName)) all.push(this.shown(b));
    }
    all.sort((a, b) => b.createdAt - a.createdAt || a.backupId.localeCompare(b.backupId));
    return pageOf(all, opts);
  }

  async describe(tenant: string, id: string): Promise<BackupRecord> {
    return this.shown(await this.get(tenant, id));
  }

  /** Delete a backup: its objects, then its record (one still being taken: E_CONFLICT). */
  async delete(tenant: string, id: string): Promise<void> {
    const b = this.shown(await this.get(tenant, id));
    if (b.status === "Initializing")
      throw new SvcError("E_CONFLICT", `backup '${id}' is still being taken; delete it once it is Ready or Failed`, { field: "backup_id" });
    for (let s = 0; s < b.source.shards; s++) await this.opts.store.removeNamed(objectName(tenant, id, s));
    await untilQuorum("delete backup", QUORUM_MS, () => this.kv.purge(`${tenant}.${id}`));
  }

  /** Create index `input.name` from a Ready backup: its shards' copies become the new shards' snapshots, then the catalog names it. */
  async restore(
    tenant: string,
    id: string,
    input: { name: unknown; tags?: unknown; deletionProtection?: unknown },
  ): Promise<{ backup: BackupRecord; index: IndexRecord; job: RestoreJob }> {
    const createdAt = Date.now();
    const backup = this.shown(await this.get(tenant, id));
    if (backup.status !== "Ready")
      throw new SvcError("E_CONFLICT", `backup '${id}' is ${backup.status}, not Ready`, { field: "backup_id" });
    const index = await this.opts.catalog.create(
      tenant,
      {
        name: input.name,
        dimension: backup.index.dimension,
        metric: backup.index.metric,
        ...(backup.index.vectorType === undefined ? {} : { vectorType: backup.index.vectorType }),
        spec: backup.index.spec,
        tags: input.tags ?? backup.index.tags ?? undefined,
        deletionProtection: input.deletionProtection,
      },
      {
        shards: backup.source.shards,
        seed: async (r) => {
          try {
            await this.seed(tenant, backup, r);
          } catch (e) {
            await this.unseed(r);
            throw e;
          }
        },
        unseed: (r) => this.unseed(r),
      },
    );
    const job: RestoreJob = { restoreJobId: randomUUID(), backupId: id, targetIndexName: index.name, createdAt, completedAt: Date.now() };
    this.restores.add(tenant, job);
    return { backup, index, job };
  }

  restoreJobs(tenant: string, opts: { limit: number; after?: string }): { data: RestoreJob[]; next?: string } {
    return this.restores.list(tenant, opts);
  }

  restoreJob(tenant: string, id: string): RestoreJob {
    return this.restores.get(tenant, id);
  }

  /** Wait for the copies this node is building. */
  async close(): Promise<void> {
    await Promise.all([...this.running.values()].map((p) => p.catch(() => undefined))); // only waits: a copy records its own failure (Failed)
  }

  /** Build every shard's copy, then mark the backup Ready (or Failed with why, its objects removed). */
  private async build(tenant: string, record: ClusterBackupRecord): Promise<void> {
    const staging = join(this.opts.dataDir, "cluster", "backup-staging", record.backupId);
    const renew = setInterval(() => void this.hold(record.source).catch(() => undefined), HOLD_MS / 3);
    try {
      let records = 0;
      let bytes = 0;
      const namespaces = new Set<string>();
      for (let s = 0; s < record.source.shards; s++) {
        const part = await this.copyShard(tenant, record, s, join(staging, String(s)));
        records += part.records;
        bytes += part.bytes;
        for (const ns of part.namespaces) namespaces.add(ns);
      }
      // A delete of the index after the cut purged its frames: the copy may lack some, so it is no backup.
      const now = await this.opts.catalog.record(tenant, record.index.name).catch((e: unknown) => {
        if (e instanceof SvcError && e.code === "E_NOT_FOUND") return null; // deleted; any other failure is the backup's own
        throw e;
      });
      if (now?.incarnation !== record.source.incarnation)
        throw new SvcError("E_NOT_FOUND", `index '${record.index.name}' was deleted while the backup was being taken`);
      await this.put(tenant, { ...record, status: "Ready", recordCount: records, namespaceCount: namespaces.size, sizeBytes: bytes });
    } catch (err) {
      for (let s = 0; s < record.source.shards; s++) await this.opts.store.removeNamed(objectName(tenant, record.backupId, s));
      await this.put(tenant, { ...record, status: "Failed", error: (err as Error).message }).catch(() => undefined);
    } finally {
      clearInterval(renew);
      await rm(staging, { recursive: true, force: true }).catch(() => undefined);
    }
  }

  /** Shard `s` at its cut, stored as the backup's object: the newest snapshot at or below the cut, plus the subject's frames up to it. */
  private async copyShard(
    tenant: string,
    record: ClusterBackupRecord,
    s: number,
    dir: string,
  ): Promise<{ records: number; bytes: number; namespaces: string[] }> {
    const src = record.source;
    const cut = record.cut[s]!;
    const stream = shardStream(src, s);
    const subject = shardLogSubject(src, s);
    const store = this.opts.store;
    let base: Snapshot | null = null;
    for (const info of await store.list(subject)) {
      if (info.seq > cut || info.kind !== "collection") continue;
      base = await store.read(info).catch(() => null); // unreadable or failing its check: the next older one (or the log from its start)
      if (base !== null) break;
    }
    const from = base?.seq ?? 0;
    const purged = () =>
      new SvcError("E_CONFLICT", `shard ${s}: its log was purged past the backup's point before the copy read it; take the backup again`);
    if (await behindPurge(store, subject, from)) throw purged();
    await rm(dir, { recursive: true, force: true });
    if (base !== null) await restoreCollection(dir, base.files);
    else await mkdir(dir, { recursive: true });
    const c = await Collection.open(dir, {
      kernels: this.opts.kernels,
      pool: this.opts.pool,
      dimension: collectionDimension(src),
      metric: "cosine", // as shard-host.ts opens every shard
      openLog: jetStreamLog(this.opts.nc, { name: shardLogName(src, s), stream, until: cut }),
    });
    try {
      // the frames after `from` were all there while the replay read them: no purge went past `from` until now
      if (await behindPurge(store, subject, from)) throw purged();
      const stats = c.stats();
      const { floor, files } = await captureCollection(c, `${dir}.capture`);
      const bytes = await store.putNamed(objectName(tenant, record.backupId, s), {
        stream,
        subject,
        seq: cut,
        floor,
        kind: "backup",
        files,
      });
      return {
        records: stats.totalVectorCount,
        bytes,
        namespaces: Object.entries(stats.namespaces)
          .filter(([, n]) => n.vectorCount > 0)
          .map(([ns]) => ns),
      };
    } finally {
      await c.close();
    }
  }

  /**
   * Store each shard's copy as the snapshot of the new index's shard subject, at the log stream's
   * current last sequence (the new subject has no frame yet; every frame it gets comes later), with
   * checkpoint.json moved there: a replica of the new shard opens from it and follows the subject.
   */
  private async seed(tenant: string, backup: ClusterBackupRecord, r: ClusterIndexRecord): Promise<void> {
    const jsm = await jetstreamManager(this.opts.nc, { timeout: 2000 });
    for (let s = 0; s < r.shards; s++) {
      let copy: Snapshot;
      try {
        copy = await this.opts.store.getNamed(objectName(tenant, backup.backupId, s));
      } catch (e) {
        throw new SvcError("E_BACKUP_DAMAGED", `backup '${backup.backupId}' shard ${s}: ${(e as Error).message}`, {
          field: "backup_id",
          cause: e,
        });
      }
      const stream = shardStream(r, s);
      const subject = shardLogSubject(r, s);
      let at = (await untilQuorum(`stream ${stream}`, QUORUM_MS, () => jsm.streams.info(stream))).state.last_seq;
      // An empty stream has no sequence to start after: one empty message (outside any shard's subject) makes one.
      if (at === 0) at = (await jetstream(this.opts.nc).publish(`${subject}.restore`, new Uint8Array(0))).seq;
      const files: SnapshotFile[] = copy.files.map((f) =>
        f.path === "checkpoint.json" ? { path: f.path, data: movedCheckpoint(f.data, at) } : f,
      );
      await this.opts.store.write({ stream, subject, seq: at, floor: at + 1, kind: "collection", files });
    }
  }

  private async unseed(r: ClusterIndexRecord): Promise<void> {
    for (let s = 0; s < r.shards; s++) await this.opts.store.remove(shardLogSubject(r, s));
  }

  private async put(tenant: string, record: ClusterBackupRecord): Promise<void> {
    await untilQuorum("write backup record", QUORUM_MS, () => this.kv.put(`${tenant}.${record.backupId}`, JSON.stringify(record)));
  }

  private async get(tenant: string, id: string): Promise<ClusterBackupRecord> {
    checkId(id);
    const b = await this.read(`${tenant}.${id}`);
    if (b === null) throw new SvcError("E_NOT_FOUND", `no backup '${id}'`, { field: "backup_id" });
    return b;
  }

  private async read(key: string): Promise<ClusterBackupRecord | null> {
    const e = await untilQuorum("read backup record", QUORUM_MS, () => this.kv.get(key));
    if (e === null || e.operation !== "PUT") return null;
    try {
      const b = parseStoredJson(e.string()) as ClusterBackupRecord;
      return typeof b?.backupId === "string" && Array.isArray(b.cut) && typeof b.source?.shards === "number" ? b : null;
    } catch {
      return null;
    }
  }

  /** As the API shows it: one still Initializing whose building node is gone (left, or restarted) is Failed. */
  private shown(b: ClusterBackupRecord): ClusterBackupRecord {
    if (b.status !== "Initializing") return b;
    const building = b.node === this.opts.self ? this.running.has(b.backupId) : this.opts.isLive(b.node);
    return building ? b : { ...b, status: "Failed", error: `node ${b.node}, which was taking the backup, stopped before it ended` };
  }
}

/** checkpoint.json with its log position moved to stream sequence `at` (the rest as it was). */
function movedCheckpoint(data: Uint8Array, at: number): Uint8Array {
  const cp = parseStoredJson(Buffer.from(data).toString("utf8")) as Record<string, unknown>;
  return new Uint8Array(Buffer.from(JSON.stringify({ ...cp, wal: { segment: 0, offset: at } })));
}
