/**
 * @module damage — the process-wide register of storage damage found at open, replay, read or
 * scrub: which store, which file, what was wrong and what was dropped. Stores report here instead
 * of refusing to start; `GET /v1/health` lists the entries (status "degraded") and `/metrics`
 * counts them, so a damaged store is named while everything else keeps serving.
 */
import { relative } from "node:path";

/** One finding. `store` is a stable name ("wallet-ledger", "keys", "collection:<t>/<name>", ...). */
export interface DamageReport {
  store: string;
  /** The damaged file, relative to the data dir when known (never an absolute path on the wire). */
  file?: string;
  /** What was found: "torn-tail", "bad-frame", "bad-checksum", "unreadable", ... */
  kind: string;
  /** A human-readable line: reason and offset. */
  detail: string;
  /** Frames, records or blocks that were dropped or cannot be served (0 when none). */
  dropped: number;
  /** True while the store cannot serve (it answers 5xx until repaired); false for a reported, recovered loss. */
  offline: boolean;
  /** Epoch ms of the finding. */
  at: number;
}

const reports: DamageReport[] = [];
const MAX_REPORTS = 1000;
type Listener = (r: DamageReport) => void;
const listeners = new Set<Listener>();

/** Records a finding and tells the listeners (the server logs each one); the same finding again (a store opened again) is kept once. */
export function reportDamage(r: Omit<DamageReport, "at"> & { at?: number }): DamageReport {
  const same = reports.find(
    (x) =>
      x.store === r.store &&
      x.file === r.file &&
      x.kind === r.kind &&
      x.detail === r.detail &&
      x.offline === r.offline &&
      x.dropped === r.dropped,
  );
  if (same !== undefined) return same;
  const full: DamageReport = { ...r, at: r.at ?? Date.now() };
  reports.push(full);
  if (reports.length > MAX_REPORTS) reports.splice(0, reports.length - MAX_REPORTS);
  for (const l of listeners) l(full);
  return full;
}

/** The findings so far, oldest first (copies). */
export function damageReports(): DamageReport[] {
  return reports.map((r) => ({ ...r }));
}

/** Forgets the findings of one store (after it was repaired or deleted). */
export function clearDamage(store: string): void {
  for (let i = reports.length - 1; i >= 0; i--) if (reports[i]!.store === store) reports.splice(i, 1);
}

/** Calls `l` on every later finding; returns the unsubscribe function. */
export function onDamage(l: Listener): () => void {
  listeners.add(l);
  return () => listeners.delete(l);
}

/** What a salvaging WAL open left out (log.ts RecoveryReport, structurally). */
interface WalLosses {
  tornTail: null | { file: string; offset: number; bytes: number; frames: number; reason: string };
  damaged: Array<{ file: string; offset: number; bytes: number; frames: number; reason: string; beforeFrom: boolean }>;
}

/**
 * Report what a salvaging `Wal.open` skipped or cut under `store`, file names relative to `root`
 * (the data dir). `offline` marks the store as unable to serve until repaired (the store decides).
 */
export function reportWalLosses(store: string, root: string, report: WalLosses, offline = false): void {
  const rel = (file: string) => relative(root, file);
  const t = report.tornTail;
  if (t !== null) {
    // `dropped` counts frames after the checkpoint: each is one acknowledged write of one or more records, whose count went with the cut bytes.
    const lost =
      t.frames > 0
        ? `lost: ${t.frames} logged write(s) after the last checkpoint, each of one or more records`
        : "no logged write after the last checkpoint begins in what is left of them (bytes removed before the log was opened cannot be counted)";
    reportDamage({
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
    reportDamage({
      store,
      file: rel(d.file),
      kind: "bad-frame",
      dropped: d.beforeFrom ? 0 : d.frames,
      offline: offline && !d.beforeFrom,
      detail: `${d.bytes} damaged bytes at offset ${d.offset} (${d.reason}); ${what}`,
    });
  }
}
