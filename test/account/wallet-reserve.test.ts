/** Issue 20.7: reserve / settle / release in any interleaving never take a wallet below zero, never hold more than it has, and keep the ledger exact. */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { parsePrices } from "../../src/account/prices.js";
import { Wallets } from "../../src/account/wallet.js";
import type { Reservation } from "../../src/account/wallet-book.js";
import { SvcError } from "../../src/errors.js";

// 1 nano-USD per vector written, 3 per request: costs are small integers. Signup credit 100 nano.
const PRICES = parsePrices({ signupCredit: 0.0000001, requests: {}, defaultRequest: 0.000000003, per1kWritten: 0.000001, per1kScanned: 0 });
const cost = (written: number) => 3 + written;

type Step =
  | { kind: "reserve"; bound: number }
  | { kind: "settle"; pick: number; actual: number }
  | { kind: "release"; pick: number }
  | { kind: "credit"; nano: number };

const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({ kind: fc.constant("reserve" as const), bound: fc.integer({ min: 0, max: 60 }) }),
  // actual usage mostly within the bound, sometimes over it (a route without a true bound)
  fc.record({ kind: fc.constant("settle" as const), pick: fc.nat(), actual: fc.integer({ min: 0, max: 80 }) }),
  fc.record({ kind: fc.constant("release" as const), pick: fc.nat() }),
  fc.record({ kind: fc.constant("credit" as const), nano: fc.integer({ min: 1, max: 50 }) }),
);

describe("Wallets.reserve / settle / release", () => {
  it("any interleaving (some concurrent) keeps balance >= 0, holds <= balance, credited - spent = balance, and refuses exactly what does not fit", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(step, { minLength: 1, maxLength: 40 }),
        fc.array(fc.boolean(), { minLength: 40, maxLength: 40 }),
        async (steps, together) => {
          const dir = mkdtempSync(join(tmpdir(), "svc-wallet-prop-"));
          const w = await Wallets.open(dir, PRICES);
          try {
            const open: Array<{ r: Reservation; bound: number }> = [];
            let pending: Array<Promise<unknown>> = [];
            const check = async () => {
              const v = await w.view("t");
              const n = (usd: number) => Math.round(usd * 1e9);
              expect(n(v.balanceUsd)).toBeGreaterThanOrEqual(0);
              expect(n(v.creditedUsd) - n(v.spentUsd)).toBe(n(v.balanceUsd));
              expect(w.heldBy("t")).toBe(open.reduce((s, o) => s + o.r.nano, 0));
              expect(w.heldBy("t")).toBeLessThanOrEqual(n(v.balanceUsd));
            };
            for (const [i, s] of steps.entries()) {
              if (s.kind === "reserve") {
                const before = w.peek("t");
                const free = before === null ? 100 : Math.round(before.balanceUsd * 1e9) - w.heldBy("t");
                try {
                  const r = await w.reserve("t", "op", { written: s.bound });
                  expect(r.nano).toBe(cost(s.bound));
                  expect(free).toBeGreaterThanOrEqual(cost(s.bound));
                  open.push({ r, bound: s.bound });
                } catch (e) {
                  expect((e as SvcError).code).toBe("E_WALLET_EMPTY");
                  expect(free).toBeLessThan(cost(s.bound));
                }
              } else if (s.kind === "settle" && open.length > 0) {
                const [o] = open.splice(s.pick % open.length, 1);
                const charged = w.settle(o!.r, "op", { written: s.actual });
                // within its bound a settle charges exactly the actual cost
                pending.push(
                  charged.then((n) =>
                    s.actual <= o!.bound ? expect(n).toBe(cost(s.actual)) : expect(n).toBeLessThanOrEqual(cost(s.actual)),
                  ),
                );
              } else if (s.kind === "release" && open.length > 0) {
                const [o] = open.splice(s.pick % open.length, 1);
                w.release(o!.r);
              } else if (s.kind === "credit") {
                pending.push(w.credit("t", s.nano / 1e9, "topup"));
              }
              if (!together[i % together.length]) {
                await Promise.all(pending);
                pending = [];
                await check();
              }
            }
            await Promise.all(pending);
            await check();
            for (const o of open.splice(0)) w.release(o.r);
            expect(w.heldBy("t")).toBe(0);
          } finally {
            await w.close();
            rmSync(dir, { recursive: true, force: true });
          }
        },
      ),
      { seed: 2007, numRuns: 60 },
    );
  }, 60_000);
});
