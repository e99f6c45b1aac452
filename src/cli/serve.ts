/** @module serve — `svc serve`: the HTTP server on a data dir; prints the URL (and a first admin key); SIGTERM/SIGINT stop it cleanly. */
import pino from "pino";
import { hostname } from "node:os";
import type { ClusterOptions } from "../app/cluster-node.js";
import { startServer } from "../app/start-server.js";
import type { TracingOptions } from "../app/tracing.js";
import { SvcError } from "../errors.js";
import { positiveInt, say, type Command } from "./command.js";
import { LineBatch } from "./log-batch.js";

/** The log is written when this many bytes wait, or every LOG_FLUSH_MS (one write per request's line cost a thread-pool hand-off each). */
const LOG_BATCH_BYTES = 4096;
const LOG_FLUSH_MS = 100;
/** pino's "error": lines at this level and above are written at once. */
const ERROR_LEVEL = 50;

export const DEFAULT_DATA_DIR = "./data/var";

export const serveCommand: Command = {
  name: "serve",
  usage: `svc serve [--host 127.0.0.1] [--port 8080] [--data ./data/var] [--threads N]
          [--log-level info] [--body-limit 67108864] [--no-auth]
          [--mcp-allowed-hosts svc.example.com,10.0.0.5:8080]
          [--tls-cert cert.pem --tls-key key.pem] [--otlp-endpoint http://collector:4318]
          [--cluster nats://h1:4222,nats://h2:4222 [--node-id NAME]
           [--advertise http://host:port] [--take-home]]
      Serve the REST API (uWebSockets.js) and MCP at /mcp (streamable HTTP;
      Host/Origin must be loopback on this port or listed in
      --mcp-allowed-hosts). On first start an admin key is
      created and printed once, on stderr (never into the log on stdout). Prices: <data>/config.json {"prices": {...}}.
      --no-auth (loopback only): no keys, every request is the local admin.
      --port 0 picks a free port. Request logs are JSON lines on stdout;
      --json prints the start banner as one JSON line too.
      --tls-cert/--tls-key (PEM files, both or neither): serve HTTPS (HTTP/1.1
      over TLS) for REST, /mcp and the dashboard. svc's clients (svc mcp,
      recorders, hooks, export/import) refuse plain http to a non-loopback
      host unless SVC_ALLOW_INSECURE=1, so serve TLS when clients are remote.
      --otlp-endpoint (or OTEL_EXPORTER_OTLP_ENDPOINT): OpenTelemetry traces
      (spans per HTTP route, engine call and scan-pool task) over OTLP/HTTP to
      <endpoint>/v1/traces; off by default. See docs/OPERATIONS.md.
      --cluster (env SVC_CLUSTER): cluster mode on NATS JetStream; any node
      serves every request. --node-id (env SVC_NODE_ID; default the host
      name) names this node; --advertise is the URL other nodes reach it at
      (default http://<host>:<port>). Every store is replicated in JetStream:
      indexes and records are sharded over the nodes; the directory, the
      commons, the knowledge graphs and the causal models are served by the
      leader (the others forward to it), which moves by itself when it fails;
      helper outputs are kept in a JetStream object store, usable from any
      node. --take-home is deprecated and ignored (a warning is logged).
      See docs/OPERATIONS.md.
      Exits 3 when the port is taken, 4 when another server holds --data.`,
  options: {
    host: { type: "string" },
    port: { type: "string" },
    data: { type: "string" },
    threads: { type: "string" },
    "log-level": { type: "string" },
    "body-limit": { type: "string" },
    "no-auth": { type: "boolean" },
    "mcp-allowed-hosts": { type: "string" },
    "tls-cert": { type: "string" },
    "tls-key": { type: "string" },
    cluster: { type: "string" },
    "node-id": { type: "string" },
    advertise: { type: "string" },
    "take-home": { type: "boolean" },
    "otlp-endpoint": { type: "string" },
  },
  async run(values) {
    const port = values.port === "0" ? 0 : positiveInt("port", values.port, 8080);
    const level = (values["log-level"] as string | undefined) ?? "info";
    if (!["fatal", "error", "warn", "info", "debug", "trace", "silent"].includes(level))
      throw new SvcError("E_BAD_REQUEST", `--log-level must be fatal, error, warn, info, debug, trace or silent`, { field: "log-level" });
    const cert = values["tls-cert"] as string | undefined;
    const key = values["tls-key"] as string | undefined;
    if ((cert === undefined) !== (key === undefined))
      throw new SvcError("E_BAD_REQUEST", "--tls-cert and --tls-key go together", { field: cert === undefined ? "tls-cert" : "tls-key" });
    // Info lines are written in batches (LOG_BATCH_BYTES, or every LOG_FLUSH_MS): one write per request's line cost a
    // thread-pool hand-off each (~60 us of the main thread, bench/RESULTS.md "served"). Errors (storage damage, 5xx)
    // go out at once; the rest is flushed before the banner and at exit.
    const logger = pino(
      {
        level,
        hooks: {
          logMethod(args, method, lvl) {
            method.apply(this, args);
            if (lvl >= ERROR_LEVEL) this.flush();
          },
        },
      },
      // Lines gather in LineBatch (an array push each), not in SonicBoom's string: its per-write byte count of that
      // string cost a request line 4-5 µs (log-batch.ts); SonicBoom writes each batch at once (minLength 1).
      new LineBatch(pino.destination({ dest: 1, sync: false, minLength: 1 }), LOG_BATCH_BYTES, LOG_FLUSH_MS),
    );
    const flushLog = () => new Promise<void>((resolve) => logger.flush(() => resolve()));
    // The handlers go in before anything opens: a supervisor may send SIGTERM the moment it reads the URL (or sooner), and
    // a signal that arrives before a listener exists takes the default action (exit by signal, LOCK left, logs lost).
    // A signal during opening stops the server as soon as it is open; a second one takes the default action.
    const stopSignal = new Promise<void>((resolve) => {
      const stop = (signal: string) => {
        logger.info({ signal }, "shutting down: no new connections, finishing requests, flushing the write-ahead logs");
        resolve();
      };
      process.once("SIGTERM", () => stop("SIGTERM"));
      process.once("SIGINT", () => stop("SIGINT"));
    });
    const dataDir = (values.data as string | undefined) ?? DEFAULT_DATA_DIR;
    const server = await startServer({
      dataDir,
      host: (values.host as string | undefined) ?? "127.0.0.1",
      port,
      auth: values["no-auth"] !== true,
      bodyLimit: positiveInt("body-limit", values["body-limit"], 64 << 20),
      threads: values.threads === undefined ? undefined : positiveInt("threads", values.threads, 2),
      logger,
      tls: cert !== undefined && key !== undefined ? { certFile: cert, keyFile: key } : undefined,
      cluster: clusterOptions(values),
      tracing: typeof values["otlp-endpoint"] === "string" ? { endpoint: values["otlp-endpoint"] } : tracingFromEnv(),
      mcpAllowedHosts:
        typeof values["mcp-allowed-hosts"] === "string"
          ? values["mcp-allowed-hosts"]
              .split(",")
              .map((h) => h.trim())
              .filter(Boolean)
          : undefined,
    });
    let firstKey: string | undefined;
    if (values["no-auth"] !== true && server.keys.offline === null && server.keys.size === 0) {
      const { key, record } = await server.keys.create({ tenant: "admin", admin: true, name: "first admin key" });
      firstKey = record.id;
      // The secret goes to stderr only: stdout is the JSON log stream, which log shippers keep.
      process.stderr.write(`svc: created the first admin key (${record.id}); it is shown only now:\n  ${key}\n`);
    }
    await flushLog(); // what opening logged (storage damage) comes before the banner
    if (values.json === true) {
      const health = server.cluster?.health();
      say(
        JSON.stringify({
          serving: server.url,
          data: dataDir,
          dashboard: `${server.url}/dashboard`,
          mcp: `${server.url}/mcp`,
          directory: `${server.url}/businesses`,
          openapi: `${server.url}/v1/openapi.json`,
          ...(firstKey ? { firstAdminKeyId: firstKey, firstAdminKeyOn: "stderr" } : {}),
          ...(health ? { cluster: { node: server.cluster!.opts.nodeId, leader: health.leader, live: health.live } } : {}),
        }),
      );
    } else {
      if (firstKey) say(`first admin key ${firstKey} created; the key itself is printed once on stderr`);
      if (server.cluster)
        say(
          `cluster node ${server.cluster.opts.nodeId}: leader of the home stores ${server.cluster.health().leader ?? "none yet"}, live ${server.cluster.health().live.join(", ")}`,
        );
      say(`svc serving ${server.url} (data ${dataDir})`);
      say(
        `  dashboard ${server.url}/dashboard · MCP ${server.url}/mcp · directory ${server.url}/businesses · API ${server.url}/v1/openapi.json`,
      );
    }
    await stopSignal;
    await server.close();
    await flushLog();
    say(values.json === true ? JSON.stringify({ stopped: true }) : "svc stopped");
    return 0;
  },
};

/** --cluster / SVC_CLUSTER and the node's name; undefined: single node. */
function clusterOptions(values: Record<string, unknown>): ClusterOptions | undefined {
  const list = (values.cluster as string | undefined) ?? process.env.SVC_CLUSTER;
  const only = ["node-id", "advertise", "take-home"].find((k) => values[k] !== undefined);
  if (!list) {
    if (only !== undefined) throw new SvcError("E_BAD_REQUEST", `--${only} needs --cluster (or SVC_CLUSTER)`, { field: only });
    return undefined;
  }
  const servers = list
    .split(",")
    .map((u) => u.trim())
    .filter(Boolean);
  for (const u of servers)
    if (!/^(nats|tls):\/\/[^/\s]+$/.test(u))
      throw new SvcError("E_BAD_REQUEST", `--cluster takes nats://host:port URLs separated by commas; '${u}' is not one`, {
        field: "cluster",
      });
  const advertise = values.advertise as string | undefined;
  if (advertise !== undefined && !/^https?:\/\/[^/\s]+$/.test(advertise))
    throw new SvcError("E_BAD_REQUEST", `--advertise must be http(s)://host:port, not '${advertise}'`, { field: "advertise" });
  const nodeId =
    (values["node-id"] as string | undefined) ??
    (process.env.SVC_NODE_ID ||
      hostname()
        .split(".")[0]!
        .replace(/[^A-Za-z0-9_-]/g, "-")
        .slice(0, 64));
  return { servers, nodeId, advertise, takeHome: values["take-home"] === true };
}

/**
 * Traces from the environment when --otlp-endpoint is not given: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (the full traces
 * URL) or OTEL_EXPORTER_OTLP_ENDPOINT (the base URL); OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none keep them off.
 * Undefined: tracing stays off (OpenTelemetry is then never loaded).
 */
export function tracingFromEnv(env: NodeJS.ProcessEnv = process.env): TracingOptions | undefined {
  if (env.OTEL_SDK_DISABLED === "true" || env.OTEL_TRACES_EXPORTER === "none") return undefined;
  const full = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
  if (full) return { endpoint: full.replace(/\/v1\/traces\/?$/, "") };
  return env.OTEL_EXPORTER_OTLP_ENDPOINT ? { endpoint: env.OTEL_EXPORTER_OTLP_ENDPOINT } : undefined;
}
