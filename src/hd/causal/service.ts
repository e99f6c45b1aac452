/** @module causal/service — causal models per tenant under <data>/tenants/<tenant>/hd/causal/<name>/: upload/append worlds, query, delete, export/import (.hdscm). */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { rename, rm } from "node:fs/promises";
import { dirname, join, relative } from "node:path";
import { lockDir, writeDurable } from "../../engine/collection-files.js";
import { SvcError } from "../../errors.js";
import { stderrReporter, type Reporter } from "../../store/reporter.js";
import { quarantine, tenantStoreDirs, type StoreRepair } from "../../store/salvage-json.js";
import { fsyncDir } from "../../store/scan.js";
import { decodeHdscm, encodeHdscm } from "./format.js";
import { checkAppend, newModel, parseWorlds, withRoom, type CausalModel } from "./model.js";
import { answer, parseQuery, type CausalAnswer } from "./query.js";

export const CAUSAL_NAME_RE = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
const FILE = "model.hdscm";

export interface WorldsResult {
  name: string;
  n_vars: number;
  vocab_per_var: number[];
  has_graph: boolean;
  seed: number;
  rows_added: number;
  rows_total: number;
  created: boolean;
}

interface Entry {
  dir: string;
  model: CausalModel | null;
  /** Writes to one model run one after another. */
  chain: Promise<unknown>;
  /** Why model.hdscm cannot be read (the model is offline until `svc repair`), or null. */
  damage: string | null;
}

/**
 * The whole model is held in memory and persisted as one .hdscm snapshot per write (written to
 * model.hdscm.tmp, fsynced, renamed over model.hdscm, directory fsynced): a crash leaves the old
 * or the new snapshot, never a mix. A write is acknowledged only after the rename is durable.
 */
export class CausalService {
  private readonly entries = new Map<string, Entry>();
  /** Damaged stores already reported. */
  private closed = false;

  /** `reporter`: told of a model file that cannot be read. */
  constructor(
    private readonly dataDir: string,
    private readonly reporter: Reporter = stderrReporter,
  ) {}

  private dirOf(tenant: string, name: string): string {
    return join(this.dataDir, "tenants", tenant, "hd", "causal", name);
  }

  private entry(tenant: string, name: string): Entry {
    if (this.closed) throw new SvcError("E_CLOSED", "the causal service is shut down");
    if (typeof name !== "string" || !CAUSAL_NAME_RE.test(name)) {
      throw new SvcError("E_BAD_REQUEST", "a model name is 1-64 characters of A-Z a-z 0-9 _ . - starting with a letter or digit", {
        field: "name",
      });
    }
    const key = `${tenant}\0${name}`;
    let e = this.entries.get(key);
    if (e === undefined) {
      const dir = this.dirOf(tenant, name);
      let model: CausalModel | null = null;
      let damage: string | null = null;
      if (existsSync(join(dir, FILE))) {
        lockDir(dir);
        try {
          model = decodeHdscm(readFileSync(join(dir, FILE)));
        } catch (err) {
          damage = err instanceof Error ? err.message : String(err);
          this.reporter.damage({
            store: `causal:${tenant}/${name}`,
            file: relative(this.dataDir, join(dir, FILE)),
            kind: "unreadable",
            dropped: 0,
            offline: true,
            detail: `${damage}; the model is offline (503 E_STORE_OFFLINE) until \`svc repair\` moves it aside`,
          });
        }
      }
      e = { dir, model, chain: Promise.resolve(), damage };
      this.entries.set(key, e);
    }
    if (e.damage !== null)
      throw new SvcError("E_STORE_OFFLINE", `causal model '${name}' is damaged and offline: ${e.damage}`, { field: "name" });
    return e;
  }

  private loaded(tenant: string, name: string): CausalModel {
    const m = this.entry(tenant, name).model;
    if (m === null) throw new SvcError("E_NOT_FOUND", `no causal model '${name}'`, { field: "name" });
    return m;
  }

  private serial<T>(e: Entry, fn: () => Promise<T>): Promise<T> {
    const run = e.chain.then(fn, fn);
    e.chain = run.catch(() => undefined); // the chain goes on after a failed write: `run` (returned) carries its failure to the caller
    return run;
  }

  private async persist(e: Entry, m: CausalModel): Promise<void> {
    const fresh = !existsSync(e.dir);
    if (fresh) {
      mkdirSync(e.dir, { recursive: true });
      await fsyncDir(dirname(e.dir));
    }
    if (e.model === null) lockDir(e.dir);
    const tmp = join(e.dir, `${FILE}.tmp`);
    await writeDurable(tmp, encodeHdscm(m));
    await rename(tmp, join(e.dir, FILE));
    await fsyncDir(e.dir);
  }

  /** Creates the model, or appends to it (same n_vars and vocabulary; a graph must match the stored one). */
  async uploadWorlds(tenant: string, name: string, body: unknown): Promise<WorldsResult> {
    const e = this.entry(tenant, name);
    const up = parseWorlds(body);
    return this.serial(e, async () => {
      const old = e.model;
      let next: CausalModel;
      if (old === null) {
        next = newModel(up);
      } else {
        checkAppend(old, up);
        const rows = withRoom(old, up.n);
        rows.set(up.rows, old.count * old.nVars);
        next = { ...old, parents: old.parents ?? up.parents, rows, count: old.count + up.n };
      }
      await this.persist(e, next);
      e.model = next;
      return {
        name,
        n_vars: next.nVars,
        vocab_per_var: [...next.vocab],
        has_graph: next.parents !== null,
        seed: next.seed,
        rows_added: up.n,
        rows_total: next.count,
        created: old === null,
      };
    });
  }

  query(tenant: string, name: string, body: unknown): CausalAnswer {
    const m = this.loaded(tenant, name);
    return answer(m, parseQuery(body, m));
  }

  /** Model facts without the rows (rows_total is what a query scans). */
  describe(tenant: string, name: string): { n_vars: number; vocab_per_var: number[]; rows_total: number; has_graph: boolean } {
    const m = this.loaded(tenant, name);
    return { n_vars: m.nVars, vocab_per_var: [...m.vocab], rows_total: m.count, has_graph: m.parents !== null };
  }

  /** The tenant's model names, sorted (what a schema 2 .svc export carries). */
  names(tenant: string): string[] {
    const dir = join(this.dataDir, "tenants", tenant, "hd", "causal");
    if (!existsSync(dir)) return [];
    return readdirSync(dir, { withFileTypes: true })
      .filter((d) => d.isDirectory() && CAUSAL_NAME_RE.test(d.name) && existsSync(join(dir, d.name, FILE)))
      .map((d) => d.name)
      .sort();
  }

  exportModel(tenant: string, name: string): Buffer {
    return encodeHdscm(this.loaded(tenant, name));
  }

  /** Replaces the model (or creates it) with a decoded .hdscm file. */
  async importModel(
    tenant: string,
    name: string,
    data: Uint8Array,
  ): Promise<{ name: string; imported: number; n_vars: number; vocab_per_var: number[]; has_graph: boolean }> {
    const e = this.entry(tenant, name);
    const m = decodeHdscm(data);
    return this.serial(e, async () => {
      await this.persist(e, m);
      e.model = m;
      return { name, imported: m.count, n_vars: m.nVars, vocab_per_var: [...m.vocab], has_graph: m.parents !== null };
    });
  }

  async deleteModel(tenant: string, name: string): Promise<{ deleted: true }> {
    const e = this.entry(tenant, name);
    return this.serial(e, async () => {
      if (e.model === null) throw new SvcError("E_NOT_FOUND", `no causal model '${name}'`, { field: "name" });
      // the snapshot goes first (atomic): a crash after it leaves a directory that is not a model
      await rm(join(e.dir, FILE), { force: true });
      await fsyncDir(e.dir);
      await rm(e.dir, { recursive: true, force: true });
      e.model = null;
      return { deleted: true as const };
    });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const e of this.entries.values()) {
      await e.chain;
      if (e.model !== null || e.damage !== null) rmSync(join(e.dir, "LOCK"), { force: true });
    }
    this.entries.clear();
  }
}

/**
 * `svc repair` of every causal model under `<dataDir>/tenants`: a model.hdscm that does not decode
 * is one unreadable record; it is moved aside to `model.hdscm.damaged-<ms>` (the name then answers
 * 404 and can be imported again from an export).
 */
export function repairCausalModels(dataDir: string): StoreRepair[] {
  const out: StoreRepair[] = [];
  for (const { tenant, name, dir } of tenantStoreDirs(dataDir, "hd", "causal")) {
    const file = join(dir, FILE);
    if (!existsSync(file)) continue;
    try {
      decodeHdscm(readFileSync(file));
    } catch (err) {
      const backup = quarantine(file);
      out.push({
        store: `causal:${tenant}/${name}`,
        file: relative(dataDir, file),
        action: "quarantined",
        kept: 0,
        dropped: 1,
        backup,
        detail: err instanceof Error ? err.message : String(err),
      });
    }
  }
  return out;
}
