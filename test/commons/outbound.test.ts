/** The SSRF-safe outbound fetch: blocked ranges, the allow-list, DNS names resolving to blocked addresses, redirects re-checked, https by default, size cap, time-out. */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_COMMONS_CONFIG, DEFAULT_GOAL, parseCommonsConfig } from "../../src/commons/config.js";
import { isBlockedAddress, Outbound, type OutboundConfig, type Resolver } from "../../src/commons/outbound.js";
import { embeddedIPv4 } from "../../src/net/ip.js";
import { SvcError } from "../../src/errors.js";
import { startSite, type TestSite } from "./site.js";

const cfg = (o: Partial<OutboundConfig> = {}): OutboundConfig => ({ ...DEFAULT_COMMONS_CONFIG.outbound, timeoutMs: 2000, ...o });

async function failure(p: Promise<unknown>): Promise<SvcError> {
  try {
    await p;
  } catch (e) {
    return e as SvcError;
  }
  throw new Error("expected a failure");
}

describe("isBlockedAddress", () => {
  const blocked = [
    "127.0.0.1",
    "127.255.0.9",
    "10.0.0.1",
    "10.255.255.255",
    "172.16.0.1",
    "172.31.255.1",
    "192.168.1.1",
    "169.254.169.254",
    "100.64.0.1",
    "0.0.0.0",
    "224.0.0.1",
    "255.255.255.255",
    "::1",
    "::",
    "fe80::1",
    "fc00::1",
    "fd00:ec2::254",
    "ff02::1",
    "::ffff:127.0.0.1",
    "::ffff:7f00:1",
    "::ffff:a9fe:a9fe",
    "64:ff9b::a9fe:a9fe",
    "2001:db8::1",
    "not-an-ip",
  ];
  const open = ["93.184.216.34", "8.8.8.8", "172.32.0.1", "192.169.0.1", "2606:4700::1111", "::ffff:8.8.8.8", "64:ff9b::808:808"];
  it.each(blocked)("blocks %s", (a) => expect(isBlockedAddress(a)).toBe(true));
  it.each(open)("lets %s through", (a) => expect(isBlockedAddress(a)).toBe(false));
  it("reads the IPv4 inside mapped and NAT64 addresses", () => {
    expect(embeddedIPv4("::ffff:7f00:1")).toBe("127.0.0.1");
    expect(embeddedIPv4("::ffff:169.254.169.254")).toBe("169.254.169.254");
    expect(embeddedIPv4("64:ff9b::a00:1")).toBe("10.0.0.1");
    expect(embeddedIPv4("2001:db8::1")).toBeNull();
  });
});

describe("Outbound", () => {
  let site: TestSite;
  let secret: TestSite;
  beforeAll(async () => {
    secret = await startSite(() => ({ body: { secret: true } }));
    site = await startSite((req, url) => {
      if (url.pathname === "/to-secret") return { status: 302, headers: { location: `${secret.origin}/` } };
      if (url.pathname === "/to-metadata") return { status: 301, headers: { location: "http://169.254.169.254/latest/meta-data/" } };
      if (url.pathname === "/to-localhost") return { status: 307, headers: { location: `http://localhost:${secret.port}/` } };
      if (url.pathname === "/to-self") return { status: 302, headers: { location: "/ok" } };
      if (url.pathname === "/loop") return { status: 302, headers: { location: "/loop" } };
      if (url.pathname === "/big") return { body: "x".repeat(5000) };
      if (url.pathname === "/slow") return new Promise((r) => setTimeout(() => r({ body: "late" }), 3000));
      return { body: { ok: true, path: url.pathname, method: req.method } };
    });
  });
  afterAll(async () => {
    await site?.close();
    await secret?.close();
  });

  it("https is the default; plain http and other schemes are refused unless the operator allows http", async () => {
    const o = new Outbound(cfg());
    expect(o.parseTarget("example.com", "site").href).toBe("https://example.com/");
    for (const bad of ["http://example.com", "ftp://example.com", "file:///etc/passwd", "gopher://x"]) {
      expect(() => o.parseTarget(bad, "site")).toThrow(expect.objectContaining({ code: "E_OUTBOUND_BLOCKED", field: "site" }));
    }
    expect(() => o.parseTarget("https://user:pw@example.com", "site")).toThrow(expect.objectContaining({ code: "E_BAD_REQUEST" }));
    expect(new Outbound(cfg({ http: true })).parseTarget("http://example.com", "site").protocol).toBe("http:");
  });

  it("refuses loopback, private and metadata addresses without connecting; the allow-list opens exactly what it names", async () => {
    const closed = new Outbound(cfg({ http: true }));
    for (const u of [
      `${site.origin}/`,
      "http://10.0.0.1/",
      "http://169.254.169.254/latest/meta-data/",
      "http://[::1]/",
      "http://[::ffff:127.0.0.1]/",
      "http://0.0.0.0/",
      "http://2130706433/",
      "http://0x7f000001/",
    ]) {
      const e = await failure(closed.fetch(new URL(u), { field: "site" }));
      expect(e.code, u).toBe("E_OUTBOUND_BLOCKED");
      expect(e.status).toBe(400);
      expect(e.field).toBe("site");
    }
    expect(site.requests.length).toBe(0);
    const open = new Outbound(cfg({ http: true, allow: [`127.0.0.1:${site.port}`] }));
    const r = await open.fetch(new URL(`${site.origin}/hello`), { field: "site" });
    expect(r.status).toBe(200);
    expect(JSON.parse(r.body.toString())).toEqual({ ok: true, path: "/hello", method: "GET" });
    // the same address on another port is still refused
    expect((await failure(open.fetch(new URL(`${secret.origin}/`), { field: "site" }))).code).toBe("E_OUTBOUND_BLOCKED");
    // a CIDR entry without a port opens the range
    const range = new Outbound(cfg({ http: true, allow: ["127.0.0.0/8"] }));
    expect((await range.fetch(new URL(`${secret.origin}/`), { field: "url" })).status).toBe(200);
    expect(secret.requests.length).toBe(1);
  });

  it("a DNS name resolving to a blocked address is refused (localhost; injected names for 10.x and 169.254.169.254)", async () => {
    const o = new Outbound(cfg({ http: true, allow: [`127.0.0.1:${site.port}`] }));
    const before = secret.requests.length;
    expect((await failure(o.fetch(new URL(`http://localhost:${secret.port}/`), { field: "site" }))).code).toBe("E_OUTBOUND_BLOCKED");
    const fakeDns: Resolver = async (host) => {
      const table: Record<string, Array<{ address: string; family: number }>> = {
        "intranet.example": [{ address: "10.1.2.3", family: 4 }],
        "metadata.example": [{ address: "169.254.169.254", family: 4 }],
        "mixed.example": [
          { address: "93.184.216.34", family: 4 },
          { address: "127.0.0.1", family: 4 },
        ],
        "v6.example": [{ address: "fd00:ec2::254", family: 6 }],
      };
      return table[host] ?? [];
    };
    const dns = new Outbound(cfg(), fakeDns);
    for (const host of ["intranet.example", "metadata.example", "mixed.example", "v6.example"]) {
      const e = await failure(dns.fetch(new URL(`https://${host}/`), { field: "url" }));
      expect(e.code, host).toBe("E_OUTBOUND_BLOCKED");
      expect(e.field).toBe("url");
    }
    expect(secret.requests.length).toBe(before);
  });

  it("redirects are followed and re-checked: to a blocked address they are refused", async () => {
    const o = new Outbound(cfg({ http: true, allow: [`127.0.0.1:${site.port}`] }));
    const ok = await o.fetch(new URL(`${site.origin}/to-self`), { field: "site" });
    expect(ok.url.pathname).toBe("/ok");
    const before = secret.requests.length;
    for (const path of ["/to-secret", "/to-metadata", "/to-localhost"]) {
      const e = await failure(o.fetch(new URL(`${site.origin}${path}`), { field: "site" }));
      expect(e.code, path).toBe("E_OUTBOUND_BLOCKED");
    }
    expect(secret.requests.length).toBe(before);
    expect((await failure(o.fetch(new URL(`${site.origin}/loop`), { field: "site" }))).code).toBe("E_UPSTREAM");
  });

  it("caps the answer size and the time, as 400 E_UPSTREAM (never a 5xx)", async () => {
    const o = new Outbound(cfg({ http: true, allow: [`127.0.0.1:${site.port}`], maxBytes: 1024, timeoutMs: 300 }));
    const big = await failure(o.fetch(new URL(`${site.origin}/big`), { field: "site" }));
    expect(big.code).toBe("E_UPSTREAM");
    expect(big.status).toBe(400);
    expect(big.message).toMatch(/1024/);
    const slow = await failure(o.fetch(new URL(`${site.origin}/slow`), { field: "site" }));
    expect(slow.code).toBe("E_UPSTREAM");
    expect(slow.message).toMatch(/did not answer within 300 ms/);
  });

  it("config: a bad allow-list entry or unknown setting is refused naming it", () => {
    expect(() => parseCommonsConfig({ outbound: { allow: ["exa mple"] } })).toThrow(
      expect.objectContaining({ field: "commons.outbound.allow[0]" }),
    );
    expect(() => parseCommonsConfig({ outbound: { allow: ["10.0.0.0/99"] } })).toThrow(
      expect.objectContaining({ field: "commons.outbound.allow[0]" }),
    );
    expect(() => parseCommonsConfig({ rateLimits: { trust: { count: -1 } } })).toThrow(
      expect.objectContaining({ field: "commons.rateLimits.trust.count" }),
    );
    expect(() => parseCommonsConfig({ nope: 1 })).toThrow(expect.objectContaining({ field: "commons.nope" }));
    const c = parseCommonsConfig({
      goal: "Find a cheap geocoder",
      outbound: { allow: ["[::1]:8080", "intranet.local", "10.0.0.0/8"] },
      rateLimits: { ask: { count: 5 } },
    });
    expect(c.goal).toBe("Find a cheap geocoder");
    // a goal ships by default; the operator's replaces it ("" shows none)
    expect(parseCommonsConfig(undefined).goal).toBe(DEFAULT_GOAL);
    expect(parseCommonsConfig({}).goal).toBe(DEFAULT_GOAL);
    expect(DEFAULT_GOAL.length).toBeGreaterThan(40);
    expect(parseCommonsConfig({ goal: "" }).goal).toBe("");
    expect(c.rateLimits.ask).toEqual({ count: 5, windowSeconds: 600 });
    expect(c.rateLimits.trust).toEqual(DEFAULT_COMMONS_CONFIG.rateLimits.trust);
  });
});
