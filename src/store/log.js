/**
 * @module log — the seam between a collection and its log: the `Log` interface (append -> a position
 * acknowledged once durable), positions and their order, how a log is opened and replayed, and what
 * opening found. The WAL (wal.ts) implements it; so does cluster/jetstream-log.ts on a replicated
 * NATS JetStream stream, with `segment` 0 and `offset` = the stream sequence.
 */
/** True when `a` is at or before `b` in log order. */
export function atOrBefore(a, b) {
    return a.segment < b.segment || (a.segment === b.segment && a.offset <= b.offset);
}
//# sourceMappingURL=log.js.map