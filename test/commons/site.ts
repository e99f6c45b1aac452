/** @module site — a local test web site on loopback (node:http) for the commons tests: a handler per request, and a log of what it was sent. */
import http from "node:http";
import type { AddressInfo } from "node:net";

export interface SiteRequest {
  method: string;
  /** Path with query. */
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

export interface SiteReply {
  status?: number;
  headers?: Record<string, string>;
  body?: string | object;
}

export interface TestSite {
  /** http://127.0.0.1:<port> */
  origin: string;
  port: number;
  /** Every request received, in order. */
  requests: SiteRequest[];
  close(): Promise<void>;
}

/** Serve `handle` on 127.0.0.1 (a free port). A thrown handler answers 500; an object body goes as JSON. */
export async function startSite(handle: (req: SiteRequest, url: URL) => SiteReply | Promise<SiteReply>): Promise<TestSite> {
  const requests: SiteRequest[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", async () => {
      const r: SiteRequest = {
        method: req.method ?? "GET",
        url: req.url ?? "/",
        headers: req.headers,
        body: Buffer.concat(chunks).toString("utf8"),
      };
      requests.push(r);
      let reply: SiteReply;
      try {
        reply = await handle(r, new URL(r.url, "http://site.test"));
      } catch (e) {
        reply = { status: 500, body: String(e) };
      }
      const json = typeof reply.body === "object";
      res.writeHead(reply.status ?? 200, { "content-type": json ? "application/json" : "text/plain", ...reply.headers });
      res.end(json ? JSON.stringify(reply.body) : ((reply.body as string | undefined) ?? ""));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    origin: `http://127.0.0.1:${port}`,
    port,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
