/**
 * @module shard-snapshots — the snapshot rules of the follow-mode collections shard-host.ts serves
 * (any collection on a followed subject: index shards, record shards): where a replica starts, when
 * the shard's snapshot taker writes one, and how it takes it. The store and the purge are snapshots.ts.
 */
import type { Collection } from "../engine/collection.js";
import { SvcError } from "../errors.js";
import { captureCollection, checkpointSeq, restoreCollection } from "./collection-snapshot.js";
import type { SnapshotInfo, Snapshots } from "./snapshots.js";

/** A shard's snapshot is due once this many bytes were read on its subject since its last one (and at least its live bytes). */
export const SNAPSHOT_MIN_BYTES = 1 << 20;
/** How often a node's snapshot taker looks at the shards it is first owner of (ms). */
export const SNAPSHOT_CHECK_MS = 5000;

export interface ShardSnapshotOptions {
  store: Snapshots;
  /** Default SNAPSHOT_MIN_BYTES. */
  minBytes?: number;
  /** Default SNAPSHOT_CHECK_MS. */
  checkMs?: number;
}

/**
 * The snapshot policy from the environment (OPERATIONS.md "Log retention"): SVC_SNAPSHOT_MIN_BYTES,
 * SVC_SNAPSHOT_CHECK_MS (positive integers; anything else keeps the default).
 */
export function snapshotPolicyFromEnv(env: NodeJS.ProcessEnv = process.env): Omit<ShardSnapshotOptions, "store"> {
  const n = (v: string | undefined) => (v !== undefined && /^[0-9]{1,15}$/.test(v) && Number(v) > 0 ? Number(v) : undefined);
  return { minBytes: n(env.SVC_SNAPSHOT_MIN_BYTES), checkMs: n(env.SVC_SNAPSHOT_CHECK_MS) };
}

/**
 * Make the replica directory `dir` of `subject` ready to open, and return the sequence it starts
 * after. Its own checkpoint when that is at least the newest snapshot; else the newest snapshot that
 * reads and checks (written over `dir`); else, with none readable, its own checkpoint when no frame
 * after it can have been purged (fewer than two snapshots, or it is at least the older one's) —
 * otherwise E_STORE_OFFLINE (the shard opens on another replica; this one is retried).
 */
export async function prepareReplica(store: Snapshots, dir: string, subject: string): Promise<number> {
  const have = await store.list(subject);
  const local = checkpointSeq(dir);
  if (have.length === 0 || local >= have[0]!.seq) return local;
  for (const info of have) {
    if (info.seq <= local) break;
    const snap = await store.read(info).catch(() => null); // unreadable: an older one or the log is used, never "no purge": openShard checks behindPurge from the start taken
    if (snap === null || snap.kind !== "collection") continue;
    await restoreCollection(dir, snap.files);
    return snap.seq;
  }
  if (have.length < 2 || local >= have[have.length - 1]!.seq) return local;
  throw new SvcError(
    "E_STORE_OFFLINE",
    `${subject}: no snapshot reads and checks, and frames after this replica's checkpoint (${local}) may have been purged`,
    { details: { retryAfterSeconds: 2 } },
  );
}

/**
 * Whether a replica at (or started from) sequence `from` may have missed frames to a purge: the
 * subject's older snapshot is past it (a purge goes at most up to that one).
 */
export async function behindPurge(store: Snapshots, subject: string, from: number): Promise<boolean> {
  const have = await store.list(subject);
  return have.length >= 2 && from < have[have.length - 1]!.seq;
}

/**
 * Whether a new snapshot of `c` is due, by the bytes read on its subject (`read`: now, `last`: at the
 * newest snapshot, `prev`: at the one before, all since open), against T = max(minBytes, its live
 * float bytes): T read since the newest; or anything since it while T or more lie between the two —
 * what the stream keeps after a purge (below the older one), so it comes back to about 2T even when
 * snapshots fell behind a burst of writes.
 */
export function snapshotDue(c: Collection, at: { last: number; prev: number }, minBytes = SNAPSHOT_MIN_BYTES): boolean {
  const t = Math.max(minBytes, c.stats().totalVectorCount * c.dimension * 4);
  const read = c.walStats.read ?? 0;
  return read - at.last >= t || (read > at.last && at.last - at.prev >= t);
}

/** Checkpoint `c` and store its files as the subject's newest snapshot (read back and checked). */
export async function takeSnapshot(
  store: Snapshots,
  c: Collection,
  at: { stream: string; subject: string; staging: string },
): Promise<SnapshotInfo> {
  const { seq, floor, files } = await captureCollection(c, at.staging);
  return store.write({ stream: at.stream, subject: at.subject, seq, floor, kind: "collection", files });
}
