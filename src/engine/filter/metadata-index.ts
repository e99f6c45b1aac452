/** @module metadata-index — one partition's metadata index: filters evaluated to roaring bitmaps of rows, plus match-count estimates and checkpoints. */
import { encode } from "@msgpack/msgpack";
import { SvcError } from "../../errors.js";
import { decodeMsgpack } from "../../safe-values.js";
import { RoaringBitmap32 } from "../roaring.js";
import type { Metadata } from "./metadata.js";
import { NumericColumn, type NumericQuery } from "./numeric-column.js";
import type { Filter, Scalar } from "./parse.js";
import { Posting } from "./posting.js";

export { matches } from "./match.js";

/**
 * Design (rows are u32 ids 0..n-1 of one partition; deleted rows stay indexed and are
 * excluded by the caller's `universe` of live rows):
 * - Strings (scalar or list elements) and booleans: an inverted index value -> Posting
 *   (a roaring bitmap with buffered appends). Strings and booleans live in separate maps,
 *   so "true" and true never meet; numbers are not in it at all (below), so "1" and 1 don't
 *   either. A string held by a single row is stored as the bare row number: unique ids
 *   (a doc id per row) then cost one Map entry instead of a bitmap object.
 * - Numbers: a NumericColumn (Float64Array by row + value-sorted row order). It answers
 *   ranges and numeric $eq/$in alike (a point is the interval [v, v]), so a unique number
 *   per row (timestamps) needs no posting at all.
 * - Presence: one Posting per field of the rows holding it, for $exists.
 * Negations ($ne, $nin, $exists: false) are universe minus the positive set; that is what
 * gives rows without the field their MongoDB-style match of $ne/$nin.
 */
class FieldIndex {
  present: Posting;
  readonly strings = new Map<string, Posting | number>();
  yes: Posting | null = null;
  no: Posting | null = null;
  num: NumericColumn | null = null;

  constructor(present: Posting) {
    this.present = present;
  }
}

/** The checkpoint envelope (msgpack). Bitmaps are roaring portable bytes; arrays are raw little-endian bytes. */
interface Envelope {
  format: typeof FORMAT;
  version: typeof VERSION;
  /** Every row added (portable bitmap). */
  rows: Uint8Array;
  fields: Array<{
    name: string;
    present: Uint8Array;
    /** Strings held by >= 2 rows, with their bitmaps. */
    keys: string[];
    bitmaps: Uint8Array[];
    /** Strings held by one row, with that row (u32 each). */
    singleKeys: string[];
    singleRows: Uint8Array;
    yes: Uint8Array | null;
    no: Uint8Array | null;
    /**
     * Numeric column: values of rows [0, len) (NaN = none) as f32 when every one of them is
     * exactly a float32 (small integers, years: half the bytes), else f64; rows sorted by value as u32.
     */
    num: { len: number; f32: boolean; values: Uint8Array; sorted: Uint8Array } | null;
  }>;
}

const FORMAT = "svc.metadata-index";
const VERSION = 1;
const hasOwn = Object.prototype.hasOwnProperty;

export class MetadataIndex {
  private readonly fields = new Map<string, FieldIndex>();
  /** Every row added; guards the add-once rule (a second add would corrupt the numeric order). */
  private readonly all: Posting;
  private added: number;
  private maxRow: number;

  constructor(all: RoaringBitmap32 | null = null) {
    this.all = all === null ? Posting.empty() : Posting.fromBitmap(all);
    this.added = all === null ? 0 : all.size;
    this.maxRow = all === null || all.isEmpty ? -1 : all.maximum();
  }

  /** Rows added so far. */
  get rows(): number {
    return this.added;
  }

  /**
   * Index one row's (validated) metadata. Each row is added at most once (an update appends
   * a new row and tombstones the old one); a repeat throws E_CONFLICT and changes nothing.
   * Rows may come in any order; increasing is cheapest (the repeat check is then free).
   * Values other than the Metadata types are ignored (validateMetadata keeps them out).
   */
  add(row: number, meta: Metadata): void {
    if (row >>> 0 !== row) throw new SvcError("E_RANGE", `row ids are u32, got ${row}`, { field: "row" });
    if (row > this.maxRow) this.maxRow = row;
    else if (this.all.has(row)) throw new SvcError("E_CONFLICT", `row ${row} is already in the metadata index`, { field: "row" });
    this.all.add(row);
    this.added++;
    // for-in walks the object's enum cache without allocating a key array (Object.keys did,
    // and the garbage cost more than the indexing); the own check drops inherited names.
    for (const key in meta) {
      if (!hasOwn.call(meta, key)) continue;
      const v = meta[key];
      if (v === undefined) continue;
      let f = this.fields.get(key);
      if (f === undefined) {
        f = new FieldIndex(Posting.of(row));
        this.fields.set(key, f);
      } else {
        f.present.add(row);
      }
      switch (typeof v) {
        case "string":
          addString(f.strings, v, row);
          break;
        case "number":
          if (v === v) (f.num ??= new NumericColumn()).add(row, v); // NaN: present, equal to nothing, in no range
          break;
        case "boolean":
          if (v) {
            if (f.yes === null) f.yes = Posting.of(row);
            else f.yes.add(row);
          } else if (f.no === null) f.no = Posting.of(row);
          else f.no.add(row);
          break;
        default:
          if (Array.isArray(v)) for (const s of v) if (typeof s === "string") addString(f.strings, s, row);
      }
    }
  }

  /**
   * Rows of `universe` that match `filter`: a new bitmap. Neither `universe` nor any internal
   * bitmap is changed. Rows of `universe` never added count as rows without metadata.
   * Cost note: intersections run against `universe`, so its shape matters. A plain range
   * (one run per 65,536 rows) is cheapest; scattered deletions make run containers with
   * hundreds of runs, ~4-10x slower to intersect than bitset containers (a live set built as
   * range-minus-tombstones can call removeRunCompression() once when cached).
   */
  evaluate(filter: Filter, universe: RoaringBitmap32): RoaringBitmap32 {
    return this.eval(filter, universe);
  }

  /**
   * Estimated rows (of all added, live or not) matching `filter`, for the planner; costs a
   * few map lookups and binary searches (~2 us). Exact for a single leaf, except that on
   * partitions past ~16k numeric rows a numeric leaf's unsorted tail (at most 1/16 of the
   * rows) is assumed to match like the rest; $and/$or assume independent children.
   */
  estimate(filter: Filter): number {
    return Math.round(Math.min(this.added, Math.max(0, this.est(filter))));
  }

  /**
   * Up to `limit` rows of `universe` holding a number in `field`, with those numbers, by
   * value descending (ties: the later row first) or ascending (ties: the earlier row first).
   * Walks the field's sorted numeric column from one end (see NumericColumn.ordered).
   */
  ordered(field: string, universe: RoaringBitmap32, limit: number, desc: boolean): { rows: Uint32Array; values: Float64Array } {
    const num = this.fields.get(field)?.num;
    if (num === undefined || num === null) return { rows: new Uint32Array(0), values: new Float64Array(0) };
    const rows = num.ordered(universe, limit, desc);
    return { rows, values: Float64Array.from(rows, (r) => num.value(r)) };
  }

  /**
   * Rows of `universe` per string value of `field` (scalar strings and list elements; a row
   * counts once per distinct value). Values with no such row are left out. No prototype: any
   * string is a key. One intersection per distinct value of the field (meant for few values: kinds, tags).
   */
  facet(field: string, universe: RoaringBitmap32): Record<string, number> {
    const out: Record<string, number> = Object.create(null);
    const f = this.fields.get(field);
    if (f === undefined) return out;
    for (const [value, p] of f.strings) {
      const n = typeof p === "number" ? (universe.has(p) ? 1 : 0) : p.bitmap().andCardinality(universe);
      if (n > 0) out[value] = n;
    }
    return out;
  }

  /** The index as bytes, for checkpoints (see Envelope). Merges pending appends first (no observable change). */
  serialize(): Uint8Array {
    const fields: Envelope["fields"] = [];
    for (const [name, f] of this.fields) {
      const keys: string[] = [];
      const bitmaps: Uint8Array[] = [];
      const singleKeys: string[] = [];
      const single: number[] = [];
      for (const [key, p] of f.strings) {
        if (typeof p === "number") {
          singleKeys.push(key);
          single.push(p);
        } else {
          keys.push(key);
          bitmaps.push(portable(p));
        }
      }
      let num: Envelope["fields"][number]["num"] = null;
      if (f.num !== null) {
        const s = f.num.snapshot();
        const f32 = fitsFloat32(s.values);
        num = { len: s.len, f32, values: bytesOf(f32 ? Float32Array.from(s.values) : s.values), sorted: bytesOf(s.sorted) };
      }
      fields.push({
        name,
        present: portable(f.present),
        keys,
        bitmaps,
        singleKeys,
        singleRows: bytesOf(Uint32Array.from(single)),
        yes: f.yes === null ? null : portable(f.yes),
        no: f.no === null ? null : portable(f.no),
        num,
      });
    }
    const env: Envelope = { format: FORMAT, version: VERSION, rows: portable(this.all), fields };
    return encode(env, { initialBufferSize: 1 << 16 });
  }

  /** Rebuild an index from serialize() bytes; more rows may be added afterwards. Throws E_IO when the bytes are not such an index. */
  static deserialize(bytes: Uint8Array): MetadataIndex {
    try {
      const env = decodeMsgpack(bytes) as Envelope;
      if (typeof env !== "object" || env === null || env.format !== FORMAT) throw new Error("not a metadata index");
      if (env.version !== VERSION) throw new Error(`format version ${String(env.version)} is not ${VERSION}`);
      const index = new MetadataIndex(bitmapOf(env.rows));
      for (const e of env.fields) {
        const f = new FieldIndex(Posting.fromBitmap(bitmapOf(e.present)));
        if (e.keys.length !== e.bitmaps.length) throw new Error(`field ${e.name}: ${e.keys.length} keys, ${e.bitmaps.length} bitmaps`);
        for (let i = 0; i < e.keys.length; i++) f.strings.set(e.keys[i]!, Posting.fromBitmap(bitmapOf(e.bitmaps[i]!)));
        const single = u32Of(e.singleRows);
        if (single.length !== e.singleKeys.length)
          throw new Error(`field ${e.name}: ${e.singleKeys.length} single keys, ${single.length} rows`);
        for (let i = 0; i < single.length; i++) f.strings.set(e.singleKeys[i]!, single[i]!);
        if (e.yes !== null) f.yes = Posting.fromBitmap(bitmapOf(e.yes));
        if (e.no !== null) f.no = Posting.fromBitmap(bitmapOf(e.no));
        if (e.num !== null)
          f.num = NumericColumn.restore(
            e.num.len,
            e.num.f32 ? Float64Array.from(f32Of(e.num.values)) : f64Of(e.num.values),
            u32Of(e.num.sorted),
          );
        index.fields.set(e.name, f);
      }
      return index;
    } catch (err) {
      if (err instanceof SvcError) throw err;
      throw new SvcError("E_IO", `metadata index checkpoint is unreadable: ${(err as Error).message}`, { cause: err });
    }
  }

  private eval(filter: Filter, universe: RoaringBitmap32): RoaringBitmap32 {
    switch (filter.kind) {
      case "and": {
        // Most selective first; each child is evaluated within the rows left so far, so
        // later children work on small universes (numeric leaves then test rows directly).
        const order = filter.children.map((c) => ({ c, e: this.est(c) })).sort((a, b) => a.e - b.e);
        let cur = universe;
        for (const { c } of order) {
          cur = this.eval(c, cur);
          if (cur.isEmpty) break;
        }
        return cur === universe ? universe.clone() : cur;
      }
      case "or": {
        const parts = filter.children.map((c) => this.eval(c, universe));
        return RoaringBitmap32.orMany(parts);
      }
      case "in": {
        const { parts, numericOnly } = this.positives(filter.field, filter.values, universe);
        if (parts.length === 0) return filter.negate ? universe.clone() : new RoaringBitmap32();
        if (parts.length === 1) {
          const p = parts[0]!;
          if (filter.negate) return RoaringBitmap32.andNot(universe, p);
          return numericOnly ? p : RoaringBitmap32.and(p, universe); // a numeric part is new and already within universe
        }
        const union = RoaringBitmap32.orMany(parts);
        return filter.negate ? RoaringBitmap32.andNot(universe, union) : union.andInPlace(universe);
      }
      case "range": {
        const num = this.fields.get(filter.field)?.num;
        if (num === undefined || num === null) return new RoaringBitmap32();
        return num.select(
          { kind: "range", min: filter.min, minInclusive: filter.minInclusive, max: filter.max, maxInclusive: filter.maxInclusive },
          universe,
        );
      }
      case "exists": {
        const f = this.fields.get(filter.field);
        if (f === undefined) return filter.exists ? new RoaringBitmap32() : universe.clone();
        const present = f.present.bitmap();
        return filter.exists ? RoaringBitmap32.and(present, universe) : RoaringBitmap32.andNot(universe, present);
      }
    }
  }

  /**
   * Bitmaps whose union, within `universe`, is the rows holding one of `values` in `field`.
   * Internal bitmaps are returned as they are (callers only read them) and may reach beyond
   * `universe`; `numericOnly` says the only part is a new bitmap already within `universe`.
   */
  private positives(
    field: string,
    values: readonly Scalar[],
    universe: RoaringBitmap32,
  ): { parts: RoaringBitmap32[]; numericOnly: boolean } {
    const f = this.fields.get(field);
    if (f === undefined) return { parts: [], numericOnly: false };
    const out: RoaringBitmap32[] = [];
    let singles: number[] | null = null;
    let points: number[] | null = null;
    for (const v of values) {
      if (typeof v === "string") {
        const p = f.strings.get(v);
        if (p === undefined) continue;
        if (typeof p === "number") (singles ??= []).push(p);
        else out.push(p.bitmap());
      } else if (typeof v === "boolean") {
        const p = v ? f.yes : f.no;
        if (p !== null) out.push(p.bitmap());
      } else if (f.num !== null) {
        (points ??= []).push(v);
      }
    }
    if (singles !== null) out.push(new RoaringBitmap32(Uint32Array.from(singles).sort()));
    if (points !== null) out.push(f.num!.select(pointsQuery(points), universe));
    return { parts: out, numericOnly: points !== null && out.length === 1 };
  }

  private est(filter: Filter): number {
    const n = this.added;
    switch (filter.kind) {
      case "and": {
        let e = n;
        for (const c of filter.children) e *= n === 0 ? 0 : this.est(c) / n;
        return e;
      }
      case "or": {
        let miss = 1;
        for (const c of filter.children) miss *= n === 0 ? 1 : 1 - Math.min(1, this.est(c) / n);
        return n * (1 - miss);
      }
      case "in": {
        const f = this.fields.get(filter.field);
        let pos = 0;
        if (f !== undefined) {
          const points: number[] = [];
          for (const v of filter.values) {
            if (typeof v === "string") {
              const p = f.strings.get(v);
              pos += p === undefined ? 0 : typeof p === "number" ? 1 : p.size;
            } else if (typeof v === "boolean") pos += (v ? f.yes : f.no)?.size ?? 0;
            else points.push(v);
          }
          if (points.length > 0 && f.num !== null) pos += f.num.estimate(pointsQuery(points));
        }
        return filter.negate ? n - Math.min(n, pos) : pos;
      }
      case "range": {
        const num = this.fields.get(filter.field)?.num;
        if (num === undefined || num === null) return 0;
        return num.estimate({
          kind: "range",
          min: filter.min,
          minInclusive: filter.minInclusive,
          max: filter.max,
          maxInclusive: filter.maxInclusive,
        });
      }
      case "exists": {
        const present = this.fields.get(filter.field)?.present.size ?? 0;
        return filter.exists ? present : n - present;
      }
    }
  }
}

function addString(map: Map<string, Posting | number>, s: string, row: number): void {
  const p = map.get(s);
  if (p === undefined) map.set(s, row);
  else if (typeof p === "number") {
    if (p !== row) {
      const q = Posting.of(p);
      q.add(row);
      map.set(s, q);
    }
  } else p.add(row);
}

function pointsQuery(points: number[]): NumericQuery {
  const sorted = Float64Array.from(points).sort();
  return { kind: "points", points: sorted };
}

function portable(p: Posting): Uint8Array {
  const bm = p.bitmap();
  bm.runOptimize(); // representation only: the same rows, often far fewer bytes
  return bm.serialize("portable");
}

function bitmapOf(bytes: Uint8Array): RoaringBitmap32 {
  return RoaringBitmap32.deserialize(bytes, "portable");
}

/** Whether every value (NaN included) survives a round trip through float32. */
function fitsFloat32(values: Float64Array): boolean {
  for (let i = 0; i < values.length; i++) {
    const v = values[i]!;
    if (Math.fround(v) !== v && v === v) return false;
  }
  return true;
}

function bytesOf(a: Float64Array | Float32Array | Uint32Array): Uint8Array {
  return new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
}

/** Copies into fresh, aligned arrays: decoded bytes may sit at any offset of the checkpoint buffer. */
function u32Of(bytes: Uint8Array): Uint32Array {
  if (bytes.byteLength % 4 !== 0) throw new Error(`u32 array of ${bytes.byteLength} bytes`);
  const out = new Uint32Array(bytes.byteLength / 4);
  new Uint8Array(out.buffer).set(bytes);
  return out;
}

function f32Of(bytes: Uint8Array): Float32Array {
  if (bytes.byteLength % 4 !== 0) throw new Error(`f32 array of ${bytes.byteLength} bytes`);
  const out = new Float32Array(bytes.byteLength / 4);
  new Uint8Array(out.buffer).set(bytes);
  return out;
}

function f64Of(bytes: Uint8Array): Float64Array {
  if (bytes.byteLength % 8 !== 0) throw new Error(`f64 array of ${bytes.byteLength} bytes`);
  const out = new Float64Array(bytes.byteLength / 8);
  new Uint8Array(out.buffer).set(bytes);
  return out;
}
