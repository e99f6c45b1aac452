/** WAL frame types (type 0 is the WAL's own padding). Never renumber: logs on disk use them. */
export const OP = { upsert: 1, delete: 2, deleteAll: 3, update: 4, move: 5 };
//# sourceMappingURL=ops.js.map