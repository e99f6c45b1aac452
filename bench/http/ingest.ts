/** @module ingest — durable upserts over HTTP: pre-encoded batches from a few keep-alive clients; acknowledged and visible rates. */
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
  const url = `${api.url}/v1/indexes/${index}/vectors/upsert`;
  const headers = { "api-key": api.key, "content-type": contentType };
  let next = 0;
  const client = async () => {
    while (next < counts.length) {
      const i = next++;
      const b = body(i);
      const send = () => fetch(url, { method: "POST", headers, body: b as Uint8Array as BodyInit });
      // A pooled keep-alive socket that uWS closed while idle (it drops idle connections after
      // ~10 s, e.g. during the query runs) fails the first write; resend (an upsert is idempotent).
      const res = await send().catch(send);
      const text = await res.text();
      if (res.status !== 200) throw new Error(`upsert batch ${i}: ${res.status} ${text.slice(0, 300)}`);
      const got = (JSON.parse(text) as { upsertedCount: number }).upsertedCount;
      if (got !== counts[i]) throw new Error(`upsert batch ${i}: upsertedCount ${got}, sent ${counts[i]}`);
    }
  };
  const cpu0 = cpuSeconds(serverPid);
  const own0 = ownCpuSeconds();
  const t0 = performance.now();
  await Promise.all(Array.from({ length: clients }, client));
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
