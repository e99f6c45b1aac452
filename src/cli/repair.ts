/** @module repair — `svc repair <dir>`: salvage the write-ahead logs under a collection or data directory. */
import { existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { SvcError } from "../errors.js";
import { repairWal } from "../store/repair.js";
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
      each changed segment is first copied to <name>.damaged-<n>. Run it
      while the server is stopped.`,
  options: {},
  async run(_values, args) {
    const dir = args[0];
    if (dir === undefined) throw new SvcError("E_BAD_REQUEST", "svc repair needs a directory", { field: "dir" });
    const dirs = walDirs(dir);
    if (dirs.length === 0) throw new SvcError("E_NOT_FOUND", `no write-ahead log (*.seg files) at or under ${dir}`, { field: "dir" });
    let changed = 0;
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
    say(changed === 0 ? "nothing to repair" : `repaired ${changed} segment file(s)`);
    return 0;
  },
};
