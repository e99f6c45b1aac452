/**
 * @module malloc-env — the glibc malloc settings docs/OPERATIONS.md recommends for `svc serve`
 * (environment variables: glibc reads them once, at process start, so they belong to the
 * launcher). Measured with bench/soak.ts (bench/RESULTS.md, soak section):
 * - MALLOC_ARENA_MAX=2: one arena besides the main one, instead of up to 8 per core, each
 *   keeping its own freed pages;
 * - MALLOC_MMAP_THRESHOLD_=131072: blocks of 128 KiB and more (request bodies, WAL and
 *   checkpoint buffers) are mapped and unmapped on their own. Setting it also turns off glibc's
 *   dynamic threshold, which otherwise rises to the largest block freed so far (up to 32 MiB:
 *   after one large ingest, every later body lands in the arenas and fragments them).
 */
export const MALLOC_ENV: Readonly<Record<string, string>> = { MALLOC_ARENA_MAX: "2", MALLOC_MMAP_THRESHOLD_: "131072" };
