/**
 * @module kv-mirror — a node's in-memory copy of (part of) a NATS KV bucket, kept current by a
 * watch, so reads stay synchronous and see another node's writes within milliseconds. A node's own
 * writes are put into the copy as soon as the bucket acknowledges them (`set`), so it reads them
 * back at once; the watch never moves an entry back to an older revision.
 */
import { JetStreamApiCodes, JetStreamApiError } from "@nats-io/jetstream";
import type { KV } from "@nats-io/kv";
import { SvcError } from "../errors.js";

export interface Mirrored<T> {
  value: T;
  /** The entry's revision (the bucket stream's sequence): what a compare-and-set names. */
  revision: number;
}

export class KvMirror<T> {
  private readonly map = new Map<string, Mirrored<T>>();
  /** Highest revision seen per key, deletes included (a delete is newer than the value it removes). */
  private readonly seen = new Map<string, number>();
  private stopWatch: () => void = () => undefined;
  private changes = 0;

  private constructor(
    readonly kv: KV,
    private readonly parse: (key: string, value: Uint8Array) => T | null,
  ) {}

  /**
   * Watch `filter` (default every key) of `kv`; resolves once every key the bucket held when the
   * watch started is in the copy. `parse` turns a stored value into T (null: ignore the entry).
   */
  static async open<T>(kv: KV, parse: (key: string, value: Uint8Array) => T | null, filter = ">"): Promise<KvMirror<T>> {
    const m = new KvMirror<T>(kv, parse);
    const watch = await kv.watch({ key: filter });
    m.stopWatch = () => watch.stop();
    let pending = null as Set<string> | null;
    let loaded: () => void = () => undefined;
    const ready = new Promise<void>((resolve) => (loaded = resolve));
    void (async () => {
      for await (const e of watch) {
        m.apply(e.key, e.operation === "PUT" ? e.value : null, e.revision);
        if (pending !== null && pending.delete(e.key) && pending.size === 0) loaded();
      }
    })();
    // The keys present now: the watch (started first) delivers each of them, or a later change of it.
    const keys = new Set<string>();
    for await (const k of await kv.keys(filter)) keys.add(k);
    pending = new Set([...keys].filter((k) => !m.seen.has(k)));
    if (pending.size === 0) loaded();
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
    this.stopWatch();
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
