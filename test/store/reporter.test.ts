/** @module reporter.test — KeptReports (store/reporter.ts): what the server's one sink keeps and tells its log. */
import { expect, it } from "vitest";
import type { DamageReport } from "../../src/store/damage.js";
import { reportWalLosses } from "../../src/store/damage.js";
import { KeptReports } from "../../src/store/reporter.js";

it("keeps each finding once (a store opened again), tells the log of new ones only, forgets a cleared store's, and passes background failures on", () => {
  const logged: DamageReport[] = [];
  const failures: string[] = [];
  const r = new KeptReports({
    damage: (d) => logged.push(d),
    background: (err, task) => failures.push(`${task}: ${(err as Error).message}`),
  });
  const finding = { store: "keys", file: "keys.json", kind: "unreadable", detail: "bad JSON", dropped: 0, offline: true };
  r.damage({ ...finding, at: 1 });
  r.damage({ ...finding, at: 2 }); // the same finding, found again
  r.damage({ store: "directory", kind: "unreadable", detail: "x", dropped: 0, offline: true, at: 3 });
  expect(r.reports()).toEqual([
    { ...finding, at: 1 },
    { store: "directory", kind: "unreadable", detail: "x", dropped: 0, offline: true, at: 3 },
  ]);
  expect(logged.map((d) => d.store)).toEqual(["keys", "directory"]);
  r.cleared("keys");
  expect(r.reports().map((d) => d.store)).toEqual(["directory"]);
  r.reports()[0]!.detail = "changed"; // copies: the kept finding is not changed through them
  expect(r.reports()[0]!.detail).toBe("x");
  r.background(new Error("ENOSPC"), "checkpoint of the wallet ledger");
  expect(failures).toEqual(["checkpoint of the wallet ledger: ENOSPC"]);
  expect(r.reports()).toHaveLength(1); // a background failure is not damage
});

it("reportWalLosses tells the reporter it is given, file names relative to the data dir", () => {
  const r = new KeptReports({ damage: () => {}, background: () => {} });
  reportWalLosses(r, "commons-log", "/data", {
    tornTail: { file: "/data/commons/wal/000002.seg", offset: 100, bytes: 7, frames: 1, reason: "short frame" },
    damaged: [{ file: "/data/commons/wal/000001.seg", offset: 40, bytes: 9, frames: 2, reason: "bad CRC", beforeFrom: false }],
  });
  expect(r.reports().map(({ store, file, kind, dropped, offline }) => ({ store, file, kind, dropped, offline }))).toEqual([
    { store: "commons-log", file: "commons/wal/000002.seg", kind: "torn-tail", dropped: 1, offline: false },
    { store: "commons-log", file: "commons/wal/000001.seg", kind: "bad-frame", dropped: 2, offline: false },
  ]);
});
