/**
 * @module probes — measurement points the lower layers report to without knowing who listens (a leaf): timings of
 * background and I/O work (metrics subscribe with onTiming) and spans around request work (`tracer`, set when
 * OpenTelemetry is on). Nobody listening costs an empty loop per timing; tracing off costs one null check per span
 * site and allocates nothing: call sites read `tracer === null ? work() : tracer.span(name, attrs, () => work())`.
 */

/** What a timing measures: a WAL fdatasync, a compaction or an index build (both rewrite a partition), a NATS JetStream publish (until its ack). */
export type TimingKind = "wal_fsync" | "compaction" | "index_build" | "nats_publish";

/** `seconds` the work took; `ok` false when it failed. */
export type TimingSink = (kind: TimingKind, seconds: number, ok: boolean) => void;

const sinks: TimingSink[] = [];

/** Report one timing to every subscribed sink. */
export function timing(kind: TimingKind, seconds: number, ok = true): void {
  for (let i = 0; i < sinks.length; i++) sinks[i]!(kind, seconds, ok);
}

/** Subscribe a sink; returns its unsubscribe. */
export function onTiming(sink: TimingSink): () => void {
  sinks.push(sink);
  return () => {
    const i = sinks.indexOf(sink);
    if (i >= 0) sinks.splice(i, 1);
  };
}

export type SpanAttributes = Record<string, string | number | boolean>;

/** A running span: attributes learned while it runs (a status code, a row count). */
export interface SpanHandle {
  setAttribute(key: string, value: string | number | boolean): void;
}

/**
 * Runs `fn` inside a span named `name`, child of the active one (or of the W3C `traceparent` a client sent, for a
 * request's first span); the span ends when the promise settles (an error is recorded on it).
 */
export interface Tracer {
  span<T>(name: string, attributes: SpanAttributes | undefined, fn: (span: SpanHandle) => Promise<T>, traceparent?: string): Promise<T>;
}

/** The active tracer; null: tracing is off (the default). */
export let tracer: Tracer | null = null;

/** Turn tracing on (a Tracer) or off (null). */
export function setTracer(t: Tracer | null): void {
  tracer = t;
}
