/** @module record-lexical — the BM25 side of records: one index per namespace of a records collection, built on first use and then kept current by every write applied to the collection. */
import { Bm25Index, type Bm25Hit, type Bm25Stats } from "../encoder/bm25.js";
import type { Collection } from "../engine/collection.js";
import type { Metadata } from "../engine/filter/metadata.js";
import { OP } from "../engine/ops.js";
import type { LogFrame } from "../store/log.js";
import { matches, textOf, type Predicate } from "./record-fields.js";

/** A namespace's BM25 index with each record's kind, tags, ts and exp (to apply predicates to BM25 hits). */
export class Lexical {
  readonly bm25 = new Bm25Index();
  readonly meta = new Map<string, Metadata>();

  add(id: string, text: string, meta: Metadata): void {
    this.bm25.add(id, text);
    this.meta.set(id, meta);
  }

  remove(id: string): void {
    this.bm25.remove(id);
    this.meta.delete(id);
  }

  /** The best `depth` hits among the records `pred` keeps at `now`; `corpus`: statistics of the whole corpus when this index holds a part of it (a shard). */
  search(text: string, depth: number, pred: Predicate, now: number, corpus?: Bm25Stats): Bm25Hit[] {
    return this.bm25.search(text, depth, (id) => matches(pred, this.meta.get(id)!, now), corpus);
  }
}

/**
 * The BM25 indexes of one records collection, by namespace. A namespace's index is built from the
 * collection on its first use (after settled(): every write acknowledged so far), then every write
 * is applied to it: add replaces an id and remove of an absent id does nothing, so a write that the
 * build already read and that is applied again after it leaves the same index (the ops are
 * last-writer-wins per id, applied in log order).
 */
export class LexicalCache {
  private readonly byNs = new Map<string, Promise<Lexical>>();
  /** Indexes built from a namespace's records so far (writes update a built index; they never cause a build). */
  builds = 0;

  constructor(private readonly c: Collection) {}

  /** The namespace's index, built on first use. */
  get(ns: string): Promise<Lexical> {
    let p = this.byNs.get(ns);
    if (p === undefined) {
      this.builds++;
      p = (async () => {
        await this.c.settled();
        const lex = new Lexical();
        for (let after: string | undefined; ;) {
          const page = this.c.list(ns, { after, limit: 1000 });
          for (const v of this.c.rows(ns, page.ids)) if (v.payload !== null) lex.add(v.id, textOf(v.payload), v.metadata);
          if (!page.more || page.ids.length === 0) break;
          after = page.ids.at(-1);
          // a page at a time, so other requests are served while a large namespace builds (1M records: ~20 s)
          await new Promise((resolve) => setImmediate(resolve));
        }
        return lex;
      })();
      p.catch(() => this.byNs.delete(ns));
      this.byNs.set(ns, p);
    }
    return p;
  }

  /** Apply an acknowledged change to the namespace's index if one is built or building (chained after the build). */
  private apply(ns: string, f: (lex: Lexical) => void): void {
    const p = this.byNs.get(ns);
    if (p === undefined) return;
    const next = p.then((lex) => {
      f(lex);
      return lex;
    });
    next.catch(() => this.byNs.delete(ns));
    this.byNs.set(ns, next);
  }

  add(ns: string, rows: ReadonlyArray<{ id: string; text: string; metadata: Metadata }>): void {
    this.apply(ns, (lex) => {
      for (const r of rows) lex.add(r.id, r.text, r.metadata);
    });
  }

  remove(ns: string, ids: readonly string[]): void {
    if (ids.length > 0)
      this.apply(ns, (lex) => {
        for (const id of ids) lex.remove(id);
      });
  }

  /** Forget a namespace's index (replaced wholesale): rebuilt on next use. */
  drop(ns: string): void {
    this.byNs.delete(ns);
  }

  /** Apply a frame of the collection's log (engine/ops.ts), as the collection applies it: how a replica following a shared log keeps its indexes current. */
  applyFrame(f: LogFrame): void {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    const b = f.body as any;
    switch (f.type) {
      case OP.upsert:
        if (this.byNs.has(b.ns)) {
          const rows: Array<{ id: string; text: string; metadata: Metadata }> = [];
          (b.ids as string[]).forEach((id, i) => {
            const p = b.p?.[i];
            if (p instanceof Uint8Array) rows.push({ id, text: textOf(p), metadata: b.m[i] ?? {} });
          });
          this.add(b.ns, rows);
        }
        break;
      case OP.delete:
        this.remove(b.ns, b.ids);
        break;
      case OP.deleteAll:
      case OP.update: // records are never updated in place: rebuilt on next use
        this.drop(b.ns);
        break;
      case OP.move:
        this.drop(b.from);
        this.drop(b.to);
        break;
    }
  }
}
