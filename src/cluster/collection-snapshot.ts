/**
 * @module collection-snapshot — a collection directory at a checkpoint as snapshot files
 * (snapshots.ts, kind `collection`), and a directory restored from them: what a new or returning
 * shard replica starts from instead of the whole stream.
 */
import { existsSync, linkSync, mkdirSync } from "node:fs";
import { mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import type { Collection } from "../engine/collection.js";
import { loadCheckpoint } from "../engine/collection-files.js";
import { SvcError } from "../errors.js";
import type { SnapshotFile } from "./snapshots.js";

/**
 * Checkpoint `c`, then take its checkpoint's files: collection.json, checkpoint.json and, per
 * partition it names, the data files (append-only: rows past the checkpoint's counts are cut when the
 * copy opens) and the tombstones, index, sums and ivf files it names. They are hard-linked into
 * `staging` in one synchronous step right after reading checkpoint.json, so a later checkpoint or
 * compaction (which replace or delete files, never rewrite them) cannot change the set under us;
 * then read. Resolves with the sequence the checkpoint holds everything up to, the lowest sequence a
 * replica starting there still reads (Collection.neededAfter), and the files.
 */
export async function captureCollection(c: Collection, staging: string): Promise<{ seq: number; floor: number; files: SnapshotFile[] }> {
  await c.checkpoint();
  await rm(staging, { recursive: true, force: true });
  // --- synchronous from here to the links: no other task of this process runs in between
  const cp = loadCheckpoint(c.dir);
  if (cp === null) throw new SvcError("E_INTERNAL", `${c.dir}: no checkpoint after checkpoint()`);
  const floor = c.neededAfter(cp.wal);
  const names = ["collection.json", "checkpoint.json"];
  for (const p of cp.partitions) {
    for (const f of ["bits.bin", "values.f32", "records.bin", p.tombstones, p.index, p.sums, p.ivf]) {
      if (f !== undefined && existsSync(join(c.dir, "parts", p.dir, f))) names.push(`parts/${p.dir}/${f}`);
    }
  }
  for (const n of names) {
    mkdirSync(dirname(join(staging, n)), { recursive: true });
    linkSync(join(c.dir, n), join(staging, n));
  }
  // --- end of the synchronous part
  try {
    const files: SnapshotFile[] = [];
    for (const path of names) files.push({ path, data: new Uint8Array(await readFile(join(staging, path))) });
    return { seq: cp.wal.offset, floor, files };
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
}

/** The checkpoint sequence of the collection directory `dir` (0: no checkpoint, or no directory). */
export function checkpointSeq(dir: string): number {
  try {
    return loadCheckpoint(dir)?.wal.offset ?? 0;
  } catch {
    return 0; // an unreadable checkpoint: the replica starts over (from a snapshot, or the stream)
  }
}

/**
 * Replace the directory `dir` with the snapshot's files: written into `<dir>.restoring`, then
 * swapped in by rename (a crash leaves either the old directory or the whole new one, plus a
 * `.restoring` folder the next restore removes).
 */
export async function restoreCollection(dir: string, files: SnapshotFile[]): Promise<void> {
  const tmp = `${dir}.restoring`;
  await rm(tmp, { recursive: true, force: true });
  await mkdir(join(tmp, "parts"), { recursive: true });
  for (const f of files) {
    await mkdir(dirname(join(tmp, f.path)), { recursive: true });
    await writeFile(join(tmp, f.path), f.data, { flush: true });
  }
  if (!existsSync(join(tmp, "checkpoint.json"))) {
    throw new SvcError("E_IO", `snapshot for ${dir} has no checkpoint.json`);
  }
  await rm(dir, { recursive: true, force: true });
  await mkdir(dirname(dir), { recursive: true });
  await rename(tmp, dir);
}
