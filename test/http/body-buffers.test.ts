/**
 * Large request body buffers are reused once their JSON body is decoded. What that rests on: a decoded JSON body
 * (the upsert reader's or JSON.parse's) shares no memory with the bytes, so overwriting them changes nothing; and
 * the pool hands a buffer out again only when it fits, keeps only whole large buffers, and forgets them when full.
 */
import { describe, expect, it } from "vitest";
import { giveBackBody, newBodyBuffer, takeBodyBuffer } from "../../src/http/body-buffers.js";
import { decodeBody } from "../../src/http/codecs.js";

describe("body buffers", () => {
  it("a decoded JSON body does not change when its bytes are overwritten (reader, fallback and plain JSON)", () => {
    const vectors = Array.from({ length: 50 }, (_, i) => ({
      id: `v${i}-é`,
      values: Array.from({ length: 64 }, (_, d) => Math.fround(Math.sin(i + d))),
      metadata: { tag: `t${i}`, n: i, list: ["a", "ü"] },
    }));
    const bodies: Array<[string, boolean]> = [
      [JSON.stringify({ namespace: "ns", vectors }), true], // read by upsert-json.ts
      [JSON.stringify({ namespace: "ns", vectors }).replace('"id":"v0-é"', '"id":"v0-\\u00e9"'), true], // escapes: still the reader (values in spans)
      [JSON.stringify({ vectors: [...vectors, { id: "x", values: [1, "2"] }] }), true], // a string value: JSON.parse
      [JSON.stringify({ text: "some words ".repeat(1000), items: vectors }), false], // any other route
    ];
    for (const [text, upsert] of bodies) {
      const body = newBodyBuffer(2 << 20).subarray(0, Buffer.byteLength(text));
      body.write(text);
      const decoded = decodeBody("json", body, undefined, upsert ? "upsert" : undefined);
      const before = structuredClone(decoded);
      body.fill(0x20);
      body.write('{"vectors":[{"id":"overwritten","values":[9,9,9]}]}');
      expect(decoded).toEqual(before);
    }
  });

  it("hands a kept buffer out again only for a body it fits, and keeps only large whole buffers", () => {
    const big = newBodyBuffer((3 << 20) + 5);
    expect(big.length).toBe(4 << 20); // rounded up to whole MiB
    giveBackBody(big.subarray(0, (3 << 20) + 5));
    expect(takeBodyBuffer(5 << 20)).toBeNull(); // does not fit
    expect(takeBodyBuffer(1 << 20)).toBeNull(); // more than twice the size asked
    const again = takeBodyBuffer((3 << 20) + 100);
    expect(again?.buffer).toBe(big.buffer);
    expect(takeBodyBuffer(3 << 20)).toBeNull(); // taken: handed out once
    // small buffers and slices of Node's shared pool are never kept
    giveBackBody(Buffer.allocUnsafe(100));
    giveBackBody(Buffer.from(new ArrayBuffer(4 << 20), 16));
    expect(takeBodyBuffer(1 << 20)).toBeNull();
    // at most 4 kept: the oldest go
    const five = Array.from({ length: 5 }, () => newBodyBuffer(2 << 20));
    for (const b of five) giveBackBody(b);
    const taken = Array.from({ length: 5 }, () => takeBodyBuffer(2 << 20));
    expect(taken.filter((b) => b !== null).length).toBe(4);
    expect(taken.some((b) => b?.buffer === five[0]!.buffer)).toBe(false);
  });

  it("keeps small bodies' buffers by power-of-two size, only those it made, each handed out once", () => {
    const q = newBodyBuffer(20_000); // a Pinecone JSON query's body
    expect(q.length).toBe(32_768);
    giveBackBody(q.subarray(0, 20_000));
    giveBackBody(q.subarray(0, 20_000)); // twice: still kept once
    expect(takeBodyBuffer(5_000)).toBeNull(); // another size class
    expect(takeBodyBuffer(20_500)?.buffer).toBe(q.buffer);
    expect(takeBodyBuffer(20_500)).toBeNull(); // handed out once
    // a buffer it did not make (a caller's, given to RequestPath.request) is never kept, nor a slice, nor a pool buffer
    giveBackBody(Buffer.allocUnsafeSlow(32_768));
    giveBackBody(newBodyBuffer(20_000).subarray(16));
    giveBackBody(newBodyBuffer(100));
    expect(takeBodyBuffer(20_000)).toBeNull();
    expect(newBodyBuffer(100).length).toBe(100); // below 4 KiB: Node's pool, exact length
  });
});
