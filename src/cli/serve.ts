/** @module serve — `svc serve`: the HTTP server on a data dir; prints the URL (and a first admin key); SIGTERM/SIGINT stop it cleanly. */
import pino from "pino";
import { onDamage } from "../store/damage.js";
import { startServer } from "../app/start-server.js";
import { SvcError } from "../errors.js";
import { positiveInt, say, type Command } from "./command.js";

export const DEFAULT_DATA_DIR = "./data/var";

export const serveCommand: Command = {
  name: "serve",
  usage: `svc serve [--host 127.0.0.1] [--port 8080] [--data ./data/var] [--threads N]
          [--log-level info] [--body-limit 67108864] [--no-auth]
          [--mcp-allowed-hosts svc.example.com,10.0.0.5:8080]
          [--tls-cert cert.pem --tls-key key.pem]
      Serve the REST API (uWebSockets.js) and MCP at /mcp (streamable HTTP;
      Host/Origin must be loopback on this port or listed in
      --mcp-allowed-hosts). On first start an admin key is
      created and printed once. Prices: <data>/config.json {"prices": {...}}.
      --no-auth (loopback only): no keys, every request is the local admin.
      --port 0 picks a free port. Request logs are JSON lines on stdout.
      --tls-cert/--tls-key (PEM files, both or neither): serve HTTPS (HTTP/1.1
      over TLS) for REST, /mcp and the dashboard. svc's clients (svc mcp,
      recorders, hooks, export/import) refuse plain http to a non-loopback
      host unless SVC_ALLOW_INSECURE=1, so serve TLS when clients are remote.
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
  },
  async run(values) {
    const port = values.port === "0" ? 0 : positiveInt("port", values.port, 8080);
    const level = (values["log-level"] as string | undefined) ?? "info";
    if (!["fatal", "error", "warn", "info", "debug", "trace", "silent"].includes(level)) throw new SvcError("E_BAD_REQUEST", `--log-level must be fatal, error, warn, info, debug, trace or silent`, { field: "log-level" });
    const cert = values["tls-cert"] as string | undefined;
    const key = values["tls-key"] as string | undefined;
    if ((cert === undefined) !== (key === undefined)) throw new SvcError("E_BAD_REQUEST", "--tls-cert and --tls-key go together", { field: cert === undefined ? "tls-cert" : "tls-key" });
    const logger = pino({ level }, pino.destination({ dest: 1, sync: false }));
    const dataDir = (values.data as string | undefined) ?? DEFAULT_DATA_DIR;
    onDamage((r) => logger.error({ damage: r }, `storage damage in ${r.store}${r.file ? ` (${r.file})` : ""}: ${r.detail}`));
    const server = await startServer({
      dataDir,
      host: (values.host as string | undefined) ?? "127.0.0.1",
      port,
      auth: values["no-auth"] !== true,
      bodyLimit: positiveInt("body-limit", values["body-limit"], 64 << 20),
      threads: values.threads === undefined ? undefined : positiveInt("threads", values.threads, 2),
      logger,
      tls: cert !== undefined && key !== undefined ? { certFile: cert, keyFile: key } : undefined,
      mcpAllowedHosts: typeof values["mcp-allowed-hosts"] === "string" ? values["mcp-allowed-hosts"].split(",").map((h) => h.trim()).filter(Boolean) : undefined,
    });
    if (values["no-auth"] !== true && server.keys.offline === null && server.keys.size === 0) {
      const { key, record } = server.keys.create({ tenant: "admin", admin: true, name: "first admin key" });
      say(`created the first admin key (${record.id}); it is shown only now:`);
      say(`  ${key}`);
    }
    say(`svc serving ${server.url} (data ${dataDir})`);
    say(`  dashboard ${server.url}/dashboard · MCP ${server.url}/mcp · directory ${server.url}/businesses · API ${server.url}/v1/openapi.json`);
    await new Promise<void>((resolve) => {
      const stop = (signal: string) => {
        logger.info({ signal }, "shutting down: no new connections, finishing requests, flushing the write-ahead logs");
        resolve();
      };
      process.once("SIGTERM", () => stop("SIGTERM"));
      process.once("SIGINT", () => stop("SIGINT"));
    });
    await server.close();
    logger.flush();
    say("svc stopped");
    return 0;
  },
};
