/**
 * @module snapshots — point-in-time copies of state folded from one JetStream subject (a shard
 * replica's checkpoint files, a ledger fold) in the object store `svc_snapshots`, and the purge of
 * the subject below them: the one retention mechanism of cluster mode's logs (FORMAT.md "Snapshots").
 *
 * Invariant (what makes a purge safe): every snapshot the store lists for a subject covers every
 * frame the subject has lost. Kept by three rules:
 * - two slots per subject (`<subject>~0`, `<subject>~1`); a new snapshot replaces the OLDER one
 *   (an object store put swaps its metadata only after every chunk is stored, so a put cut short
 *   leaves the slot's previous snapshot whole), and the subject is purged only below the older of
 *   the two — the newer one stays usable, and the older one is the fallback if the newer is unreadable;
 * - a snapshot is read back and checked (the store's SHA-256 digest, and ours per file) before it
 *   counts for a purge, and a reader uses only one that checks;
 * - the purge stops at the older snapshot's `floor`: the lowest sequence a reader starting after it
 *   still reads (its sequence + 1, or the first chunk of a frame split in chunks that straddles it).
 * Readers that may be behind a purge (a replica that was frozen or cut off) compare their position
 * with `list()` (shard-host.ts): below the older slot's sequence they start again from a snapshot.
 */
import { jetstreamManager } from "@nats-io/jetstream";
import { Objm, StorageType, type ObjectStore } from "@nats-io/obj";
import type { NatsConnection } from "@nats-io/transport-node";
import { createHash } from "node:crypto";
import { SvcError } from "../errors.js";

/** The object store holding every snapshot (its stream is `OBJ_svc_snapshots`). */
export const SNAPSHOT_BUCKET = "svc_snapshots";
/** Version of the snapshot object format (FORMAT.md "Snapshots"); a reader refuses any other. */
export const SNAPSHOT_FORMAT = 1;
/** First bytes of every snapshot object. */
const MAGIC = "SVCSNAP1";
/** Snapshots kept per subject. */
const SLOTS = 2;

/** One file of a snapshot: a path relative to the state's root (`/`-separated) and its bytes. */
export interface SnapshotFile {
  path: string;
  data: Uint8Array;
}

export interface Snapshot {
  /** The stream and subject whose frames the state folds. */
  stream: string;
  subject: string;
  /** The stream sequence the state holds every frame of the subject up to (replay resumes after it). */
  seq: number;
  /** The lowest sequence a reader starting after `seq` still reads (`seq` + 1, or less for a chunked frame straddling it; 0: unknown, never purge below this snapshot). */
  floor: number;
  /** What the files are (`collection`: a collection directory at a checkpoint; `ledger`: a wallet fold). */
  kind: string;
  files: SnapshotFile[];
}

/** A snapshot as listed (without its contents). */
export interface SnapshotInfo {
  /** Object name: `<subject>~<slot>`. */
  name: string;
  slot: number;
  seq: number;
  /** As Snapshot.floor. */
  floor: number;
  kind: string;
  /** Object size in bytes. */
  bytes: number;
}

/** The snapshot store of a connection (the caller owns the connection). */
export class Snapshots {
  private constructor(
    private readonly nc: NatsConnection,
    private readonly os: ObjectStore,
  ) {}

  /** Open the bucket, creating it (R `replicas`, file storage) when missing. */
  static async open(nc: NatsConnection, opts: { replicas?: number } = {}): Promise<Snapshots> {
    const os = await new Objm(nc).create(SNAPSHOT_BUCKET, { replicas: opts.replicas ?? 3, storage: StorageType.File });
    return new Snapshots(nc, os);
  }

  /** The subject's snapshots, newest first (0, 1 or 2). */
  async list(subject: string): Promise<SnapshotInfo[]> {
    const out: SnapshotInfo[] = [];
    for (let slot = 0; slot < SLOTS; slot++) {
      const name = `${subject}~${slot}`;
      const info = await this.os.info(name);
      if (info === null || info.deleted) continue;
      const seq = Number(info.metadata?.seq);
      if (!Number.isSafeInteger(seq) || seq < 0) continue; // not ours: never counted, never used
      const floor = Number(info.metadata?.floor);
      out.push({
        name,
        slot,
        seq,
        floor: Number.isSafeInteger(floor) && floor >= 0 && floor <= seq + 1 ? floor : 0,
        kind: info.metadata?.kind ?? "",
        bytes: info.size,
      });
    }
    return out.sort((a, b) => b.seq - a.seq);
  }

  /**
   * Store `snap` in the subject's older (or empty) slot, then read it back and check it; resolves
   * with its info once it checks (E_IO otherwise: the slot then holds a snapshot no reader uses).
   * A snapshot not newer than the newest stored is not written (that one is returned).
   */
  async write(snap: Snapshot): Promise<SnapshotInfo> {
    const have = await this.list(snap.subject);
    if (have[0] !== undefined && have[0].seq >= snap.seq) return have[0];
    const used = new Set(have.map((h) => h.slot));
    const slot = have.length < SLOTS ? [...Array(SLOTS).keys()].find((s) => !used.has(s))! : have[have.length - 1]!.slot;
    const name = `${snap.subject}~${slot}`;
    const bytes = encodeSnapshot(snap);
    const info = await this.os.putBlob(
      {
        name,
        metadata: {
          format: String(SNAPSHOT_FORMAT),
          seq: String(snap.seq),
          floor: String(snap.floor),
          kind: snap.kind,
          stream: snap.stream,
        },
      },
      bytes,
    );
    const listed: SnapshotInfo = { name, slot, seq: snap.seq, floor: snap.floor, kind: snap.kind, bytes: info.size };
    await this.read(listed);
    return listed;
  }

  /** Read and check one snapshot: the store's digest, the format, our per-file SHA-256, its subject and sequence (E_IO on any mismatch). */
  async read(info: SnapshotInfo): Promise<Snapshot> {
    let bytes: Uint8Array | null;
    try {
      bytes = await this.os.getBlob(info.name);
    } catch (e) {
      throw new SvcError("E_IO", `snapshot ${info.name}: ${(e as Error).message}`, { cause: e });
    }
    if (bytes === null) throw new SvcError("E_IO", `snapshot ${info.name} is gone (replaced by a newer one)`);
    const snap = decodeSnapshot(bytes, info.name);
    if (snap.seq !== info.seq || `${snap.subject}~${info.slot}` !== info.name)
      throw new SvcError("E_IO", `snapshot ${info.name}: holds ${snap.subject} at ${snap.seq}, listed at ${info.seq}`);
    return snap;
  }

  /** The newest snapshot of the subject that reads and checks (an unreadable one is skipped), or null. */
  async newest(subject: string): Promise<Snapshot | null> {
    for (const info of await this.list(subject)) {
      const snap = await this.read(info).catch(() => null); // skipped, never taken as "no purge": a caller finding no snapshot still checks for a hole (wallet.ts take)
      if (snap !== null) return snap;
    }
    return null;
  }

  /**
   * Purge the subject below its older snapshot (only while it has two, at least one of which reads
   * and checks: the newer is what readers start from, the older its fallback), from its `floor`
   * down, and never at or above `cap` (the lowest next sequence its live readers still need).
   * Resolves with how many messages went.
   */
  async purgeBelow(stream: string, subject: string, opts: { cap?: number } = {}): Promise<number> {
    const have = await this.list(subject);
    if (have.length < SLOTS) return 0;
    // After the purge a reader needs one of the two: at least one must read and check now.
    if (
      !(await this.read(have[0]!).then(
        () => true,
        () =>
          this.read(have[1]!).then(
            () => true,
            () => false,
          ),
      ))
    )
      return 0;
    const floor = Math.min(have[have.length - 1]!.floor, opts.cap ?? Infinity);
    if (floor <= 1) return 0;
    const jsm = await jetstreamManager(this.nc);
    const r = await jsm.streams.purge(stream, { filter: subject, seq: floor });
    return r.purged;
  }

  /** Delete the subject's snapshots (its log was deleted). */
  async remove(subject: string): Promise<void> {
    for (let slot = 0; slot < SLOTS; slot++) await this.os.delete(`${subject}~${slot}`).catch(() => undefined); // a slot never written has nothing to delete; a failed delete leaves a blob no reader asks for (its log is gone)
  }
}

/**
 * The object's bytes: MAGIC, a u32 LE header length, the header (JSON: `{format, stream, subject,
 * seq, kind, files: [{path, bytes, sha256}]}`), then each file's bytes in header order.
 */
export function encodeSnapshot(snap: Snapshot): Uint8Array {
  const header = Buffer.from(
    JSON.stringify({
      format: SNAPSHOT_FORMAT,
      stream: snap.stream,
      subject: snap.subject,
      seq: snap.seq,
      floor: snap.floor,
      kind: snap.kind,
      files: snap.files.map((f) => ({ path: f.path, bytes: f.data.byteLength, sha256: sha256(f.data) })),
    }),
  );
  const head = Buffer.alloc(MAGIC.length + 4);
  head.write(MAGIC, 0, "latin1");
  head.writeUInt32LE(header.length, MAGIC.length);
  return Buffer.concat([head, header, ...snap.files.map((f) => f.data)]);
}

export function decodeSnapshot(bytes: Uint8Array, name = "snapshot"): Snapshot {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const bad = (why: string) => new SvcError("E_IO", `${name}: ${why}; not used`);
  if (buf.length < MAGIC.length + 4 || buf.toString("latin1", 0, MAGIC.length) !== MAGIC) throw bad("not a snapshot (magic)");
  const n = buf.readUInt32LE(MAGIC.length);
  let at = MAGIC.length + 4;
  if (at + n > buf.length) throw bad("header cut short");
  let h: { format?: unknown; stream?: unknown; subject?: unknown; seq?: unknown; floor?: unknown; kind?: unknown; files?: unknown };
  try {
    h = JSON.parse(buf.toString("utf8", at, at + n));
  } catch {
    throw bad("header is not JSON");
  }
  at += n;
  if (typeof h !== "object" || h === null) throw bad("header is not an object");
  if (h.format !== SNAPSHOT_FORMAT) throw bad(`format ${String(h.format)} (this version reads ${SNAPSHOT_FORMAT})`);
  if (
    typeof h.stream !== "string" ||
    typeof h.subject !== "string" ||
    typeof h.kind !== "string" ||
    !Number.isSafeInteger(h.seq) ||
    !Number.isSafeInteger(h.floor) ||
    !Array.isArray(h.files)
  )
    throw bad("header fields");
  const files: SnapshotFile[] = [];
  for (const f of h.files as Array<{ path?: unknown; bytes?: unknown; sha256?: unknown }>) {
    if (typeof f?.path !== "string" || !Number.isSafeInteger(f.bytes) || (f.bytes as number) < 0 || typeof f.sha256 !== "string")
      throw bad("file entry");
    if (f.path.split("/").some((p) => p === "" || p === "." || p === "..")) throw bad(`file path '${f.path}'`);
    const end = at + (f.bytes as number);
    if (end > buf.length) throw bad(`file ${f.path} cut short`);
    const data = new Uint8Array(buf.subarray(at, end));
    if (sha256(data) !== f.sha256) throw bad(`file ${f.path} fails its SHA-256`);
    files.push({ path: f.path, data });
    at = end;
  }
  if (at !== buf.length) throw bad("bytes after the last file");
  return { stream: h.stream, subject: h.subject, seq: h.seq as number, floor: h.floor as number, kind: h.kind, files };
}

function sha256(data: Uint8Array): string {
  return createHash("sha256").update(data).digest("hex");
}
