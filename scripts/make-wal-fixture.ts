/** @module make-wal-fixture — writes test/fixtures/wal-v1/000001.seg, a small deterministic WAL format v1 segment (run: npx tsx scripts/make-wal-fixture.ts). */
import { appendFile, mkdir, readdir, unlink } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { paddingFrame } from "../src/store/segment.js";
import { Wal } from "../src/store/wal.js";

const dir = join(dirname(fileURLToPath(import.meta.url)), "..", "test", "fixtures", "wal-v1");

/** Float32 [1, -1, 0.5, 0.25] as little-endian bytes: the engine ships values as one bin per batch. */
const values = new Uint8Array(new Float32Array([1, -1, 0.5, 0.25]).buffer);

await mkdir(dir, { recursive: true });
for (const name of await readdir(dir)) if (name.endsWith(".seg") || name.includes(".seg.")) await unlink(join(dir, name));

// Frames 1 and 2, then a 20-byte padding frame (what repair writes over damage), then frames 3 and 4.
let { wal } = await Wal.open(dir, { durability: "none" });
await wal.append(1, { op: "put", id: "a", n: 1 });
await wal.append(2, { ids: [7, 8], values });
await wal.close();
await appendFile(join(dir, "000001.seg"), paddingFrame(20));
({ wal } = await Wal.open(dir, { durability: "none" }));
await wal.append(7, "hello, wal");
await wal.append(255, [1, 2.5, null, true, { nested: ["x"] }]);
await wal.close();
console.log(`wrote ${join(dir, "000001.seg")} (end ${JSON.stringify(wal.position)})`);
