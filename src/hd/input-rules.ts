/**
 * @module hd/input-rules — the one home of the hyperdimensional layer's input rules: graph and model names, term
 * sizes, request and model limits, seeds (a leaf: imports nothing). The request schemas (tools/hd-ops.ts) and the
 * checks that stay in hd/ (path names, file contents, cross-field and state-dependent rules) are built from these.
 */

/** Seeds (kg, causal, analogy, roles) are u32: 0 .. 2^32 - 1. */
export const MAX_SEED = 0xffff_ffff;

/** A knowledge graph's name (a path parameter and a directory name): 1-128 letters, digits, '.', '_' or '-', starting with a letter or digit. */
export const KG_NAME_RE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
/** A fact's subject, relation or object: 1 character to this many UTF-8 bytes. */
export const MAX_TERM_BYTES = 512;
/** Facts one add or delete request sends (an import is written in frames of this many). */
export const MAX_FACTS_PER_REQUEST = 10_000;

/** A causal model's name (a path parameter and a directory name): 1-64 of A-Z a-z 0-9 _ . - starting with a letter or digit. */
export const CAUSAL_NAME_RE = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
/** Variables of a causal model. */
export const MAX_VARS = 1024;
/** Categories of one variable (values are u16). */
export const MAX_VOCAB = 65535;
/** Rows per model (all uploads together); u32 in the file format, capped well below it for memory. */
export const MAX_ROWS = 16_000_000;

/** Binary features of an analogy's items: 2^n_feat items (20: ~1M items, a 64 MiB table). */
export const MAX_FEATURES = 20;

/** Bits of a role-filler record (hd/roles.ts); sent as base64 of ROLES_DIM / 8 bytes. */
export const ROLES_DIM = 8192;
/** Roles one record binds or one read asks for. */
export const MAX_PAIRS = 256;
/** Fillers one read cleans up against. */
export const MAX_CANDIDATES = 10_000;
/** A role or filler name: 1 to this many characters. */
export const MAX_ROLE_NAME = 512;
