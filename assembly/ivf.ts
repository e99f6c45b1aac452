/** @module ivf — kernels of the inverted-file index: the probe of one query (centroids, lists, bound), top-k over row ranges, nearest centroid per row (build). */
import { distWords } from "./distance";
import { heapOffer, heapSortAscending, packKey } from "./topk";
import { hammingTopK, offerRange } from "./scan";

/**
 * Top-k over the rows of `nr` ranges (u32 pairs [start, end) at `ranges`, not overlapping)
 * into one heap; with `mask` != 0 only rows whose bit is set there count. Returns the count
 * of ascending keys at heap.
 */
export function hammingTopKRanges(base: usize, words: i32, ranges: usize, nr: i32, q: usize, k: i32, heap: usize, mask: usize): i32 {
  let size = 0;
  for (let i = 0; i < nr; i++) {
    let start = <i32>load<u32>(ranges + (<usize>i << 3));
    let end = <i32>load<u32>(ranges + (<usize>i << 3), 4);
    size = offerRange(base, words, start, end, q, k, heap, size, mask);
  }
  heapSortAscending(heap, size);
  return size;
}

/**
 * One query's probe of an inverted file whose list l is rows [offsets[l], offsets[l + 1])
 * (u32 at `offsets`, lists + 1 of them) with radius radii[l] (u32): rows [indexedRows, count)
 * (the delta) are scanned first; then the `cap` nearest centroids are ranked (scratch holds
 * cap u64 keys) and, in that order, list i is scanned when i < minProbe, or its centroid is
 * within `slack` of the nearest one, or the heap is not full yet, or d(q, c) - radius <= the
 * current k-th distance (the triangle inequality with a quantile radius). The k-th distance
 * only falls, so a list passed over stays passed over. Lists scanned -> u32 at info.
 * Returns the count of ascending keys at heap.
 */
export function ivfProbe(base: usize, words: i32, count: i32, centroids: usize, lists: i32, offsets: usize, radii: usize, indexedRows: i32,
  q: usize, k: i32, heap: usize, mask: usize, minProbe: i32, cap: i32, slack: i32, scratch: usize, info: usize): i32 {
  let size = offerRange(base, words, indexedRows, count, q, k, heap, 0, mask);
  let nc = hammingTopK(centroids, words, 0, lists, q, cap, scratch);
  let d0 = <u32>(load<u64>(scratch) >> 32);
  let probed = 0;
  for (let i = 0; i < nc; i++) {
    let key = load<u64>(scratch + (<usize>i << 3));
    let d = <u32>(key >> 32);
    let l = <usize>(<u32>key);
    let take = i < minProbe || d <= d0 + <u32>slack || size < k;
    if (!take) {
      let kth = <u32>(load<u64>(heap) >> 32);
      take = d <= kth + load<u32>(radii + (l << 2));
    }
    if (!take) continue;
    probed++;
    size = offerRange(base, words, <i32>load<u32>(offsets + (l << 2)), <i32>load<u32>(offsets + (l << 2), 4), q, k, heap, size, mask);
  }
  store<u32>(info, probed);
  heapSortAscending(heap, size);
  return size;
}

/**
 * For each row in [start, end): the nearest of `nc` centroids (rows of the same width at
 * `centroids`; ties to the lower index) into out (u32 per row, row start first) and its
 * distance into dists (u32 per row, when dists != 0).
 */
export function nearestCentroids(base: usize, words: i32, start: i32, end: i32, centroids: usize, nc: i32, out: usize, dists: usize): void {
  let stride = <usize>words << 3;
  let p = base + <usize>start * stride;
  for (let r = start; r < end; r++, p += stride) {
    let best: u32 = u32.MAX_VALUE;
    let arg = 0;
    let c = centroids;
    for (let j = 0; j < nc; j++, c += stride) {
      let d = distWords(p, c, words);
      if (d < best) { best = d; arg = j; }
    }
    let o = <usize>(r - start) << 2;
    store<u32>(out + o, arg);
    if (dists != 0) store<u32>(dists + o, best);
  }
}
