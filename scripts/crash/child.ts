/** @module child — the crash test's writer: opens the collection, writes batches with several in flight, reports each one. */
import { Collection } from "../../src/engine/collection.js";
import { Kernels } from "../../src/kernels/abi.js";
import { ScanPool } from "../../src/pool/scan-pool.js";
import { DIM, NS, batchOp, valuesFor } from "./workload.js";

const [dir, first] = [process.argv[2]!, Number(process.argv[3])];
const IN_FLIGHT = 4;
const say = (line: string) => process.stdout.write(`${line}\n`);

const kernels = Kernels.create();
const pool = new ScanPool(kernels, { threads: 1 });
// Small segments and checkpoints so kills land in rollovers and checkpoints too.
const c = await Collection.open(dir, { kernels, pool, dimension: DIM, segmentBytes: 32 << 10, checkpointBytes: 96 << 10 });
say("ready");

async function write(b: number): Promise<void> {
  say(`sent ${b}`);
  const op = batchOp(b);
  if (op.kind === "upsert")
    await c.upsert(
      NS,
      op.ids.map((id) => ({ id, values: valuesFor(id, b), metadata: { b } })),
    );
  else await c.delete(NS, { ids: op.ids });
  say(`ack ${b}`);
}

let b = first;
const running = new Set<Promise<void>>();
for (;;) {
  while (running.size < IN_FLIGHT) {
    const p = write(b++).finally(() => running.delete(p));
    running.add(p);
  }
  await Promise.race(running);
}
