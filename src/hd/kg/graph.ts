/**
 * @module hd/kg/graph — one knowledge graph in memory: a shard per relation (262,144 i32 counters in shared
 * memory, majority bits derived lazily), the object vectors of every entity seen as an object (one RowArena),
 * and the facts themselves (for exact delete, stats and export). No I/O: the service logs and replays.
 */
import { SvcError } from "../../errors.js";
import type { Kernels } from "../../kernels/abi.js";
import { RowArena } from "../../kernels/row-arena.js";
import { capacity, confidence, MIN_CONFIDENCE, POSTERIOR_K, separation, theoreticalAccuracy } from "./calibration.js";
import type { HdkgGraph } from "./hdkg-file.js";
import { fillVector, KG_BYTES, KG_DIM, KG_WORDS, type KgRole } from "./vectors.js";

export interface Fact {
  subject: string;
  relation: string;
  object: string;
}

export interface KgAnswer {
  object: string | null;
  confidence: number;
}

export interface ShardStats {
  relation: string;
  facts: number;
  /** Distinct objects of the relation: the candidates a query is cleaned up against. */
  objects: number;
  /** Theoretical top-1 accuracy at the current load. */
  expectedAccuracy: number;
  /** Facts that can still be added before the theoretical accuracy falls below 0.99 (objects held fixed). */
  capacityLeft: number;
  /** The most facts the shard holds at >= 0.99 theoretical accuracy with its current objects. */
  capacity: number;
  /** facts / capacity: above 1 the shard is past capacity (answers get less accurate and say so by their confidence). */
  load: number;
  /** load > 1. */
  overloaded: boolean;
}

interface Shard {
  relation: string;
  /** KG_DIM i32 counters: sum over facts of bipolar(subject xor object). */
  counters: number;
  /** Majority bits of the counters (valid when !dirty). */
  bits: number;
  dirty: boolean;
  /** "subject\u0000object" -> the fact, in insertion order. */
  facts: Map<string, [string, string]>;
  /** object name -> facts of this relation having it as object. */
  objects: Map<string, number>;
  /** Subjects of this relation -> facts having them as subject. */
  subjects: Map<string, number>;
  /** Candidate object rows, rebuilt when objects change. */
  candidates: Uint32Array | null;
}

const key = (s: string, o: string) => `${s}\u0000${o}`;

export class Graph {
  readonly seed: number;
  private readonly kernels: Kernels;
  private readonly shards = new Map<string, Shard>();
  /** Object-role vectors of every entity ever seen as an object (rows are never removed while the graph is open). */
  private readonly objectRows: RowArena;
  private readonly rowOf = new Map<string, number>();
  private readonly rowNames: string[] = [];
  /** Entities in any position, with how many facts mention them. */
  private readonly entities = new Map<string, number>();
  /** Two 32 KiB scratch rows: a subject vector and a bound pair / query. */
  private readonly scratch: number;
  private capacityCache = new Map<number, number>();
  private disposed = false;

  constructor(kernels: Kernels, seed: number) {
    this.kernels = kernels;
    this.seed = seed >>> 0;
    this.objectRows = new RowArena(kernels.heap, KG_DIM, 16);
    this.scratch = kernels.heap.alloc(2 * KG_BYTES);
  }

  get factCount(): number {
    let n = 0;
    for (const s of this.shards.values()) n += s.facts.size;
    return n;
  }

  /** Add facts not yet present; returns those actually added (duplicates, in the graph or the batch, are skipped). */
  add(facts: readonly Fact[]): Fact[] {
    const added: Fact[] = [];
    for (const f of facts) {
      const shard = this.shard(f.relation, true)!;
      const k = key(f.subject, f.object);
      if (shard.facts.has(k)) continue;
      shard.facts.set(k, [f.subject, f.object]);
      bump(shard.subjects, f.subject, 1);
      if (bump(shard.objects, f.object, 1) === 1) shard.candidates = null;
      bump(this.entities, f.subject, 1);
      bump(this.entities, f.object, 1);
      this.accumulate(shard, f.subject, f.object, 1);
      added.push(f);
    }
    return added;
  }

  /** Remove present facts exactly (the counters lose what add gave them); returns those removed. */
  delete(facts: readonly Fact[]): Fact[] {
    const removed: Fact[] = [];
    for (const f of facts) {
      const shard = this.shard(f.relation, false);
      if (shard === undefined || !shard.facts.delete(key(f.subject, f.object))) continue;
      bump(shard.subjects, f.subject, -1);
      if (bump(shard.objects, f.object, -1) === 0) shard.candidates = null;
      bump(this.entities, f.subject, -1);
      bump(this.entities, f.object, -1);
      this.accumulate(shard, f.subject, f.object, -1);
      removed.push(f);
    }
    return removed;
  }

  /**
   * The object of (subject, relation): unbind the shard's majority bits with the subject vector, Hamming-scan
   * the relation's objects (WASM topKList over the object arena), and turn the k nearest distances into a
   * calibrated confidence. A subject never used in the relation gets {object: null, confidence: 0}.
   */
  query(subject: string, relation: string): KgAnswer & { distances: number[] } {
    const shard = this.shard(relation, false);
    if (shard === undefined || shard.facts.size === 0 || !shard.subjects.has(subject))
      return { object: null, confidence: 0, distances: [] };
    const k = this.kernels;
    if (shard.dirty) {
      this.fill(this.scratch, "tie", relation);
      k.bundleThreshold(shard.counters, KG_DIM, this.scratch, shard.bits);
      shard.dirty = false;
    }
    const q = this.scratch + KG_BYTES;
    this.fill(this.scratch, "subject", subject);
    k.bind(shard.bits, this.scratch, q, KG_WORDS);
    shard.candidates ??= Uint32Array.from(shard.objects.keys(), (o) => this.rowOf.get(o)!);
    const list = k.heap.put(shard.candidates);
    const { rows, unpin } = this.objectRows.pin();
    try {
      const top = k.topKList(rows, list, shard.candidates.length, q, Math.min(POSTERIOR_K, shard.candidates.length));
      const c = confidence(top.dists, shard.facts.size, KG_DIM, shard.candidates.length);
      const distances = Array.from(top.dists);
      return { object: c < MIN_CONFIDENCE ? null : this.rowNames[top.rows[0]!]!, confidence: round(c), distances };
    } finally {
      unpin();
      k.heap.release(list);
    }
  }

  /** The counters of a relation (a copy), for tests. */
  counters(relation: string): Int32Array | null {
    const shard = this.shard(relation, false);
    if (shard === undefined) return null;
    return new Int32Array(this.kernels.heap.memory.buffer, shard.counters, KG_DIM).slice();
  }

  stats(): { relations: ShardStats[]; facts: number; entities: number } {
    const relations: ShardStats[] = [];
    for (const s of this.shards.values()) {
      const m = s.objects.size;
      let cap = this.capacityCache.get(m);
      if (cap === undefined) {
        cap = capacity(m, KG_DIM);
        this.capacityCache.set(m, cap);
      }
      relations.push({
        relation: s.relation,
        facts: s.facts.size,
        objects: m,
        expectedAccuracy: s.facts.size === 0 ? 1 : round(theoreticalAccuracy(s.facts.size, m, KG_DIM)),
        capacityLeft: Math.max(0, cap - s.facts.size),
        capacity: cap,
        load: round(s.facts.size / Math.max(1, cap)),
        overloaded: s.facts.size > cap,
      });
    }
    return { relations, facts: this.factCount, entities: this.entities.size };
  }

  /** The graph's content in order: what .hdkg holds and replay rebuilds from. */
  snapshot(): HdkgGraph {
    return {
      seed: this.seed,
      relations: [...this.shards.values()].map((s) => ({
        name: s.relation,
        facts: [...s.facts.values()].map(([a, b]) => [a, b] as [string, string]),
      })),
    };
  }

  /** Names of the object rows in row order (a snapshot keeps it: query ties go to the lower row). */
  objectNames(): string[] {
    return [...this.rowNames];
  }

  /**
   * Load a snapshot into an empty graph: object rows in the given order, then the relations and their facts
   * in order, with the given counters (one KG_DIM array per relation) instead of accumulating every fact.
   */
  restore(g: HdkgGraph, objects: readonly string[], counters: readonly Int32Array[]): void {
    if (this.shards.size > 0 || this.rowNames.length > 0) throw new Error("Graph.restore: the graph is not empty");
    if (counters.length !== g.relations.length) throw new Error("Graph.restore: one counter array per relation");
    for (const o of objects) this.objectRow(o);
    g.relations.forEach((r, i) => {
      const shard = this.shard(r.name, true)!;
      for (const [s, o] of r.facts) {
        const k = key(s, o);
        if (shard.facts.has(k)) continue;
        shard.facts.set(k, [s, o]);
        bump(shard.subjects, s, 1);
        bump(shard.objects, o, 1);
        bump(this.entities, s, 1);
        bump(this.entities, o, 1);
        this.objectRow(o);
      }
      new Int32Array(this.kernels.heap.memory.buffer, shard.counters, KG_DIM).set(counters[i]!);
      shard.dirty = true;
      shard.candidates = null;
    });
  }

  /** The separation mu(n) of a relation's shard (bench diagnostics). */
  separation(relation: string): number {
    return separation(this.shard(relation, false)?.facts.size ?? 0, KG_DIM);
  }

  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    const heap = this.kernels.heap;
    for (const s of this.shards.values()) {
      heap.release(s.counters);
      heap.release(s.bits);
    }
    this.shards.clear();
    this.objectRows.dispose();
    heap.release(this.scratch);
  }

  private shard(relation: string, create: boolean): Shard | undefined {
    if (this.disposed) throw new SvcError("E_CLOSED", "the knowledge graph was closed or dropped");
    let s = this.shards.get(relation);
    if (s === undefined && create) {
      const heap = this.kernels.heap;
      s = {
        relation,
        counters: heap.calloc(KG_DIM * 4),
        bits: heap.alloc(KG_BYTES),
        dirty: true,
        facts: new Map(),
        objects: new Map(),
        subjects: new Map(),
        candidates: null,
      };
      this.shards.set(relation, s);
    }
    return s;
  }

  /** counters += weight * bipolar(subjectVec xor objectVec). */
  private accumulate(shard: Shard, subject: string, object: string, weight: 1 | -1): void {
    const k = this.kernels;
    const row = this.objectRow(object);
    this.fill(this.scratch, "subject", subject);
    const pair = this.scratch + KG_BYTES;
    k.bind(this.scratch, this.objectRows.rowPtr(row), pair, KG_WORDS);
    k.bundleAdd(shard.counters, pair, KG_DIM, weight);
    shard.dirty = true;
  }

  private objectRow(name: string): number {
    let row = this.rowOf.get(name);
    if (row === undefined) {
      row = this.objectRows.count;
      const ptr = this.objectRows.reserve(1);
      this.fill(ptr, "object", name);
      this.rowOf.set(name, row);
      this.rowNames.push(name);
    }
    return row;
  }

  private fill(ptr: number, role: KgRole, name: string): void {
    fillVector(this.kernels.heap.u32(ptr, KG_DIM / 32), this.seed, role, name);
  }
}

function bump(m: Map<string, number>, k: string, d: number): number {
  const v = (m.get(k) ?? 0) + d;
  if (v === 0) m.delete(k);
  else m.set(k, v);
  return v;
}

function round(x: number): number {
  return Math.round(x * 1e6) / 1e6;
}
