/**
 * @module kv-mirror — a node's in-memory copy of a NATS KV bucket (API keys, the index catalog, node
 * registrations, the cluster settings), kept current by tailing the bucket's stream (stream-tail.ts:
 * an ordered consumer from each key's last value, replaced after a server loss; a plain `kv.watch()`
 * was seen stuck for good after a nats-server was killed), so reads stay synchronous and see another
 * node's writes within milliseconds. A node's own writes are put into the copy as soon as the bucket
 * acknowledges them (`set`, `remove`); the copy never moves an entry back to an older revision.
 */
import { jetstreamManager } from "@nats-io/jetstream";
import { StreamTail } from "./stream-tail.js";
export class KvMirror {
    kv;
    opts;
    map = new Map();
    /** Highest revision seen per key, deletes included (a delete is newer than the value it removes). */
    seen = new Map();
    tail = null;
    changes = 0;
    constructor(kv, opts) {
        this.kv = kv;
        this.opts = opts;
    }
    /** Mirror `kv` (the bucket named `bucket`, reached through `nc`); resolves once every value the bucket held at the call is in the copy. */
    static async open(nc, kv, bucket, opts) {
        const m = new KvMirror(kv, opts);
        const stream = `KV_${bucket}`;
        const prefix = `$KV.${bucket}.`;
        const { state } = await (await jetstreamManager(nc)).streams.info(stream);
        const end = state.messages === 0 ? 0 : state.last_seq;
        m.tail = new StreamTail(nc, {
            stream,
            what: `KV bucket ${bucket}`,
            start: "last-per-subject",
            catchUp: end,
            onMessage: (msg) => {
                const op = msg.headers?.get("KV-Operation");
                const key = msg.subject.slice(prefix.length);
                const before = m.map.get(key);
                if (m.apply(key, op === "DEL" || op === "PURGE" ? null : msg.data, msg.seq, msg.time.getTime()))
                    m.opts.onChange?.(key, m.map.get(key), before);
            },
        });
        try {
            await m.tail.reached(end);
        }
        catch (e) {
            await m.tail.stop();
            throw e;
        }
        return m;
    }
    get(key) {
        return this.map.get(key);
    }
    entries() {
        return this.map.entries();
    }
    values() {
        return this.map.values();
    }
    get size() {
        return this.map.size;
    }
    /** Counts the changes of the copy: equal values mean nothing changed in between. */
    get version() {
        return this.changes;
    }
    /** Record a write this node made (or read) at `revision`; false (ignored) when the copy already has a newer one. */
    set(key, value, revision) {
        if ((this.seen.get(key) ?? 0) >= revision)
            return false;
        this.seen.set(key, revision);
        this.map.set(key, { value, revision, time: Date.now() });
        this.changes++;
        return true;
    }
    /** Record a delete this node made of the entry at `revision`; false when the copy already has something newer or nothing. */
    remove(key, revision) {
        if ((this.seen.get(key) ?? 0) > revision || !this.map.has(key))
            return false;
        this.seen.set(key, revision);
        this.map.delete(key);
        this.changes++;
        return true;
    }
    /** The key's current entry read from the bucket (not the copy), put into the copy; null when absent. */
    async fetch(key) {
        const e = await this.kv.get(key);
        if (e === null || e.operation !== "PUT") {
            if (e !== null)
                this.apply(key, null, e.revision, e.created.getTime());
            return null;
        }
        this.apply(key, e.value, e.revision, e.created.getTime());
        return this.map.get(key) ?? null;
    }
    async stop() {
        await this.tail?.stop();
    }
    /** Take a value (null: deleted) at `revision` unless the copy has seen one as new; true when the copy changed. */
    apply(key, value, revision, time) {
        if ((this.seen.get(key) ?? 0) >= revision)
            return false;
        this.seen.set(key, revision);
        const v = value === null ? null : this.opts.parse(key, value);
        if (v === null) {
            if (!this.map.delete(key))
                return false;
        }
        else
            this.map.set(key, { value: v, revision, time });
        this.changes++;
        return true;
    }
}
//# sourceMappingURL=kv-mirror.js.map