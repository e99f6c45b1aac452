/**
 * RowFile.appendAsync (values.f32 written on the threadpool, off the main thread): rows whose write has not run yet are
 * read from its bytes (past the file's end too, and among rows appended synchronously), `written` comes only once the
 * file holds them, sync() and close() wait for the writes, and a failed write fails sync() and later appends with E_IO.
 * The threadpool is held busy so that the writes are still queued when the reads run.
 */
import { randomBytes, pbkdf2 } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { RowFile } from "../../src/engine/row-file.js";

const ROW = 16;
const dir = mkdtempSync(join(tmpdir(), "svc-row-file-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;
const newPath = () => join(dir, `rows-${files++}.bin`);

/** Rows [first, first + n) of a fixed pattern, none of them zero. */
const rows = (first: number, n: number) => Uint8Array.from({ length: n * ROW }, (_, i) => (((first * ROW + i) * 7) % 251) + 1);

/** Occupies every threadpool thread for a while (resolves when they are free again): writes queued meanwhile wait. */
function holdThreadpool(): Promise<unknown> {
  const threads = Number(process.env.UV_THREADPOOL_SIZE ?? 4);
  return Promise.all(
    Array.from({ length: threads }, () => new Promise((resolve) => pbkdf2(randomBytes(16), "salt", 300_000, 32, "sha256", resolve))),
  );
}

describe("RowFile.appendAsync", () => {
  it("rows not yet written are read from their bytes, and `written` comes once the file holds them", async () => {
    const path = newPath();
    const f = new RowFile(path, ROW);
    f.append(rows(0, 3));
    const busy = holdThreadpool();
    const a = rows(3, 5);
    let inFile: Buffer | null = null;
    const written = new Promise<void>((resolve) =>
      f.appendAsync(a, () => {
        inFile = readFileSync(path);
        resolve();
      }),
    );
    expect(statSync(path).size).toBe(3 * ROW); // the write has not run
    expect(f.count).toBe(8);
    expect(f.readRange(0, 8)).toEqual(rows(0, 8));
    const one = new Uint8Array(ROW + 2);
    f.readInto(6, one, 2);
    expect(one.subarray(2)).toEqual(rows(6, 1));
    f.append(rows(8, 2)); // a synchronous append after it: the file has a hole where the async rows go
    expect(statSync(path).size).toBe(10 * ROW);
    expect(f.readRange(2, 8)).toEqual(rows(2, 8));
    expect(() => f.readRange(9, 2)).toThrow(/past the end/);
    // a second write in flight, ending past the file's end
    const b = rows(10, 4);
    const written2 = new Promise<void>((resolve) => f.appendAsync(b, resolve));
    expect(f.readRange(4, 10)).toEqual(rows(4, 10));
    const synced = f.sync();
    await written;
    expect(inFile!.subarray(3 * ROW, 8 * ROW)).toEqual(Buffer.from(a));
    await synced; // after every write
    expect(readFileSync(path)).toEqual(Buffer.from(rows(0, 14)));
    await written2;
    await busy;
    expect(f.readRange(0, 14)).toEqual(rows(0, 14));
    f.close();
  });

  it("close() with writes queued closes the file once they are done, and they land", async () => {
    const path = newPath();
    const f = new RowFile(path, ROW);
    const busy = holdThreadpool();
    const written = new Promise<void>((resolve) => f.appendAsync(rows(0, 6), resolve));
    f.close();
    await written;
    await busy;
    expect(readFileSync(path)).toEqual(Buffer.from(rows(0, 6)));
  });

  it("a failed write never calls `written`; sync() and later appends fail with E_IO", async () => {
    const path = newPath();
    const f = new RowFile(path, ROW);
    const real = (f as unknown as { fd: number }).fd;
    (f as unknown as { fd: number }).fd = 1_000_000_000; // no such descriptor: the write fails (EBADF)
    let called = false;
    f.appendAsync(rows(0, 2), () => (called = true));
    await expect(f.sync()).rejects.toMatchObject({ code: "E_IO" });
    expect(called).toBe(false);
    expect(() => f.append(rows(2, 1))).toThrow(expect.objectContaining({ code: "E_IO" }));
    expect(() => f.appendAsync(rows(2, 1), () => {})).toThrow(expect.objectContaining({ code: "E_IO" }));
    (f as unknown as { fd: number }).fd = real;
    f.close();
  });
});
