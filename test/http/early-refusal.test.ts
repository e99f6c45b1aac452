/**
 * Requests refused on their headers (issue 29 item 8), against the built `svc serve` with its default
 * 64 MiB body cap over real sockets: a keyless upsert declaring a 64 MiB body is answered 401 before
 * a byte of the body is sent, and bodies sent after that answer are dropped, not buffered (the
 * server's RSS stays flat); a body declared one byte over the cap gets a readable 413 even at a
 * client that writes the whole request before it reads (the connection is not reset under it).
 */
import { readFileSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startServerProcess, type ServerProcess } from "../e2e/server-process.js";
import { call } from "../e2e/client.js";

const CAP = 64 << 20;
let srv: ServerProcess;

beforeAll(async () => {
  srv = await startServerProcess();
  const r = await call(srv.url, srv.adminKey, "POST", "/v1/indexes", { name: "big", dimension: 4 });
  expect(r.status, r.raw.toString()).toBe(201);
}, 60_000);

afterAll(async () => {
  await srv?.dispose();
});

interface Answer {
  status: number;
  headers: Record<string, string>;
  json: { error: { code: string; field?: string } };
}

/** Parse one complete HTTP/1.1 answer (Content-Length framed) out of `got`, or null when it is not all there yet. */
function parse(got: Buffer): Answer | null {
  const text = got.toString("latin1");
  const end = text.indexOf("\r\n\r\n");
  if (end < 0) return null;
  const lines = text.slice(0, end).split("\r\n");
  const headers = Object.fromEntries(
    lines.slice(1).map((l) => [l.slice(0, l.indexOf(":")).toLowerCase(), l.slice(l.indexOf(":") + 1).trim()]),
  );
  const body = got.subarray(end + 4);
  if (body.length < Number(headers["content-length"])) return null;
  return { status: Number(lines[0]!.split(" ")[1]), headers, json: JSON.parse(body.toString("utf8")) };
}

function open(): Promise<Socket> {
  const { hostname, port } = new URL(srv.url);
  return new Promise((resolve, reject) => {
    const s = connect({ host: hostname, port: Number(port) }, () => resolve(s));
    s.once("error", reject);
  });
}

const head = (declared: number, key: string | null) =>
  `POST /v1/indexes/big/vectors/upsert HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: ${declared}\r\n${key ? `api-key: ${key}\r\n` : ""}\r\n`;

/** Send only the headers; resolves with the answer (the body is never sent), or rejects after 10 s. */
async function headersOnly(declared: number, key: string | null): Promise<{ socket: Socket; answer: Answer }> {
  const socket = await open();
  return new Promise((resolve, reject) => {
    let got = Buffer.alloc(0);
    const timer = setTimeout(() => reject(new Error(`no answer before the body after 10 s: ${JSON.stringify(got.toString())}`)), 10_000);
    socket.on("data", (b: Buffer) => {
      got = Buffer.concat([got, b]);
      const answer = parse(got);
      if (answer === null) return;
      clearTimeout(timer);
      socket.removeAllListeners("data");
      resolve({ socket, answer });
    });
    socket.on("error", () => {});
    socket.write(head(declared, key));
  });
}

/** Write `bytes` of body (spaces) to the socket; resolves once the kernel took it all, or with the error that stopped it. */
function sendBody(socket: Socket, bytes: number): Promise<Error | null> {
  const chunk = Buffer.alloc(1 << 20, 0x20);
  return new Promise((resolve) => {
    let sent = 0;
    socket.once("error", (e) => resolve(e));
    const pump = () => {
      while (sent < bytes) {
        const n = Math.min(chunk.length, bytes - sent);
        sent += n;
        if (!socket.write(chunk.subarray(0, n))) return void socket.once("drain", pump);
      }
      socket.write(Buffer.alloc(0), () => resolve(null));
    };
    pump();
  });
}

const rssKiB = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))![1]);

describe("refused on the headers, before the body is read", () => {
  it("a keyless upsert declaring 64 MiB is answered 401 before any body byte is sent; bodies sent after the answer are dropped, not buffered", async () => {
    const N = 4;
    const before = rssKiB(srv.child.pid!);
    const refused = await Promise.all(Array.from({ length: N }, () => headersOnly(CAP, null)));
    for (const { answer } of refused) {
      expect(answer.status).toBe(401);
      expect(answer.json.error).toMatchObject({ code: "E_AUTH", field: "api-key" });
      expect(answer.headers.connection).toBe("close");
    }
    // A client that sends its body anyway: 4 x 64 MiB at once, all dropped as they arrive.
    const errors = await Promise.all(refused.map(({ socket }) => sendBody(socket, CAP)));
    expect(errors).toEqual(errors.map(() => null)); // taken whole, no reset
    const grown = (rssKiB(srv.child.pid!) - before) / 1024;
    expect(grown).toBeLessThan(64); // MiB; buffered, the four bodies alone would be 256
    for (const { socket } of refused) socket.destroy();
    // An unknown key is refused the same way.
    const wrong = await headersOnly(CAP, "svc_not_a_key");
    expect(wrong.answer.status).toBe(401);
    wrong.socket.destroy();
  });

  it("a body declared one byte over 64 MiB gets a readable 413 JSON error, even at a client that writes the whole request before reading", async () => {
    // Refused on the headers, before the body is sent.
    const early = await headersOnly(CAP + 1, srv.adminKey);
    expect(early.answer.status).toBe(413);
    expect(early.answer.json.error).toMatchObject({ code: "E_TOO_LARGE", field: "body" });
    early.socket.destroy();
    // A client that sends first and reads after (http.client, requests): the socket is paused while the body goes out.
    const socket = await open();
    socket.pause();
    socket.write(head(CAP + 1, srv.adminKey));
    expect(await sendBody(socket, CAP + 1)).toBeNull();
    const answer = await new Promise<Answer>((resolve, reject) => {
      let got = Buffer.alloc(0);
      const timer = setTimeout(() => reject(new Error(`no answer after 10 s: ${JSON.stringify(got.toString())}`)), 10_000);
      socket.on("data", (b: Buffer) => {
        got = Buffer.concat([got, b]);
        const a = parse(got);
        if (a !== null) {
          clearTimeout(timer);
          resolve(a);
        }
      });
      socket.on("error", (e) => reject(new Error(`${e.message} before the answer was read: ${JSON.stringify(got.toString())}`)));
      socket.resume();
    });
    socket.destroy();
    expect(answer.status).toBe(413);
    expect(answer.json.error).toMatchObject({ code: "E_TOO_LARGE", field: "body" });
  });

  it("keeps serving: a keyed upsert is read and stored", async () => {
    const r = await call(srv.url, srv.adminKey, "POST", "/v1/indexes/big/vectors/upsert", { vectors: [{ id: "a", values: [1, 2, 3, 4] }] });
    expect(r.status, r.raw.toString()).toBe(200);
    const f = await call(srv.url, srv.adminKey, "GET", "/v1/indexes/big/vectors/fetch?ids=a");
    expect(f.body.vectors.a.values).toEqual([1, 2, 3, 4]);
  });
});
