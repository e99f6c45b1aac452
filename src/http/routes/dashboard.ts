/** @module routes/dashboard — the web dashboard's static files (built into dist/dashboard by scripts/build-dashboard.mjs) at /dashboard. */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { extname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { SvcError } from "../../errors.js";
import type { Reply, Route } from "../route.js";

/** The bundle sits at <package>/dist/dashboard whether this module runs from src/ or dist/. */
export const DASHBOARD_DIR = fileURLToPath(new URL("../../../dist/dashboard/", import.meta.url));

const TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".json": "application/json",
  ".map": "application/json",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".ico": "image/x-icon",
  ".txt": "text/plain; charset=utf-8",
};

/**
 * The page talks only to this origin's REST API; nothing inline, nothing from elsewhere.
 * Served with every file, so a stray HTML file cannot run foreign script either.
 */
const HEADERS: Record<string, string> = {
  "content-security-policy":
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "cache-control": "no-cache",
};

/** Served names: one flat directory, names of [A-Za-z0-9._-] not starting with a dot; anything else is "not found". */
const NAME_RE = /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}$/;

interface Files {
  stamp: string;
  byName: Map<string, { type: string; data: Buffer }>;
}

/**
 * Files are read once into memory and re-read when index.html (written last by the build)
 * changes. Only regular files of the directory itself with a known extension are served:
 * a request names a key of this map, never a path, so there is nothing to traverse.
 */
export function dashboardRoutes(dir = DASHBOARD_DIR): Route[] {
  let files: Files | null = null;
  const load = (): Files => {
    let stamp: string;
    try {
      const st = statSync(join(dir, "index.html"));
      stamp = `${st.mtimeMs}:${st.size}`;
    } catch {
      throw new SvcError("E_NOT_FOUND", "the dashboard is not built; run `npm run build` (or `npm run build:dashboard`)", {
        field: "file",
      });
    }
    if (files !== null && files.stamp === stamp) return files;
    const byName = new Map<string, { type: string; data: Buffer }>();
    for (const d of readdirSync(dir, { withFileTypes: true })) {
      const type = TYPES[extname(d.name)];
      if (!d.isFile() || type === undefined || !NAME_RE.test(d.name)) continue;
      byName.set(d.name, { type, data: readFileSync(join(dir, d.name)) });
    }
    files = { stamp, byName };
    return files;
  };
  const serve = (name: string): Reply => {
    const f = NAME_RE.test(name) ? load().byName.get(name) : undefined;
    if (f === undefined) throw new SvcError("E_NOT_FOUND", `the dashboard has no file '${name}'`, { field: "file" });
    return { raw: { contentType: f.type, data: f.data }, headers: HEADERS };
  };
  return [
    {
      method: "get",
      path: "/dashboard",
      operationId: "dashboard",
      summary: "The web dashboard (HTML): sign in with an API key; admin, tenant and public views",
      tags: ["dashboard"],
      auth: "none",
      response: { status: 200, description: "text/html" },
      handle: () => serve("index.html"),
    },
    {
      method: "get",
      path: "/dashboard/{file}",
      operationId: "dashboard_file",
      summary: "A static file of the dashboard (script, style sheet, image)",
      tags: ["dashboard"],
      auth: "none",
      response: { status: 200, description: "The file, typed by its extension" },
      handle: (ctx) => serve(ctx.params.file!),
    },
    {
      method: "get",
      path: "/dashboard/",
      operationId: "dashboard_slash",
      summary: "The web dashboard (HTML), as typed with a trailing slash",
      tags: ["dashboard"],
      auth: "none",
      response: { status: 200, description: "text/html" },
      handle: () => serve("index.html"),
    },
  ];
}
