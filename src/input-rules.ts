/** @module input-rules — the one home of the vector-index input rules every layer enforces: names, sizes, batch and page limits (a leaf: imports nothing). */

/** An index name: 1-45 lowercase letters, digits and '-', starting and ending with a letter or digit (Pinecone's rule). */
export const INDEX_NAME_RE = /^[a-z0-9](?:[a-z0-9-]{0,43}[a-z0-9])?$/;
/** Most float values of a dense index's vectors. */
export const MAX_DIMENSION = 20_000;
/** How an index ranks (search.ts `Scoring`): cosine and dotproduct larger first, euclidean (squared distance) smaller first. Stored in index.json. */
export const METRICS = ["cosine", "dotproduct", "euclidean"] as const;
/** Dense indexes hold a float vector of `dimension` values per record (sparse values too on dotproduct ones); sparse indexes only sparse values (Pinecone's `vector_type`). */
export const VECTOR_TYPES = ["dense", "sparse"] as const;
/** Longest id, namespace and id prefix, in UTF-8 bytes. */
export const MAX_ID_BYTES = 512;
/** Most vectors one upsert sends. */
export const MAX_UPSERT_VECTORS = 10_000;
/** Most ids one fetch names. */
export const MAX_FETCH_IDS = 1000;
/** Page sizes of vectors/list, vectors/fetch_by_metadata and namespaces: default (Pinecone's) and most. */
export const DEFAULT_PAGE = 100;
export const MAX_PAGE = 1000;
/** topK of an index query: default and most. */
export const DEFAULT_TOP_K = 10;
export const MAX_TOP_K = 10_000;
