/** @module indexes — named vector indexes per tenant: each is one durable Collection under <data>/tenants/<tenant>/indexes/<name>. */
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { rename, rm } from "node:fs/promises";
import { join } from "node:path";
import { restoreCopy } from "../engine/backup.js";
import { Collection, type CopiedFile } from "../engine/collection.js";
import { loadConfig, writeDurable } from "../engine/collection-files.js";
import { SvcError } from "../errors.js";
import { INDEX_NAME_RE, MAX_DIMENSION, METRICS, VECTOR_TYPES } from "../input-rules.js";
import { parseStoredJson } from "../safe-values.js";
import type { Kernels } from "../kernels/abi.js";
import type { ScanPool } from "../pool/scan-pool.js";
import { stderrReporter, type Reporter } from "../store/reporter.js";
import { fsyncDir } from "../store/scan.js";
import type { Durability } from "../store/wal.js";
import { CollectionIndex, EXPIRES_AT, type VectorIndex } from "./vector-index.js";

export { EXPIRES_AT } from "./vector-index.js";
export { INDEX_NAME_RE, MAX_DIMENSION, METRICS, VECTOR_TYPES } from "../input-rules.js";

export type VectorType = (typeof VECTOR_TYPES)[number];
/** Expired vectors of open indexes are deleted this often (reads hide them at once). */
export const SWEEP_MS = 60_000;

export interface IndexRecord {
  name: string;
  /** 0 for a sparse index (it has none; its collection keeps one constant value per row). */
  dimension: number;
  metric: (typeof METRICS)[number];
  /** As given at creation (e.g. `{serverless: {cloud, region}}`); svc runs every index locally. */
  spec: Record<string, unknown>;
  deletionProtection: "enabled" | "disabled";
  tags: Record<string, string> | null;
  createdAt: number;
  /** Absent: dense (records written before sparse indexes existed have none). */
  vectorType?: "sparse";
}

export interface CreateIndexInput {
  name: unknown;
  dimension: unknown;
  vectorType?: unknown;
  metric?: unknown;
  spec?: unknown;
  deletionProtection?: unknown;
  tags?: unknown;
}

/**
 * What the index routes and MCP tools call: the catalog of a tenant's indexes and `use`, which runs
 * a call on one index. `IndexService` is the one-node catalog; cluster/catalog.ts's `ClusterIndexes`
 * keeps the catalog in a KV bucket and serves each index from shards on other nodes.
 */
export interface IndexCatalog {
  create(tenant: string, input: CreateIndexInput): Promise<IndexRecord>;
  list(tenant: string): IndexRecord[] | Promise<IndexRecord[]>;
  describe(tenant: string, name: string): IndexRecord | Promise<IndexRecord>;
  configure(tenant: string, name: string, patch: { deletionProtection?: unknown; tags?: unknown }): Promise<IndexRecord>;
  delete(tenant: string, name: string): Promise<void>;
  /** Run `fn` on the index (404 E_NOT_FOUND when the tenant has none by that name); a delete of the index waits until `fn` settles. */
  use<T>(tenant: string, name: string, fn: (index: VectorIndex) => T | Promise<T>): Promise<T>;
}

interface Entry {
  record: IndexRecord;
  /** Opened on first use. */
  collection: Promise<Collection> | null;
  /** Operations running on the collection (`use`); a delete waits for them before it closes it. */
  users: number;
  /** Called when `users` drops to 0 (set by a waiting delete). */
  idle: (() => void) | null;
}

export interface IndexServiceOptions {
  kernels: Kernels;
  pool: ScanPool;
  durability?: Durability;
  /** The clock expiry is judged by (tests move it); default Date.now. */
  now?: () => number;
  /** Told of damage and of background failures: the expiry sweep's, a collection's (CollectionOptions); default stderrReporter. */
  reporter?: Reporter;
}

/** Folder-name prefixes of half-made creates and unfinished deletes; removed when the tenant is next read. */
const CREATING = ".creating-";
const DELETED = ".deleted-";

/**
 * Tenants never see each other's indexes: every call takes the tenant, and a name is looked
 * up only inside that tenant's folder (another tenant's index is "not found").
 *
 * Lifecycle: create, configure and delete of one name run one at a time (a chain per name).
 * A create builds the folder under a dot-name (collection.json, index.json) and renames it into
 * place; a delete takes the name out of the listing (new requests get 404), waits for the
 * requests already using the collection, closes it (which stops a background compaction or
 * index build and checkpoints), renames the folder to a dot-name and removes it. So a crash
 * leaves either the whole index or a dot-folder, which the next read of the tenant removes,
 * and a create after a delete always starts from a fresh folder.
 */
export class IndexService implements IndexCatalog {
  private readonly tenants = new Map<string, Map<string, Entry>>();
  /** tenant/name of indexes whose delete has started (a backup of one is E_CONFLICT, not "not found"). */
  private readonly deleting = new Set<string>();
  /** Tail of each tenant/name's lifecycle chain. */
  private readonly lifecycle = new Map<string, Promise<unknown>>();
  private closed = false;
  private readonly sweeper: NodeJS.Timeout;
  private readonly now: () => number;

  constructor(
    readonly dataDir: string,
    private readonly opts: IndexServiceOptions,
  ) {
    this.now = opts.now ?? Date.now;
    const reporter = opts.reporter ?? stderrReporter;
    this.sweeper = setInterval(() => void this.sweep().catch((err) => reporter.background(err, "expiry sweep of the indexes")), SWEEP_MS);
    this.sweeper.unref();
  }

  /** Deletes expired vectors from every open index; returns how many. Run every SWEEP_MS. */
  async sweep(): Promise<number> {
    let gone = 0;
    for (const [tenant, indexes] of this.tenants) {
      for (const [name, e] of indexes) {
        if (e.collection === null || this.closed || !indexes.has(name)) continue;
        // through use(): a delete of the index waits for the sweep instead of closing the collection under it
        gone += await this.useCollection(tenant, name, async (c) => {
          let n = 0;
          for (const ns of c.namespaces()) {
            if (c.count(ns, { [EXPIRES_AT]: { $exists: true } }) === 0) continue;
            n += (await c.delete(ns, { filter: { [EXPIRES_AT]: { $lte: this.now() } } })).deleted;
          }
          return n;
        }).catch((err: unknown) => {
          // an index that cannot open was reported as damage when it failed; one closed under the sweep has nothing left to sweep
          if (!(err instanceof SvcError && (err.code === "E_STORE_OFFLINE" || err.code === "E_CLOSED")))
            (this.opts.reporter ?? stderrReporter).background(err, `expiry sweep of index ${tenant}/${name}`);
          return 0;
        });
      }
    }
    return gone;
  }

  create(tenant: string, input: CreateIndexInput): Promise<IndexRecord> {
    const record = validateCreate(input);
    return this.serial(tenant, record.name, async () => {
      const indexes = this.indexes(tenant);
      if (indexes.has(record.name)) throw new SvcError("E_CONFLICT", `index '${record.name}' already exists`, { field: "name" });
      const root = this.tenantDir(tenant);
      const dir = this.dir(tenant, record.name);
      const tmp = join(root, `${CREATING}${record.name}-${randomBytes(6).toString("hex")}`);
      try {
        mkdirSync(tmp, { recursive: true });
        loadConfig(tmp, { dimension: collectionDimension(record), metric: "cosine" });
        await writeDurable(join(tmp, "index.json"), Buffer.from(JSON.stringify(record, null, 2)));
        // A folder without index.json (left by an older version's crash) is not an index.
        await rm(dir, { recursive: true, force: true });
        await rename(tmp, dir);
        await fsyncDir(root);
      } catch (err) {
        await rm(tmp, { recursive: true, force: true });
        throw err;
      }
      indexes.set(record.name, { record, collection: null, users: 0, idle: null });
      return record;
    });
  }

  list(tenant: string): IndexRecord[] {
    return [...this.indexes(tenant).values()].map((e) => e.record).sort((a, b) => a.name.localeCompare(b.name));
  }

  describe(tenant: string, name: string): IndexRecord {
    return this.entry(tenant, name).record;
  }

  configure(tenant: string, name: string, patch: { deletionProtection?: unknown; tags?: unknown }): Promise<IndexRecord> {
    this.entry(tenant, name);
    return this.serial(tenant, name, async () => {
      const e = this.entry(tenant, name);
      const next: IndexRecord = { ...e.record };
      if (patch.deletionProtection !== undefined) next.deletionProtection = checkProtection(patch.deletionProtection);
      if (patch.tags !== undefined) next.tags = checkTags(patch.tags, e.record.tags);
      await writeDurable(join(this.dir(tenant, name), "index.json"), Buffer.from(JSON.stringify(next, null, 2)));
      e.record = next;
      return next;
    });
  }

  delete(tenant: string, name: string): Promise<void> {
    this.entry(tenant, name);
    return this.serial(tenant, name, async () => {
      const e = this.entry(tenant, name);
      if (e.record.deletionProtection === "enabled")
        throw new SvcError("E_DELETION_PROTECTED", `index '${name}' has deletion protection enabled; disable it first`, {
          field: "deletion_protection",
        });
      this.indexes(tenant).delete(name);
      this.deleting.add(`${tenant}/${name}`);
      try {
        if (e.users > 0) await new Promise<void>((resolve) => (e.idle = resolve));
        const c = await e.collection?.catch(() => null); // one that failed to open has nothing to close (its failure reached its caller)
        await c?.close();
        const root = this.tenantDir(tenant);
        const trash = join(root, `${DELETED}${name}-${randomBytes(6).toString("hex")}`);
        await rename(this.dir(tenant, name), trash);
        await fsyncDir(root);
        await rm(trash, { recursive: true, force: true });
      } finally {
        this.deleting.delete(`${tenant}/${name}`);
      }
    });
  }

  /** True while a delete of the index runs (its name is already gone from the listing). */
  isDeleting(tenant: string, name: string): boolean {
    return this.deleting.has(`${tenant}/${name}`);
  }

  /**
   * Create index `input.name` from a collection copy (engine/backup.ts) under `from`: each listed file is copied
   * and checked against its SHA-256 (E_BACKUP_DAMAGED: nothing is created), then the folder is renamed into place
   * as a create does. The new index takes the copy's dimension and metric.
   */
  restore(tenant: string, input: CreateIndexInput, from: string, files: readonly CopiedFile[]): Promise<IndexRecord> {
    const record = validateCreate(input);
    return this.serial(tenant, record.name, async () => {
      const indexes = this.indexes(tenant);
      if (indexes.has(record.name)) throw new SvcError("E_CONFLICT", `index '${record.name}' already exists`, { field: "name" });
      const root = this.tenantDir(tenant);
      const dir = this.dir(tenant, record.name);
      const tmp = join(root, `${CREATING}${record.name}-${randomBytes(6).toString("hex")}`);
      try {
        mkdirSync(tmp, { recursive: true });
        await restoreCopy(from, files, tmp);
        await writeDurable(join(tmp, "index.json"), Buffer.from(JSON.stringify(record, null, 2)));
        await rm(dir, { recursive: true, force: true });
        await rename(tmp, dir);
        await fsyncDir(root);
      } catch (err) {
        await rm(tmp, { recursive: true, force: true });
        throw err;
      }
      indexes.set(record.name, { record, collection: null, users: 0, idle: null });
      return record;
    });
  }

  /** Run `fn` on the index (expired vectors hidden: vector-index.ts `CollectionIndex`). */
  use<T>(tenant: string, name: string, fn: (index: VectorIndex) => T | Promise<T>): Promise<T> {
    const { metric, vectorType } = this.entry(tenant, name).record;
    return this.useCollection(tenant, name, (c) => fn(new CollectionIndex(c, this.now, metric, vectorType ?? "dense")));
  }

  /**
   * Run `fn` on the index's collection (opened, with WAL replay, on first use). A delete of the
   * index waits until `fn` settles, so `fn` never sees its collection closed under it.
   */
  async useCollection<T>(tenant: string, name: string, fn: (c: Collection) => T | Promise<T>): Promise<T> {
    const e = this.entry(tenant, name);
    e.users++;
    try {
      // A damaged index stays offline (503, named by /v1/health) until `svc repair`; other failures are tried again on the next use.
      e.collection ??= Collection.open(this.dir(tenant, name), {
        ...this.opts,
        damage: { store: `collection:${tenant}/${name}`, root: this.dataDir },
      }).catch((err: unknown) => {
        if (!(err instanceof SvcError && err.code === "E_STORE_OFFLINE")) e.collection = null;
        throw err;
      });
      return await fn(await e.collection);
    } finally {
      if (--e.users === 0 && e.idle !== null) {
        e.idle();
        e.idle = null;
      }
    }
  }

  /** Open (replay) every index of every tenant on disk; what failed is returned, not thrown (it stays failing on use). */
  async openAll(onOpened: () => void = () => {}): Promise<Array<{ store: string; error: unknown }>> {
    const failed: Array<{ store: string; error: unknown }> = [];
    const root = join(this.dataDir, "tenants");
    for (const tenant of existsSync(root) ? readdirSync(root).sort() : []) {
      if (this.closed) break;
      for (const { name } of this.list(tenant))
        await this.useCollection(tenant, name, () => undefined).then(onOpened, (error: unknown) =>
          failed.push({ store: `index:${tenant}/${name}`, error }),
        );
    }
    return failed;
  }

  /** Live vectors of every open index (those not opened yet are left out): the svc_index_rows gauge. */
  async rowCounts(): Promise<Array<{ tenant: string; index: string; rows: number }>> {
    const out: Array<{ tenant: string; index: string; rows: number }> = [];
    for (const [tenant, indexes] of this.tenants) {
      for (const [index, e] of indexes) {
        const c = e.collection === null ? null : await e.collection.catch(() => null); // one that failed to open is reported by health/damage, not counted here
        if (c !== null && !this.closed) out.push({ tenant, index, rows: c.stats().totalVectorCount });
      }
    }
    return out;
  }

  /** Checkpoint and close every open collection. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.sweeper);
    await Promise.all([...this.lifecycle.values()].map((p) => p.catch(() => {}))); // only waits: each step's failure went to its caller
    const open: Promise<Collection>[] = [];
    for (const indexes of this.tenants.values()) for (const e of indexes.values()) if (e.collection) open.push(e.collection);
    await Promise.all(open.map(async (p) => (await p.catch(() => null))?.close())); // one that failed to open has nothing to close
  }

  /** Run one lifecycle step of tenant/name after the ones already queued for it. */
  private serial<T>(tenant: string, name: string, step: () => Promise<T>): Promise<T> {
    const key = `${tenant}/${name}`;
    const run = (this.lifecycle.get(key) ?? Promise.resolve()).then(() => {
      if (this.closed) throw new SvcError("E_CLOSED", "the server is shutting down");
      return step();
    });
    const tail = run.catch(() => {}); // the chain goes on after a failed step: `run` (returned) carries its failure to the caller
    this.lifecycle.set(key, tail);
    void tail.then(() => {
      if (this.lifecycle.get(key) === tail) this.lifecycle.delete(key);
    });
    return run;
  }

  private entry(tenant: string, name: string): Entry {
    if (this.closed) throw new SvcError("E_CLOSED", "the server is shutting down");
    const e = this.indexes(tenant).get(name);
    if (e === undefined) throw new SvcError("E_NOT_FOUND", `no index '${name}'`, { field: "name" });
    return e;
  }

  private tenantDir(tenant: string): string {
    return join(this.dataDir, "tenants", tenant, "indexes");
  }

  private dir(tenant: string, name: string): string {
    return join(this.tenantDir(tenant), name);
  }

  /** The tenant's indexes, read from disk on first use (leftovers of an interrupted create or delete are removed). */
  private indexes(tenant: string): Map<string, Entry> {
    let m = this.tenants.get(tenant);
    if (m === undefined) {
      m = new Map();
      const root = this.tenantDir(tenant);
      if (existsSync(root)) {
        for (const name of readdirSync(root)) {
          if (name.startsWith(CREATING) || name.startsWith(DELETED)) {
            rmSync(join(root, name), { recursive: true, force: true });
            continue;
          }
          const meta = join(root, name, "index.json");
          if (!INDEX_NAME_RE.test(name) || !existsSync(meta)) continue;
          m.set(name, { record: parseStoredJson(readFileSync(meta, "utf8")) as IndexRecord, collection: null, users: 0, idle: null });
        }
      }
      this.tenants.set(tenant, m);
    }
    return m;
  }
}

/**
 * A create request checked and completed (defaults), as stored; shared by cluster/catalog.ts. The create route
 * checked its body already (tools/index-ops.ts); this stays for the callers no route checks (a restore from a
 * backup names its own index; the cluster catalog) and for the rules that span fields, with the input-rules.ts constants.
 */
export function validateCreate(input: CreateIndexInput): IndexRecord {
  if (typeof input !== "object" || input === null) throw new SvcError("E_BAD_REQUEST", "the body must be an object", { field: "body" });
  const { name } = input;
  if (typeof name !== "string" || !INDEX_NAME_RE.test(name)) {
    throw new SvcError(
      "E_BAD_REQUEST",
      "name must be 1-45 characters of lowercase letters, digits and '-', starting and ending with a letter or digit",
      { field: "name" },
    );
  }
  // The official client checks vector_type and the metric case-insensitively and sends them as given: stored lowercase.
  const vectorType = typeof input.vectorType === "string" ? input.vectorType.toLowerCase() : (input.vectorType ?? "dense");
  if (!VECTOR_TYPES.includes(vectorType as never))
    throw new SvcError("E_BAD_REQUEST", `vector_type must be "dense" or "sparse"`, { field: "vector_type" });
  const sparse = vectorType === "sparse";
  // A sparse index has no dimension (Pinecone: none, or null); a dense one needs it.
  const dimension = sparse && (input.dimension === undefined || input.dimension === null) ? 0 : input.dimension;
  if (sparse && dimension !== 0)
    throw new SvcError("E_DIMENSION", "a sparse index has no dimension: leave dimension out", { field: "dimension" });
  if (!sparse && (typeof dimension !== "number" || !Number.isInteger(dimension) || dimension < 1 || dimension > MAX_DIMENSION)) {
    throw new SvcError("E_DIMENSION", `dimension must be an integer in [1, ${MAX_DIMENSION}]`, { field: "dimension" });
  }
  const metric = typeof input.metric === "string" ? input.metric.toLowerCase() : (input.metric ?? (sparse ? "dotproduct" : "cosine"));
  if (!METRICS.includes(metric as never))
    throw new SvcError(
      "E_BAD_REQUEST",
      `metric must be one of ${METRICS.join(", ")} (got ${typeof metric === "string" ? JSON.stringify(metric.slice(0, 40)) : typeof metric})`,
      { field: "metric" },
    );
  if (sparse && metric !== "dotproduct")
    throw new SvcError("E_BAD_REQUEST", `a sparse index ranks by dotproduct only (got ${JSON.stringify(metric)})`, { field: "metric" });
  const spec = input.spec ?? { serverless: { cloud: "local", region: "local" } };
  if (typeof spec !== "object" || spec === null || Array.isArray(spec))
    throw new SvcError("E_BAD_REQUEST", "spec must be an object such as {serverless: {cloud, region}}", { field: "spec" });
  return {
    name,
    dimension: dimension as number,
    metric: metric as IndexRecord["metric"],
    spec: spec as Record<string, unknown>,
    deletionProtection: input.deletionProtection === undefined ? "disabled" : checkProtection(input.deletionProtection),
    tags: input.tags === undefined || input.tags === null ? null : checkTags(input.tags, null),
    createdAt: Date.now(),
    ...(sparse ? { vectorType: "sparse" as const } : {}),
  };
}

/** The dimension of an index's collection: a sparse index's rows keep one constant value (memory/vector-index.ts SPARSE_ROW). */
export function collectionDimension(r: IndexRecord): number {
  return r.vectorType === "sparse" ? 1 : r.dimension;
}

export function checkProtection(v: unknown): IndexRecord["deletionProtection"] {
  if (v !== "enabled" && v !== "disabled")
    throw new SvcError("E_BAD_REQUEST", "deletion_protection must be 'enabled' or 'disabled'", { field: "deletion_protection" });
  return v;
}

/** Tags merge into the existing ones; an empty string value removes a tag (Pinecone's rule). */
export function checkTags(v: unknown, old: Record<string, string> | null): Record<string, string> {
  if (typeof v !== "object" || v === null || Array.isArray(v))
    throw new SvcError("E_BAD_REQUEST", "tags must be an object of strings", { field: "tags" });
  const out: Record<string, string> = { ...old };
  for (const [k, val] of Object.entries(v)) {
    if (typeof val !== "string" || k.length > 80 || val.length > 120)
      throw new SvcError("E_BAD_REQUEST", `tags.${k} must be a string of at most 120 characters (keys at most 80)`, { field: `tags.${k}` });
    if (val === "") delete out[k];
    else out[k] = val;
  }
  return out;
}
