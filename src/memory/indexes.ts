/** @module indexes — named vector indexes per tenant: each is one durable Collection under <data>/tenants/<tenant>/indexes/<name>. */
import { existsSync, mkdirSync, readdirSync, readFileSync } from "node:fs";
import { rename, rm } from "node:fs/promises";
import { join } from "node:path";
import { Collection } from "../engine/collection.js";
import { writeDurable } from "../engine/collection-files.js";
import { SvcError } from "../errors.js";
import type { Kernels } from "../kernels/abi.js";
import type { ScanPool } from "../pool/scan-pool.js";
import type { Durability } from "../store/wal.js";

export const INDEX_NAME_RE = /^[a-z0-9](?:[a-z0-9-]{0,43}[a-z0-9])?$/;
export const MAX_DIMENSION = 20_000;
export const METRICS = ["cosine"] as const;

export interface IndexRecord {
  name: string;
  dimension: number;
  metric: (typeof METRICS)[number];
  /** As given at creation (e.g. `{serverless: {cloud, region}}`); svc runs every index locally. */
  spec: Record<string, unknown>;
  deletionProtection: "enabled" | "disabled";
  tags: Record<string, string> | null;
  createdAt: number;
}

export interface CreateIndexInput {
  name: unknown;
  dimension: unknown;
  metric?: unknown;
  spec?: unknown;
  deletionProtection?: unknown;
  tags?: unknown;
}

interface Entry {
  record: IndexRecord;
  /** Opened on first use. */
  collection: Promise<Collection> | null;
}

export interface IndexServiceOptions {
  kernels: Kernels;
  pool: ScanPool;
  durability?: Durability;
}

/**
 * Tenants never see each other's indexes: every call takes the tenant, and a name is looked
 * up only inside that tenant's folder (another tenant's index is "not found"). index.json is
 * written after the collection exists, so a crash in between leaves a folder without it,
 * which is ignored and overwritten by the next create of that name.
 */
export class IndexService {
  private readonly tenants = new Map<string, Map<string, Entry>>();
  private closed = false;

  constructor(
    readonly dataDir: string,
    private readonly opts: IndexServiceOptions,
  ) {}

  async create(tenant: string, input: CreateIndexInput): Promise<IndexRecord> {
    const record = validateCreate(input);
    const indexes = this.indexes(tenant);
    if (indexes.has(record.name)) throw new SvcError("E_CONFLICT", `index '${record.name}' already exists`, { field: "name" });
    const dir = this.dir(tenant, record.name);
    const entry: Entry = { record, collection: null };
    indexes.set(record.name, entry);
    try {
      await rm(dir, { recursive: true, force: true });
      mkdirSync(dir, { recursive: true });
      const c = await Collection.open(dir, { ...this.opts, dimension: record.dimension, metric: "cosine" });
      entry.collection = Promise.resolve(c);
      await writeDurable(join(dir, "index.json"), Buffer.from(JSON.stringify(record, null, 2)));
    } catch (err) {
      indexes.delete(record.name);
      throw err;
    }
    return record;
  }

  list(tenant: string): IndexRecord[] {
    return [...this.indexes(tenant).values()].map((e) => e.record).sort((a, b) => a.name.localeCompare(b.name));
  }

  describe(tenant: string, name: string): IndexRecord {
    return this.entry(tenant, name).record;
  }

  async configure(tenant: string, name: string, patch: { deletionProtection?: unknown; tags?: unknown }): Promise<IndexRecord> {
    const e = this.entry(tenant, name);
    const next: IndexRecord = { ...e.record };
    if (patch.deletionProtection !== undefined) next.deletionProtection = checkProtection(patch.deletionProtection);
    if (patch.tags !== undefined) next.tags = checkTags(patch.tags, e.record.tags);
    await writeDurable(join(this.dir(tenant, name), "index.json"), Buffer.from(JSON.stringify(next, null, 2)));
    e.record = next;
    return next;
  }

  async delete(tenant: string, name: string): Promise<void> {
    const e = this.entry(tenant, name);
    if (e.record.deletionProtection === "enabled") throw new SvcError("E_DELETION_PROTECTED", `index '${name}' has deletion protection enabled; disable it first`, { field: "deletion_protection" });
    this.indexes(tenant).delete(name);
    const c = await e.collection?.catch(() => null);
    await c?.close();
    // Rename first: a crash mid-delete leaves a dot-folder that listing ignores, never half an index.
    const dir = this.dir(tenant, name);
    const trash = join(this.tenantDir(tenant), `.deleted-${name}-${Date.now()}`);
    await rename(dir, trash);
    await rm(trash, { recursive: true, force: true });
  }

  /** The index's collection, opened (with WAL replay) on first use. */
  collection(tenant: string, name: string): Promise<Collection> {
    const e = this.entry(tenant, name);
    e.collection ??= Collection.open(this.dir(tenant, name), this.opts).catch((err: unknown) => {
      e.collection = null;
      throw err;
    });
    return e.collection;
  }

  /** Open (replay) every index of every tenant on disk; what failed is returned, not thrown (it stays failing on use). */
  async openAll(onOpened: () => void = () => {}): Promise<Array<{ store: string; error: unknown }>> {
    const failed: Array<{ store: string; error: unknown }> = [];
    const root = join(this.dataDir, "tenants");
    for (const tenant of existsSync(root) ? readdirSync(root).sort() : []) {
      if (this.closed) break;
      for (const { name } of this.list(tenant)) await this.collection(tenant, name).then(onOpened, (error: unknown) => failed.push({ store: `index:${tenant}/${name}`, error }));
    }
    return failed;
  }

  /** Checkpoint and close every open collection. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const open: Promise<Collection>[] = [];
    for (const indexes of this.tenants.values()) for (const e of indexes.values()) if (e.collection) open.push(e.collection);
    await Promise.all(open.map(async (p) => (await p.catch(() => null))?.close()));
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

  /** The tenant's indexes, read from disk on first use. */
  private indexes(tenant: string): Map<string, Entry> {
    let m = this.tenants.get(tenant);
    if (m === undefined) {
      m = new Map();
      const root = this.tenantDir(tenant);
      if (existsSync(root)) {
        for (const name of readdirSync(root)) {
          const meta = join(root, name, "index.json");
          if (!INDEX_NAME_RE.test(name) || !existsSync(meta)) continue;
          m.set(name, { record: JSON.parse(readFileSync(meta, "utf8")) as IndexRecord, collection: null });
        }
      }
      this.tenants.set(tenant, m);
    }
    return m;
  }
}

function validateCreate(input: CreateIndexInput): IndexRecord {
  if (typeof input !== "object" || input === null) throw new SvcError("E_BAD_REQUEST", "the body must be an object", { field: "body" });
  const { name, dimension } = input;
  if (typeof name !== "string" || !INDEX_NAME_RE.test(name)) {
    throw new SvcError("E_BAD_REQUEST", "name must be 1-45 characters of lowercase letters, digits and '-', starting and ending with a letter or digit", { field: "name" });
  }
  if (typeof dimension !== "number" || !Number.isInteger(dimension) || dimension < 1 || dimension > MAX_DIMENSION) {
    throw new SvcError("E_DIMENSION", `dimension must be an integer in [1, ${MAX_DIMENSION}]`, { field: "dimension" });
  }
  const metric = input.metric ?? "cosine";
  if (!METRICS.includes(metric as never)) throw new SvcError("E_BAD_REQUEST", `metric must be one of ${METRICS.join(", ")}`, { field: "metric" });
  const spec = input.spec ?? { serverless: { cloud: "local", region: "local" } };
  if (typeof spec !== "object" || spec === null || Array.isArray(spec)) throw new SvcError("E_BAD_REQUEST", "spec must be an object such as {serverless: {cloud, region}}", { field: "spec" });
  return {
    name,
    dimension,
    metric: metric as IndexRecord["metric"],
    spec: spec as Record<string, unknown>,
    deletionProtection: input.deletionProtection === undefined ? "disabled" : checkProtection(input.deletionProtection),
    tags: input.tags === undefined || input.tags === null ? null : checkTags(input.tags, null),
    createdAt: Date.now(),
  };
}

function checkProtection(v: unknown): IndexRecord["deletionProtection"] {
  if (v !== "enabled" && v !== "disabled") throw new SvcError("E_BAD_REQUEST", "deletion_protection must be 'enabled' or 'disabled'", { field: "deletion_protection" });
  return v;
}

/** Tags merge into the existing ones; an empty string value removes a tag (Pinecone's rule). */
function checkTags(v: unknown, old: Record<string, string> | null): Record<string, string> {
  if (typeof v !== "object" || v === null || Array.isArray(v)) throw new SvcError("E_BAD_REQUEST", "tags must be an object of strings", { field: "tags" });
  const out: Record<string, string> = { ...old };
  for (const [k, val] of Object.entries(v)) {
    if (typeof val !== "string" || k.length > 80 || val.length > 120) throw new SvcError("E_BAD_REQUEST", `tags.${k} must be a string of at most 120 characters (keys at most 80)`, { field: `tags.${k}` });
    if (val === "") delete out[k];
    else out[k] = val;
  }
  return out;
}
