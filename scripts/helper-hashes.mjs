// Writes dist/helpers/code-hashes.json: for each helper, the SHA-256 of its code as compiled, taken
// right after `tsc`: its module and every module it imports, followed through the real imports
// (helperCodeBytes in src/helpers/registry.ts, the same function the registry verifies with). The
// registry publishes these hashes and refuses to run a helper whose code no longer matches.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { HELPERS, helperCodeBytes, sha256Hex } from "../dist/helpers/registry.js";

const dir = join(import.meta.dirname, "..", "dist", "helpers");
const hashes = {};
for (const { module } of HELPERS) {
  const code = helperCodeBytes(dir, module);
  if (code === null) throw new Error(`helper-hashes: dist/helpers/${module}.js is missing after the compile`);
  hashes[module] = sha256Hex(code);
}
writeFileSync(join(dir, "code-hashes.json"), JSON.stringify(hashes, null, 2) + "\n");
console.log(
  `helper code hashes: ${Object.keys(hashes).length} helpers (each with the modules it imports) -> dist/helpers/code-hashes.json`,
);
