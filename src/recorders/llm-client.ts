/**
 * @module recorders/llm-client — `wrapClient`: record every message call of an Anthropic-style
 * (`messages.create`) or OpenAI-style (`chat.completions.create`, `responses.create`) client as one
 * `llm_turn` record. Duck-typed (no SDK dependency): the client is wrapped in Proxies that replace
 * only those `create` methods. The call's own result is returned as is (the same object, the same
 * promise); the record is written after it settles, off the caller's path (fire-and-forget, never
 * throws, failures swallowed). A streaming call (`stream: true`) returns the same stream object; its
 * async iterator is observed chunk for chunk and the record is written once the stream ends.
 */
import { postJson, recordsPath, target, type Target } from "./send.js";

export interface WrapOptions {
  /** Records namespace (default layer) or the vector namespace inside `index`. */
  namespace: string;
  /** Write to this vector index (embedded by POST /v1/embed, 1024-d) instead of the records layer. */
  index?: string;
  /** Expiry in days: the records' `ttlDays`, or in index mode `svc_expires_at` = ts + ttl_days days (which the index layer honours). */
  ttl_days?: number;
  /** Service URL; default SVC_URL, else http://127.0.0.1:8080. */
  url?: string;
  /** Default SVC_API_KEY; sent only to `url`. */
  apiKey?: string;
}

export type Vendor = "anthropic" | "openai";

/** One observed turn, before it is shaped for a layer. */
export interface Turn {
  vendor: Vendor;
  model: string | null;
  user: string;
  reply: string;
  stop_reason: string | null;
  input_tokens: number | null;
  output_tokens: number | null;
  latency_ms: number;
  ts: number;
}

/** Every turn observed and not yet sent: shaping (scheduled with setImmediate) and then the send. */
const inflight = new Set<Promise<unknown>>();

/**
 * Resolves once the record of every call that has returned to its caller (a stream: that has ended)
 * was sent (or failed). A turn is registered here before the call's result reaches the caller, so a
 * script may `await flushRecorders()` and exit. Never needed on the call path.
 */
export async function flushRecorders(): Promise<void> {
  while (inflight.size > 0) await Promise.allSettled([...inflight]);
}

export function wrapClient<T extends object>(client: T, opts: WrapOptions): T {
  if (typeof opts?.namespace !== "string" || opts.namespace === "") throw new TypeError("wrapClient needs options.namespace");
  const t = target(opts);
  const sink = (turn: Turn) => write(t, opts, turn);
  // One cache per wrapper: wrapping the same client twice gives two wrappers, each with its own options.
  const proxies = new WeakMap<object, object>();
  const wrap = <O extends object>(resource: O, vendor: Vendor, ex: Extractor) => wrapCreate(resource, vendor, ex, sink, proxies);
  return new Proxy(client, {
    get(obj, prop, receiver) {
      const v = Reflect.get(obj, prop, receiver) as unknown;
      if (!isObject(v)) return v;
      if (prop === "messages") return wrap(v, "anthropic", anthropicTurn);
      if (prop === "responses") return wrap(v, "openai", responsesTurn);
      if (prop === "chat") {
        return new Proxy(v, {
          get(o, p, r) {
            const c = Reflect.get(o, p, r) as unknown;
            return p === "completions" && isObject(c) ? wrap(c, "openai", chatTurn) : c;
          },
        });
      }
      return v;
    },
  });
}

type Params = Record<string, unknown>;
/** Folds a result (or each stream chunk into an accumulator) into the turn's fields. */
interface Extractor {
  result(params: Params, res: Record<string, unknown>): Partial<Turn>;
  chunk(acc: Partial<Turn> & { reply: string }, chunk: Record<string, unknown>): void;
  user(params: Params): string;
}

/** `proxies` is the wrapper's own cache, so `client.messages` is the same object on every access. */
function wrapCreate<O extends object>(
  resource: O,
  vendor: Vendor,
  ex: Extractor,
  sink: (t: Turn) => void,
  proxies: WeakMap<object, object>,
): O {
  const cached = proxies.get(resource);
  if (cached) return cached as O;
  const p = new Proxy(resource, {
    get(o, prop, r) {
      const fn = Reflect.get(o, prop, r) as unknown;
      if (prop !== "create" || typeof fn !== "function") return fn;
      return function create(this: unknown, ...args: unknown[]) {
        const t0 = performance.now();
        const ts = Date.now();
        const result = (fn as (...a: unknown[]) => unknown).apply(this === p ? o : this, args);
        try {
          const observe = (res: unknown) => {
            try {
              observeResult(vendor, ex, sink, (args[0] ?? {}) as Params, res, t0, ts);
            } catch {
              // a recorder never breaks the call
            }
          };
          if (isObject(result) && typeof (result as { then?: unknown }).then === "function")
            (result as PromiseLike<unknown>).then(observe, () => undefined);
          else observe(result);
        } catch {
          // ignore
        }
        return result;
      };
    },
  });
  proxies.set(resource, p);
  return p;
}

function observeResult(vendor: Vendor, ex: Extractor, sink: (t: Turn) => void, params: Params, res: unknown, t0: number, ts: number): void {
  if (!isObject(res)) return;
  const base = { vendor, ts, user: "" };
  const done = (fields: Partial<Turn>) => {
    // The call ends here (the result settled, or the stream's last chunk arrived): measure it now,
    // before the caller's own work runs, and register the turn before the caller sees the result.
    const latency_ms = Math.round((performance.now() - t0) * 1000) / 1000;
    // Shape the record later, off the caller's continuation.
    const shaped = new Promise<void>((resolve) =>
      setImmediate(() => {
        try {
          sink({
            model: null,
            reply: "",
            stop_reason: null,
            input_tokens: null,
            output_tokens: null,
            ...fields,
            ...base,
            user: ex.user(params),
            latency_ms,
          });
        } catch {
          // ignore
        }
        resolve();
      }),
    );
    inflight.add(shaped);
    void shaped.then(() => inflight.delete(shaped));
  };
  const iter = (res as { [Symbol.asyncIterator]?: unknown })[Symbol.asyncIterator];
  if (params.stream === true && typeof iter === "function") {
    const acc: Partial<Turn> & { reply: string } = { reply: "", model: typeof params.model === "string" ? params.model : null };
    let recorded = false;
    const finish = () => {
      if (recorded) return;
      recorded = true;
      done(acc);
    };
    Object.defineProperty(res, Symbol.asyncIterator, {
      configurable: true,
      writable: true,
      value: function (this: unknown) {
        const it = (iter as () => AsyncIterator<unknown>).call(this);
        const wrapped: AsyncIterator<unknown> & AsyncIterable<unknown> = {
          async next(...a: [] | [unknown]) {
            let r: IteratorResult<unknown>;
            try {
              r = await it.next(...a);
            } catch (err) {
              finish();
              throw err;
            }
            try {
              if (r.done) finish();
              else if (isObject(r.value)) ex.chunk(acc, r.value as Record<string, unknown>);
            } catch {
              // ignore
            }
            return r;
          },
          async return(value?: unknown) {
            finish();
            return it.return ? it.return(value) : { done: true, value };
          },
          [Symbol.asyncIterator]() {
            return this;
          },
        };
        if (it.throw) wrapped.throw = (e?: unknown) => it.throw!(e);
        return wrapped;
      },
    });
    return;
  }
  done(ex.result(params, res as Record<string, unknown>));
}

/** Shape a turn for its layer and send it; never throws. */
function write(t: Target, opts: WrapOptions, turn: Turn): void {
  const id = `llm-${turn.ts}-${Math.random().toString(36).slice(2, 10)}`;
  const text = `USER: ${turn.user}\n\nASSISTANT: ${turn.reply}`;
  const fields = {
    vendor: turn.vendor,
    model: turn.model,
    stop_reason: turn.stop_reason,
    input_tokens: turn.input_tokens,
    output_tokens: turn.output_tokens,
    latency_ms: turn.latency_ms,
  };
  const job = (async () => {
    if (opts.index === undefined) {
      const item: Record<string, unknown> = {
        kind: "llm_turn",
        text,
        tags: [turn.vendor, turn.model].filter((x): x is string => typeof x === "string" && x !== ""),
        ts: turn.ts,
        meta: { id, ...fields },
      };
      if (opts.ttl_days !== undefined) item.ttlDays = opts.ttl_days;
      await postJson(t, recordsPath(opts.namespace), { items: [item] });
      return;
    }
    const emb = (await postJson(t, "/v1/embed", { texts: [text] })) as { vectors?: number[][] } | undefined;
    const values = emb?.vectors?.[0];
    if (!Array.isArray(values)) return;
    // Index metadata holds no nulls: unknown fields are left out. The text rides along as metadata.text.
    const metadata: Record<string, unknown> = {};
    for (const [k, v] of Object.entries({ kind: "llm_turn", ...fields, ts: turn.ts, text }))
      if (v !== null && v !== undefined) metadata[k] = v;
    // The index layer expires a vector by its svc_expires_at (unix ms): hidden from reads at once, swept within a minute.
    if (opts.ttl_days !== undefined) {
      metadata.ttl_days = opts.ttl_days;
      metadata.svc_expires_at = turn.ts + opts.ttl_days * 86_400_000;
    }
    await postJson(t, `/v1/indexes/${encodeURIComponent(opts.index)}/vectors/upsert`, {
      namespace: opts.namespace,
      vectors: [{ id, values, metadata }],
    });
  })().catch(() => undefined); // by contract (module doc): recording runs in the caller's process and never disturbs the wrapped call
  inflight.add(job);
  void job.finally(() => inflight.delete(job));
}

// ---- vendor shapes -------------------------------------------------------------------------

function isObject(v: unknown): v is object {
  return (typeof v === "object" && v !== null) || typeof v === "function";
}
const str = (v: unknown): string | null => (typeof v === "string" ? v : null);
const num = (v: unknown): number | null => (typeof v === "number" && Number.isFinite(v) ? v : null);
const rec = (v: unknown): Record<string, unknown> => (typeof v === "object" && v !== null ? (v as Record<string, unknown>) : {});

/** Text of a message's content: a string, or the text of its text parts. */
function contentText(c: unknown): string {
  if (typeof c === "string") return c;
  if (!Array.isArray(c)) return "";
  return c
    .map((p) => (typeof p === "string" ? p : (str(rec(p).text) ?? "")))
    .filter((s) => s !== "")
    .join("\n");
}

function lastUser(messages: unknown): string {
  if (typeof messages === "string") return messages;
  if (!Array.isArray(messages)) return "";
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = rec(messages[i]);
    if (m.role === "user") return contentText(m.content);
  }
  return "";
}

const anthropicTurn: Extractor = {
  user: (p) => lastUser(p.messages),
  result(_p, r) {
    const usage = rec(r.usage);
    const reply = Array.isArray(r.content)
      ? r.content
          .filter((b) => rec(b).type === "text")
          .map((b) => str(rec(b).text) ?? "")
          .join("")
      : "";
    return {
      model: str(r.model),
      reply,
      stop_reason: str(r.stop_reason),
      input_tokens: num(usage.input_tokens),
      output_tokens: num(usage.output_tokens),
    };
  },
  chunk(acc, e) {
    if (e.type === "message_start") {
      const m = rec(e.message);
      acc.model = str(m.model) ?? acc.model;
      acc.input_tokens = num(rec(m.usage).input_tokens) ?? acc.input_tokens;
      acc.output_tokens = num(rec(m.usage).output_tokens) ?? acc.output_tokens;
    } else if (e.type === "content_block_delta") {
      const d = rec(e.delta);
      if (d.type === "text_delta" && typeof d.text === "string") acc.reply += d.text;
    } else if (e.type === "message_delta") {
      acc.stop_reason = str(rec(e.delta).stop_reason) ?? acc.stop_reason;
      const u = rec(e.usage);
      acc.output_tokens = num(u.output_tokens) ?? acc.output_tokens;
      acc.input_tokens = num(u.input_tokens) ?? acc.input_tokens;
    }
  },
};

const chatTurn: Extractor = {
  user: (p) => lastUser(p.messages),
  result(_p, r) {
    const choice = rec(Array.isArray(r.choices) ? r.choices[0] : undefined);
    const usage = rec(r.usage);
    return {
      model: str(r.model),
      reply: contentText(rec(choice.message).content),
      stop_reason: str(choice.finish_reason),
      input_tokens: num(usage.prompt_tokens),
      output_tokens: num(usage.completion_tokens),
    };
  },
  chunk(acc, c) {
    acc.model = str(c.model) ?? acc.model;
    const choice = rec(Array.isArray(c.choices) ? c.choices[0] : undefined);
    const delta = rec(choice.delta);
    if (typeof delta.content === "string") acc.reply += delta.content;
    acc.stop_reason = str(choice.finish_reason) ?? acc.stop_reason;
    const usage = rec(c.usage);
    acc.input_tokens = num(usage.prompt_tokens) ?? acc.input_tokens;
    acc.output_tokens = num(usage.completion_tokens) ?? acc.output_tokens;
  },
};

function responsesFields(r: Record<string, unknown>): Partial<Turn> {
  const usage = rec(r.usage);
  let reply = str(r.output_text);
  if (reply === null && Array.isArray(r.output)) {
    reply = r.output
      .flatMap((item) => (Array.isArray(rec(item).content) ? (rec(item).content as unknown[]) : []))
      .filter((c) => rec(c).type === "output_text")
      .map((c) => str(rec(c).text) ?? "")
      .join("");
  }
  const stop = str(rec(r.incomplete_details).reason) ?? str(r.status);
  return {
    model: str(r.model),
    reply: reply ?? "",
    stop_reason: stop,
    input_tokens: num(usage.input_tokens),
    output_tokens: num(usage.output_tokens),
  };
}

const responsesTurn: Extractor = {
  user: (p) => lastUser(p.input),
  result: (_p, r) => responsesFields(r),
  chunk(acc, e) {
    if (e.type === "response.output_text.delta" && typeof e.delta === "string") acc.reply += e.delta;
    else if (e.type === "response.completed" || e.type === "response.incomplete" || e.type === "response.failed") {
      const f = responsesFields(rec(e.response));
      acc.model = f.model ?? acc.model;
      acc.stop_reason = f.stop_reason ?? acc.stop_reason;
      acc.input_tokens = f.input_tokens ?? acc.input_tokens;
      acc.output_tokens = f.output_tokens ?? acc.output_tokens;
      if (acc.reply === "" && f.reply) acc.reply = f.reply;
    }
  },
};
