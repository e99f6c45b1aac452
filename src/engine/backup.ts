/**
 * @module backup — a consistent copy of a collection taken while writes go on: the files one checkpoint names,
 * each cut to the checkpoint's length, with a SHA-256 per file; and the check of such a copy before it is restored.
 *
 * Why this is a point-in-time copy: the checkpoint holds every write up to its log position; its partition data
 * files are append-only, so their first `bytes` (PartitionAtCheckpoint) do not change while later writes append;
 * its tombstones/index/sums files are written once; and maintenance.ts `checkpointThen` keeps any other checkpoint
 * from deleting them (or a retired partition's directory) until the copy is done. The copy needs no log: its
 * checkpoint.json says replay starts at {segment 0, offset 0} of an empty log, so a collection opened on it holds
 * exactly the writes up to the position and its own log starts afresh.
 */
import { createHash } from "node:crypto";
import { mkdirSync } from "node:fs";
import { open } from "node:fs/promises";
import { dirname, isAbsolute, join } from "node:path";
import { SvcError } from "../errors.js";
import type { LogPosition } from "../store/log.js";
import { fsyncDir } from "../store/scan.js";
import { CHECKPOINT_VERSION, writeDurable, type Checkpoint } from "./collection-files.js";
import type { PartitionAtCheckpoint } from "./maintenance.js";

/** One copied file: its path relative to the copy's root, length and SHA-256 (hex). */
export interface CopiedFile {
  path: string;
  bytes: number;
  sha256: string;
}

export interface CollectionCopy {
  /** The log position the copy holds every write up to (the source's log). */
  position: LogPosition;
  files: CopiedFile[];
  /** Sum of the files' bytes. */
  bytes: number;
  /** Live vectors, all namespaces. */
  records: number;
  namespaces: number;
}

const CHUNK = 1 << 20;

/** Copy the first `limit` bytes of `src` (all of it when undefined) to `dest` (created, fsynced), hashing what was copied. */
async function copyCounted(src: string, dest: string, limit: number | undefined): Promise<{ bytes: number; sha256: string }> {
  const hash = createHash("sha256");
  const input = await open(src, "r");
  const output = await open(dest, "wx");
  let pos = 0;
  try {
    const buf = Buffer.allocUnsafe(CHUNK);
    for (;;) {
      const want = limit === undefined ? CHUNK : Math.min(CHUNK, limit - pos);
      if (want <= 0) break;
      const { bytesRead } = await input.read(buf, 0, want, pos);
      if (bytesRead === 0) break;
      hash.update(buf.subarray(0, bytesRead));
      await output.write(buf, 0, bytesRead, pos);
      pos += bytesRead;
    }
    if (limit !== undefined && pos < limit)
      throw new SvcError("E_IO", `${src} holds ${pos} bytes, the checkpoint names ${limit}`, { details: { file: src } });
    await output.datasync();
  } finally {
    await input.close();
    await output.close();
  }
  return { bytes: pos, sha256: hash.digest("hex") };
}

/**
 * Copy collection `dir` as checkpoint `cp` left it into `dest` (which must not exist): collection.json, the
 * partitions' files cut to their checkpoint lengths, and a checkpoint.json whose replay starts at an empty log.
 * Run inside `checkpointThen` (the files must not be dropped meanwhile).
 */
export async function copyCheckpoint(
  dir: string,
  cp: Checkpoint,
  parts: Map<string, PartitionAtCheckpoint>,
  dest: string,
): Promise<CollectionCopy> {
  mkdirSync(join(dest, "parts"), { recursive: true });
  const files: CopiedFile[] = [];
  const copy = async (rel: string, limit?: number) => {
    mkdirSync(dirname(join(dest, rel)), { recursive: true });
    files.push({ path: rel, ...(await copyCounted(join(dir, rel), join(dest, rel), limit)) });
  };
  await copy("collection.json");
  let records = 0;
  for (const p of cp.partitions) {
    const at = parts.get(p.dir);
    if (at === undefined) throw new SvcError("E_INTERNAL", `partition ${p.dir} is in the checkpoint but was not snapshotted`);
    records += at.live;
    for (const [file, bytes] of Object.entries(at.bytes)) await copy(join("parts", p.dir, file), bytes);
    for (const file of [p.tombstones, p.index, p.sums, p.ivf]) if (file !== undefined) await copy(join("parts", p.dir, file));
    await fsyncDir(join(dest, "parts", p.dir));
  }
  const restored: Checkpoint = { version: CHECKPOINT_VERSION, seq: cp.seq, wal: { segment: 0, offset: 0 }, partitions: cp.partitions };
  const body = Buffer.from(JSON.stringify(restored));
  await writeDurable(join(dest, "checkpoint.json"), body);
  files.push({ path: "checkpoint.json", bytes: body.length, sha256: createHash("sha256").update(body).digest("hex") });
  await fsyncDir(join(dest, "parts"));
  await fsyncDir(dest);
  return {
    position: cp.wal,
    files,
    bytes: files.reduce((n, f) => n + f.bytes, 0),
    records,
    namespaces: cp.partitions.filter((p) => (parts.get(p.dir)?.live ?? 0) > 0).length,
  };
}

/** Hash every listed file under `root` and compare with its length and SHA-256; throws E_BACKUP_DAMAGED naming the first that differs. */
export async function verifyCopy(root: string, files: readonly CopiedFile[]): Promise<void> {
  for (const f of files) {
    let got: { bytes: number; sha256: string };
    try {
      const hash = createHash("sha256");
      const fh = await open(join(root, f.path), "r");
      let bytes = 0;
      try {
        const buf = Buffer.allocUnsafe(CHUNK);
        for (;;) {
          const { bytesRead } = await fh.read(buf, 0, CHUNK, bytes);
          if (bytesRead === 0) break;
          hash.update(buf.subarray(0, bytesRead));
          bytes += bytesRead;
        }
      } finally {
        await fh.close();
      }
      got = { bytes, sha256: hash.digest("hex") };
    } catch (err) {
      throw new SvcError("E_BACKUP_DAMAGED", `backup file ${f.path} cannot be read: ${(err as Error).message}`, {
        field: "backup_id",
        cause: err,
      });
    }
    if (got.bytes !== f.bytes || got.sha256 !== f.sha256) {
      throw new SvcError(
        "E_BACKUP_DAMAGED",
        `backup file ${f.path} does not match its manifest (${got.bytes} bytes, sha256 ${got.sha256.slice(0, 12)}…; expected ${f.bytes} bytes, ${f.sha256.slice(0, 12)}…)`,
        { field: "backup_id" },
      );
    }
  }
}

/** Copy every listed file from `from` into `dest`, checking each against its length and SHA-256 (E_BACKUP_DAMAGED names the first that differs). */
export async function restoreCopy(from: string, files: readonly CopiedFile[], dest: string): Promise<void> {
  for (const f of files) {
    if (f.path.split(/[\\/]/).includes("..") || isAbsolute(f.path))
      throw new SvcError("E_BACKUP_DAMAGED", `backup manifest names a file outside the backup: ${f.path}`, { field: "backup_id" });
    mkdirSync(dirname(join(dest, f.path)), { recursive: true });
    let got: { bytes: number; sha256: string };
    try {
      got = await copyCounted(join(from, f.path), join(dest, f.path), undefined);
    } catch (err) {
      throw new SvcError("E_BACKUP_DAMAGED", `backup file ${f.path} cannot be read: ${(err as Error).message}`, {
        field: "backup_id",
        cause: err,
      });
    }
    if (got.bytes !== f.bytes || got.sha256 !== f.sha256) {
      throw new SvcError(
        "E_BACKUP_DAMAGED",
        `backup file ${f.path} does not match its manifest (${got.bytes} bytes, sha256 ${got.sha256.slice(0, 12)}…; expected ${f.bytes} bytes, ${f.sha256.slice(0, 12)}…)`,
        { field: "backup_id" },
      );
    }
  }
  await fsyncDir(dest);
}
