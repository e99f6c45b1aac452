/**
 * @module catalog — the index catalog of cluster mode (`ClusterIndexes implements IndexCatalog`), the
 * same on every node. Records (a ClusterIndexRecord: the IndexRecord plus shards, replicas, log
 * streams and a random incarnation) are the fold of the stream `svc_catalog` (catalog-log.ts), which
 * every node keeps in memory. Create wins when it is the first create of the name in stream order
 * (409 E_CONFLICT for the others), configure and delete name the revision they read and lose when
 * another change came in between (configure then re-reads and tries again; delete answers 409);
 * a won delete is followed by a purge of the index's subjects. Catalogs kept by older versions in
 * the KV bucket `svc_catalog` are imported at open. The vectors are served by this node's ShardHost
 * (the shards it owns) and reached through ShardedIndex from any node.
 */
import { jetstreamManager, JetStreamApiCodes, JetStreamApiError } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import { randomBytes } from "node:crypto";
import { SvcError } from "../errors.js";
import { parseStoredJson } from "../safe-values.js";
import type { Reporter } from "../store/reporter.js";
import type { Kernels } from "../kernels/abi.js";
import {
  checkProtection,
  checkTags,
  validateCreate,
  type CreateIndexInput,
  type IndexCatalog,
  type IndexRecord,
} from "../memory/indexes.js";
import type { VectorIndex } from "../memory/vector-index.js";
import type { ScanPool } from "../pool/scan-pool.js";
import { CatalogLog, checkRecord } from "./catalog-log.js";
import { ensureLogStreams, LOG_STREAMS } from "./jetstream-log.js";
import type { Mirrored } from "./kv-mirror.js";
import type { NodeRegistry } from "./nodes.js";
import { noQuorum } from "./quorum.js";
import { ShardHost } from "./shard-host.js";
import type { ShardSnapshotOptions } from "./shard-snapshots.js";
import { ShardedIndex, type ShardedIndexOptions } from "./sharded-index.js";
import {
  DEFAULT_REPLICAS,
  DEFAULT_SHARDS,
  MAX_SHARDS,
  indexLogFilter,
  indexStreams,
  shardKey,
  shardLogSubject,
  type ClusterIndexRecord,
} from "./shards.js";

/** The catalog name of a tenant's records (not an index name: INDEX_NAME_RE has no `_`, so no API request reaches it as an index). */
export const RECORDS_ENTRY = "_records";

/** The KV bucket older versions kept the catalog in (imported at open, never written). */
export const CATALOG_BUCKET = "svc_catalog";
/** A node whose heartbeat (every 1 s) is older than this is asked after the others (ms). */
const FRESH_MS = 2500;

export interface ClusterIndexesOptions {
  nc: NatsConnection;
  registry: NodeRegistry;
  /** This node's data dir; its shard replicas live under `<dataDir>/cluster/shards`. */
  dataDir: string;
  kernels: Kernels;
  pool: ScanPool;
  /** Replicas of the catalog stream and the log streams (default 3: NATS servers, not svc nodes). */
  bucketReplicas?: number;
  /** Log streams new indexes spread their shards over (default LOG_STREAMS; jetstream-log.ts ensureLogStreams). */
  logStreams?: number;
  /** svc nodes per shard for new indexes (default DEFAULT_REPLICAS, at most the live nodes at creation). */
  shardReplicas?: number;
  /** Timeouts of the requests to shards (sharded-index.ts). */
  requests?: ShardedIndexOptions;
  /** The clock expiry is judged by (default Date.now). */
  now?: () => number;
  /** Told of damage and of the shard host's background failures (shard-host.ts); default stderrReporter. */
  reporter?: Reporter;
  /** Shard snapshots and log retention (shard-host.ts); absent: the log keeps every frame. */
  snapshots?: ShardSnapshotOptions;
}

export class ClusterIndexes implements IndexCatalog {
  /** `<tenant>.<name>` -> the record and its revision: the fold of the catalog stream (set once open). */
  private records!: CatalogLog;
  /** One ShardedIndex per incarnation. */
  private readonly indexes = new Map<string, ShardedIndex>();
  private readonly host: ShardHost;
  private readonly stops: Array<() => void> = [];
  private closed = false;

  private constructor(private readonly opts: ClusterIndexesOptions) {
    this.host = new ShardHost({ ...opts, indexes: () => [...this.records.values()].map((e) => e.value) });
  }

  /** Open the catalog (creating its stream and the log streams when missing), fold it, import an older version's bucket, and start serving this node's shards. */
  static async open(opts: ClusterIndexesOptions): Promise<ClusterIndexes> {
    await ensureLogStreams(opts.nc, { replicas: opts.bucketReplicas ?? 3, count: opts.logStreams ?? LOG_STREAMS });
    const c = new ClusterIndexes(opts);
    let loaded = false;
    c.records = await CatalogLog.open(opts.nc, {
      replicas: opts.bucketReplicas ?? 3,
      ...(opts.snapshots === undefined ? {} : { snapshots: { store: opts.snapshots.store } }),
      onChange: (key, now, before) => {
        c.forget(key, now, before);
        if (loaded && !c.closed) void c.host.reconcile();
      },
    });
    try {
      await c.importBucket();
    } catch (e) {
      await c.records.stop();
      throw e;
    }
    loaded = true;
    c.stops.push(() => void c.records.stop());
    const onChange = () => void c.host.reconcile();
    opts.registry.on("change", onChange);
    c.stops.push(() => opts.registry.off("change", onChange));
    await c.host.reconcile();
    return c;
  }

  /** This node's shard host (tests; /v1/health). */
  get shards(): ShardHost {
    return this.host;
  }

  /**
   * `from`: a restore (cluster/backups.ts): the index gets `from.shards` shards, and `from.seed` is
   * run with its record before the catalog names it (it stores each shard's starting snapshot, so a
   * replica opening the new shard starts from it); `from.unseed` when the create then loses.
   */
  async create(
    tenant: string,
    input: CreateIndexInput,
    from?: { shards: number; seed(record: ClusterIndexRecord): Promise<void>; unseed(record: ClusterIndexRecord): Promise<void> },
  ): Promise<IndexRecord> {
    this.open();
    const base = validateCreate(input);
    const record: ClusterIndexRecord = {
      ...base,
      tenant,
      shards: from?.shards ?? shardsOf(base.spec),
      replicas: Math.max(1, Math.min(this.opts.shardReplicas ?? DEFAULT_REPLICAS, this.opts.registry.live.length)),
      incarnation: randomBytes(6).toString("hex"),
      streams: Math.max(1, this.opts.logStreams ?? LOG_STREAMS),
    };
    if (from !== undefined) {
      if (this.records.get(`${tenant}.${base.name}`) !== undefined)
        throw new SvcError("E_CONFLICT", `index '${base.name}' already exists`, { field: "name" });
      await from.seed(record);
    }
    // the first create of the name in the stream's order wins (a retried publish is one message: its id)
    if (!(await this.records.submit(`${tenant}.${base.name}`, { k: "create", record }))) {
      await from?.unseed(record).catch(() => undefined);
      throw new SvcError("E_CONFLICT", `index '${base.name}' already exists`, { field: "name" });
    }
    await this.host.reconcile();
    return publicRecord(record);
  }

  /**
   * The tenant's records (sharded-records.ts) as a ShardedIndex: the catalog entry `<tenant>._records`
   * (kind "records", `dimension`-d cosine, DEFAULT_SHARDS shards, DEFAULT_REPLICAS replicas),
   * created on first write (`create`); null when absent and not `create`. Its incarnation is fixed,
   * so two nodes creating it at once write the same subjects whichever wins.
   */
  async recordShards(tenant: string, dimension: number, create: boolean): Promise<ShardedIndex | null> {
    this.open();
    const key = `${tenant}.${RECORDS_ENTRY}`;
    let e = this.records.get(key);
    if (e === undefined) {
      try {
        e = await this.records.fresh(key);
      } catch (err) {
        if (err instanceof SvcError) throw err;
        throw noQuorum(`the catalog could not be read (${(err as Error)?.message ?? String(err)}); retry`, "namespace", err);
      }
    }
    if (e === undefined && create) {
      const record: ClusterIndexRecord = {
        name: RECORDS_ENTRY,
        dimension,
        metric: "cosine",
        spec: {},
        deletionProtection: "enabled",
        tags: null,
        createdAt: Date.now(),
        tenant,
        shards: DEFAULT_SHARDS,
        replicas: DEFAULT_REPLICAS,
        incarnation: "records",
        streams: Math.max(1, this.opts.logStreams ?? LOG_STREAMS),
        kind: "records",
      };
      // The first create in the catalog stream's order wins; every node builds the same record (incarnation "records"), so a lost race reads the winner's.
      if (await this.records.submit(key, { k: "create", record })) await this.host.reconcile();
      e = this.records.get(key) ?? (await this.records.fresh(key));
    }
    if (e === undefined) return null;
    const record = e.value;
    const ixKey = `${key}.${record.incarnation}`;
    let ix = this.indexes.get(ixKey);
    if (ix === undefined || ix.record !== record)
      this.indexes.set(ixKey, (ix = new ShardedIndex(this.opts.nc, record, this.opts.requests, (shard) => this.replicasOf(record, shard))));
    return ix;
  }

  /** The catalog record of the tenant's index, read fresh (E_NOT_FOUND when absent or deleted). */
  async record(tenant: string, name: string): Promise<ClusterIndexRecord> {
    return (await this.entry(tenant, name, true)).record;
  }

  list(tenant: string): IndexRecord[] {
    this.open();
    return [...this.records.values()]
      .map((e) => e.value)
      .filter((r) => r.tenant === tenant && r.kind === undefined)
      .map(publicRecord)
      .sort((a, b) => a.name.localeCompare(b.name));
  }

  async describe(tenant: string, name: string): Promise<IndexRecord> {
    return publicRecord((await this.entry(tenant, name, true)).record);
  }

  async configure(tenant: string, name: string, patch: { deletionProtection?: unknown; tags?: unknown }): Promise<IndexRecord> {
    for (let attempt = 0; ; attempt++) {
      const { record, revision } = await this.entry(tenant, name, attempt > 0);
      const next: ClusterIndexRecord = { ...record };
      if (patch.deletionProtection !== undefined) next.deletionProtection = checkProtection(patch.deletionProtection);
      if (patch.tags !== undefined) next.tags = checkTags(patch.tags, record.tags);
      if (await this.records.submit(`${tenant}.${name}`, { k: "configure", base: revision, record: next })) return publicRecord(next);
      // Another change came first: read it again and re-apply the patch on top.
      if (attempt >= 5) throw new SvcError("E_CONFLICT", `index '${name}' is being changed by other requests; retry`, { field: "name" });
    }
  }

  async delete(tenant: string, name: string): Promise<void> {
    const { record, revision } = await this.entry(tenant, name, true);
    if (record.deletionProtection === "enabled")
      throw new SvcError("E_DELETION_PROTECTED", `index '${name}' has deletion protection enabled; disable it first`, {
        field: "deletion_protection",
      });
    const key = `${tenant}.${name}`;
    if (!(await this.records.submit(key, { k: "delete", base: revision }))) {
      if (this.records.get(key) === undefined) throw new SvcError("E_NOT_FOUND", `no index '${name}'`, { field: "name" });
      throw new SvcError("E_CONFLICT", `index '${name}' changed while it was being deleted; retry`, { field: "name" });
    }
    await this.host.reconcile();
    // The frames of every shard of this incarnation, on each of its log streams: no replica will read them again.
    const jsm = await jetstreamManager(this.opts.nc);
    for (const stream of indexStreams(record))
      await jsm.streams.purge(stream, { filter: indexLogFilter(stream, record) }).catch(() => undefined); // the delete already won in the fold: frames left behind belong to an incarnation no replica reads again
    // and their snapshots
    for (let s = 0; s < record.shards; s++) await this.opts.snapshots?.store.remove(shardLogSubject(record, s));
  }

  async use<T>(tenant: string, name: string, fn: (index: VectorIndex) => T | Promise<T>): Promise<T> {
    const { record } = await this.entry(tenant, name);
    const key = `${tenant}.${name}.${record.incarnation}`;
    let ix = this.indexes.get(key);
    if (ix === undefined || ix.record !== record)
      this.indexes.set(key, (ix = new ShardedIndex(this.opts.nc, record, this.opts.requests, (shard) => this.replicasOf(record, shard))));
    try {
      return await fn(ix);
    } catch (e) {
      // No replica answers: when the catalog says the index was deleted (on another node, not yet seen here) that is a 404,
      // as on one node. A catalog that cannot be read says nothing: the 503 stands (unknown is never "absent").
      if (e instanceof SvcError && e.code === "E_SHARD_UNAVAILABLE") {
        const now = await this.entry(tenant, name, true).then(
          (x) => x.record,
          (err: unknown) => (err instanceof SvcError && err.code === "E_NOT_FOUND" ? null : undefined),
        );
        if (now === null || (now !== undefined && now.incarnation !== record.incarnation))
          throw new SvcError("E_NOT_FOUND", `no index '${name}'`, { field: "name" });
      }
      throw e;
    }
  }

  /** Stop watching and serving shards (their files stay, so a restart resumes from their checkpoints); the connection stays the caller's. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const stop of this.stops) stop();
    await this.host.close();
  }

  /** The record of tenant/name: from the fold, else (or with `fresh`) once the fold has every change the stream holds for it (a create on another node may have just been written). */
  private async entry(tenant: string, name: string, fresh = false): Promise<{ record: ClusterIndexRecord; revision: number }> {
    this.open();
    const key = `${tenant}.${name}`;
    let e = fresh ? undefined : this.records.get(key);
    if (e === undefined && /^[a-z0-9-]+$/.test(name)) {
      try {
        e = await this.records.fresh(key);
      } catch (err) {
        // unreadable is not absent: 503 with Retry-After, never a 404 for an index that may exist
        if (err instanceof SvcError) throw err;
        throw noQuorum(`the index catalog could not be read (${(err as Error)?.message ?? String(err)}); retry`, "name", err);
      }
    }
    if (e === undefined || e.value.kind !== undefined) throw new SvcError("E_NOT_FOUND", `no index '${name}'`, { field: "name" });
    return { record: e.value, revision: e.revision };
  }

  /**
   * The live owners of a shard, those heard from within FRESH_MS first (a frozen node keeps its
   * place in placement until its registration ages out after the registry's ttl; requests stop
   * going to it first after FRESH_MS).
   */
  private replicasOf(record: ClusterIndexRecord, shard: number): string[] {
    const reg = this.opts.registry;
    const owners = reg.owners(shardKey(record, shard), record.replicas);
    return [...owners.filter((id) => reg.silentFor(id) < FRESH_MS), ...owners.filter((id) => reg.silentFor(id) >= FRESH_MS)];
  }

  /** Drop the ShardedIndex of an incarnation the catalog no longer has. */
  private forget(key: string, now: Mirrored<ClusterIndexRecord> | undefined, before: Mirrored<ClusterIndexRecord> | undefined): void {
    if (before !== undefined && before.value.incarnation !== now?.value.incarnation)
      this.indexes.delete(`${key}.${before.value.incarnation}`);
  }

  private open(): void {
    if (this.closed) throw new SvcError("E_CLOSED", "the server is shutting down");
  }

  /**
   * Take over a catalog an older version kept in the KV bucket `svc_catalog`: each record under a
   * name the catalog stream never named is imported (an import loses once the stream named the key
   * in any change, so a record deleted or re-created after the import never comes back from the
   * bucket, and nodes importing at once import each record once). The bucket is left as it was.
   */
  private async importBucket(): Promise<void> {
    const jsm = await jetstreamManager(this.opts.nc);
    const bucket = await jsm.streams.info(`KV_${CATALOG_BUCKET}`).catch((e: unknown) => {
      if (e instanceof JetStreamApiError && e.code === JetStreamApiCodes.StreamNotFound) return null;
      throw e;
    });
    if (bucket === null || bucket.state.messages === 0) return;
    const kv = await new Kvm(this.opts.nc).open(CATALOG_BUCKET);
    const keys: string[] = [];
    for await (const k of await kv.keys()) if (!this.records.everNamed(k)) keys.push(k);
    for (const key of keys) {
      const e = await kv.get(key);
      const record = e?.operation === "PUT" ? parseRecord(e.string()) : null;
      if (record === null || `${record.tenant}.${record.name}` !== key) continue;
      await this.records.submit(key, { k: "import", id: `import-${record.incarnation}`, record });
    }
  }
}

/** Shards of a new index: `spec.shards` when given (1..MAX_SHARDS), else DEFAULT_SHARDS. */
function shardsOf(spec: Record<string, unknown>): number {
  const s = spec.shards;
  if (s === undefined) return DEFAULT_SHARDS;
  if (typeof s !== "number" || !Number.isInteger(s) || s < 1 || s > MAX_SHARDS)
    throw new SvcError("E_BAD_REQUEST", `spec.shards must be an integer in [1, ${MAX_SHARDS}]`, { field: "spec.shards" });
  return s;
}

/** The IndexRecord part of a catalog record (what the routes show). */
function publicRecord(r: ClusterIndexRecord): IndexRecord {
  return {
    name: r.name,
    dimension: r.dimension,
    metric: r.metric,
    spec: r.spec,
    deletionProtection: r.deletionProtection,
    tags: r.tags,
    createdAt: r.createdAt,
    ...(r.vectorType === undefined ? {} : { vectorType: r.vectorType }),
  };
}

/** A record of the older versions' KV bucket (JSON), or null. */
function parseRecord(text: string): ClusterIndexRecord | null {
  try {
    return checkRecord(parseStoredJson(text));
  } catch {
    return null;
  }
}
