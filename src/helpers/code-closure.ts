/** @module code-closure — a helper's code as it runs: its own module and every module it imports, followed through the files' real relative imports and framed into one text (what codeHash is the SHA-256 of). */
import { existsSync, readFileSync, statSync } from "node:fs";
import { dirname, relative, resolve, sep } from "node:path";

/**
 * Module specifiers in a file: `import … from "x"` and `export … from "x"` (name lists may span
 * lines), `import "x"`, and `import("x")` with a literal. A match inside a comment or string only
 * widens the closure (a file that is not imported is hashed too), never narrows it.
 */
const SPECIFIER =
  /(?:^|[;}\n])\s*(?:import|export)\s[^;"'`]*?\bfrom\s*["']([^"']+)["']|(?:^|[;}\n])\s*import\s*["']([^"']+)["']|\bimport\s*\(\s*["']([^"']+)["']\s*\)/g;

const isFile = (path: string) => existsSync(path) && statSync(path).isFile();

/**
 * The file a relative specifier names: the path itself (compiled .js), else the .ts beside it
 * (running from source, where imports say ./x.js). Null: no such file. Package imports (not
 * starting with . or /) are not ours and not followed: the lock file pins them.
 */
function resolveImport(from: string, specifier: string): string | null {
  const target = resolve(dirname(from), specifier);
  if (isFile(target)) return target;
  const ts = target.replace(/\.js$/, ".ts");
  return ts !== target && isFile(ts) ? ts : null;
}

/** A relative import naming no file. */
export interface MissingImport {
  importer: string;
  specifier: string;
}

/**
 * The closure of `entry`: `entry` first, then every module reachable through relative imports,
 * sorted by path, each with the bytes read (once) when it was followed.
 */
export function codeClosure(entry: string): { files: Map<string, Buffer>; missing: MissingImport[] } {
  const read = new Map<string, Buffer>();
  const missing: MissingImport[] = [];
  const queue = [entry];
  read.set(entry, readFileSync(entry));
  while (queue.length > 0) {
    const file = queue.pop()!;
    for (const m of read.get(file)!.toString("utf8").matchAll(SPECIFIER)) {
      const specifier = m[1] ?? m[2] ?? m[3]!;
      if (!specifier.startsWith(".") && !specifier.startsWith("/")) continue;
      const target = resolveImport(file, specifier);
      if (target === null) missing.push({ importer: file, specifier });
      else if (!read.has(target)) {
        read.set(target, readFileSync(target));
        queue.push(target);
      }
    }
  }
  const order = [entry, ...[...read.keys()].filter((f) => f !== entry).sort()];
  missing.sort((a, b) => (a.importer === b.importer ? (a.specifier < b.specifier ? -1 : 1) : a.importer < b.importer ? -1 : 1));
  return { files: new Map(order.map((f) => [f, read.get(f)!])), missing };
}

/**
 * The helper's code: a header naming the modules, then each module's bytes after a line
 * `// ==== <path> (<n> bytes) ====` (paths relative to `base`, with /), the entry first. A
 * relative import naming no file is listed as `// ==== missing: <importer> -> <specifier> ====`,
 * so a deleted shared module changes the text too. Null when `entry` itself is gone.
 */
export function helperCode(entry: string, base: string): Buffer | null {
  if (!isFile(entry)) return null;
  const { files, missing } = codeClosure(entry);
  const name = (f: string) => relative(base, f).split(sep).join("/");
  const names = [...files.keys()].map(name);
  const parts: Buffer[] = [
    Buffer.from(
      `// The code this helper runs: ${names.length} module(s), its own and every module it imports (${names.join(", ")}),\n` +
        `// each after a "// ==== <path> (<n> bytes) ====" line. The helper's codeHash is the SHA-256 of this whole text.\n`,
    ),
  ];
  for (const [f, bytes] of files) parts.push(Buffer.from(`// ==== ${name(f)} (${bytes.length} bytes) ====\n`), bytes, Buffer.from("\n"));
  for (const m of missing) parts.push(Buffer.from(`// ==== missing: ${name(m.importer)} -> ${m.specifier} ====\n`));
  return Buffer.concat(parts);
}
