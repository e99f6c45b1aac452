/** @module partition — one namespace of a collection: bit rows in shared memory, values/records (with payloads) on disk, ids, tombstones, metadata index. */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { SvcError } from "../errors.js";
import { RowArena } from "../kernels/row-arena.js";
import { MetadataIndex } from "./filter/metadata-index.js";
import { IvfIndex } from "./ivf.js";
import { RecordFile } from "./record-file.js";
import { RoaringBitmap32 } from "./roaring.js";
import { RowFile } from "./row-file.js";
/** File name of a partition's approximate index. */
export const IVF_FILE = "ivf.bin";
/**
 * Rows are numbered in append order and never renumbered inside a partition; an upsert of
 * an existing id appends a new row and tombstones the old one. Compaction builds a fresh
 * partition from the live rows. Files: bits.bin (packed rows), values.f32 (cosine only),
 * records.bin (ids, metadata, payloads).
 */
export class Partition {
    kernels;
    /** Changed only by a namespace move (the files stay where they are: directories are named by generation). */
    namespace;
    dir;
    path;
    shape;
    arena;
    bits;
    values;
    records;
    tombstones;
    index;
    /** Queries and checkpoints in flight; a retired partition closes when this is 0. */
    pins = 0;
    /** The approximate index (ivf.ts) over rows [0, ivf.indexedRows), or null: set by the clustering compaction that built this generation. */
    ivf = null;
    /** Bumped on every change of rows or tombstones; caches below key on it. */
    version = 0;
    liveCache = null;
    constructor(kernels, root, shape, state) {
        this.kernels = kernels;
        this.namespace = state.namespace;
        this.dir = state.dir;
        this.path = join(root, state.dir);
        this.shape = shape;
        mkdirSync(this.path, { recursive: true });
        this.arena = new RowArena(kernels.heap, shape.dimension, Math.max(1024, state.rows));
        const rowBytes = this.arena.rowBytes;
        const salvage = state.salvage === true;
        this.bits = new RowFile(join(this.path, "bits.bin"), rowBytes, state.rows, state.sums?.["bits.bin"], salvage);
        this.values = shape.metric === "cosine" ? new RowFile(join(this.path, "values.f32"), shape.dimension * 4, state.rows, state.sums?.["values.f32"], salvage) : null;
        this.records = new RecordFile(join(this.path, "records.bin"), { rows: state.rows, bytes: state.recordBytes }, state.sums?.["records.bin"], salvage);
        if (state.rows > 0) {
            const ptr = this.arena.reserve(state.rows);
            this.bits.readRange(0, state.rows, kernels.heap.bytes().subarray(ptr, ptr + state.rows * rowBytes));
        }
        this.tombstones = state.tombstones ?? new RoaringBitmap32();
        this.index = state.index ?? new MetadataIndex();
        if (state.ivf !== undefined) {
            try {
                this.ivf = IvfIndex.load(kernels, join(this.path, state.ivf), shape.dimension, this.arena.words);
            }
            catch (err) {
                if (!salvage)
                    throw err;
            }
        }
        const ids = this.records.ids;
        // Tombstones lost: a row an upsert of its id superseded is dead for certain; each id's last row may be live or deleted.
        const lastRows = [];
        if (state.tombstonesLost) {
            const last = new Map();
            const unreadable = new Set(this.records.damagedRows.filter((d) => d.id === null).map((d) => d.row));
            for (let r = 0; r < ids.rows; r++) {
                if (unreadable.has(r))
                    continue;
                const id = ids.idOf(r);
                const before = last.get(id);
                if (before !== undefined)
                    this.tombstones.add(before);
                last.set(id, r);
            }
            lastRows.push(...last.values());
        }
        // Rows in damaged blocks are dropped (tombstoned) before ids are mapped: never served as wrong values.
        const damaged = new Map();
        const mark = (row, file, id = null) => {
            const d = damaged.get(row) ?? { row, id: null, files: [], live: !this.tombstones.has(row) };
            d.files.push(file);
            if (file === "records.bin")
                d.id = id;
            damaged.set(row, d);
        };
        for (const r of this.bits.damagedRows)
            mark(r, "bits.bin");
        for (const r of this.values?.damagedRows ?? [])
            mark(r, "values.f32");
        for (const { row, id } of this.records.damagedRows)
            mark(row, "records.bin", id);
        for (const r of lastRows)
            mark(r, state.tombstonesFile ?? "tombstones");
        for (const d of damaged.values()) {
            if (d.id === null && !d.files.includes("records.bin"))
                d.id = ids.idOf(d.row);
            this.tombstones.add(d.row);
        }
        this.damaged = [...damaged.values()].sort((a, b) => a.row - b.row);
        for (let r = 0; r < ids.rows; r++)
            if (!this.tombstones.has(r))
                ids.map(r);
        if (state.indexLost) {
            for (let r = 0; r < ids.rows; r++) {
                if (this.tombstones.has(r))
                    continue;
                const meta = this.records.metadata(r);
                if (Object.keys(meta).length > 0)
                    this.index.add(r, meta);
            }
        }
    }
    /** Rows found damaged when the files were opened (already dropped); the collection rebuilds what the log still has. */
    damaged;
    /** Block sums of the files as of now, for a checkpoint (taken with state()). */
    sums() {
        return { "bits.bin": this.bits.sums.snapshot(), ...(this.values ? { "values.f32": this.values.sums.snapshot() } : {}), "records.bin": this.records.snapshotSums() };
    }
    get rows() {
        return this.arena.count;
    }
    /** The live row of an id. */
    rowOf(id) {
        return this.records.ids.rowOf(id);
    }
    idOf(row) {
        return this.records.ids.idOf(row);
    }
    get liveCount() {
        return this.rows - this.tombstones.size;
    }
    /** Live rows as a bitmap (cached until the next change). */
    live() {
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
    append(rotation, ids, vectors, metas, bits, payloads) {
        const n = ids.length;
        if (n === 0)
            return;
        const first = this.rows;
        const ptr = this.arena.reserve(n);
        const heap = this.kernels.heap;
        if (rotation !== null) {
            if (vectors.byteOffset % 4 !== 0)
                vectors = vectors.slice(); // msgpack bins decode unaligned
            if (bits)
                heap.bytes().set(bits, ptr);
            else
                rotation.encode(new Float32Array(vectors.buffer, vectors.byteOffset, vectors.byteLength / 4), ptr);
            this.values.append(vectors);
        }
        else {
            heap.bytes().set(vectors, ptr);
        }
        this.bits.append(heap.bytes().subarray(ptr, ptr + n * this.arena.rowBytes));
        this.records.append(ids, metas.map((m) => m ?? undefined), payloads);
        for (let i = 0; i < n; i++) {
            const row = first + i;
            const old = this.records.ids.map(row, ids[i]);
            if (old !== undefined)
                this.tombstones.add(old);
            const meta = metas[i];
            if (meta)
                this.index.add(row, meta);
        }
        this.version++;
    }
    /** Tombstone the rows of these ids; returns how many existed. */
    remove(ids) {
        let removed = 0;
        for (const id of ids) {
            const row = this.records.ids.unmap(id);
            if (row === undefined)
                continue;
            this.tombstones.add(row);
            removed++;
        }
        if (removed > 0)
            this.version++;
        return removed;
    }
    /** Rows [start, start + n) as stored: values (cosine) or bits, the packed bits, and the records. */
    copyRows(start, n) {
        const bytes = this.kernels.heap.bytes();
        const bits = bytes.slice(this.arena.rowPtr(start), this.arena.rowPtr(start + n));
        return { vectors: this.values ? this.values.readRange(start, n) : bits, bits };
    }
    /** Tombstone these rows; an id is unmapped only while it still points at the row (a later upsert keeps its new row). */
    removeRows(rows) {
        for (const row of rows) {
            this.tombstones.add(row);
            const id = this.idOf(row);
            if (this.rowOf(id) === row)
                this.records.ids.unmap(id);
        }
        if (rows.length > 0)
            this.version++;
    }
    /** Stored float32 values of a row (cosine collections) or its packed bits (hamming). */
    vector(row) {
        if (this.values === null)
            return this.kernels.heap.bytes().slice(this.arena.rowPtr(row), this.arena.rowPtr(row) + Math.ceil(this.shape.dimension / 8));
        const out = new Float32Array(this.shape.dimension);
        this.values.readInto(row, new Uint8Array(out.buffer));
        return out;
    }
    metadata(row) {
        return this.records.metadata(row);
    }
    /** The row's payload (a fresh array), or null. */
    payload(row) {
        return this.records.payload(row);
    }
    /** fsync the files a checkpoint is about to refer to. */
    async sync() {
        await Promise.all([this.bits.sync(), this.values?.sync(), this.records.sync()]);
    }
    state(tombstones, index, sums) {
        return { namespace: this.namespace, dir: this.dir, rows: this.rows, recordBytes: this.records.bytes, tombstones, index, ...(this.ivf ? { ivf: IVF_FILE } : {}), sums };
    }
    /** Close files and free the rows (once no scan holds them). */
    close() {
        this.bits.close();
        this.values?.close();
        this.records.close();
        this.arena.dispose();
        this.ivf?.dispose();
    }
}
export function checkVectorCount(bytes, n, rowBytes, field) {
    if (bytes.byteLength !== n * rowBytes)
        throw new SvcError("E_DIMENSION", `expected ${n} rows of ${rowBytes} bytes, got ${bytes.byteLength} bytes`, { field });
}
//# sourceMappingURL=partition.js.map