/** @module repair — `svc repair [--check] <dir>`: salvage the write-ahead logs and the collection data files under a collection or data directory, or only report what is damaged. */
import { existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { scrubCollection } from "../engine/block-sums.js";
import { SvcError } from "../errors.js";
import { damageReports } from "../store/damage.js";
import { repairWal } from "../store/repair.js";
import { say, type Command } from "./command.js";

/** Every collection directory (holding collection.json) at or below `dir`. */
function collectionDirs(dir: string, depth = 0): string[] {
  if (!existsSync(dir) || !statSync(dir).isDirectory()) return [];
  if (existsSync(join(dir, "collection.json"))) return [dir];
  if (depth > 6) return [];
  return readdirSync(dir).flatMap((f) => collectionDirs(join(dir, f), depth + 1));
}

/** "0..3, 7" for [0, 1, 2, 3, 7]. */
function ranges(rows: number[]): string {
  const out: string[] = [];
  for (let i = 0; i < rows.length; ) {
    let j = i;
    while (j + 1 < rows.length && rows[j + 1] === rows[j]! + 1) j++;
    out.push(i === j ? String(rows[i]) : `${rows[i]}..${rows[j]}`);
    i = j + 1;
  }
  return out.join(", ");
}

/** Every `wal` directory at or below `dir` (a data dir holds collections, a collection holds wal/). */
function walDirs(dir: string, depth = 0): string[] {
  if (!existsSync(dir) || !statSync(dir).isDirectory()) return [];
  if (readdirSync(dir).some((f) => f.endsWith(".seg"))) return [dir];
  if (depth > 6) return [];
  return readdirSync(dir).flatMap((f) => walDirs(join(dir, f), depth + 1));
}

export const repairCommand: Command = {
  name: "repair",
  usage: `svc repair [--check] <dir>
      Salvage the stores at or under <dir> (a collection or the data dir).
      Write-ahead logs: damaged regions are overwritten in place by padding
      frames (later frames keep their offsets), damaged tails cut, bad headers
      rewritten; each changed segment is first copied to <name>.damaged-<n>.
      Collection data files (bits.bin, values.f32, records.bin) whose block
      checksums fail: the damaged rows are rebuilt from the log where it still
      holds them, otherwise dropped and listed; the partition is rewritten.
      --check only reports what is damaged, per store, and changes nothing
      (exit code 1 when anything is). Run it while the server is stopped.`,
  options: { check: { type: "boolean" } },
  async run(values, args) {
    const dir = args[0];
    const check = values.check === true;
    if (dir === undefined) throw new SvcError("E_BAD_REQUEST", "svc repair needs a directory", { field: "dir" });
    const dirs = walDirs(dir);
    const collections = collectionDirs(dir);
    if (dirs.length === 0 && collections.length === 0) throw new SvcError("E_NOT_FOUND", `no write-ahead log (*.seg files) or collection at or under ${dir}`, { field: "dir" });
    let changed = 0;
    for (const wal of dirs) {
      const report = await repairWal(wal, { check });
      say(`${wal}: ${report.segments} segments, ${report.frames} frames`);
      for (const f of report.files) {
        changed++;
        if (f.header) say(`  ${f.file}: header ${check ? "damaged" : "rewritten"} (${f.header})`);
        for (const r of f.damaged) say(`  ${f.file}: ${check ? `damaged: would be ${r.action}` : r.action} ${r.bytes} bytes at offset ${r.offset} (${r.reason})`);
        say(check ? `  ${f.file}: ${f.salvaged} frames after the damage are intact` : `  ${f.file}: ${f.salvaged} frames after the damage salvaged; original kept as ${f.backup}`);
      }
      for (const id of report.missing) {
        changed++;
        say(`  segment ${id} is missing: the log cannot be opened past it`);
      }
    }
    const damaged: string[] = [];
    for (const coll of collections) {
      const scrub = scrubCollection(coll);
      say(`${coll}: ${scrub.partitions} partition(s) checked against their block sums`);
      for (const ns of scrub.unchecked) say(`  namespace '${ns}': no block sums yet (written before format 2; the next checkpoint adds them)`);
      for (const f of scrub.findings) say(`  namespace '${f.namespace}' ${f.file}: ${f.blocks.length} damaged block(s), rows ${ranges(f.rows)}`);
      if (scrub.findings.length > 0) damaged.push(coll);
    }
    changed += damaged.length;
    if (!check && damaged.length > 0) {
      // Opening rebuilds or drops the damaged rows (collection.ts); the rewrite leaves files that check clean.
      const { Collection } = await import("../engine/collection.js");
      const { Kernels } = await import("../kernels/abi.js");
      const { ScanPool } = await import("../pool/scan-pool.js");
      const kernels = Kernels.create();
      const pool = new ScanPool(kernels, { threads: 1 });
      try {
        for (const coll of damaged) {
          const c = await Collection.open(coll, { kernels, pool });
          for (const ns of new Set(scrubCollection(coll).findings.map((f) => f.namespace))) await c.compact(ns);
          await c.close();
          for (const r of damageReports().filter((r) => r.store === `collection:${coll}` && r.kind === "bad-checksum")) say(`  ${coll}: ${r.file}: ${r.detail}`);
        }
      } finally {
        await pool.close();
      }
    }
    if (check) say(changed === 0 ? "no damage found" : `damage found in ${changed} place(s)`);
    else say(changed === 0 ? "nothing to repair" : `repaired ${changed} segment file(s) or collection(s)`);
    return check && changed > 0 ? 1 : 0;
  },
};
