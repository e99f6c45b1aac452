/** @module reader — the read path of a collection, over the partitions' visible state only: fetch, query, queryBatch, stats, order, facet, range, ids, count, namespaces, indexStats. */
import { SvcError } from "../errors.js";
import { parseFilter } from "./filter/parse.js";
import { checkBits, checkField, checkTopK, checkValues, MAX_ORDER_LIMIT } from "./input-checks.js";
import { compareIds, idsAfter } from "./id-order.js";
import { checkSparse, sparseDot, sparseJson, sparseOf } from "./sparse.js";
import { search, searchBatch, TOMBSTONE_SKIP_MAX } from "./search.js";
/** A filtered list walks the cached sorted ids when the filter keeps at least 1/LIST_WALK_FRACTION of the live rows. */
const LIST_WALK_FRACTION = 8;
/** Reads only: a query pins the partition it started on, so a swap or retire meanwhile does not close it under the scan. */
export class Reader {
    s;
    /** Each partition's live ids sorted (id-order.ts), as of its `version`: paging through a namespace sorts once while it is not written. */
    sortedIds = new WeakMap();
    constructor(s) {
        this.s = s;
    }
    fetch(namespace, ids) {
        const p = this.s.partitions.get(namespace);
        const out = [];
        if (p === undefined)
            return out;
        for (const id of ids) {
            const row = p.rowOf(id);
            if (row !== undefined)
                out.push({ id, values: p.vector(row), metadata: p.metadata(row), payload: p.payload(row) });
        }
        return out;
    }
    /** `scanned`: the rows the query had to consider (the namespace's live rows, those its filter matched, or about those an index probe compared, at most the live rows); what metering charges. */
    async query(namespace, req) {
        const k = req.topK;
        checkTopK(k);
        const filter = parseFilter(req.filter);
        const p = this.s.partitions.get(namespace);
        if (req.sparseVector !== undefined)
            return this.hybrid(p, namespace, req, filter);
        let vector;
        if (req.id !== undefined) {
            const row = p?.rowOf(req.id);
            if (row === undefined)
                throw new SvcError("E_NOT_FOUND", `no vector '${req.id}' in namespace '${namespace}'`, { field: "id" });
            vector = p.vector(row);
        }
        else if (this.s.rotation)
            vector = checkValues(req.vector, "vector", this.s.dimension);
        else
            vector = checkBits(req.bits, "bits", this.s.dimension);
        if (p === undefined || p.liveCount === 0)
            return { matches: [], plan: "empty", scanned: 0 };
        const heap = this.s.kernels.heap;
        const bits = heap.alloc(this.s.rowBytes);
        const unitPtr = this.s.rotation ? heap.alloc(this.s.dimension * 4) : 0;
        let unit = null;
        let rotated = null;
        let norm = 0;
        try {
            if (this.s.rotation) {
                this.s.rotation.encode(vector, bits, unitPtr);
                rotated = this.s.rotation.lastRotated();
                unit = heap.f32(unitPtr, this.s.dimension).slice();
                for (const x of vector)
                    norm += x * x;
                norm = Math.sqrt(norm);
            }
            else
                heap.bytes().set(vector, bits);
            p.pins++;
            try {
                const res = await search(this.s.kernels, this.s.pool, p, { bits, unit, rotated, norm, scoring: req.scoring, k, filter, candidates: req.candidates, rescore: req.rescore, exact: req.exact === true, probe: req.probe });
                const matches = res.hits.map(({ row, score }) => {
                    const match = { id: p.idOf(row), score };
                    if (req.includeValues) {
                        const v = p.vector(row);
                        match.values = v instanceof Float32Array ? Array.from(v) : v;
                    }
                    if (req.includeMetadata)
                        match.metadata = p.metadata(row);
                    if (req.includePayload) {
                        const payload = p.payload(row);
                        if (payload !== null)
                            match.payload = payload;
                    }
                    return match;
                });
                // An index probe's estimate is capped at the live rows: never more than an exact scan (the wallet reserves that bound).
                return { matches, plan: res.plan, scanned: Math.min(res.scanned ?? res.matched ?? p.liveCount, p.liveCount), matched: res.matched, timings: res.timings, ...(res.probed === undefined ? {} : { probed: res.probed }) };
            }
            finally {
                p.pins--;
                this.s.closeRetired();
            }
        }
        finally {
            heap.release(bits);
            if (unitPtr)
                heap.release(unitPtr);
        }
    }
    /** An exact scan scoring dense cosine (when a vector or id is given) + sparse dot over the live rows matching `filter` (QueryInput.sparseVector). */
    hybrid(p, namespace, req, filter) {
        if (!this.s.rotation)
            throw new SvcError("E_BAD_REQUEST", "sparse queries need a float (cosine) collection", { field: "sparseVector" });
        const sparse = checkSparse(req.sparseVector, "sparseVector");
        let dense = null;
        if (req.id !== undefined) {
            const row = p?.rowOf(req.id);
            if (row === undefined)
                throw new SvcError("E_NOT_FOUND", `no vector '${req.id}' in namespace '${namespace}'`, { field: "id" });
            dense = p.vector(row);
        }
        else if (req.vector !== undefined)
            dense = checkValues(req.vector, "vector", this.s.dimension);
        if (p === undefined || p.liveCount === 0)
            return { matches: [], plan: "empty", scanned: 0 };
        const qNorm = dense === null ? 0 : Math.sqrt(dotF32(dense, dense));
        const rows = (filter === null ? p.live() : p.index.evaluate(filter, p.live())).toUint32Array();
        const scored = [];
        for (const row of rows) {
            let score = sparseDotOr0(sparse, sparseOf(p.payload(row)));
            if (dense !== null && qNorm > 0) {
                const v = p.vector(row);
                const n = Math.sqrt(dotF32(v, v));
                if (n > 0)
                    score += dotF32(dense, v) / (qNorm * n);
            }
            scored.push({ row, id: p.idOf(row), score });
        }
        scored.sort((a, b) => b.score - a.score || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
        const matches = scored.slice(0, req.topK).map(({ row, id, score }) => {
            const match = { id, score };
            if (req.includeValues) {
                match.values = Array.from(p.vector(row));
                const s = sparseOf(p.payload(row));
                if (s !== null)
                    match.sparseValues = sparseJson(s);
            }
            if (req.includeMetadata)
                match.metadata = p.metadata(row);
            return match;
        });
        return { matches, plan: "hybrid", scanned: rows.length };
    }
    /**
     * Top-k of many packed-bit queries at once (hamming collections, no filter): the
     * throughput path. With an index the probes run on the pool's workers (each takes a share
     * of the queries); without one, or with `exact`, one blocked exact scan. Matches carry id
     * and score only.
     */
    async queryBatch(namespace, req) {
        if (this.s.rotation)
            throw new SvcError("E_BAD_REQUEST", "queryBatch takes packed bits: it serves hamming collections", { field: "bits" });
        const k = req.topK;
        checkTopK(k);
        if (!Array.isArray(req.bits) || req.bits.length === 0)
            throw new SvcError("E_BAD_REQUEST", "bits must be a non-empty array of packed rows", { field: "bits" });
        const rowBytes = this.s.rowBytes;
        const block = new Uint8Array(req.bits.length * rowBytes);
        req.bits.forEach((b, i) => block.set(checkBits(b, `bits[${i}]`, this.s.dimension), i * rowBytes));
        const p = this.s.partitions.get(namespace);
        if (p === undefined || p.liveCount === 0)
            return { matches: req.bits.map(() => []), plan: "empty" };
        if (p.tombstones.size > TOMBSTONE_SKIP_MAX) {
            const each = await Promise.all(req.bits.map((bits) => this.query(namespace, { bits, topK: k, exact: req.exact, probe: req.probe })));
            return { matches: each.map((r) => r.matches), plan: each[0].plan };
        }
        const ptr = this.s.kernels.heap.put(block);
        p.pins++;
        try {
            const res = await searchBatch(this.s.pool, p, ptr, req.bits.length, k, { exact: req.exact === true, probe: req.probe });
            return { matches: res.hits.map((hits) => hits.map(({ row, score }) => ({ id: p.idOf(row), score }))), plan: res.plan };
        }
        finally {
            p.pins--;
            this.s.kernels.heap.release(ptr);
            this.s.closeRetired();
        }
    }
    /** Per-namespace live counts; with a filter, only the vectors it matches (namespaces with none are left out). */
    stats(filter) {
        const f = parseFilter(filter);
        // no prototype: a namespace named "__proto__" or "constructor" is a key like any other
        const namespaces = Object.create(null);
        let total = 0;
        for (const [ns, p] of this.s.partitions) {
            const count = f === null ? p.liveCount : p.index.evaluate(f, p.live()).size;
            if (count === 0)
                continue;
            namespaces[ns] = { vectorCount: count };
            total += count;
        }
        return { dimension: this.s.dimension, metric: this.s.config.metric, namespaces, totalVectorCount: total };
    }
    /**
     * Live rows (matching `filter`) holding a number in `req.field`, by that number: largest
     * first unless `desc` is false; ties go to the later-appended row first (descending) or the
     * earlier one (ascending). At most `limit`. Walks the field's sorted numeric column from
     * one end testing membership in the filter's rows, so no per-call sort of the namespace.
     */
    order(namespace, req) {
        const limit = req.limit;
        if (!Number.isInteger(limit) || limit < 1 || limit > MAX_ORDER_LIMIT)
            throw new SvcError("E_BAD_REQUEST", `limit must be an integer in [1, ${MAX_ORDER_LIMIT}], got ${limit}`, { field: "limit" });
        checkField(req.field, "field");
        const desc = req.desc ?? true;
        if (typeof desc !== "boolean")
            throw new SvcError("E_BAD_REQUEST", "desc must be a boolean", { field: "desc" });
        const filter = parseFilter(req.filter);
        const p = this.s.partitions.get(namespace);
        if (p === undefined)
            return [];
        const universe = filter === null ? p.live() : p.index.evaluate(filter, p.live());
        const { rows, values } = p.index.ordered(req.field, universe, limit, desc);
        return Array.from(rows, (row, i) => {
            const out = { id: p.idOf(row), value: values[i] };
            if (req.includeMetadata)
                out.metadata = p.metadata(row);
            if (req.includePayload) {
                const payload = p.payload(row);
                if (payload !== null)
                    out.payload = payload;
            }
            return out;
        });
    }
    /** Live rows (matching `filter`) per string value of `field`; a list of strings counts once per distinct value. No prototype. */
    facet(namespace, field, filter) {
        checkField(field, "field");
        const f = parseFilter(filter);
        const p = this.s.partitions.get(namespace);
        if (p === undefined)
            return Object.create(null);
        return p.index.facet(field, f === null ? p.live() : p.index.evaluate(f, p.live()));
    }
    /** Smallest and largest number in `field` over the live rows (matching `filter`) holding one; null when none does. */
    range(namespace, field, filter) {
        checkField(field, "field");
        const f = parseFilter(filter);
        const p = this.s.partitions.get(namespace);
        if (p === undefined)
            return null;
        const universe = f === null ? p.live() : p.index.evaluate(f, p.live());
        const low = p.index.ordered(field, universe, 1, false);
        if (low.rows.length === 0)
            return null;
        return { min: low.values[0], max: p.index.ordered(field, universe, 1, true).values[0] };
    }
    /** Ids of the namespace's live rows matching `filter`, in row order. */
    ids(namespace, filter) {
        const f = parseFilter(filter);
        const p = this.s.partitions.get(namespace);
        if (p === undefined)
            return [];
        const rows = f === null ? p.live() : p.index.evaluate(f, p.live());
        return Array.from(rows.toUint32Array(), (row) => p.idOf(row));
    }
    /**
     * One page of the namespace's live ids (matching `filter`) in id order (code points, which is
     * UTF-8 byte order: Pinecone's "C" collation), those starting with `prefix` and after `after`.
     * Pages come from a sorted copy of the ids cached until the partition changes (a filter keeping at
     * least 1/LIST_WALK_FRACTION of the rows skips the others while walking it); a narrower filter sorts its matches.
     */
    list(namespace, req) {
        const f = parseFilter(req.filter);
        const p = this.s.partitions.get(namespace);
        if (p === undefined)
            return { ids: [], more: false };
        if (f === null)
            return idsAfter(this.sorted(p), req);
        const rows = p.index.evaluate(f, p.live());
        // A broad filter walks the cached sorted ids (about 1/selectivity ids per one kept); a narrow one sorts its matches.
        if (rows.size * LIST_WALK_FRACTION < p.liveCount)
            return idsAfter(Array.from(rows.toUint32Array(), (row) => p.idOf(row)).sort(compareIds), req);
        return idsAfter(this.sorted(p), req, (id) => rows.has(p.rowOf(id)));
    }
    /** The partition's live ids sorted by compareIds, cached until its next change. */
    sorted(p) {
        let cached = this.sortedIds.get(p);
        if (cached?.version !== p.version) {
            cached = { version: p.version, ids: Array.from(p.live().toUint32Array(), (row) => p.idOf(row)).sort(compareIds) };
            this.sortedIds.set(p, cached);
        }
        return cached.ids;
    }
    /** Live rows of the namespace (matching `filter`). */
    count(namespace, filter) {
        const f = parseFilter(filter);
        const p = this.s.partitions.get(namespace);
        if (p === undefined)
            return 0;
        return f === null ? p.liveCount : p.index.evaluate(f, p.live()).size;
    }
    /** Namespaces holding live rows, sorted. */
    namespaces() {
        const out = [];
        for (const [ns, p] of this.s.partitions)
            if (p.liveCount > 0)
                out.push(ns);
        return out.sort();
    }
    /** The namespace's index, if any: lists, indexed rows and the delta of rows written since. */
    indexStats(namespace) {
        const p = this.s.partitions.get(namespace);
        if (p?.ivf == null)
            return null;
        return { lists: p.ivf.lists, indexedRows: p.ivf.indexedRows, deltaRows: p.rows - p.ivf.indexedRows, bytes: p.ivf.bytes, probe: p.ivf.calibrated, filterFactor: p.ivf.filterFactor };
    }
}
function dotF32(a, b) {
    let s = 0;
    for (let i = 0; i < a.length; i++)
        s += a[i] * b[i];
    return s;
}
function sparseDotOr0(q, row) {
    return row === null ? 0 : sparseDot(q, row);
}
//# sourceMappingURL=reader.js.map