/**
 * @module cluster/keys — API keys shared by every node: one entry per key in the KV bucket
 * `svc_keys` (replicated), key = the record's id (`key_<hex>`), value = the KeyRecord as JSON (the
 * SHA-256 of the key, never the key). Every node mirrors the bucket (kv-mirror.ts), so
 * `authenticate` stays synchronous and a key created or revoked on one node counts on every node
 * within milliseconds. Writes go through the bucket: create is a KV create (a new id), revoke a
 * compare-and-set on the entry's revision.
 */
import { Kvm } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import { hashKey, isKeyRecord, KeyStore, newKey, type KeyBook, type KeyRecord, type Principal } from "../account/keys.js";
import { SvcError } from "../errors.js";
import { parseStoredJson } from "../safe-values.js";
import { KvMirror } from "./kv-mirror.js";
import { isRevisionConflict, untilQuorum } from "./quorum.js";

/** The bucket of API key records. */
export const KEYS_BUCKET = "svc_keys";

export interface ClusterKeysOptions {
  /** Replicas of the bucket (default 3). */
  replicas?: number;
  /** How long create and revoke keep retrying while the bucket does not answer before E_NO_QUORUM (default 15 s). */
  quorumTimeoutMs?: number;
  /** A data dir whose keys.json records are copied into the bucket when absent (see `ClusterKeys.open`). */
  importFrom?: string;
}

export class ClusterKeys implements KeyBook {
  private byHash = new Map<string, KeyRecord>();
  private builtAt = -1;

  private constructor(
    private readonly mirror: KvMirror<KeyRecord>,
    private readonly quorumTimeoutMs: number,
  ) {}

  /**
   * Open (creating when needed) the bucket and mirror it. With `importFrom`, every record of that
   * data dir's keys.json whose id the bucket lacks is created in it first, so keys made with
   * `svc keys create --data <dir>` before a node's first start work on the whole cluster (a key
   * revoked in the bucket stays revoked: an existing id is never overwritten).
   */
  static async open(nc: NatsConnection, opts: ClusterKeysOptions = {}): Promise<ClusterKeys> {
    const kv = await new Kvm(nc).create(KEYS_BUCKET, { replicas: opts.replicas ?? 3, history: 1 });
    if (opts.importFrom !== undefined) {
      for (const r of KeyStore.open(opts.importFrom).list()) {
        await kv.create(r.id, JSON.stringify(r)).catch((e: unknown) => {
          if (!isRevisionConflict(e)) throw e;
        });
      }
    }
    return new ClusterKeys(await KvMirror.open(nc, kv, KEYS_BUCKET, { parse: parseRecord }), opts.quorumTimeoutMs ?? 15_000);
  }

  async create(opts: { tenant?: string; admin?: boolean; name?: string } = {}): Promise<{ key: string; record: KeyRecord }> {
    const { key, record } = newKey(opts);
    try {
      this.mirror.set(
        record.id,
        record,
        await untilQuorum("create key", this.quorumTimeoutMs, () => this.mirror.kv.create(record.id, JSON.stringify(record))),
      );
    } catch (e) {
      // a conflict on a fresh random id is an earlier try of this create that was kept
      if (!isRevisionConflict(e) || (await this.mirror.fetch(record.id))?.value.hash !== record.hash) throw e;
    }
    return { key, record: { ...record } };
  }

  list(): KeyRecord[] {
    return [...this.mirror.entries()].map(([, e]) => ({ ...e.value })).sort((a, b) => a.createdAt - b.createdAt || (a.id < b.id ? -1 : 1));
  }

  async revoke(id: string): Promise<KeyRecord> {
    for (;;) {
      const cur = this.mirror.get(id) ?? (await this.mirror.fetch(id));
      if (cur === null || cur === undefined) throw new SvcError("E_NOT_FOUND", `no key '${id}'`, { field: "id" });
      if (cur.value.revokedAt !== null) return { ...cur.value };
      const next = { ...cur.value, revokedAt: Date.now() };
      try {
        this.mirror.set(
          id,
          next,
          await untilQuorum("revoke key", this.quorumTimeoutMs, () => this.mirror.kv.update(id, JSON.stringify(next), cur.revision)),
        );
        return { ...next };
      } catch (e) {
        if (!isRevisionConflict(e)) throw e;
        await this.mirror.fetch(id); // another node changed it (or an earlier try was kept): look again
      }
    }
  }

  authenticate(key: string): Principal | null {
    const r = this.index().get(hashKey(key));
    if (r === undefined || r.revokedAt !== null) return null;
    return { tenant: r.tenant, admin: r.admin, keyId: r.id };
  }

  get size(): number {
    return this.mirror.size;
  }

  /**
   * Always null: while NATS is unreachable the mirror keeps answering from the last state it saw
   * (a key revoked meanwhile on a node this one cannot hear still authenticates here until the
   * connection returns); create and revoke fail with the connection's error.
   */
  get offline(): string | null {
    return null;
  }

  async close(): Promise<void> {
    await this.mirror.stop();
  }

  /** Records by hash, rebuilt when the mirror changed since the last build. */
  private index(): Map<string, KeyRecord> {
    const version = this.mirror.version;
    if (version !== this.builtAt) {
      this.byHash = new Map([...this.mirror.entries()].map(([, e]) => [e.value.hash, e.value]));
      this.builtAt = version;
    }
    return this.byHash;
  }
}

function parseRecord(_key: string, value: Uint8Array): KeyRecord | null {
  try {
    const v = parseStoredJson(new TextDecoder().decode(value));
    return isKeyRecord(v) ? v : null;
  } catch {
    return null;
  }
}
