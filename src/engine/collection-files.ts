/** @module collection-files — a collection directory's small files: config, checkpoint manifest, LOCK, durable writes. */
import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, readdirSync, readFileSync, rmSync, writeSync } from "node:fs";
import { open } from "node:fs/promises";
import { dirname, join } from "node:path";
import { SvcError } from "../errors.js";
import { parseStoredJson } from "../safe-values.js";
import type { LogPosition } from "../store/log.js";
import type { PartitionState, VectorShape } from "./partition.js";

export const CONFIG_VERSION = 1;
/** checkpoint.json version: 2 added per-partition block sums (`sums`); version 1 checkpoints open unchecked and get sums at the next checkpoint. */
export const CHECKPOINT_VERSION = 2;
export const DEFAULT_SEED = 0x5eed;

export interface CollectionConfig extends VectorShape {
  version: number;
  /** Seed of the rotation that turns float vectors into bits. */
  seed: number;
}

export interface Checkpoint {
  version: number;
  seq: number;
  /** Where replay starts: the log position the checkpoint holds everything up to (field name from the WAL era; FORMAT.md). */
  wal: LogPosition;
  partitions: PartitionState[];
}

export function loadConfig(dir: string, opts: { dimension?: number; metric?: VectorShape["metric"]; seed?: number }): CollectionConfig {
  const path = join(dir, "collection.json");
  if (existsSync(path)) {
    const config = parseStoredJson(readFileSync(path, "utf8")) as CollectionConfig;
    if (opts.dimension !== undefined && opts.dimension !== config.dimension) {
      throw new SvcError("E_DIMENSION", `collection ${dir} has dimension ${config.dimension}, not ${opts.dimension}`, {
        field: "dimension",
      });
    }
    return config;
  }
  if (opts.dimension === undefined) throw new SvcError("E_NOT_FOUND", `no collection at ${dir}`);
  const metric = opts.metric ?? "cosine";
  const max = metric === "cosine" ? 65536 : 1 << 20;
  if (!Number.isInteger(opts.dimension) || opts.dimension < 1 || opts.dimension > max) {
    throw new SvcError("E_DIMENSION", `dimension must be an integer in [1, ${max}], got ${opts.dimension}`, { field: "dimension" });
  }
  const config: CollectionConfig = { version: CONFIG_VERSION, dimension: opts.dimension, metric, seed: opts.seed ?? DEFAULT_SEED };
  mkdirSync(join(dir, "parts"), { recursive: true });
  writeDurableSync(path, JSON.stringify(config, null, 2));
  return config;
}

/**
 * One process per collection: LOCK holds the owner's pid. A lock whose process is gone (a
 * crash) is taken over; another live owner is E_CONFLICT, since two writers would interleave
 * frames. Inside one process the caller keeps one Collection per directory (tests reopen in
 * the same process to simulate a restart, which takes the lock over).
 */
export function lockDir(dir: string): void {
  const path = join(dir, "LOCK");
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(path, "wx");
      writeSync(fd, String(process.pid));
      closeSync(fd);
      return;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST")
        throw new SvcError("E_IO", `${path}: ${(err as Error).message}`, { cause: err });
    }
    const pid = Number(readFileSync(path, "utf8"));
    if (Number.isInteger(pid) && pid > 0 && pid !== process.pid && alive(pid)) {
      throw new SvcError("E_CONFLICT", `${dir} is open in process ${pid}`, { details: { pid } });
    }
    rmSync(path, { force: true });
  }
  throw new SvcError("E_CONFLICT", `${dir}: could not take ${path}`);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

export function loadCheckpoint(dir: string): Checkpoint | null {
  const path = join(dir, "checkpoint.json");
  if (!existsSync(path)) return null;
  const cp = parseStoredJson(readFileSync(path, "utf8")) as Checkpoint;
  if (cp.version !== 1 && cp.version !== CHECKPOINT_VERSION)
    throw new SvcError("E_IO", `${path}: unsupported checkpoint version ${cp.version}`, { details: { file: path } });
  return cp;
}

/** Partition directories a crash left behind (created after the last checkpoint) are rebuilt by replay. */
export function removeUnreferenced(parts: string, cp: Checkpoint | null): void {
  mkdirSync(parts, { recursive: true });
  const keep = new Set(cp?.partitions.map((p) => p.dir) ?? []);
  for (const d of readdirSync(parts)) if (!keep.has(d)) rmSync(join(parts, d), { recursive: true, force: true });
}

export async function writeDurable(path: string, data: Uint8Array): Promise<void> {
  const fh = await open(path, "w");
  try {
    await fh.writeFile(data);
    await fh.datasync();
  } finally {
    await fh.close();
  }
}

function writeDurableSync(path: string, text: string): void {
  const fd = openSync(path, "w");
  try {
    writeSync(fd, text);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  const dir = openSync(dirname(path), "r");
  try {
    fsyncSync(dir);
  } finally {
    closeSync(dir);
  }
}
