/**
 * @module backups — backups of a tenant's vector indexes (Pinecone's backup API): each one a consistent copy of an
 * index's collection (engine/backup.ts) with a manifest, under <data>/tenants/<tenant>/backups/<backup_id>/; created in
 * the background, listed, described, deleted, and restored into a new index (`IndexService.restore`).
 */
import { randomBytes, randomUUID } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync } from "node:fs";
import { rename, rm } from "node:fs/promises";
import { join } from "node:path";
import type { CollectionCopy, CopiedFile } from "../engine/collection.js";
import { writeDurable } from "../engine/collection-files.js";
import { SvcError } from "../errors.js";
import { parseStoredJson } from "../safe-values.js";
import { fsyncDir } from "../store/scan.js";
import type { IndexRecord, IndexService } from "./indexes.js";

/** Backup ids are UUIDs as Pinecone's are (lowercase, 8-4-4-4-12 hex); anything else is refused before the disk is touched. */
export const BACKUP_ID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const MANIFEST = "manifest.json";
const MANIFEST_VERSION = 1;
const CREATING = ".creating-";
const DELETED = ".deleted-";

export type BackupStatus = "Initializing" | "Ready" | "Failed";

/** What a backup is, as stored in its manifest.json (files: every file of the copy with its SHA-256). */
export interface BackupRecord {
  version: number;
  backupId: string;
  name: string | null;
  description: string | null;
  status: BackupStatus;
  /** Why a backup failed (status Failed). */
  error?: string;
  /** The source index as it was described when the backup started. */
  index: IndexRecord;
  createdAt: number;
  /** Set once Ready. `files`: the collection copy under <backup>/data, paths relative to it. */
  recordCount?: number;
  namespaceCount?: number;
  sizeBytes?: number;
  /** The source log position the copy holds every write up to. */
  position?: CollectionCopy["position"];
  files?: CopiedFile[];
}

/** A restore (create-index from a backup); svc restores before answering, so every job it lists is Completed. */
export interface RestoreJob {
  restoreJobId: string;
  backupId: string;
  targetIndexName: string;
  createdAt: number;
  completedAt: number;
}

/** Restore jobs kept per tenant (in memory; the oldest dropped first). */
const KEEP_RESTORES = 100;

export interface BackupPage {
  data: BackupRecord[];
  /** The last id of this page when more follow. */
  next?: string;
}

/** What the backup routes call: one node's backups (BackupService) or the cluster's (cluster/backups.ts). */
export interface Backups {
  create(tenant: string, indexName: string, input: BackupText): BackupRecord | Promise<BackupRecord>;
  list(tenant: string, opts: { indexName?: string; limit: number; after?: string }): BackupPage | Promise<BackupPage>;
  describe(tenant: string, id: string): BackupRecord | Promise<BackupRecord>;
  delete(tenant: string, id: string): Promise<void>;
  restore(
    tenant: string,
    id: string,
    input: { name: unknown; tags?: unknown; deletionProtection?: unknown },
  ): Promise<{ backup: BackupRecord; index: IndexRecord; job: RestoreJob }>;
  restoreJobs(tenant: string, opts: { limit: number; after?: string }): { data: RestoreJob[]; next?: string };
  restoreJob(tenant: string, id: string): RestoreJob;
  close(): Promise<void>;
}

/** A backup's name and description as the route checked them (tools/backup-ops.ts: at most MAX_BACKUP_TEXT characters). */
export interface BackupText {
  name?: string | null;
  description?: string | null;
}

/** `all` (newest first) in pages of `limit` after the backup with id `after`. */
export function pageOf(all: BackupRecord[], opts: { limit: number; after?: string }): BackupPage {
  if (opts.after !== undefined) checkId(opts.after, "paginationToken");
  const start = opts.after === undefined ? 0 : all.findIndex((b) => b.backupId === opts.after) + 1;
  const data = all.slice(start, start + opts.limit);
  return start + opts.limit < all.length && data.length > 0 ? { data, next: data.at(-1)!.backupId } : { data };
}

/** The restores done since the server started, by tenant (in memory; the oldest dropped first past KEEP_RESTORES). */
export class RestoreLog {
  private readonly restores = new Map<string, RestoreJob[]>();

  add(tenant: string, job: RestoreJob): void {
    const jobs = this.restores.get(tenant) ?? [];
    jobs.push(job);
    this.restores.set(tenant, jobs.slice(-KEEP_RESTORES));
  }

  /** The tenant's restore jobs, newest first, in pages of `limit` after the id `after`. */
  list(tenant: string, opts: { limit: number; after?: string }): { data: RestoreJob[]; next?: string } {
    if (opts.after !== undefined) checkId(opts.after, "paginationToken");
    const all = [...(this.restores.get(tenant) ?? [])].reverse();
    const start = opts.after === undefined ? 0 : all.findIndex((j) => j.restoreJobId === opts.after) + 1;
    const data = all.slice(start, start + opts.limit);
    return start + opts.limit < all.length && data.length > 0 ? { data, next: data.at(-1)!.restoreJobId } : { data };
  }

  get(tenant: string, id: string): RestoreJob {
    checkId(id, "job_id");
    const job = this.restores.get(tenant)?.find((j) => j.restoreJobId === id);
    if (job === undefined)
      throw new SvcError("E_NOT_FOUND", `no restore job '${id}' (restore jobs are kept in memory since the server started)`, {
        field: "job_id",
      });
    return job;
  }
}

/**
 * One node's backups. A backup runs inside `IndexService.useCollection`, so a delete of the index waits for the
 * copy to end; an index whose delete has started cannot be backed up (E_CONFLICT). A crash during a copy leaves a
 * `.creating-` folder, removed on the next listing: no manifest, no backup.
 */
export class BackupService implements Backups {
  /** Backups still copying or failed (in memory only: a Failed one is gone after a restart), by tenant then id. */
  private readonly pending = new Map<string, Map<string, BackupRecord>>();
  private readonly running = new Set<Promise<unknown>>();
  /** Restores done since the server started. */
  private readonly restores = new RestoreLog();

  constructor(
    private readonly indexes: IndexService,
    private readonly dataDir: string,
  ) {}

  /** Start a backup of index `name`; answers at once with status Initializing (describe shows Ready or Failed). */
  create(tenant: string, indexName: string, input: BackupText): BackupRecord {
    const name = input.name ?? null;
    const description = input.description ?? null;
    if (this.indexes.isDeleting(tenant, indexName))
      throw new SvcError("E_CONFLICT", `index '${indexName}' is being deleted; it cannot be backed up`, { field: "index_name" });
    const index = this.indexes.describe(tenant, indexName);
    const record: BackupRecord = {
      version: MANIFEST_VERSION,
      backupId: randomUUID(),
      name,
      description,
      status: "Initializing",
      index,
      createdAt: Date.now(),
    };
    this.pendingOf(tenant).set(record.backupId, record);
    const run = this.copy(tenant, record).finally(() => this.running.delete(run));
    this.running.add(run);
    return { ...record };
  }

  /** The tenant's backups, newest first, optionally of one source index; pages of `limit` after the id `after`. */
  list(tenant: string, opts: { indexName?: string; limit: number; after?: string }): BackupPage {
    const all = [...this.stored(tenant), ...this.pendingOf(tenant).values()]
      .filter((b) => opts.indexName === undefined || b.index.name === opts.indexName)
      .sort((a, b) => b.createdAt - a.createdAt || a.backupId.localeCompare(b.backupId));
    return pageOf(all, opts);
  }

  describe(tenant: string, id: string): BackupRecord {
    checkId(id);
    const pending = this.pendingOf(tenant).get(id);
    if (pending !== undefined) return { ...pending };
    const path = join(this.root(tenant), id, MANIFEST);
    if (!existsSync(path)) throw new SvcError("E_NOT_FOUND", `no backup '${id}'`, { field: "backup_id" });
    return readManifest(path);
  }

  /** Delete a backup (a running one: E_CONFLICT, wait for it to end). */
  async delete(tenant: string, id: string): Promise<void> {
    const b = this.describe(tenant, id);
    if (b.status === "Initializing")
      throw new SvcError("E_CONFLICT", `backup '${id}' is still being taken; delete it once it is Ready or Failed`, { field: "backup_id" });
    if (this.pendingOf(tenant).delete(id)) return; // a Failed one: nothing on disk
    const root = this.root(tenant);
    const trash = join(root, `${DELETED}${id}-${randomBytes(4).toString("hex")}`);
    await rename(join(root, id), trash);
    await fsyncDir(root);
    await rm(trash, { recursive: true, force: true });
  }

  /** Create index `input.name` from a Ready backup (dimension and metric are the backup's). */
  async restore(
    tenant: string,
    id: string,
    input: { name: unknown; tags?: unknown; deletionProtection?: unknown },
  ): Promise<{ backup: BackupRecord; index: IndexRecord; job: RestoreJob }> {
    const createdAt = Date.now();
    const backup = this.describe(tenant, id);
    if (backup.status !== "Ready")
      throw new SvcError("E_CONFLICT", `backup '${id}' is ${backup.status}, not Ready`, { field: "backup_id" });
    const index = await this.indexes.restore(
      tenant,
      {
        name: input.name,
        dimension: backup.index.dimension,
        metric: backup.index.metric,
        spec: backup.index.spec,
        tags: input.tags ?? backup.index.tags ?? undefined,
        deletionProtection: input.deletionProtection,
      },
      join(this.root(tenant), id, "data"),
      backup.files ?? [],
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

  /** Wait for the copies in flight (before the indexes close). */
  async close(): Promise<void> {
    await Promise.all([...this.running].map((p) => p.catch(() => {}))); // only waits: copy() records its own failure in the job (Failed)
  }

  private async copy(tenant: string, record: BackupRecord): Promise<void> {
    const root = this.root(tenant);
    const tmp = join(root, `${CREATING}${record.backupId}`);
    try {
      mkdirSync(root, { recursive: true });
      const copy = await this.indexes.useCollection(tenant, record.index.name, (c) => c.backup(join(tmp, "data")));
      const done: BackupRecord = {
        ...record,
        status: "Ready",
        recordCount: copy.records,
        namespaceCount: copy.namespaces,
        sizeBytes: copy.bytes,
        position: copy.position,
        files: copy.files, // paths relative to <backup>/data
      };
      await writeDurable(join(tmp, MANIFEST), Buffer.from(JSON.stringify(done, null, 2)));
      await rename(tmp, join(root, record.backupId));
      await fsyncDir(root);
      this.pendingOf(tenant).delete(record.backupId);
    } catch (err) {
      await rm(tmp, { recursive: true, force: true }).catch(() => {}); // the copy's error (recorded below) is the one to tell; a leftover .creating- folder is removed at the next listing
      const why =
        err instanceof SvcError && err.code === "E_NOT_FOUND"
          ? `index '${record.index.name}' was deleted before the copy began`
          : (err as Error).message;
      this.pendingOf(tenant).set(record.backupId, { ...record, status: "Failed", error: why });
    }
  }

  /** Ready backups on disk (a folder copied in from another node is listed too); leftovers of a crash are removed. */
  private stored(tenant: string): BackupRecord[] {
    const root = this.root(tenant);
    if (!existsSync(root)) return [];
    const out: BackupRecord[] = [];
    for (const name of readdirSync(root)) {
      if (name.startsWith(DELETED) || (name.startsWith(CREATING) && !this.pendingOf(tenant).has(name.slice(CREATING.length)))) {
        void rm(join(root, name), { recursive: true, force: true }).catch(() => {}); // a leftover that stays is tried again at the next listing (never listed meanwhile)
        continue;
      }
      if (!BACKUP_ID_RE.test(name) || !existsSync(join(root, name, MANIFEST))) continue;
      try {
        out.push(readManifest(join(root, name, MANIFEST)));
      } catch {
        // an unreadable manifest is not a backup (describe names the error)
      }
    }
    return out;
  }

  private pendingOf(tenant: string): Map<string, BackupRecord> {
    let m = this.pending.get(tenant);
    if (m === undefined) this.pending.set(tenant, (m = new Map()));
    return m;
  }

  private root(tenant: string): string {
    return join(this.dataDir, "tenants", tenant, "backups");
  }
}

/** E_BAD_REQUEST unless `id` has the form of a backup id. */
export function checkId(id: string, field = "backup_id"): void {
  if (!BACKUP_ID_RE.test(id))
    throw new SvcError("E_BAD_REQUEST", `${field} must be an id this server issued (a lowercase UUID)`, { field });
}

function readManifest(path: string): BackupRecord {
  const m = parseStoredJson(readFileSync(path, "utf8")) as BackupRecord;
  if (m.version !== MANIFEST_VERSION || !BACKUP_ID_RE.test(m.backupId) || !Array.isArray(m.files))
    throw new SvcError("E_BACKUP_DAMAGED", `${path}: not a backup manifest of version ${MANIFEST_VERSION}`, { field: "backup_id" });
  return m;
}
