/**
 * @module nodes — cluster membership and placement. Each svc node puts its `NodeInfo` into the KV
 * bucket `svc_nodes` (replicated) every `heartbeatMs`; every node mirrors the bucket (kv-mirror.ts,
 * which survives a nats-server's death where a plain watch stayed stuck) and counts a node live
 * while it has seen a put from it within `ttlMs` (local receive time, so clocks need not agree; the
 * bucket's max age drops the entries of nodes gone for good). Placement is rendezvous
 * hashing over the live node ids: a key (e.g. a shard) is owned by the `r` live nodes with the
 * highest hash(node, key). When a node's key expires its keys move to the next nodes in that order,
 * and move back when it returns: nothing else about placement is stored or negotiated.
 */
import { Kvm, type KV } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import { createHash } from "node:crypto";
import { EventEmitter } from "node:events";
import { parseStoredJson } from "../safe-values.js";
import { KvMirror } from "./kv-mirror.js";

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
  /** When this node last saw a put of each registration (local time). */
  private readonly seen = new Map<string, number>();
  private liveIds: string[] = [];
  /** When refresh() last ran (local time): a long gap means this process was frozen, not that the others went. */
  private refreshedAt = Date.now();
  private readonly timers: NodeJS.Timeout[] = [];
  private mirror: KvMirror<NodeInfo> | null = null;
  private stopped = false;

  private constructor(
    private readonly kv: KV,
    readonly self: NodeInfo,
    private readonly ttlMs: number,
  ) {
    super();
  }

  /** Register `self` and start following the others; resolves once the current registrations are read. */
  static async join(nc: NatsConnection, self: NodeInfo, opts: NodeRegistryOptions = {}): Promise<NodeRegistry> {
    const heartbeatMs = opts.heartbeatMs ?? 1000;
    const ttlMs = opts.ttlMs ?? 5000;
    const kv = await new Kvm(nc).create(NODES_BUCKET, { replicas: opts.replicas ?? 3, history: 1, ttl: Math.max(ttlMs * 4, 60_000) });
    const reg = new NodeRegistry(kv, self, ttlMs);
    await reg.beat();
    let loaded = false;
    reg.mirror = await KvMirror.open(nc, kv, NODES_BUCKET, {
      parse: (_key, value) => parseInfo(value),
      onChange: (key, now) => {
        if (reg.stopped) return;
        if (now === undefined) reg.seen.delete(key);
        // a value read at start that is older than the ttl belongs to a node that is gone
        else if (loaded || Date.now() - now.time < ttlMs) reg.seen.set(key, Date.now());
        reg.refresh();
      },
    });
    loaded = true;
    reg.seen.set(self.id, Date.now());
    reg.refresh();
    reg.timers.push(setInterval(() => void reg.beat().catch(() => undefined), heartbeatMs).unref()); // a missed beat is sent again at the next tick; others see the node leave only after ttlMs without one
    reg.timers.push(setInterval(() => reg.refresh(), Math.max(100, Math.floor(ttlMs / 5))).unref());
    return reg;
  }

  /** The live nodes' ids, sorted (this node is always live to itself). */
  get live(): readonly string[] {
    return this.liveIds;
  }

  /** A live node's registration, or undefined. */
  info(id: string): NodeInfo | undefined {
    if (!this.liveIds.includes(id)) return undefined;
    return id === this.self.id ? this.self : this.mirror?.get(id)?.value;
  }

  /** The `r` live nodes that own `key`, best first (rendezvous hashing). */
  owners(key: string, r: number): string[] {
    return rank(this.liveIds, key).slice(0, r);
  }

  /** How long (ms) since this node last heard a heartbeat of `id` (0 for itself, Infinity for a node never heard). */
  silentFor(id: string): number {
    if (id === this.self.id) return 0;
    const at = this.seen.get(id);
    return at === undefined ? Infinity : Date.now() - at;
  }

  /** Stop heartbeats and watching, and remove this node's registration (others see it leave at once). */
  async leave(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    for (const t of this.timers) clearInterval(t);
    await this.mirror?.stop();
    await this.kv.delete(this.self.id).catch(() => undefined); // unreachable: the others see this node leave when its entry goes stale (ttlMs)
  }

  private async beat(): Promise<void> {
    if (this.stopped) return;
    this.seen.set(this.self.id, Date.now());
    await this.kv.put(this.self.id, JSON.stringify(this.self));
  }

  private refresh(): void {
    const now = Date.now();
    // This process did not run for a while (frozen, starved): the others' silence is its own. Count
    // the gap as not having happened, so it does not drop every node at once and take all their
    // shards on waking; their heartbeats (or their absence) decide again within ttlMs.
    const gap = now - this.refreshedAt - Math.max(100, Math.floor(this.ttlMs / 5));
    this.refreshedAt = now;
    if (gap > this.ttlMs / 2) for (const [id, at] of this.seen) this.seen.set(id, Math.min(now, at + gap));
    const ids = [...this.seen]
      .filter(([id, at]) => id === this.self.id || now - at < this.ttlMs)
      .map(([id]) => id)
      .sort();
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
    const v = parseStoredJson(new TextDecoder().decode(value)) as NodeInfo;
    return typeof v?.id === "string" && typeof v.url === "string" && typeof v.startedAt === "number"
      ? { id: v.id, url: v.url, startedAt: v.startedAt }
      : null;
  } catch {
    return null;
  }
}
