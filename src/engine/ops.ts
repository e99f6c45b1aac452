/** @module ops — the collection's write operations as they are logged: one WAL frame type each. */
import type { Metadata } from "./filter/metadata.js";

/** WAL frame types (type 0 is the WAL's own padding). Never renumber: logs on disk use them. */
export const OP = { upsert: 1, delete: 2, deleteAll: 3, update: 4, move: 5 } as const;

/**
 * Upsert: `v` holds ids.length rows back to back, float32 little-endian (cosine collections)
 * or packed bit rows (hamming collections); `m[i]` is row i's metadata or null; `p[i]` row
 * i's payload or null, and `p` is left out when no row has one (frames logged before
 * payloads existed have none).
 */
export interface UpsertOp {
  ns: string;
  ids: string[];
  v: Uint8Array;
  m: (Metadata | null)[];
  p?: (Uint8Array | null)[];
}
export interface DeleteOp {
  ns: string;
  ids: string[];
}
export interface DeleteAllOp {
  ns: string;
}
/** Update: new values replace the row's vector; `m` is merged into its metadata (setMetadata); `p` replaces the payload (absent: kept). */
export interface UpdateOp {
  ns: string;
  id: string;
  v: Uint8Array | null;
  m: Metadata | null;
  p?: Uint8Array;
}
/** Move: namespace `to` becomes what `from` was (its own rows are dropped) and `from` becomes empty. */
export interface MoveOp {
  from: string;
  to: string;
}

export type Op =
  | { type: typeof OP.upsert; body: UpsertOp }
  | { type: typeof OP.delete; body: DeleteOp }
  | { type: typeof OP.deleteAll; body: DeleteAllOp }
  | { type: typeof OP.update; body: UpdateOp }
  | { type: typeof OP.move; body: MoveOp };
