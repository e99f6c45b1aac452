import { f32Bytes, shardOf } from "./shards.js";
/** Records per `rows` request: a record's payload is at most 128 KiB (text + meta), usually far less; replies stay under max_payload for records of up to ~10 KiB. */
const ROWS_PER_REQUEST = 100;
const byId = (a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
export class ShardedRecordStore {
    ix;
    constructor(ix) {
        this.ix = ix;
    }
    async upsert(ns, rows) {
        const { seq } = await this.ix.upsert(ns, rows.map((r) => ({ id: r.id, values: r.values, metadata: r.metadata, payload: r.payload })));
        return { seq };
    }
    async delete(ns, ids) {
        return this.ix.delete(ns, { ids });
    }
    async deleteAll(ns) {
        const { seq } = await this.ix.delete(ns, { deleteAll: true });
        return { seq };
    }
    /** Every shard moves its part in one logged step (a reader may see some shards moved and others not, for the moment between their steps). */
    async move(from, to) {
        const replies = await Promise.all(Array.from({ length: this.ix.record.shards }, (_, s) => this.ix.call(s, "move", { from, to })));
        return { seq: Math.max(0, ...replies.map((r) => r.seq ?? 0)) };
    }
    async fetch(ns, ids, read = {}) {
        const groups = new Map();
        for (const id of ids) {
            const s = shardOf(id, this.ix.record.shards);
            const g = groups.get(s);
            if (g === undefined)
                groups.set(s, [id]);
            else
                g.push(id);
        }
        const calls = [];
        for (const [s, g] of groups)
            for (let i = 0; i < g.length; i += ROWS_PER_REQUEST)
                calls.push(this.ix.call(s, "rows", { ns, ids: g.slice(i, i + ROWS_PER_REQUEST) }, read.after));
        const found = new Map();
        for (const part of await Promise.all(calls))
            for (const v of part)
                found.set(v.id, v);
        return ids.map((id) => found.get(id)).filter((v) => v !== undefined);
    }
    /** Each shard's best topK (metadata only), merged by score; payloads fetched for the winners only (replies stay small). */
    async search(ns, req, read = {}) {
        const parts = await this.ix.callAll("search", { ns, vector: f32Bytes(req.vector), topK: req.topK, filter: req.filter }, read.after);
        const matches = parts.flatMap((p) => p.matches).sort((a, b) => b.score - a.score || byId(a, b)).slice(0, req.topK);
        const scanned = parts.reduce((n, p) => n + p.scanned, 0);
        if (!req.payload)
            return { matches, scanned };
        const rows = new Map((await this.fetch(ns, matches.map((m) => m.id), read)).map((v) => [v.id, v]));
        return { matches: matches.filter((m) => rows.has(m.id)).map((m) => ({ ...m, ...rows.get(m.id) })), scanned };
    }
    /** Each shard's first `limit` by ts descending, merged (the first `limit` of the union are among them); rows fetched for those only. */
    async order(ns, req, read = {}) {
        const parts = await this.ix.callAll("order", { ns, filter: req.filter, limit: req.limit, rows: req.rows && req.payload === false }, read.after);
        const top = parts.flat().sort((a, b) => b.value - a.value).slice(0, req.limit);
        if (!req.rows || req.payload === false)
            return top;
        const rows = new Map((await this.fetch(ns, top.map((r) => r.id), read)).map((v) => [v.id, v]));
        return top.filter((r) => rows.has(r.id)).map((r) => ({ id: r.id, value: r.value, metadata: rows.get(r.id).metadata, ...(rows.get(r.id).payload === undefined ? {} : { payload: rows.get(r.id).payload }) }));
    }
    async ids(ns, filter, read = {}) {
        return (await this.ix.callAll("ids", { ns, filter }, read.after)).flat();
    }
    async count(ns, filter, read = {}) {
        return this.ix.count(ns, filter, read);
    }
    async facet(ns, field, filter, read = {}) {
        const out = Object.create(null);
        for (const part of await this.ix.callAll("facet", { ns, field, filter }, read.after))
            for (const [k, n] of Object.entries(part))
                out[k] = (out[k] ?? 0) + n;
        return { ...out };
    }
    async range(ns, field, filter, read = {}) {
        const parts = (await this.ix.callAll("range", { ns, field, filter }, read.after)).filter((r) => r !== null);
        return parts.length === 0 ? null : { min: Math.min(...parts.map((r) => r.min)), max: Math.max(...parts.map((r) => r.max)) };
    }
    async namespaces(read = {}) {
        return [...new Set((await this.ix.callAll("namespaces", {}, read.after)).flat())].sort();
    }
    /** Two rounds: the shards' statistics of the query's terms, summed; then each shard's best `depth` scored with them, merged by score (ties by id). */
    async lexical(ns, text, depth, pred, now, read = {}) {
        const stats = await this.ix.callAll("lexStats", { ns, text }, read.after);
        const corpus = { n: 0, totalLength: 0, df: Object.create(null) };
        for (const s of stats) {
            corpus.n += s.n;
            corpus.totalLength += s.totalLength;
            for (const [t, df] of Object.entries(s.df))
                corpus.df[t] = (corpus.df[t] ?? 0) + df;
        }
        if (corpus.n === 0)
            return [];
        const parts = await this.ix.callAll("lexSearch", { ns, text, depth, pred, now, corpus }, read.after);
        return parts.flat().sort((a, b) => b.score - a.score || byId(a, b)).slice(0, depth);
    }
    /** Reads made with `after` (a write's seq) see that write; without, whatever the replica asked has applied (cluster mode's contract, as for indexes). */
    async settled() { }
    async close() { }
}
/** RecordServiceOptions.stores of a cluster node: each tenant's records entry of the catalog (created on first write), `dimension` the encoder's. */
export function recordStores(catalog, dimension) {
    return async (tenant, create) => {
        const ix = await catalog.recordShards(tenant, dimension, create);
        return ix === null ? null : new ShardedRecordStore(ix);
    };
}
//# sourceMappingURL=sharded-records.js.map