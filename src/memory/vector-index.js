/**
 * Reserved metadata field: a vector whose `svc_expires_at` (unix ms) is <= now is expired. Queries
 * and fetches leave it out at once; the sweeper deletes it within SWEEP_MS. The LLM-client
 * recorder sets it from `ttl_days`; any writer may.
 */
export const EXPIRES_AT = "svc_expires_at";
/**
 * `filter` narrowed to vectors not expired at `now`, when the namespace holds any `svc_expires_at`
 * (else unchanged, so a namespace without expiring vectors keeps its unfiltered plan). The user's
 * keys stay where they were, so their error paths (filter.<field>) do not change.
 */
export function liveFilter(c, namespace, filter, now) {
    if (filter !== undefined && (typeof filter !== "object" || filter === null || Array.isArray(filter)))
        return filter; // the collection names the error
    if (c.count(namespace, { [EXPIRES_AT]: { $exists: true } }) === 0)
        return filter;
    const live = { $or: [{ [EXPIRES_AT]: { $exists: false } }, { [EXPIRES_AT]: { $gt: now } }] };
    const f = (filter ?? {});
    return { ...f, $and: Array.isArray(f.$and) ? [...f.$and, live] : f.$and === undefined ? [live] : [f.$and, live] };
}
/** Is a stored vector with this metadata expired at `now`? */
export function expired(metadata, now) {
    const exp = metadata?.[EXPIRES_AT];
    return typeof exp === "number" && exp <= now;
}
/** A VectorIndex over one local Collection (one node's index, or one shard's replica in cluster mode), ranking by the index's metric. */
export class CollectionIndex {
    collection;
    now;
    metric;
    constructor(collection, now = Date.now, metric = "cosine") {
        this.collection = collection;
        this.now = now;
        this.metric = metric;
    }
    upsert(namespace, vectors) {
        return this.collection.upsert(namespace, vectors);
    }
    delete(namespace, req) {
        return this.collection.delete(namespace, req);
    }
    async update(namespace, req) {
        await this.collection.update(namespace, req);
        return {};
    }
    updateWhere(namespace, req) {
        return this.collection.updateWhere(namespace, { ...req, filter: liveFilter(this.collection, namespace, req.filter, this.now()) });
    }
    list(namespace, req) {
        return this.collection.list(namespace, { ...req, filter: liveFilter(this.collection, namespace, req.filter, this.now()) });
    }
    fetch(namespace, ids) {
        const now = this.now();
        return this.collection.fetch(namespace, ids).filter((v) => !expired(v.metadata, now));
    }
    query(namespace, req) {
        return this.collection.query(namespace, { ...req, scoring: this.metric, filter: liveFilter(this.collection, namespace, req.filter, this.now()) });
    }
    stats(filter) {
        return { ...this.collection.stats(filter), metric: this.metric };
    }
    count(namespace, filter) {
        return this.collection.count(namespace, filter);
    }
}
//# sourceMappingURL=vector-index.js.map