/** @module meeting-series.test — the .ics parsed back with node-ical, plus raw byte checks (CRLF on every line incl. the last, 75 octets, PRODID, RRULE, TRIGGER). */
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import ical from "node-ical";
import { afterAll, describe, expect, it } from "vitest";
import { unfold } from "../../src/helpers/line-folder.js";
import { build, escapeText, type MeetingSeriesArgs } from "../../src/helpers/meeting-series.js";

const dir = mkdtempSync(join(tmpdir(), "svc-meeting-series-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const SUMMARY = "Résumé review; budget, Q3 \\ plan\nsecond line — 東京 ✓ " + "agenda ".repeat(12).trim();
const base = (output_path: string): MeetingSeriesArgs => ({
  output_path,
  uid: "weekly-sync-42@example.com",
  summary: SUMMARY,
  location: "Room 4, Tower B; 東京",
  dtstart: "20250106T150000Z",
  dtend: "20250106T160000Z",
  byday: ["MO", "WE", "FR"],
  count: 10,
  alarm_minutes: 15,
  prodid: "-//Acme Corp//Meeting Series 1.0//EN",
});

describe("meeting series", () => {
  const path = join(dir, "sub", "dir", "series.ics");
  const before = Date.now();
  const returned = build(base(path));
  const bytes = readFileSync(path);
  const text = bytes.toString("utf8");

  it("returns the output path and creates parent directories", () => {
    expect(returned).toBe(path);
    // output_path comes back as given, relative too (not resolved)
    const rel = relative(process.cwd(), join(dir, "rel", "series.ics"));
    expect(build(base(rel))).toBe(rel);
    expect(readFileSync(join(dir, "rel", "series.ics"), "utf8")).toContain("BEGIN:VCALENDAR");
  });

  it("raw: every line ends with CRLF, the final one included, and no bare CR or LF", () => {
    expect(bytes.subarray(-2).toString("latin1")).toBe("\r\n");
    expect(text.endsWith("END:VCALENDAR\r\n")).toBe(true);
    expect(text.replace(/\r\n/g, "")).not.toMatch(/[\r\n]/);
  });

  it("raw: physical lines are at most 75 octets and long values were folded", () => {
    const physical = text.slice(0, -2).split("\r\n");
    for (const line of physical) expect(Buffer.byteLength(line, "utf8")).toBeLessThanOrEqual(75);
    expect(physical.some((l) => l.startsWith(" "))).toBe(true);
  });

  it("raw: exact PRODID, VERSION, RRULE, VALARM lines and escaped text", () => {
    const lines = unfold(text);
    expect(lines[0]).toBe("BEGIN:VCALENDAR");
    expect(lines).toContain("VERSION:2.0");
    expect(lines).toContain("PRODID:-//Acme Corp//Meeting Series 1.0//EN");
    expect(lines).toContain("RRULE:FREQ=WEEKLY;BYDAY=MO,WE,FR;COUNT=10");
    expect(lines).toContain("TRIGGER:-PT15M");
    expect(lines).toContain("ACTION:DISPLAY");
    expect(lines).toContain("DTSTART:20250106T150000Z");
    expect(lines).toContain("DTEND:20250106T160000Z");
    expect(lines).toContain("LOCATION:Room 4\\, Tower B\\; 東京");
    expect(lines).toContain(`SUMMARY:${escapeText(SUMMARY)}`);
    expect(escapeText("a\\b;c,d\ne")).toBe("a\\\\b\\;c\\,d\\ne");
    // Nesting and counts: one VEVENT holding one VALARM.
    expect(lines.filter((l) => l === "BEGIN:VEVENT")).toHaveLength(1);
    expect(lines.filter((l) => l === "BEGIN:VALARM")).toHaveLength(1);
    const order = ["BEGIN:VCALENDAR", "BEGIN:VEVENT", "BEGIN:VALARM", "END:VALARM", "END:VEVENT", "END:VCALENDAR"].map((l) =>
      lines.indexOf(l),
    );
    expect([...order].sort((a, b) => a - b)).toEqual(order);
    expect(lines[lines.length - 1]).toBe("END:VCALENDAR");
    const stamp = lines.find((l) => l.startsWith("DTSTAMP:"));
    expect(stamp).toMatch(/^DTSTAMP:\d{8}T\d{6}Z$/);
  });

  it("parses with node-ical: event fields, recurrence and reminder", () => {
    const data = ical.sync.parseICS(text);
    const cal = Object.values(data).find((c) => c?.type === "VCALENDAR") as unknown as { prodid: string; version: string };
    expect(cal.prodid).toBe("-//Acme Corp//Meeting Series 1.0//EN");
    expect(cal.version).toBe("2.0");
    const events = Object.values(data).filter((c) => c?.type === "VEVENT") as ical.VEvent[];
    expect(events).toHaveLength(1);
    const ev = events[0]!;
    expect(ev.uid).toBe("weekly-sync-42@example.com");
    expect(ev.summary).toBe(SUMMARY);
    expect(ev.location).toBe("Room 4, Tower B; 東京");
    expect(ev.start.toISOString()).toBe("2025-01-06T15:00:00.000Z");
    expect(ev.end?.toISOString()).toBe("2025-01-06T16:00:00.000Z");
    const stamp = (ev as unknown as { dtstamp: Date }).dtstamp.getTime();
    expect(stamp).toBeGreaterThanOrEqual(Math.floor(before / 1000) * 1000);

    const occurrences = ev.rrule!.all();
    expect(occurrences).toHaveLength(10);
    expect(occurrences.map((d) => d.getUTCDay())).toEqual([1, 3, 5, 1, 3, 5, 1, 3, 5, 1]);
    expect(occurrences.every((d) => d.getUTCHours() === 15 && d.getUTCMinutes() === 0)).toBe(true);
    expect(occurrences[9]!.toISOString()).toBe("2025-01-27T15:00:00.000Z");

    const alarms = (ev as unknown as { alarms: { action: string; trigger: string; description: string }[] }).alarms;
    expect(alarms).toHaveLength(1);
    expect(alarms[0]!.action).toBe("DISPLAY");
    expect(alarms[0]!.trigger).toBe("-PT15M");
    expect(alarms[0]!.description).toBe(SUMMARY);
  });

  it("uses alarm_minutes and count verbatim (e.g. 90 minutes, 3 occurrences on Saturdays)", () => {
    const p = join(dir, "sat.ics");
    build({ ...base(p), byday: ["SA"], count: 3, alarm_minutes: 90, dtstart: "20250104T090000Z", dtend: "20250104T093000Z" });
    const lines = unfold(readFileSync(p, "utf8"));
    expect(lines).toContain("RRULE:FREQ=WEEKLY;BYDAY=SA;COUNT=3");
    expect(lines).toContain("TRIGGER:-PT90M");
  });

  it("rejects bad arguments, naming the field, before writing anything", () => {
    const p = join(dir, "never", "bad.ics");
    const bad: [Partial<Record<keyof MeetingSeriesArgs, unknown>>, string][] = [
      [{ dtstart: "2025-01-06T15:00:00Z" }, "dtstart"],
      [{ dtstart: "20250106T150000" }, "dtstart"],
      [{ dtstart: "20250230T150000Z" }, "dtstart"],
      [{ dtend: "20250106T250000Z" }, "dtend"],
      [{ dtend: "20250106T140000Z" }, "dtend"],
      [{ byday: ["MO", "XX"] }, "byday.1"],
      [{ byday: ["mo"] }, "byday.0"],
      [{ byday: [] }, "byday"],
      [{ byday: ["MO", "MO"] }, "byday"],
      [{ count: 0 }, "count"],
      [{ count: 2.5 }, "count"],
      [{ count: "10" }, "count"],
      [{ alarm_minutes: -15 }, "alarm_minutes"],
      [{ alarm_minutes: 0 }, "alarm_minutes"],
      [{ prodid: undefined }, "prodid"],
      [{ uid: "" }, "uid"],
      [{ summary: "bell\u0007" }, "summary"],
    ];
    for (const [patch, field] of bad) {
      expect(() => build({ ...base(p), ...patch }), JSON.stringify(patch)).toThrow(
        expect.objectContaining({ code: "E_BAD_REQUEST", field }),
      );
    }
    expect(existsSync(join(dir, "never"))).toBe(false);
  });
});
