/** @module container — `svc export` / `svc import`: move a records namespace's .svc container to or from a running server, with progress. */
import { createReadStream, createWriteStream, statSync } from "node:fs";
import { request as httpRequest, type ClientRequest, type IncomingMessage, type RequestOptions } from "node:http";
import { request as httpsRequest } from "node:https";
import { SvcError } from "../errors.js";
import { checkServiceUrl } from "../service-url.js";
import { say, type Command } from "./command.js";

const OPTIONS = { url: { type: "string" }, key: { type: "string" }, out: { type: "string" }, schema: { type: "string" } } as const;
const IMPORT_OPTIONS = { ...OPTIONS, index: { type: "string" }, namespace: { type: "string" }, "error-mode": { type: "string" } } as const;

function target(values: Record<string, string | boolean | undefined>): { url: URL; key: string | undefined } {
  const raw = (values.url as string | undefined) ?? (process.env.SVC_URL || "http://127.0.0.1:8080");
  const url = checkServiceUrl(raw, { field: values.url !== undefined ? "url" : "SVC_URL" });
  return { url, key: (values.key as string | undefined) ?? process.env.SVC_API_KEY };
}

/** node:http or node:https by the URL's scheme. */
function request(url: URL, opts: RequestOptions, onResponse: (res: IncomingMessage) => void): ClientRequest {
  return (url.protocol === "https:" ? httpsRequest : httpRequest)(url, opts, onResponse);
}

/** A one-line progress bar on stderr (only when stderr is a terminal or SVC_PROGRESS=1). */
function progress(label: string, total: number): { tick(bytes: number): void; done(): void } {
  const show = process.stderr.isTTY || process.env.SVC_PROGRESS === "1";
  let seen = 0;
  let last = 0;
  const draw = () => {
    const pct = total > 0 ? Math.min(1, seen / total) : 0;
    const bar = "#".repeat(Math.round(pct * 30)).padEnd(30, ".");
    process.stderr.write(`\r${label} [${bar}] ${total > 0 ? `${Math.round(pct * 100)}%` : ""} ${(seen / 2 ** 20).toFixed(1)} MiB`);
  };
  return {
    tick(bytes) {
      seen += bytes;
      const now = Date.now();
      if (show && now - last > 100) {
        last = now;
        draw();
      }
    },
    done() {
      if (show) {
        draw();
        process.stderr.write("\n");
      }
    },
  };
}

function failure(status: number, text: string): SvcError {
  try {
    const e = (JSON.parse(text) as { error: { code: string; message: string } }).error;
    return new SvcError(
      status === 401 ? "E_AUTH" : status === 404 ? "E_NOT_FOUND" : "E_BAD_REQUEST",
      `server answered ${status} ${e.code}: ${e.message}`,
    );
  } catch {
    return new SvcError("E_IO", `server answered ${status}: ${text.slice(0, 200)}`);
  }
}

/** The tenant's records namespaces (those holding live records), from GET /v1/records. */
function namespacesOf(url: URL, key: string | undefined): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const req = request(
      new URL("/v1/records", url),
      { method: "GET", headers: { accept: "application/json", ...(key ? { "api-key": key } : {}) } },
      (res) => {
        let text = "";
        res.on("data", (b: Buffer) => (text += b.toString()));
        res.on("end", () => {
          if (res.statusCode !== 200) return reject(failure(res.statusCode ?? 0, text));
          try {
            resolve((JSON.parse(text) as { namespaces: Array<{ namespace: string }> }).namespaces.map((n) => n.namespace));
          } catch {
            reject(new SvcError("E_IO", `${url.origin}/v1/records did not answer JSON: ${text.slice(0, 200)}`));
          }
        });
      },
    );
    req.on("error", (err) => reject(new SvcError("E_IO", `cannot reach ${url.origin}: ${err.message}`)));
    req.end();
  });
}

export const exportCommand: Command = {
  name: "export",
  usage: `svc export <namespace> [--out <namespace>.svc] [--schema 1|2] [--url http://127.0.0.1:8080] [--key KEY]
      Download a records namespace as a .svc container from a running server
      (key from --key or SVC_API_KEY; URL from --url or SVC_URL). --schema 2
      also carries the tenant's knowledge graphs and causal models. A namespace
      holding no records is refused (exit 2, nothing written). --json: the result
      as JSON ({namespace, file, bytes}).`,
  options: OPTIONS,
  async run(values, args) {
    const ns = args[0];
    if (ns === undefined) throw new SvcError("E_BAD_REQUEST", "svc export needs a namespace", { field: "namespace" });
    const { url, key } = target(values);
    const out = (values.out as string | undefined) ?? `${ns}.svc`;
    // The server exports a namespace it does not hold as an empty container: refuse instead of writing one.
    const known = await namespacesOf(url, key);
    if (!known.includes(ns)) {
      throw new SvcError(
        "E_NOT_FOUND",
        `no records namespace '${ns}' on ${url.origin} (it holds no records); nothing written. Namespaces: ${known.length > 0 ? known.join(", ") : "none"}`,
        { field: "namespace" },
      );
    }
    await new Promise<void>((resolve, reject) => {
      const schema = values.schema === undefined ? "" : `?schema=${encodeURIComponent(values.schema as string)}`;
      const req = request(
        new URL(`/v1/records/${encodeURIComponent(ns)}/export${schema}`, url),
        { method: "GET", headers: key ? { "api-key": key } : {} },
        (res) => {
          if (res.statusCode !== 200) {
            let text = "";
            res.on("data", (b: Buffer) => (text += b.toString()));
            res.on("end", () => reject(failure(res.statusCode ?? 0, text)));
            return;
          }
          const bar = progress(`export ${ns}`, Number(res.headers["content-length"] ?? 0));
          const file = createWriteStream(out);
          res.on("data", (b: Buffer) => bar.tick(b.length));
          res.pipe(file);
          file.on("finish", () => {
            bar.done();
            resolve();
          });
          file.on("error", reject);
        },
      );
      req.on("error", (err) => reject(new SvcError("E_IO", `cannot reach ${url.origin}: ${err.message}`)));
      req.end();
    });
    const bytes = statSync(out).size;
    say(values.json === true ? JSON.stringify({ namespace: ns, file: out, bytes }) : `wrote ${out} (${bytes} bytes)`);
    return 0;
  },
};

export const importCommand: Command = {
  name: "import",
  usage: `svc import <namespace> <file.svc> [--url http://127.0.0.1:8080] [--key KEY]
      Upload a .svc container into a records namespace of a running server:
      schema 1 replaces the namespace atomically, schema 2 merges by id.
      --json: the server's answer as JSON ({namespace, imported, manifest}).
  svc import --index <name> <path-or-url> [--namespace NS] [--error-mode abort|continue] [--url ...] [--key KEY]
      Bulk-import a Parquet or NDJSON file into a vector index (a path under the server's import root, or an
      http(s) URL the server fetches) and follow it with a progress bar; bad rows are listed with their row number.
      Exit 0 when the import completed, 1 when it failed (errorMode abort: nothing was written) or was cancelled.`,
  options: IMPORT_OPTIONS,
  async run(values, args) {
    if (values.index !== undefined) return (await import("./bulk-import.js")).runBulkImport(values, args);
    const [ns, path] = args;
    if (ns === undefined || path === undefined)
      throw new SvcError("E_BAD_REQUEST", "svc import needs a namespace and a file", { field: "file" });
    const { url, key } = target(values);
    const size = statSync(path).size;
    const boundary = `svc-${Date.now().toString(36)}`;
    const head = Buffer.from(
      `--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="${ns}.svc"\r\ncontent-type: application/x-svc\r\n\r\n`,
    );
    const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
    const text = await new Promise<string>((resolve, reject) => {
      const req = request(
        new URL(`/v1/records/${encodeURIComponent(ns)}/import`, url),
        {
          method: "POST",
          headers: {
            ...(key ? { "api-key": key } : {}),
            "content-type": `multipart/form-data; boundary=${boundary}`,
            "content-length": head.length + size + tail.length,
          },
        },
        (res) => {
          let body = "";
          res.on("data", (b: Buffer) => (body += b.toString()));
          res.on("end", () => (res.statusCode === 200 ? resolve(body) : reject(failure(res.statusCode ?? 0, body))));
        },
      );
      req.on("error", (err) => reject(new SvcError("E_IO", `cannot reach ${url.origin}: ${err.message}`)));
      const bar = progress(`import ${ns}`, size);
      req.write(head);
      const file = createReadStream(path);
      file.on("data", (b) => bar.tick(b.length));
      file.on("end", () => {
        bar.done();
        req.end(tail);
      });
      file.on("error", reject);
      file.pipe(req, { end: false });
    });
    const res = JSON.parse(text) as { imported: number };
    say(values.json === true ? JSON.stringify({ namespace: ns, ...res }) : `imported ${res.imported} records into ${ns}`);
    return 0;
  },
};
