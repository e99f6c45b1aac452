/** @module repair — `svc repair <dir>`: salvage the write-ahead logs under a collection or data directory, and the data dir's JSON stores (keys, ledger and directory checkpoints). */
import { existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { SvcError } from "../errors.js";
import { repairKeyFile } from "../account/keys.js";
import { repairLedgerCheckpoint } from "../account/wallet.js";
import { repairDirectoryCheckpoint } from "../directory/service.js";
import { repairKnowledgeGraphs } from "../hd/kg/service.js";
import { repairCausalModels } from "../hd/causal/service.js";
import { repairWal } from "../store/repair.js";
import type { StoreRepair } from "../store/salvage-json.js";
import { say, type Command } from "./command.js";

/** Every `wal` directory at or below `dir` (a data dir holds collections, a collection holds wal/). */
function walDirs(dir: string, depth = 0): string[] {
  if (!existsSync(dir) || !statSync(dir).isDirectory()) return [];
  if (readdirSync(dir).some((f) => f.endsWith(".seg"))) return [dir];
  if (depth > 6) return [];
  return readdirSync(dir).flatMap((f) => walDirs(join(dir, f), depth + 1));
}

export const repairCommand: Command = {
  name: "repair",
  usage: `svc repair <dir>
      Salvage the write-ahead logs at or under <dir> (a collection or the data
      dir): damaged regions are overwritten in place by padding frames (later
      frames keep their offsets), damaged tails cut, bad headers rewritten;
      each changed segment is first copied to <name>.damaged-<n>. In a data
      dir also keys.json, wallet/wallets.json, directory/directory.json,
      each knowledge graph's graph.json (rewritten from its snapshot's seed)
      and each causal model (an unreadable model.hdscm is moved aside):
      an unreadable file is copied to <file>.damaged-<ms> and rewritten with
      the records that still parse (keys that do not are dropped: they stop
      working); a ledger checkpoint with an unreadable account is left as it
      is (balances are never guessed). Prints what it did per store. Run it
      while the server is stopped.`,
  options: {},
  async run(_values, args) {
    const dir = args[0];
    if (dir === undefined) throw new SvcError("E_BAD_REQUEST", "svc repair needs a directory", { field: "dir" });
    const dirs = walDirs(dir);
    const files = [repairKeyFile(dir), repairLedgerCheckpoint(join(dir, "wallet")), repairDirectoryCheckpoint(join(dir, "directory")), ...repairKnowledgeGraphs(dir), ...repairCausalModels(dir)].filter((r): r is StoreRepair => r !== null);
    if (dirs.length === 0 && files.length === 0) throw new SvcError("E_NOT_FOUND", `no write-ahead log (*.seg files) or store file at or under ${dir}`, { field: "dir" });
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
        say(`${f.file} (${f.store}): rewritten with ${f.kept} readable records, ${f.dropped} dropped (${f.detail}); original kept as ${f.backup}`);
      }
    }
    for (const wal of dirs) {
      const report = await repairWal(wal);
      say(`${wal}: ${report.segments} segments, ${report.frames} frames`);
      for (const f of report.files) {
        changed++;
        if (f.header) say(`  ${f.file}: header rewritten (${f.header})`);
        for (const r of f.damaged) say(`  ${f.file}: ${r.action} ${r.bytes} bytes at offset ${r.offset} (${r.reason})`);
        say(`  ${f.file}: ${f.salvaged} frames after the damage salvaged; original kept as ${f.backup}`);
      }
      for (const id of report.missing) say(`  segment ${id} is missing: the log cannot be opened past it`);
    }
    say(changed === 0 && refused === 0 ? "nothing to repair" : `repaired ${changed} file(s)${refused > 0 ? `, ${refused} left for a restore from backup` : ""}`);
    return refused > 0 ? 1 : 0;
  },
};
