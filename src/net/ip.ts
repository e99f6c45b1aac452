/** @module net/ip — IP addresses in text form: IPv6 bytes, and the IPv4 an IPv6 address carries. */

/** The 16 bytes of an IPv6 address in text form (with or without an embedded dotted IPv4 tail). */
export function ipv6Bytes(addr: string): Uint8Array {
  let a = addr.toLowerCase().split("%")[0]!;
  const out = new Uint8Array(16);
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(a);
  if (v4) {
    const p = v4[1]!.split(".").map(Number);
    a = `${a.slice(0, -v4[1]!.length)}${((p[0]! << 8) | p[1]!).toString(16)}:${((p[2]! << 8) | p[3]!).toString(16)}`;
  }
  const [head, tail] = a.includes("::") ? (a.split("::") as [string, string]) : [a, undefined];
  const h = head === "" ? [] : head.split(":");
  const t = tail === undefined || tail === "" ? [] : tail.split(":");
  const groups = tail === undefined ? h : [...h, ...Array<string>(8 - h.length - t.length).fill("0"), ...t];
  groups.forEach((g, i) => {
    const n = parseInt(g, 16);
    out[i * 2] = n >> 8;
    out[i * 2 + 1] = n & 0xff;
  });
  return out;
}

/** The IPv4 address an IPv4-mapped (::ffff:0:0/96) or NAT64 (64:ff9b::/96) IPv6 address carries, else null. */
export function embeddedIPv4(addr: string): string | null {
  const b = ipv6Bytes(addr);
  const zero = (from: number, to: number) => b.subarray(from, to).every((x) => x === 0);
  const mapped = zero(0, 10) && b[10] === 0xff && b[11] === 0xff;
  const nat64 = b[0] === 0x00 && b[1] === 0x64 && b[2] === 0xff && b[3] === 0x9b && zero(4, 12);
  return mapped || nat64 ? `${b[12]}.${b[13]}.${b[14]}.${b[15]}` : null;
}
