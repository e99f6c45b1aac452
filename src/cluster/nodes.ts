/**
 * @module nodes — cluster membership and placement. Each svc node puts its `NodeInfo` into the KV
 * bucket `svc_nodes` (replicated) every `heartbeatMs`; every node watches the bucket and counts a
 * node live while it has seen a put from it within `ttlMs` (local receive time, so clocks need not
 * agree; the bucket's max age drops the entries of nodes gone for good). Placement is rendezvous
 * hashing over the live node ids: a key (e.g. a shard) is owned by the `r` live nodes with the
 * highest hash(node, key). When a node's key expires its keys move to the next nodes in that order,
 * and move back when it returns: nothing else about placement is stored or negotiated.
 */
import { Kvm, type KV } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import { createHash } from "node:crypto";
import { EventEmitter } from "node:events";

/** The bucket of node registrations. */
export const NODES_BUCKET = "svc_nodes";

/** A node id: 1-64 letters, digits, `_` and `-` (a KV key and a NATS subject token). */
export const NODE_ID_RE = /^[A-Za-z0-9_-]{1,64}$/;

export interface NodeInfo {
  /** The node's id (`--node-id`). */
  id: string;
  /** Where the node's HTTP API answers, e.g. `http://127.0.0.1:8081`. */
  url: string;
  /** When this process started (ms since the epoch). */
  startedAt: number;
}

export interface NodeRegistryOptions {
  /** How often a node puts its registration (default 1000 ms). */
  heartbeatMs?: number;
  /** A node not heard from for this long is not live (default 5000 ms). */
  ttlMs?: number;
  /** Replicas of the bucket (default 3). */
  replicas?: number;
}

/**
 * The live nodes as one node sees them. Emits `change` (with the live ids, sorted) whenever a node
 * joins or expires.
 */
export class NodeRegistry extends EventEmitter {
  private readonly seen = new Map<string, { info: NodeInfo; at: number }>();
  private liveIds: string[] = [];
  private readonly timers: NodeJS.Timeout[] = [];
  private stopped = false;

  private constructor(
    private readonly kv: KV,
    readonly self: NodeInfo,
    private readonly ttlMs: number,
  ) {
    super();
  }

  /** Register `self` and start watching the others; resolves once the current registrations are read. */
  static async join(nc: NatsConnection, self: NodeInfo, opts: NodeRegistryOptions = {}): Promise<NodeRegistry> {
    const heartbeatMs = opts.heartbeatMs ?? 1000;
    const ttlMs = opts.ttlMs ?? 5000;
    const kv = await new Kvm(nc).create(NODES_BUCKET, { replicas: opts.replicas ?? 3, history: 1, ttl: Math.max(ttlMs * 4, 60_000) });
    const reg = new NodeRegistry(kv, self, ttlMs);
    await reg.beat();
    const watch = await kv.watch();
    void (async () => {
      for await (const e of watch) {
        if (reg.stopped) break;
        if (e.operation !== "PUT") reg.seen.delete(e.key);
        else {
          const info = parseInfo(e.value);
          // an initial value older than the ttl belongs to a node that is gone
          if (info !== null && (e.isUpdate || Date.now() - e.created.getTime() < ttlMs)) reg.seen.set(e.key, { info, at: Date.now() });
        }
        reg.refresh();
      }
    })();
    reg.seen.set(self.id, { info: self, at: Date.now() });
    reg.refresh();
    reg.timers.push(setInterval(() => void reg.beat().catch(() => undefined), heartbeatMs).unref());
    reg.timers.push(setInterval(() => reg.refresh(), Math.max(100, Math.floor(ttlMs / 5))).unref());
    reg.once("stop", () => watch.stop());
    return reg;
  }

  /** The live nodes' ids, sorted (this node is always live to itself). */
  get live(): readonly string[] {
    return this.liveIds;
  }

  /** A live node's registration, or undefined. */
  info(id: string): NodeInfo | undefined {
    return this.liveIds.includes(id) ? this.seen.get(id)?.info : undefined;
  }

  /** The `r` live nodes that own `key`, best first (rendezvous hashing). */
  owners(key: string, r: number): string[] {
    return rank(this.liveIds, key).slice(0, r);
  }

  /** Stop heartbeats and watching, and remove this node's registration (others see it leave at once). */
  async leave(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    for (const t of this.timers) clearInterval(t);
    this.emit("stop");
    await this.kv.delete(this.self.id).catch(() => undefined);
  }

  private async beat(): Promise<void> {
    if (this.stopped) return;
    this.seen.set(this.self.id, { info: this.self, at: Date.now() });
    await this.kv.put(this.self.id, JSON.stringify(this.self));
  }

  private refresh(): void {
    const now = Date.now();
    const ids = [...this.seen].filter(([id, s]) => id === this.self.id || now - s.at < this.ttlMs).map(([id]) => id).sort();
    if (ids.join(",") === this.liveIds.join(",")) return;
    this.liveIds = ids;
    this.emit("change", ids);
  }
}

/** `ids` ordered by rendezvous weight for `key`, highest first (ties by id). */
export function rank(ids: readonly string[], key: string): string[] {
  const w = (id: string) => createHash("sha256").update(id).update("\0").update(key).digest().readBigUInt64BE(0);
  return ids
    .map((id) => ({ id, w: w(id) }))
    .sort((a, b) => (a.w === b.w ? (a.id < b.id ? -1 : 1) : a.w > b.w ? -1 : 1))
    .map((x) => x.id);
}

function parseInfo(value: Uint8Array): NodeInfo | null {
  try {
    const v = JSON.parse(new TextDecoder().decode(value)) as NodeInfo;
    return typeof v?.id === "string" && typeof v.url === "string" && typeof v.startedAt === "number" ? { id: v.id, url: v.url, startedAt: v.startedAt } : null;
  } catch {
    return null;
  }
}
