/**
 * @module collection — a durable vector collection: the facade over its parts. Writes (writer.ts) go
 * to the log first and are applied asynchronously (applier.ts); reads (reader.ts) see the applied
 * state; checkpoints, compaction, index builds and recovery live in maintenance.ts; input checks in
 * input-checks.ts; the state they share in collection-state.ts. The log is any store/log.ts `Log`
 * (default: the WAL under `<dir>/wal`).
 */
import { existsSync, renameSync, rmSync } from "node:fs";
import { join, relative } from "node:path";
import { SvcError } from "../errors.js";
import { tracer } from "../probes.js";
import { reportDamage } from "../store/damage.js";
import { Wal } from "../store/wal.js";
import { Applier } from "./applier.js";
import { lockDir, loadCheckpoint, loadConfig, removeUnreferenced } from "./collection-files.js";
import { CollectionState } from "./collection-state.js";
import { Maintenance } from "./maintenance.js";
import { Reader } from "./reader.js";
import { Writer } from "./writer.js";
export { MAX_APPLY_BACKLOG_BYTES } from "./applier.js";
export { MAX_ID_BYTES, MAX_ORDER_LIMIT, MAX_PAYLOAD_BYTES } from "./input-checks.js";
export { COMPACT_DEAD_FRACTION, COMPACT_MIN_DEAD, DEFAULT_CHECKPOINT_BYTES } from "./maintenance.js";
/** Codes of an open that failed on damaged files (others are the caller's input, another owner, shutdown, a cluster log's availability). */
const DAMAGE = new Set(["E_IO", "E_WAL_CORRUPT", "E_INTERNAL"]);
/**
 * Write path: validate -> log append (group commit; the promise is the acknowledgement) ->
 * the applier adds the rows to the partition on a later tick (visible to queries). Read
 * path: the partition's visible state only. Everything logged is logical (ids, not rows),
 * so replay works on any generation of the partition files.
 */
export class Collection {
    dir;
    config;
    recovery = { segments: 0, frames: 0, bytes: 0, tornTail: null, damaged: [] };
    s;
    applier;
    writer;
    reader;
    maintenance;
    constructor(dir, config, opts, cp) {
        this.dir = dir;
        this.config = config;
        this.s = new CollectionState(dir, config, opts, cp);
        this.applier = new Applier(this.s, { afterAppend: () => this.maintenance.afterAppend(), afterApply: (op) => this.maintenance.afterApply(op) }, cp?.wal ?? { segment: 0, offset: 0 });
        this.writer = new Writer(this.s, this.applier);
        this.reader = new Reader(this.s);
        this.maintenance = new Maintenance(this.s, this.applier, opts);
    }
    /** Open a collection directory, creating it when `dimension` is given; replays the log after the last checkpoint. */
    static async open(dir, opts) {
        try {
            return await Collection.openFiles(dir, opts);
        }
        catch (err) {
            // A plain error (ENOENT, a JSON or decoding error) comes from the files, unless a non-WAL log (a cluster stream) may have thrown it.
            if (err instanceof SvcError ? !DAMAGE.has(err.code) : opts.openLog !== undefined)
                throw err;
            // Damage the open cannot get past: named in the register (health "degraded"), this collection alone is offline.
            const damage = opts.damage ?? { store: `collection:${dir}`, root: dir };
            const file = err.details?.file ?? err.path;
            const why = err.message.replaceAll(`${damage.root}/`, "");
            reportDamage({ store: damage.store, file: relative(damage.root, typeof file === "string" ? file : dir), kind: "unopenable", dropped: 0, offline: true, detail: `${why}; offline (503 E_STORE_OFFLINE) until \`svc repair\` rebuilds it` });
            throw new SvcError("E_STORE_OFFLINE", `${damage.store} is damaged and offline: ${why}`, { field: "name", cause: err });
        }
    }
    static async openFiles(dir, opts) {
        const config = loadConfig(dir, opts);
        lockDir(dir);
        try {
            const cp = opts.salvage ? loadOrSetAsideCheckpoint(dir, opts) : loadCheckpoint(dir);
            removeUnreferenced(join(dir, "parts"), cp);
            const c = new Collection(dir, config, opts, cp);
            const openLog = opts.openLog ?? Wal.opener(join(dir, "wal"), { durability: opts.durability, segmentBytes: opts.segmentBytes });
            Object.assign(c.recovery, await c.maintenance.recover(cp, openLog));
            return c;
        }
        catch (err) {
            rmSync(join(dir, "LOCK"), { force: true });
            throw err;
        }
    }
    /** The log's counters (frames, bytes, fsyncs). */
    get walStats() {
        return this.s.log.stats;
    }
    get dimension() {
        return this.config.dimension;
    }
    /** Record durable -> visible delays in `visibleDelays` (for the benchmark). */
    get trackVisibility() {
        return this.applier.trackVisibility;
    }
    set trackVisibility(on) {
        this.applier.trackVisibility = on;
    }
    get visibleDelays() {
        return this.applier.visibleDelays;
    }
    // ---- writes (writer.ts) ---------------------------------------------------------------
    /** Insert or replace vectors; resolves once the batch is durable (acknowledged), before it is visible. */
    upsert(namespace, vectors) {
        return tracer === null ? this.writer.upsert(namespace, vectors) : tracer.span("engine.upsert", { "svc.namespace": namespace, "svc.vectors": vectors.length }, () => this.writer.upsert(namespace, vectors));
    }
    /** Delete by ids, by filter (evaluated on everything acknowledged so far) or everything in the namespace. */
    delete(namespace, req) {
        return tracer === null ? this.writer.delete(namespace, req) : tracer.span("engine.delete", { "svc.namespace": namespace }, () => this.writer.delete(namespace, req));
    }
    /** Replace the values, merge metadata and/or replace the payload of an existing id (what is not given is kept). */
    update(namespace, req) {
        return this.writer.update(namespace, req);
    }
    /** Merge `setMetadata` into every row matching `filter` (`dryRun`: only count them); `matched`: how many. */
    updateWhere(namespace, req) {
        return this.writer.updateWhere(namespace, req);
    }
    /** Make namespace `to` hold exactly what `from` holds and empty `from`, in one logged step. */
    moveNamespace(from, to) {
        return this.writer.moveNamespace(from, to);
    }
    // ---- reads (reader.ts) ----------------------------------------------------------------
    fetch(namespace, ids) {
        return this.reader.fetch(namespace, ids);
    }
    query(namespace, req) {
        if (tracer === null)
            return this.reader.query(namespace, req);
        return tracer.span("engine.query", { "svc.namespace": namespace }, async (span) => {
            const r = await this.reader.query(namespace, req);
            span.setAttribute("svc.plan", r.plan);
            span.setAttribute("svc.scanned", r.scanned);
            return r;
        });
    }
    queryBatch(namespace, req) {
        return this.reader.queryBatch(namespace, req);
    }
    stats(filter) {
        return this.reader.stats(filter);
    }
    order(namespace, req) {
        return this.reader.order(namespace, req);
    }
    facet(namespace, field, filter) {
        return this.reader.facet(namespace, field, filter);
    }
    range(namespace, field, filter) {
        return this.reader.range(namespace, field, filter);
    }
    ids(namespace, filter) {
        return this.reader.ids(namespace, filter);
    }
    /** One page of live ids in id order (id-order.ts), optionally only those matching `filter`. */
    list(namespace, req) {
        return this.reader.list(namespace, req);
    }
    count(namespace, filter) {
        return this.reader.count(namespace, filter);
    }
    namespaces() {
        return this.reader.namespaces();
    }
    indexStats(namespace) {
        return this.reader.indexStats(namespace);
    }
    // ---- visibility (applier.ts) ----------------------------------------------------------
    /**
     * Resolves once every write acknowledged before the call is visible: this collection's own, and
     * with a followed log (cluster/jetstream-log.ts `follow`) every writer's on the log at the time of the call.
     */
    settled() {
        return this.applier.settled();
    }
    /** End of the last op applied (visible to queries); with a JetStream log `offset` is its stream sequence. */
    get applied() {
        return this.applier.visible;
    }
    /** End of the last acknowledged append (after open: of the log as replayed): a read-your-writes token for whenVisible on any replica of the log. */
    get logPosition() {
        return this.s.log.position;
    }
    /** Resolves once the frame ending at `pos` (and everything before it) is applied. */
    whenVisible(pos) {
        return this.applier.whenVisible(pos);
    }
    // ---- maintenance (maintenance.ts) -----------------------------------------------------
    /** Persist the visible state so a restart replays only later frames. */
    checkpoint() {
        return this.maintenance.checkpoint();
    }
    /** Rewrite a namespace's live rows into a fresh partition and drop the dead ones. */
    compact(namespace) {
        return this.maintenance.compact(namespace);
    }
    /** Build (or rebuild) the namespace's approximate index now, whatever its size. */
    buildIndex(namespace) {
        return this.maintenance.buildIndex(namespace);
    }
    /** Wait for running rewrites, apply everything acknowledged, checkpoint, close the log and the partitions, release the LOCK. */
    async close() {
        const s = this.s;
        if (s.closed)
            return;
        await this.maintenance.stop();
        await this.applier.drained();
        await this.maintenance.checkpoint();
        s.closed = true;
        await s.log.close();
        for (const p of s.partitions.values())
            s.retired.push(p);
        s.partitions.clear();
        s.closeRetired();
        s.rotation?.dispose();
        rmSync(join(this.dir, "LOCK"), { force: true });
    }
}
/**
 * Salvage: an unreadable checkpoint.json is set aside (with parts/) and the collection is rebuilt
 * by replaying the whole log, which needs the log's first segment (000001.seg: nothing was dropped
 * yet); otherwise nothing is touched and E_IO says why (a restore of checkpoint.json is needed).
 */
function loadOrSetAsideCheckpoint(dir, opts) {
    try {
        return loadCheckpoint(dir);
    }
    catch (err) {
        if (opts.openLog !== undefined || !existsSync(join(dir, "wal", "000001.seg"))) {
            throw new SvcError("E_IO", `${join(dir, "checkpoint.json")}: ${err.message}; the log no longer holds every write (its first segment was dropped), so it cannot be rebuilt from it: restore checkpoint.json from a backup`, { details: { file: join(dir, "checkpoint.json") }, cause: err });
        }
        const stamp = Date.now();
        renameSync(join(dir, "checkpoint.json"), join(dir, `checkpoint.json.damaged-${stamp}`));
        if (existsSync(join(dir, "parts")))
            renameSync(join(dir, "parts"), join(dir, `parts.damaged-${stamp}`));
        const damage = opts.damage ?? { store: `collection:${dir}`, root: dir };
        reportDamage({ store: damage.store, file: relative(damage.root, join(dir, "checkpoint.json")), kind: "unreadable", dropped: 0, offline: false, detail: `${err.message}; rebuilt from the log, which holds every write since the collection was created (the damaged file is kept as checkpoint.json.damaged-${stamp}, the old partitions as parts.damaged-${stamp})` });
        return null;
    }
}
//# sourceMappingURL=collection.js.map