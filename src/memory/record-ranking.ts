/** @module record-ranking — record queries ranked by meaning: cosine alone, or the cosine and BM25 rankings fused by reciprocal rank. */
import type { Metadata } from "../engine/filter/metadata.js";
import { toView, type Predicate, type RecordView } from "./record-fields.js";
import type { Embedder, RecordStore } from "./record-store.js";
import type { ReadOptions } from "./vector-index.js";

/** Hybrid queries (`mode: "hybrid"`) fuse the vector and BM25 rankings by reciprocal rank: score = sum of 1 / (RRF_K + rank), rank from 1, so at most 2 / (RRF_K + 1). */
export const RRF_K = 60;

/** One ranked query: `filter` is readFilter's engine filter of `pred`; `usage.scanned` is set to the rows the vector ranking considered. */
export interface RankRequest {
  ns: string;
  text: string;
  topK: number;
  pred: Predicate;
  filter: Record<string, unknown> | undefined;
  includeText: boolean;
  includeMeta: boolean;
  /** Clock (ms) the BM25 half applies `pred`'s expiry with. */
  now: number;
}

/** The best `topK` by cosine to the text's embedding; `score` is the cosine. */
export async function rankByVector(
  s: RecordStore,
  encoder: Embedder,
  q: RankRequest,
  usage: { scanned?: number },
  read: ReadOptions,
): Promise<RecordView[]> {
  const vector = encoder.encodeBatch([q.text]);
  const res = await s.search(q.ns, { vector, topK: q.topK, filter: q.filter, payload: q.includeText || q.includeMeta }, read);
  usage.scanned = res.scanned;
  return res.matches.map((m) => view(q, m.id, m.metadata, m.payload, m.score));
}

/**
 * Reciprocal rank fusion of the vector ranking and the BM25 ranking (each cut to the
 * records matching the predicate), best `topK`; `score` is the fused score.
 * `filter` is the vector half's; BM25 checks `pred` itself.
 */
export async function rankHybrid(
  s: RecordStore,
  encoder: Embedder,
  q: RankRequest,
  usage: { scanned?: number },
  read: ReadOptions,
): Promise<RecordView[]> {
  const depth = Math.max(50, q.topK * 5);
  const vector = encoder.encodeBatch([q.text]);
  // The BM25 top `depth` among the records the predicate keeps: the fusion reads no deeper.
  const [res, words] = await Promise.all([
    s.search(q.ns, { vector, topK: depth, filter: q.filter, payload: false }, read),
    s.lexical(q.ns, q.text, depth, q.pred, q.now, read),
  ]);
  usage.scanned = res.scanned;
  const fused = fuse([res.matches.map((m) => m.id), words.map((h) => h.id)]).slice(0, q.topK);
  const rows = new Map(
    (
      await s.fetch(
        q.ns,
        fused.map(([id]) => id),
        read,
      )
    ).map((v) => [v.id, v]),
  );
  return fused.filter(([id]) => rows.has(id)).map(([id, score]) => view(q, id, rows.get(id)!.metadata, rows.get(id)!.payload, score));
}

/** Reciprocal rank fusion of rankings (ids, best first): id -> sum of 1 / (RRF_K + rank), rank from 1; best first, ties by id. */
export function fuse(rankings: ReadonlyArray<readonly string[]>): Array<[string, number]> {
  const fused = new Map<string, number>();
  for (const ranking of rankings) ranking.forEach((id, rank) => fused.set(id, (fused.get(id) ?? 0) + 1 / (RRF_K + rank + 1)));
  return [...fused].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
}

function view(q: RankRequest, id: string, metadata: Metadata, payload: Uint8Array | undefined, score: number): RecordView {
  return toView(id, metadata, payload, q.includeText, q.includeMeta, score);
}
