/**
 * @module damage — the process-wide register of storage damage found at open, replay, read or
 * scrub: which store, which file, what was wrong and what was dropped. Stores report here instead
 * of refusing to start; `GET /v1/health` lists the entries (status "degraded") and `/metrics`
 * counts them, so a damaged store is named while everything else keeps serving.
 */
import { relative } from "node:path";
const reports = [];
const MAX_REPORTS = 1000;
const listeners = new Set();
/** Records a finding and tells the listeners (the server logs each one); the same finding again (a store opened again) is kept once. */
export function reportDamage(r) {
    const same = reports.find((x) => x.store === r.store && x.file === r.file && x.kind === r.kind && x.detail === r.detail && x.offline === r.offline && x.dropped === r.dropped);
    if (same !== undefined)
        return same;
    const full = { ...r, at: r.at ?? Date.now() };
    reports.push(full);
    if (reports.length > MAX_REPORTS)
        reports.splice(0, reports.length - MAX_REPORTS);
    for (const l of listeners)
        l(full);
    return full;
}
/** The findings so far, oldest first (copies). */
export function damageReports() {
    return reports.map((r) => ({ ...r }));
}
/** Forgets the findings of one store (after it was repaired or deleted). */
export function clearDamage(store) {
    for (let i = reports.length - 1; i >= 0; i--)
        if (reports[i].store === store)
            reports.splice(i, 1);
}
/** Calls `l` on every later finding; returns the unsubscribe function. */
export function onDamage(l) {
    listeners.add(l);
    return () => listeners.delete(l);
}
/**
 * Report what a salvaging `Wal.open` skipped or cut under `store`, file names relative to `root`
 * (the data dir). `offline` marks the store as unable to serve until repaired (the store decides).
 */
export function reportWalLosses(store, root, report, offline = false) {
    const rel = (file) => relative(root, file);
    const t = report.tornTail;
    if (t !== null) {
        // `dropped` counts frames after the checkpoint: each is one acknowledged write of one or more records, whose count went with the cut bytes.
        const lost = t.frames > 0 ? `lost: ${t.frames} logged write(s) after the last checkpoint, each of one or more records` : "no logged write after the last checkpoint begins in what is left of them (bytes removed before the log was opened cannot be counted)";
        reportDamage({ store, file: rel(t.file), kind: "torn-tail", dropped: t.frames, offline: false, detail: `cut ${t.bytes} bytes (${t.frames} frame(s)) off the log at offset ${t.offset}: ${t.reason}; ${lost}` });
    }
    for (const d of report.damaged) {
        const what = d.beforeFrom ? "skipped: the checkpoint already holds it" : `${d.frames} frame(s) lost, later frames replayed; \`svc repair\` pads the region`;
        reportDamage({ store, file: rel(d.file), kind: "bad-frame", dropped: d.beforeFrom ? 0 : d.frames, offline: offline && !d.beforeFrom, detail: `${d.bytes} damaged bytes at offset ${d.offset} (${d.reason}); ${what}` });
    }
}
//# sourceMappingURL=damage.js.map