/** @module stats — latency summaries for the whole-run benchmarks (milliseconds). */

export interface Latency {
  p50: number;
  p99: number;
  mean: number;
  samples: number;
}

export function summarize(ms: number[]): Latency {
  const s = [...ms].sort((a, b) => a - b);
  const at = (q: number) => s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
  return { p50: at(0.5), p99: at(0.99), mean: s.reduce((a, b) => a + b, 0) / s.length, samples: s.length };
}

/** Time `count` sequential calls after `warmup` untimed ones; returns per-call ms. */
export async function timeCalls(count: number, warmup: number, call: (i: number) => unknown): Promise<number[]> {
  for (let i = 0; i < warmup; i++) await call(i);
  const out: number[] = [];
  for (let i = 0; i < count; i++) {
    const t0 = process.hrtime.bigint();
    await call(i);
    out.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  return out;
}

/**
 * Put a suite's RESULTS.md section (which starts with `<!-- name -->` and ends with `<!-- /name -->`)
 * in place of its previous version, or before the kernel micro-benchmarks when it is new.
 */
/**
 * `md` with every `<!-- name -->` ... `<!-- /name -->` section of `previous` that `md` lacks put back
 * (spliceSection's place): a full re-render keeps what hand-run benches (soak, fuzz, overwrite, ...) recorded.
 */
export function keepSections(previous: string, md: string): string {
  for (const m of previous.matchAll(/<!-- ([a-z0-9-]+) -->\n[\s\S]*?<!-- \/\1 -->\n/g)) {
    if (!md.includes(`<!-- ${m[1]} -->`)) md = spliceSection(md, m[1]!, m[0]);
  }
  return md;
}

export function spliceSection(md: string, name: string, section: string): string {
  const start = md.indexOf(`<!-- ${name} -->`);
  const end = md.indexOf(`<!-- /${name} -->`);
  if (start >= 0 && end > start) return md.slice(0, start) + section + md.slice(end + `<!-- /${name} -->\n`.length);
  for (const anchor of ["## Kernel micro-benchmarks", "## Reading these numbers"]) {
    const at = md.indexOf(anchor);
    if (at >= 0) return md.slice(0, at) + section + "\n" + md.slice(at);
  }
  return `${md.trimEnd()}\n\n${section}`;
}
