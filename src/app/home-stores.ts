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
 */
import type { NatsConnection } from "@nats-io/transport-node";
import { join } from "node:path";
import type { Logger } from "pino";
import { jetstreamManager } from "@nats-io/jetstream";
import { ensureLogStream, jetStreamLog } from "../cluster/jetstream-log.js";
import type { LeaderLease, LeaseState } from "../cluster/leader-lease.js";
import { untilQuorum } from "../cluster/quorum.js";
import { Commons, type CommonsOptions } from "../commons/service.js";
import { openDirectory } from "../directory/import.js";
import type { Directory } from "../directory/service.js";
import { SvcError } from "../errors.js";
import type { Reporter } from "../store/reporter.js";
import type { Durability } from "../store/wal.js";
import { KnowledgeGraphs } from "../hd/kg/service.js";
import { CausalService } from "../hd/causal/service.js";
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
  /** Told of damage found in the stores' files and of their background failures (default stderrReporter). */
  reporter?: Reporter;
}

interface Open {
  term: number;
  directory: Directory;
  commons: Commons;
  kg: KnowledgeGraphs;
  causal: CausalService;
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
    const log = (name: string) => jetStreamLog(nc, { stream: HOME_STREAM, name, fence: term });
    for (let attempt = 1; this.wanted === term; attempt++) {
      let directory: Directory | null = null;
      try {
        directory = (
          await openDirectory(root, { durability: this.opts.durability, seed: this.opts.directorySeed, openLog: log("directory"), reporter: this.opts.reporter })
        ).directory;
        const commons = await Commons.open(root, { ...this.opts.commons, durability: this.opts.durability, openLog: log("commons") });
        // each graph's log is opened (folded, fenced) at its first request on this leader
        const kg = new KnowledgeGraphs(root, {
          kernels: this.opts.kernels,
          durability: this.opts.durability,
          openLog: (t, g) => log(kgLogName(t, g)),
          reporter: this.opts.reporter,
          logNames: (t) => logNames(nc, "kg", t),
        });
        // each model's log likewise, at its first request (no local files: the fold is the model)
        const causal = new CausalService(root, {
          openLog: (t, m) => log(causalLogName(t, m)),
          logNames: (t) => logNames(nc, "causal", t),
          reporter: this.opts.reporter,
        });
        this.open = { term, directory, commons, kg, causal };
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

  private async shut(): Promise<void> {
    const o = this.open;
    if (o === null) return;
    this.open = null;
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
