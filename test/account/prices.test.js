import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { costOf, DEFAULT_PRICES, parsePrices } from "../../src/account/prices.js";
import { SvcError } from "../../src/errors.js";
import { loadConfig } from "../../src/app/start-server.js";
function refused(f) {
    try {
        f();
    }
    catch (err) {
        expect(err).toBeInstanceOf(SvcError);
        expect(err.code).toBe("E_BAD_REQUEST");
        return err;
    }
    throw new Error("expected a throw");
}
describe("parsePrices", () => {
    it("no config means the defaults; a partial table keeps the defaults it does not name", () => {
        expect(parsePrices(undefined)).toEqual(DEFAULT_PRICES);
        const p = parsePrices({ per1kWritten: 0.5, signupCredit: 0, requests: { upsert: 0.25 } });
        expect(p).toEqual({
            requests: { ...DEFAULT_PRICES.requests, upsert: 0.25 },
            defaultRequest: DEFAULT_PRICES.defaultRequest,
            per1kWritten: 0.5,
            per1kScanned: DEFAULT_PRICES.per1kScanned,
            signupCredit: 0,
        });
        // overriding a default request price
        expect(parsePrices({ requests: { query: 0 } }).requests.query).toBe(0);
        // the defaults are not mutated by a parse
        expect(DEFAULT_PRICES.requests.upsert).toBeUndefined();
    });
    it("rejects bad values with the path of the offending field", () => {
        const cases = [
            [null, "prices"],
            [[], "prices"],
            ["cheap", "prices"],
            [5, "prices"],
            [{ per1kWritten: -0.1 }, "prices.per1kWritten"],
            [{ per1kScanned: "1" }, "prices.per1kScanned"],
            [{ per1kScanned: Number.NaN }, "prices.per1kScanned"],
            [{ signupCredit: Number.POSITIVE_INFINITY }, "prices.signupCredit"],
            [{ defaultRequest: null }, "prices.defaultRequest"],
            [{ requests: "free" }, "prices.requests"],
            [{ requests: null }, "prices.requests"],
            [{ requests: [0.1] }, "prices.requests"],
            [{ requests: { query: -1 } }, "prices.requests.query"],
            [{ requests: { upsert: true } }, "prices.requests.upsert"],
            [{ perWrite: 1 }, "prices.perWrite"],
            // names that exist on every object's prototype are not prices either
            [{ constructor: 1 }, "prices.constructor"],
            [{ toString: 0 }, "prices.toString"],
        ];
        for (const [raw, field] of cases) {
            const e = refused(() => parsePrices(raw));
            expect(e.field, JSON.stringify(raw)).toBe(field);
            expect(e.message).toContain(field.split(".").at(-1));
        }
        // a caller-chosen root name prefixes the paths
        expect(refused(() => parsePrices({ requests: { query: -1 } }, "config.prices")).field).toBe("config.prices.requests.query");
    });
});
describe("costOf", () => {
    const p = parsePrices({ requests: { query: 0.000002 }, defaultRequest: 0.000001, per1kWritten: 0.0001, per1kScanned: 0.0000001 });
    it("is per op + per 1k written + per 1k scanned, in nano-USD", () => {
        expect(costOf(p, "query", {})).toBe(2_000);
        expect(costOf(p, "fetch", {})).toBe(1_000); // not listed: defaultRequest
        expect(costOf(p, "upsert", { written: 1000 })).toBe(1_000 + 100_000);
        expect(costOf(p, "upsert", { written: 2500 })).toBe(1_000 + 250_000);
        expect(costOf(p, "query", { scanned: 1_000_000 })).toBe(2_000 + 100_000);
        expect(costOf(p, "update", { written: 10, scanned: 10_000 })).toBe(1_000 + 1_000 + 1_000);
    });
    it("rounds fractions of a nano-USD up, so a priced operation is never free", () => {
        // 1 scanned vector costs 0.1 nano-USD
        expect(costOf(p, "query", { scanned: 1 })).toBe(2_001);
        expect(costOf(parsePrices({ requests: { query: 0 }, per1kScanned: 0.0000001 }), "query", { scanned: 1 })).toBe(1);
        const free = parsePrices({ requests: { query: 0 }, defaultRequest: 0, per1kWritten: 0, per1kScanned: 0 });
        expect(costOf(free, "query", { scanned: 1_000_000 })).toBe(0);
        expect(costOf(free, "upsert", { written: 1_000_000 })).toBe(0);
    });
});
describe("loadConfig (<data>/config.json)", () => {
    it("reads prices from config.json and reports bad ones by field", () => {
        const dir = mkdtempSync(join(tmpdir(), "svc-config-"));
        try {
            expect(loadConfig(dir).prices).toEqual(DEFAULT_PRICES);
            writeFileSync(join(dir, "config.json"), JSON.stringify({ prices: { signupCredit: 1, requests: { upsert: 0.5 } } }));
            const { prices } = loadConfig(dir);
            expect(prices.signupCredit).toBe(1);
            expect(prices.requests.upsert).toBe(0.5);
            expect(prices.requests.query).toBe(DEFAULT_PRICES.requests.query);
            writeFileSync(join(dir, "config.json"), JSON.stringify({ prices: { per1kWritten: -1 } }));
            expect(refused(() => loadConfig(dir)).field).toBe("prices.per1kWritten");
            writeFileSync(join(dir, "config.json"), JSON.stringify({ price: {} }));
            expect(refused(() => loadConfig(dir)).field).toBe("price");
            writeFileSync(join(dir, "config.json"), "{ not json");
            expect(refused(() => loadConfig(dir)).field).toBe("config");
        }
        finally {
            rmSync(dir, { recursive: true, force: true });
        }
    });
});
//# sourceMappingURL=prices.test.js.map