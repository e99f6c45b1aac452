/**
 * @module kv-mirror — a node's in-memory copy of a NATS KV bucket, kept current by following the
 * bucket's stream (follow.ts: an ordered consumer from each key's last value, recreated after a
 * server loss), so reads stay synchronous and see another node's writes within milliseconds. A
 * node's own writes are put into the copy as soon as the bucket acknowledges them (`set`); the
 * copy never moves an entry back to an older revision.
 */
import { jetstreamManager, JetStreamApiCodes, JetStreamApiError } from "@nats-io/jetstream";
import type { KV } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import { SvcError } from "../errors.js";
import { Follower } from "./follow.js";

export interface Mirrored<T> {
  value: T;
  /** The entry's revision (the bucket stream's sequence): what a compare-and-set names. */
  revision: number;
}

export class KvMirror<T> {
  private readonly map = new Map<string, Mirrored<T>>();
  /** Highest revision seen per key, deletes included (a delete is newer than the value it removes). */
  private readonly seen = new Map<string, number>();
  private follower: Follower | null = null;
  private changes = 0;

  private constructor(
    readonly kv: KV,
    private readonly parse: (key: string, value: Uint8Array) => T | null,
  ) {}

  /**
   * Mirror `kv` (the bucket named `bucket`, reached through `nc`); resolves once every value the
   * bucket held at the call is in the copy. `parse` turns a stored value into T (null: ignore it).
   */
  static async open<T>(nc: NatsConnection, kv: KV, bucket: string, parse: (key: string, value: Uint8Array) => T | null): Promise<KvMirror<T>> {
    const m = new KvMirror<T>(kv, parse);
    const stream = `KV_${bucket}`;
    const prefix = `$KV.${bucket}.`;
    const { state } = await (await jetstreamManager(nc)).streams.info(stream);
    let loaded: () => void = () => undefined;
    const ready = new Promise<void>((resolve) => (loaded = resolve));
    m.follower = await Follower.start(nc, {
      stream,
      start: "last-per-subject",
      onMessage: (msg) => {
        const op = msg.headers?.get("KV-Operation");
        m.apply(msg.subject.slice(prefix.length), op === "DEL" || op === "PURGE" ? null : msg.data, msg.seq);
        if (msg.seq >= state.last_seq) loaded();
      },
    });
    if (state.messages === 0) loaded();
    await ready;
    return m;
  }

  get(key: string): Mirrored<T> | undefined {
    return this.map.get(key);
  }

  entries(): IterableIterator<[string, Mirrored<T>]> {
    return this.map.entries();
  }

  get size(): number {
    return this.map.size;
  }

  /** Counts the changes of the copy: equal values mean nothing changed in between. */
  get version(): number {
    return this.changes;
  }

  /** Record a write this node made (or read) at `revision`; ignored when the copy already has a newer one. */
  set(key: string, value: T, revision: number): void {
    if ((this.seen.get(key) ?? 0) >= revision) return;
    this.seen.set(key, revision);
    this.map.set(key, { value, revision });
    this.changes++;
  }

  /** The key's current entry read from the bucket (not the copy), put into the copy; null when absent. */
  async fetch(key: string): Promise<Mirrored<T> | null> {
    const e = await this.kv.get(key);
    if (e === null || e.operation !== "PUT") {
      if (e !== null) this.apply(key, null, e.revision);
      return null;
    }
    this.apply(key, e.value, e.revision);
    return this.map.get(key) ?? null;
  }

  stop(): void {
    this.follower?.stop();
  }

  private apply(key: string, value: Uint8Array | null, revision: number): void {
    if ((this.seen.get(key) ?? 0) >= revision) return;
    this.seen.set(key, revision);
    const v = value === null ? null : this.parse(key, value);
    if (v === null) this.map.delete(key);
    else this.map.set(key, { value: v, revision });
    this.changes++;
  }
}

/** True for the error of a compare-and-set that lost: the key moved past the revision named (or exists, for a create). */
export function isRevisionConflict(e: unknown): boolean {
  return e instanceof JetStreamApiError && (e.code === JetStreamApiCodes.StreamWrongLastSequence || e.code === JetStreamApiCodes.StreamWrongLastSequenceUnknown);
}

/**
 * Run a bucket call (a write or a read), retrying it (same arguments) every 100 ms while it fails for any reason but a
 * revision conflict — no stream leader (election after a server died), no responders, timeouts —
 * for up to `timeoutMs`; then E_NO_QUORUM naming `what`. A retry after a timeout may find the first
 * try kept: then it fails with a revision conflict, which the caller resolves by reading the entry.
 */
export async function retryBucket<R>(write: () => Promise<R>, timeoutMs: number, what: string): Promise<R> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await write();
    } catch (e) {
      if (isRevisionConflict(e)) throw e;
      if (Date.now() >= deadline) {
        throw new SvcError("E_NO_QUORUM", `${what}: the KV bucket did not acknowledge within ${timeoutMs} ms (fewer than a quorum of NATS servers reachable: ${e instanceof Error ? e.message : String(e)}); retry`, { field: "cluster" });
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}
