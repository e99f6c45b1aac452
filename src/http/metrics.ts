/**
 * @module metrics — Prometheus metrics of one server: requests by method, route and status, latency, bytes, vectors written
 * and scanned; the domain's own: WAL fdatasync latency, compaction and index-build durations (and counts), rows per index,
 * MCP tool calls and sessions, and in cluster mode NATS publish latency, connection state and shard apply lag.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics, type Metric, type MetricValue } from "prom-client";
import { onTiming } from "../probes.js";
import type { DamageReport } from "../store/damage.js";
import type { Usage } from "../account/prices.js";
import type { WorkerHeap } from "../pool/scan-task.js";

export interface MetricSources {
  /** The scan workers' V8 heaps (ScanPool.workerHeaps): the main isolate's are the default svc_nodejs_heap_* metrics. */
  workerHeaps?: () => WorkerHeap[];
  /** The kernels' shared WebAssembly.Memory: its size (it never shrinks) and the bytes of live blocks in it. */
  sharedMemory?: () => { size: number; used: number };
  /** Live vectors per open index (IndexService.rowCounts). */
  indexRows?: () => Promise<Array<{ tenant: string; index: string; rows: number }>>;
  /** The storage damage findings kept so far (store/reporter.ts KeptReports.reports). */
  damage?: () => DamageReport[];
}

/** What cluster mode reports at each scrape (ClusterNode). */
export interface ClusterMetricSources {
  /** 1 while this node's NATS connection is up, 0 while it reconnects or is closed. */
  natsConnected: () => boolean;
  /** Per shard replica served here: stream messages not yet applied (stream last sequence - applied sequence); absent: not reported. */
  applyLag?: () => Promise<Array<{ index: string; shard: string; lag: number }>>;
}

/**
 * prom-client's default gauges named *_total (a name Prometheus keeps for counters); each is the sum over the `type`
 * label of the gauge of the same name without _total, which stays (sum(svc_nodejs_active_handles) is the total).
 */
const MISNAMED_DEFAULTS = ["svc_nodejs_active_resources_total", "svc_nodejs_active_handles_total", "svc_nodejs_active_requests_total"];

/** Seconds buckets for fdatasync and NATS publish acks: 50 us .. 2.5 s. */
const IO_BUCKETS = [0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];

export class HttpMetrics {
  readonly registry = new Registry();
  /**
   * The request metrics are counted here, per (method, route), in plain fields and arrays, and handed to prom-client
   * only at a scrape (each family's `collect`): prom-client's own `inc` / `observe` hash the label values into a
   * string key and validate them on every call (~2 µs a request in all).
   */
  private readonly series = new Map<string, Map<string, RouteSeries>>();
  /** Every series, and every (series, status) counted, in the order first seen (prom-client's order of samples). */
  private readonly seriesInOrder: RouteSeries[] = [];
  private readonly statusesInOrder: Array<[RouteSeries, number]> = [];
  private bytesInTotal = 0;
  private bytesOutTotal = 0;
  private readonly requests = new Counter({
    name: "svc_http_requests_total",
    help: "HTTP requests answered, by method, route (the path template, or 'unmatched') and status",
    labelNames: ["method", "route", "status"] as const,
    registers: [this.registry],
    collect: () => {
      this.requests.reset();
      for (const [s, status] of this.statusesInOrder)
        this.requests.inc({ method: s.method, route: s.route, status: String(status) }, s.statuses.get(status)!);
    },
  });
  private readonly duration = new LatencyHistogram(
    "svc_http_request_duration_seconds",
    "Time from request to reply, by method and route",
    this.seriesInOrder,
    this.registry,
  );
  private readonly bytesIn = new Counter({
    name: "svc_http_request_bytes_total",
    help: "Request body bytes received",
    registers: [this.registry],
    collect: () => {
      this.bytesIn.reset();
      this.bytesIn.inc(this.bytesInTotal);
    },
  });
  private readonly bytesOut = new Counter({
    name: "svc_http_response_bytes_total",
    help: "Response body bytes sent",
    registers: [this.registry],
    collect: () => {
      this.bytesOut.reset();
      this.bytesOut.inc(this.bytesOutTotal);
    },
  });
  private readonly written = new Counter({
    name: "svc_vectors_written_total",
    help: "Vectors written (upsert, update)",
    registers: [this.registry],
  });
  private readonly scanned = new Counter({
    name: "svc_vectors_scanned_total",
    help: "Vectors scanned by queries",
    registers: [this.registry],
  });
  private readonly chargesLost = new Counter({
    name: "svc_wallet_charges_lost_total",
    help: "Read charges taken from a balance whose ledger write then failed (the ledger refuses every later charge)",
    registers: [this.registry],
  });
  private readonly toolCalls = new Counter({
    name: "svc_mcp_tool_calls_total",
    help: "MCP tool calls over /mcp, by tool and outcome",
    labelNames: ["tool", "outcome"] as const,
    registers: [this.registry],
  });

  private readonly damageReports: () => DamageReport[];
  private readonly damage = new Gauge({
    name: "svc_store_damage",
    help: "Storage damage findings since start, by store, kind and whether the store is offline",
    labelNames: ["store", "kind", "offline"] as const,
    registers: [this.registry],
    collect: () => {
      this.damage.reset();
      for (const r of this.damageReports()) this.damage.inc({ store: r.store, kind: r.kind, offline: String(r.offline) });
    },
  });

  private readonly walFsync = new Histogram({
    name: "svc_wal_fsync_seconds",
    help: "Duration of write-ahead log fdatasyncs (every WAL of the process: indexes, records, ledger, directory)",
    buckets: IO_BUCKETS,
    registers: [this.registry],
  });
  private readonly maintenance = new Histogram({
    name: "svc_maintenance_duration_seconds",
    help: "Partition rewrites by kind (compaction: dead rows dropped; index_build: rows regrouped by IVF list) and outcome (ok, error); _count counts them",
    labelNames: ["kind", "outcome"] as const,
    buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300],
    registers: [this.registry],
  });
  private readonly natsPublish = new Histogram({
    name: "svc_nats_publish_seconds",
    help: "Cluster mode: JetStream publishes of the replicated log until their ack, by outcome",
    labelNames: ["outcome"] as const,
    buckets: IO_BUCKETS,
    registers: [this.registry],
  });
  private readonly unsubscribe: () => void;
  private mcpSessions: (() => number) | null = null;

  constructor(sources: MetricSources = {}) {
    this.damageReports = sources.damage ?? (() => []);
    collectDefaultMetrics({ register: this.registry, prefix: "svc_" });
    for (const name of MISNAMED_DEFAULTS) this.registry.removeSingleMetric(name);
    const { workerHeaps, sharedMemory, indexRows } = sources;
    const self = this;
    // Timings are process-wide (probes.ts): every WAL of this process reports to every HttpMetrics in it (one per server).
    this.unsubscribe = onTiming((kind, seconds, ok) => {
      if (kind === "wal_fsync") this.walFsync.observe(seconds);
      else if (kind === "nats_publish") this.natsPublish.observe({ outcome: ok ? "ok" : "error" }, seconds);
      else this.maintenance.observe({ kind, outcome: ok ? "ok" : "error" }, seconds);
    });
    new Gauge({
      name: "svc_pool_worker_heap_bytes",
      help: "Scan workers' V8 heaps as each last reported: used, total (committed) and physical bytes, by worker thread",
      labelNames: ["thread", "kind"] as const,
      registers: [this.registry],
      collect() {
        this.reset();
        for (const h of workerHeaps?.() ?? []) {
          this.set({ thread: String(h.threadId), kind: "used" }, h.used);
          this.set({ thread: String(h.threadId), kind: "total" }, h.total);
          this.set({ thread: String(h.threadId), kind: "physical" }, h.physical);
        }
      },
    });
    new Gauge({
      name: "svc_kernels_shared_memory_bytes",
      help: "The kernels' shared WebAssembly memory: size (never shrinks) and used (live blocks)",
      labelNames: ["kind"] as const,
      registers: [this.registry],
      collect() {
        this.reset();
        const m = sharedMemory?.();
        if (m === undefined) return;
        this.set({ kind: "size" }, m.size);
        this.set({ kind: "used" }, m.used);
      },
    });
    new Gauge({
      name: "svc_process_array_buffers_bytes",
      help: "Bytes of ArrayBuffers and SharedArrayBuffers of the main isolate (process.memoryUsage().arrayBuffers; part of svc_nodejs_external_memory_bytes)",
      registers: [this.registry],
      collect() {
        this.set(process.memoryUsage().arrayBuffers);
      },
    });
    new Gauge({
      name: "svc_index_rows",
      help: "Live vectors per open vector index (indexes not opened since start are absent)",
      labelNames: ["tenant", "index"] as const,
      registers: [this.registry],
      async collect() {
        this.reset();
        for (const r of (await indexRows?.()) ?? []) this.set({ tenant: r.tenant, index: r.index }, r.rows);
      },
    });
    new Gauge({
      name: "svc_mcp_sessions",
      help: "Open MCP sessions at /mcp (streamable HTTP)",
      registers: [this.registry],
      collect() {
        this.set(self.mcpSessions?.() ?? 0);
      },
    });
  }

  /** The open MCP sessions' count, read at each scrape (the /mcp endpoint's session table). */
  watchMcpSessions(count: () => number): void {
    this.mcpSessions = count;
  }

  /** Cluster mode's gauges (registered only then), read at each scrape. */
  watchCluster(sources: ClusterMetricSources): void {
    new Gauge({
      name: "svc_nats_connected",
      help: "Cluster mode: 1 while this node's NATS connection is up, 0 while it is reconnecting or closed",
      registers: [this.registry],
      collect() {
        this.set(sources.natsConnected() ? 1 : 0);
      },
    });
    const applyLag = sources.applyLag;
    if (applyLag) {
      new Gauge({
        name: "svc_shard_apply_lag_messages",
        help: "Cluster mode: log messages a shard replica served here has not applied yet (stream last sequence - applied)",
        labelNames: ["index", "shard"] as const,
        registers: [this.registry],
        async collect() {
          this.reset();
          for (const r of await applyLag()) this.set({ index: r.index, shard: r.shard }, r.lag);
        },
      });
    }
  }

  /** Stop receiving process-wide timings (the server closed). */
  close(): void {
    this.unsubscribe();
  }

  /** `method` upper case (GET); `route` the path template (/v1/indexes/{name}) or "unmatched". */
  observe(method: string, route: string, status: number, seconds: number, bytesIn: number, bytesOut: number): void {
    let routes = this.series.get(method);
    if (routes === undefined) this.series.set(method, (routes = new Map()));
    let s = routes.get(route);
    if (s === undefined) {
      routes.set(route, (s = new RouteSeries(method, route)));
      this.seriesInOrder.push(s);
    }
    if (s.add(status, seconds)) this.statusesInOrder.push([s, status]);
    this.bytesInTotal += bytesIn;
    this.bytesOutTotal += bytesOut;
  }

  usage(u: Usage): void {
    if (u.written) this.written.inc(u.written);
    if (u.scanned) this.scanned.inc(u.scanned);
  }

  /** A read's charge, settled after its reply, failed to reach the ledger. */
  chargeLost(): void {
    this.chargesLost.inc();
  }

  toolCall(tool: string, ok: boolean): void {
    this.toolCalls.inc({ tool, outcome: ok ? "ok" : "error" });
  }

  text(): Promise<string> {
    return this.registry.metrics();
  }
}

/** Upper bounds (seconds) of svc_http_request_duration_seconds's buckets. */
const LATENCY_BUCKETS = [0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10];

/** One (method, route)'s requests since start: a count per status, and the latency histogram's buckets, sum and count. */
class RouteSeries {
  readonly statuses = new Map<number, number>();
  /** Observations per bucket (not cumulative); the last slot is above the largest bound (+Inf only). */
  readonly buckets = new Float64Array(LATENCY_BUCKETS.length + 1);
  sum = 0;
  count = 0;
  /** The label values as the metric values carry them (made once). */
  readonly labels: { method: string; route: string };

  constructor(
    readonly method: string,
    readonly route: string,
  ) {
    this.labels = { method, route };
  }

  /** Count one request (its latency in the first bucket whose bound is >= it, as prom-client's Histogram); true when its status is new here. */
  add(status: number, seconds: number): boolean {
    const n = this.statuses.get(status);
    this.statuses.set(status, (n ?? 0) + 1);
    let b = 0;
    while (b < LATENCY_BUCKETS.length && seconds > LATENCY_BUCKETS[b]!) b++;
    this.buckets[b]!++;
    this.sum += seconds;
    this.count++;
    return n === undefined;
  }
}

/**
 * A histogram by method and route over RouteSeries, registered as a prom-client metric: `get()` gives the values in
 * the shape and order prom-client's own Histogram gives them (cumulative `_bucket` per bound with `le` first, `+Inf`,
 * `_sum`, `_count`), so the exposition is the same text; they are made at a scrape only.
 */
class LatencyHistogram {
  readonly type = "histogram";
  readonly aggregator = "sum";

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly series: readonly RouteSeries[],
    registry: Registry,
  ) {
    registry.registerMetric(this as unknown as Metric);
  }

  get(): Promise<{
    name: string;
    help: string;
    type: string;
    values: Array<MetricValue<string> & { metricName: string }>;
    aggregator: string;
  }> {
    const values: Array<MetricValue<string> & { metricName: string }> = [];
    const bucket = `${this.name}_bucket`;
    for (const s of this.series) {
      let acc = 0;
      for (let i = 0; i < LATENCY_BUCKETS.length; i++) {
        acc += s.buckets[i]!;
        values.push({ value: acc, labels: { le: LATENCY_BUCKETS[i]!, ...s.labels }, metricName: bucket });
      }
      values.push({ value: s.count, labels: { le: "+Inf", ...s.labels }, metricName: bucket });
      values.push({ value: s.sum, labels: { ...s.labels }, metricName: `${this.name}_sum` });
      values.push({ value: s.count, labels: { ...s.labels }, metricName: `${this.name}_count` });
    }
    return Promise.resolve({ name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator });
  }

  /** Registry.resetMetrics: the counts are the server's since start; kept. */
  reset(): void {}
}
