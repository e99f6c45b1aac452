/**
 * @module damage — what a storage damage finding says (found at open, replay, read or scrub: which
 * store, which file, what was wrong and what was dropped). Stores report findings to the Reporter
 * they were given (store/reporter.ts) instead of refusing to start; the server's keeps them for
 * `GET /v1/health` (status "degraded") and `/metrics`, so a damaged store is named while everything
 * else keeps serving.
 */
import { relative } from "node:path";
import type { Reporter } from "./reporter.js";

export type { DamageFinding, DamageReport } from "./reporter.js";

/** What a salvaging WAL open left out (log.ts RecoveryReport, structurally). */
interface WalLosses {
  tornTail: null | { file: string; offset: number; bytes: number; frames: number; reason: string };
  damaged: Array<{ file: string; offset: number; bytes: number; frames: number; reason: string; beforeFrom: boolean }>;
}

/**
 * Report to `reporter` what a salvaging `Wal.open` skipped or cut under `store`, file names relative to `root`
 * (the data dir). `offline` marks the store as unable to serve until repaired (the store decides).
 */
export function reportWalLosses(reporter: Reporter, store: string, root: string, report: WalLosses, offline = false): void {
  const rel = (file: string) => relative(root, file);
  const t = report.tornTail;
  if (t !== null) {
    // `dropped` counts frames after the checkpoint: each is one acknowledged write of one or more records, whose count went with the cut bytes.
    const lost =
      t.frames > 0
        ? `lost: ${t.frames} logged write(s) after the last checkpoint, each of one or more records`
        : "no logged write after the last checkpoint begins in what is left of them (bytes removed before the log was opened cannot be counted)";
    reporter.damage({
      store,
      file: rel(t.file),
      kind: "torn-tail",
      dropped: t.frames,
      offline: false,
      detail: `cut ${t.bytes} bytes (${t.frames} frame(s)) off the log at offset ${t.offset}: ${t.reason}; ${lost}`,
    });
  }
  for (const d of report.damaged) {
    const what = d.beforeFrom
      ? "skipped: the checkpoint already holds it"
      : `${d.frames} frame(s) lost, later frames replayed; \`svc repair\` pads the region`;
    reporter.damage({
      store,
      file: rel(d.file),
      kind: "bad-frame",
      dropped: d.beforeFrom ? 0 : d.frames,
      offline: offline && !d.beforeFrom,
      detail: `${d.bytes} damaged bytes at offset ${d.offset} (${d.reason}); ${what}`,
    });
  }
}
