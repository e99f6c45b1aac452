/** @module routes/commons — /v1/commons: the signed registry of document helpers (records, code, verification) and running one into the tenant's build directory. */
import { lstat, mkdir, mkdtemp, readFile, realpath, rm, writeFile } from "node:fs/promises";
import { basename, dirname, extname, isAbsolute, join, relative, resolve, sep } from "node:path";
import { REC_ID_RE } from "../../commons/text-rules.js";
import { SvcError } from "../../errors.js";
import type { Registry } from "../../helpers/registry.js";
import { COMMONS_OPS } from "../../tools/commons-ops.js";
import type { RequestContext, Route, Schema } from "../route.js";
import { bodyOf } from "../input.js";

const stringArray: Schema = { type: "array", items: { type: "string" } };
const helperRecord: Schema = {
  type: "object",
  properties: {
    id: { type: "string", pattern: REC_ID_RE.source },
    name: { type: "string" },
    module: { type: "string" },
    description: { type: "string" },
    entryPoints: stringArray,
    codeHash: {
      type: "string",
      description:
        "SHA-256 (hex) of the helper's code: its module and every module it imports, as GET /v1/commons/rungs/{id}/code serves it",
    },
    signature: { type: "string", enum: ["signed (ed25519)", "unsigned"] },
    signatureValue: { type: ["string", "null"], description: "base64 ed25519 signature over the 32 raw bytes of codeHash" },
  },
};
const publicKey: Schema = {
  type: ["object", "null"],
  properties: { pem: { type: "string", description: "SPKI PEM" }, raw: { type: "string", description: "raw 32-byte key, base64" } },
};
const verifyResult: Schema = {
  type: "object",
  properties: {
    id: { type: "string" },
    name: { type: "string" },
    ok: { type: "boolean", description: "hashMatches and (when signed) signatureValid" },
    hashMatches: { type: "boolean" },
    signatureValid: { type: ["boolean", "null"] },
    expectedHash: { type: "string" },
    actualHash: { type: ["string", "null"] },
    publicKey: { type: ["string", "null"], description: "raw ed25519 key (base64) the signature was checked with" },
  },
};

/** Argument fields that name files: resolved inside the tenant's build directory. */
const PATH_FIELDS = ["outputPath", "output_path", "output_pdf", "input_pdf", "input_path"] as const;
/** The argument naming the file each helper writes; null: the helper writes none (its result is the answer). */
const OUTPUT_FIELD: Record<string, string | null> = {
  "combo-chart-slide": "outputPath",
  "fillable-form": "output_path",
  "landscape-document": "outputPath",
  "email-message": "output_path",
  "merged-header-sheet": "output_path",
  "meeting-series": "output_path",
  "task-parser": null,
  "form-filler": "output_pdf",
  "merged-cell-grid-reader": "output_path",
  "line-folder": "output_path",
};
/**
 * Helpers whose contract result is "the resolved output path": their result stays absolute over
 * HTTP, as from the CLI. Every other path a helper returns is made relative to the build
 * directory (the path as the caller gave it).
 */
const RESOLVED_RESULT = new Set(["combo-chart-slide"]);
const CONTENT_TYPES: Record<string, string> = {
  ".pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
  ".docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
  ".xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
  ".pdf": "application/pdf",
  ".eml": "message/rfc822",
  ".ics": "text/calendar; charset=utf-8",
  ".txt": "text/plain; charset=utf-8",
  ".json": "application/json",
};

/** Linux's limits: bytes in one file name, and in a whole relative path we accept. */
const NAME_MAX = 255;
const PATH_MAX = 4000;

const bad = (field: string, message: string): never => {
  throw new SvcError("E_BAD_REQUEST", `${field}: ${message}`, { field });
};

/**
 * The absolute path of `value` inside `root` (whose realpath is `realRoot`). Refused with
 * E_BAD_REQUEST naming `field`: NUL bytes, absolute paths, `..` segments, a trailing separator,
 * a name over NAME_MAX bytes or a path over PATH_MAX, the root itself,
 * and a path whose deepest existing part resolves (through symbolic links) outside the root.
 */
export async function confine(root: string, realRoot: string, field: string, value: string): Promise<string> {
  if (value.includes("\0")) bad(field, "holds a NUL byte");
  if (isAbsolute(value) || /^[\\/]|^[a-zA-Z]:/.test(value))
    bad(field, "must be a path relative to your build directory, not an absolute one");
  if (value.split(/[\\/]/).includes("..")) bad(field, "must not hold '..' segments");
  if (/[\\/]$/.test(value)) bad(field, "ends with a separator, so it names a directory; give a file name");
  const long = value.split(/[\\/]/).find((part) => Buffer.byteLength(part) > NAME_MAX);
  if (long !== undefined)
    bad(field, `has a name of ${Buffer.byteLength(long)} bytes; a file or directory name holds at most ${NAME_MAX} bytes (UTF-8)`);
  if (Buffer.byteLength(value) > PATH_MAX) bad(field, `is ${Buffer.byteLength(value)} bytes long; at most ${PATH_MAX}`);
  const target = join(root, value);
  if (relative(root, target) === "") bad(field, "names the build directory itself; give a file name");
  let probe = target;
  for (;;) {
    try {
      const st = await lstat(probe);
      if (probe !== target && !st.isDirectory() && !st.isSymbolicLink()) bad(field, `${relative(root, probe)} is not a directory`);
      break;
    } catch (err) {
      if (err instanceof SvcError) throw err;
      probe = dirname(probe); // ends at root, which exists
    }
  }
  let real = "";
  try {
    real = await realpath(probe);
  } catch {
    bad(field, "leads through a dangling symbolic link");
  }
  if (real !== realRoot && !real.startsWith(realRoot + sep)) bad(field, "leads outside your build directory (symbolic link)");
  return target;
}

/** Strings naming files under `root` (the helper's returned paths) become relative to it. */
function relativize(value: unknown, root: string): unknown {
  if (typeof value === "string")
    return value.startsWith(root + sep)
      ? value
          .slice(root.length + 1)
          .split(sep)
          .join("/")
      : value;
  if (Array.isArray(value)) return value.map((v) => relativize(v, root));
  if (typeof value === "object" && value !== null)
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, relativize(v, root)]));
  return value;
}

/** JSON with every non-ASCII character as \uXXXX: safe as a header value, still the same JSON. */
const asciiJson = (v: unknown) =>
  JSON.stringify(v).replace(/[\u007f-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);

function disposition(name: string): string {
  const fallback = name.replace(/[^\x20-\x7e]|["\\]/g, "_");
  return fallback === name
    ? `attachment; filename="${name}"`
    : `attachment; filename="${fallback}"; filename*=UTF-8''${encodeURIComponent(name)}`;
}

/**
 * Cluster mode: where the tenants' build directories are kept instead of `<data>/tenants/<t>/build`
 * (cluster/build-files.ts): `path` is relative to the build directory, `/`-separated.
 */
export interface BuildFileStore {
  get(tenant: string, path: string): Promise<Uint8Array | null>;
  put(tenant: string, path: string, data: Uint8Array): Promise<void>;
}

export function commonsRoutes(deps: { registry: Registry; dataDir: string; files?: BuildFileStore }): Route[] {
  const { registry, files } = deps;
  const dataDir = resolve(deps.dataDir);
  const buildDir = (tenant: string) => join(dataDir, "tenants", tenant, "build");
  /** With `files`: a fresh scratch build directory per request (removed after it), filled with the inputs it names. */
  const scratchRoot = join(dataDir, "build-scratch");
  const id = (ctx: RequestContext) => ctx.params.id!;
  return [
    {
      method: "get",
      path: "/v1/commons/rungs",
      operationId: "commons_list",
      summary:
        "The document helpers' signed records, with the node's ed25519 public key (null when unsigned) to check them with (public: no key needed)",
      tags: ["commons"],
      auth: "none",
      response: {
        status: 200,
        schema: { type: "object", properties: { rungs: { type: "array", items: helperRecord }, publicKey } },
        description: "Records in the contract's order",
      },
      handle: () => ({ body: { rungs: registry.list(), publicKey: registry.publicKey } }),
    },
    {
      method: "get",
      path: "/v1/commons/rungs/{id}",
      operationId: "commons_get",
      summary: "One helper's record (id rec_<hex>; public)",
      tags: ["commons"],
      auth: "none",
      response: { status: 200, schema: helperRecord, description: "The record" },
      handle: (ctx) => ({ body: registry.get(id(ctx)) }),
    },
    {
      method: "get",
      path: "/v1/commons/rungs/{id}/code",
      operationId: "commons_code",
      summary:
        "One helper's code as the node executes it: its module (dist/helpers/<module>.js when built) and every module it imports, each after a line naming its path and size; the bytes codeHash is the SHA-256 of (public)",
      tags: ["commons"],
      auth: "none",
      response: { status: 200, description: "text/plain; charset=utf-8" },
      handle: (ctx) => ({ raw: { contentType: "text/plain; charset=utf-8", data: registry.code(id(ctx)) } }),
    },
    {
      method: "post",
      path: "/v1/commons/verify",
      operationId: "commons_verify",
      summary:
        "Re-hash a helper's code and check the record's signature with the node's public key; each part reported on its own (public)",
      tags: ["commons"],
      auth: "none",
      input: COMMONS_OPS.commons_verify,
      response: { status: 200, schema: verifyResult, description: "What matched" },
      handle: (ctx) => ({ body: registry.verify(bodyOf(COMMONS_OPS.commons_verify.body, ctx.body).id) }),
    },
    {
      method: "post",
      path: "/v1/commons/rungs/{id}/build",
      operationId: "commons_build",
      tags: ["commons"],
      auth: "tenant",
      meter: "commons_build",
      summary:
        "Run a helper's build(args). Path arguments (outputPath, output_path, output_pdf, input_pdf, input_path) are relative to the tenant's build directory; absolute paths, '..', NUL and symbolic-link escapes are refused. " +
        "Answers the produced file (headers x-svc-output-path: its path in the build directory, percent-encoded; x-svc-result: build's return value as JSON, paths in it relative to the build directory except the combo chart slide's, the resolved absolute output path), or {result} for the task parser",
      input: COMMONS_OPS.commons_build,
      response: { status: 200, description: "The file as an attachment, or JSON {result} for a helper that writes none" },
      async handle(ctx) {
        const record = registry.get(id(ctx));
        const args = { ...((ctx.body ?? {}) as Record<string, unknown>) }; // an object when sent (COMMONS_OPS.commons_build); none: no arguments
        const tenant = ctx.principal.tenant;
        let root = buildDir(tenant);
        if (files) {
          await mkdir(scratchRoot, { recursive: true });
          root = await mkdtemp(join(scratchRoot, "b-"));
        } else await mkdir(root, { recursive: true });
        try {
          return await build(record, args, tenant, root);
        } finally {
          if (files) await rm(root, { recursive: true, force: true });
        }
      },
    },
  ];

  async function build(record: ReturnType<Registry["get"]>, args: Record<string, unknown>, tenant: string, root: string) {
    const realRoot = await realpath(root);
    const confined: Record<string, string> = {};
    for (const field of PATH_FIELDS) {
      const v = args[field];
      if (typeof v !== "string" || v === "") continue; // the helper's own validation names it
      args[field] = confined[field] = await confine(root, realRoot, field, v);
    }
    const outField = OUTPUT_FIELD[record.module] ?? null;
    const inBuild = (path: string) => relative(root, path).split(sep).join("/");
    // cluster mode: the inputs named (earlier outputs) come from the store into the scratch directory
    if (files)
      for (const [field, path] of Object.entries(confined)) {
        if (field === outField) continue;
        const data = await files.get(tenant, inBuild(path));
        if (data === null) continue; // the helper reports the missing file
        await mkdir(dirname(path), { recursive: true });
        await writeFile(path, data);
      }
    let result: unknown;
    try {
      result = await registry.run(record.id, args);
    } catch (err) {
      // the helper's code and field stay; the server's directory layout does not leak
      if (err instanceof SvcError && err.message.includes(root))
        throw new SvcError(
          err.code,
          err.message
            .split(root + sep)
            .join("")
            .split(root)
            .join("."),
          { field: err.field, details: err.details, cause: err },
        );
      throw err;
    }
    if (!RESOLVED_RESULT.has(record.module)) result = relativize(result, root);
    const out = outField === null ? undefined : confined[outField];
    if (out === undefined) return { body: { result } };
    const rel = inBuild(out);
    const data = await readFile(out);
    // cluster mode: answered only once stored (replicated), so any node can use it as an input next
    if (files) await files.put(tenant, rel, data);
    return {
      raw: { contentType: CONTENT_TYPES[extname(out).toLowerCase()] ?? "application/octet-stream", data },
      headers: {
        "content-disposition": disposition(basename(out)),
        "x-svc-output-path": encodeURI(rel),
        "x-svc-result": asciiJson(result),
      },
    };
  }
}
