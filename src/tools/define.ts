/** @module tools/define — building blocks of catalog entries: one-operation tools, aliases, shared argument schemas, binary results. */
import { z } from "zod";
import { ToolError, type Annotations, type ApiReply, type Tool } from "./tool.js";

export const READ: Annotations = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false };
export const WRITE: Annotations = { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false };
export const UPSERT: Annotations = { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false };
export const DESTROY: Annotations = { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false };

/** Outputs are checked by clients against these, so they name what always comes back and let the rest through. */
export const out = <S extends z.ZodRawShape>(shape: S) => z.looseObject(shape);
export const strings = z.array(z.string());

/** A tool that is exactly one REST operation: arguments map to path parameters, query or body by name (`rename`: tool argument -> path parameter). */
export function op<I extends z.ZodObject>(
  operationId: string,
  def: Omit<Tool<I>, "operations" | "run" | "access"> & { access?: Tool["access"]; rename?: Record<string, string> },
): Tool<I> {
  const { rename, ...meta } = def;
  return {
    access: "tenant",
    ...meta,
    operations: [operationId],
    run: async (args, api) => json(await api.call(operationId, { args: renamed(args as Record<string, unknown>, rename) })),
  };
}

/** Rename tool arguments to the operation's path parameters (`namespace` -> `ns`) and drop undefined ones. */
function renamed(args: Record<string, unknown>, rename: Record<string, string> = {}): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(args)) if (v !== undefined) out[rename[k] ?? k] = v;
  return out;
}

/** A JSON answer as a tool result object. */
export function json(reply: ApiReply): Record<string, unknown> {
  const b = reply.body;
  if (b === undefined || b === null) return {};
  if (typeof b !== "object" || Array.isArray(b)) return { result: b };
  return b as Record<string, unknown>;
}

/** A download as a tool result: the bytes in base64 with their type and name. */
export function file(reply: ApiReply, fallbackName: string): { filename: string; contentType: string; bytes: number; base64: string } {
  if (!reply.raw) throw new ToolError("E_INTERNAL", "the operation answered JSON where a file was expected");
  const name = /filename="([^"]+)"/.exec(reply.headers["content-disposition"] ?? "")?.[1] ?? fallbackName;
  return { filename: name, contentType: reply.raw.contentType, bytes: reply.raw.data.length, base64: reply.raw.data.toString("base64") };
}

export const fileOutput = out({ filename: z.string(), contentType: z.string(), bytes: z.number().int(), base64: z.string() });

/** Base64 argument -> bytes; refuses what is not base64. */
export function bytesOf(b64: string, field: string): Buffer {
  if (!/^[A-Za-z0-9+/\s]*={0,2}\s*$/.test(b64)) throw new ToolError("E_BAD_REQUEST", `${field} must be base64`, field);
  return Buffer.from(b64, "base64");
}

/** An export/import pair over one named file: the export answers its bytes (base64), the import sends them back as application/octet-stream. */
export function fileTools(o: {
  prefix: string;
  what: string;
  ext: string;
  arg: string;
  argSchema: z.ZodString;
  exportOp: string;
  importOp: string;
  importOutput: z.ZodObject;
}): [Tool, Tool] {
  const name = (args: Record<string, unknown>) => String(args[o.arg]);
  return [
    {
      name: `${o.prefix}_export`,
      title: `Export a ${o.what}`,
      access: "tenant",
      annotations: READ,
      operations: [o.exportOp],
      description: `A ${o.what} as a ${o.ext} file (base64); ${o.prefix}_import restores it.`,
      input: z.object({ [o.arg]: o.argSchema }),
      output: fileOutput,
      run: async (args, api) => file(await api.call(o.exportOp, { args: { name: name(args) } }), `${name(args)}${o.ext}`),
    },
    {
      name: `${o.prefix}_import`,
      title: `Import a ${o.what}`,
      access: "tenant",
      annotations: DESTROY,
      operations: [o.importOp],
      description: `Replace (or create) a ${o.what} from a ${o.ext} file given as base64.`,
      input: z.object({ [o.arg]: o.argSchema, base64: z.string().min(1) }),
      output: o.importOutput,
      run: async (args, api) =>
        json(
          await api.call(o.importOp, {
            args: { name: name(args) },
            raw: { contentType: "application/octet-stream", data: bytesOf(args.base64 as string, "base64") },
          }),
        ),
    },
  ];
}
