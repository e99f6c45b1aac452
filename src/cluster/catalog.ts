/**
 * @module catalog — the index catalog of cluster mode (`ClusterIndexes implements IndexCatalog`), the
 * same on every node. Records live in the replicated KV bucket `svc_catalog` (key `<tenant>.<name>`,
 * value the JSON of a ClusterIndexRecord: the IndexRecord plus shards, replicas and a random
 * incarnation); every node keeps a copy in memory (kv-mirror.ts, which survives a nats-server's death
 * where a plain watch stayed stuck). Create is a KV create
 * (one winner across nodes: 409 E_CONFLICT for the others), configure a compare-and-set on the
 * revision, delete a KV delete followed by a purge of the index's subjects. The vectors are served
 * by this node's ShardHost (the shards it owns) and reached through ShardedIndex from any node.
 */
import { jetstreamManager } from "@nats-io/jetstream";
import { Kvm, type KV } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import { randomBytes } from "node:crypto";
import { SvcError } from "../errors.js";
import { parseStoredJson } from "../safe-values.js";
import type { MaintenanceErrorHandler } from "../engine/collection.js";
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
import { ensureLogStream, LOG_STREAM } from "./jetstream-log.js";
import { KvMirror, type Mirrored } from "./kv-mirror.js";
import type { NodeRegistry } from "./nodes.js";
import { isRevisionConflict, noQuorum, untilQuorum } from "./quorum.js";
import { ShardHost } from "./shard-host.js";
import { ShardedIndex, type ShardedIndexOptions } from "./sharded-index.js";
import { DEFAULT_REPLICAS, DEFAULT_SHARDS, MAX_SHARDS, indexLogFilter, shardKey, type ClusterIndexRecord } from "./shards.js";

/** The catalog name of a tenant's records (not an index name: INDEX_NAME_RE has no `_`, so no API request reaches it as an index). */
export const RECORDS_ENTRY = "_records";

/** The bucket of index records. */
export const CATALOG_BUCKET = "svc_catalog";
/** How long a catalog write keeps retrying while the bucket has no leader before E_NO_QUORUM (as the log and the keys). */
const QUORUM_TIMEOUT_MS = 15_000;
/** A node whose heartbeat (every 1 s) is older than this is asked after the others (ms). */
const FRESH_MS = 2500;

export interface ClusterIndexesOptions {
  nc: NatsConnection;
  registry: NodeRegistry;
  /** This node's data dir; its shard replicas live under `<dataDir>/cluster/shards`. */
  dataDir: string;
  kernels: Kernels;
  pool: ScanPool;
  /** Replicas of the catalog bucket (default 3: NATS servers, not svc nodes). */
  bucketReplicas?: number;
  /** svc nodes per shard for new indexes (default DEFAULT_REPLICAS, at most the live nodes at creation). */
  shardReplicas?: number;
  /** Timeouts of the requests to shards (sharded-index.ts). */
  requests?: ShardedIndexOptions;
  /** The clock expiry is judged by (default Date.now). */
  now?: () => number;
  /** Told when a shard replica's background task fails (CollectionOptions). */
  onMaintenanceError?: MaintenanceErrorHandler;
}

export class ClusterIndexes implements IndexCatalog {
  /** `<tenant>.<name>` -> the record and its KV revision (set once open). */
  private records!: KvMirror<ClusterIndexRecord>;
  /** One ShardedIndex per incarnation. */
  private readonly indexes = new Map<string, ShardedIndex>();
  private readonly host: ShardHost;
  private readonly stops: Array<() => void> = [];
  private closed = false;

  private constructor(
    private readonly kv: KV,
    private readonly opts: ClusterIndexesOptions,
  ) {
    this.host = new ShardHost({ ...opts, indexes: () => [...this.records.values()].map((e) => e.value) });
  }

  /** Open the catalog (creating the bucket and the log stream when missing), read it, and start serving this node's shards. */
  static async open(opts: ClusterIndexesOptions): Promise<ClusterIndexes> {
    await ensureLogStream(opts.nc);
    const kv = await new Kvm(opts.nc).create(CATALOG_BUCKET, { replicas: opts.bucketReplicas ?? 3, history: 1 });
    const c = new ClusterIndexes(kv, opts);
    let loaded = false;
    c.records = await KvMirror.open(opts.nc, kv, CATALOG_BUCKET, {
      parse: (_key, value) => parseRecord(new TextDecoder().decode(value)),
      onChange: (key, now, before) => {
        c.forget(key, now, before);
        if (loaded && !c.closed) void c.host.reconcile();
      },
    });
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

  async create(tenant: string, input: CreateIndexInput): Promise<IndexRecord> {
    this.open();
    const base = validateCreate(input);
    // Shards serve dense indexes only (their collections and merges know no sparse-only rows): refused before anything is written.
    if (base.vectorType === "sparse")
      throw new SvcError(
        "E_BAD_REQUEST",
        "sparse indexes are not served in cluster mode yet: create a dense dotproduct index with sparseValues, or use a single node",
        { field: "vector_type" },
      );
    const record: ClusterIndexRecord = {
      ...base,
      tenant,
      shards: shardsOf(base.spec),
      replicas: Math.max(1, Math.min(this.opts.shardReplicas ?? DEFAULT_REPLICAS, this.opts.registry.live.length)),
      incarnation: randomBytes(6).toString("hex"),
    };
    const key = `${tenant}.${base.name}`;
    // null: the name is taken by another create (a try of ours that timed out but was kept counts as ours)
    const revision = await untilQuorum(`create index '${base.name}'`, QUORUM_TIMEOUT_MS, async () => {
      try {
        return await this.kv.create(key, JSON.stringify(record));
      } catch (e) {
        if (!isRevisionConflict(e)) throw e;
        const found = await this.kv.get(key);
        return found?.operation === "PUT" && parseRecord(found.string())?.incarnation === record.incarnation ? found.revision : null;
      }
    });
    if (revision === null) throw new SvcError("E_CONFLICT", `index '${base.name}' already exists`, { field: "name" });
    if (this.records.set(key, record, revision)) await this.host.reconcile();
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
        e = (await this.records.fetch(key)) ?? undefined;
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
        kind: "records",
      };
      const revision = await untilQuorum(`create the records of tenant '${tenant}'`, QUORUM_TIMEOUT_MS, async () => {
        try {
          return await this.kv.create(key, JSON.stringify(record));
        } catch (err) {
          if (!isRevisionConflict(err)) throw err;
          return null; // another node created it (the same incarnation): read below
        }
      });
      if (revision !== null && this.records.set(key, record, revision)) await this.host.reconcile();
      e = this.records.get(key) ?? (await this.records.fetch(key)) ?? undefined;
    }
    if (e === undefined) return null;
    const record = e.value;
    const ixKey = `${key}.${record.incarnation}`;
    let ix = this.indexes.get(ixKey);
    if (ix === undefined || ix.record !== record)
      this.indexes.set(ixKey, (ix = new ShardedIndex(this.opts.nc, record, this.opts.requests, (shard) => this.replicasOf(record, shard))));
    return ix;
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
      try {
        const rev = await untilQuorum(`configure index '${name}'`, QUORUM_TIMEOUT_MS, () =>
          this.kv.update(`${tenant}.${name}`, JSON.stringify(next), revision),
        );
        this.records.set(`${tenant}.${name}`, next, rev);
        return publicRecord(next);
      } catch (e) {
        if (!isRevisionConflict(e)) throw e;
        // Another node changed it first: read it again and re-apply the patch on top.
        if (attempt >= 5)
          throw new SvcError("E_CONFLICT", `index '${name}' is being changed by other requests; retry`, { field: "name", cause: e });
      }
    }
  }

  async delete(tenant: string, name: string): Promise<void> {
    const { record, revision } = await this.entry(tenant, name, true);
    if (record.deletionProtection === "enabled")
      throw new SvcError("E_DELETION_PROTECTED", `index '${name}' has deletion protection enabled; disable it first`, {
        field: "deletion_protection",
      });
    try {
      await untilQuorum(`delete index '${name}'`, QUORUM_TIMEOUT_MS, () => this.kv.delete(`${tenant}.${name}`, { previousSeq: revision }));
    } catch (e) {
      if (!isRevisionConflict(e)) throw e;
      throw new SvcError("E_CONFLICT", `index '${name}' changed while it was being deleted; retry`, { field: "name", cause: e });
    }
    const key = `${tenant}.${name}`;
    const before = this.records.get(key);
    if (this.records.remove(key, revision)) {
      this.forget(key, undefined, before);
      await this.host.reconcile();
    }
    // The frames of every shard of this incarnation: no replica will read them again.
    const jsm = await jetstreamManager(this.opts.nc);
    await jsm.streams.purge(LOG_STREAM, { filter: indexLogFilter(LOG_STREAM, record) }).catch(() => undefined);
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

  /** The record of tenant/name: from the mirrored copy, else (or with `fresh`) from the bucket, which a create on another node may have just written. */
  private async entry(tenant: string, name: string, fresh = false): Promise<{ record: ClusterIndexRecord; revision: number }> {
    this.open();
    const key = `${tenant}.${name}`;
    const before = this.records.get(key);
    let e = fresh ? undefined : before;
    if (e === undefined && /^[a-z0-9-]+$/.test(name)) {
      try {
        e = (await this.records.fetch(key)) ?? undefined;
      } catch (err) {
        // unreadable is not absent: 503 with Retry-After, never a 404 for an index that may exist
        if (err instanceof SvcError) throw err;
        throw noQuorum(`the index catalog could not be read (${(err as Error)?.message ?? String(err)}); retry`, "name", err);
      }
      this.forget(key, e, before);
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
  };
}

function parseRecord(text: string): ClusterIndexRecord | null {
  try {
    const r = parseStoredJson(text) as ClusterIndexRecord;
    const ok =
      typeof r?.tenant === "string" &&
      typeof r.name === "string" &&
      Number.isInteger(r.dimension) &&
      Number.isInteger(r.shards) &&
      r.shards >= 1 &&
      Number.isInteger(r.replicas) &&
      typeof r.incarnation === "string";
    return ok ? r : null;
  } catch {
    return null;
  }
}
