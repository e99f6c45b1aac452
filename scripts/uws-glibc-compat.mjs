#!/usr/bin/env node
// @module Makes the uWebSockets.js binaries load on glibc 2.36/2.37 (Debian 12 and its peers).
//
// The upstream-style binaries of @btc-vision/uwebsockets.js 20.57.0 are built against glibc 2.38
// and need it only for the C23 aliases of the scanf/strto* family (`__isoc23_strtol`, ...: glibc
// 2.38 routes a C23 build's `strtol` to them; they differ from the classic functions only in also
// reading a "0b" binary prefix). On an older glibc this script points each such import at the
// classic function of the same name (the alias's name ends in it, so the symbol's name offset
// moves by 9 bytes and no string changes), versions it at libc's base version, and drops the
// then-unused GLIBC_2.38 requirement. Nothing else in the file changes; a binary that needs
// anything else from glibc 2.38 is left alone and reported. Runs at install (postinstall) and is
// idempotent; on glibc >= 2.38 or off Linux it does nothing.
import { readFileSync, readdirSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { pathToFileURL } from "node:url";

const ALIAS = "__isoc23_";

/** Patches one ELF64 little-endian shared object in memory; returns the names redirected, or null when nothing needs it. */
export function redirectC23Aliases(b) {
  if (b.readUInt32BE(0) !== 0x7f454c46 || b[4] !== 2 || b[5] !== 1) throw new Error("not an ELF64 little-endian file");
  const u16 = (o) => b.readUInt16LE(o);
  const u32 = (o) => b.readUInt32LE(o);
  const u64 = (o) => Number(b.readBigUInt64LE(o));
  const shoff = u64(0x28),
    shentsize = u16(0x3a),
    shnum = u16(0x3c);
  const sections = [];
  for (let i = 0; i < shnum; i++) {
    const o = shoff + i * shentsize;
    sections.push({ type: u32(o + 4), offset: u64(o + 0x18), size: u64(o + 0x20), link: u32(o + 0x28) });
  }
  const dynsym = sections.find((s) => s.type === 11 /* SHT_DYNSYM */);
  const versym = sections.find((s) => s.type === 0x6fffffff /* SHT_GNU_versym */);
  const verneed = sections.find((s) => s.type === 0x6ffffffe /* SHT_GNU_verneed */);
  if (!dynsym || !versym || !verneed) return null;
  const strtab = sections[dynsym.link].offset;
  const str = (off) => {
    let end = strtab + off;
    while (b[end] !== 0) end++;
    return b.toString("latin1", strtab + off, end);
  };
  // libc.so.6's version requirements: the GLIBC_2.38 entry and the base (lowest) version.
  let target = null;
  let base = null;
  for (let vn = verneed.offset; ;) {
    const count = u16(vn + 2);
    if (str(u32(vn + 4)) === "libc.so.6") {
      let prev = -1;
      for (let i = 0, aux = vn + u32(vn + 8); i < count; i++) {
        const name = str(u32(aux + 8));
        const index = u16(aux + 6);
        if (name === "GLIBC_2.38") target = { vn, aux, prev, index };
        const v = /^GLIBC_(\d+)\.(\d+)(?:\.(\d+))?$/.exec(name);
        const rank = v ? +v[1] * 1e6 + +v[2] * 1e3 + +(v[3] ?? 0) : Infinity;
        if (!base || rank < base.rank) base = { index, rank };
        prev = aux;
        if (u32(aux + 12) === 0) break;
        aux += u32(aux + 12);
      }
    }
    if (u32(vn + 12) === 0) break;
    vn += u32(vn + 12);
  }
  if (!target) return null;
  const redirected = [];
  const others = [];
  const n = dynsym.size / 24;
  for (let i = 0; i < n; i++) {
    if ((u16(versym.offset + i * 2) & 0x7fff) !== target.index) continue;
    const name = str(u32(dynsym.offset + i * 24));
    (name.startsWith(ALIAS) ? redirected : others).push([i, name]);
  }
  if (others.length > 0) throw new Error(`needs glibc 2.38 for ${others.map(([, s]) => s).join(", ")}, not only C23 aliases`);
  for (const [i] of redirected) {
    const sym = dynsym.offset + i * 24;
    b.writeUInt32LE(u32(sym) + ALIAS.length, sym); // "__isoc23_strtol" -> its tail "strtol"
    b.writeUInt16LE(base.index, versym.offset + i * 2);
  }
  // Unlink the GLIBC_2.38 entry from libc's list (no symbol refers to it any more).
  const { vn, aux, prev } = target;
  const next = u32(aux + 12);
  if (prev < 0) b.writeUInt32LE(next === 0 ? 0 : u32(vn + 8) + next, vn + 8);
  else b.writeUInt32LE(next === 0 ? 0 : u32(prev + 12) + next, prev + 12);
  b.writeUInt16LE(u16(vn + 2) - 1, vn + 2);
  return redirected.map(([, s]) => s);
}

function glibcVersion() {
  if (process.platform !== "linux") return null;
  const v = process.report?.getReport().header.glibcVersionRuntime;
  return typeof v === "string" ? v.split(".").map(Number) : null;
}

function main() {
  const glibc = glibcVersion();
  if (!glibc || glibc[0] > 2 || (glibc[0] === 2 && glibc[1] >= 38)) return;
  let dir;
  try {
    dir = dirname(createRequire(import.meta.url).resolve("uWebSockets.js"));
  } catch {
    return; // not installed (e.g. a partial install): nothing to patch
  }
  for (const file of readdirSync(dir)) {
    if (!file.startsWith(`uws_linux_${process.arch}_`) || !file.endsWith(".node")) continue;
    const path = join(dir, file);
    const bytes = readFileSync(path);
    try {
      const names = redirectC23Aliases(bytes);
      if (names) {
        writeFileSync(path, bytes);
        console.error(`uws-glibc-compat: ${file}: ${names.join(", ")} -> classic glibc ${glibc.join(".")} functions`);
      }
    } catch (e) {
      console.error(`uws-glibc-compat: ${file} left as it is: ${e.message}`);
    }
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) main();
