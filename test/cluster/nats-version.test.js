/** The nats-server version check behind the start-up warning (issue 31 item 8: KV compare-and-set is unsafe before 2.9.21). */
import { describe, expect, it } from "vitest";
import { CAS_SAFE_NATS, olderThan } from "../../src/app/cluster-node.js";
describe("olderThan", () => {
    it("orders x.y.z versions numerically and leaves what does not parse alone", () => {
        expect(CAS_SAFE_NATS).toBe("2.9.21");
        expect(olderThan("2.9.10", CAS_SAFE_NATS)).toBe(true);
        expect(olderThan("2.9.9", CAS_SAFE_NATS)).toBe(true);
        expect(olderThan("2.8.30", CAS_SAFE_NATS)).toBe(true);
        expect(olderThan("2.9.21", CAS_SAFE_NATS)).toBe(false);
        expect(olderThan("2.10.0", CAS_SAFE_NATS)).toBe(false);
        expect(olderThan("2.10.0-beta.1", CAS_SAFE_NATS)).toBe(false);
        expect(olderThan("3.0.0", CAS_SAFE_NATS)).toBe(false);
        expect(olderThan("", CAS_SAFE_NATS)).toBe(false);
        expect(olderThan("v2", CAS_SAFE_NATS)).toBe(false);
    });
});
//# sourceMappingURL=nats-version.test.js.map