/**
 * @module kv-mirror — a node's in-memory copy of a NATS KV bucket (API keys, node
 * registrations, the cluster settings), kept current by tailing the bucket's stream (stream-tail.ts:
 * an ordered consumer from each key's last value, replaced after a server loss; a plain `kv.watch()`
 * was seen stuck for good after a nats-server was killed), so reads stay synchronous and see another
 * node's writes within milliseconds. A node's own writes are put into the copy as soon as the bucket
 * acknowledges them (`set`, `remove`); the copy never moves an entry back to an older revision.
 */
import { jetstreamManager } from "@nats-io/jetstream";
import type { KV } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import { StreamTail } from "./stream-tail.js";

export interface Mirrored<T> {
  value: T;
  /** The entry's revision (the bucket stream's sequence): what a compare-and-set names. */
  revision: number;
  /** When the bucket stored it (ms since the epoch, the NATS server's clock). */
  time: number;
}

export interface KvMirrorOptions<T> {
  /** Turns a stored value into T (null: ignore it, as if deleted). */
  parse(key: string, value: Uint8Array): T | null;
  /**
   * Called for each change the stream brings into the copy (not for `set`, `remove` and `fetch`,
   * whose callers know), with the entry before and after (undefined: absent). During open it is
   * called for the bucket's current values, before open resolves.
   */
  onChange?(key: string, now: Mirrored<T> | undefined, before: Mirrored<T> | undefined): void;
}

export class KvMirror<T> {
  private readonly map = new Map<string, Mirrored<T>>();
  /** Highest revision seen per key, deletes included (a delete is newer than the value it removes). */
  private readonly seen = new Map<string, number>();
  private tail: StreamTail | null = null;
  private changes = 0;

  private constructor(
    readonly kv: KV,
    private readonly opts: KvMirrorOptions<T>,
  ) {}

  /** Mirror `kv` (the bucket named `bucket`, reached through `nc`); resolves once every value the bucket held at the call is in the copy. */
  static async open<T>(nc: NatsConnection, kv: KV, bucket: string, opts: KvMirrorOptions<T>): Promise<KvMirror<T>> {
    const m = new KvMirror<T>(kv, opts);
    const stream = `KV_${bucket}`;
    const prefix = `$KV.${bucket}.`;
    const { state } = await (await jetstreamManager(nc)).streams.info(stream);
    const end = state.messages === 0 ? 0 : state.last_seq;
    m.tail = new StreamTail(nc, {
      stream,
      what: `KV bucket ${bucket}`,
      start: "last-per-subject",
      catchUp: end,
      onMessage: (msg) => {
        const op = msg.headers?.get("KV-Operation");
        const key = msg.subject.slice(prefix.length);
        const before = m.map.get(key);
        if (m.apply(key, op === "DEL" || op === "PURGE" ? null : msg.data, msg.seq, msg.time.getTime()))
          m.opts.onChange?.(key, m.map.get(key), before);
      },
    });
    try {
      await m.tail.reached(end);
    } catch (e) {
      await m.tail.stop();
      throw e;
    }
    return m;
  }

  get(key: string): Mirrored<T> | undefined {
    return this.map.get(key);
  }

  entries(): IterableIterator<[string, Mirrored<T>]> {
    return this.map.entries();
  }

  values(): IterableIterator<Mirrored<T>> {
    return this.map.values();
  }

  get size(): number {
    return this.map.size;
  }

  /** Counts the changes of the copy: equal values mean nothing changed in between. */
  get version(): number {
    return this.changes;
  }

  /** Record a write this node made (or read) at `revision`; false (ignored) when the copy already has a newer one. */
  set(key: string, value: T, revision: number): boolean {
    if ((this.seen.get(key) ?? 0) >= revision) return false;
    this.seen.set(key, revision);
    this.map.set(key, { value, revision, time: Date.now() });
    this.changes++;
    return true;
  }

  /** Record a delete this node made of the entry at `revision`; false when the copy already has something newer or nothing. */
  remove(key: string, revision: number): boolean {
    if ((this.seen.get(key) ?? 0) > revision || !this.map.has(key)) return false;
    this.seen.set(key, revision);
    this.map.delete(key);
    this.changes++;
    return true;
  }

  /** The key's current entry read from the bucket (not the copy), put into the copy; null when absent. */
  async fetch(key: string): Promise<Mirrored<T> | null> {
    const e = await this.kv.get(key);
    if (e === null || e.operation !== "PUT") {
      if (e !== null) this.apply(key, null, e.revision, e.created.getTime());
      return null;
    }
    this.apply(key, e.value, e.revision, e.created.getTime());
    return this.map.get(key) ?? null;
  }

  async stop(): Promise<void> {
    await this.tail?.stop();
  }

  /** Take a value (null: deleted) at `revision` unless the copy has seen one as new; true when the copy changed. */
  private apply(key: string, value: Uint8Array | null, revision: number, time: number): boolean {
    if ((this.seen.get(key) ?? 0) >= revision) return false;
    this.seen.set(key, revision);
    const v = value === null ? null : this.opts.parse(key, value);
    if (v === null) {
      if (!this.map.delete(key)) return false;
    } else this.map.set(key, { value: v, revision, time });
    this.changes++;
    return true;
  }
}
