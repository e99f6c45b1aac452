#!/usr/bin/env node
/**
 * @module build-dashboard — bundles the web dashboard (dashboard/src/app.tsx, Preact) with
 * esbuild into dist/dashboard/{app.js, style.css, index.html}; `npm run build` runs it.
 * Files are replaced in place and index.html is written last (the server re-reads the
 * directory when it changes); a failed build leaves the previous one.
 */
import { copyFileSync, mkdirSync, readdirSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const src = join(root, "dashboard");
const out = join(root, "dist", "dashboard");

mkdirSync(out, { recursive: true });

const t0 = performance.now();
const result = await build({
  entryPoints: [join(src, "src", "app.tsx"), join(src, "style.css")],
  outdir: out,
  entryNames: "[name]",
  bundle: true,
  minify: true,
  format: "esm",
  target: ["es2020", "chrome100", "firefox100", "safari15"],
  jsx: "automatic",
  jsxImportSource: "preact",
  metafile: true,
  logLevel: "warning",
});
copyFileSync(join(src, "index.html"), join(out, "index.html"));
// Drop files of earlier builds (a failed build above leaves the previous one in place).
const made = new Set(["index.html", ...Object.keys(result.metafile.outputs).map((f) => f.split("/").pop())]);
for (const f of readdirSync(out)) if (!made.has(f)) rmSync(join(out, f), { recursive: true, force: true });
const bytes = Object.values(result.metafile.outputs).reduce((n, o) => n + o.bytes, 0);
console.log(
  `dashboard: ${Object.keys(result.metafile.outputs).length} files, ${(bytes / 1024).toFixed(1)} KiB -> dist/dashboard (${Math.round(performance.now() - t0)} ms)`,
);
