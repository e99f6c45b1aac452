/**
 * @module hd/kg/service — KnowledgeGraphs: tenant-scoped named graphs under <data>/tenants/<tenant>/hd/kg/<name>/,
 * each a graph.json (seed) plus a WAL of fact add/delete frames and a checkpoint (snapshot.hdks: facts, object
 * rows and counters as of a WAL position). Opening loads the snapshot and replays only the later frames.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { rename, rm } from "node:fs/promises";
import { basename, join, relative } from "node:path";
import { lockDir, writeDurable } from "../../engine/collection-files.js";
import { SvcError } from "../../errors.js";
import { parseStoredJson } from "../../safe-values.js";
import type { Kernels } from "../../kernels/abi.js";
import type { Log, OpenLog } from "../../store/log.js";
import { reportWalLosses } from "../../store/damage.js";
import { stderrReporter, type Reporter } from "../../store/reporter.js";
import { quarantineAndRewrite, tenantStoreDirs, type StoreRepair } from "../../store/salvage-json.js";
import { fsyncDir } from "../../store/scan.js";
import { Wal, type Durability, type WalPosition } from "../../store/wal.js";
import { Graph, type Fact, type KgAnswer, type ShardStats } from "./graph.js";
import { decodeHdkg, encodeHdkg, type HdkgGraph } from "./hdkg-file.js";
import { decodeSnapshot, encodeSnapshot, SNAPSHOT_FILE } from "./snapshot.js";
import { KG_DEFAULT_SEED } from "./vectors.js";
import { KG_NAME_RE, MAX_FACTS_PER_REQUEST, MAX_TERM_BYTES } from "../input-rules.js";

/** WAL frame types: body {f: [relation, subject, object][]}. */
const FRAME_ADD = 1;
const FRAME_DELETE = 2;
/** Replicated logs only (`openLog`): the graph (re)created with body {seed}, and dropped (body {}); they stand for graph.json and its removal. */
const FRAME_CREATE = 3;
const FRAME_DROP = 4;
/** Default WAL bytes between checkpoints: 1 MiB of add frames is ~35k facts, ~3.5 s of replay after a crash. */
export const KG_CHECKPOINT_BYTES = 1024 * 1024;

interface Open {
  graph: Graph;
  wal: Log;
  dir: string;
  /** Serializes writes and drops of this graph. */
  chain: Promise<unknown>;
  /** WAL frame bytes not covered by the snapshot (replayed on open or appended since). */
  pending: number;
  /** Replay skipped damaged frames: no snapshot is written (it would drop them) until `svc repair`. */
  unrepaired: boolean;
  /** Deleted (or being deleted): reads as absent; a write waiting in its chain answers 404. */
  dropped: boolean;
}

export interface KgStats {
  name: string;
  relations: ShardStats[];
  facts: number;
  entities: number;
}

export class KnowledgeGraphs {
  private readonly dataDir: string;
  private readonly kernels: Kernels;
  private readonly durability: Durability | undefined;
  private readonly checkpointBytes: number;
  private readonly reporter: Reporter;
  private readonly openLog: ((tenant: string, name: string) => OpenLog) | undefined;
  private readonly beforeOpen: ((tenant: string, name: string, dir: string) => Promise<void>) | undefined;
  private readonly logNames: ((tenant: string) => Promise<string[]>) | undefined;
  private readonly graphs = new Map<string, Promise<Open | null>>();
  private closed = false;

  /**
   * checkpointBytes: WAL bytes after which a write also checkpoints the graph (default 1 MiB); close checkpoints too.
   * openLog (cluster mode, app/home-stores.ts): each graph's log, replicated; the graph's seed is its
   * FRAME_CREATE frame there (no graph.json) and a delete is a FRAME_DROP frame, so the log alone
   * says which graphs exist; the local snapshot.hdks only shortens the replay (its position is the stream's).
   * beforeOpen (with openLog): called with the graph's dir before a graph is opened here (cluster mode
   * writes the newest snapshot.hdks of the object store there when the local one is older).
   * reporter: told of damage found in a graph's files (default stderrReporter).
   */
  constructor(
    dataDir: string,
    opts: {
      kernels: Kernels;
      durability?: Durability;
      checkpointBytes?: number;
      openLog?: (tenant: string, name: string) => OpenLog;
      beforeOpen?: (tenant: string, name: string, dir: string) => Promise<void>;
      reporter?: Reporter;
      /** With openLog: the names of the tenant's graphs that have a log (some may be dropped: the fold tells). */
      logNames?: (tenant: string) => Promise<string[]>;
    },
  ) {
    this.dataDir = dataDir;
    this.openLog = opts.openLog;
    this.beforeOpen = opts.beforeOpen;
    this.logNames = opts.logNames;
    this.kernels = opts.kernels;
    this.durability = opts.durability;
    this.checkpointBytes = opts.checkpointBytes ?? KG_CHECKPOINT_BYTES;
    this.reporter = opts.reporter ?? stderrReporter;
  }

  /**
   * Add facts (the graph is created by its first facts); returns {added, relations: relations touched}.
   * `facts` as the route's schema checked them (tools/hd-ops.ts: 1..MAX_FACTS_PER_REQUEST facts of 1..MAX_TERM_BYTES-byte terms).
   */
  async addFacts(tenant: string, name: string, { facts }: { facts: Fact[] }): Promise<{ added: number; relations: string[] }> {
    checkGraphName(name);
    const g = (await this.open(tenant, name, true))!;
    return this.write(g, async () => {
      const added = g.graph.add(facts);
      // Logged after applying (add dedupes); a failed append is undone exactly before the error surfaces.
      if (added.length > 0)
        await g.wal.append(FRAME_ADD, { f: added.map((f) => [f.relation, f.subject, f.object]) }).catch((err: unknown) => {
          g.graph.delete(added);
          throw err;
        });
      return { added: added.length, relations: [...new Set(facts.map((f) => f.relation))] };
    });
  }

  /** delete_fact: subtract present facts exactly (checked as for addFacts); returns {deleted}. */
  async deleteFacts(tenant: string, name: string, { facts }: { facts: Fact[] }): Promise<{ deleted: number }> {
    checkGraphName(name);
    const g = await this.mustOpen(tenant, name);
    return this.write(g, async () => {
      const removed = g.graph.delete(facts);
      if (removed.length > 0)
        await g.wal.append(FRAME_DELETE, { f: removed.map((f) => [f.relation, f.subject, f.object]) }).catch((err: unknown) => {
          g.graph.add(removed);
          throw err;
        });
      return { deleted: removed.length };
    });
  }

  /** The object of (subject, relation); both terms as the route's schema checked them (tools/hd-ops.ts). */
  async query(tenant: string, name: string, { subject, relation }: { subject: string; relation: string }): Promise<KgAnswer> {
    checkGraphName(name);
    const g = await this.mustOpen(tenant, name);
    const { object, confidence } = g.graph.query(subject, relation);
    return { object, confidence };
  }

  async stats(tenant: string, name: string): Promise<KgStats> {
    checkGraphName(name);
    const g = await this.mustOpen(tenant, name);
    return { name, ...g.graph.stats() };
  }

  async export(tenant: string, name: string): Promise<Buffer> {
    checkGraphName(name);
    const g = await this.mustOpen(tenant, name);
    return encodeHdkg(g.graph.snapshot());
  }

  /** Replace the graph (created if absent) by the content of a .hdkg file. */
  async import(tenant: string, name: string, data: Uint8Array): Promise<{ imported: number; relations: number }> {
    checkGraphName(name);
    const file = checkHdkg(data);
    const facts: Fact[] = [];
    for (const r of file.relations) for (const [s, o] of r.facts) facts.push({ relation: r.name, subject: s, object: o });
    await this.drop(tenant, name, false);
    const g = (await this.open(tenant, name, true, file.seed))!;
    return this.write(g, async () => {
      const added = g.graph.add(facts);
      for (let i = 0; i < added.length; i += MAX_FACTS_PER_REQUEST) {
        await g.wal.append(FRAME_ADD, { f: added.slice(i, i + MAX_FACTS_PER_REQUEST).map((f) => [f.relation, f.subject, f.object]) });
      }
      return { imported: added.length, relations: file.relations.length };
    });
  }

  /** The tenant's graph names, sorted (what a schema 2 .svc export carries); in cluster mode from the replicated logs. */
  async names(tenant: string): Promise<string[]> {
    if (this.logNames) {
      const out: string[] = [];
      for (const name of await this.logNames(tenant)) {
        if (!KG_NAME_RE.test(name)) continue;
        // the fold says whether the graph exists (a dropped graph keeps its log); a damaged one is left out as in a listing of dirs
        const g = await this.open(tenant, name, false).catch(() => null);
        if (g !== null && !g.dropped) out.push(name);
      }
      return out.sort();
    }
    const dir = join(this.dataDir, "tenants", tenant, "hd", "kg");
    if (!existsSync(dir)) return [];
    return readdirSync(dir, { withFileTypes: true })
      .filter((d) => d.isDirectory() && KG_NAME_RE.test(d.name) && existsSync(join(dir, d.name, "graph.json")))
      .map((d) => d.name)
      .sort();
  }

  /** Drop a graph: its files and memory. 404 when there is none. */
  async delete(tenant: string, name: string): Promise<{ deleted: boolean }> {
    checkGraphName(name);
    await this.drop(tenant, name, true);
    return { deleted: true };
  }

  async close(): Promise<void> {
    this.closed = true;
    const all = [...this.graphs.values()];
    this.graphs.clear();
    for (const p of all) {
      const g = await p.catch(() => null); // one that failed to open has nothing to close (its failure reached its caller)
      if (g === null || g.dropped) continue;
      await g.chain.catch(() => undefined); // only waits: each write's failure went to its caller
      const what = `knowledge graph ${relative(this.dataDir, g.dir)}`;
      if (g.pending > 0) await this.checkpoint(g).catch((err) => this.reporter.background(err, `checkpoint of ${what} on close`)); // the log still holds its writes
      await g.wal.close().catch((err) => this.reporter.background(err, `log close of ${what}`));
      rmSync(join(g.dir, "LOCK"), { force: true });
      g.graph.dispose();
    }
  }

  /** The graphs open here now (tenant, name): cluster mode snapshots these (app/home-stores.ts). */
  openGraphs(): Array<[tenant: string, name: string]> {
    return [...this.graphs.keys()].map((id) => id.split("\u0000") as [string, string]);
  }

  /**
   * Checkpoint an open graph (in its chain) and return snapshot.hdks with the log position it holds
   * every frame up to; null when the graph is not open here (or was dropped).
   */
  async snapshotGraph(tenant: string, name: string): Promise<{ seq: number; data: Uint8Array } | null> {
    const p = this.graphs.get(`${tenant}\u0000${name}`);
    const g = p === undefined ? null : await p.catch(() => null);
    if (g === null || g.dropped) return null;
    const run = g.chain.then(async () => {
      if (g.dropped) return null;
      await this.checkpoint(g);
      const data = new Uint8Array(readFileSync(join(g.dir, SNAPSHOT_FILE)));
      return { seq: decodeSnapshot(data, SNAPSHOT_FILE).wal.offset, data };
    });
    g.chain = run.catch(() => undefined);
    return run;
  }

  private dirOf(tenant: string, name: string): string {
    return join(this.dataDir, "tenants", tenant, "hd", "kg", name);
  }

  private async mustOpen(tenant: string, name: string): Promise<Open> {
    const g = await this.open(tenant, name, false);
    if (g === null) throw new SvcError("E_NOT_FOUND", `no knowledge graph '${name}'`, { field: "name" });
    return g;
  }

  private open(tenant: string, name: string, create: boolean, seed = KG_DEFAULT_SEED): Promise<Open | null> {
    if (this.closed) return Promise.reject(new SvcError("E_CLOSED", "the knowledge graph service is closed"));
    const id = `${tenant}\u0000${name}`;
    const cached = this.graphs.get(id);
    if (cached !== undefined) {
      return cached.then(async (g) => {
        if (g !== null && !g.dropped) return g;
        if (!create) return null;
        if (g !== null) await g.chain.catch(() => undefined); // its drop finishes before the graph is made anew
        if (this.graphs.get(id) === cached) this.graphs.delete(id);
        return this.open(tenant, name, create, seed);
      });
    }
    const p = this.openLog ? this.loadReplicated(tenant, name, create, seed) : this.load(this.dirOf(tenant, name), create, seed);
    this.graphs.set(id, p);
    // "no such graph" is not kept: reads of ever new names must not grow the map
    void p.then((g) => g === null && this.graphs.get(id) === p && this.graphs.delete(id)).catch(() => undefined); // failures: handled below
    // A damaged graph stays offline (cached, reported once); other failures are retried on the next call.
    p.catch((e: unknown) => (e instanceof SvcError && e.code === "E_STORE_OFFLINE" ? undefined : this.graphs.delete(id)));
    return p;
  }

  private async load(dir: string, create: boolean, seed: number): Promise<Open | null> {
    const meta = join(dir, "graph.json");
    if (!existsSync(meta)) {
      if (!create) return null;
      mkdirSync(dir, { recursive: true });
      const tmp = `${meta}.tmp`;
      await writeDurable(tmp, Buffer.from(JSON.stringify({ version: 1, seed: seed >>> 0 })));
      await rename(tmp, meta);
      await fsyncDir(dir);
    }
    const store = `kg:${relative(join(this.dataDir, "tenants"), dir).replace("/hd/kg/", "/")}`;
    const offline = (file: string, why: string): SvcError => {
      this.reporter.damage({
        store,
        file: relative(this.dataDir, file),
        kind: "unreadable",
        dropped: 0,
        offline: true,
        detail: `${why}; the graph is offline (503 E_STORE_OFFLINE) until \`svc repair\` or a restore`,
      });
      return new SvcError("E_STORE_OFFLINE", `knowledge graph '${basename(dir)}' is damaged and offline: ${why}`, { field: "name" });
    };
    const conf = readGraphConf(meta);
    if (conf instanceof Error) throw offline(meta, conf.message);
    lockDir(dir);
    const graph = new Graph(this.kernels, conf.seed);
    try {
      const snapPath = join(dir, SNAPSHOT_FILE);
      let from: WalPosition | undefined;
      if (existsSync(snapPath)) {
        let snap: ReturnType<typeof decodeSnapshot>;
        try {
          snap = decodeSnapshot(readFileSync(snapPath), snapPath);
        } catch (e) {
          throw offline(snapPath, e instanceof Error ? e.message : String(e));
        }
        if (snap.graph.seed !== conf.seed >>> 0)
          throw offline(snapPath, `snapshot has seed ${snap.graph.seed}, graph.json has ${conf.seed}`);
        graph.restore(snap.graph, snap.objects, snap.counters);
        from = snap.wal;
      }
      let pending = 0;
      const { wal, report } = await Wal.open(join(dir, "wal"), {
        durability: this.durability,
        from,
        salvage: true,
        onFrame: (f) => {
          if (f.end.segment === f.start.segment) pending += f.end.offset - f.start.offset;
          const rows = (f.body as { f: Array<[string, string, string]> }).f;
          const facts = rows.map(([relation, subject, object]) => ({ relation, subject, object }));
          if (f.type === FRAME_ADD) graph.add(facts);
          else if (f.type === FRAME_DELETE) graph.delete(facts);
        },
      });
      reportWalLosses(this.reporter, store, this.dataDir, report);
      return { graph, wal, dir, chain: Promise.resolve(), pending, unrepaired: report.damaged.some((d) => !d.beforeFrom), dropped: false };
    } catch (err) {
      graph.dispose();
      rmSync(join(dir, "LOCK"), { force: true });
      throw err;
    }
  }

  /**
   * Cluster mode: fold the graph's replicated log from the local checkpoint (if any): FRAME_CREATE
   * starts the graph anew with its seed, FRAME_DROP removes it. Absent at the end: null, or (create)
   * a FRAME_CREATE is appended first. The local dir holds only LOCK and snapshot.hdks.
   */
  private async loadReplicated(tenant: string, name: string, create: boolean, seed: number): Promise<Open | null> {
    // a name the logs never held is absent without opening its log (an open stores a fence: a subject for every unknown name read)
    if (!create && this.logNames && !(await this.logNames(tenant)).includes(name)) return null;
    const dir = this.dirOf(tenant, name);
    await this.beforeOpen?.(tenant, name, dir);
    mkdirSync(dir, { recursive: true });
    lockDir(dir);
    let graph: Graph | null = null;
    let log: Log | null = null;
    try {
      const snapPath = join(dir, SNAPSHOT_FILE);
      let from: WalPosition | undefined;
      if (existsSync(snapPath)) {
        // a damaged local checkpoint is only a shortcut: the log from its start holds everything
        try {
          const snap = decodeSnapshot(readFileSync(snapPath), snapPath);
          graph = new Graph(this.kernels, snap.graph.seed);
          graph.restore(snap.graph, snap.objects, snap.counters);
          from = snap.wal;
        } catch {
          graph?.dispose();
          graph = null;
        }
      }
      let pending = 0;
      ({ log } = await this.openLog!(
        tenant,
        name,
      )({
        from,
        onFrame: (f) => {
          pending++;
          if (f.type === FRAME_CREATE) {
            graph?.dispose();
            graph = new Graph(this.kernels, (f.body as { seed: number }).seed >>> 0);
          } else if (f.type === FRAME_DROP) {
            graph?.dispose();
            graph = null;
          } else if (graph !== null && (f.type === FRAME_ADD || f.type === FRAME_DELETE)) {
            const facts = (f.body as { f: Array<[string, string, string]> }).f.map(([relation, subject, object]) => ({
              relation,
              subject,
              object,
            }));
            if (f.type === FRAME_ADD) graph.add(facts);
            else graph.delete(facts);
          }
        },
      }));
      if (graph === null) {
        if (!create) {
          await log.close();
          rmSync(dir, { recursive: true, force: true });
          return null;
        }
        await log.append(FRAME_CREATE, { seed: seed >>> 0 });
        graph = new Graph(this.kernels, seed >>> 0);
      }
      return { graph, wal: log, dir, chain: Promise.resolve(), pending, unrepaired: false, dropped: false };
    } catch (err) {
      (graph as Graph | null)?.dispose();
      await log?.close().catch(() => undefined); // the open failed: the error rethrown below is the one to report, a close of the half-open log adds nothing
      rmSync(join(dir, "LOCK"), { force: true });
      throw err;
    }
  }

  /** Run a write in the graph's chain; once checkpointBytes of WAL have accumulated, checkpoint after it. */
  private write<T>(g: Open, run: () => Promise<T>): Promise<T> {
    const next = g.chain.then(async () => {
      if (g.dropped) throw new SvcError("E_NOT_FOUND", "the knowledge graph was deleted", { field: "name" });
      const before = g.wal.stats.bytes;
      const out = await run();
      g.pending += g.wal.stats.bytes - before;
      if (g.pending >= this.checkpointBytes) await this.checkpoint(g);
      return out;
    });
    g.chain = next.catch(() => undefined); // the chain goes on after a failed write: `next` (returned) carries its failure to the caller
    return next;
  }

  /**
   * Write snapshot.hdks atomically (temp file, fdatasync, rename, fsync dir) as of the WAL's current position,
   * then drop the WAL segments it covers. Runs inside the graph's chain (or after it, on close), so the graph
   * holds exactly the frames up to that position. The WAL is synced first so the snapshot never runs ahead of it.
   */
  private async checkpoint(g: Open): Promise<void> {
    if (g.unrepaired) return g.wal.sync();
    const pos = g.wal.position;
    await g.wal.sync();
    const snap = g.graph.snapshot();
    const counters = snap.relations.map((r) => g.graph.counters(r.name)!);
    const bytes = encodeSnapshot({ wal: pos, graph: snap, objects: g.graph.objectNames(), counters });
    const path = join(g.dir, SNAPSHOT_FILE);
    const tmp = `${path}.tmp`;
    await writeDurable(tmp, bytes);
    await rename(tmp, path);
    await fsyncDir(g.dir);
    g.pending = 0;
    await g.wal.dropBefore(pos);
  }

  private async drop(tenant: string, name: string, mustExist: boolean): Promise<void> {
    const id = `${tenant}\u0000${name}`;
    const g = await this.open(tenant, name, false);
    if (g === null) {
      if (mustExist) throw new SvcError("E_NOT_FOUND", `no knowledge graph '${name}'`, { field: "name" });
      return;
    }
    // Marked at once, so a concurrent drop finds nothing and a concurrent write answers 404; the
    // entry stays cached (reading as absent) until the files are gone, so no open reads them meanwhile.
    g.dropped = true;
    const cached = this.graphs.get(id);
    const done = g.chain.then(async () => {
      // replicated: the drop is a frame; refused (a deposed leader, no quorum), the graph stays
      if (this.openLog)
        await g.wal.append(FRAME_DROP, {}).catch((err: unknown) => {
          g.dropped = false;
          throw err;
        });
      await g.wal.close().catch(() => undefined); // its files are removed next: nothing a failed close left behind is kept
      g.graph.dispose();
      await rm(g.dir, { recursive: true, force: true });
    });
    g.chain = done.catch(() => undefined); // the chain goes on after a failed drop: `done` (awaited below) carries its failure to the caller
    await done;
    if (this.graphs.get(id) === cached) this.graphs.delete(id);
  }
}

/** graph.json's seed, or why it cannot be read. */
function readGraphConf(path: string): { seed: number } | Error {
  try {
    const conf = parseStoredJson(readFileSync(path, "utf8")) as { seed?: unknown };
    if (typeof conf !== "object" || conf === null || !Number.isSafeInteger(conf.seed)) return new Error(`${path} has no integer seed`);
    return conf as { seed: number };
  } catch (e) {
    return new Error(`${path} is not valid JSON (${e instanceof Error ? e.message : String(e)})`);
  }
}

/**
 * `svc repair` of every knowledge graph's files under `<dataDir>/tenants` (their WALs are repaired
 * as WALs): an unreadable graph.json is rewritten from the snapshot's seed; an unreadable snapshot
 * holds facts nothing else has, so it is left for a restore (.hdkg export or backup).
 */
export function repairKnowledgeGraphs(dataDir: string): StoreRepair[] {
  const out: StoreRepair[] = [];
  for (const { tenant: t, name, dir } of tenantStoreDirs(dataDir, "hd", "kg")) {
    const meta = join(dir, "graph.json");
    const store = `kg:${t}/${name}`;
    const snapPath = join(dir, SNAPSHOT_FILE);
    let snap: ReturnType<typeof decodeSnapshot> | Error | null = null;
    if (existsSync(snapPath)) {
      try {
        snap = decodeSnapshot(readFileSync(snapPath), snapPath);
      } catch (e) {
        snap = e instanceof Error ? e : new Error(String(e));
      }
    }
    if (snap instanceof Error)
      out.push({ store, file: relative(dataDir, snapPath), action: "refused", kept: 0, dropped: 0, detail: `${snap.message}` });
    if (!existsSync(meta)) continue;
    const conf = readGraphConf(meta);
    if (!(conf instanceof Error)) continue;
    if (snap === null || snap instanceof Error) {
      out.push({
        store,
        file: relative(dataDir, meta),
        action: "refused",
        kept: 0,
        dropped: 0,
        detail: `${conf.message}; no readable snapshot holds the seed: restore the graph from an .hdkg export`,
      });
      continue;
    }
    const backup = quarantineAndRewrite(meta, JSON.stringify({ version: 1, seed: snap.graph.seed }));
    out.push({
      store,
      file: relative(dataDir, meta),
      action: "rewritten",
      kept: 1,
      dropped: 0,
      backup,
      detail: `${conf.message}; seed ${snap.graph.seed} taken from the snapshot`,
    });
  }
  return out;
}

/** A graph name from a path (or a .svc container): the request schema does not see it, and it names a directory. */
export function checkGraphName(name: unknown): asserts name is string {
  if (typeof name !== "string" || !KG_NAME_RE.test(name)) {
    throw new SvcError(
      "E_BAD_REQUEST",
      "graph name must be 1-128 characters of letters, digits, '.', '_' or '-', starting with a letter or digit",
      { field: "name" },
    );
  }
}

/** Decode a .hdkg file and check every term in it as a request's are (hd/input-rules.ts): what import() accepts. */
export function checkHdkg(data: Uint8Array): HdkgGraph {
  const file = decodeHdkg(data);
  for (const r of file.relations) {
    checkEntity(r.name, "relation");
    for (const [s, o] of r.facts) {
      checkEntity(s, "subject");
      checkEntity(o, "object");
    }
  }
  return file;
}

function checkEntity(v: unknown, field: string): string {
  if (typeof v !== "string" || v.length === 0) throw new SvcError("E_BAD_REQUEST", `${field} must be a non-empty string`, { field });
  if (Buffer.byteLength(v) > MAX_TERM_BYTES)
    throw new SvcError("E_BAD_REQUEST", `${field} is longer than ${MAX_TERM_BYTES} bytes`, { field });
  return v;
}

/** The log position (offset) the checkpoint snapshot.hdks in the graph dir `dir` holds every frame up to (0: none, or unreadable). */
export function kgCheckpointSeq(dir: string): number {
  try {
    return decodeSnapshot(readFileSync(join(dir, SNAPSHOT_FILE)), SNAPSHOT_FILE).wal.offset;
  } catch {
    return 0;
  }
}

/** Replace the checkpoint of the graph dir `dir` (not open) by `data` (a snapshot's snapshot.hdks, checked first): temp file, fdatasync, rename. */
export async function restoreKgCheckpoint(dir: string, data: Uint8Array): Promise<void> {
  decodeSnapshot(data, SNAPSHOT_FILE);
  mkdirSync(dir, { recursive: true });
  const path = join(dir, SNAPSHOT_FILE);
  await writeDurable(`${path}.tmp`, Buffer.from(data.buffer, data.byteOffset, data.byteLength));
  await rename(`${path}.tmp`, path);
  await fsyncDir(dir);
}
