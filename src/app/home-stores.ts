/**
 * @module app/home-stores — cluster mode's replicated small stores (the directory, the commons, the knowledge graphs, the causal models):
 * each a state machine folded from its own subject of the stream `svc_home`, written by one leader at
 * a time. The leader is the holder of the lease folded from `svc_home_lease` (cluster/leader-lease.ts);
 * when this node wins it, it opens each store on a fenced JetStream log (cluster/jetstream-log.ts
 * `fence` = its term): the open folds the subject to its end (from the store's own checkpoint under
 * `<data>/home/`, which records the stream position), stores the fence, and only then the store
 * takes writes; a deposed leader's writes are refused by the fence. When the node loses the lease it
 * closes them. Routes hold proxies (`directory`, `commons`, `kg`, `causal`): on the leader they reach the open store;
 * anywhere else, or while the stores are opening, they answer 503 E_HOME_UNAVAILABLE (the forwarder
 * sends these routes to the leader, so a follower is reached only between a lease change and its fold).
 *
 * Retention (issue 31 item 6; FORMAT.md "Snapshots", OPERATIONS.md "Log retention and sizing"): each
 * store's checkpoint is also a snapshot in the object store `svc_snapshots` (snapshots.ts), written by
 * the leader once the store's subject grew by max(minBytes, the last snapshot's size) since the last
 * one, and the subject is purged below the older of its two snapshots. Only the leader reads a home
 * subject, so a purge waits for nobody else; a node that becomes leader later opens each store from
 * its own checkpoint under `<data>/home/` when that is at least the newest snapshot, else from the
 * newest snapshot that reads and checks (prepareHomeLog), then folds the tail. A store joins by
 * implementing HomeSnapshotHook (below) and calling prepareHomeLog before it reads its local state.
 */
import type { NatsConnection } from "@nats-io/transport-node";
import { join } from "node:path";
import type { Logger } from "pino";
import { jetstreamManager } from "@nats-io/jetstream";
import { ensureLogStream, jetStreamLog } from "../cluster/jetstream-log.js";
import type { LeaderLease, LeaseState } from "../cluster/leader-lease.js";
import { noQuorum, untilQuorum } from "../cluster/quorum.js";
import { SNAPSHOT_CHECK_MS, SNAPSHOT_MIN_BYTES } from "../cluster/shard-snapshots.js";
import type { SnapshotFile, Snapshots } from "../cluster/snapshots.js";
import { COMMONS_CHECKPOINT, readCommonsCheckpoint, writeCommonsCheckpoint } from "../commons/log.js";
import { Commons, type CommonsOptions } from "../commons/service.js";
import { openDirectory } from "../directory/import.js";
import { directoryCheckpointSeq, restoreDirectoryCheckpoint, type Directory } from "../directory/service.js";
import { SvcError } from "../errors.js";
import type { Log, OpenLog } from "../store/log.js";
import type { Reporter } from "../store/reporter.js";
import type { Durability } from "../store/wal.js";
import { kgCheckpointSeq, KnowledgeGraphs, restoreKgCheckpoint } from "../hd/kg/service.js";
import { SNAPSHOT_FILE as KG_SNAPSHOT_FILE } from "../hd/kg/snapshot.js";
import { CAUSAL_CHECKPOINT_FILE, causalCheckpointSeq, CausalService, restoreCausalCheckpoint } from "../hd/causal/service.js";
import type { Kernels } from "../kernels/abi.js";

/** The stream holding the home stores' subjects (`svc_home.<store>`). */
export const HOME_STREAM = "svc_home";
/** Retry-After (s) while the home stores change leader. */
const RETRY_AFTER_S = 2;

export interface HomeStoresOptions {
  nc: NatsConnection;
  lease: LeaderLease;
  /** This node's data dir: the stores' checkpoints go under `<dataDir>/home/`. */
  dataDir: string;
  replicas: number;
  durability?: Durability;
  directorySeed?: string | null;
  commons: Omit<CommonsOptions, "openLog" | "durability">;
  /** The knowledge graphs' kernels (each graph's log is `svc_home.kg.<tenant>.<graph>`, tokens by kgLogName). */
  kernels: Kernels;
  logger: Logger;
  /** Snapshots and purges of the stores' subjects (off without: the stream keeps every frame). minBytes, checkMs: as the shards' (shard-snapshots.ts). */
  snapshots?: { store: Snapshots; minBytes?: number; checkMs?: number };
  /** Told of damage found in the stores' files and of their background failures (default stderrReporter). */
  reporter?: Reporter;
}

interface Open {
  term: number;
  directory: Directory;
  commons: Commons;
  kg: KnowledgeGraphs;
  causal: CausalService;
  /** The stores' open logs by name (what the snapshot taker weighs), and each one's weight at its last snapshot. */
  logs: Map<string, Log>;
  weighed: Map<string, { at: number; bytes: number }>;
  timer: NodeJS.Timeout | null;
}

/**
 * The snapshot hook of one home store (one object per store; a store added here implements the same):
 * - `kind`: the snapshot kind in the object store, `home-<store>` (FORMAT.md "Snapshots");
 * - `logs()`: the store's logs open on this leader now, as [log name, capture]; capture checkpoints the
 *   open store and resolves with the checkpoint's files and the stream sequence they hold every frame
 *   of the log up to (null: not open any more). It runs on the leader while the store serves.
 * Before the store reads its local state for a log, it calls prepareHomeLog with that log's
 * HomeLocalState (how far its local checkpoint goes, and how to replace it by a snapshot's files).
 */
export interface HomeSnapshotHook {
  kind: string;
  logs(): Array<[name: string, capture: () => Promise<{ seq: number; files: SnapshotFile[] } | null>]>;
}

/** A home store's local checkpoint of one log, under `<data>/home/` (see HomeSnapshotHook). */
export interface HomeLocalState {
  /** The stream sequence the local checkpoint holds every frame up to (0: none, or unreadable). */
  seq(): number;
  /** Replace the local checkpoint by a snapshot's files (the store has not opened the log). */
  restore(files: SnapshotFile[]): Promise<void>;
}

/** Per message stored on a home subject beyond the frame's bytes (subject, headers, stream overhead): what the snapshot taker adds per publish. */
const MESSAGE_OVERHEAD = 200;

/**
 * Before a store opens log `name` (subject `svc_home.<name>`): its local checkpoint when that is at
 * least the newest snapshot; else the newest snapshot of `kind` that reads and checks (written over
 * the local one); else, none reading, the local checkpoint when no frame after it can have been purged
 * (fewer than two snapshots, or it is at least the older one's) — otherwise 503 E_STORE_OFFLINE.
 */
export async function prepareHomeLog(store: Snapshots | undefined, name: string, kind: string, local: HomeLocalState): Promise<void> {
  if (store === undefined) return;
  const subject = `${HOME_STREAM}.${name}`;
  const have = await store.list(subject);
  const seq = local.seq();
  if (have.length === 0 || seq >= have[0]!.seq) return;
  for (const info of have) {
    if (info.seq <= seq) break;
    const snap = await store.read(info).catch(() => null); // unreadable or failing its check: the next older one
    if (snap === null || snap.kind !== kind) continue;
    await local.restore(snap.files);
    return;
  }
  if (have.length < 2 || seq >= have[have.length - 1]!.seq) return;
  throw new SvcError(
    "E_STORE_OFFLINE",
    `${subject}: no snapshot reads and checks, and frames after this node's checkpoint (${seq}) may have been purged`,
    { field: "home", details: { retryAfterSeconds: 2 } },
  );
}

/** The file `path` of a snapshot's files (E_IO when missing). */
function fileOf(files: SnapshotFile[], path: string): Uint8Array {
  const f = files.find((x) => x.path === path);
  if (f === undefined) throw new SvcError("E_IO", `the snapshot holds no ${path}`);
  return f.data;
}

/** A name as one subject token: letters, digits and '-' kept, every other character `_` + its UTF-8 bytes in hex (injective). */
export function subjectToken(name: string): string {
  return name.replace(/[^A-Za-z0-9-]/gu, (ch) => [...Buffer.from(ch)].map((b) => `_${b.toString(16).padStart(2, "0")}`).join(""));
}

/** The name subjectToken made `token` from. */
export function fromSubjectToken(token: string): string {
  return token.replace(/(?:_[0-9a-f]{2})+/gu, (run) => Buffer.from(run.replaceAll("_", ""), "hex").toString("utf8"));
}

/** The log name (subject `svc_home.<name>`) of tenant's knowledge graph `graph`. */
export function kgLogName(tenant: string, graph: string): string {
  return `kg.${subjectToken(tenant)}.${subjectToken(graph)}`;
}

/** The log name (subject `svc_home.<name>`) of tenant's causal model `model`. */
export function causalLogName(tenant: string, model: string): string {
  return `causal.${subjectToken(tenant)}.${subjectToken(model)}`;
}

/**
 * The names with a log `<kind>.<tenant>.<name>` on svc_home: the subjects the stream holds messages
 * of (its per-subject counts). Invariant for any purge of svc_home: a subject keeps at least its last
 * message (or this list must also read the snapshots), else its store drops out of the listings.
 */
export async function logNames(nc: NatsConnection, kind: "kg" | "causal", tenant: string): Promise<string[]> {
  const jsm = await jetstreamManager(nc, { timeout: 5000 });
  const prefix = `${HOME_STREAM}.${kind}.${subjectToken(tenant)}.`;
  const info = await jsm.streams.info(HOME_STREAM, { subjects_filter: `${prefix}*` });
  return Object.keys(info.state.subjects ?? {}).map((s) => fromSubjectToken(s.slice(prefix.length)));
}

/**
 * A call a graph's or model's first request makes into JetStream (its snapshot, its log's open, the
 * names with a log): a failure of NATS itself (a timeout, "JetStream system temporarily
 * unavailable" while a server is down) is 503 E_NO_QUORUM with Retry-After, never a 500.
 */
function retryable<A extends unknown[], T>(f: (...a: A) => Promise<T>): (...a: A) => Promise<T> {
  return (...a) =>
    f(...a).catch((e: unknown) => {
      throw e instanceof SvcError ? e : noQuorum(`the home stores could not reach JetStream (${(e as Error)?.message}); retry`, "home", e);
    });
}

export class HomeStores {
  private open: Open | null = null;
  /** The term whose stores are opening or open; a change of lease while opening is handled after it. */
  private wanted = 0;
  private chain: Promise<void> = Promise.resolve();
  private closed = false;

  /** Proxies for the routes: each call reaches the store this node leads now, or is 503 E_HOME_UNAVAILABLE. */
  readonly directory: Directory;
  readonly commons: Commons;
  readonly kg: KnowledgeGraphs;
  readonly causal: CausalService;

  private constructor(private readonly opts: HomeStoresOptions) {
    this.directory = proxy(() => this.current().directory);
    // the routes read the commons' configuration when they are built: it is the same on every leader
    this.commons = proxy(() => this.current().commons, { config: opts.commons.config });
    this.kg = proxy(() => this.current().kg);
    this.causal = proxy(() => this.current().causal);
  }

  /** Ensure the stream and follow the lease: open the stores whenever this node holds it. */
  static async start(opts: HomeStoresOptions): Promise<HomeStores> {
    // retried while JetStream elects leaders (a node starting with the cluster)
    await untilQuorum(
      "create the stream svc_home",
      60_000,
      () => ensureLogStream(opts.nc, { stream: HOME_STREAM, replicas: opts.replicas }),
      { field: "home" },
    );
    const h = new HomeStores(opts);
    opts.lease.on("change", (s: LeaseState) => h.follow(s));
    h.follow(opts.lease.state);
    return h;
  }

  /** The leader's term whose stores serve here, or 0. */
  get term(): number {
    return this.open?.term ?? 0;
  }

  /** Resolves once the stores follow the lease as it is now (tests). */
  settled(): Promise<void> {
    return this.chain;
  }

  async close(): Promise<void> {
    this.closed = true;
    this.wanted = 0;
    this.chain = this.chain.then(() => this.shut());
    await this.chain;
  }

  private current(): Open {
    const o = this.open;
    const lease = this.opts.lease;
    if (o === null || o.term !== lease.term || !lease.serving) {
      const leader = lease.leader;
      throw new SvcError(
        "E_HOME_UNAVAILABLE",
        leader === null
          ? "the directory, the commons, the knowledge graphs and the causal models have no leader yet; retry"
          : `node ${lease.self} does not serve the directory, the commons, the knowledge graphs and the causal models now (leader ${leader}, term ${lease.term}); retry`,
        { field: "home", details: { retryAfterSeconds: RETRY_AFTER_S } },
      );
    }
    return o;
  }

  private follow(s: LeaseState): void {
    const term = !this.closed && s.holder === this.opts.lease.self ? s.term : 0;
    if (term === this.wanted) return;
    this.wanted = term;
    this.chain = this.chain.then(async () => {
      if (this.wanted !== term) return; // a later change is queued
      await this.shut();
      if (term > 0) await this.openStores(term);
    });
  }

  private async openStores(term: number): Promise<void> {
    const { nc, logger } = this.opts;
    const root = join(this.opts.dataDir, "home");
    const t0 = performance.now();
    const store = this.opts.snapshots?.store;
    const logs = new Map<string, Log>();
    const log = (name: string): OpenLog => {
      const open = jetStreamLog(nc, { stream: HOME_STREAM, name, fence: term });
      return async (replay) => {
        const r = await open(replay);
        logs.set(name, r.log);
        return r;
      };
    };
    for (let attempt = 1; this.wanted === term; attempt++) {
      let directory: Directory | null = null;
      try {
        const dirDir = join(root, "directory");
        await prepareHomeLog(store, "directory", "home-directory", {
          seq: () => directoryCheckpointSeq(dirDir),
          restore: (files) => restoreDirectoryCheckpoint(dirDir, fileOf(files, "directory.json")),
        });
        directory = (
          await openDirectory(root, {
            durability: this.opts.durability,
            seed: this.opts.directorySeed,
            openLog: log("directory"),
            reporter: this.opts.reporter,
          })
        ).directory;
        const commonsDir = join(root, "commons");
        await prepareHomeLog(store, "commons", "home-commons", {
          seq: () => readCommonsCheckpoint(commonsDir)?.seq ?? 0,
          restore: (files) => writeCommonsCheckpoint(commonsDir, fileOf(files, COMMONS_CHECKPOINT)),
        });
        const commons = await Commons.open(root, { ...this.opts.commons, durability: this.opts.durability, openLog: log("commons") });
        // each graph's log is opened (folded, fenced) at its first request on this leader
        const kg = new KnowledgeGraphs(root, {
          kernels: this.opts.kernels,
          durability: this.opts.durability,
          openLog: (t, g) => retryable(log(kgLogName(t, g))),
          beforeOpen: retryable((t, g, dir) =>
            prepareHomeLog(store, kgLogName(t, g), "home-kg", {
              seq: () => kgCheckpointSeq(dir),
              restore: (files) => restoreKgCheckpoint(dir, fileOf(files, KG_SNAPSHOT_FILE)),
            }),
          ),
          reporter: this.opts.reporter,
          logNames: retryable((t) => logNames(nc, "kg", t)),
        });
        // each model's log likewise, at its first request (from its local checkpoint, as the graphs)
        const causal = new CausalService(root, {
          openLog: (t, m) => retryable(log(causalLogName(t, m))),
          beforeOpen: retryable((t, m, dir) =>
            prepareHomeLog(store, causalLogName(t, m), "home-causal", {
              seq: () => causalCheckpointSeq(dir),
              restore: (files) => restoreCausalCheckpoint(dir, fileOf(files, CAUSAL_CHECKPOINT_FILE)),
            }),
          ),
          logNames: retryable((t) => logNames(nc, "causal", t)),
          reporter: this.opts.reporter,
        });
        const o: Open = { term, directory, commons, kg, causal, logs, weighed: new Map(), timer: null };
        this.open = o;
        if (this.opts.snapshots !== undefined) {
          o.timer = setInterval(() => void this.snapshotRound(o), this.opts.snapshots.checkMs ?? SNAPSHOT_CHECK_MS);
          o.timer.unref();
        }
        logger.info(
          { term, ms: Math.round(performance.now() - t0) },
          `cluster: this node leads the home stores (term ${term}); folded in ${Math.round(performance.now() - t0)} ms`,
        );
        return;
      } catch (err) {
        await directory?.close().catch(() => undefined); // the open failed: the error below is the one to report, a close of the half-open store adds nothing
        if (err instanceof SvcError && err.code === "E_HOME_UNAVAILABLE") {
          logger.warn({ err, term }, `cluster: a later leader fenced the home stores (term ${term}): ${err.message}`);
          return;
        }
        logger.warn({ err, term, attempt }, `cluster: could not open the home stores (${(err as Error).message}); retrying in 1 s`);
        await new Promise((r) => setTimeout(r, 1000));
      }
    }
  }

  /** The snapshot hooks of the open stores (HomeSnapshotHook). */
  private hooks(o: Open): HomeSnapshotHook[] {
    return [
      { kind: "home-directory", logs: () => [["directory", () => o.directory.snapshot()]] },
      { kind: "home-commons", logs: () => [["commons", () => o.commons.snapshot()]] },
      {
        kind: "home-kg",
        logs: () =>
          o.kg.openGraphs().map(([t, g]): [string, () => Promise<{ seq: number; files: SnapshotFile[] } | null>] => [
            kgLogName(t, g),
            async () => {
              const s = await o.kg.snapshotGraph(t, g);
              return s === null ? null : { seq: s.seq, files: [{ path: KG_SNAPSHOT_FILE, data: s.data }] };
            },
          ]),
      },
      {
        kind: "home-causal",
        logs: () =>
          o.causal.openModels().map(([t, m]): [string, () => Promise<{ seq: number; files: SnapshotFile[] } | null>] => [
            causalLogName(t, m),
            async () => {
              const s = await o.causal.snapshotModel(t, m);
              return s === null ? null : { seq: s.seq, files: [{ path: CAUSAL_CHECKPOINT_FILE, data: s.data }] };
            },
          ]),
      },
    ];
  }

  /** Rounds do not overlap (a round in flight when the next tick comes skips that tick). */
  private snapshotting = false;

  /**
   * Every checkMs on the leader: for each log of each store whose subject grew by at least
   * max(minBytes, its last snapshot's size) since the last snapshot (its bytes read at open plus
   * those appended since, with MESSAGE_OVERHEAD per message), a snapshot, then the purge below the
   * older one. Only while this node still serves this term (a deposed leader writes no snapshot).
   */
  private async snapshotRound(o: Open): Promise<void> {
    const snaps = this.opts.snapshots;
    if (snaps === undefined || this.snapshotting) return;
    this.snapshotting = true;
    try {
      for (const hook of this.hooks(o)) {
        for (const [name, capture] of hook.logs()) {
          const log = o.logs.get(name);
          if (log === undefined) continue;
          if (this.open !== o || !this.opts.lease.serving || this.opts.lease.term !== o.term) return;
          const st = log.stats;
          const weight = (st.read ?? 0) + st.bytes + st.writes * MESSAGE_OVERHEAD;
          const last = o.weighed.get(name) ?? { at: 0, bytes: 0 };
          if (weight - last.at < Math.max(snaps.minBytes ?? SNAPSHOT_MIN_BYTES, last.bytes)) continue;
          try {
            const cap = await capture();
            if (cap === null || this.open !== o || !this.opts.lease.serving || this.opts.lease.term !== o.term) continue;
            const subject = `${HOME_STREAM}.${name}`;
            const info = await snaps.store.write({
              stream: HOME_STREAM,
              subject,
              seq: cap.seq,
              floor: cap.seq + 1,
              kind: hook.kind,
              files: cap.files,
            });
            o.weighed.set(name, { at: weight, bytes: info.bytes });
            await snaps.store.purgeBelow(HOME_STREAM, subject);
          } catch (err) {
            this.opts.logger.warn(
              { err, log: name },
              `cluster: snapshot of the home log ${name} failed (${(err as Error).message}); tried again later`,
            );
          }
        }
      }
    } finally {
      this.snapshotting = false;
    }
  }

  private async shut(): Promise<void> {
    const o = this.open;
    if (o === null) return;
    this.open = null;
    if (o.timer !== null) clearInterval(o.timer);
    await o.kg.close().catch((err: unknown) => this.opts.logger.warn({ err }, "cluster: closing the knowledge graphs failed"));
    await o.causal.close().catch((err: unknown) => this.opts.logger.warn({ err }, "cluster: closing the causal models failed"));
    await o.commons.close().catch((err: unknown) => this.opts.logger.warn({ err }, "cluster: closing the commons failed"));
    await o.directory
      .close()
      .catch((err: unknown) => this.opts.logger.warn({ err }, "cluster: closing the directory failed (no checkpoint taken)"));
    this.opts.logger.info({ term: o.term }, `cluster: this node no longer leads the home stores (term ${o.term})`);
  }
}

/** An object whose every property (but those of `fixed`) is read from `target()` at the time of the read (methods bound to it). */
function proxy<T extends object>(target: () => T, fixed: Partial<T> = {}): T {
  return new Proxy({} as T, {
    get(_, key) {
      if (Object.hasOwn(fixed, key)) return (fixed as Record<string | symbol, unknown>)[key];
      const t = target();
      const v = Reflect.get(t, key, t) as unknown;
      return typeof v === "function" ? (v as (...a: unknown[]) => unknown).bind(t) : v;
    },
    has: (_, key) => Reflect.has(target(), key),
  });
}
