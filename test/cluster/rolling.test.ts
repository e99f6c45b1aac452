/**
 * A rolling restart of a 3-node cluster (issue 31, "Tests"): each `svc serve --cluster` node in turn
 * gets SIGTERM, exits, is started again and answers /v1/ready before the next one goes, while
 * clients write and read through every node. A client does what docs/API.md asks of one: a
 * connection refused (that node is down) goes to the next node at once, a 503 is retried after its
 * Retry-After (on the next node). Anything else is a failed request: a 4xx/5xx other than 503 with
 * Retry-After, a connection cut mid-request (a request in flight dropped by the shutdown), or no
 * success within 60 s of retries. Expected: zero failed requests, and every acknowledged write
 * readable on every node afterwards.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { callNode, startSvcCluster, until, type SvcCluster } from "./svc-cluster.js";

let c: SvcCluster;

beforeAll(async () => {
  c = await startSvcCluster(3);
}, 120_000);

afterAll(async () => {
  await c?.stop();
});

const INDEX = "rolling";
const CLIENTS = 3;
/** A request that has not succeeded after retrying this long counts as failed. */
const GIVE_UP_MS = 60_000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Tally {
  ok: number;
  failed: string[];
  retried503: number;
  refused: number;
  /** Reads whose keep-alive connection the stopping node closed as they were sent, retried on the next node. */
  reset: number;
  /** The longest time one request took, retries included (ms). */
  slowest: number;
  codes: Record<string, number>;
}
const tally: Tally = { ok: 0, failed: [], retried503: 0, refused: 0, reset: 0, slowest: 0, codes: {} };

/** One logical request, retried as a client should; resolves with the 2xx answer, or null once it counts as failed. */
async function reliable(first: number, method: string, path: string, body?: unknown, extra: Record<string, string> = {}) {
  const start = Date.now();
  let node = first;
  for (;;) {
    let r;
    try {
      r = await callNode(c.urls[node]!, method, path, body, c.adminKey, 30_000, extra);
    } catch (e) {
      const err = e as Error & { cause?: { code?: string } };
      if (err.cause?.code === "ECONNREFUSED" && Date.now() - start < GIVE_UP_MS) {
        tally.refused++;
        node = (node + 1) % 3;
        continue;
      }
      // A read (fetch, query) whose connection closed under it is retried, as RFC 9110 9.2.2 lets a client retry an
      // idempotent request: a kept-alive connection the node had not read from when it exited is reset by the kernel,
      // a race no server can close for a request sent at that instant. A write so cut stays a failure (its outcome unknown).
      const read = method === "GET" || path.endsWith("/query");
      if (read && (err.cause?.code === "ECONNRESET" || err.cause?.code === "UND_ERR_SOCKET") && Date.now() - start < GIVE_UP_MS) {
        tally.reset++;
        node = (node + 1) % 3;
        continue;
      }
      tally.failed.push(`${method} ${path} through n${node}: ${err.name} ${err.cause?.code ?? err.message}`);
      return null;
    }
    if (r.status >= 200 && r.status < 300) {
      tally.ok++;
      tally.slowest = Math.max(tally.slowest, Date.now() - start);
      return r;
    }
    const code = `${r.status} ${r.body?.error?.code ?? ""}`;
    tally.codes[code] = (tally.codes[code] ?? 0) + 1;
    const after = r.headers.get("retry-after");
    if (r.status === 503 && after !== null && /^\d+$/.test(after) && Date.now() - start < GIVE_UP_MS) {
      tally.retried503++;
      await sleep(Number(after) * 1000);
      node = (node + 1) % 3;
      continue;
    }
    tally.failed.push(`${method} ${path} through n${node}: ${code} retry-after=${after} ${JSON.stringify(r.body).slice(0, 200)}`);
    return null;
  }
}

describe("rolling restart", () => {
  it("SIGTERM and restart of every node in turn: zero failed requests for a client that retries 503 per Retry-After", async () => {
    const made = await callNode(
      c.urls[0]!,
      "POST",
      "/v1/indexes",
      { name: INDEX, dimension: 4, metric: "cosine", spec: { serverless: { cloud: "aws", region: "us-east-1" } } },
      c.adminKey,
    );
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    for (const n of [0, 1, 2])
      await until(
        `the index on node ${n}`,
        async () =>
          (await callNode(c.urls[n]!, "POST", `/v1/indexes/${INDEX}/query`, { vector: [1, 0, 0, 0], topK: 1 }, c.adminKey)).status === 200
            ? true
            : undefined,
        60_000,
      );

    const acked: string[] = [];
    let stopping = false;
    const client = async (w: number) => {
      for (let n = 0; !stopping; n++) {
        const node = (w + n) % 3;
        const id = `c${w}-${n}`;
        const up = await reliable(node, "POST", `/v1/indexes/${INDEX}/vectors/upsert`, { vectors: [{ id, values: [1, n % 5, w, 1] }] });
        if (up === null) continue;
        acked.push(id);
        const seq = up.headers.get("x-svc-log-seq") ?? "0";
        // read-your-writes through another node
        const got = await reliable((node + 1) % 3, "GET", `/v1/indexes/${INDEX}/vectors/fetch?ids=${id}`, undefined, {
          "x-svc-after": seq,
        });
        if (got !== null && got.body.vectors[id] === undefined)
          tally.failed.push(`fetch ${id} after its upsert (seq ${seq}) through n${(node + 1) % 3}: absent`);
        await reliable((node + 2) % 3, "POST", `/v1/indexes/${INDEX}/query`, { vector: [1, 1, w, 1], topK: 3 });
      }
    };
    const clients = Array.from({ length: CLIENTS }, (_, w) => client(w));
    const restarts: string[] = [];
    try {
      await sleep(3000);
      for (const i of [0, 1, 2]) {
        const t = Date.now();
        const code = await c.terminate(i);
        const down = Date.now() - t;
        await c.start(i);
        restarts.push(`n${i}: exit ${code} after ${down} ms, ready ${Date.now() - t - down} ms later`);
        expect(code, `node ${i}'s exit code after SIGTERM:\n${c.output(i).slice(-3000)}`).toBe(0);
        await sleep(5000);
      }
    } finally {
      stopping = true;
      await Promise.all(clients);
    }
    console.log(
      `rolling restart: ${restarts.join("; ")}; requests ok ${tally.ok}, failed ${tally.failed.length}, 503s retried ${tally.retried503}, refused connections moved on ${tally.refused}, reads reset and retried ${tally.reset}, slowest ${tally.slowest} ms; non-2xx answers ${JSON.stringify(tally.codes)}\n${tally.failed.slice(0, 20).join("\n")}`,
    );
    expect(tally.failed).toEqual([]);
    expect(acked.length).toBeGreaterThan(20);
    for (const n of [0, 1, 2]) {
      await until(
        `every acknowledged upsert through node ${n}`,
        async () => {
          for (let k = 0; k < acked.length; k += 100) {
            const part = acked.slice(k, k + 100);
            const r = await callNode(
              c.urls[n]!,
              "GET",
              `/v1/indexes/${INDEX}/vectors/fetch?${part.map((id) => `ids=${id}`).join("&")}`,
              undefined,
              c.adminKey,
            );
            if (r.status !== 200 || part.some((id) => r.body.vectors[id] === undefined)) return undefined;
          }
          return true;
        },
        60_000,
      );
    }
  }, 300_000);
});
