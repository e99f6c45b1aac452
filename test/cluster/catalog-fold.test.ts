/**
 * The pure parts of issue 31 items 7 and 8 (no NATS): which log stream a shard is on, and what the
 * catalog fold accepts as a change (hostile message bodies never throw and never pass as a change).
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { parseChange } from "../../src/cluster/catalog-log.js";
import { LOG_STREAM, logStreamName } from "../../src/cluster/jetstream-log.js";
import { indexStreams, shardLogSubject, shardStream, type ClusterIndexRecord } from "../../src/cluster/shards.js";

const record = (over: Partial<ClusterIndexRecord> = {}): ClusterIndexRecord => ({
  name: "ix",
  dimension: 8,
  metric: "cosine",
  spec: {},
  deletionProtection: "disabled",
  tags: {},
  createdAt: 1_795_000_000_000,
  tenant: "acme",
  shards: 4,
  replicas: 2,
  incarnation: "0123456789ab",
  ...over,
});

describe("shardStream", () => {
  it("an index from before (no streams) keeps every shard on svc_log", () => {
    const r = record({ shards: 8 });
    expect(indexStreams(r)).toEqual([LOG_STREAM]);
    expect(shardLogSubject(r, 3)).toBe("svc_log.idx.acme.ix.0123456789ab.3");
  });

  it("an index's shards go round its streams: every stream named is one of them, counts differ by at most one, stable", () => {
    fc.assert(
      fc.property(
        fc.stringMatching(/^[0-9a-f]{12}$/),
        fc.integer({ min: 1, max: 64 }),
        fc.integer({ min: 1, max: 6 }),
        (incarnation, shards, streams) => {
          const r = record({ incarnation, shards, streams });
          const names = Array.from({ length: streams }, (_, i) => logStreamName(i));
          const counts = new Map<string, number>();
          for (let s = 0; s < shards; s++) {
            const st = shardStream(r, s);
            expect(names).toContain(st);
            expect(shardStream({ ...r }, s)).toBe(st);
            counts.set(st, (counts.get(st) ?? 0) + 1);
          }
          const c = [...counts.values()];
          expect(counts.size).toBe(Math.min(shards, streams));
          expect(Math.max(...c) - Math.min(...c)).toBeLessThanOrEqual(1);
        },
      ),
      { seed: 31, numRuns: 300 },
    );
  });
});

describe("parseChange", () => {
  const enc = (x: unknown) => new TextEncoder().encode(typeof x === "string" ? x : JSON.stringify(x));

  it("takes well-formed changes of the subject's index", () => {
    expect(parseChange("acme.ix", enc({ k: "create", id: "a", record: record() }))?.k).toBe("create");
    expect(parseChange("acme.ix", enc({ k: "configure", id: "a", base: 3, record: record() }))?.k).toBe("configure");
    expect(parseChange("acme.ix", enc({ k: "delete", id: "a", base: 3 }))?.k).toBe("delete");
    expect(parseChange("acme.ix", enc({ k: "import", id: "a", record: record() }))?.k).toBe("import");
  });

  it("refuses a record of another index, a configure or delete without a base, and unknown kinds", () => {
    expect(parseChange("acme.other", enc({ k: "create", id: "a", record: record() }))).toBeNull();
    expect(parseChange("other.ix", enc({ k: "create", id: "a", record: record() }))).toBeNull();
    expect(parseChange("acme.ix", enc({ k: "configure", id: "a", record: record() }))).toBeNull();
    expect(parseChange("acme.ix", enc({ k: "delete", id: "a" }))).toBeNull();
    expect(parseChange("acme.ix", enc({ k: "drop", id: "a", base: 1 }))).toBeNull();
    expect(parseChange("acme.ix", enc({ k: "create", id: "a", record: { ...record(), shards: 0 } }))).toBeNull();
    expect(parseChange("acme.ix", enc({ k: "create", id: "a", record: { ...record(), streams: 0 } }))).toBeNull();
    expect(parseChange("acme.ix", enc('{"k":"create","id":"a","__proto__":{"polluted":1}}'))).toBeNull();
  });

  it("never throws on hostile bodies, and what it accepts is a change of the subject's index", () => {
    const hostile = fc.oneof(
      fc.json(),
      fc.string(),
      fc
        .record({
          k: fc.constantFrom("create", "configure", "delete", "import", "x"),
          id: fc.oneof(fc.string(), fc.integer()),
          base: fc.oneof(fc.integer(), fc.double(), fc.string()),
          record: fc.oneof(fc.anything(), fc.constant(record())),
        })
        .map((x) => JSON.stringify(x)),
    );
    fc.assert(
      fc.property(hostile, (body) => {
        const c = parseChange("acme.ix", enc(body));
        if (c === null) return;
        expect(typeof c.id).toBe("string");
        if (c.k === "delete" || c.k === "configure") expect(Number.isSafeInteger(c.base)).toBe(true);
        if (c.k !== "delete") expect(`${c.record.tenant}.${c.record.name}`).toBe("acme.ix");
      }),
      { seed: 31, numRuns: 500 },
    );
    expect(Object.prototype).not.toHaveProperty("polluted");
  });
});
