/**
 * @module app/tracing — optional OpenTelemetry traces (off by default; loaded only when configured): a span per HTTP
 * route, per engine call (query, upsert, delete) and per scan-pool task, parented through AsyncLocalStorage and a
 * client's W3C `traceparent`, exported over OTLP/HTTP (or to the exporter a test gives). One tracer per process.
 */
import { context, propagation, SpanStatusCode, trace, type Span } from "@opentelemetry/api";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { BatchSpanProcessor, SimpleSpanProcessor, type SpanExporter } from "@opentelemetry/sdk-trace-base";
import { NodeTracerProvider } from "@opentelemetry/sdk-trace-node";
import { setTracer, tracer as current } from "../probes.js";
import { VERSION } from "../version.js";
import { SvcError } from "../errors.js";

export interface TracingOptions {
  /** OTLP/HTTP base URL (http://collector:4318): spans go to <endpoint>/v1/traces, batched. */
  endpoint?: string;
  /** Export here instead, one span at a time (tests: InMemorySpanExporter). */
  exporter?: SpanExporter;
  /** resource service.name; default OTEL_SERVICE_NAME, else "svc". */
  serviceName?: string;
}

export interface Tracing {
  /** Stop tracing: export what is pending, then spans are off again. */
  shutdown(): Promise<void>;
}

export function startTracing(opts: TracingOptions): Tracing {
  if (current !== null) throw new SvcError("E_CONFLICT", "tracing is already on in this process (one tracer per process)");
  if (!opts.exporter && !opts.endpoint)
    throw new SvcError("E_BAD_REQUEST", "tracing needs an OTLP endpoint (--otlp-endpoint or OTEL_EXPORTER_OTLP_ENDPOINT)", {
      field: "otlp-endpoint",
    });
  if (opts.endpoint !== undefined && !/^https?:\/\/[^\s/]+/.test(opts.endpoint))
    throw new SvcError("E_BAD_REQUEST", `the OTLP endpoint must be an http(s) URL, not '${opts.endpoint}'`, { field: "otlp-endpoint" });
  const exporter = opts.exporter ?? new OTLPTraceExporter({ url: `${opts.endpoint!.replace(/\/+$/, "")}/v1/traces` });
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({
      "service.name": opts.serviceName ?? (process.env.OTEL_SERVICE_NAME || "svc"),
      "service.version": VERSION,
    }),
    spanProcessors: [opts.exporter ? new SimpleSpanProcessor(exporter) : new BatchSpanProcessor(exporter)],
  });
  // The AsyncLocalStorage context manager and W3C propagator (the first registration in a process stays).
  provider.register();
  const otel = provider.getTracer("svc", VERSION);
  setTracer({
    span(name, attributes, fn, traceparent) {
      const parent = traceparent ? propagation.extract(context.active(), { traceparent }) : context.active();
      return otel.startActiveSpan(name, { attributes }, parent, async (span: Span) => {
        try {
          return await fn(span);
        } catch (err) {
          span.recordException(err as Error);
          span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error).message });
          throw err;
        } finally {
          span.end();
        }
      });
    },
  });
  return {
    async shutdown() {
      setTracer(null);
      await provider.shutdown();
      trace.disable(); // the next startTracing in this process registers its provider again
    },
  };
}
