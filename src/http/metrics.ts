/**
 * @module metrics — Prometheus metrics of one server: requests by method, route and status, latency, bytes, vectors written
 * and scanned; the domain's own: WAL fdatasync latency, compaction and index-build durations (and counts), rows per index,
 * MCP tool calls and sessions, and in cluster mode NATS publish latency, connection state and shard apply lag.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";
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
  private readonly requests = new Counter({
    name: "svc_http_requests_total",
    help: "HTTP requests answered, by method, route (the path template, or 'unmatched') and status",
    labelNames: ["method", "route", "status"] as const,
    registers: [this.registry],
  });
  private readonly duration = new Histogram({
    name: "svc_http_request_duration_seconds",
    help: "Time from request to reply, by method and route",
    labelNames: ["method", "route"] as const,
    buckets: [0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10],
    registers: [this.registry],
  });
  private readonly bytesIn = new Counter({
    name: "svc_http_request_bytes_total",
    help: "Request body bytes received",
    registers: [this.registry],
  });
  private readonly bytesOut = new Counter({
    name: "svc_http_response_bytes_total",
    help: "Response body bytes sent",
    registers: [this.registry],
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
    this.requests.inc({ method, route, status: String(status) });
    this.duration.observe({ method, route }, seconds);
    if (bytesIn) this.bytesIn.inc(bytesIn);
    if (bytesOut) this.bytesOut.inc(bytesOut);
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
