/** @module ivf-child — opens a collection, writes rows, starts an index build and prints "building"; the parent kills it with SIGKILL mid-build (driven by ivf.test.ts). */
import { Collection } from "../../src/engine/collection.js";
import { Kernels } from "../../src/kernels/abi.js";
import { ScanPool } from "../../src/pool/scan-pool.js";
import { clusteredRows, DIM } from "./ivf-data.js";

const [dir, countArg, clustersArg] = process.argv.slice(2);
const n = Number(countArg);
const kernels = Kernels.create();
const pool = new ScanPool(kernels, { threads: 1 });
const c = await Collection.open(dir!, { kernels, pool, dimension: DIM, metric: "hamming", annMinRows: Infinity });
const rows = clusteredRows(n, 11, 0, Number(clustersArg)); // the rows ivf.test.ts checks against
for (let s = 0; s < n; s += 1000) {
  await c.upsert(
    "",
    Array.from({ length: Math.min(1000, n - s) }, (_, i) => ({ id: `r${s + i}`, bits: rows[s + i]!, metadata: { b: (s + i) % 100 } })),
  );
}
await c.settled();
await c.checkpoint();
process.stdout.write("building\n");
// writes during the build: acknowledged rows must survive the kill
let w = 0;
const writer = (async () => {
  for (;;) {
    await c.upsert("", [{ id: `late${w}`, bits: rows[w % n]! }]);
    process.stdout.write(`acked late${w}\n`);
    w++;
  }
})();
await c.buildIndex("");
process.stdout.write("built\n");
await writer;
