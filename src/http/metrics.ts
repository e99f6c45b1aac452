/** @module metrics — Prometheus metrics of one server: requests by route and status, latency, bytes, vectors written and scanned. */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";
import { damageReports } from "../store/damage.js";
import type { Usage } from "../account/prices.js";
import type { WorkerHeap } from "../pool/scan-task.js";

export interface MetricSources {
  /** The scan workers' V8 heaps (ScanPool.workerHeaps): the main isolate's are the default svc_nodejs_heap_* metrics. */
  workerHeaps?: () => WorkerHeap[];
  /** The kernels' shared WebAssembly.Memory: its size (it never shrinks) and the bytes of live blocks in it. */
  sharedMemory?: () => { size: number; used: number };
}

export class HttpMetrics {
  readonly registry = new Registry();
  private readonly requests = new Counter({ name: "svc_http_requests_total", help: "HTTP requests answered, by route and status", labelNames: ["route", "status"] as const, registers: [this.registry] });
  private readonly duration = new Histogram({
    name: "svc_http_request_duration_seconds",
    help: "Time from request to reply, by route",
    labelNames: ["route"] as const,
    buckets: [0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10],
    registers: [this.registry],
  });
  private readonly bytesIn = new Counter({ name: "svc_http_request_bytes_total", help: "Request body bytes received", registers: [this.registry] });
  private readonly bytesOut = new Counter({ name: "svc_http_response_bytes_total", help: "Response body bytes sent", registers: [this.registry] });
  private readonly written = new Counter({ name: "svc_vectors_written_total", help: "Vectors written (upsert, update)", registers: [this.registry] });
  private readonly scanned = new Counter({ name: "svc_vectors_scanned_total", help: "Vectors scanned by queries", registers: [this.registry] });
  private readonly chargesLost = new Counter({ name: "svc_wallet_charges_lost_total", help: "Read charges taken from a balance whose ledger write then failed (the ledger refuses every later charge)", registers: [this.registry] });
  private readonly toolCalls = new Counter({ name: "svc_mcp_tool_calls_total", help: "MCP tool calls over /mcp, by tool and outcome", labelNames: ["tool", "outcome"] as const, registers: [this.registry] });

  private readonly damage = new Gauge({
    name: "svc_store_damage",
    help: "Storage damage findings since start, by store, kind and whether the store is offline",
    labelNames: ["store", "kind", "offline"] as const,
    registers: [this.registry],
    collect() {
      this.reset();
      for (const r of damageReports()) this.inc({ store: r.store, kind: r.kind, offline: String(r.offline) });
    },
  });

  constructor(sources: MetricSources = {}) {
    collectDefaultMetrics({ register: this.registry, prefix: "svc_" });
    const { workerHeaps, sharedMemory } = sources;
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
  }

  observe(route: string, status: number, seconds: number, bytesIn: number, bytesOut: number): void {
    this.requests.inc({ route, status: String(status) });
    this.duration.observe({ route }, seconds);
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
