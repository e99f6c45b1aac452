/** @module crash-test — `npx tsx scripts/crash-test.ts [--cycles 200] [--seed 1] [--dir path]`: the long crash run (CI runs 20 cycles in npm test). */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { runCrashCycles } from "./crash/harness.js";

const { values } = parseArgs({
  options: { cycles: { type: "string", default: "200" }, seed: { type: "string", default: "1" }, dir: { type: "string" } },
});
const dir = values.dir ?? mkdtempSync(join(tmpdir(), "svc-crash-"));
const started = performance.now();
try {
  const s = await runCrashCycles({
    dir,
    cycles: Number(values.cycles),
    seed: Number(values.seed),
    log: (line) => process.stdout.write(`${line}\n`),
  });
  const secs = ((performance.now() - started) / 1000).toFixed(0);
  process.stdout.write(
    `\nOK: ${s.cycles} SIGKILL cycles in ${secs} s; ${s.acked} acknowledged batches, every one recovered exactly; final prefix batch ${s.prefix} with ${s.ids} ids; ` +
      `${s.killedDuringOpen} kills landed during open/recovery, ${s.tornTails} recoveries cut a torn tail, ${s.unacknowledgedLost} unacknowledged batches lost.\n`,
  );
} finally {
  if (values.dir === undefined) rmSync(dir, { recursive: true, force: true });
}
