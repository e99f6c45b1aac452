/** @module meeting-series — writes an iCalendar file: one weekly recurring VEVENT with one DISPLAY reminder. */
import { writeFileSync } from "node:fs";
import { z } from "zod";
import { SvcError } from "../errors.js";
import { parseArgs } from "./args.js";
import { fold } from "./line-folder.js";
import { prepareOutput } from "./output-path.js";

const WEEKDAYS = ["MO", "TU", "WE", "TH", "FR", "SA", "SU"] as const;

/** `%Y%m%dT%H%M%SZ`, a UTC DATE-TIME (RFC 5545 §3.3.5 form #2). */
const UTC_STAMP = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/;

/** Milliseconds since the epoch of a valid UTC stamp, or undefined (bad shape or impossible date/time). */
function stampMillis(stamp: string): number | undefined {
  const m = UTC_STAMP.exec(stamp);
  if (m === null) return undefined;
  const [y, mo, d, h, mi, s] = m.slice(1).map(Number) as [number, number, number, number, number, number];
  const t = Date.UTC(y, mo - 1, d, h, mi, s);
  const back = new Date(t);
  const same =
    back.getUTCFullYear() === y &&
    back.getUTCMonth() === mo - 1 &&
    back.getUTCDate() === d &&
    back.getUTCHours() === h &&
    back.getUTCMinutes() === mi &&
    back.getUTCSeconds() === s;
  return same ? t : undefined;
}

const utcStamp = z
  .string()
  .refine((s) => stampMillis(s) !== undefined, { message: "must be a UTC date-time YYYYMMDDTHHMMSSZ (e.g. 20250106T150000Z)" });

/** TEXT values may hold HTAB and newlines (escaped); other control characters are not allowed by RFC 5545. */
const textValue = z.string().refine((s) => !/[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F]/.test(s), {
  message: "must not contain control characters other than tab and newline",
});

const MeetingSeriesArgs = z
  .object({
    output_path: z.string().min(1),
    uid: textValue.pipe(z.string().min(1)),
    summary: textValue,
    location: textValue,
    dtstart: utcStamp,
    dtend: utcStamp,
    byday: z
      .array(z.enum(WEEKDAYS, { message: `must be one of ${WEEKDAYS.join(", ")}` }))
      .min(1)
      .refine((days) => new Set(days).size === days.length, { message: "must not repeat a weekday" }),
    count: z.number().int().positive(),
    alarm_minutes: z.number().int().positive(),
    prodid: textValue.pipe(z.string().min(1)),
  })
  .refine((a) => stampMillis(a.dtend)! > stampMillis(a.dtstart)!, { message: "must be after dtstart", path: ["dtend"] });

export type MeetingSeriesArgs = z.input<typeof MeetingSeriesArgs>;

/** RFC 5545 §3.3.11 TEXT escaping: backslash, semicolon, comma, and any newline as `\n`. */
export function escapeText(value: string): string {
  return value.replace(/[\\;,]/g, (c) => `\\${c}`).replace(/\r\n|\r|\n/g, "\\n");
}

/** `now` as a UTC stamp to the second. */
function utcNow(now: Date): string {
  return now
    .toISOString()
    .replace(/[-:]/g, "")
    .replace(/\.\d{3}Z$/, "Z");
}

/** The logical (unfolded) content lines of the calendar. DTSTAMP is `now`, the creation time. */
export function calendarLines(a: z.output<typeof MeetingSeriesArgs>, now: Date): string[] {
  return [
    "BEGIN:VCALENDAR",
    "VERSION:2.0",
    `PRODID:${escapeText(a.prodid)}`,
    "CALSCALE:GREGORIAN",
    "BEGIN:VEVENT",
    `UID:${escapeText(a.uid)}`,
    `DTSTAMP:${utcNow(now)}`,
    `DTSTART:${a.dtstart}`,
    `DTEND:${a.dtend}`,
    `SUMMARY:${escapeText(a.summary)}`,
    `LOCATION:${escapeText(a.location)}`,
    `RRULE:FREQ=WEEKLY;BYDAY=${a.byday.join(",")};COUNT=${a.count}`,
    "BEGIN:VALARM",
    "ACTION:DISPLAY",
    `DESCRIPTION:${escapeText(a.summary)}`,
    `TRIGGER:-PT${a.alarm_minutes}M`,
    "END:VALARM",
    "END:VEVENT",
    "END:VCALENDAR",
  ];
}

/**
 * Validate, then write the .ics (UTF-8, lines folded at 75 octets, every line — the last
 * included — ended by CRLF). Returns `output_path` as given.
 */
export function build(args: unknown): string {
  const a = parseArgs("meeting-series", MeetingSeriesArgs, args);
  const text = fold(calendarLines(a, new Date()));
  const path = prepareOutput(a.output_path, "output_path");
  try {
    writeFileSync(path, text, "utf8");
  } catch (err) {
    throw new SvcError("E_IO", `meeting-series: output_path: cannot write ${path}: ${(err as Error).message}`, {
      field: "output_path",
      cause: err,
    });
  }
  return a.output_path; // as given, per the contract (the file is at its resolved path)
}
