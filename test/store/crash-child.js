/** @module crash-child — appends numbered frames until killed, printing "i segment offset" per acknowledged frame (driven by crash.test.ts). */
import { Wal } from "../../src/store/wal.js";
const dir = process.argv[2];
const { wal } = await Wal.open(dir, { segmentBytes: 256 * 1024, durability: "batch" });
let next = 0;
async function writer() {
    for (;;) {
        const i = next++;
        // Sizes cycle through small frames and binaries past the 64 KiB zero-copy threshold.
        const bytes = i % 5 === 0 ? 100_000 : (i * 37) % 3000;
        const pos = await wal.append(1 + (i % 4), { i, data: new Uint8Array(bytes).fill(i & 0xff) });
        process.stdout.write(`${i} ${pos.segment} ${pos.offset}\n`);
    }
}
await Promise.all([writer(), writer(), writer(), writer()]);
//# sourceMappingURL=crash-child.js.map