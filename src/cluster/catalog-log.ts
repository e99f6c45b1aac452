/**
 * @module catalog-log — the index catalog of cluster mode as an ordered fold of a stream (issue 31
 * item 8): every change (create, configure, delete, import) is a message on `svc_catalog.<tenant>.<name>`
 * of the replicated stream `svc_catalog`, every node folds the whole stream in order, and the fold
 * decides each change from the state before it: the first create of a name wins; a configure or a
 * delete names the revision it read (the sequence of the change that set the record) and loses when
 * another change came in between. So winners are chosen by the stream's Raft order, the same on every
 * node, and not by a KV compare-and-set, which nats-server before 2.9.21 lets concurrent writers all
 * win (nats-server#4320; Debian ships 2.9.10). A node publishes a change (message id = the change's
 * id: a retried publish is stored once), waits for its own fold to reach the acknowledged sequence,
 * and reads the outcome there, as the wallet ledger does (wallet.ts).
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
import { parseStoredJson } from "../safe-values.js";
import type { Mirrored } from "./kv-mirror.js";
import { noQuorum, untilQuorum } from "./quorum.js";
import type { ClusterIndexRecord } from "./shards.js";
import { StreamTail } from "./stream-tail.js";

/** The catalog stream; the changes of index `<name>` of `<tenant>` are its subject `svc_catalog.<tenant>.<name>`. */
export const CATALOG_STREAM = "svc_catalog";

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
}

export class CatalogLog {
  private readonly map = new Map<string, Mirrored<ClusterIndexRecord>>();
  /** Every key a change was ever folded for (won or lost): an import wins only for a key the stream never named. */
  private readonly named = new Set<string>();
  /** Changes this node waits for (by id) and, once folded, whether they won. */
  private readonly waiting = new Map<string, boolean | null>();
  private tail: StreamTail | null = null;

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
    c.tail = new StreamTail(nc, {
      stream: CATALOG_STREAM,
      what: "the index catalog",
      catchUp: info.state.last_seq,
      quorumTimeoutMs: timeout,
      onMessage: (m) => c.fold(m.subject.slice(CATALOG_STREAM.length + 1), m.data, m.seq, m.info.timestampNanos / 1e6),
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
    await this.folded(last);
    return this.map.get(key);
  }

  /** Publish a change of `key` (retried with its message id until acknowledged, else E_NO_QUORUM), wait until the fold took it, and say whether it won. */
  async submit(key: string, change: ChangeDraft): Promise<boolean> {
    const c = { ...change, id: change.id ?? randomBytes(8).toString("hex") } as CatalogChange;
    this.waiting.set(c.id, null);
    try {
      const seq = await untilQuorum(
        `change index '${key}'`,
        this.opts.quorumTimeoutMs ?? 15_000,
        async () => {
          const ack = await this.js.publish(`${CATALOG_STREAM}.${key}`, JSON.stringify(c), { msgID: `catalog:${c.id}`, timeout: 2000 });
          return ack.seq;
        },
        { field: "name" },
      );
      await this.folded(seq);
      return this.waiting.get(c.id) === true;
    } finally {
      this.waiting.delete(c.id);
    }
  }

  /** Resolves once the fold took sequence `seq`; E_NO_QUORUM when it did not within the quorum timeout (the tail resumes 2-3 s after the stream has a leader again). */
  private async folded(seq: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(noQuorum(`the index catalog was not read up to sequence ${seq} in time; retry`, "name")),
        this.opts.quorumTimeoutMs ?? 15_000,
      );
    });
    try {
      await Promise.race([this.tail!.reached(seq), late]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** The sequence of the last change folded. */
  get position(): number {
    return this.tail?.position ?? 0;
  }

  async stop(): Promise<void> {
    await this.tail?.stop();
  }

  /**
   * Apply one change, from the message and the state before it alone (so every node decides the
   * same). A message that is not a change, or whose record is not this key's, is skipped everywhere.
   */
  private fold(key: string, data: Uint8Array, seq: number, time: number): void {
    const c = parseChange(key, data);
    if (c === null) return;
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
