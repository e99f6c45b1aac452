/** @module directory — `svc directory import <file>`: load businesses (JSON Lines or CSV) into a data dir's directory, with progress on stderr. */
import { importFile } from "../directory/import.js";
import { Directory } from "../directory/service.js";
import { join } from "node:path";
import { SvcError } from "../errors.js";
import { say, type Command } from "./command.js";
import { DEFAULT_DATA_DIR } from "./serve.js";

export const directoryCommand: Command = {
  name: "directory",
  usage: `svc directory import <file.jsonl|file.csv> [--data ./data/var] [--format jsonl|csv] [--json]
      Merge businesses into <data>/directory (stop the server first: one writer per
      data dir). Existing ids are updated: sourced values are replaced, owner-asserted
      and verified ones kept. Progress goes to stderr; bad lines are reported with
      their line number and skipped (exit 2 when any was).`,
  options: { data: { type: "string" }, format: { type: "string" }, json: { type: "boolean" } },
  async run(values, args) {
    const [sub, file] = args;
    if (sub !== "import")
      throw new SvcError("E_BAD_REQUEST", `svc directory: unknown subcommand '${sub ?? ""}' (use: svc directory import <file>)`, {
        field: "subcommand",
      });
    if (file === undefined) throw new SvcError("E_BAD_REQUEST", "svc directory import needs a file (.jsonl or .csv)", { field: "file" });
    const dataDir = (values.data as string | undefined) ?? DEFAULT_DATA_DIR;
    const dir = await Directory.open(join(dataDir, "directory"));
    const tty = process.stderr.isTTY === true;
    let last = 0;
    const t0 = Date.now();
    try {
      const report = await importFile(dir, file, {
        format: values.format as string | undefined,
        onProgress: (p) => {
          const now = Date.now();
          if (now - last < (tty ? 100 : 1000) && p.bytes < p.totalBytes) return;
          last = now;
          const pct = p.totalBytes > 0 ? Math.round((100 * p.bytes) / p.totalBytes) : 100;
          process.stderr.write(`${tty ? "\r" : ""}import ${file}: ${pct}% (${p.lines} lines)${tty ? "" : "\n"}`);
        },
      });
      if (tty) process.stderr.write("\n");
      for (const r of report.rejected) process.stderr.write(`${r.message}\n`); // messages start with "line N: "
      if (report.rejectedCount > report.rejected.length)
        process.stderr.write(`... and ${report.rejectedCount - report.rejected.length} more rejected lines\n`);
      if (values.json)
        say(
          JSON.stringify({
            lines: report.lines,
            created: report.created,
            updated: report.updated,
            rejected: report.rejectedCount,
            businesses: dir.size,
          }),
        );
      else
        say(
          `imported ${file}: ${report.lines} lines, ${report.created} created, ${report.updated} updated, ${report.rejectedCount} rejected; ${dir.size} businesses in ${join(dataDir, "directory")} (${((Date.now() - t0) / 1000).toFixed(1)} s)`,
        );
      return report.rejectedCount > 0 ? 2 : 0;
    } finally {
      await dir.close();
    }
  },
};
