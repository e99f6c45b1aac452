/** @module partition — one namespace of a collection: bit rows in shared memory, values/records (with payloads) on disk, ids, tombstones, metadata index. */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { SvcError } from "../errors.js";
import type { Kernels } from "../kernels/abi.js";
import type { Rotation } from "../kernels/rotation.js";
import { RowArena } from "../kernels/row-arena.js";
import type { Metadata } from "./filter/metadata.js";
import { FilterCache } from "./filter/filter-cache.js";
import { MetadataIndex } from "./filter/metadata-index.js";
import { IvfIndex } from "./ivf.js";
import type { FileSums, SumFile } from "./block-sums.js";
import { RecordFile } from "./record-file.js";
import { RoaringBitmap32 } from "./roaring.js";
import { RowFile } from "./row-file.js";

/** How a collection stores vectors: float32 values (cosine, rescored) or packed bits (hamming). */
export interface VectorShape {
  /** Float dimension (cosine) or bit count (hamming). */
  dimension: number;
  metric: "cosine" | "hamming";
}

/** What a checkpoint records of a partition: enough to reopen its files at that point. */
export interface PartitionState {
  namespace: string;
  /** Directory name under the collection's parts/ (unique per generation). */
  dir: string;
  rows: number;
  recordBytes: number;
  /** Files (in dir) holding the tombstones and the metadata index at the checkpoint. */
  tombstones: string;
  index: string;
  /** File (in dir) of the approximate index over rows [0, its indexedRows), when the partition has one (written once, by the clustering compaction). */
  ivf?: string;
  /** File (in dir) of the block sums of bits.bin, values.f32 and records.bin at the checkpoint (absent in checkpoints before version 2). */
  sums?: string;
}

/** A row found damaged on open: which file's block sums failed (or, in salvage, which file was lost), and its id when that could still be read. */
export interface DamagedRow {
  row: number;
  id: string | null;
  /** Names in the partition directory: a data file (SumFile), or the tombstones file when it was lost. */
  files: string[];
  /** False when the row was already dead at the checkpoint (nothing is lost). */
  live: boolean;
}

/** File name of a partition's approximate index. */
export const IVF_FILE = "ivf.bin";

/**
 * Rows are numbered in append order and never renumbered inside a partition; an upsert of
 * an existing id appends a new row and tombstones the old one. Compaction builds a fresh
 * partition from the live rows. Files: bits.bin (packed rows), values.f32 (cosine only),
 * records.bin (ids, metadata, payloads).
 */
export class Partition {
  /** Changed only by a namespace move (the files stay where they are: directories are named by generation). */
  namespace: string;
  readonly dir: string;
  readonly path: string;
  readonly shape: VectorShape;
  readonly arena: RowArena;
  readonly bits: RowFile;
  readonly values: RowFile | null;
  readonly records: RecordFile;
  tombstones: RoaringBitmap32;
  index: MetadataIndex;
  /** Queries and checkpoints in flight; a retired partition closes when this is 0. */
  pins = 0;
  /** The approximate index (ivf.ts) over rows [0, ivf.indexedRows), or null: set by the clustering compaction that built this generation. */
  ivf: IvfIndex | null = null;
  /**
   * Float partitions: the rescoring depth queries use (search.ts candidatesFor / rescoreFor; DEPTH_EXACT: every row
   * scored exactly), calibrated on this partition's rows when it held `depthRows` live rows (depth.ts); null: not yet,
   * the dimension's default. Kept in memory only: a reopened collection calibrates again.
   */
  depth: number | null = null;
  depthRows = 0;
  /** Bumped on every change of rows or tombstones; caches below key on it. */
  version = 0;
  /** Recent filters' matches and gathered codes at `version` (search.ts). */
  readonly filters: FilterCache;
  private liveCache: { version: number; bitmap: RoaringBitmap32 } | null = null;

  constructor(
    private readonly kernels: Kernels,
    root: string,
    shape: VectorShape,
    state: Omit<PartitionState, "tombstones" | "index" | "sums"> & {
      tombstones?: RoaringBitmap32;
      index?: MetadataIndex;
      sums?: Partial<Record<SumFile, FileSums>>;
      /** svc repair: a data file shorter than `rows` reads as damaged rows past its end; an unreadable ivf file is dropped (the rewrite builds one). */
      salvage?: boolean;
      /** svc repair: the checkpoint's tombstones file could not be read (its name is `tombstonesFile`): every id's last row is of unknown state. */
      tombstonesLost?: boolean;
      tombstonesFile?: string;
      /** svc repair: the metadata index could not be read: rebuilt from the records. */
      indexLost?: boolean;
    },
  ) {
    this.namespace = state.namespace;
    this.dir = state.dir;
    this.path = join(root, state.dir);
    this.shape = shape;
    mkdirSync(this.path, { recursive: true });
    this.arena = new RowArena(kernels.heap, shape.dimension, Math.max(1024, state.rows));
    this.filters = new FilterCache(kernels);
    const rowBytes = this.arena.rowBytes;
    const salvage = state.salvage === true;
    this.bits = new RowFile(join(this.path, "bits.bin"), rowBytes, state.rows, state.sums?.["bits.bin"], salvage);
    this.values =
      shape.metric === "cosine"
        ? new RowFile(join(this.path, "values.f32"), shape.dimension * 4, state.rows, state.sums?.["values.f32"], salvage)
        : null;
    this.records = new RecordFile(
      join(this.path, "records.bin"),
      { rows: state.rows, bytes: state.recordBytes },
      state.sums?.["records.bin"],
      salvage,
    );
    if (state.rows > 0) {
      const ptr = this.arena.reserve(state.rows);
      this.bits.readRange(0, state.rows, kernels.heap.bytes().subarray(ptr, ptr + state.rows * rowBytes));
    }
    this.tombstones = state.tombstones ?? new RoaringBitmap32();
    this.index = state.index ?? new MetadataIndex();
    if (state.ivf !== undefined) {
      try {
        this.ivf = IvfIndex.load(kernels, join(this.path, state.ivf), shape.dimension, this.arena.words);
      } catch (err) {
        if (!salvage) throw err;
      }
    }
    const ids = this.records.ids;
    // Tombstones lost: a row an upsert of its id superseded is dead for certain; each id's last row may be live or deleted.
    const lastRows: number[] = [];
    if (state.tombstonesLost) {
      const last = new Map<string, number>();
      const unreadable = new Set(this.records.damagedRows.filter((d) => d.id === null).map((d) => d.row));
      for (let r = 0; r < ids.rows; r++) {
        if (unreadable.has(r)) continue;
        const id = ids.idOf(r);
        const before = last.get(id);
        if (before !== undefined) this.tombstones.add(before);
        last.set(id, r);
      }
      lastRows.push(...last.values());
    }
    // Rows in damaged blocks are dropped (tombstoned) before ids are mapped: never served as wrong values.
    const damaged = new Map<number, DamagedRow>();
    const mark = (row: number, file: string, id: string | null = null) => {
      const d = damaged.get(row) ?? { row, id: null, files: [], live: !this.tombstones.has(row) };
      d.files.push(file);
      if (file === "records.bin") d.id = id;
      damaged.set(row, d);
    };
    for (const r of this.bits.damagedRows) mark(r, "bits.bin");
    for (const r of this.values?.damagedRows ?? []) mark(r, "values.f32");
    for (const { row, id } of this.records.damagedRows) mark(row, "records.bin", id);
    for (const r of lastRows) mark(r, state.tombstonesFile ?? "tombstones");
    for (const d of damaged.values()) {
      if (d.id === null && !d.files.includes("records.bin")) d.id = ids.idOf(d.row);
      this.tombstones.add(d.row);
    }
    this.damaged = [...damaged.values()].sort((a, b) => a.row - b.row);
    for (let r = 0; r < ids.rows; r++) if (!this.tombstones.has(r)) ids.map(r);
    if (state.indexLost) {
      for (let r = 0; r < ids.rows; r++) {
        if (this.tombstones.has(r)) continue;
        const meta = this.records.metadata(r);
        if (Object.keys(meta).length > 0) this.index.add(r, meta);
      }
    }
  }

  /** Rows found damaged when the files were opened (already dropped); the collection rebuilds what the log still has. */
  readonly damaged: DamagedRow[];

  /** Block sums of the files as of now, for a checkpoint (taken with state()). */
  sums(): Partial<Record<SumFile, FileSums>> {
    return {
      "bits.bin": this.bits.sums.snapshot(),
      ...(this.values ? { "values.f32": this.values.sums.snapshot() } : {}),
      "records.bin": this.records.snapshotSums(),
    };
  }

  get rows(): number {
    return this.arena.count;
  }

  /** The live row of an id. */
  rowOf(id: string): number | undefined {
    return this.records.ids.rowOf(id);
  }

  idOf(row: number): string {
    return this.records.ids.idOf(row);
  }

  get liveCount(): number {
    return this.rows - this.tombstones.size;
  }

  /** Live rows as a bitmap (cached until the next change). */
  live(): RoaringBitmap32 {
    if (this.liveCache?.version !== this.version) {
      const all = new RoaringBitmap32();
      all.addRange(0, this.rows);
      all.andNotInPlace(this.tombstones);
      // Scattered tombstones leave run containers of many runs; bitmap containers intersect 4-10x faster.
      all.removeRunCompression();
      this.liveCache = { version: this.version, bitmap: all };
    }
    return this.liveCache.bitmap;
  }

  /**
   * Append rows. `vectors` holds ids.length float32 rows (cosine: encoded through the
   * rotation here, unless their `bits` are given, as compaction does) or packed bit rows
   * (hamming). A repeated id tombstones its old row. `payloads[i]`: row i's opaque bytes, null or absent for none.
   */
  append(
    rotation: Rotation | null,
    ids: readonly string[],
    vectors: Uint8Array,
    metas: readonly (Metadata | null)[],
    bits?: Uint8Array,
    payloads?: readonly (Uint8Array | null)[],
  ): void {
    const n = ids.length;
    if (n === 0) return;
    const first = this.rows;
    const ptr = this.arena.reserve(n);
    const heap = this.kernels.heap;
    if (rotation !== null) {
      if (vectors.byteOffset % 4 !== 0) vectors = vectors.slice(); // msgpack bins decode unaligned
      if (bits) heap.bytes().set(bits, ptr);
      else rotation.encode(new Float32Array(vectors.buffer, vectors.byteOffset, vectors.byteLength / 4), ptr);
      this.values!.append(vectors);
    } else {
      heap.bytes().set(vectors, ptr);
    }
    this.bits.append(heap.bytes().subarray(ptr, ptr + n * this.arena.rowBytes));
    this.records.append(
      ids,
      metas.map((m) => m ?? undefined),
      payloads,
    );
    for (let i = 0; i < n; i++) {
      const row = first + i;
      const old = this.records.ids.map(row, ids[i]!);
      if (old !== undefined) this.tombstones.add(old);
      const meta = metas[i];
      if (meta) this.index.add(row, meta);
    }
    this.version++;
  }

  /** Tombstone the rows of these ids; returns how many existed. */
  remove(ids: readonly string[]): number {
    let removed = 0;
    for (const id of ids) {
      const row = this.records.ids.unmap(id);
      if (row === undefined) continue;
      this.tombstones.add(row);
      removed++;
    }
    if (removed > 0) this.version++;
    return removed;
  }

  /** Rows [start, start + n) as stored: values (cosine) or bits, the packed bits, and the records. */
  copyRows(start: number, n: number): { vectors: Uint8Array; bits: Uint8Array } {
    const bytes = this.kernels.heap.bytes();
    const bits = bytes.slice(this.arena.rowPtr(start), this.arena.rowPtr(start + n));
    return { vectors: this.values ? (this.values.readRange(start, n) as Uint8Array) : bits, bits };
  }

  /** Tombstone these rows; an id is unmapped only while it still points at the row (a later upsert keeps its new row). */
  removeRows(rows: readonly number[]): void {
    for (const row of rows) {
      this.tombstones.add(row);
      const id = this.idOf(row);
      if (this.rowOf(id) === row) this.records.ids.unmap(id);
    }
    if (rows.length > 0) this.version++;
  }

  /** Stored float32 values of a row (cosine collections) or its packed bits (hamming). */
  vector(row: number): Float32Array | Uint8Array {
    if (this.values === null)
      return this.kernels.heap.bytes().slice(this.arena.rowPtr(row), this.arena.rowPtr(row) + Math.ceil(this.shape.dimension / 8));
    const out = new Float32Array(this.shape.dimension);
    this.values.readInto(row, new Uint8Array(out.buffer));
    return out;
  }

  metadata(row: number): Metadata {
    return this.records.metadata(row);
  }

  /** The row's metadata and payload (a fresh array, or null), read together. */
  stored(row: number): { metadata: Metadata; payload: Uint8Array | null } {
    return this.records.stored(row);
  }

  /** The row's payload (a fresh array), or null. */
  payload(row: number): Uint8Array | null {
    return this.records.payload(row);
  }

  /** fsync the files a checkpoint is about to refer to. */
  async sync(): Promise<void> {
    await Promise.all([this.bits.sync(), this.values?.sync(), this.records.sync()]);
  }

  state(tombstones: string, index: string, sums: string): PartitionState {
    return {
      namespace: this.namespace,
      dir: this.dir,
      rows: this.rows,
      recordBytes: this.records.bytes,
      tombstones,
      index,
      ...(this.ivf ? { ivf: IVF_FILE } : {}),
      sums,
    };
  }

  /** Close files and free the rows (once no scan holds them). */
  close(): void {
    this.bits.close();
    this.values?.close();
    this.records.close();
    this.filters.clear();
    this.arena.dispose();
    this.ivf?.dispose();
  }
}

export function checkVectorCount(bytes: Uint8Array, n: number, rowBytes: number, field: string): void {
  if (bytes.byteLength !== n * rowBytes)
    throw new SvcError("E_DIMENSION", `expected ${n} rows of ${rowBytes} bytes, got ${bytes.byteLength} bytes`, { field });
}
