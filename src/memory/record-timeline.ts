/** @module record-timeline — records newest first, one page at a time, with a cursor that neither skips nor repeats records sharing a ts. */
import { SvcError } from "../errors.js";
import { DEFAULT_TIMELINE } from "../input-rules.js";
import { predicate, toView, type Predicate, type RecordView } from "./record-fields.js";
import { liveFilter } from "./record-filters.js";
import type { RecordStore } from "./record-store.js";
import type { ReadOptions } from "./vector-index.js";

export { DEFAULT_TIMELINE, MAX_TIMELINE } from "../input-rules.js";

/** A timeline request as the route parsed it from the query string (tools/record-ops.ts: types and ranges checked; times in epoch ms). */
export interface TimelineRequest {
  /** Page size in [1, MAX_TIMELINE]; default DEFAULT_TIMELINE. */
  limit?: number;
  /** ts >= since. */
  since?: number;
  /** ts < until: the previous page's nextCursor. */
  until?: number;
  /** With until: the previous page's nextAfter (a record id); the page goes on right after that record in the group at ts until. */
  after?: string;
  kind?: string[];
  tagsAny?: string[];
  tagsAll?: string[];
}

export interface TimelinePage {
  records: RecordView[];
  nextCursor: number | null;
  nextAfter?: string;
}

/**
 * Newest first: by ts descending, records sharing a ts by id descending (code-unit order), at
 * most `limit` per page. `nextCursor` (null on the last page) is always the oldest ts returned,
 * passed back as `until` (exclusive) for the next page. So that paging by `until` alone neither
 * skips nor repeats records sharing that ts, a page ends at a ts boundary: the trailing group of
 * equal ts moves whole to the next page. Only when one group alone exceeds `limit` does a page end
 * inside it; then `nextAfter` is the id of its last record, and `until` = nextCursor with
 * `after` = nextAfter continues right after that record (the rest of the group, then older ts).
 */
export class Timeline {
  readonly limit: number;
  readonly pred: Predicate;
  private readonly until: number | undefined;
  private readonly after: string | undefined;

  /** Checks the request's cross-field rules (E_BAD_REQUEST naming the field) before any store is read; `now`: the clock (ms) expiry is judged by. */
  constructor(
    req: TimelineRequest,
    private readonly now: () => number,
  ) {
    this.limit = req.limit ?? DEFAULT_TIMELINE;
    this.until = req.until;
    this.after = req.after;
    if (this.after !== undefined && this.until === undefined)
      throw new SvcError("E_BAD_REQUEST", "after needs until: pass the previous page's nextCursor as until and its nextAfter as after", {
        field: "after",
      });
    const until = this.until;
    this.pred = predicate(
      {
        kind: req.kind,
        tagsAny: req.tagsAny,
        tagsAll: req.tagsAll,
        tsGte: req.since,
        // with `after`, the records at ts `until` itself are in the window too
        tsLt: until === undefined ? undefined : this.after === undefined ? until : until + 1,
      },
      { tsGte: "since", tsLt: "until" },
    );
  }

  /** The page of namespace `ns` of store `s`. */
  async page(s: RecordStore, ns: string, read: ReadOptions): Promise<TimelinePage> {
    const { limit, pred, until, after } = this;
    // The stream after the position, in timeline order: the rest of the group at `until` (after `after`), then ts < until.
    const rest =
      after === undefined ? [] : (await this.group(s, ns, until!, read)).filter((id) => id < after).map((id) => ({ id, value: until! }));
    let page: Array<{ id: string; value: number }>;
    let more: boolean;
    let nextAfter: string | undefined;
    if (rest.length > limit) {
      page = rest.slice(0, limit);
      more = true;
      nextAfter = page.at(-1)!.id;
    } else {
      // rows ordered by ts only (ties in no set order): every group but the last one is whole
      const older = await s.order(
        ns,
        {
          filter: liveFilter({ ...pred, tsLt: after === undefined ? pred.tsLt : until }, this.now()),
          limit: limit + 1 - rest.length,
          rows: false,
        },
        read,
      );
      const stream = [...rest, ...older];
      more = stream.length > limit;
      if (!more) page = stream;
      else {
        const lastTs = stream[limit - 1]!.value;
        if (stream[limit]!.value !== lastTs) page = stream.slice(0, limit);
        else {
          // the group at lastTs runs past the page: it moves whole to the next page, unless it alone fills the page
          const cut = stream.findIndex((r) => r.value === lastTs);
          if (cut > 0) page = stream.slice(0, cut);
          else {
            page = (await this.group(s, ns, lastTs, read)).slice(0, limit).map((id) => ({ id, value: lastTs }));
            nextAfter = page.at(-1)!.id;
          }
        }
      }
    }
    const ids = sortGroups(page);
    const byId = new Map((await s.fetch(ns, ids, read)).map((v) => [v.id, v]));
    const records = ids
      .filter((id) => byId.has(id))
      .map((id) => byId.get(id)!)
      .map((v) => toView(v.id, v.metadata, v.payload, true, true));
    return { records, nextCursor: more ? page.at(-1)!.value : null, ...(nextAfter === undefined ? {} : { nextAfter }) };
  }

  /** Ids of the records at exactly `ts` under the predicate, in timeline order (id descending). */
  private async group(s: RecordStore, ns: string, ts: number, read: ReadOptions): Promise<string[]> {
    const pred = this.pred;
    const ids = await s.ids(ns, liveFilter({ ...pred, tsGte: Math.max(ts, pred.tsGte ?? ts), tsLt: ts + 1 }, this.now()), read);
    return ids.sort((a, b) => (a < b ? 1 : a > b ? -1 : 0));
  }
}

/** Complete ts groups (ts descending) in timeline order: ts descending, then id descending. */
function sortGroups(rows: readonly { id: string; value: number }[]): string[] {
  return [...rows].sort((a, b) => b.value - a.value || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0)).map((r) => r.id);
}
