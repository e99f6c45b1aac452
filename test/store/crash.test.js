/** @module crash.test — a process killed mid-append loses no acknowledged frame and leaves at most a torn tail. */
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { openCollect, useTempDir } from "./helpers.js";
const tmp = useTempDir();
const CHILD = fileURLToPath(new URL("./crash-child.ts", import.meta.url));
/** Run the child until it has acknowledged `acks` frames, SIGKILL it, return what it acknowledged. */
function runAndKill(acks) {
    return new Promise((resolve, reject) => {
        const child = spawn(process.execPath, ["--import", "tsx", CHILD, tmp.dir], { stdio: ["ignore", "pipe", "pipe"] });
        const acked = new Map();
        let rest = "";
        let stderr = "";
        child.stderr.on("data", (d) => (stderr += d.toString()));
        child.stdout.on("data", (d) => {
            const lines = (rest + d.toString()).split("\n");
            rest = lines.pop();
            for (const line of lines) {
                const [i, segment, offset] = line.split(" ").map(Number);
                acked.set(i, { segment: segment, offset: offset });
            }
            if (acked.size >= acks)
                child.kill("SIGKILL");
        });
        child.on("exit", (code, signal) => {
            if (signal === "SIGKILL")
                resolve(acked);
            else
                reject(new Error(`child exited with ${code}: ${stderr}`));
        });
    });
}
describe("WAL crash", () => {
    it("keeps every acknowledged frame, in order, after SIGKILL mid-append (three kills, reopened each time)", async () => {
        const everAcked = new Map();
        for (let round = 0; round < 3; round++) {
            // Each round's child appends to the same log after recovering the previous round's tail.
            const acked = await runAndKill(150);
            const { wal, frames } = await openCollect(tmp.dir);
            await wal.close();
            const seen = new Map();
            for (const f of frames)
                seen.set(`${round}:${f.body.i}:${f.end.segment}:${f.end.offset}`, f.end);
            for (const [i, pos] of acked) {
                expect(seen.has(`${round}:${i}:${pos.segment}:${pos.offset}`)).toBe(true);
                everAcked.set(round * 1e6 + i, pos);
            }
            // Positions strictly increase and each frame's body is intact.
            for (let k = 1; k < frames.length; k++) {
                const [a, b] = [frames[k - 1].end, frames[k].end];
                expect(b.segment > a.segment || (b.segment === a.segment && b.offset > a.offset)).toBe(true);
            }
            for (const f of frames) {
                const { i, data } = f.body;
                expect(data.length).toBe(i % 5 === 0 ? 100_000 : (i * 37) % 3000);
                expect(data.every((x) => x === (i & 0xff))).toBe(true);
            }
            // Everything acknowledged in earlier rounds is still there.
            const ends = new Set(frames.map((f) => `${f.end.segment}:${f.end.offset}`));
            for (const pos of everAcked.values())
                expect(ends.has(`${pos.segment}:${pos.offset}`)).toBe(true);
        }
    });
});
//# sourceMappingURL=crash.test.js.map