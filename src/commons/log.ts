/** @module commons/log — the commons' one append-only write-ahead log (<data>/commons/wal): frame types, replay on open, append; in cluster mode also its checkpoint (the frames that rebuild the state). */
import { encode } from "@msgpack/msgpack";
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { rename } from "node:fs/promises";
import { dirname, join } from "node:path";
import { writeDurable } from "../engine/collection-files.js";
import { SvcError } from "../errors.js";
import { decodeMsgpack } from "../safe-values.js";
import { reportWalLosses } from "../store/damage.js";
import type { Log, OpenLog } from "../store/log.js";
import { fsyncDir } from "../store/scan.js";
import { stderrReporter, type Reporter } from "../store/reporter.js";
import { Wal, type Durability } from "../store/wal.js";

/** WAL frame types of the commons. Never renumber; nothing is ever rewritten or removed. */
export const FRAME = { TRUST: 1, POST: 2, VOTE: 3, FILE: 4, WORKING: 5, PROFILE: 6 } as const;
export type FrameType = (typeof FRAME)[keyof typeof FRAME];

/**
 * Cluster mode's checkpoint of the commons, `<data>/commons/checkpoint.msgpack` (FORMAT.md "Snapshots",
 * kind `home-commons`): msgpack `{version: 1, seq, frames: [[type, body], ...]}`, the frames that
 * rebuild the commons as of the log position `seq` (a stream sequence), in the order to apply them.
 */
export const COMMONS_CHECKPOINT = "checkpoint.msgpack";

export class CommonsLog {
  /**
   * Cluster mode: the frames that rebuild the state, keyed so that a later frame replaces the one it
   * supersedes: a profile per agent (in its place), a verdict per (post, agent) (moving to the end); every other
   * frame is its own (working notes past their window are dropped at checkpoint, but each agent's
   * newest, which keeps its last activity). `at`: the log position they hold every frame up to.
   */
  private readonly kept: Map<string, [number, unknown]> | null;
  private at = 0;
  private n = 0;

  private constructor(
    private readonly wal: Log,
    private readonly dir: string,
    cluster: boolean,
  ) {
    this.kept = cluster ? new Map() : null;
  }

  /**
   * Open (or create) the log under `dir` (or `openLog`'s: cluster mode's fenced JetStream log) and pass
   * every stored frame, in order, to `onFrame`. With `openLog`, the local checkpoint (if any) comes first
   * and the log is replayed after its position.
   */
  static async open(
    dir: string,
    opts: { durability?: Durability; openLog?: OpenLog; reporter?: Reporter; onFrame: (type: number, body: unknown) => void },
  ): Promise<CommonsLog> {
    // A damaged frame is skipped and named (store "commons-log"); the rest of the commons serves.
    const cp = opts.openLog === undefined ? null : readCommonsCheckpoint(dir);
    const kept = new Map<string, [number, unknown]>();
    let n = 0;
    const take = (type: number, body: unknown) => {
      if (opts.openLog !== undefined) keep(kept, type, body, n++);
      opts.onFrame(type, body);
    };
    for (const [type, body] of cp?.frames ?? []) take(type, body);
    const openLog = opts.openLog ?? Wal.opener(join(dir, "wal"), { durability: opts.durability });
    const { log: wal, report } = await openLog({
      ...(cp === null ? {} : { from: { segment: 0, offset: cp.seq } }),
      onFrame: (f) => take(f.type, f.body),
    });
    reportWalLosses(opts.reporter ?? stderrReporter, "commons-log", dirname(dir), report);
    const l = new CommonsLog(wal, dir, opts.openLog !== undefined);
    if (l.kept !== null) for (const [k, v] of kept) l.kept.set(k, v);
    l.n = n;
    l.at = wal.position.offset;
    return l;
  }

  /** Resolves once the frame is durable (per the durability mode). */
  async append(type: FrameType, body: unknown): Promise<void> {
    const pos = await this.wal.append(type, body);
    if (this.kept === null) return;
    keep(this.kept, type, body, this.n++);
    this.at = Math.max(this.at, pos.offset);
  }

  /**
   * Cluster mode: write the checkpoint (durably, under the log's dir) and return its bytes with the
   * log position it holds every frame up to. Working notes at or before `cutoff` (ms) are left out,
   * but each agent's newest. Refused (like the log's sync) once a later leader fenced the log.
   */
  async checkpoint(cutoff: number): Promise<{ seq: number; data: Uint8Array }> {
    if (this.kept === null) throw new SvcError("E_INTERNAL", "the commons checkpoints only on a replicated log");
    await this.wal.sync();
    const newest = new Map<string, string>(); // agent -> key of its newest working note
    for (const [k, [type, body]] of this.kept) if (type === FRAME.WORKING) newest.set((body as { agent: string }).agent, k);
    const keys = new Set(newest.values());
    for (const [k, [type, body]] of this.kept)
      if (type === FRAME.WORKING && !keys.has(k) && (body as { ts: number }).ts <= cutoff) this.kept.delete(k);
    const seq = this.at;
    const data = encode({ version: 1, seq, frames: [...this.kept.values()] });
    mkdirSync(this.dir, { recursive: true });
    await writeCommonsCheckpoint(this.dir, data);
    return { seq, data };
  }

  close(): Promise<void> {
    return this.wal.close();
  }
}

/** The key of a frame in CommonsLog.kept (`n`: its arrival number, for frames nothing supersedes). */
function keep(kept: Map<string, [number, unknown]>, type: number, body: unknown, n: number): void {
  const b = body as { agent?: unknown; post?: unknown };
  const key =
    type === FRAME.PROFILE && typeof b?.agent === "string"
      ? `p\u0000${b.agent}`
      : type === FRAME.VOTE && typeof b?.agent === "string" && typeof b.post === "string"
        ? `v\u0000${b.post}\u0000${b.agent}`
        : `#${n}`;
  // a verdict moves to the end (board.ts keeps an agent's later verdict last); a profile keeps its place (profiles.ts's map does)
  if (type === FRAME.VOTE) kept.delete(key);
  kept.set(key, [type, body]);
}

/** The commons checkpoint under `dir`, or null (none; an unreadable one is ignored: the log from its start holds everything). */
export function readCommonsCheckpoint(dir: string): { seq: number; frames: Array<[number, unknown]> } | null {
  const path = join(dir, COMMONS_CHECKPOINT);
  if (!existsSync(path)) return null;
  try {
    return checkCommonsCheckpoint(readFileSync(path));
  } catch {
    return null;
  }
}

/** The checkpoint in `data`, or E_IO. */
export function checkCommonsCheckpoint(data: Uint8Array): { seq: number; frames: Array<[number, unknown]> } {
  const cp = decodeMsgpack(data) as { version?: unknown; seq?: unknown; frames?: unknown };
  if (
    typeof cp !== "object" ||
    cp === null ||
    cp.version !== 1 ||
    !Number.isSafeInteger(cp.seq) ||
    !Array.isArray(cp.frames) ||
    !cp.frames.every((f) => Array.isArray(f) && f.length === 2 && Number.isInteger(f[0]))
  )
    throw new SvcError("E_IO", "not a commons checkpoint ({version: 1, seq, frames})");
  return { seq: cp.seq as number, frames: cp.frames as Array<[number, unknown]> };
}

/** Write `data` (checked) as the commons checkpoint under `dir`: temp file, fdatasync, rename, fsync of the dir. */
export async function writeCommonsCheckpoint(dir: string, data: Uint8Array): Promise<void> {
  checkCommonsCheckpoint(data);
  mkdirSync(dir, { recursive: true });
  const path = join(dir, COMMONS_CHECKPOINT);
  await writeDurable(`${path}.tmp`, Buffer.from(data.buffer, data.byteOffset, data.byteLength));
  await rename(`${path}.tmp`, path);
  await fsyncDir(dir);
}
