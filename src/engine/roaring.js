/** @module roaring — the one import of the native roaring bitmaps (a CommonJS package) for ESM code. */
import roaring from "roaring";
export const RoaringBitmap32 = roaring.RoaringBitmap32;
//# sourceMappingURL=roaring.js.map