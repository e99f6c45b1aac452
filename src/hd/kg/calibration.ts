/**
 * @module hd/kg/calibration — the signal model of a thresholded bundle, the theoretical accuracy curve and
 * the calibrated confidence of an answer.
 *
 * Model: a shard bundles n bound pairs into majority bits. Unbinding with the right subject leaves the
 * right object's vector plus noise: each bit agrees with it with probability 1/2 + p(n), where
 * p(n) = C(n-1, floor((n-1)/2)) / 2^n (exact for odd and even n with random tie bits), while every other
 * candidate agrees with probability 1/2. In units of the noise s.d. sqrt(D)/2 of a Hamming distance, the
 * right object stands mu(n) = 2 p(n) sqrt(D) above the others (about sqrt(2D / (pi n))).
 *
 * Confidence: with z_i = (D/2 - dist_i) / (sqrt(D)/2) for the k nearest candidates, the likelihood that
 * candidate i is the object is exp(mu z_i - mu^2/2) against the all-noise model, so with a uniform prior over
 * candidates the posterior of the best one is softmax(mu z / T)[best] over ALL m candidates. The k nearest
 * enter by their distances; the m - k others are noise known only to lie below the k-th z, so they enter by
 * their expectation: each adds E[exp(mu z) | z < z_k] = exp(mu^2/2) Phi(z_k - mu) / Phi(z_k). Leaving them
 * out (as before) is harmless while mu is large, but past capacity (mu ~ 1.7 at 60k facts) a shard with
 * 2,000 candidates has hundreds of near-equal rivals outside the top 32, and the truncated sum said 0.14
 * where 0.04 was right.
 */

/**
 * Temperature of the posterior; 1 = the pure model, no fitted constant needed. Measured with
 * bench/hd-kg-bench.ts: see bench/RESULTS.md (ECE per load, and past capacity: 60k facts over 2,000 objects).
 */
export const TEMPERATURE = 1;
/** Candidates whose distances enter the posterior. */
export const POSTERIOR_K = 32;
/** Answers below this confidence are reported as object null. */
export const MIN_CONFIDENCE = 0.05;

/** log C(n-1, floor((n-1)/2)) - n log 2, by lgamma. */
function logAgreeExcess(n: number): number {
  const m = n - 1;
  const k = Math.floor(m / 2);
  return lgamma(m + 1) - lgamma(k + 1) - lgamma(m - k + 1) - n * Math.LN2;
}

/** p(n): how much more often than 1/2 a bundled row's bits agree with the majority of n rows. */
export function agreeExcess(n: number): number {
  if (n <= 0) return 0;
  if (n === 1) return 0.5;
  return Math.exp(logAgreeExcess(n));
}

/** mu(n) for dimension dim: the right object's separation from the others in noise standard deviations. */
export function separation(n: number, dim: number): number {
  return 2 * agreeExcess(n) * Math.sqrt(dim);
}

/** z of a Hamming distance: how many noise s.d. closer than a random vector. */
export function zScore(dist: number, dim: number): number {
  return (dim / 2 - dist) / (Math.sqrt(dim) / 2);
}

/**
 * Posterior that the nearest candidate is the object, from the k nearest distances (ascending) and the
 * number of candidates m (>= k; the ones not listed are accounted for by expectation, see the module doc).
 */
export function confidence(dists: ArrayLike<number>, n: number, dim: number, candidates = dists.length, temperature = TEMPERATURE): number {
  const k = dists.length;
  if (k === 0 || n <= 0) return 0;
  const mu = separation(n, dim) / temperature;
  const z0 = zScore(dists[0]!, dim);
  let sum = 0;
  for (let i = 0; i < k; i++) sum += Math.exp(mu * (zScore(dists[i]!, dim) - z0));
  const rest = candidates - k;
  if (rest > 0) {
    const zk = zScore(dists[k - 1]!, dim);
    sum += rest * Math.exp((mu * mu) / 2 - mu * z0 + logPhi(zk - mu) - logPhi(zk));
  }
  return 1 / sum;
}

/**
 * Theoretical top-1 accuracy with n facts in the shard and m candidate objects:
 * P = integral phi(x) Phi(x + mu)^(m-1) dx (the right object beats m-1 independent noise candidates).
 */
export function theoreticalAccuracy(n: number, m: number, dim: number): number {
  if (m <= 1) return 1;
  const mu = separation(n, dim);
  const steps = 800;
  const lo = -9,
    hi = 9,
    h = (hi - lo) / steps;
  let acc = 0;
  for (let i = 0; i <= steps; i++) {
    const x = lo + i * h;
    const w = i === 0 || i === steps ? 0.5 : 1;
    acc += w * phi(x) * Math.exp((m - 1) * logPhi(x + mu));
  }
  return Math.min(1, acc * h);
}

/** The most facts a shard with m candidates can hold at >= `target` theoretical accuracy (capacity estimate). */
export function capacity(m: number, dim: number, target = 0.99): number {
  if (m <= 1) return Number.MAX_SAFE_INTEGER;
  let lo = 1,
    hi = 1 << 24;
  if (theoreticalAccuracy(lo, m, dim) < target) return 0;
  while (hi - lo > 1) {
    const mid = Math.floor((lo + hi) / 2);
    if (theoreticalAccuracy(mid, m, dim) >= target) lo = mid;
    else hi = mid;
  }
  return lo;
}

function phi(x: number): number {
  return Math.exp(-0.5 * x * x) / Math.sqrt(2 * Math.PI);
}

/** log of the standard normal CDF (erfc-based, accurate in both tails). */
function logPhi(x: number): number {
  if (x > 8) return -Math.exp(-0.5 * x * x) / (x * Math.sqrt(2 * Math.PI));
  return Math.log(0.5 * erfc(-x / Math.SQRT2));
}

/** erfc with relative error < 1.2e-7 (Numerical Recipes erfcc). */
function erfc(x: number): number {
  const z = Math.abs(x);
  const t = 1 / (1 + 0.5 * z);
  const r =
    t *
    Math.exp(
      -z * z -
        1.26551223 +
        t *
          (1.00002368 +
            t *
              (0.37409196 +
                t *
                  (0.09678418 +
                    t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))),
    );
  return x >= 0 ? r : 2 - r;
}

/** ln Gamma(x) for x > 0 (Lanczos, g = 7). */
function lgamma(x: number): number {
  const c = [
    0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313, -176.61502916214059, 12.507343278686905,
    -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7,
  ];
  if (x < 0.5) return Math.log(Math.PI / Math.abs(Math.sin(Math.PI * x))) - lgamma(1 - x);
  x -= 1;
  let a = c[0]!;
  const t = x + 7.5;
  for (let i = 1; i < 9; i++) a += c[i]! / (x + i);
  return 0.5 * Math.log(2 * Math.PI) + (x + 0.5) * Math.log(t) - t + Math.log(a);
}
