// Writes dist/helpers/code-hashes.json: the SHA-256 of each compiled helper module, taken right
// after `tsc`. The registry publishes these hashes and refuses to run a helper whose file no
// longer matches (src/helpers/registry.ts).
import { createHash } from "node:crypto";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const dir = join(import.meta.dirname, "..", "dist", "helpers");
const hashes = {};
for (const f of readdirSync(dir).sort()) {
  if (!f.endsWith(".js") || f === "registry.js") continue;
  hashes[f.slice(0, -3)] = createHash("sha256").update(readFileSync(join(dir, f))).digest("hex");
}
writeFileSync(join(dir, "code-hashes.json"), JSON.stringify(hashes, null, 2) + "\n");
console.log(`helper code hashes: ${Object.keys(hashes).length} modules -> dist/helpers/code-hashes.json`);
