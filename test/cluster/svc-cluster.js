/**
 * A real svc cluster on loopback for tests: a 3-server NATS JetStream cluster (nats-cluster.ts) and
 * N `svc serve --cluster` processes from dist/ (run `npm run build:ts` first), each with its own data
 * dir and a fixed port (so a restarted node comes back at the same URL), stopped by PID.
 *
 * Node 0 starts first, so it creates the home lease: it is the home node. One admin key is issued
 * with `svc keys create --admin` into node 0's data dir before the first start; node 0 imports it
 * into the shared keys bucket (svc_keys), so it authenticates on every node.
 */
import { spawn, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { MAIN } from "../e2e/server-process.js";
import { freePort, startNatsCluster } from "./nats-cluster.js";
/** `args`: more `svc serve` arguments for every node; `config`: written to every data dir as config.json (the same prices everywhere). */
export async function startSvcCluster(n = 3, opts = {}) {
    const nats = await startNatsCluster(3, `svc-cluster-${process.pid}`);
    const root = mkdtempSync(join(tmpdir(), "svc-cluster-"));
    const ids = Array.from({ length: n }, (_, i) => `n${i}`);
    const ports = [];
    for (let i = 0; i < n; i++)
        ports.push(await freePort());
    const dataDirs = ids.map((id) => join(root, id));
    for (const d of dataDirs) {
        mkdirSync(d, { recursive: true });
        if (opts.config)
            writeFileSync(join(d, "config.json"), JSON.stringify(opts.config));
    }
    const made = spawnSync(process.execPath, [MAIN, "keys", "create", "--admin", "--json", "--name", "cluster test admin", "--data", dataDirs[0]], { encoding: "utf8" });
    if (made.status !== 0)
        throw new Error(`svc keys create failed: ${made.stderr}`);
    const adminKey = JSON.parse(made.stdout.trim().split("\n").pop()).key;
    const procs = ids.map(() => null);
    const outs = ids.map(() => "");
    const urls = ports.map((p) => `http://127.0.0.1:${p}`);
    const start = async (i) => {
        if (procs[i])
            return;
        outs[i] = "";
        const args = [MAIN, "serve", "--port", String(ports[i]), "--data", dataDirs[i], "--log-level", "info", "--cluster", nats.urls.join(","), "--node-id", ids[i], ...(opts.args ?? [])];
        const child = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "pipe"] });
        procs[i] = child;
        const keep = (b) => (outs[i] = (outs[i] + b.toString()).slice(-200_000));
        child.stdout.on("data", keep);
        child.stderr.on("data", keep);
        child.once("exit", () => {
            if (procs[i] === child)
                procs[i] = null;
        });
        const deadline = Date.now() + 60_000;
        for (;;) {
            if (procs[i] !== child)
                throw new Error(`node ${ids[i]} exited while starting:\n${outs[i]}`);
            const ok = await fetch(`${urls[i]}/v1/ready`).then((r) => r.status === 200, () => false);
            if (ok)
                return;
            if (Date.now() > deadline)
                throw new Error(`node ${ids[i]} not ready in 60 s:\n${outs[i]}`);
            await new Promise((r) => setTimeout(r, 200));
        }
    };
    const kill = async (i) => {
        const p = procs[i];
        if (!p)
            return;
        procs[i] = null;
        const exited = new Promise((r) => p.once("exit", r));
        p.kill("SIGKILL");
        await exited;
    };
    const terminate = async (i) => {
        const p = procs[i];
        if (!p)
            return null;
        const exited = new Promise((r) => p.once("exit", (code) => r(code)));
        p.kill("SIGTERM");
        const code = await exited;
        procs[i] = null;
        return code;
    };
    const cluster = {
        nats,
        urls,
        ids,
        dataDirs,
        adminKey,
        kill,
        terminate,
        start,
        pause: (i) => void procs[i]?.kill("SIGSTOP"),
        resume: (i) => void procs[i]?.kill("SIGCONT"),
        natsServerOf(i) {
            const seen = [...outs[i].matchAll(/connected to NATS at (?:nats:\/\/)?[^\s":]+:(\d+)/g)].pop();
            return seen === undefined ? -1 : nats.urls.findIndex((u) => u.endsWith(`:${seen[1]}`));
        },
        output: (i) => outs[i],
        async stop() {
            await Promise.all(ids.map((_, i) => kill(i)));
            await nats.stop();
            rmSync(root, { recursive: true, force: true });
        },
    };
    try {
        await start(0);
        await Promise.all(ids.slice(1).map((_, j) => start(j + 1)));
    }
    catch (err) {
        await cluster.stop();
        throw err;
    }
    return cluster;
}
/** One HTTP call to a node (`key`: the api-key header, null for none; `extra`: more headers); the body parsed as JSON when it is. */
export async function callNode(url, method, path, body, key = null, timeoutMs = 20_000, extra = {}) {
    const res = await fetch(`${url}${path}`, {
        method,
        headers: { ...extra, ...(key ? { "api-key": key } : {}), ...(body === undefined ? {} : { "content-type": "application/json" }) },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(timeoutMs),
    });
    const text = await res.text();
    let parsed = text;
    try {
        parsed = JSON.parse(text);
    }
    catch {
        // not JSON (HTML, text)
    }
    return { status: res.status, headers: res.headers, body: parsed };
}
/** Poll `f` every 200 ms until it returns a value (errors count as not yet). */
export async function until(what, f, ms = 20_000) {
    const deadline = Date.now() + ms;
    for (;;) {
        const v = await f().catch(() => undefined);
        if (v !== undefined)
            return v;
        if (Date.now() > deadline)
            throw new Error(`timed out waiting for ${what}`);
        await new Promise((r) => setTimeout(r, 200));
    }
}
//# sourceMappingURL=svc-cluster.js.map