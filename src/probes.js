/**
 * @module probes — measurement points the lower layers report to without knowing who listens (a leaf): timings of
 * background and I/O work (metrics subscribe with onTiming) and spans around request work (`tracer`, set when
 * OpenTelemetry is on). Nobody listening costs an empty loop per timing; tracing off costs one null check per span
 * site and allocates nothing: call sites read `tracer === null ? work() : tracer.span(name, attrs, () => work())`.
 */
const sinks = [];
/** Report one timing to every subscribed sink. */
export function timing(kind, seconds, ok = true) {
    for (let i = 0; i < sinks.length; i++)
        sinks[i](kind, seconds, ok);
}
/** Subscribe a sink; returns its unsubscribe. */
export function onTiming(sink) {
    sinks.push(sink);
    return () => {
        const i = sinks.indexOf(sink);
        if (i >= 0)
            sinks.splice(i, 1);
    };
}
/** The active tracer; null: tracing is off (the default). */
export let tracer = null;
/** Turn tracing on (a Tracer) or off (null). */
export function setTracer(t) {
    tracer = t;
}
//# sourceMappingURL=probes.js.map