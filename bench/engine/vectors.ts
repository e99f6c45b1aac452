/** @module vectors — seeded clustered float vectors, regenerated on demand by index (no 4 GB array in memory). */
import { mulberry32 } from "../../src/kernels/random.js";

const NOISE = 1 << 16;
const CLUSTERS = 1000;
const LATENT = 4;

/**
 * vector(i) = centre (one of 1000) + a point of a 4-d latent space through a shared random
 * basis + 0.1 x uniform noise read from a seeded table at a random offset. The latent part
 * gives clusters inner structure, as embeddings have: with isotropic noise alone every
 * member of a cluster would be equidistant from a query and "top-10" would be arbitrary.
 */
export class ClusteredVectors {
  readonly dim: number;
  private readonly centres: Float32Array;
  private readonly basis: Float32Array;
  private readonly noise: Float32Array;
  private readonly seed: number;
  private readonly spread: number;

  private readonly perCluster: boolean;
  private readonly clusters: number;

  /**
   * `spread` scales the latent part: 1 gives tight, well-separated clusters; 4 makes neighbouring clusters overlap (harder for approximate search).
   * `perClusterBasis`: each cluster has its own latent basis (a per-cluster low-rank part) instead of one shared by all.
   * `clusters`: the number of centres (default 1000).
   */
  constructor(dim: number, seed: number, spread = 1, perClusterBasis = false, clusters = CLUSTERS) {
    this.dim = dim;
    this.seed = seed;
    this.spread = spread;
    this.perCluster = perClusterBasis;
    this.clusters = clusters;
    const next = mulberry32(seed);
    const u = () => next() / 2 ** 32 - 0.5;
    this.centres = Float32Array.from({ length: clusters * dim }, u);
    this.basis = Float32Array.from({ length: (perClusterBasis ? clusters : 1) * LATENT * dim }, u);
    this.noise = Float32Array.from({ length: NOISE + dim }, () => 0.1 * u());
  }

  /** Write vector i into out at offset (dim floats). */
  write(i: number, out: Float32Array, offset = 0): void {
    const next = mulberry32(this.seed ^ Math.imul(i + 1, 0x9e3779b1));
    const u = () => next() / 2 ** 32 - 0.5;
    const cluster = next() % this.clusters;
    const c = cluster * this.dim;
    const o = next() % NOISE;
    const s = this.spread;
    const [z0, z1, z2, z3] = [s * u(), s * u(), s * u(), s * u()];
    const b = this.basis;
    const d = this.dim;
    const at = this.perCluster ? cluster * LATENT * d : 0;
    for (let j = 0; j < d; j++) {
      const bj = at + j;
      out[offset + j] =
        this.centres[c + j]! + z0 * b[bj]! + z1 * b[d + bj]! + z2 * b[2 * d + bj]! + z3 * b[3 * d + bj]! + this.noise[o + j]!;
    }
  }

  get(i: number): Float32Array {
    const out = new Float32Array(this.dim);
    this.write(i, out);
    return out;
  }
}

/**
 * Exact top-k by cosine of a few queries over rows handed in one at a time (`add(i, v)`), so the
 * truth of a large load is computed while its bodies are generated instead of in a second pass.
 */
export class ExactTopK {
  private readonly units: Float32Array[];
  private readonly best: Array<Array<{ i: number; s: number }>>;

  constructor(
    queries: readonly Float32Array[],
    private readonly k: number,
  ) {
    this.units = queries.map((q) => {
      const norm = Math.sqrt(q.reduce((s, x) => s + x * x, 0));
      return q.map((x) => x / norm);
    });
    this.best = queries.map(() => []);
  }

  /** Row i with values v[offset, offset + dim). */
  add(i: number, v: Float32Array, offset = 0): void {
    const dim = this.units[0]?.length ?? 0;
    let nv = 0;
    for (let j = 0; j < dim; j++) nv += v[offset + j]! * v[offset + j]!;
    const inv = 1 / Math.sqrt(nv);
    for (let qi = 0; qi < this.units.length; qi++) {
      const u = this.units[qi]!;
      let d = 0;
      for (let j = 0; j < dim; j++) d += u[j]! * v[offset + j]!;
      const s = d * inv;
      const b = this.best[qi]!;
      if (b.length < this.k || s > b[b.length - 1]!.s) {
        b.push({ i, s });
        b.sort((x, y) => y.s - x.s);
        if (b.length > this.k) b.pop();
      }
    }
  }

  /** Per query, the rows of its best k, best first. */
  result(): number[][] {
    return this.best.map((b) => b.map((e) => e.i));
  }
}

/** Exact top-k by cosine among rows i in [0, n) with keep(i), for several queries in one pass. */
export function exactTopK(
  data: ClusteredVectors,
  n: number,
  queries: Float32Array[],
  k: number,
  keep: (i: number) => boolean = () => true,
): number[][] {
  const top = new ExactTopK(queries, k);
  const v = new Float32Array(data.dim);
  for (let i = 0; i < n; i++) {
    if (!keep(i)) continue;
    data.write(i, v);
    top.add(i, v);
  }
  return top.result();
}
