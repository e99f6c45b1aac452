/** @module service — the business directory: canonical identities on a write-ahead log, search, claim/edit/verify/booking (admin), availability and consultation requests. */
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import { rename } from "node:fs/promises";
import { dirname, join, relative } from "node:path";
import { lockDir, writeDurable } from "../engine/collection-files.js";
import { SvcError } from "../errors.js";
import { reportWalLosses } from "../store/damage.js";
import { stderrReporter, type Reporter } from "../store/reporter.js";
import { parseStoredJson } from "../safe-values.js";
import { quarantineAndRewrite, salvageElements, tryParse, type StoreRepair } from "../store/salvage-json.js";
import { fsyncDir } from "../store/scan.js";
import type { Log, OpenLog } from "../store/log.js";
import { Wal, type Durability, type WalPosition } from "../store/wal.js";
import { checkBooking, checkRange, formatInstant, freeSlots, isSlotStart, offsetMinutes, parseInstant, type Slot } from "./booking.js";
import {
  applyImport,
  bad,
  bookable,
  checkOwner,
  checkValue,
  email,
  FIELD_NAMES,
  isoDate,
  LIMITS,
  slug,
  text,
  type Booking,
  type Business,
  type Field,
  type FieldName,
  type ImportRecord,
} from "./identity.js";
import { SearchIndex, type SearchQuery, type SearchResult } from "./search.js";

/** WAL frame types. Never renumber. */
const PUT = 1; // {b: Business[]}: these businesses as they now are
const REQUEST = 2; // {r: ConsultationRequest}

/** Checkpoint once this many log bytes were written since the last one. */
const CHECKPOINT_BYTES = 32 << 20;
const MIN_MS = 60_000;
/** From this many businesses on, single changes update the search index in place instead of rebuilding it (a rebuild costs ~20 ms per 1000). */
const INCREMENTAL_FROM = 10_000;

export interface ConsultationRequest {
  id: string;
  business: string;
  /** The slot, at the business's offset. */
  start: string;
  end: string;
  customer: { name: string; email: string };
  company?: string;
  answers: Record<string, string>;
  customer_confirmed: true;
  agent?: { name: string };
  status: "requested";
  created: string;
}

export interface DirectoryOptions {
  durability?: Durability;
  /** ms since the epoch; tests pin it. */
  clock?: () => number;
  /** The directory's log (default: the WAL under `<dir>/wal`); cluster mode gives a fenced JetStream log (app/home-stores.ts), whose positions the checkpoint then records. */
  openLog?: OpenLog;
  /** Told of damage found on open and of a background checkpoint's failure (default stderrReporter). */
  reporter?: Reporter;
}

export interface ImportSummary {
  created: number;
  updated: number;
}

export class Directory {
  private readonly businesses = new Map<string, Business>();
  private readonly requestsByBusiness = new Map<string, ConsultationRequest[]>();
  /** Booked slot starts (ms) per business. */
  private readonly taken = new Map<string, Set<number>>();
  private index: SearchIndex | null = null;
  private walBytesAtCheckpoint = 0;
  private checkpointing: Promise<void> | null = null;
  private readonly clock: () => number;
  private readonly reporter: Reporter;

  private constructor(
    private readonly dir: string,
    private wal: Log,
    opts: DirectoryOptions,
  ) {
    this.clock = opts.clock ?? Date.now;
    this.reporter = opts.reporter ?? stderrReporter;
  }

  /** Opens (creating) `<dir>`: checkpoint `directory.json` + the log (`wal/`, or opts.openLog); one writer per directory (LOCK). */
  static async open(dir: string, opts: DirectoryOptions = {}): Promise<Directory> {
    mkdirSync(dir, { recursive: true });
    lockDir(dir);
    try {
      const cpPath = join(dir, "directory.json");
      const d = new Directory(dir, undefined as unknown as Log, opts);
      const cp = existsSync(cpPath) ? readCheckpoint(cpPath) : null;
      if (cp instanceof Error) {
        // The checkpoint holds everything before its log position: without it the directory is offline, nothing is guessed or overwritten.
        d.offline = cp.message;
        d.reporter.damage({
          store: STORE,
          file: relative(dirname(dir), cpPath),
          kind: "unreadable",
          dropped: 0,
          offline: true,
          detail: `${cp.message}; the directory is offline (its routes answer 503 E_STORE_OFFLINE) until \`svc repair\``,
        });
        return d;
      }
      for (const b of cp?.businesses ?? []) d.businesses.set(b.id, b);
      for (const r of cp?.requests ?? []) d.applyRequest(r);
      // A damaged frame is skipped and named: the businesses it held keep their earlier state.
      const openLog = opts.openLog ?? Wal.opener(join(dir, "wal"), { durability: opts.durability });
      const { log: wal, report } = await openLog({
        from: cp?.wal,
        onFrame: (f) => {
          if (f.type === PUT) for (const b of (f.body as { b: Business[] }).b) d.businesses.set(b.id, b);
          else if (f.type === REQUEST) d.applyRequest((f.body as { r: ConsultationRequest }).r);
        },
      });
      d.wal = wal;
      d.walBytesAtCheckpoint = wal.stats.bytes;
      reportWalLosses(d.reporter, STORE, dirname(dir), report);
      d.unrepaired = report.damaged.some((r) => !r.beforeFrom);
      return d;
    } catch (err) {
      rmSync(join(dir, "LOCK"), { force: true });
      throw err;
    }
  }

  /** The log has damaged regions: no checkpoint is written (it would drop them) until `svc repair`. */
  private unrepaired = false;

  /** Why the directory cannot serve (its checkpoint is unreadable), or null. */
  offline: string | null = null;

  /** Throws E_STORE_OFFLINE while the directory is offline. */
  assertOnline(): void {
    if (this.offline !== null)
      throw new SvcError(
        "E_STORE_OFFLINE",
        `the business directory is offline: ${this.offline}; run \`svc repair\` (GET /v1/health names the damage)`,
        { field: "directory" },
      );
  }

  get size(): number {
    return this.businesses.size;
  }

  // ---- reads -------------------------------------------------------------------------------

  get(id: string): Business {
    const b = this.businesses.get(id);
    if (b === undefined) throw new SvcError("E_NOT_FOUND", `no business '${id.slice(0, 100)}'`, { field: "id" });
    return b;
  }

  search(q: SearchQuery): SearchResult {
    this.index ??= new SearchIndex(this.businesses.values());
    return this.index.search(q);
  }

  categories(): Array<{ category: string; count: number }> {
    this.index ??= new SearchIndex(this.businesses.values());
    return this.index.categoryCounts();
  }

  /** Listed businesses in name order. */
  listed(): Business[] {
    return this.search({ limit: Number.MAX_SAFE_INTEGER, offset: 0 }).hits.map((h) => h.business);
  }

  /** Free slots in [start, end) (ISO 8601 with offsets, span <= 14 days); 409 not_available without a bookable action. */
  availability(
    id: string,
    start: unknown,
    end: unknown,
  ): { id: string; start: string; end: string; utc_offset: string; slot_minutes: number; slots: Slot[] } {
    const booking = this.bookingOf(this.get(id)); // no booking: 409 whatever the range
    const range = checkRange(start, end);
    const off = offsetMinutes(booking.utc_offset)!;
    return {
      id,
      start: formatInstant(range.start, off),
      end: formatInstant(range.end, off),
      utc_offset: booking.utc_offset,
      slot_minutes: booking.slot_minutes,
      slots: freeSlots(booking, range.start, range.end, this.clock(), this.taken.get(id) ?? new Set()),
    };
  }

  requests(id: string): ConsultationRequest[] {
    this.get(id);
    return this.requestsByBusiness.get(id) ?? [];
  }

  /** 404 E_NOT_FOUND without business `id`, 409 not_available when it takes no bookings (what a booking request is judged on first). */
  assertBookable(id: string): void {
    this.bookingOf(this.get(id));
  }

  private bookingOf(b: Business): Booking {
    if (!bookable(b))
      throw new SvcError(
        "not_available",
        `${b.fields.name.value} takes no bookings through this service (${b.claim.state === "claimed" ? "booking is off" : "the profile is unclaimed"})`,
        { field: "id" },
      );
    return b.booking!;
  }

  // ---- public write ------------------------------------------------------------------------

  /**
   * A consultation request for a free slot (the per-address write limit is applied before this by
   * the HTTP route, see http/routes/directory.ts): 409 not_available without booking; 400 unless customer_confirmed is
   * true, customer {name, email} is given (nothing is filled in), answers match the questions and
   * start is a future slot of the opening hours; 409 E_CONFLICT when the slot is taken.
   * `o` as the directory_consultation_request schema (tools/directory-ops.ts) let it through: its members, their
   * types and customer_confirmed (true) are checked; the values (identity.ts `text`, `email`; `parseInstant`) and what
   * depends on the business are checked here.
   */
  async requestConsultation(
    id: string,
    o: {
      start: string;
      customer: { name: string; email: string };
      company?: string | null;
      answers?: Record<string, string> | null;
      customer_confirmed: true;
      agent?: { name: string } | null;
    },
  ): Promise<ConsultationRequest> {
    const now = this.clock();
    const b = this.get(id);
    const booking = this.bookingOf(b);
    if (o.customer_confirmed !== true) bad("customer_confirmed", "must be true"); // the consent rule, asserted again where the request is stored
    const at = parseInstant(o.start, "start");
    const customer = { name: text(o.customer.name, "customer.name"), email: email(o.customer.email, "customer.email") };
    const company = o.company === undefined || o.company === null || o.company === "" ? undefined : text(o.company, "company");
    const agent = o.agent === undefined || o.agent === null ? undefined : { name: text(o.agent.name, "agent.name") };
    const answers: Record<string, string> = {};
    if (o.answers !== undefined && o.answers !== null) {
      for (const [q, a] of Object.entries(o.answers)) {
        if (!booking.questions.some((x) => x.text === q)) bad("answers", `'${q.slice(0, 80)}' is not one of this business's questions`);
        answers[q] = text(a, `answers.${q.slice(0, 80)}`, LIMITS.answer);
      }
    }
    for (const q of booking.questions) if (q.required && answers[q.text] === undefined) bad("answers", `'${q.text}' needs an answer`);
    if (!isSlotStart(booking, at)) bad("start", "is not the start of a slot in the opening hours; GET the availability for free slots");
    if (at < now) bad("start", "is in the past");
    if (this.taken.get(id)?.has(at))
      throw new SvcError("E_CONFLICT", "that slot is already booked; GET the availability for free slots", { field: "start" });
    const off = offsetMinutes(booking.utc_offset)!;
    const r: ConsultationRequest = {
      id: `req_${randomBytes(8).toString("hex")}`,
      business: id,
      start: formatInstant(at, off),
      end: formatInstant(at + booking.slot_minutes * MIN_MS, off),
      customer,
      ...(company === undefined ? {} : { company }),
      answers,
      customer_confirmed: true,
      ...(agent === undefined ? {} : { agent }),
      status: "requested",
      created: new Date(now).toISOString(),
    };
    this.applyRequest(r); // reserves the slot before the await: a concurrent request for it gets 409
    try {
      await this.append(REQUEST, { r });
    } catch (err) {
      this.taken.get(id)?.delete(at);
      this.requestsByBusiness.get(id)?.pop();
      throw err;
    }
    return r;
  }

  private applyRequest(r: ConsultationRequest): void {
    let t = this.taken.get(r.business);
    if (t === undefined) this.taken.set(r.business, (t = new Set()));
    t.add(Date.parse(r.start));
    let list = this.requestsByBusiness.get(r.business);
    if (list === undefined) this.requestsByBusiness.set(r.business, (list = []));
    list.push(r);
  }

  // ---- admin writes ------------------------------------------------------------------------

  /**
   * Merge checked import records. A record without an id is the business whose id is the slug of
   * its name and locality ("Oak Plumbing", Bristol -> oak-plumbing-bristol): importing it again
   * updates that identity instead of creating a second one.
   */
  async importRecords(recs: ImportRecord[]): Promise<ImportSummary> {
    const nowMs = this.clock();
    const now = new Date(nowMs).toISOString();
    const out = new Map<string, Business>();
    let created = 0;
    for (const rec of recs) {
      const id = rec.id ?? slug(rec.values.address?.locality ? `${rec.values.name} ${rec.values.address.locality}` : rec.values.name);
      const old = this.businesses.get(id);
      if (old === undefined) created++;
      let b = applyImport(old, id, rec, now);
      if (rec.owner !== undefined) b = { ...b, claim: { state: "claimed", date: old?.claim.date ?? isoDate(nowMs), owner: rec.owner } };
      if (rec.booking !== undefined) b = { ...b, booking: checkBooking(rec.booking) };
      this.businesses.set(id, b);
      out.set(id, b);
    }
    if (out.size > 0) await this.put([...out.values()]);
    return { created, updated: recs.length - created };
  }

  /** unclaimed -> claimed by `owner` {name, email}; 409 when claimed by someone else. */
  async claim(id: string, owner: unknown): Promise<Business> {
    const b = this.get(id);
    const o = checkOwner(owner, "owner");
    if (b.claim.state === "claimed" && b.claim.owner?.email.toLowerCase() !== o.email.toLowerCase())
      throw new SvcError("E_CONFLICT", "the business is already claimed by another owner; release it first", { field: "id" });
    return this.update(b, { claim: { state: "claimed", date: isoDate(this.clock()), owner: o } });
  }

  /** claimed -> unclaimed: booking off, verification reset; field values and their states stay. */
  async release(id: string): Promise<Business> {
    const b = this.get(id);
    if (b.claim.state !== "claimed") throw new SvcError("E_CONFLICT", "the business is not claimed", { field: "id" });
    return this.update(b, { claim: { state: "unclaimed" }, verification: { state: "unverified" }, booking: null });
  }

  /**
   * The claimed owner's values: each becomes `owner_asserted` as of today; null removes an optional field.
   * `fields` is an object (the directory_assert_fields schema); each name and value is checked here.
   */
  async assertFields(id: string, fields: Record<string, unknown>): Promise<Business> {
    const b = this.get(id);
    if (b.claim.state !== "claimed")
      throw new SvcError("E_CONFLICT", "only a claimed business's owner can assert fields; claim it first", { field: "id" });
    if (Object.keys(fields).length === 0) return bad("fields", "must be a non-empty object {field: value}");
    const next = { ...b.fields } as Record<string, Field>;
    const source = { url: null, date: isoDate(this.clock()), asserted_by: "owner" };
    for (const [name, v] of Object.entries(fields)) {
      if (!(FIELD_NAMES as readonly string[]).includes(name)) bad(`fields.${name}`, `is not a business field (${FIELD_NAMES.join(", ")})`);
      if (v === null) {
        if (name === "name" || name === "category") bad(`fields.${name}`, "cannot be removed");
        delete next[name];
        continue;
      }
      next[name] = { value: checkValue(name as FieldName, v, `fields.${name}`), state: "owner_asserted", source };
    }
    return this.update(b, { fields: next as Business["fields"] });
  }

  /** The operator checked these fields (all present ones when `fields` is omitted): state `verified`; a claimed business becomes verified. */
  async verify(id: string, fields?: string[] | null): Promise<Business> {
    const b = this.get(id);
    // a non-empty list of names (the directory_verify schema); which of them this business has is checked here
    const names = fields ?? Object.keys(b.fields);
    const next = { ...b.fields } as Record<string, Field>;
    const date = isoDate(this.clock());
    for (const [i, n] of names.entries()) {
      if (!Object.hasOwn(next, n) || next[n] === undefined)
        bad(`fields[${i}]`, `is not a field this business has (${Object.keys(next).join(", ")})`);
      const f = next[n]!;
      next[n] = { value: f.value, state: "verified", source: { url: f.source.url, date, asserted_by: "operator" } };
    }
    return this.update(b, {
      fields: next as Business["fields"],
      ...(b.claim.state === "claimed" ? { verification: { state: "verified" as const, date } } : {}),
    });
  }

  /** Booking on (settings) or off (null); only for claimed businesses. */
  async setBooking(id: string, settings: unknown): Promise<Business> {
    const b = this.get(id);
    if (b.claim.state !== "claimed")
      throw new SvcError("E_CONFLICT", "only a claimed business can take bookings; claim it first", { field: "id" });
    return this.update(b, { booking: settings === null ? null : checkBooking(settings) });
  }

  /** Listed (search, llms-full.txt) or not. */
  async setListed(id: string, listed: boolean): Promise<Business> {
    return this.update(this.get(id), { listed });
  }

  private async update(b: Business, patch: Partial<Business>): Promise<Business> {
    const next: Business = { ...b, ...patch, updated: new Date(this.clock()).toISOString() };
    this.businesses.set(b.id, next);
    await this.put([next]);
    return next;
  }

  private async put(bs: Business[]): Promise<void> {
    // Small directories and big batches rebuild on the next read (in name order); a few changes to a big one are applied in place.
    const ix = this.index;
    if (ix === null || this.businesses.size < INCREMENTAL_FROM || bs.length > 1000 || ix.replaced + bs.length > ix.size / 10)
      this.index = null;
    else for (const b of bs) ix.upsert(b);
    for (let i = 0; i < bs.length; i += 500) await this.append(PUT, { b: bs.slice(i, i + 500) });
  }

  private async append(type: number, body: unknown): Promise<void> {
    await this.wal.append(type, body);
    if (this.wal.stats.bytes - this.walBytesAtCheckpoint > CHECKPOINT_BYTES)
      void this.checkpoint().catch((err) => this.reporter.background(err, "checkpoint of the directory")); // only a longer log to replay: the next append past the threshold tries again
  }

  /** Write every business and request with the log position they include, then drop older segments. */
  checkpoint(): Promise<void> {
    if (this.unrepaired) return this.wal.sync();
    this.checkpointing ??= (async () => {
      await this.wal.sync();
      const pos = this.wal.position;
      const bytes = this.wal.stats.bytes;
      const requests = [...this.requestsByBusiness.values()].flat();
      const body = Buffer.from(JSON.stringify({ version: 1, wal: pos, businesses: [...this.businesses.values()], requests }));
      await writeDurable(join(this.dir, "directory.json.tmp"), body);
      await rename(join(this.dir, "directory.json.tmp"), join(this.dir, "directory.json"));
      await fsyncDir(this.dir);
      this.walBytesAtCheckpoint = bytes;
      await this.wal.dropBefore(pos);
    })().finally(() => (this.checkpointing = null));
    return this.checkpointing;
  }

  /**
   * Cluster mode's snapshot of the directory (app/home-stores.ts): checkpoint, then directory.json as
   * written, with the stream sequence it holds every frame up to (its `wal.offset`).
   */
  async snapshot(): Promise<{ seq: number; files: Array<{ path: string; data: Uint8Array }> }> {
    this.assertOnline();
    await this.checkpoint();
    const data = new Uint8Array(readFileSync(join(this.dir, "directory.json")));
    const cp = parseStoredJson(Buffer.from(data).toString("utf8")) as { wal: WalPosition };
    return { seq: cp.wal.offset, files: [{ path: "directory.json", data }] };
  }

  async close(): Promise<void> {
    if (this.offline !== null) {
      rmSync(join(this.dir, "LOCK"), { force: true }); // nothing was written; the damaged file stays for repair
      return;
    }
    try {
      await this.checkpoint(); // refused by a log that cannot vouch for what was appended (a fenced leader's): no checkpoint then
    } finally {
      await this.wal.close();
      rmSync(join(this.dir, "LOCK"), { force: true });
    }
  }
}

/** The directory's name in the damage register. */
const STORE = "directory";

/**
 * `svc repair` of `<dir>/directory.json`: an unreadable checkpoint is quarantined and rewritten with
 * the businesses and requests that still parse (the others are dropped; the log after the
 * checkpoint still replays over them). Refused when the log position cannot be read.
 */
export function repairDirectoryCheckpoint(dir: string): StoreRepair | null {
  const path = join(dir, "directory.json");
  if (!existsSync(path)) return null;
  const file = "directory/directory.json";
  const cp = readCheckpoint(path);
  if (!(cp instanceof Error))
    return { store: STORE, file, action: "ok", kept: cp.businesses.length + cp.requests.length, dropped: 0, detail: "readable" };
  const text = readFileSync(path, "utf8");
  const wal = (tryParse(`{${(/"wal"\s*:\s*\{[^{}]*\}/.exec(text) ?? ["x"])[0]}}`) as { wal?: WalPosition } | undefined)?.wal;
  if (wal === undefined || !Number.isSafeInteger(wal.segment) || !Number.isSafeInteger(wal.offset)) {
    return {
      store: STORE,
      file,
      action: "refused",
      kept: 0,
      dropped: 0,
      detail: `${cp.message}; the log position cannot be read: restore ${file} from a backup`,
    };
  }
  const objects = (key: string, ok: (v: Record<string, unknown>) => boolean) => {
    const parts = salvageElements(text, key) ?? [];
    const kept = parts
      .map(tryParse)
      .filter((v): v is Record<string, unknown> => typeof v === "object" && v !== null && ok(v as Record<string, unknown>));
    return { kept, dropped: parts.length - kept.length };
  };
  const businesses = objects("businesses", (b) => typeof b.id === "string" && typeof b.fields === "object" && b.fields !== null);
  const requests = objects("requests", (r) => typeof r.id === "string" && typeof r.business === "string" && typeof r.start === "string");
  const backup = quarantineAndRewrite(path, JSON.stringify({ version: 1, wal, businesses: businesses.kept, requests: requests.kept }));
  return {
    store: STORE,
    file,
    action: "rewritten",
    kept: businesses.kept.length + requests.kept.length,
    dropped: businesses.dropped + requests.dropped,
    backup,
    detail: cp.message,
  };
}

/** The log position (offset) the checkpoint of the directory `<dir>` holds everything up to (0: none, or unreadable). */
export function directoryCheckpointSeq(dir: string): number {
  const path = join(dir, "directory.json");
  if (!existsSync(path)) return 0;
  const cp = readCheckpoint(path);
  return cp instanceof Error ? 0 : cp.wal.offset;
}

/** Replace the checkpoint of the directory `<dir>` (not open) by `data` (a snapshot's directory.json): temp file, fdatasync, rename. */
export async function restoreDirectoryCheckpoint(dir: string, data: Uint8Array): Promise<void> {
  mkdirSync(dir, { recursive: true });
  const path = join(dir, "directory.json");
  await writeDurable(`${path}.tmp`, Buffer.from(data));
  if (readCheckpoint(`${path}.tmp`) instanceof Error)
    throw new SvcError("E_IO", "the snapshot's directory.json is not a directory checkpoint");
  await rename(`${path}.tmp`, path);
  await fsyncDir(dir);
}

/** The checkpoint, or why it cannot be read. */
function readCheckpoint(path: string): { wal: WalPosition; businesses: Business[]; requests: ConsultationRequest[] } | Error {
  try {
    const cp = parseStoredJson(readFileSync(path, "utf8")) as { wal?: WalPosition; businesses?: unknown; requests?: unknown };
    const ok =
      typeof cp === "object" &&
      cp !== null &&
      typeof cp.wal === "object" &&
      cp.wal !== null &&
      Number.isSafeInteger(cp.wal.segment) &&
      Number.isSafeInteger(cp.wal.offset) &&
      Array.isArray(cp.businesses) &&
      Array.isArray(cp.requests);
    if (!ok) return new Error(`${path} is not a directory checkpoint ({version, wal, businesses, requests})`);
    return cp as { wal: WalPosition; businesses: Business[]; requests: ConsultationRequest[] };
  } catch (e) {
    return new Error(`${path} is not valid JSON (${e instanceof Error ? e.message : String(e)})`);
  }
}
