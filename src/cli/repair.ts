/** @module repair — `svc repair [--check] <dir>`: salvage every store under a data dir (or one collection): write-ahead logs, collection data files, and the JSON stores (keys, ledger and directory checkpoints, knowledge graphs, causal models), or only report what is damaged. */
import { existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { scrubCollection } from "../engine/block-sums.js";
import { SvcError } from "../errors.js";
import { KeptReports, stderrReporter } from "../store/reporter.js";
import { repairKeyFile } from "../account/keys.js";
import { repairLedgerCheckpoint } from "../account/wallet.js";
import { repairDirectoryCheckpoint } from "../directory/service.js";
import { repairKnowledgeGraphs } from "../hd/kg/service.js";
import { repairCausalModels } from "../hd/causal/service.js";
import { repairWal } from "../store/repair.js";
import { checkingOnly, type StoreRepair } from "../store/salvage-json.js";
import { say as sayLine, type Command } from "./command.js";

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
  for (let i = 0; i < rows.length;) {
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
      checksums fail or that are cut short, and lost tombstones files: the
      damaged rows are rebuilt from the log where it still holds them,
      otherwise dropped and listed; the partition is rewritten. A lost index
      file is rebuilt from the records; an unreadable checkpoint.json is set
      aside and the collection rebuilt from its log when the log holds every
      write (else it is left for a restore). Each collection is repaired on
      its own: one that cannot be is reported and the others still are.
      In a data dir also keys.json, wallet/wallets.json, directory/directory.json,
      each knowledge graph's graph.json (rewritten from its snapshot's seed)
      and each causal model (an unreadable model.hdscm is moved aside):
      an unreadable file is copied to <file>.damaged-<ms> and rewritten with
      the records that still parse (keys that do not are dropped: they stop
      working); a ledger checkpoint with an unreadable account is left as it
      is (balances are never guessed). Prints what it did per store.
      --check only reports what is damaged, per store, and changes nothing
      (exit code 1 when anything is). Run it while the server is stopped.
      --json: the findings per store as one JSON document.`,
  options: { check: { type: "boolean" } },
  async run(values, args) {
    const dir = args[0];
    const check = values.check === true;
    if (dir === undefined) throw new SvcError("E_BAD_REQUEST", "svc repair needs a directory", { field: "dir" });
    const dirs = walDirs(dir);
    const collections = collectionDirs(dir);
    const stores = () => [
      repairKeyFile(dir),
      repairLedgerCheckpoint(join(dir, "wallet")),
      repairDirectoryCheckpoint(join(dir, "directory")),
      ...repairKnowledgeGraphs(dir),
      ...repairCausalModels(dir),
    ];
    const files = (check ? checkingOnly(stores) : stores()).filter((r): r is StoreRepair => r !== null);
    if (dirs.length === 0 && collections.length === 0 && files.length === 0)
      throw new SvcError("E_NOT_FOUND", `no write-ahead log (*.seg files), collection or store file at or under ${dir}`, { field: "dir" });
    const json = values.json === true;
    // --json: the same findings as one JSON document (the text lines are not printed).
    const say = json ? () => undefined : sayLine;
    const report: { stores: StoreRepair[]; wals: unknown[]; collections: unknown[] } = { stores: files, wals: [], collections: [] };
    let changed = 0;
    let refused = 0;
    for (const f of files) {
      if (f.action === "ok") say(`${f.file} (${f.store}): readable, ${f.kept} records`);
      else if (f.action === "refused") {
        refused++;
        say(`${f.file} (${f.store}): NOT repaired: ${f.detail}`);
      } else if (f.action === "quarantined") {
        changed++;
        say(`${f.file} (${f.store}): unreadable (${f.detail}); moved aside to ${f.backup}`);
      } else {
        changed++;
        say(
          `${f.file} (${f.store}): rewritten with ${f.kept} readable records, ${f.dropped} dropped (${f.detail}); original kept as ${f.backup}`,
        );
      }
    }
    for (const wal of dirs) {
      const walReport = await repairWal(wal, { check });
      report.wals.push(walReport);
      say(`${wal}: ${walReport.segments} segments, ${walReport.frames} frames`);
      for (const f of walReport.files) {
        changed++;
        if (f.header) say(`  ${f.file}: header ${check ? "damaged" : "rewritten"} (${f.header})`);
        for (const r of f.damaged)
          say(`  ${f.file}: ${check ? `damaged: would be ${r.action}` : r.action} ${r.bytes} bytes at offset ${r.offset} (${r.reason})`);
        say(
          check
            ? `  ${f.file}: ${f.salvaged} frames after the damage are intact`
            : `  ${f.file}: ${f.salvaged} frames after the damage salvaged; original kept as ${f.backup}`,
        );
      }
      for (const id of walReport.missing) {
        changed++;
        say(`  segment ${id} is missing: the log cannot be opened past it`);
      }
    }
    // Each collection is checked and repaired on its own: one that cannot be is reported and the others still are.
    const damaged: Array<{ coll: string; namespaces: Set<string> | "all" }> = [];
    for (const coll of collections) {
      let scrub: ReturnType<typeof scrubCollection>;
      try {
        scrub = scrubCollection(coll);
      } catch (err) {
        say(`${coll}: cannot be checked: ${(err as Error).message}`);
        damaged.push({ coll, namespaces: "all" });
        continue;
      }
      report.collections.push({ dir: coll, ...scrub });
      say(`${coll}: ${scrub.partitions} partition(s) checked against their block sums`);
      for (const ns of scrub.unchecked)
        say(`  namespace '${ns}': no block sums yet (written before format 2; the next checkpoint adds them)`);
      for (const f of scrub.findings)
        say(`  namespace '${f.namespace}' ${f.file}: ${f.blocks.length} damaged block(s), rows ${ranges(f.rows)}`);
      for (const p of scrub.problems)
        say(`  ${p.file}: ${p.detail}: the collection cannot open${check ? "" : "; rebuilding it from the log"}`);
      if (scrub.problems.length > 0) damaged.push({ coll, namespaces: "all" });
      else if (scrub.findings.length > 0) damaged.push({ coll, namespaces: new Set(scrub.findings.map((f) => f.namespace)) });
    }
    changed += damaged.length;
    if (!check && damaged.length > 0) {
      // Opening in salvage mode rebuilds or drops the damaged rows (engine/maintenance.ts) and what a lost file held; the rewrite leaves files that check clean.
      const { Collection } = await import("../engine/collection.js");
      const { Kernels } = await import("../kernels/abi.js");
      const { ScanPool } = await import("../pool/scan-pool.js");
      const kernels = Kernels.create();
      const pool = new ScanPool(kernels, { threads: 1 });
      // What the salvaging opens find is printed below, per collection (a background failure goes to stderr).
      const reporter = new KeptReports({ damage: () => {}, background: stderrReporter.background });
      try {
        for (const { coll, namespaces } of damaged) {
          try {
            const c = await Collection.open(coll, { kernels, pool, salvage: true, reporter });
            try {
              for (const ns of namespaces === "all" ? c.namespaces() : namespaces) await c.compact(ns);
            } finally {
              await c.close();
            }
            for (const r of reporter.reports().filter((r) => r.store === `collection:${coll}` && !r.offline))
              say(`  ${coll}: ${r.file}: ${r.detail}`);
          } catch (err) {
            changed--;
            refused++;
            const why = ((err as Error).cause as Error | undefined)?.message ?? (err as Error).message;
            say(`${coll}: NOT repaired: ${why}`);
          }
        }
      } finally {
        await pool.close();
      }
    }
    if (json) sayLine(JSON.stringify({ check, changed, refused, ...report }));
    if (check) say(changed + refused === 0 ? "no damage found" : `damage found in ${changed + refused} place(s)`);
    else
      say(
        changed === 0 && refused === 0
          ? "nothing to repair"
          : `repaired ${changed} file(s) or collection(s)${refused > 0 ? `, ${refused} left for a restore from backup` : ""}`,
      );
    return (check && changed > 0) || refused > 0 ? 1 : 0;
  },
};
