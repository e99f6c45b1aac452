/** Issue 20.9: the /mcp session table. A property test against a model of the rules, then real SDK clients over real HTTP. */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startServer, type Server } from "../../src/app/start-server.js";
import { SessionTable, type SessionLimits } from "../../src/mcp/sessions.js";
import { clientKey } from "../../src/net/rate-limit.js";
import { SvcError } from "../../src/errors.js";

// Addresses: two IPv6 in one /64, one in another, an IPv4 and its IPv4-mapped spelling.
const ADDRESSES = ["2001:db8:1:2::1", "2001:db8:1:2:ffff::9", "2001:db8:1:3::1", "192.0.2.7", "::ffff:192.0.2.7"];
const KEYS = ["k1", "k2", "k3"];

type Op = { kind: "open"; key: number | null; addr: number } | { kind: "close"; pick: number } | { kind: "touch"; pick: number };
const op: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant("open" as const),
      key: fc.option(fc.integer({ min: 0, max: KEYS.length - 1 }), { nil: null }),
      addr: fc.integer({ min: 0, max: ADDRESSES.length - 1 }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("close" as const), pick: fc.nat() }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("touch" as const), pick: fc.nat() }) },
);

describe("SessionTable", () => {
  it("never holds more than max, per address (keyless, /64) or per key; evicts only the least recently seen keyless session; refuses exactly when the rules say", () => {
    fc.assert(
      fc.property(
        fc.record({
          max: fc.integer({ min: 1, max: 8 }),
          perAddress: fc.integer({ min: 1, max: 4 }),
          perKey: fc.integer({ min: 1, max: 4 }),
        }),
        fc.array(op, { maxLength: 80 }),
        (limits: SessionLimits, ops) => {
          const t = new SessionTable<string>(limits);
          // the model: id -> {owner, keyed, lastSeen}
          const model = new Map<string, { owner: string; keyed: boolean; lastSeen: number }>();
          let now = 0;
          let seq = 0;
          for (const o of ops) {
            now++;
            const ids = [...model.keys()];
            if (o.kind === "close" && ids.length > 0) {
              const id = ids[o.pick % ids.length]!;
              expect(t.delete(id)).toBe(true);
              model.delete(id);
            } else if (o.kind === "touch" && ids.length > 0) {
              const id = ids[o.pick % ids.length]!;
              t.touch(id, now);
              model.get(id)!.lastSeen = now;
            } else if (o.kind === "open") {
              const keyed = o.key !== null;
              const owner = keyed ? `k:${KEYS[o.key!]}` : `a:${clientKey(ADDRESSES[o.addr])}`;
              const held = [...model.values()].filter((e) => e.owner === owner).length;
              const keyless = [...model.entries()].filter(([, e]) => !e.keyed).sort((a, b) => a[1].lastSeen - b[1].lastSeen);
              const id = `s${++seq}`;
              let expected: "share" | "full" | "ok" = "ok";
              if (held >= (keyed ? limits.perKey : limits.perAddress)) expected = "share";
              else if (model.size >= limits.max && keyless.length === 0) expected = "full";
              try {
                const evicted = t.open(id, id, keyed ? KEYS[o.key!]! : null, ADDRESSES[o.addr], now);
                expect(expected).toBe("ok");
                if (model.size >= limits.max) {
                  expect(evicted.map(([v]) => v)).toEqual([keyless[0]![0]]);
                  model.delete(keyless[0]![0]);
                } else expect(evicted).toEqual([]);
                model.set(id, { owner, keyed, lastSeen: now });
              } catch (e) {
                expect((e as SvcError).code).toBe(expected === "share" ? "E_TOO_MANY_SESSIONS" : "E_CLOSED");
              }
            }
            expect(t.size).toBe(model.size);
            expect(t.size).toBeLessThanOrEqual(limits.max);
            for (const id of model.keys()) expect(t.get(id)).toBe(id);
          }
        },
      ),
      { seed: 2009, numRuns: 300 },
    );
  });
});

describe("/mcp sessions with real SDK clients", () => {
  let dir: string;
  let server: Server;
  const keys: string[] = [];
  const clients: Client[] = [];
  const transports = new Map<Client, StreamableHTTPClientTransport>();
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "svc-mcp-sessions-"));
    server = await startServer({ dataDir: dir, port: 0, directorySeed: null, mcpSessions: { max: 6, perAddress: 3, perKey: 2 } });
    for (let i = 0; i < 4; i++) keys.push((await server.keys.create({ tenant: `t${i}` })).key);
  }, 60_000);
  afterAll(async () => {
    for (const c of clients) await c.close().catch(() => undefined);
    await server?.close();
    await rm(dir, { recursive: true, force: true });
  });

  const connect = async (key: string | null): Promise<Client> => {
    const c = new Client({ name: "svc-sessions", version: "1.0.0" });
    const t = new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), { requestInit: { headers: key ? { "api-key": key } : {} } });
    await c.connect(t);
    clients.push(c);
    transports.set(c, t);
    return c;
  };
  const refusal = async (key: string | null): Promise<string> => {
    try {
      await connect(key);
    } catch (e) {
      return String((e as Error).message);
    }
    throw new Error("expected the session to be refused");
  };

  it("keyless clients get their address's share, keyed clients their key's, and keyless sessions make room for keyed ones", async () => {
    // three keyless sessions from 127.0.0.1, then the address is at its share
    const keyless = [await connect(null), await connect(null), await connect(null)];
    expect(await refusal(null)).toMatch(/already has 3 open MCP sessions/);
    // the keyed: two per key
    const a = [await connect(keys[0]!), await connect(keys[0]!)];
    expect(await refusal(keys[0]!)).toMatch(/this API key already has 2/);
    // table full (3 keyless + 2 keyed + 1): touch keyless[1] and [2], so keyless[0] is the least recently seen
    await keyless[1]!.listTools();
    await keyless[2]!.listTools();
    const b1 = await connect(keys[1]!); // 6th: fits
    await keyless[0]!.listTools(); // now keyless[1] is the oldest
    const b2 = await connect(keys[1]!); // full: evicts keyless[1]
    await expect(keyless[1]!.listTools()).rejects.toThrow();
    for (const c of [keyless[0]!, keyless[2]!, ...a, b1, b2]) expect((await c.listTools()).tools.length).toBeGreaterThan(0);
    const c1 = await connect(keys[2]!); // evicts keyless[2]
    const c2 = await connect(keys[2]!); // evicts keyless[0]
    await expect(keyless[0]!.listTools()).rejects.toThrow();
    await expect(keyless[2]!.listTools()).rejects.toThrow();
    // all keyed now: nobody is evicted for a newcomer, keyed or keyless
    expect(await refusal(keys[3]!)).toMatch(/too many open MCP sessions \(6\)/);
    expect(await refusal(null)).toMatch(/too many open MCP sessions/);
    for (const c of [...a, b1, b2, c1, c2]) expect((await c.listTools()).tools.length).toBeGreaterThan(0);
    // a session ended with DELETE /mcp frees its slot
    await transports.get(c2)!.terminateSession();
    await connect(keys[3]!);
  }, 60_000);
});
