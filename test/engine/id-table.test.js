import { describe, expect, it } from "vitest";
import { IdTable } from "../../src/engine/id-table.js";
import { mulberry32 } from "../../src/kernels/random.js";
describe("IdTable", () => {
    it("agrees with a Map through appends, remaps, unmaps and growth (Unicode ids included)", () => {
        const t = new IdTable();
        const ref = new Map();
        const next = mulberry32(3);
        const pool = Array.from({ length: 5000 }, (_, i) => (i % 7 === 0 ? `ïd-${i}-東京-😀` : `id-${i}`));
        for (let step = 0; step < 40_000; step++) {
            const id = pool[next() % pool.length];
            if (next() % 5 === 0) {
                expect(t.unmap(id)).toBe(ref.get(id));
                ref.delete(id);
            }
            else {
                const row = t.append(id);
                expect(t.map(row, id)).toBe(ref.get(id));
                ref.set(id, row);
            }
        }
        for (const id of pool)
            expect(t.rowOf(id)).toBe(ref.get(id));
        for (const [id, row] of ref)
            expect(t.idOf(row)).toBe(id);
        expect(t.rowOf("never-seen")).toBeUndefined();
    });
    it("maps a row from its stored bytes (the restart path)", () => {
        const t = new IdTable();
        const bytes = new TextEncoder().encode("héllo");
        const row = t.appendBytes(bytes, 0, bytes.length);
        t.map(row);
        expect(t.rowOf("héllo")).toBe(row);
        expect(t.idOf(row)).toBe("héllo");
    });
});
//# sourceMappingURL=id-table.test.js.map