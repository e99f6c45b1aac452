/** @module site — a local test web site on loopback (node:http) for the commons tests: a handler per request, and a log of what it was sent. */
import http from "node:http";
/** Serve `handle` on 127.0.0.1 (a free port). A thrown handler answers 500; an object body goes as JSON. */
export async function startSite(handle) {
    const requests = [];
    const server = http.createServer((req, res) => {
        const chunks = [];
        req.on("data", (c) => chunks.push(c));
        req.on("end", async () => {
            const r = { method: req.method ?? "GET", url: req.url ?? "/", headers: req.headers, body: Buffer.concat(chunks).toString("utf8") };
            requests.push(r);
            let reply;
            try {
                reply = await handle(r, new URL(r.url, "http://site.test"));
            }
            catch (e) {
                reply = { status: 500, body: String(e) };
            }
            const json = typeof reply.body === "object";
            res.writeHead(reply.status ?? 200, { "content-type": json ? "application/json" : "text/plain", ...reply.headers });
            res.end(json ? JSON.stringify(reply.body) : reply.body ?? "");
        });
    });
    await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
    const port = server.address().port;
    return {
        origin: `http://127.0.0.1:${port}`,
        port,
        requests,
        close: () => new Promise((resolve) => {
            server.closeAllConnections();
            server.close(() => resolve());
        }),
    };
}
//# sourceMappingURL=site.js.map