/** @module index — the WASM export surface; src/kernels/abi.ts is its only reader. */

// Bump ABI_VERSION whenever an export's name, parameters or memory contract changes.
const ABI_VERSION: i32 = 6;
export function abiVersion(): i32 {
  return ABI_VERSION;
}

export { hammingTopK, hammingTopKMasked, hammingTopKList, gatherRows, hammingTopKMulti, hamming } from "./scan";
export { buildQueryTable, scanQueryTable } from "./query-table";
export { hammingTopKRanges, ivfProbe, nearestCentroids } from "./ivf";
export { bind, bundleAdd, bundleThreshold } from "./bundle";
export { encodeF32 } from "./rotate";
export { asymTable, asymScores, dotNorm, dotNormMany, dotF32Many, dotF32Keep } from "./rescore";
export { readProbe } from "./probe";
export {
  refDistance, refHammingTopK, refHammingTopKMasked, refHammingTopKList, refBind, refBundleAdd, refBundleThreshold, refEncodeF32, refDotNorm,
} from "./reference";
