import { LexicalCache } from "./record-lexical.js";
/** A tenant's records on this node: one Collection (its namespaces are the record namespaces) and the BM25 indexes kept by its writes. */
export class LocalRecordStore {
    collection;
    lexicon;
    constructor(collection) {
        this.collection = collection;
        this.lexicon = new LexicalCache(collection);
    }
    async upsert(ns, rows) {
        await this.collection.upsert(ns, rows.map((r) => ({ id: r.id, values: r.values, metadata: r.metadata, payload: r.payload })));
        this.lexicon.add(ns, rows);
        return {};
    }
    async delete(ns, ids) {
        const { deleted } = await this.collection.delete(ns, { ids });
        this.lexicon.remove(ns, ids);
        return { deleted };
    }
    async deleteAll(ns) {
        await this.collection.delete(ns, { deleteAll: true });
        this.lexicon.drop(ns);
        return {};
    }
    async move(from, to) {
        await this.collection.moveNamespace(from, to);
        this.lexicon.drop(from);
        this.lexicon.drop(to);
        return {};
    }
    async fetch(ns, ids) {
        return this.collection.fetch(ns, ids).map((v) => ({ id: v.id, metadata: v.metadata, ...(v.payload === null ? {} : { payload: v.payload }) }));
    }
    async search(ns, req) {
        const res = await this.collection.query(ns, { vector: req.vector, topK: req.topK, filter: req.filter, includeMetadata: true, includePayload: req.payload });
        return { matches: res.matches.map((m) => ({ id: m.id, score: m.score, metadata: m.metadata, ...(m.payload === undefined ? {} : { payload: m.payload }) })), scanned: res.scanned };
    }
    async order(ns, req) {
        return this.collection.order(ns, { field: "ts", filter: req.filter, limit: req.limit, includeMetadata: req.rows, includePayload: req.rows && (req.payload ?? true) });
    }
    async ids(ns, filter) {
        return this.collection.ids(ns, filter);
    }
    async count(ns, filter) {
        return this.collection.count(ns, filter);
    }
    async facet(ns, field, filter) {
        return this.collection.facet(ns, field, filter);
    }
    async range(ns, field, filter) {
        return this.collection.range(ns, field, filter);
    }
    async namespaces() {
        return this.collection.namespaces();
    }
    async lexical(ns, text, depth, pred, now) {
        return (await this.lexicon.get(ns)).search(text, depth, pred, now);
    }
    settled() {
        return this.collection.settled();
    }
    close() {
        return this.collection.close();
    }
}
//# sourceMappingURL=record-store.js.map