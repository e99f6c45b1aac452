/** @module bulk-import — `svc import --index <name> <uri>`: start a bulk import on a running server and follow it with a progress bar until it ends. */
import { SvcError } from "../errors.js";
import { checkServiceUrl } from "../service-url.js";
import { say } from "./command.js";

/** Poll interval of the progress bar, milliseconds. */
const POLL_MS = 250;

interface ImportState {
  id: string;
  status: string;
  percentComplete: number;
  recordsImported: number;
  phase: string | null;
  rowsTotal: number | null;
  badRowCount: number;
  badRows: Array<{ row: number; error: string }>;
  error?: string;
}

async function api(base: URL, key: string | undefined, method: string, path: string, body?: unknown): Promise<unknown> {
  let res: Response;
  try {
    res = await fetch(new URL(path, base), {
      method,
      headers: {
        accept: "application/json",
        ...(key ? { "api-key": key } : {}),
        ...(body === undefined ? {} : { "content-type": "application/json" }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (err) {
    throw new SvcError("E_IO", `cannot reach ${base.origin}: ${(err as Error).message}`);
  }
  const text = await res.text();
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new SvcError("E_IO", `server answered ${res.status}: ${text.slice(0, 200)}`);
  }
  if (!res.ok) {
    const e = (parsed as { error?: { code?: string; message?: string; field?: string } }).error ?? {};
    throw new SvcError(
      res.status === 401 ? "E_AUTH" : res.status === 404 ? "E_NOT_FOUND" : res.status >= 500 ? "E_IO" : "E_BAD_REQUEST",
      `server answered ${res.status} ${e.code ?? ""}: ${e.message ?? text.slice(0, 200)}`,
      { field: e.field },
    );
  }
  return parsed;
}

/**
 * Start the import, then redraw one progress line on stderr (a terminal, or SVC_PROGRESS=1) until the job ends.
 * Exit code: 0 Completed (bad rows skipped under --error-mode continue are listed), 1 Failed or Cancelled.
 */
export async function runBulkImport(values: Record<string, string | boolean | undefined>, args: string[]): Promise<number> {
  const index = values.index as string;
  const [uri] = args;
  if (uri === undefined)
    throw new SvcError("E_BAD_REQUEST", "svc import --index <name> needs a file path (under the server's import root) or an http(s) URL", {
      field: "uri",
    });
  const raw = (values.url as string | undefined) ?? (process.env.SVC_URL || "http://127.0.0.1:8080");
  const base = checkServiceUrl(raw, { field: values.url !== undefined ? "url" : "SVC_URL" });
  const key = (values.key as string | undefined) ?? process.env.SVC_API_KEY;
  const mode = values["error-mode"] as string | undefined;
  if (mode !== undefined && mode !== "abort" && mode !== "continue")
    throw new SvcError("E_BAD_REQUEST", "--error-mode must be abort or continue", { field: "error-mode" });
  const path = `/v1/indexes/${encodeURIComponent(index)}/bulk/imports`;
  const { id } = (await api(base, key, "POST", path, {
    uri,
    namespace: values.namespace,
    ...(mode === undefined ? {} : { errorMode: { onError: mode } }),
  })) as { id: string };
  const show = process.stderr.isTTY || process.env.SVC_PROGRESS === "1";
  let job: ImportState;
  for (;;) {
    job = (await api(base, key, "GET", `${path}/${id}`)) as ImportState;
    if (show) {
      const pct = Math.max(0, Math.min(100, job.percentComplete));
      const bar = "#".repeat(Math.round(pct * 0.3)).padEnd(30, ".");
      process.stderr.write(
        `\rimport ${index} [${bar}] ${pct.toFixed(0)}% ${job.recordsImported} records${job.phase === "checking" ? " (checking rows)" : ""}${job.badRowCount > 0 ? `, ${job.badRowCount} bad rows` : ""}   `,
      );
    }
    if (job.status !== "Pending" && job.status !== "InProgress") break;
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
  if (show) process.stderr.write("\n");
  if (values.json === true) say(JSON.stringify(job));
  else {
    say(`${job.status}: ${job.recordsImported} records imported into ${index}${job.error ? ` (${job.error})` : ""}`);
    for (const b of job.badRows.slice(0, 20)) say(`  row ${b.row}: ${b.error}`);
    if (job.badRowCount > 20) say(`  ... ${job.badRowCount - 20} more bad rows (GET ${path}/${id})`);
  }
  return job.status === "Completed" ? 0 : 1;
}
