/** @module record-local-stores — the records collections of this node, one per tenant at <data>/tenants/<t>/records: opened once (each with its BM25 indexes), listed, closed. */
import { existsSync, mkdirSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { Collection } from "../engine/collection.js";
import type { Kernels } from "../kernels/abi.js";
import type { ScanPool } from "../pool/scan-pool.js";
import type { Reporter } from "../store/reporter.js";
import type { Durability } from "../store/wal.js";
import { STAGING_PREFIX } from "./record-import-export.js";
import { LocalRecordStore } from "./record-store.js";

export interface LocalRecordStoresOptions {
  kernels: Kernels;
  pool: ScanPool;
  durability?: Durability;
  /** The encoder's dimension (every record collection is cosine at it). */
  dimension: number;
  reporter?: Reporter;
}

/**
 * Each tenant's LocalRecordStore, opened on first use (a crash-left import staging namespace is
 * dropped then) and kept until close. A store that fails to open is forgotten (the next use tries
 * again); its failure goes to the caller.
 */
export class LocalRecordStores {
  private readonly byTenant = new Map<string, Promise<LocalRecordStore>>();
  /** The stores opened so far. */
  private readonly opened: LocalRecordStore[] = [];
  private closed = false;

  constructor(
    private readonly dataDir: string,
    private readonly opts: LocalRecordStoresOptions,
  ) {}

  /** BM25 indexes built from a namespace's records so far in these collections (writes update a built index; they never cause a build). */
  get lexicalBuilds(): number {
    return this.opened.reduce((n, s) => n + s.lexicon.builds, 0);
  }

  /** True when the tenant has records on this node (opened, or a directory on disk): false opens nothing. */
  has(tenant: string): boolean {
    return this.byTenant.has(tenant) || existsSync(join(this.dataDir, "tenants", tenant, "records"));
  }

  /** The stores opened or opening, in no set order (a failed one resolves to null). */
  all(): Array<Promise<LocalRecordStore | null>> {
    return [...this.byTenant.values()].map((p) => p.catch(() => null)); // a store that failed to open: its failure went to its caller
  }

  get(tenant: string): Promise<LocalRecordStore> {
    let p = this.byTenant.get(tenant);
    if (p === undefined) {
      const dir = join(this.dataDir, "tenants", tenant, "records");
      mkdirSync(dir, { recursive: true });
      p = Collection.open(dir, {
        kernels: this.opts.kernels,
        pool: this.opts.pool,
        durability: this.opts.durability,
        dimension: this.opts.dimension,
        metric: "cosine",
        damage: { store: `records:${tenant}`, root: this.dataDir },
        reporter: this.opts.reporter,
      }).then(async (c) => {
        // An import interrupted by a crash leaves its staging namespace: drop it.
        for (const ns of c.namespaces()) if (ns.startsWith(STAGING_PREFIX)) await c.delete(ns, { deleteAll: true });
        const s = new LocalRecordStore(c);
        this.opened.push(s);
        return s;
      });
      p.catch(() => this.byTenant.delete(tenant));
      this.byTenant.set(tenant, p);
    }
    return p;
  }

  /** Open (replay) every tenant's records collection on disk; what failed is returned, not thrown. */
  async openAll(onOpened: () => void = () => {}): Promise<Array<{ store: string; error: unknown }>> {
    const failed: Array<{ store: string; error: unknown }> = [];
    const root = join(this.dataDir, "tenants");
    for (const tenant of existsSync(root) ? readdirSync(root).sort() : []) {
      if (this.closed) break;
      if (existsSync(join(root, tenant, "records")))
        await this.get(tenant).then(onOpened, (error: unknown) => failed.push({ store: `records:${tenant}`, error }));
    }
    return failed;
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all(this.all().map(async (p) => (await p)?.close())); // one that failed to open has nothing to close
  }
}
