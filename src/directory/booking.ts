/** @module booking — booking settings (opening hours, slot length, questions), ISO 8601 instants with offsets, and free slots in a range. */
import { SvcError } from "../errors.js";
import { bad, LIMITS, text, WEEKDAYS, type Booking, type Question, type Weekday } from "./identity.js";

const DAY_MS = 86_400_000;
const MIN_MS = 60_000;
/** Longest availability range. */
export const MAX_SPAN_DAYS = 14;
/** Length of one bookable slot, in minutes. */
export const SLOT_MINUTES = { min: 5, max: 480 } as const;

const INSTANT_RE = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/;
const OFFSET_RE = /^([+-])(\d{2}):(\d{2})$/;
const INTERVAL_RE = /^(\d{2}):(\d{2})-(\d{2}):(\d{2})$/;

/** Milliseconds since the epoch of an ISO 8601 date-time that carries an offset (`Z` or `±HH:MM`); 400 naming `field` otherwise. */
export function parseInstant(v: unknown, field: string): number {
  if (typeof v !== "string" || v === "")
    return bad(field, "is required: an ISO 8601 date-time with an offset, e.g. 2026-05-04T09:00:00+02:00");
  const m = INSTANT_RE.exec(v);
  if (!m) return bad(field, `'${v.slice(0, 40)}' is not an ISO 8601 date-time with an offset (e.g. 2026-05-04T09:00:00+02:00 or ...Z)`);
  const [mo, d, h, mi, s] = [Number(m[2]), Number(m[3]), Number(m[4]), Number(m[5]), Number(m[6] ?? 0)];
  const ms = Date.parse(v);
  const probe = new Date(Date.UTC(Number(m[1]), mo - 1, d));
  if (
    Number.isNaN(ms) ||
    mo < 1 ||
    mo > 12 ||
    probe.getUTCDate() !== d ||
    h > 23 ||
    mi > 59 ||
    s > 59 ||
    (m[8] !== "Z" && offsetMinutes(m[8]!) === null)
  ) {
    return bad(field, `'${v}' is not a valid date-time`);
  }
  return ms;
}

/** Minutes east of UTC for "±HH:MM" (within ±14:00), or null. */
export function offsetMinutes(v: string): number | null {
  const m = OFFSET_RE.exec(v);
  if (!m) return null;
  const h = Number(m[2]);
  const mi = Number(m[3]);
  if (h > 14 || mi > 59 || (h === 14 && mi > 0)) return null;
  return (m[1] === "-" ? -1 : 1) * (h * 60 + mi);
}

const pad = (n: number, w = 2) => String(n).padStart(w, "0");

/** `ms` as YYYY-MM-DDTHH:MM:SS±HH:MM at `offset` minutes. */
export function formatInstant(ms: number, offset: number): string {
  const d = new Date(ms + offset * MIN_MS);
  const sign = offset < 0 ? "-" : "+";
  const a = Math.abs(offset);
  return `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}T${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}${sign}${pad(Math.floor(a / 60))}:${pad(a % 60)}`;
}

/** Validates booking settings {utc_offset, hours, slot_minutes, questions}. */
export function checkBooking(v: unknown, field = "booking"): Booking {
  if (typeof v !== "object" || v === null || Array.isArray(v))
    return bad(field, "must be an object {utc_offset, hours, slot_minutes, questions}");
  const o = v as Record<string, unknown>;
  for (const k of Object.keys(o))
    if (!["utc_offset", "hours", "slot_minutes", "questions"].includes(k)) bad(`${field}.${k}`, "is not a booking setting");
  if (typeof o.utc_offset !== "string" || offsetMinutes(o.utc_offset) === null)
    bad(`${field}.utc_offset`, "must be an offset like +02:00 or -05:00");
  const slot = o.slot_minutes;
  if (typeof slot !== "number" || !Number.isInteger(slot) || slot < SLOT_MINUTES.min || slot > SLOT_MINUTES.max)
    bad(`${field}.slot_minutes`, `must be an integer from ${SLOT_MINUTES.min} to ${SLOT_MINUTES.max}`);
  if (typeof o.hours !== "object" || o.hours === null || Array.isArray(o.hours))
    bad(`${field}.hours`, `must be an object of weekday (${WEEKDAYS.join(", ")}) -> ["09:00-12:00", ...]`);
  const hours: Partial<Record<Weekday, string[]>> = {};
  let any = false;
  for (const [day, spans] of Object.entries(o.hours as Record<string, unknown>)) {
    const f = `${field}.hours.${day}`;
    if (!(WEEKDAYS as readonly string[]).includes(day)) bad(f, `is not a weekday (${WEEKDAYS.join(", ")})`);
    if (!Array.isArray(spans) || spans.length > 6) bad(f, 'must be a list of at most 6 intervals like "09:00-12:00"');
    const parsed = (spans as unknown[])
      .map((s, i) => {
        const m = typeof s === "string" ? INTERVAL_RE.exec(s) : null;
        const a = m ? Number(m[1]) * 60 + Number(m[2]) : NaN;
        const b = m ? Number(m[3]) * 60 + Number(m[4]) : NaN;
        if (!m || Number(m[2]) > 59 || Number(m[4]) > 59 || a >= b || b > 24 * 60)
          bad(`${f}[${i}]`, 'must be "HH:MM-HH:MM" with the end after the start, within the day');
        return [a, b, s as string] as const;
      })
      .sort((x, y) => x[0] - y[0]);
    for (let i = 1; i < parsed.length; i++) if (parsed[i]![0] < parsed[i - 1]![1]) bad(f, "intervals overlap");
    if (parsed.length > 0) {
      hours[day as Weekday] = parsed.map((p) => p[2]);
      any = true;
    }
  }
  if (!any) bad(`${field}.hours`, "must open on at least one day");
  const qs = o.questions ?? [];
  if (!Array.isArray(qs) || qs.length > LIMITS.questions)
    bad(`${field}.questions`, `must be a list of at most ${LIMITS.questions} questions`);
  const questions: Question[] = (qs as unknown[]).map((q, i) => {
    const f = `${field}.questions[${i}]`;
    if (typeof q === "string") return { text: text(q, f, 500), required: false };
    if (typeof q !== "object" || q === null) return bad(f, "must be a string or {text, required}");
    const r = (q as Record<string, unknown>).required;
    if (r !== undefined && typeof r !== "boolean") bad(`${f}.required`, "must be true or false");
    return { text: text((q as Record<string, unknown>).text, `${f}.text`, 500), required: r === true };
  });
  if (new Set(questions.map((q) => q.text)).size !== questions.length) bad(`${field}.questions`, "question texts must be distinct");
  return { utc_offset: o.utc_offset as string, hours, slot_minutes: slot as number, questions };
}

export interface Slot {
  start: string;
  end: string;
}

/** A checked availability range: [start, end) in ms, end after start, at most 14 days long. */
export function checkRange(startRaw: unknown, endRaw: unknown): { start: number; end: number } {
  const start = parseInstant(startRaw, "start");
  const end = parseInstant(endRaw, "end");
  if (end <= start) bad("end", "must be after start");
  if (end - start > MAX_SPAN_DAYS * DAY_MS) bad("end", `the range spans more than ${MAX_SPAN_DAYS} days`);
  return { start, end };
}

/**
 * Slot starts (ms) inside [start, end) that lie entirely in the range, begin at or after `now`,
 * and fall in the opening hours (each interval is cut into slots from its start; a remainder
 * shorter than a slot is unused). Ascending.
 */
export function slotStarts(b: Booking, start: number, end: number, now: number): number[] {
  const off = offsetMinutes(b.utc_offset);
  if (off === null) throw new SvcError("E_INTERNAL", `stored booking offset ${b.utc_offset} is invalid`);
  const slotMs = b.slot_minutes * MIN_MS;
  const out: number[] = [];
  const firstDay = Math.floor((start + off * MIN_MS) / DAY_MS) - 1;
  const lastDay = Math.floor((end + off * MIN_MS) / DAY_MS) + 1;
  for (let d = firstDay; d <= lastDay; d++) {
    const weekday = WEEKDAYS[(((d + 3) % 7) + 7) % 7]!; // 1970-01-01 was a Thursday
    for (const span of b.hours[weekday] ?? []) {
      const m = INTERVAL_RE.exec(span)!;
      const a = Number(m[1]) * 60 + Number(m[2]);
      const z = Number(m[3]) * 60 + Number(m[4]);
      for (let t = a; t + b.slot_minutes <= z; t += b.slot_minutes) {
        const s = d * DAY_MS + (t - off) * MIN_MS;
        if (s >= start && s + slotMs <= end && s >= now) out.push(s);
      }
    }
  }
  return out;
}

/** Whether `at` (ms) starts a slot of the opening hours (ignoring the clock and bookings). */
export function isSlotStart(b: Booking, at: number): boolean {
  return slotStarts(b, at, at + b.slot_minutes * MIN_MS, -Infinity).includes(at);
}

/** Free slots in the range as ISO strings at the business's offset. */
export function freeSlots(b: Booking, start: number, end: number, now: number, taken: ReadonlySet<number>): Slot[] {
  const off = offsetMinutes(b.utc_offset)!;
  return slotStarts(b, start, end, now)
    .filter((s) => !taken.has(s))
    .map((s) => ({ start: formatInstant(s, off), end: formatInstant(s + b.slot_minutes * MIN_MS, off) }));
}
