/**
 * @module causal/service — causal models per tenant under <data>/tenants/<tenant>/hd/causal/<name>/ (or, in
 * cluster mode, each a replicated log: app/home-stores.ts): upload/append worlds, query, delete, export/import (.hdscm).
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { rename, rm } from "node:fs/promises";
import { dirname, join, relative } from "node:path";
import { lockDir, writeDurable } from "../../engine/collection-files.js";
import { SvcError } from "../../errors.js";
import { stderrReporter, type Reporter } from "../../store/reporter.js";
import { quarantine, tenantStoreDirs, type StoreRepair } from "../../store/salvage-json.js";
import { fsyncDir } from "../../store/scan.js";
import { decodeHdscm, encodeHdscm } from "./format.js";
import type { Log, LogPosition, OpenLog } from "../../store/log.js";
import { CAUSAL_NAME_RE } from "../input-rules.js";
import { checkAppend, newModel, parseWorlds, withRoom, type CausalModel, type WorldsBody, type WorldsUpload } from "./model.js";
import { answer, parseQuery, type CausalAnswer, type CausalQuery } from "./query.js";

export { CAUSAL_NAME_RE };
const FILE = "model.hdscm";
/**
 * Frames of a replicated model's log (`openLog`): worlds appended (body {nVars, vocab, parents, seed,
 * rows: the Uint16 rows' bytes, little-endian, n}), the model replaced by a .hdscm file ({data}), and
 * dropped ({}). Folded in order from the log's start; a frame that does not apply is skipped alike everywhere.
 */
const FRAME_WORLDS = 1;
const FRAME_IMPORT = 2;
const FRAME_DROP = 3;
/**
 * Cluster mode's local checkpoint of a model (and the file of its snapshot, app/home-stores.ts):
 * `[u64 LE: the log sequence it holds every frame up to][.hdscm of the model, or nothing: no model]`.
 */
export const CAUSAL_CHECKPOINT_FILE = "checkpoint.bin";

export interface CausalOptions {
  /** Cluster mode: each model's replicated log (no local files); folded at the model's first use. */
  openLog?: (tenant: string, name: string) => OpenLog;
  /** Cluster mode: the names of the tenant's models that have a log (some may be dropped; the fold tells). */
  logNames?: (tenant: string) => Promise<string[]>;
  /** With openLog: called with the model's dir before its log is opened here (the leader may put a snapshot there first). */
  beforeOpen?: (tenant: string, name: string, dir: string) => Promise<void>;
  /** Told of a model file that cannot be read (default stderrReporter). */
  reporter?: Reporter;
}

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
  /** Cluster mode: the model's replicated log (writes go there instead of model.hdscm). */
  log: Log | null;
}

/** The model after appending `up` to `old` (null: created by it); checkAppend first. */
function appended(old: CausalModel | null, up: WorldsUpload): CausalModel {
  if (old === null) return newModel(up);
  checkAppend(old, up);
  const rows = withRoom(old, up.n);
  rows.set(up.rows, old.count * old.nVars);
  return { ...old, parents: old.parents ?? up.parents, rows, count: old.count + up.n };
}

/** A model after one replicated frame (pure: every replica folds alike). */
function fold(m: CausalModel | null, type: number, body: unknown): CausalModel | null {
  if (type === FRAME_DROP) return null;
  const b = body as Record<string, unknown>;
  if (type === FRAME_IMPORT) return decodeHdscm(b.data as Uint8Array);
  if (type !== FRAME_WORLDS) return m;
  const bytes = (b.rows as Uint8Array).slice(); // aligned copy
  const up: WorldsUpload = {
    nVars: b.nVars as number,
    vocab: b.vocab as number[],
    parents: (b.parents as number[][] | null) ?? null,
    seed: (b.seed as number | null) ?? null,
    rows: new Uint16Array(bytes.buffer, bytes.byteOffset, bytes.byteLength >> 1),
    n: b.n as number,
  };
  return appended(m, up);
}

/**
 * The whole model is held in memory and persisted as one .hdscm snapshot per write (written to
 * model.hdscm.tmp, fsynced, renamed over model.hdscm, directory fsynced): a crash leaves the old
 * or the new snapshot, never a mix. A write is acknowledged only after the rename is durable.
 */
export class CausalService {
  private readonly entries = new Map<string, Promise<Entry>>();
  private closed = false;

  constructor(
    private readonly dataDir: string,
    private readonly opts: CausalOptions = {},
  ) {}

  /** Cluster mode: the models open here, as [tenant, name]. */
  openModels(): Array<[tenant: string, name: string]> {
    return [...this.entries.keys()].map((k) => k.split("\0") as [string, string]);
  }

  /**
   * Cluster mode: write the local checkpoint of an open model (in its chain) and return it with the log
   * sequence it holds every frame up to; null when the model is not open here.
   */
  async snapshotModel(tenant: string, name: string): Promise<{ seq: number; data: Uint8Array } | null> {
    const p = this.entries.get(`${tenant}\0${name}`);
    const e = p === undefined ? null : await p.catch(() => null);
    if (e === null || e.log === null) return null;
    const log = e.log;
    return this.serial(e, async () => {
      const seq = log.position.offset;
      const data = encodeCheckpoint(seq, e.model);
      await restoreCausalCheckpoint(e.dir, data);
      return { seq, data };
    });
  }

  private dirOf(tenant: string, name: string): string {
    return join(this.dataDir, "tenants", tenant, "hd", "causal", name);
  }

  private checkName(name: string): void {
    if (this.closed) throw new SvcError("E_CLOSED", "the causal service is shut down");
    if (typeof name !== "string" || !CAUSAL_NAME_RE.test(name)) {
      throw new SvcError("E_BAD_REQUEST", "a model name is 1-64 characters of A-Z a-z 0-9 _ . - starting with a letter or digit", {
        field: "name",
      });
    }
  }

  /**
   * The entry of a model that may exist, for a read or a delete: in cluster mode a name the logs never
   * held is E_NOT_FOUND without opening its log (an open stores a fence, which would make a subject
   * for every unknown name read).
   */
  private async existing(tenant: string, name: string): Promise<Entry> {
    this.checkName(name);
    if (this.opts.logNames && !this.entries.has(`${tenant}\0${name}`) && !(await this.opts.logNames(tenant)).includes(name))
      throw new SvcError("E_NOT_FOUND", `no causal model '${name}'`, { field: "name" });
    return this.entry(tenant, name);
  }

  private async entry(tenant: string, name: string): Promise<Entry> {
    this.checkName(name);
    const key = `${tenant}\0${name}`;
    let p = this.entries.get(key);
    if (p === undefined) {
      p = this.opts.openLog ? this.openReplicated(tenant, name) : Promise.resolve(this.openLocal(tenant, name));
      this.entries.set(key, p);
      p.catch(() => this.entries.get(key) === p && this.entries.delete(key)); // tried again on the next call
    }
    const e = await p;
    if (e.damage !== null)
      throw new SvcError("E_STORE_OFFLINE", `causal model '${name}' is damaged and offline: ${e.damage}`, { field: "name" });
    return e;
  }

  /** Cluster mode: fold the model's log from the local checkpoint (if it reads) or from its start. */
  private async openReplicated(tenant: string, name: string): Promise<Entry> {
    const dir = this.dirOf(tenant, name);
    await this.opts.beforeOpen?.(tenant, name, dir);
    let model: CausalModel | null = null;
    let from: LogPosition | undefined;
    try {
      const c = decodeCheckpoint(readFileSync(join(dir, CAUSAL_CHECKPOINT_FILE)));
      ({ model } = c);
      from = { segment: 0, offset: c.seq };
    } catch {
      // none, or unreadable: only a shortcut, the log from its start holds everything
    }
    const { log } = await this.opts.openLog!(
      tenant,
      name,
    )({
      from,
      onFrame: (f) => {
        try {
          model = fold(model, f.type, f.body);
        } catch {
          // a frame that does not apply (never written so by a leader) changes nothing, on every replica alike
        }
      },
    });
    return { dir, model, chain: Promise.resolve(), damage: null, log };
  }

  private openLocal(tenant: string, name: string): Entry {
    const dir = this.dirOf(tenant, name);
    let model: CausalModel | null = null;
    let damage: string | null = null;
    if (existsSync(join(dir, FILE))) {
      lockDir(dir);
      try {
        model = decodeHdscm(readFileSync(join(dir, FILE)));
      } catch (err) {
        damage = err instanceof Error ? err.message : String(err);
        (this.opts.reporter ?? stderrReporter).damage({
          store: `causal:${tenant}/${name}`,
          file: relative(this.dataDir, join(dir, FILE)),
          kind: "unreadable",
          dropped: 0,
          offline: true,
          detail: `${damage}; the model is offline (503 E_STORE_OFFLINE) until \`svc repair\` moves it aside`,
        });
      }
    }
    return { dir, model, chain: Promise.resolve(), damage, log: null };
  }

  private async loaded(tenant: string, name: string): Promise<CausalModel> {
    const m = (await this.existing(tenant, name)).model;
    if (m === null) throw new SvcError("E_NOT_FOUND", `no causal model '${name}'`, { field: "name" });
    return m;
  }

  private serial<T>(e: Entry, fn: () => Promise<T>): Promise<T> {
    const run = e.chain.then(fn, fn);
    e.chain = run.catch(() => undefined); // the chain goes on after a failed write: `run` (returned) carries its failure to the caller
    return run;
  }

  /** Make `m` the model's durable state: in cluster mode `frame` goes to its log, else model.hdscm is rewritten. */
  private async persist(e: Entry, m: CausalModel, frame: [type: number, body: unknown]): Promise<void> {
    if (e.log !== null) {
      await e.log.append(frame[0], frame[1]);
      return;
    }
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

  /** Creates the model, or appends to it (same n_vars and vocabulary; a graph must match the stored one). `body` as the route's schema checked it. */
  async uploadWorlds(tenant: string, name: string, body: WorldsBody): Promise<WorldsResult> {
    const up = parseWorlds(body);
    const e = await this.entry(tenant, name);
    return this.serial(e, async () => {
      const old = e.model;
      const next = appended(old, up);
      const rows = Buffer.from(up.rows.buffer, up.rows.byteOffset, up.rows.byteLength);
      await this.persist(e, next, [FRAME_WORLDS, { nVars: up.nVars, vocab: up.vocab, parents: up.parents, seed: up.seed, rows, n: up.n }]);
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

  /** `body` as the route's schema checked it; what depends on the model is checked here (query.ts parseQuery). */
  async query(tenant: string, name: string, body: CausalQuery): Promise<CausalAnswer> {
    const m = await this.loaded(tenant, name);
    return answer(m, parseQuery(body, m));
  }

  /** Model facts without the rows (rows_total is what a query scans). */
  async describe(
    tenant: string,
    name: string,
  ): Promise<{ n_vars: number; vocab_per_var: number[]; rows_total: number; has_graph: boolean }> {
    const m = await this.loaded(tenant, name);
    return { n_vars: m.nVars, vocab_per_var: [...m.vocab], rows_total: m.count, has_graph: m.parents !== null };
  }

  /** The tenant's model names, sorted (what a schema 2 .svc export carries). */
  async names(tenant: string): Promise<string[]> {
    if (this.opts.logNames) {
      const out: string[] = [];
      for (const name of await this.opts.logNames(tenant)) {
        if (!CAUSAL_NAME_RE.test(name)) continue;
        const e = await this.entry(tenant, name).catch(() => null);
        if (e?.model) out.push(name);
      }
      return out.sort();
    }
    const dir = join(this.dataDir, "tenants", tenant, "hd", "causal");
    if (!existsSync(dir)) return [];
    return readdirSync(dir, { withFileTypes: true })
      .filter((d) => d.isDirectory() && CAUSAL_NAME_RE.test(d.name) && existsSync(join(dir, d.name, FILE)))
      .map((d) => d.name)
      .sort();
  }

  async exportModel(tenant: string, name: string): Promise<Buffer> {
    return encodeHdscm(await this.loaded(tenant, name));
  }

  /** Replaces the model (or creates it) with a decoded .hdscm file. */
  async importModel(
    tenant: string,
    name: string,
    data: Uint8Array,
  ): Promise<{ name: string; imported: number; n_vars: number; vocab_per_var: number[]; has_graph: boolean }> {
    const m = decodeHdscm(data);
    const e = await this.entry(tenant, name);
    return this.serial(e, async () => {
      await this.persist(e, m, [FRAME_IMPORT, { data }]);
      e.model = m;
      return { name, imported: m.count, n_vars: m.nVars, vocab_per_var: [...m.vocab], has_graph: m.parents !== null };
    });
  }

  async deleteModel(tenant: string, name: string): Promise<{ deleted: true }> {
    const e = await this.existing(tenant, name);
    return this.serial(e, async () => {
      if (e.model === null) throw new SvcError("E_NOT_FOUND", `no causal model '${name}'`, { field: "name" });
      if (e.log !== null) {
        await e.log.append(FRAME_DROP, {});
        e.model = null;
        return { deleted: true as const };
      }
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
    for (const p of this.entries.values()) {
      const e = await p.catch(() => null);
      if (e === null) continue;
      await e.chain;
      if (e.log !== null)
        await e.log.close().catch(() => undefined); // every append was acknowledged: nothing to flush
      else if (e.model !== null || e.damage !== null) rmSync(join(e.dir, "LOCK"), { force: true });
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

function encodeCheckpoint(seq: number, model: CausalModel | null): Uint8Array {
  const head = Buffer.alloc(8);
  head.writeBigUInt64LE(BigInt(seq));
  return Buffer.concat([head, model === null ? Buffer.alloc(0) : encodeHdscm(model)]);
}

function decodeCheckpoint(data: Uint8Array): { seq: number; model: CausalModel | null } {
  if (data.length < 8) throw new SvcError("E_IO", `${CAUSAL_CHECKPOINT_FILE} is shorter than its header`);
  const seq = Number(Buffer.from(data.buffer, data.byteOffset, 8).readBigUInt64LE());
  return { seq, model: data.length === 8 ? null : decodeHdscm(data.subarray(8)) };
}

/** The log sequence the checkpoint in model dir `dir` holds every frame up to (0: none, or unreadable). */
export function causalCheckpointSeq(dir: string): number {
  try {
    return decodeCheckpoint(readFileSync(join(dir, CAUSAL_CHECKPOINT_FILE))).seq;
  } catch {
    return 0;
  }
}

/** Replace the checkpoint of model dir `dir` by `data` (checked first): temp file, fdatasync, rename. */
export async function restoreCausalCheckpoint(dir: string, data: Uint8Array): Promise<void> {
  decodeCheckpoint(data);
  mkdirSync(dir, { recursive: true });
  const path = join(dir, CAUSAL_CHECKPOINT_FILE);
  await writeDurable(`${path}.tmp`, Buffer.from(data.buffer, data.byteOffset, data.byteLength));
  await rename(`${path}.tmp`, path);
  await fsyncDir(dir);
}
