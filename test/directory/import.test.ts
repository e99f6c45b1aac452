/** Import files: JSON Lines and CSV into a real directory; bad lines reported by number and skipped; re-imports update; the shipped demo file imports cleanly. */
import { writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { DEMO_FILE, importFile } from "../../src/directory/import.js";
import { Directory } from "../../src/directory/service.js";
import { generateBusinesses } from "../../scripts/directory-demo.js";

describe("directory import", () => {
  let tmp: string;
  let d: Directory;
  beforeEach(async () => {
    tmp = await mkdtemp(join(tmpdir(), "svc-dir-import-"));
    d = await Directory.open(join(tmp, "directory"), { durability: "none" });
  });
  afterEach(async () => {
    await d.close();
    await rm(tmp, { recursive: true, force: true });
  });

  it("JSON Lines: good lines merged, bad ones reported with line number and field, ids derived from name and locality when missing", async () => {
    const file = join(tmp, "in.jsonl");
    writeFileSync(
      file,
      [
        JSON.stringify({ id: "oak", name: "Oak Plumbing", category: "Plumber", areas: ["Bristol"], website: "https://oak.example/" }),
        "",
        "{not json",
        JSON.stringify({ name: "No Category" }),
        JSON.stringify({ name: "Cedar Dental", category: "Dentist", address: { locality: "Bath", country: "GB" } }),
        JSON.stringify({ name: "Cedar Dental", category: "Dentist", address: { locality: "Bath", country: "GB" } }),
        JSON.stringify({ id: "bad-mail", name: "X", category: "Y", email: "nope" }),
        JSON.stringify({
          id: "book",
          name: "B",
          category: "Y",
          booking: { utc_offset: "+00:00", hours: { mon: ["09:00-10:00"] }, slot_minutes: 30 },
        }),
      ].join("\n"),
    );
    const progress: number[] = [];
    const r = await importFile(d, file, { today: "2026-06-01", onProgress: (p) => progress.push(p.bytes) });
    expect(r).toMatchObject({ lines: 7, created: 2, updated: 1, rejectedCount: 4 }); // the second Cedar Dental line is the same identity
    expect(r.rejected.map((x) => [x.line, x.field])).toEqual([
      [3, undefined],
      [4, "line 4: category"],
      [7, "line 7: email"],
      [8, "line 8: booking"],
    ]);
    expect(progress.at(-1)).toBeGreaterThan(0);
    expect(d.get("oak").fields.website).toEqual({
      value: "https://oak.example/",
      state: "sourced",
      source: { url: "https://oak.example/", date: "2026-06-01", asserted_by: "website" },
    });
    expect(d.search({ q: "cedar", limit: 10, offset: 0 }).hits.map((h) => h.business.id)).toEqual(["cedar-dental-bath"]);
    // again: same ids update
    const again = await importFile(d, file, { today: "2026-06-02" });
    expect(again).toMatchObject({ created: 0, updated: 3 }); // given and derived ids name the same identities
    expect(d.size).toBe(2);
    expect(d.get("oak").fields.name.source.date).toBe("2026-06-02");
  });

  it("CSV: header columns, lists split on ';', address columns gathered, quoted commas kept", async () => {
    const file = join(tmp, "in.csv");
    writeFileSync(
      file,
      "\uFEFFid,name,category,services,areas,street,locality,country,source_date,listed\n" +
        'oak,Oak Plumbing,Plumber,"boiler repair; leak detection",Bristol;Bath,"1 Mill Lane, Unit 2",Bristol,GB,2026-05-04,true\n' +
        "hidden,Hidden Co,Plumber,,,,,,,false\n" +
        "bad,,Plumber,,,,,,,\n",
    );
    const r = await importFile(d, file, { today: "2026-06-01" });
    expect(r).toMatchObject({ lines: 3, created: 2, rejectedCount: 1 });
    expect(r.rejected[0]).toMatchObject({ line: 4, field: "line 4: name" });
    const oak = d.get("oak");
    expect(oak.fields.services!.value).toEqual(["boiler repair", "leak detection"]);
    expect(oak.fields.areas!.value).toEqual(["Bristol", "Bath"]);
    expect(oak.fields.address!.value).toEqual({ street: "1 Mill Lane, Unit 2", locality: "Bristol", country: "GB" });
    expect(oak.fields.name.source.date).toBe("2026-05-04");
    expect(d.get("hidden").listed).toBe(false);
    expect(d.listed().map((b) => b.id)).toEqual(["oak"]);
  });

  it("the shipped demo file is the generator's output and imports without a rejected line", async () => {
    const r = await importFile(d, fileURLToPath(DEMO_FILE));
    expect(r.rejectedCount).toBe(0);
    expect(r.created).toBe(300);
    const generated = generateBusinesses(300);
    expect(d.get(generated[0]!.id as string).fields.name.value).toBe(generated[0]!.name);
    const bookable = generated.filter((g) => g.booking).length;
    expect(bookable).toBeGreaterThan(5);
    expect(d.search({ q: "", limit: 1000, offset: 0 }).hits.filter((h) => h.business.booking !== null)).toHaveLength(bookable);
    // no real contact details: every website and email is on the reserved .example domain
    for (const g of generated) {
      expect(new URL(g.website as string).hostname).toMatch(/\.example$/);
      expect(g.email as string).toMatch(/@[a-z0-9-]+\.example$/);
    }
  });
});
