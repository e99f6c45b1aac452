/** @module repair — `svc repair` for a WAL directory: pad damaged regions in place, cut damaged tails, rewrite bad headers, keep copies. */
import { constants } from "node:fs";
import { access, copyFile, open, type FileHandle } from "node:fs/promises";
import { SvcError } from "../errors.js";
import {
  checkHeader,
  encodeHeader,
  FRAME_OVERHEAD,
  HEADER_SIZE,
  listSegments,
  MAX_FRAME_LENGTH,
  MIN_FRAME,
  paddingFrame,
  type SegmentFile,
} from "./segment.js";
import { findNextFrame, fsyncDir, readFully, scanFrames } from "./scan.js";

/** One damaged region of a segment file and what repair did to it. */
export interface RepairedRange {
  /** Byte offset of the first bad frame; `bytes` long. */
  offset: number;
  bytes: number;
  reason: string;
  /** "padded": overwritten in place by padding frames of the same total length (later offsets unchanged);
   *  "truncated": a damaged tail, cut off at `offset`. */
  action: "padded" | "truncated";
}

export interface RepairedFile {
  file: string;
  /** The copy of the file as it was before repair (`<name>.seg.damaged-<n>`). */
  backup: string;
  /** Why the header was rewritten from the file name, or null when it was fine. */
  header: string | null;
  damaged: RepairedRange[];
  /** Valid frames found after the first damaged region (kept, with their offsets). */
  salvaged: number;
  /** Valid frames swallowed by padding: only when the gap before one was shorter than a frame (13 bytes), which
   *  in-place damage cannot produce (frames are at least 13 bytes), so this is 0 unless bytes were inserted. */
  sacrificed: number;
}

export interface RepairReport {
  dir: string;
  /** Segment files scanned and the valid frames (padding included) they hold after repair. */
  segments: number;
  frames: number;
  /** Only the files that were changed. */
  files: RepairedFile[];
  /** Segment ids missing from the middle of the sequence: repair cannot recreate them and Wal.open will still refuse. */
  missing: number[];
}

/**
 * Make every segment of `dir` readable again without moving any surviving frame: a damaged region
 * (from a bad frame to the next valid frame found by its sync word and CRC) becomes padding (type 0)
 * of exactly its length; damage running to the end of a file is truncated; a bad header is rewritten
 * from the file name. Each changed file is first copied to `<name>.damaged-<n>`, which listSegments ignores.
 * With `check` nothing is written: the report says what repair would change.
 */
export async function repairWal(dir: string, opts: { check?: boolean } = {}): Promise<RepairReport> {
  let segs: SegmentFile[];
  try {
    segs = await listSegments(dir);
  } catch (e) {
    if (e instanceof SvcError) throw e;
    throw new SvcError("E_IO", `repair WAL ${dir}: ${e instanceof Error ? e.message : String(e)}`, { cause: e });
  }
  const report: RepairReport = { dir, segments: 0, frames: 0, files: [], missing: [] };
  for (let i = 1; i < segs.length; i++) {
    for (let id = segs[i - 1]!.id + 1; id < segs[i]!.id; id++) report.missing.push(id);
  }
  try {
    for (const seg of segs) {
      const plan = await analyse(seg);
      report.segments++;
      report.frames += plan.frames;
      if (plan.header === null && plan.damaged.length === 0) continue;
      // check: report what repair would do, change nothing (backup is then "").
      const backup = opts.check ? "" : await keepCopy(seg.path);
      if (!opts.check) await apply(seg, plan);
      report.files.push({
        file: seg.path,
        backup,
        header: plan.header,
        damaged: plan.damaged,
        salvaged: plan.salvaged,
        sacrificed: plan.sacrificed,
      });
    }
    if (report.files.length > 0 && !opts.check) await fsyncDir(dir);
  } catch (e) {
    if (e instanceof SvcError) throw e;
    throw new SvcError("E_IO", `repair WAL ${dir}: ${e instanceof Error ? e.message : String(e)}`, { cause: e });
  }
  return report;
}

interface Plan {
  header: string | null;
  damaged: RepairedRange[];
  frames: number;
  salvaged: number;
  sacrificed: number;
}

/** Read-only pass: what is wrong with one segment and what to write. */
async function analyse(seg: SegmentFile): Promise<Plan> {
  const plan: Plan = { header: null, damaged: [], frames: 0, salvaged: 0, sacrificed: 0 };
  const fh = await open(seg.path, "r");
  try {
    const size = (await fh.stat()).size;
    const head = Buffer.alloc(Math.min(HEADER_SIZE, size));
    await readFully(fh, head, 0, head.length, 0, seg.path);
    const bad = checkHeader(head, seg.id);
    if (bad?.unsupported) {
      throw new SvcError("E_WAL_CORRUPT", `${seg.path} at offset 0: ${bad.reason}; repair only rewrites damaged version-1 headers`, {
        details: { file: seg.path, offset: 0 },
      });
    }
    if (bad !== null) plan.header = bad.reason;
    let offset = HEADER_SIZE;
    while (offset < size) {
      const scan = await scanFrames(fh, offset, size, seg.path, () => {
        plan.frames++;
        if (plan.damaged.length > 0) plan.salvaged++;
      });
      if (scan.bad === null) break;
      const { offset: from, reason } = scan.bad;
      const next = await findNextFrame(fh, from + 1, size, seg.path);
      if (next === null) {
        plan.damaged.push({ offset: from, bytes: size - from, reason, action: "truncated" });
        break;
      }
      let end = next.offset;
      if (end - from < MIN_FRAME) {
        end += next.size; // no frame fits the gap: the padding swallows the next frame too
        plan.sacrificed++;
      }
      plan.damaged.push({ offset: from, bytes: end - from, reason, action: "padded" });
      offset = end;
    }
    return plan;
  } finally {
    await fh.close();
  }
}

/** Copy `path` to the first free `<path>.damaged-<n>` and fsync the copy. */
async function keepCopy(path: string): Promise<string> {
  for (let n = 1; ; n++) {
    const backup = `${path}.damaged-${n}`;
    try {
      await access(backup);
      continue;
    } catch {
      // free name
    }
    await copyFile(path, backup, constants.COPYFILE_EXCL);
    const fh = await open(backup, "r");
    try {
      await fh.sync();
    } finally {
      await fh.close();
    }
    return backup;
  }
}

async function apply(seg: SegmentFile, plan: Plan): Promise<void> {
  const fh: FileHandle = await open(seg.path, "r+");
  try {
    if (plan.header !== null) await fh.write(encodeHeader(seg.id), 0, HEADER_SIZE, 0);
    for (const r of plan.damaged) {
      if (r.action === "truncated") {
        await fh.truncate(r.offset);
        continue;
      }
      let at = r.offset;
      for (const piece of padPieces(r.bytes)) {
        await fh.write(paddingFrame(piece), 0, piece, at);
        at += piece;
      }
    }
    await fh.sync();
  } finally {
    await fh.close();
  }
}

/** Split `bytes` (>= MIN_FRAME) into padding frame sizes, each MIN_FRAME..FRAME_OVERHEAD + MAX_FRAME_LENGTH. */
export function padPieces(bytes: number): number[] {
  const max = FRAME_OVERHEAD + MAX_FRAME_LENGTH;
  const out: number[] = [];
  while (bytes > max) {
    const piece = bytes - max >= MIN_FRAME ? max : max - MIN_FRAME;
    out.push(piece);
    bytes -= piece;
  }
  out.push(bytes);
  return out;
}
