/** Sliding-window limits per client address (src/net/rate-limit.ts): the count per window, retryAfterSeconds, refused requests, IPv6 by /64, mapped IPv4, separate addresses. */
import { describe, expect, it } from "vitest";
import { SvcError } from "../../src/errors.js";
import { clientKey, RateLimiter } from "../../src/net/rate-limit.js";
import { DIRECTORY_WRITE_LIMIT } from "../../src/http/routes/directory.js";
function refusal(f) {
    try {
        f();
    }
    catch (e) {
        if (e instanceof SvcError)
            return e;
        throw e;
    }
    throw new Error("expected a refusal");
}
describe("RateLimiter", () => {
    it("allows count per window, then refuses with rate_limited and the seconds until the oldest request leaves the window", () => {
        let now = 1_000_000;
        const rl = new RateLimiter("board posts", { count: 3, windowSeconds: 60 }, () => now);
        for (let i = 0; i < 3; i++) {
            rl.take("203.0.113.9");
            now += 10_000;
        }
        const err = refusal(() => rl.take("203.0.113.9"));
        expect(err.code).toBe("rate_limited");
        expect(err.status).toBe(429);
        expect(err.field).toBe("client");
        // the first request was at t0; now is t0 + 30 s -> 30 s to wait
        expect(err.details).toEqual({ retryAfterSeconds: 30 });
        expect(err.message).toContain("board posts");
        // another address is not affected
        rl.take("198.51.100.7");
        // once the oldest leaves the window, one more is allowed
        now += 30_000;
        rl.take("203.0.113.9");
        expect(() => rl.take("203.0.113.9")).toThrow(SvcError);
    });
    it("the directory's limit: the 11th write inside 10 minutes is refused; refusals do not extend the wait; other addresses and later windows pass", () => {
        const start = Date.parse("2026-06-01T00:00:00Z");
        let now = start;
        const rl = new RateLimiter("business writes", DIRECTORY_WRITE_LIMIT, () => now);
        for (let i = 0; i < 10; i++) {
            now += 1000;
            rl.take("10.0.0.1");
        }
        expect(refusal(() => rl.take("10.0.0.1")).details).toEqual({ retryAfterSeconds: 600 - 9 });
        expect(refusal(() => rl.take("::ffff:10.0.0.1")).code).toBe("rate_limited"); // the same client, IPv4-mapped
        rl.take("10.0.0.2");
        now = start + 10 * 60_000 + 1001; // the first write left the window
        rl.take("10.0.0.1");
        expect(refusal(() => rl.take("10.0.0.1")).code).toBe("rate_limited");
    });
    it("count 0 turns the limit off", () => {
        const rl = new RateLimiter("asks", { count: 0, windowSeconds: 60 });
        for (let i = 0; i < 1000; i++)
            rl.take("192.0.2.1");
    });
    it("counts an IPv6 /64 as one client", () => {
        const rl = new RateLimiter("trust records", { count: 1, windowSeconds: 60 });
        rl.take("2001:db8:1:2::1");
        expect(() => rl.take("2001:db8:1:2::ffff")).toThrow(expect.objectContaining({ code: "rate_limited" }));
        rl.take("2001:db8:1:3::1");
    });
});
describe("clientKey", () => {
    it.each([
        ["127.0.0.1", "127.0.0.1"],
        ["192.0.2.5", "192.0.2.5"],
        ["::ffff:10.1.2.3", "10.1.2.3"],
        ["::FFFF:10.1.2.3", "10.1.2.3"],
        ["0000:0000:0000:0000:0000:ffff:10.1.2.3", "10.1.2.3"],
        ["::ffff:a01:203", "10.1.2.3"], // mapped, hex spelling
        ["64:ff9b::10.1.2.3", "10.1.2.3"], // NAT64
        ["2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64"],
        ["2001:db8:1:2:aaaa::1", "2001:db8:1:2::/64"],
        ["2001:db8:1:2:bbbb:cccc:dddd:eeee", "2001:db8:1:2::/64"],
        ["2001:0db8:0001:0002:aaaa::1", "2001:db8:1:2::/64"],
        ["2001:db8::1", "2001:db8:0:0::/64"],
        ["1:2::3:4:5:1.2.3.4", "1:2:0:3::/64"], // an embedded dotted tail is two groups
        ["fe80::1%eth0", "fe80:0:0:0::/64"],
        ["::1", "0:0:0:0::/64"],
        ["[2001:DB8:1:2::9]", "2001:db8:1:2::/64"],
        ["", "unknown"],
    ])("%s -> %s", (address, key) => {
        expect(clientKey(address)).toBe(key);
    });
    it("an unknown address is one client", () => {
        expect(clientKey(undefined)).toBe("unknown");
    });
});
//# sourceMappingURL=rate-limit.test.js.map