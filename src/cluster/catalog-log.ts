/**
 * @module catalog-log — the index catalog of cluster mode as an ordered fold of a stream (issue 31
 * item 8): every change (create, configure, delete, import) is a message on `svc_catalog.<tenant>.<name>`
 * of the replicated stream `svc_catalog`, every node folds the whole stream in order, and the fold
 * decides each change from the state before it: the first create of a name wins; a configure or a
 * delete names the revision it read (the sequence of the change that set the record) and loses when
 * another change came in between. So winners are chosen by the stream's Raft order, the same on every
 * node, and not by a KV compare-and-set, which nats-server before 2.9.21 lets concurrent writers all
 * win (nats-server#4320; Debian ships 2.9.10). A node publishes a change (retried until acknowledged,
 * so the stream may hold it twice: the fold skips a change id it folded lately, FOLDED_KEEP), waits
 * for its own fold to reach the acknowledged sequence, and reads the outcome there, as the wallet
 * ledger does (wallet.ts). No `Nats-Msg-Id`: see jetstream-log.ts FRAME_HEADER for why.
 *
 * Retention (issue 31 item 6), as the ledger's: with `snapshots`, a node writes its fold (every entry
 * with its revision and time, and every key ever named) as a snapshot of kind `catalog` every
 * CATALOG_SNAPSHOT_EVERY changes it folds (unless another node's is that recent) and purges the stream
 * below the older of the two; a node starts from the newest snapshot and folds the changes after it,
 * and a node that finds a hole in the sequence (it was behind the purge) starts again from the newest
 * snapshot. The fold of snapshot + tail is the fold of the whole stream: the snapshot is that fold's
 * state at its sequence, and every decision after it reads only that state.
 */
import {
  jetstream,
  jetstreamManager,
  JetStreamApiCodes,
  JetStreamApiError,
  type JetStreamClient,
  type JetStreamManager,
} from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { randomBytes } from "node:crypto";
import { SvcError } from "../errors.js";
import { parseStoredJson } from "../safe-values.js";
import type { Mirrored } from "./kv-mirror.js";
import { noQuorum, untilQuorum, within } from "./quorum.js";
import type { ClusterIndexRecord } from "./shards.js";
import type { Snapshot, Snapshots } from "./snapshots.js";
import { StreamTail } from "./stream-tail.js";

/** Change ids the fold remembers to skip a repeat (far more than the changes stored within a publish's retries). */
const FOLDED_KEEP = 4096;
/** The catalog stream; the changes of index `<name>` of `<tenant>` are its subject `svc_catalog.<tenant>.<name>`. */
export const CATALOG_STREAM = "svc_catalog";
/** The catalog's snapshots cover the whole stream (snapshots.ts names them by this filter). */
export const CATALOG_SUBJECTS = `${CATALOG_STREAM}.>`;
/** A node writes a snapshot of its fold after this many changes, unless another node's is that recent. */
export const CATALOG_SNAPSHOT_EVERY = 1000;
/** A change this node waited for that a snapshot covered before the node folded it: its outcome is unknown here. */
const UNKNOWN = "unknown";

/**
 * One change, the JSON body of a catalog message. `record`: the whole record after the change;
 * `base`: the revision (stream sequence) of the record the writer read.
 */
export type CatalogChange =
  | { k: "create"; id: string; record: ClusterIndexRecord }
  | { k: "import"; id: string; record: ClusterIndexRecord }
  | { k: "configure"; id: string; base: number; record: ClusterIndexRecord }
  | { k: "delete"; id: string; base: number };

/** A change before it is submitted: its id is drawn then unless given. */
export type ChangeDraft = CatalogChange extends infer C ? (C extends CatalogChange ? Omit<C, "id"> & { id?: string } : never) : never;

export interface CatalogLogOptions {
  /** Replicas of the stream (default 3). */
  replicas?: number;
  /** How long a change keeps retrying while the stream has no leader before E_NO_QUORUM (default 15 s). */
  quorumTimeoutMs?: number;
  /** Called for each change the fold takes (won changes only), own ones included, with the entry before and after (undefined: absent). */
  onChange?(key: string, now: Mirrored<ClusterIndexRecord> | undefined, before: Mirrored<ClusterIndexRecord> | undefined): void;
  /** Fold snapshots and the purge below them (see the module comment); `every`: default CATALOG_SNAPSHOT_EVERY. */
  snapshots?: { store: Snapshots; every?: number };
}

export class CatalogLog {
  private readonly map = new Map<string, Mirrored<ClusterIndexRecord>>();
  /** Every key a change was ever folded for (won or lost): an import wins only for a key the stream never named. */
  private readonly named = new Set<string>();
  /** Ids of the last FOLDED_KEEP changes folded, oldest first: a repeat (a publish retried after a lost ack) is skipped. */
  private readonly recentIds = new Set<string>();
  /** Changes this node waits for (by id) and, once folded, whether they won (UNKNOWN: a snapshot covered it). */
  private readonly waiting = new Map<string, boolean | null | typeof UNKNOWN>();
  private tail: StreamTail | null = null;
  /** The sequence of the last change folded (or of the snapshot the fold started from). */
  private folded = 0;
  private sinceSnapshot = 0;
  private snapshotting = false;

  private constructor(
    private readonly js: JetStreamClient,
    private readonly jsm: JetStreamManager,
    private readonly opts: CatalogLogOptions,
  ) {}

  /** Create the stream when absent, fold it to its end, and keep folding what follows. */
  static async open(nc: NatsConnection, opts: CatalogLogOptions = {}): Promise<CatalogLog> {
    const timeout = opts.quorumTimeoutMs ?? 15_000;
    const jsm = await jetstreamManager(nc, { timeout: 2000 });
    const info = await untilQuorum(
      "open the index catalog",
      timeout,
      async () => {
        const existing = await jsm.streams.info(CATALOG_STREAM).catch((e: unknown) => {
          if (e instanceof JetStreamApiError && e.code === JetStreamApiCodes.StreamNotFound) return null;
          throw e;
        });
        return (
          existing ??
          (await jsm.streams.add({
            name: CATALOG_STREAM,
            subjects: [`${CATALOG_STREAM}.>`],
            num_replicas: opts.replicas ?? 3,
            duplicate_window: 120_000 * 1_000_000,
          }))
        );
      },
      { field: "name" },
    );
    const c = new CatalogLog(jetstream(nc, { timeout: 2000 }), jsm, opts);
    // Start from the newest fold snapshot that reads and checks, if any.
    const snap = opts.snapshots === undefined ? null : await opts.snapshots.store.newest(CATALOG_SUBJECTS);
    if (snap !== null) c.load(snap);
    c.tail = new StreamTail(nc, {
      stream: CATALOG_STREAM,
      what: "the index catalog",
      start: { after: c.folded },
      catchUp: Math.max(c.folded, info.state.last_seq),
      quorumTimeoutMs: timeout,
      onMessage: (m) => c.take(m.seq, m.subject.slice(CATALOG_STREAM.length + 1), m.data, m.info.timestampNanos / 1e6),
    });
    try {
      await c.tail.reached(info.state.last_seq);
    } catch (e) {
      await c.tail.stop();
      throw e;
    }
    return c;
  }

  get(key: string): Mirrored<ClusterIndexRecord> | undefined {
    return this.map.get(key);
  }

  values(): IterableIterator<Mirrored<ClusterIndexRecord>> {
    return this.map.values();
  }

  /** True once the stream named `key` in any change (imports of it lose). */
  everNamed(key: string): boolean {
    return this.named.has(key);
  }

  /** The key's entry once this node folded every change the stream holds for it now (one JetStream round trip). */
  async fresh(key: string): Promise<Mirrored<ClusterIndexRecord> | undefined> {
    // null: the subject holds no message
    const last = await untilQuorum(
      "read the index catalog",
      this.opts.quorumTimeoutMs ?? 15_000,
      async () => (await this.jsm.streams.getMessage(CATALOG_STREAM, { last_by_subj: `${CATALOG_STREAM}.${key}` }))?.seq ?? 0,
      { field: "name" },
    );
    await this.reached(last);
    return this.map.get(key);
  }

  /** Publish a change of `key` (retried until acknowledged, else E_NO_QUORUM), wait until the fold took it, and say whether it won. */
  async submit(key: string, change: ChangeDraft): Promise<boolean> {
    const c = { ...change, id: change.id ?? randomBytes(8).toString("hex") } as CatalogChange;
    this.waiting.set(c.id, null);
    try {
      const seq = await untilQuorum(
        `change index '${key}'`,
        this.opts.quorumTimeoutMs ?? 15_000,
        async () => {
          const ack = await this.js.publish(`${CATALOG_STREAM}.${key}`, JSON.stringify(c), { timeout: 2000 });
          return ack.seq;
        },
        { field: "name" },
      );
      await this.reached(seq);
      const won = this.waiting.get(c.id);
      if (won === UNKNOWN)
        throw new SvcError(
          "E_OUTCOME_UNKNOWN",
          `index '${key}': this node caught up from a catalog snapshot past the change, so its outcome is not known here; retry`,
          { field: "name", details: { retryAfterSeconds: 1 } },
        );
      return won === true;
    } finally {
      this.waiting.delete(c.id);
    }
  }

  /** Resolves once the fold took sequence `seq`; E_NO_QUORUM when it did not within the quorum timeout (the tail resumes 2-3 s after the stream has a leader again). */
  private reached(seq: number): Promise<void> {
    return within(this.tail!.reached(seq), this.opts.quorumTimeoutMs ?? 15_000, () =>
      noQuorum(`the index catalog was not read up to sequence ${seq} in time; retry`, "name"),
    );
  }

  /** The sequence of the last change folded. */
  get position(): number {
    return this.tail?.position ?? 0;
  }

  async stop(): Promise<void> {
    await this.tail?.stop();
  }

  /**
   * The tail's message at `seq`. The stream deletes nothing but by a purge, so a sequence past
   * folded + 1 means a purge took the changes between (this node was behind it): start again from
   * the newest snapshot, which covers them (the purge goes only below the older one), or fail the
   * tail (E_STORE_OFFLINE) when none does — never fold past a hole.
   */
  private async take(seq: number, key: string, data: Uint8Array, time: number): Promise<void> {
    const snaps = this.opts.snapshots;
    if (snaps !== undefined && seq > this.folded + 1) {
      const snap = await snaps.store.newest(CATALOG_SUBJECTS);
      if (snap === null || snap.seq < seq - 1)
        throw new SvcError(
          "E_STORE_OFFLINE",
          `the catalog ${CATALOG_STREAM} has no change ${this.folded + 1}..${seq - 1} and no snapshot covering them`,
          {
            field: "name",
          },
        );
      this.load(snap);
    }
    if (seq <= this.folded) return;
    this.fold(key, data, seq, time);
    this.folded = seq;
    if (snaps !== undefined && ++this.sinceSnapshot >= (snaps.every ?? CATALOG_SNAPSHOT_EVERY) && !this.snapshotting) void this.snapshot();
  }

  /** Write the fold at this sequence as the newest snapshot (unless another node wrote one within the last half interval), then purge below the older one. */
  private async snapshot(): Promise<void> {
    const snaps = this.opts.snapshots!;
    const every = snaps.every ?? CATALOG_SNAPSHOT_EVERY;
    this.snapshotting = true;
    this.sinceSnapshot = 0;
    try {
      const seq = this.folded;
      const data = Buffer.from(JSON.stringify({ seq, entries: [...this.map], named: [...this.named], folded: [...this.recentIds] }));
      const newest = (await snaps.store.list(CATALOG_SUBJECTS))[0];
      if (newest === undefined || newest.seq < seq - every / 2)
        await snaps.store.write({
          stream: CATALOG_STREAM,
          subject: CATALOG_SUBJECTS,
          seq,
          floor: seq + 1,
          kind: "catalog",
          files: [{ path: "fold.json", data }],
        });
      await snaps.store.purgeBelow(CATALOG_STREAM, CATALOG_SUBJECTS);
    } catch {
      // not now (no quorum, a snapshot that did not check): the next interval tries again
    } finally {
      this.snapshotting = false;
    }
  }

  /**
   * Replace the fold with a snapshot's (FORMAT.md "Snapshots", kind `catalog`): onChange is called
   * for every key whose entry differs; changes this node waits for that it covers get an unknown outcome.
   */
  private load(snap: Snapshot): void {
    const file = snap.kind === "catalog" ? snap.files.find((f) => f.path === "fold.json") : undefined;
    if (file === undefined) throw new SvcError("E_STORE_OFFLINE", `catalog snapshot at ${snap.seq} holds no fold`, { field: "name" });
    const s = parseStoredJson(new TextDecoder().decode(file.data)) as {
      entries: Array<[string, Mirrored<ClusterIndexRecord>]>;
      named: string[];
      folded?: string[];
    };
    const before = new Map(this.map);
    this.map.clear();
    for (const [k, e] of s.entries) this.map.set(k, e);
    this.named.clear();
    for (const k of s.named) this.named.add(k);
    this.recentIds.clear();
    for (const id of s.folded ?? []) this.recentIds.add(id);
    for (const k of this.waiting.keys()) if (this.waiting.get(k) === null) this.waiting.set(k, UNKNOWN);
    this.folded = snap.seq;
    for (const k of new Set([...before.keys(), ...this.map.keys()])) {
      const [b, n] = [before.get(k), this.map.get(k)];
      if (b?.revision !== n?.revision) this.opts.onChange?.(k, n, b);
    }
  }

  /**
   * Apply one change, from the message and the state before it alone (so every node decides the
   * same). A message that is not a change, or whose record is not this key's, is skipped everywhere.
   */
  private fold(key: string, data: Uint8Array, seq: number, time: number): void {
    const c = parseChange(key, data);
    if (c === null || this.recentIds.has(c.id)) return;
    this.recentIds.add(c.id);
    if (this.recentIds.size > FOLDED_KEEP) this.recentIds.delete(this.recentIds.values().next().value!);
    const before = this.map.get(key);
    let won: boolean;
    switch (c.k) {
      case "create":
        won = before === undefined;
        break;
      case "import":
        won = !this.named.has(key);
        break;
      case "configure":
        won = before !== undefined && before.revision === c.base && before.value.incarnation === c.record.incarnation;
        break;
      case "delete":
        won = before !== undefined && before.revision === c.base;
        break;
    }
    this.named.add(key);
    if (this.waiting.has(c.id) && this.waiting.get(c.id) === null) this.waiting.set(c.id, won);
    if (!won) return;
    if (c.k === "delete") this.map.delete(key);
    else this.map.set(key, { value: c.record, revision: seq, time });
    this.opts.onChange?.(key, this.map.get(key), before);
  }
}

/** A catalog message's change, or null when it is not one (or its record does not belong to `key` = `<tenant>.<name>`). */
export function parseChange(key: string, data: Uint8Array): CatalogChange | null {
  try {
    const c = parseStoredJson(new TextDecoder().decode(data)) as CatalogChange;
    if (typeof c !== "object" || c === null || typeof c.id !== "string") return null;
    if (c.k === "delete") return Number.isSafeInteger(c.base) ? c : null;
    if (c.k !== "create" && c.k !== "import" && c.k !== "configure") return null;
    if (c.k === "configure" && !Number.isSafeInteger(c.base)) return null;
    const r = checkRecord(c.record);
    return r !== null && `${r.tenant}.${r.name}` === key ? c : null;
  } catch {
    return null;
  }
}

/** `r` when it has the fields every node relies on, else null. */
export function checkRecord(r: unknown): ClusterIndexRecord | null {
  const x = r as ClusterIndexRecord;
  const ok =
    typeof x === "object" &&
    x !== null &&
    typeof x.tenant === "string" &&
    typeof x.name === "string" &&
    Number.isInteger(x.dimension) &&
    Number.isInteger(x.shards) &&
    x.shards >= 1 &&
    Number.isInteger(x.replicas) &&
    typeof x.incarnation === "string" &&
    (x.streams === undefined || (Number.isInteger(x.streams) && x.streams >= 1));
  return ok ? x : null;
}
