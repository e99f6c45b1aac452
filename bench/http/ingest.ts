/** @module ingest — durable upserts over HTTP: pre-encoded batches from a few keep-alive clients; acknowledged and visible rates. */
import { Agent, request } from "node:http";
import type { Api } from "./api.js";
import { cpuSeconds, ownCpuSeconds } from "./child.js";

export interface IngestTiming {
  n: number;
  /** Start -> last acknowledgement (the server acks after fdatasync). */
  ackSeconds: number;
  /** Start -> describe_index_stats first reports all n vectors. */
  visibleSeconds: number;
  ackedPerSec: number;
  visiblePerSec: number;
  /** CPU cores busy in the server and in this (client) process over the acknowledged phase. */
  serverCores: number;
  clientCores: number;
}

/**
 * Upsert `bodies` (batch i holds counts[i] vectors) into an existing empty index with `clients` requests in flight.
 * `bodies` may be a function giving batch i when its client is ready to send it (a 1M-vector load is 4 GB of
 * bodies: generated on the way, in the timed window, instead of all held in memory).
 */
export async function ingest(
  api: Api,
  index: string,
  bodies: Buffer[] | ((i: number) => Buffer),
  counts: number[],
  contentType: string,
  clients: number,
  serverPid: number,
): Promise<IngestTiming> {
  const body = typeof bodies === "function" ? bodies : (i: number) => bodies[i]!;
  const n = counts.reduce((a, b) => a + b, 0);
  const url = new URL(`${api.url}/v1/indexes/${index}/vectors/upsert`);
  // node:http, not fetch: fetch (undici) sends a Buffer body through a web stream that copies it
  // (cloneAsUint8Array), 4 MB of client CPU per msgpack batch taken from the server's two cores;
  // request.end(buffer) writes the prebuilt body as it is. The bytes the server gets are the same.
  const agent = new Agent({ keepAlive: true, maxSockets: clients });
  const post = (b: Buffer) =>
    new Promise<{ status: number; text: string }>((resolve, reject) => {
      const req = request(url, {
        method: "POST",
        agent,
        headers: { "api-key": api.key, "content-type": contentType, "content-length": b.byteLength },
      });
      req.once("error", reject);
      req.once("response", (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.once("error", reject);
        res.once("end", () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString() }));
      });
      req.end(b);
    });
  let next = 0;
  const client = async () => {
    while (next < counts.length) {
      const i = next++;
      const b = body(i);
      const send = () => post(b);
      // A pooled keep-alive socket that uWS closed while idle (it drops idle connections after
      // ~10 s, e.g. during the query runs) fails the first write; resend (an upsert is idempotent).
      const { status, text } = await send().catch(send);
      if (status !== 200) throw new Error(`upsert batch ${i}: ${status} ${text.slice(0, 300)}`);
      const got = (JSON.parse(text) as { upsertedCount: number }).upsertedCount;
      if (got !== counts[i]) throw new Error(`upsert batch ${i}: upsertedCount ${got}, sent ${counts[i]}`);
    }
  };
  const cpu0 = cpuSeconds(serverPid);
  const own0 = ownCpuSeconds();
  const t0 = performance.now();
  await Promise.all(Array.from({ length: clients }, client)).finally(() => agent.destroy());
  const ackSeconds = (performance.now() - t0) / 1000;
  const serverCores = (cpuSeconds(serverPid) - cpu0) / ackSeconds;
  const clientCores = (ownCpuSeconds() - own0) / ackSeconds;
  let visibleSeconds = ackSeconds;
  for (;;) {
    const count = await api.count(index);
    visibleSeconds = (performance.now() - t0) / 1000;
    if (count === n) break;
    if (count > n) throw new Error(`${index} holds ${count} vectors, ${n} were sent`);
    if (visibleSeconds > ackSeconds + 120)
      throw new Error(`${index}: ${count} of ${n} vectors visible 120 s after the last acknowledgement`);
    await new Promise((r) => setTimeout(r, 2));
  }
  return { n, ackSeconds, visibleSeconds, ackedPerSec: n / ackSeconds, visiblePerSec: n / visibleSeconds, serverCores, clientCores };
}
