/** The docs stay true: the README is a front door (short, every link resolves), and docs/API.md lists exactly the routes the router has. */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startServer, type Server } from "../src/app/start-server.js";
import { routesMarkdown, withRoutesTable } from "../src/http/openapi.js";

const ROOT = resolve(import.meta.dirname, "..");
const DOCS = [
  "README.md",
  ...readdirSync(join(ROOT, "docs"))
    .filter((f) => f.endsWith(".md"))
    .map((f) => `docs/${f}`),
];

let dir: string;
let server: Server;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "svc-docs-"));
  server = await startServer({ dataDir: dir, port: 0, directorySeed: null });
});
afterAll(async () => {
  await server?.close();
  await rm(dir, { recursive: true, force: true });
});

describe("docs", () => {
  it("the README fits on a screen or three (about 150 lines) and links to every doc", () => {
    const readme = readFileSync(join(ROOT, "README.md"), "utf8");
    expect(readme.split("\n").length).toBeLessThanOrEqual(150);
    for (const doc of DOCS.filter((d) => d !== "README.md")) expect(readme, `README links ${doc}`).toContain(`](${doc})`);
  });

  it("every relative link in README.md and docs/ points at a file that exists", () => {
    const broken: string[] = [];
    for (const doc of DOCS) {
      const text = readFileSync(join(ROOT, doc), "utf8").replace(/```[\s\S]*?```/g, "");
      for (const m of text.matchAll(/\]\(([^)#\s]+)(#[^)]*)?\)/g)) {
        const target = m[1]!;
        if (/^[a-z]+:/.test(target)) continue;
        if (!existsSync(resolve(dirname(join(ROOT, doc)), target))) broken.push(`${doc}: ${target}`);
      }
    }
    expect(broken).toEqual([]);
  });

  it("docs/API.md lists every route the router has (regenerate: npx tsx scripts/docs-routes.ts)", () => {
    const doc = readFileSync(join(ROOT, "docs/API.md"), "utf8");
    expect(doc).toContain("<!-- routes:begin");
    expect(withRoutesTable(doc, routesMarkdown(server.routes))).toBe(doc);
  });
});
