/** @module log-history — the last logged state of chosen ids (or of every id), from the WAL frames a checkpoint already covers: what rebuilds rows found damaged on open. */
import { mergeMetadata } from "./filter/metadata.js";
import { OP } from "./ops.js";
/**
 * Follows logged ops in order for a set of ids: upserts set a row, updates change one the
 * history holds, deletes, deleteAll and moves act as they do on the collection. An id whose
 * upsert is no longer in the log (its segment was dropped) is simply absent.
 */
export class LogHistory {
    ids;
    rowBytes;
    rows = new Map();
    /** Per namespace, followed ids whose last logged op removed them (delete, deleteAll, replaced by a move). */
    gone = new Map();
    /** `ids` null: follow every id (a damaged record head hid which ids the damaged rows held). */
    constructor(ids, rowBytes) {
        this.ids = ids;
        this.rowBytes = rowBytes;
    }
    take(op) {
        switch (op.type) {
            case OP.upsert: {
                const { ns, ids, v, m, p } = op.body;
                ids.forEach((id, i) => {
                    if (this.ids !== null && !this.ids.has(id))
                        return;
                    this.gone.get(ns)?.delete(id);
                    this.ns(ns).set(id, { v: v.slice(i * this.rowBytes, (i + 1) * this.rowBytes), m: m[i] ?? null, p: p?.[i] ?? null });
                });
                return;
            }
            case OP.update: {
                const row = this.rows.get(op.body.ns)?.get(op.body.id);
                if (row === undefined)
                    return;
                const { v, m, p } = op.body;
                if (v !== null)
                    row.v = v.slice();
                if (m !== null)
                    row.m = mergeMetadata(row.m ?? {}, m);
                if (p !== undefined)
                    row.p = p;
                return;
            }
            case OP.delete:
                for (const id of op.body.ids)
                    if (this.rows.get(op.body.ns)?.delete(id))
                        this.goneIn(op.body.ns).add(id);
                return;
            case OP.deleteAll:
                for (const id of this.rows.get(op.body.ns)?.keys() ?? [])
                    this.goneIn(op.body.ns).add(id);
                this.rows.delete(op.body.ns);
                return;
            case OP.move: {
                const from = this.rows.get(op.body.from);
                for (const id of this.rows.get(op.body.to)?.keys() ?? [])
                    if (!from?.has(id))
                        this.goneIn(op.body.to).add(id);
                this.rows.delete(op.body.to);
                this.rows.delete(op.body.from);
                if (from !== undefined)
                    this.rows.set(op.body.to, from);
                return;
            }
        }
    }
    get(ns, id) {
        return this.rows.get(ns)?.get(id);
    }
    /** Whether the log's last op on this id (after an upsert it holds) removed it: a row of it is dead, nothing is lost. */
    deleted(ns, id) {
        return this.gone.get(ns)?.has(id) ?? false;
    }
    goneIn(ns) {
        let s = this.gone.get(ns);
        if (s === undefined)
            this.gone.set(ns, (s = new Set()));
        return s;
    }
    /** Every id the log holds live in namespace `ns` at the checkpoint, with its last logged state. */
    entries(ns) {
        return (this.rows.get(ns) ?? new Map()).entries();
    }
    ns(ns) {
        let m = this.rows.get(ns);
        if (m === undefined)
            this.rows.set(ns, (m = new Map()));
        return m;
    }
}
//# sourceMappingURL=log-history.js.map