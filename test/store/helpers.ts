/** @module helpers — temp WAL directories and small byte-level tools shared by the store tests. */
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach } from "vitest";
import { Wal, type WalFrame, type WalOpenOptions, type WalPosition } from "../../src/store/wal.js";

/**
 * A fresh directory under the OS temp dir for each test (read `tmp.dir` inside tests),
 * removed after it; `prepare` runs on each new directory.
 */
export function useTempDir(prepare?: (dir: string) => Promise<void>): { dir: string } {
  const tmp = { dir: "" };
  beforeEach(async () => {
    tmp.dir = await mkdtemp(join(tmpdir(), "svc-wal-"));
    await prepare?.(tmp.dir);
  });
  afterEach(() => rm(tmp.dir, { recursive: true, force: true }));
  return tmp;
}

/** Open, collect every replayed frame, return the log and what was replayed. */
export async function openCollect(
  dir: string,
  opts: WalOpenOptions = {},
): Promise<{ wal: Wal; frames: WalFrame[]; report: Awaited<ReturnType<typeof Wal.open>>["report"] }> {
  const frames: WalFrame[] = [];
  const { wal, report } = await Wal.open(dir, { ...opts, onFrame: (f) => frames.push(f) });
  return { wal, frames, report };
}

/** Append `bodies` as frames of `type` (sequentially) and return their end positions. */
export async function appendAll(wal: Wal, bodies: unknown[], type = 1): Promise<WalPosition[]> {
  const out: WalPosition[] = [];
  for (const b of bodies) out.push(await wal.append(type, b));
  return out;
}

/** XOR one byte of a file. */
export async function flipByte(path: string, offset: number, mask = 0x01): Promise<void> {
  const b = await readFile(path);
  b[offset]! ^= mask;
  await writeFile(path, b);
}

/** Overwrite bytes of a file at `offset`. */
export async function overwrite(path: string, offset: number, bytes: Uint8Array): Promise<void> {
  const b = await readFile(path);
  b.set(bytes, offset);
  await writeFile(path, b);
}

/** Deterministic bytes: byte i = (seed + i * 31) & 0xff. */
export function pattern(length: number, seed: number): Uint8Array {
  const out = new Uint8Array(length);
  for (let i = 0; i < length; i++) out[i] = (seed + i * 31) & 0xff;
  return out;
}
