/** LineBatch: lines reach the sink in order, a batch at a time, and every flush path writes what waits. */
import { afterEach, describe, expect, it } from "vitest";
import pino from "pino";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LineBatch, type LineSink } from "../../src/cli/log-batch.js";

/** A sink that records each write and each flush. */
function recorder(): LineSink & { writes: string[]; flushes: number; syncs: number; destroyed: boolean } {
  return {
    writes: [],
    flushes: 0,
    syncs: 0,
    destroyed: false,
    write(data: string) {
      this.writes.push(data);
      return true;
    },
    flush(cb?: (err?: Error) => void) {
      this.flushes++;
      cb?.();
    },
    flushSync() {
      this.syncs++;
    },
  };
}

const open: LineBatch[] = [];
afterEach(() => {
  for (const b of open.splice(0)) b.close();
});

function batch(sink: LineSink, chars: number, ms = 60_000): LineBatch {
  const b = new LineBatch(sink, chars, ms);
  open.push(b);
  return b;
}

describe("LineBatch", () => {
  it("holds lines until the batch size, then writes them as one string in order", () => {
    const sink = recorder();
    const b = batch(sink, 10);
    b.write("aaaa\n");
    expect(sink.writes).toEqual([]);
    b.write("bbbb\n"); // 10 characters wait
    expect(sink.writes).toEqual(["aaaa\nbbbb\n"]);
    b.write("cc\n");
    b.flush();
    expect(sink.writes).toEqual(["aaaa\nbbbb\n", "cc\n"]);
    expect(sink.flushes).toBe(1);
  });

  it("flush calls back once the sink has flushed; flushSync writes what waits and syncs the sink", async () => {
    const sink = recorder();
    const b = batch(sink, 1 << 20);
    b.write("x\n");
    await new Promise<void>((r) => b.flush(() => r()));
    expect(sink.writes).toEqual(["x\n"]);
    b.write("y\n");
    b.flushSync();
    expect(sink.writes).toEqual(["x\n", "y\n"]);
    expect(sink.syncs).toBe(1);
  });

  it("writes what waits on its timer", async () => {
    const sink = recorder();
    const b = batch(sink, 1 << 20, 20);
    b.write("late\n");
    for (let i = 0; i < 100 && sink.writes.length === 0; i++) await new Promise((r) => setTimeout(r, 20));
    expect(sink.writes).toEqual(["late\n"]);
  });

  it("drops nothing and throws nothing once the sink is destroyed (after pino's beforeExit end)", () => {
    const sink = recorder();
    const b = batch(sink, 1);
    sink.destroyed = true;
    expect(() => b.write("gone\n")).not.toThrow();
    let called = false;
    b.flush(() => (called = true));
    expect(called).toBe(true);
    expect(() => b.flushSync()).not.toThrow();
    expect(sink.writes).toEqual([]);
  });

  it("through pino and SonicBoom: every line reaches the file, in order, as pino writes it", async () => {
    const dir = mkdtempSync(join(tmpdir(), "svc-log-batch-"));
    try {
      const file = join(dir, "log");
      const dest = pino.destination({ dest: file, sync: false, minLength: 1 });
      await new Promise((r) => dest.once("ready", r));
      const log = pino({ level: "info", base: null, timestamp: false }, batch(dest, 4096));
      const n = 5000;
      for (let i = 0; i < n; i++) log.info({ i, s: 'é"\n' }, "request");
      await new Promise<void>((r) => log.flush(() => r()));
      const lines = readFileSync(file, "utf8").trimEnd().split("\n");
      expect(lines.length).toBe(n);
      lines.forEach((l, i) => expect(JSON.parse(l)).toEqual({ level: 30, i, s: 'é"\n', msg: "request" }));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
