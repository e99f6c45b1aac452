/** @module input-rules — the one home of the input rules every layer enforces (vector indexes, records, backups, imports, embed, admin): names, sizes, batch and page limits (a leaf: imports nothing). */

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

// ---- typed records (/v1/records) ----
/** A records namespace (a path parameter): 1-128 letters, digits, '_', '.', ':' and '-', starting with a letter or digit. */
export const RECORD_NAMESPACE_RE = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/;
/** Records per ingest call (and per write of an import). */
export const MAX_RECORD_ITEMS = 1000;
/** A record's text and its meta (as msgpack), in bytes. */
export const MAX_RECORD_TEXT_BYTES = 64 * 1024;
export const MAX_RECORD_META_BYTES = 64 * 1024;
/** A record's kind, in characters. */
export const MAX_RECORD_KIND_CHARS = 128;
/** Tags of one record. */
export const MAX_RECORD_TAGS = 64;
/** One tag, kind or id in a list (a record's tags, a filter's kinds and tags, forget's ids, timeline's `after`), in characters. */
export const MAX_RECORD_WORD_CHARS = 256;
/** Values of one filter list (kind, tagsAny, tagsAll). */
export const MAX_RECORD_FILTER_VALUES = 100;
/** Ids one forget names. */
export const MAX_FORGET_IDS = 10_000;
/** A record's ttlDays: most days. */
export const MAX_TTL_DAYS = 36_500;
/** topK of a records query: default and most. */
export const DEFAULT_RECORD_TOP_K = 10;
export const MAX_RECORD_TOP_K = 1000;
/** Timeline page size: default and most. */
export const DEFAULT_TIMELINE = 50;
export const MAX_TIMELINE = 500;

// ---- backups, bulk imports, embed, admin ----
/** Backup and restore-job pages: default and most. */
export const DEFAULT_BACKUP_PAGE = 10;
export const MAX_BACKUP_PAGE = 100;
/** A backup's name and description, in characters. */
export const MAX_BACKUP_TEXT = 500;
/** Import pages: default and most. */
export const MAX_IMPORT_PAGE = 100;
/** An import's uri, in characters. */
export const MAX_IMPORT_URI_CHARS = 2000;
/** Texts (or Pinecone inputs) one embed call takes. */
export const MAX_EMBED_TEXTS = 256;
/** A tenant id: 1-64 lowercase letters, digits, '_' and '-', starting with a letter or digit. */
export const TENANT_RE = /^[a-z0-9][a-z0-9_-]{0,63}$/;
/** An API key's label, in characters. */
export const MAX_KEY_NAME = 100;
/** Largest single credit, in USD: a typo guard, not a policy. */
export const MAX_CREDIT_USD = 1_000_000;
