import { createHash } from "node:crypto";
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { DEFAULT_TABLE_DIR, MANIFEST_FILE, TABLE_FILE, loadWordTable } from "../../src/encoder/table.js";
import { SvcError } from "../../src/errors.js";
const manifest = JSON.parse(readFileSync(new URL(MANIFEST_FILE, DEFAULT_TABLE_DIR), "utf8"));
const tmp = mkdtempSync(join(tmpdir(), "svc-encoder-table-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
function codeOf(f) {
    try {
        f();
    }
    catch (e) {
        return e instanceof SvcError ? e.code : "not an SvcError";
    }
    return undefined;
}
describe("encoder word table", () => {
    it("matches the checksum and size in its manifest", () => {
        const buf = readFileSync(new URL(manifest.file, DEFAULT_TABLE_DIR));
        expect(buf.length).toBe(manifest.bytes);
        expect(createHash("sha256").update(buf).digest("hex")).toBe(manifest.sha256);
        expect(manifest.bytes).toBeLessThan(20e6);
    });
    it("decodes to frequency-ordered words with int8 vectors", () => {
        const t = loadWordTable();
        expect(t.count).toBe(manifest.words);
        expect(t.dims).toBe(manifest.dims);
        expect(t.words.length).toBe(t.count);
        expect(t.vectors.length).toBe(t.count * t.dims);
        expect(t.words.indexOf("the")).toBeLessThan(t.words.indexOf("aerodynamics"));
        expect(t.scales.every((s) => s > 0 && Number.isFinite(s))).toBe(true);
    });
    it("refuses a corrupted or missing table with E_IO", () => {
        const dir = join(tmp, "bad/");
        rmSync(dir, { recursive: true, force: true });
        mkdirSync(dir);
        copyFileSync(new URL(MANIFEST_FILE, DEFAULT_TABLE_DIR), join(dir, MANIFEST_FILE));
        const buf = readFileSync(new URL(TABLE_FILE, DEFAULT_TABLE_DIR));
        buf[buf.length >> 1] ^= 1;
        writeFileSync(join(dir, TABLE_FILE), buf);
        expect(codeOf(() => loadWordTable(pathToFileURL(dir)))).toBe("E_IO");
        rmSync(join(dir, TABLE_FILE));
        expect(codeOf(() => loadWordTable(pathToFileURL(dir)))).toBe("E_IO");
        expect(codeOf(() => loadWordTable(pathToFileURL(join(tmp, "nowhere/"))))).toBe("E_IO");
        writeFileSync(join(dir, MANIFEST_FILE), "{not json");
        expect(codeOf(() => loadWordTable(pathToFileURL(dir)))).toBe("E_IO");
    });
});
//# sourceMappingURL=table.test.js.map