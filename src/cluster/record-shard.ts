/**
 * @module record-shard — what a replica of a records shard (ClusterIndexRecord kind "records") adds to
 * the shard host: the BM25 indexes of its namespaces, kept current by tapping the frames its log
 * applies (every writer's, in stream order, so every replica holds the same postings), the record
 * reads (RECORD_OPS) on its Collection, and the sweep of expired records (`exp`).
 */
import type { Collection } from "../engine/collection.js";
import { SvcError } from "../errors.js";
import { LexicalCache } from "../memory/record-lexical.js";
import type { Predicate } from "../memory/record-fields.js";
import type { LogFrame, OpenLog } from "../store/log.js";
import { bytesF32, RECORD_OPS, type RecordOp } from "./shards.js";

export function isRecordOp(op: unknown): op is RecordOp {
  return (RECORD_OPS as readonly unknown[]).includes(op);
}

/** Records metadata field of the expiry (ms since the epoch; memory/record-fields.ts). */
const EXP = "exp";

export class RecordShard {
  private lexicon: LexicalCache | null = null;

  /** `openLog` with every frame it delivers (replayed or tailed) passed on to this shard's BM25 indexes after the collection. */
  tap(openLog: OpenLog): OpenLog {
    const seen = (f: LogFrame) => this.lexicon?.applyFrame(f);
    return (replay) =>
      openLog({
        ...replay,
        onFrame: (f) => {
          replay.onFrame(f);
          seen(f);
        },
        ...(replay.onTail === undefined
          ? {}
          : {
              onTail: (f: LogFrame) => {
                replay.onTail!(f);
                seen(f);
              },
            }),
      });
  }

  /** The collection once open (the tap delivers nothing to indexes before: none is built until a query asks). */
  attach(c: Collection): void {
    this.lexicon = new LexicalCache(c);
  }

  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  async read(c: Collection, op: RecordOp, a: Record<string, any>): Promise<unknown> {
    switch (op) {
      case "rows":
        return c.rows(a.ns, a.ids).map((v) => ({ id: v.id, metadata: v.metadata, ...(v.payload === null ? {} : { payload: v.payload }) }));
      case "search": {
        const r = await c.query(a.ns, {
          vector: bytesF32(a.vector) as Float32Array,
          topK: a.topK,
          filter: a.filter,
          includeMetadata: true,
        });
        return { matches: r.matches.map((m) => ({ id: m.id, score: m.score, metadata: m.metadata })), scanned: r.scanned };
      }
      case "order":
        return c
          .order(a.ns, { field: "ts", filter: a.filter, limit: a.limit, includeMetadata: a.rows === true })
          .map((r) => (a.rows === true ? r : { id: r.id, value: r.value }));
      case "ids":
        return c.ids(a.ns, a.filter);
      case "facet":
        return c.facet(a.ns, a.field, a.filter);
      case "range":
        return c.range(a.ns, a.field, a.filter);
      case "namespaces":
        return c.namespaces();
      case "lexStats":
        return (await this.lexicon!.get(a.ns)).bm25.stats(a.text);
      case "lexSearch":
        return (await this.lexicon!.get(a.ns)).search(a.text, a.depth, a.pred as Predicate, a.now, a.corpus);
      default:
        throw new SvcError("E_BAD_REQUEST", `unknown records shard op '${String(op)}'`, { field: "op" });
    }
  }

  /** Delete the expired records (exp <= now); returns how many. */
  async sweep(c: Collection, now: number): Promise<number> {
    let gone = 0;
    for (const ns of c.namespaces()) {
      if (c.count(ns, { [EXP]: { $lte: now } }) === 0) continue;
      gone += (await c.delete(ns, { filter: { [EXP]: { $lte: now } } })).deleted;
    }
    return gone;
  }
}
