/** @module topk — bounded max-heap of packed (distance, row) keys used by every scan kernel. */

// A key packs distance in the high 32 bits and row in the low 32 bits, so ordering
// keys as u64 orders by distance, then by row: exactly the result order we promise.
// The heap lives in caller-provided memory: k u64 slots, max key at slot 0.

@inline export function packKey(dist: u32, row: u32): u64 {
  return (<u64>dist << 32) | <u64>row;
}

/** Replace the max key (slot 0) with `key` and restore the heap property. */
export function heapReplaceTop(heap: usize, size: i32, key: u64): void {
  let i = 0;
  while (true) {
    let c = (i << 1) + 1;
    if (c >= size) break;
    let ck = load<u64>(heap + (<usize>c << 3));
    let r = c + 1;
    if (r < size) {
      let rk = load<u64>(heap + (<usize>r << 3));
      if (rk > ck) { c = r; ck = rk; }
    }
    if (ck <= key) break;
    store<u64>(heap + (<usize>i << 3), ck);
    i = c;
  }
  store<u64>(heap + (<usize>i << 3), key);
}

/** Append `key` at slot `size` and sift it up. */
export function heapPush(heap: usize, size: i32, key: u64): void {
  let i = size;
  while (i > 0) {
    let p = (i - 1) >> 1;
    let pk = load<u64>(heap + (<usize>p << 3));
    if (pk >= key) break;
    store<u64>(heap + (<usize>i << 3), pk);
    i = p;
  }
  store<u64>(heap + (<usize>i << 3), key);
}

/** Offer a key to a heap of capacity k holding `size` keys; returns the new size. */
@inline export function heapOffer(heap: usize, size: i32, k: i32, key: u64): i32 {
  if (size < k) {
    heapPush(heap, size, key);
    return size + 1;
  }
  if (key < load<u64>(heap)) heapReplaceTop(heap, size, key);
  return size;
}

/** Heap-sort the heap in place into ascending key order. */
export function heapSortAscending(heap: usize, size: i32): void {
  let n = size;
  while (n > 1) {
    n--;
    let top = load<u64>(heap);
    let last = load<u64>(heap + (<usize>n << 3));
    store<u64>(heap + (<usize>n << 3), top);
    heapReplaceTop(heap, n, last);
  }
}

/** Distance bound for early rejection: a row is worth a heap offer only if dist <= this. */
@inline export function heapBound(heap: usize, size: i32, k: i32): u32 {
  return size < k ? u32.MAX_VALUE : <u32>(load<u64>(heap) >> 32);
}
