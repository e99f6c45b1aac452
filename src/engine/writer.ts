/** @module writer — the write path of a collection: validate upsert/delete/update/moveNamespace, build the logical op, append it (applier.ts) and resolve on the acknowledgement. */
import { SvcError } from "../errors.js";
import type { Applier } from "./applier.js";
import type { CollectionState } from "./collection-state.js";
import { validateMetadata, type Metadata } from "./filter/metadata.js";
import { parseFilter } from "./filter/parse.js";
import { checkBits, checkFinite, checkId, checkLength, checkNamespace, checkPayload, checkValues } from "./input-checks.js";
import { takeGivenRows } from "./upsert-buffers.js";
import { OP, type DeleteAllOp, type DeleteOp, type MoveOp, type UpdateOp, type UpsertOp } from "./ops.js";

/** Update ops appended at once by updateWhere (bounds the promises in flight). */
const UPDATE_WHERE_BATCH = 1024;

export interface VectorInput {
  id: string;
  /** Float values (cosine) — or packed bits (hamming), ceil(dimension / 8) bytes. */
  values?: ArrayLike<number>;
  bits?: Uint8Array;
  metadata?: unknown;
  /** Opaque bytes stored with the row, not indexed (at most MAX_PAYLOAD_BYTES). */
  payload?: Uint8Array;
}

/**
 * An upsert batch checked whole (the first bad vector names its field) and built into its logged op.
 * Also run by a node that splits a batch over shards (cluster/sharded-index.ts) before it sends any
 * part, so a bad vector fails the whole batch there as on one collection.
 */
export function checkUpsert(
  namespace: string,
  vectors: readonly VectorInput[],
  shape: { rowBytes: number; dimension: number; cosine: boolean },
): UpsertOp {
  checkNamespace(namespace);
  if (!Array.isArray(vectors) || vectors.length === 0)
    throw new SvcError("E_BAD_REQUEST", "vectors must be a non-empty array", { field: "vectors" });
  const { rowBytes, dimension } = shape;
  const given = shape.cosine ? takeGivenRows(vectors, rowBytes) : null;
  const v = given ?? new Uint8Array(vectors.length * rowBytes);
  const f32 = shape.cosine ? new Float32Array(v.buffer, 0, v.byteLength / 4) : null;
  const ids: string[] = [];
  const m: (Metadata | null)[] = [];
  const p: (Uint8Array | null)[] = [];
  let payloads = false;
  vectors.forEach((vec, i) => {
    const field = `vectors[${i}]`;
    ids.push(checkId(vec?.id, `${field}.id`));
    if (given === null && f32) f32.set(checkLength(vec.values, `${field}.values`, dimension), i * dimension);
    else if (f32 === null) v.set(checkBits(vec.bits, `${field}.bits`, dimension), i * rowBytes);
    const meta = validateMetadata(vec.metadata, `${field}.metadata`);
    m.push(Object.keys(meta).length === 0 ? null : meta);
    const payload = checkPayload(vec.payload, `${field}.payload`);
    p.push(payload);
    payloads ||= payload !== null;
  });
  if (f32) checkFinite(f32, (i) => `vectors[${i}].values`, dimension);
  return { ns: namespace, ids, v, m, ...(payloads ? { p } : {}) } satisfies UpsertOp;
}

/** Everything logged is logical (ids, not rows), so replay works on any generation of the partition files. */
export class Writer {
  constructor(
    private readonly s: CollectionState,
    private readonly applier: Applier,
  ) {}

  /** Insert or replace vectors; resolves once the batch is durable (acknowledged), before it is visible. */
  async upsert(namespace: string, vectors: readonly VectorInput[]): Promise<{ upsertedCount: number }> {
    const { rowBytes, dimension, rotation } = this.s;
    await this.applier.append({
      type: OP.upsert,
      body: checkUpsert(namespace, vectors, { rowBytes, dimension, cosine: rotation !== null }),
    });
    return { upsertedCount: vectors.length };
  }

  /**
   * Delete by ids, by filter (evaluated on everything acknowledged so far) or everything in
   * the namespace. `deleted` counts the ids submitted (with ids), matched (with a filter) or
   * live (with deleteAll).
   */
  async delete(namespace: string, req: { ids?: readonly string[]; filter?: unknown; deleteAll?: boolean }): Promise<{ deleted: number }> {
    checkNamespace(namespace);
    if (req.deleteAll) {
      const count = this.s.partitions.get(namespace)?.liveCount ?? 0;
      await this.applier.append({ type: OP.deleteAll, body: { ns: namespace } satisfies DeleteAllOp });
      return { deleted: count };
    }
    let ids: string[];
    if (req.ids !== undefined) {
      if (!Array.isArray(req.ids)) throw new SvcError("E_BAD_REQUEST", "ids must be an array of strings", { field: "ids" });
      ids = req.ids.map((id, i) => checkId(id, `ids[${i}]`));
    } else if (req.filter !== undefined) {
      const filter = parseFilter(req.filter);
      if (filter === null)
        throw new SvcError("E_FILTER", "filter must not be empty; use deleteAll to delete everything", { field: "filter" });
      await this.applier.settled();
      const p = this.s.partitions.get(namespace);
      ids =
        p === undefined
          ? []
          : p.index
              .evaluate(filter, p.live())
              .toArray()
              .map((r) => p.idOf(r));
    } else {
      throw new SvcError("E_BAD_REQUEST", "give ids, filter or deleteAll", { field: "ids" });
    }
    if (ids.length === 0) return { deleted: 0 };
    await this.applier.append({ type: OP.delete, body: { ns: namespace, ids } satisfies DeleteOp });
    return { deleted: ids.length };
  }

  /**
   * Merge `setMetadata` into every live row matching `filter` (non-empty; evaluated on everything
   * acknowledged so far); `dryRun` only counts them. Logged as one update op per row, appended
   * together (group commit): a crash part-way leaves a prefix of them applied, and running the
   * same update again completes it (a merge is idempotent). Bad input is refused before any append.
   */
  async updateWhere(namespace: string, req: { filter: unknown; setMetadata?: unknown; dryRun?: boolean }): Promise<{ matched: number }> {
    checkNamespace(namespace);
    const filter = parseFilter(req.filter);
    if (filter === null) throw new SvcError("E_FILTER", "filter must not be empty", { field: "filter" });
    const m = req.setMetadata === undefined ? null : validateMetadata(req.setMetadata, "setMetadata");
    if (m === null && req.dryRun !== true)
      throw new SvcError("E_BAD_REQUEST", "give setMetadata (the fields to merge into every matching vector)", { field: "setMetadata" });
    await this.applier.settled();
    const p = this.s.partitions.get(namespace);
    const ids =
      p === undefined
        ? []
        : p.index
            .evaluate(filter, p.live())
            .toArray()
            .map((r) => p.idOf(r));
    if (req.dryRun === true || m === null) return { matched: ids.length };
    for (let i = 0; i < ids.length; i += UPDATE_WHERE_BATCH) {
      await Promise.all(
        ids
          .slice(i, i + UPDATE_WHERE_BATCH)
          .map((id) => this.applier.append({ type: OP.update, body: { ns: namespace, id, v: null, m } satisfies UpdateOp })),
      );
    }
    return { matched: ids.length };
  }

  /** Replace the values, merge metadata and/or replace the payload of an existing id (what is not given is kept). */
  async update(
    namespace: string,
    req: { id: string; values?: ArrayLike<number>; bits?: Uint8Array; setMetadata?: unknown; payload?: Uint8Array },
  ): Promise<void> {
    checkNamespace(namespace);
    const id = checkId(req?.id, "id");
    let v: Uint8Array | null = null;
    if (req.values !== undefined || req.bits !== undefined) {
      // a copy: the caller's array may be a view into a larger buffer, and the WAL writes binaries without copying
      v = this.s.rotation
        ? new Uint8Array(Float32Array.from(checkValues(req.values, "values", this.s.dimension)).buffer)
        : checkBits(req.bits, "bits", this.s.dimension);
    }
    const m = req.setMetadata === undefined ? null : validateMetadata(req.setMetadata, "setMetadata");
    const p = checkPayload(req.payload, "payload");
    if (v === null && m === null && p === null)
      throw new SvcError("E_BAD_REQUEST", "give values, setMetadata or payload", { field: "values" });
    await this.applier.settled();
    if (this.s.partitions.get(namespace)?.rowOf(id) === undefined)
      throw new SvcError("E_NOT_FOUND", `no vector '${id}' in namespace '${namespace}'`, { field: "id" });
    await this.applier.append({ type: OP.update, body: { ns: namespace, id, v, m, ...(p === null ? {} : { p }) } satisfies UpdateOp });
  }

  /**
   * Make namespace `to` hold exactly what `from` holds (its own rows are dropped) and empty
   * `from`, in one logged step: replay applies it whole or not at all, and queries see the old
   * or the new `to`, never a mix. An empty or unknown `from` empties `to`. `moved` counts the
   * live rows of `from` once everything acknowledged before the call is visible.
   */
  async moveNamespace(from: string, to: string): Promise<{ moved: number }> {
    checkNamespace(from, "from");
    checkNamespace(to, "to");
    if (from === to) throw new SvcError("E_BAD_REQUEST", "from and to must be different namespaces", { field: "to" });
    await this.applier.settled();
    const moved = this.s.partitions.get(from)?.liveCount ?? 0;
    await this.applier.append({ type: OP.move, body: { from, to } satisfies MoveOp });
    return { moved };
  }
}
