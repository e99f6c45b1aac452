/** @module api — the dashboard's only way to the server: same-origin REST calls with the session's Api-Key header. */

const STORAGE_KEY = "svc.apiKey";

/** The key lives in sessionStorage only (gone when the tab closes); never in the URL, never logged. */
export const session = {
  key(): string | null {
    try {
      return sessionStorage.getItem(STORAGE_KEY);
    } catch {
      return null;
    }
  },
  save(key: string): void {
    sessionStorage.setItem(STORAGE_KEY, key);
  },
  clear(): void {
    sessionStorage.removeItem(STORAGE_KEY);
  },
};

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly field?: string,
  ) {
    super(message);
  }

  /** The server has no such route (the router's own 404): the feature is not deployed here yet. */
  get missing(): boolean {
    return this.status === 404 && this.field === "path";
  }
}

/** Called when the server refuses the session's key (revoked or unknown): the app signs out. */
let onUnauthorized: (() => void) | null = null;
export function whenUnauthorized(fn: () => void): void {
  onUnauthorized = fn;
}

export interface CallOptions {
  method?: string;
  /** JSON-encoded unless it is a FormData or Blob. */
  body?: unknown;
  /** Send no key (public routes), or this key instead of the session's. */
  key?: string | null;
  signal?: AbortSignal;
  /** Default application/json. */
  accept?: string;
}

async function errorOf(res: Response): Promise<ApiError> {
  let code = `HTTP_${res.status}`;
  let message = res.statusText || `HTTP ${res.status}`;
  let field: string | undefined;
  try {
    const body = (await res.json()) as { error?: { code?: string; message?: string; field?: string } };
    if (body.error) {
      code = body.error.code ?? code;
      message = body.error.message ?? message;
      field = body.error.field;
    }
  } catch {
    // not JSON
  }
  return new ApiError(res.status, code, message, field);
}

/** One request; resolves with the parsed JSON body, rejects with an ApiError. */
export async function request(path: string, opts: CallOptions = {}): Promise<Response> {
  const headers: Record<string, string> = { accept: opts.accept ?? "application/json" };
  const key = opts.key === undefined ? session.key() : opts.key;
  if (key !== null) headers["api-key"] = key;
  let body: BodyInit | undefined;
  if (opts.body instanceof FormData || opts.body instanceof Blob) body = opts.body;
  else if (opts.body !== undefined) {
    headers["content-type"] = "application/json";
    body = JSON.stringify(opts.body);
  }
  let res: Response;
  try {
    res = await fetch(path, {
      method: opts.method ?? (body === undefined ? "GET" : "POST"),
      headers,
      body,
      signal: opts.signal,
      credentials: "omit",
      cache: "no-store",
    });
  } catch (err) {
    if ((err as Error).name === "AbortError") throw err;
    throw new ApiError(0, "E_NETWORK", "the server could not be reached");
  }
  if (!res.ok) {
    const e = await errorOf(res);
    if (e.status === 401 && opts.key === undefined && key !== null) onUnauthorized?.();
    throw e;
  }
  return res;
}

export async function api<T = any>(path: string, opts: CallOptions = {}): Promise<T> {
  const res = await request(path, opts);
  const text = await res.text();
  return (text === "" ? undefined : JSON.parse(text)) as T;
}

/** Path segment, percent-encoded. */
export const seg = (s: string) => encodeURIComponent(s);

/**
 * Download a response body with progress (bytes so far, total or null), then save it as a
 * file through a temporary blob URL.
 */
export async function download(path: string, filename: string, onProgress: (done: number, total: number | null) => void): Promise<number> {
  const res = await request(path, { accept: "*/*" });
  const total = Number(res.headers.get("content-length")) || null;
  const chunks: Uint8Array[] = [];
  let done = 0;
  const reader = res.body!.getReader();
  for (;;) {
    const { done: end, value } = await reader.read();
    if (end) break;
    chunks.push(value);
    done += value.byteLength;
    onProgress(done, total);
  }
  const url = URL.createObjectURL(new Blob(chunks as BlobPart[], { type: res.headers.get("content-type") ?? "application/octet-stream" }));
  const a = document.createElement("a");
  a.href = url;
  a.download = filename;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
  return done;
}

/** Upload multipart form data with progress (fetch cannot report upload progress; XHR can). */
export function upload<T = any>(path: string, form: FormData, onProgress: (sent: number, total: number) => void): Promise<T> {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open("POST", path);
    const key = session.key();
    if (key !== null) xhr.setRequestHeader("api-key", key);
    xhr.setRequestHeader("accept", "application/json");
    xhr.upload.onprogress = (e) => onProgress(e.loaded, e.lengthComputable ? e.total : 0);
    xhr.onerror = () => reject(new ApiError(0, "E_NETWORK", "the upload failed: the server could not be reached"));
    xhr.onload = () => {
      let body: any;
      try {
        body = JSON.parse(xhr.responseText);
      } catch {
        body = undefined;
      }
      if (xhr.status >= 200 && xhr.status < 300) resolve(body as T);
      else
        reject(
          new ApiError(xhr.status, body?.error?.code ?? `HTTP_${xhr.status}`, body?.error?.message ?? xhr.statusText, body?.error?.field),
        );
    };
    xhr.send(form);
  });
}
