import { describe, expect, it } from "vitest";
import { bindRoles, readRoles, ROLES_DIM } from "../../src/hd/roles.js";
import { hdRolesRoutes } from "../../src/http/routes/hd-roles.js";
import { refusal } from "./route-check.js";

const fillers = Array.from({ length: 200 }, (_, i) => `entity-${i}`);

describe("role-filler binding", () => {
  it("reads back every bound filler, and null for a role that was not bound", () => {
    const pairs = { agent: "entity-3", action: "entity-77", object: "entity-150", place: "entity-9", time: "entity-42" };
    const { vector, dimension } = bindRoles(pairs, 0);
    expect(dimension).toBe(ROLES_DIM);
    expect(Buffer.from(vector, "base64").length).toBe(ROLES_DIM / 8);
    const read = readRoles(vector, [...Object.keys(pairs), "weather"], fillers, 0);
    for (const [i, [role, filler]] of Object.entries(pairs).entries()) {
      expect(read[i]).toMatchObject({ role, filler });
      expect(read[i]!.margin).toBeGreaterThan(0.1);
    }
    expect(read[5]!.filler).toBeNull();
  });

  it("is deterministic in (pairs, seed) and order-free; another seed gives other bits", () => {
    const a = bindRoles({ x: "1", y: "2" }, 7).vector;
    expect(bindRoles({ y: "2", x: "1" }, 7).vector).toBe(a);
    expect(bindRoles({ x: "1", y: "2" }, 8).vector).not.toBe(a);
  });

  it("holds 50 pairs and still reads each one right", () => {
    const pairs = Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`role-${i}`, fillers[(i * 7) % fillers.length]!]));
    const read = readRoles(bindRoles(pairs, 1).vector, Object.keys(pairs), fillers, 1);
    expect(read.map((r) => r.filler)).toEqual(Object.values(pairs));
  });

  it("refuses bad input with the offending field (the routes' schemas, tools/hd-ops.ts)", () => {
    const [bind, read] = hdRolesRoutes();
    const bad = (route: typeof bind, body: unknown, field: string) =>
      expect(refusal(route!, body), JSON.stringify(body)).toEqual({ code: "E_BAD_REQUEST", status: 400, field });
    bad(bind, { pairs: {} }, "pairs");
    bad(bind, { pairs: { a: 3 } }, "pairs.a");
    bad(bind, { pairs: { "": "b" } }, "pairs");
    bad(read, { vector: "AAAA", roles: ["a"], candidates: ["b"] }, "vector");
    const v = bindRoles({ a: "b" }, 0).vector;
    expect(refusal(read!, { vector: v, roles: ["a"], candidates: ["b"] })).toBeNull();
    bad(read, { vector: v, roles: [], candidates: ["b"] }, "roles");
    bad(read, { vector: v, roles: ["a"], candidates: [""] }, "candidates[0]");
  });
});
