/**
 * @module home — the home node: the one node whose data dir holds the state that is not sharded
 * (records, knowledge graphs, causal models, the commons, the directory, helpers). Its id is a lease
 * in the KV bucket `svc_cluster` (replicated, no expiry): the first node to start creates it and it
 * stays with that node id, through restarts and outages, until an operator moves it
 * (`svc serve --take-home`). The bucket also holds the cluster's forwarding secret, which nodes send
 * on requests they forward so the receiver can trust the client address they name.
 */
import { Kvm, type KV } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import { randomBytes } from "node:crypto";
import { EventEmitter } from "node:events";
import { parseStoredJson } from "../safe-values.js";
import { KvMirror } from "./kv-mirror.js";

/** Cluster-wide settings that never expire (unlike `svc_nodes`, whose entries age out). */
export const CLUSTER_BUCKET = "svc_cluster";
/** Key of the home lease: JSON `{node, since}`. */
export const HOME_KEY = "home";
/** Key of the forwarding secret (base64url text). */
export const FORWARD_TOKEN_KEY = "forward-token";

export interface HomeLeaseOptions {
  /** Name this node the home even when another node holds the lease (moving the home; see docs/OPERATIONS.md). */
  take?: boolean;
  /** Replicas of the bucket (default 3). */
  replicas?: number;
}

/** The home lease as this node sees it; emits `change` (the new home id) when it moves. */
export class HomeLease extends EventEmitter {
  private stopped = false;

  private mirror: KvMirror<string> | null = null;

  private constructor(
    private homeId: string,
    readonly token: string,
  ) {
    super();
  }

  /** Read (or create, first node wins) the lease and the secret, and follow the lease from then on. */
  static async open(nc: NatsConnection, selfId: string, opts: HomeLeaseOptions = {}): Promise<HomeLease> {
    const kv = await new Kvm(nc).create(CLUSTER_BUCKET, { replicas: opts.replicas ?? 3, history: 1 });
    const token = await createOnce(kv, FORWARD_TOKEN_KEY, randomBytes(32).toString("base64url"));
    const mine = JSON.stringify({ node: selfId, since: Date.now() });
    if (opts.take) await kv.put(HOME_KEY, mine);
    const home = parseHome(opts.take ? mine : await createOnce(kv, HOME_KEY, mine));
    if (home === null)
      throw new Error(
        `${CLUSTER_BUCKET}/${HOME_KEY} does not hold {"node": "<id>"}; put one (e.g. svc serve --take-home on the node whose data dir holds the state)`,
      );
    const lease = new HomeLease(home, token);
    // Follow the lease through a mirror of the bucket (kv-mirror.ts): a plain watch stayed stuck after a nats-server was killed.
    lease.mirror = await KvMirror.open(nc, kv, CLUSTER_BUCKET, {
      parse: (key, value) => (key === HOME_KEY ? parseHome(new TextDecoder().decode(value)) : null),
      onChange: (key, now) => {
        if (lease.stopped || key !== HOME_KEY || now === undefined || now.value === lease.homeId) return;
        lease.homeId = now.value;
        lease.emit("change", now.value);
      },
    });
    return lease;
  }

  /** The home node's id. */
  get node(): string {
    return this.homeId;
  }

  async close(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    await this.mirror?.stop();
  }
}

/** The value at `key`, putting `value` there first when the key is absent (one creator wins). */
async function createOnce(kv: KV, key: string, value: string): Promise<string> {
  try {
    await kv.create(key, value);
    return value;
  } catch (err) {
    const e = await kv.get(key);
    if (e === null || e.operation !== "PUT") throw err;
    return e.string();
  }
}

function parseHome(text: string): string | null {
  try {
    const v = parseStoredJson(text) as { node?: unknown };
    return typeof v?.node === "string" && v.node !== "" ? v.node : null;
  } catch {
    return null;
  }
}
