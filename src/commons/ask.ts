/** @module commons/ask — the site-question bridge: find the NLWeb-style /ask endpoint a site publishes, ask it in either dialect (GET ?query= or POST {query, prefer}; JSON or SSE), return the matching pages with their URLs. */
import { SvcError } from "../errors.js";
import type { FetchResult, Outbound } from "./outbound.js";
import { ASK_MODES, checkAgent, checkText, TEXT } from "./text-rules.js";

export { ASK_MODES };
export type AskMode = (typeof ASK_MODES)[number];

export interface AskPage {
  url: string;
  name?: string;
  score?: number;
  description?: string;
}

export interface AskAnswer {
  site: string;
  /** The endpoint that answered. */
  endpoint: string;
  /** "get": GET ?query=&mode=|generate_mode=; "post": POST {query: {text, site}, prefer: {mode}}. */
  dialect: "get" | "post";
  mode: AskMode;
  /** The matching pages, as the site ranked them. */
  pages: AskPage[];
  /** summarize / generate: the site's prose and the URLs it cited (or the pages'). */
  answer?: { text: string; sources: string[] };
  notice: string;
}

/** Discovery places, in order, after an endpoint named in `site` itself. */
const DISCOVERY_JSON = "/.well-known/nlweb.json";
const MAX_PAGES = 50;
/** Endpoints found per origin are remembered this long. */
const CACHE_MS = 10 * 60_000;
const NOTICE = "Pages and prose come from the site and are its claims. Questions sent through the bridge are seen by the bridge operator.";

/** Strip controls and invisible/bidi characters from text a site sent; cap its length. */
function clean(v: unknown, max: number): string | undefined {
  if (typeof v !== "string") return undefined;
  const s = v.replace(/[\p{Cf}\p{Co}]|[^\P{Cc}\n\t]/gu, "").trim();
  if (s === "") return undefined;
  return [...s].length > max ? `${[...s].slice(0, max - 1).join("")}…` : s;
}

function httpUrl(v: unknown): string | undefined {
  if (typeof v !== "string" || v.length > 2000) return undefined;
  try {
    const u = new URL(v);
    return u.protocol === "https:" || u.protocol === "http:" ? u.href : undefined;
  } catch {
    return undefined;
  }
}

/** What a site's answer held: pages, prose, cited sources; `shaped` = it looked like an NLWeb answer at all. */
interface Collected {
  shaped: boolean;
  pages: AskPage[];
  prose: string[];
  sources: string[];
}

function collectItem(item: unknown, acc: Collected): void {
  if (typeof item !== "object" || item === null) return;
  const o = item as Record<string, unknown>;
  const schema = (
    typeof o.schema_object === "object" && o.schema_object !== null
      ? Array.isArray(o.schema_object)
        ? o.schema_object[0]
        : o.schema_object
      : {}
  ) as Record<string, unknown>;
  const url = httpUrl(o.url) ?? httpUrl(o.link) ?? httpUrl(schema?.url);
  if (url === undefined) {
    const text = clean(o.text ?? o.answer, 20_000);
    if (text !== undefined) acc.prose.push(text);
    return;
  }
  if (acc.pages.some((p) => p.url === url) || acc.pages.length >= MAX_PAGES) return;
  const rawScore =
    typeof o.score === "number"
      ? o.score
      : typeof (o.ranking as Record<string, unknown> | undefined)?.score === "number"
        ? (o.ranking as { score: number }).score
        : undefined;
  const name = clean(o.name ?? o.title ?? schema?.name, 300);
  const description = clean(o.description ?? o.snippet ?? schema?.description, 2000);
  acc.pages.push({
    url,
    ...(name === undefined ? {} : { name }),
    ...(rawScore !== undefined && Number.isFinite(rawScore) ? { score: rawScore } : {}),
    ...(description === undefined ? {} : { description }),
  });
}

/** Fold one JSON message of an answer (a whole JSON reply, or one SSE event) into `acc`. */
function collect(msg: unknown, acc: Collected): void {
  if (typeof msg !== "object" || msg === null || Array.isArray(msg)) return;
  const o = msg as Record<string, unknown>;
  const type = typeof o.message_type === "string" ? o.message_type : undefined;
  if (type !== undefined || "_meta" in o || Array.isArray(o.results)) acc.shaped = true;
  for (const k of ["results", "items", "content"]) {
    const list = o[k];
    if (Array.isArray(list)) {
      acc.shaped = true;
      for (const it of list) collectItem(it, acc);
    }
  }
  for (const k of ["answer", "summary"]) {
    const v = o[k];
    const text = clean(
      typeof v === "object" && v !== null ? ((v as Record<string, unknown>).message ?? (v as Record<string, unknown>).text) : v,
      20_000,
    );
    if (text !== undefined) {
      acc.shaped = true;
      acc.prose.push(text);
    }
  }
  if (type !== undefined && /summary|answer|nlws|generate/i.test(type)) {
    const text = clean(
      typeof o.message === "object" && o.message !== null ? (o.message as Record<string, unknown>).text : o.message,
      20_000,
    );
    if (text !== undefined) acc.prose.push(text);
  }
  if (Array.isArray(o.sources))
    for (const s of o.sources) {
      const u = httpUrl(typeof s === "object" && s !== null ? (s as Record<string, unknown>).url : s);
      if (u !== undefined && !acc.sources.includes(u)) acc.sources.push(u);
    }
}

/** Parse a site's reply (JSON or text/event-stream) into what it held. */
export function parseAnswer(res: Pick<FetchResult, "contentType" | "body">): Collected {
  const acc: Collected = { shaped: false, pages: [], prose: [], sources: [] };
  const text = res.body.toString("utf8");
  if (/text\/event-stream/i.test(res.contentType) || /^(?:event|data):/m.test(text.slice(0, 200))) {
    for (const block of text.split(/\r?\n\r?\n/)) {
      const data = block
        .split(/\r?\n/)
        .filter((l) => l.startsWith("data:"))
        .map((l) => l.slice(5).replace(/^ /, ""))
        .join("\n");
      if (data === "") continue;
      try {
        collect(JSON.parse(data), acc);
      } catch {
        // a non-JSON event (a keep-alive, [DONE]) carries nothing
      }
    }
    return acc;
  }
  try {
    collect(JSON.parse(text), acc);
  } catch {
    // not JSON: not an answer
  }
  return acc;
}

interface AskContext {
  question: string;
  mode: AskMode;
  agent: string | undefined;
  /** host[:port] of the site, sent as query.site in the POST dialect */
  host: string;
  /** epoch ms */
  deadline: number;
}

export class AskBridge {
  private readonly cache = new Map<string, { endpoint: URL; dialect: "get" | "post"; until: number }>();

  constructor(
    private readonly outbound: Outbound,
    private readonly now: () => number = Date.now,
  ) {}

  /** `b` as the ask_site schema (tools/commons-ops.ts) let it through (site a string, mode one of ASK_MODES); the text rules and the site's address are checked here. */
  async ask(b: { site: string; question?: unknown; agent?: unknown; mode?: AskMode | null }): Promise<AskAnswer> {
    if (b.site.trim() === "") throw new SvcError("E_BAD_REQUEST", "site is required: the domain to ask", { field: "site" });
    const site = this.outbound.parseTarget(b.site, "site");
    const question = checkText(b.question, "question", TEXT.question);
    const agent = checkAgent(b.agent, "agent", false);
    const mode = b.mode ?? "list";
    // No new request starts after the deadline, so a slow site costs at most about three time-outs.
    const ctx: AskContext = { question, mode, agent, host: site.host, deadline: this.now() + 2 * this.outbound.config.timeoutMs };

    const cached = this.cache.get(site.origin);
    if (cached !== undefined && cached.until > this.now()) {
      const r = await this.tryEndpoint(cached.endpoint, ctx, cached.dialect);
      if (r !== null) return this.answer(site, cached.endpoint, r.dialect, mode, r.acc);
      this.cache.delete(site.origin);
    }
    const tried: string[] = [];
    for await (const endpoint of this.candidates(site, ctx.deadline)) {
      if (tried.includes(endpoint.href)) continue;
      tried.push(endpoint.href);
      const r = await this.tryEndpoint(endpoint, ctx);
      if (r !== null) {
        this.cache.set(site.origin, { endpoint, dialect: r.dialect, until: this.now() + CACHE_MS });
        return this.answer(site, endpoint, r.dialect, mode, r.acc);
      }
    }
    throw new SvcError(
      "E_UPSTREAM",
      `${site.host} publishes no question-answering endpoint this bridge can use (tried ${tried.join(", ")})`,
      { field: "site" },
    );
  }

  /** Endpoint URLs to try, in order: a path named in `site`, the discovery document, <link rel="nlweb"> on the home page, <site>/ask. */
  private async *candidates(site: URL, deadline: number): AsyncGenerator<URL> {
    if (site.pathname !== "/" && site.pathname !== "") yield new URL(site.pathname, site.origin);
    const doc = await this.get(new URL(DISCOVERY_JSON, site.origin), deadline);
    if (doc !== null && doc.status === 200) {
      try {
        const j = JSON.parse(doc.body.toString("utf8")) as Record<string, unknown>;
        for (const k of ["ask", "endpoint", "ask_endpoint", "url"]) {
          if (typeof j[k] === "string") {
            yield new URL(j[k] as string, site.origin);
            break;
          }
        }
      } catch {
        // not JSON: nothing published there
      }
    }
    const home = await this.get(new URL("/", site.origin), deadline);
    if (home !== null && home.status === 200 && /html/i.test(home.contentType)) {
      const html = home.body.toString("utf8");
      for (const m of html.matchAll(/<link\b[^>]*>/gi)) {
        const tag = m[0];
        if (!/\brel\s*=\s*["']?(?:nlweb|nlweb-ask)["'\s>]/i.test(tag)) continue;
        const href = /\bhref\s*=\s*["']([^"']+)["']/i.exec(tag)?.[1];
        if (href === undefined) continue;
        try {
          yield new URL(href.replace(/&amp;/g, "&"), site.origin);
        } catch {
          // a bad href: skip it
        }
        break;
      }
    }
    yield new URL("/ask", site.origin);
  }

  /** A discovery fetch: null when the site did not answer usably (blocked targets still throw). */
  private async get(url: URL, deadline: number, headers?: Record<string, string>): Promise<FetchResult | null> {
    this.checkDeadline(url, deadline);
    try {
      return await this.outbound.fetch(url, { field: "site", headers });
    } catch (e) {
      if (e instanceof SvcError && e.code === "E_UPSTREAM") return null;
      throw e;
    }
  }

  /** Ask one endpoint, GET first then POST (or only `dialect`); null when neither answered like an NLWeb endpoint. */
  private checkDeadline(url: URL, deadline: number): void {
    if (this.now() > deadline)
      throw new SvcError("E_UPSTREAM", `${url.host} is too slow: no answer within ${2 * this.outbound.config.timeoutMs} ms`, {
        field: "site",
      });
  }

  private async tryEndpoint(
    endpoint: URL,
    ctx: AskContext,
    dialect?: "get" | "post",
  ): Promise<{ dialect: "get" | "post"; acc: Collected } | null> {
    const headers: Record<string, string> =
      ctx.agent === undefined
        ? {}
        : { "user-agent": `svc-ask-bridge/1.0 (agent: ${encodeURIComponent(ctx.agent)})`, "x-agent-name": encodeURIComponent(ctx.agent) };
    if (dialect !== "post") {
      const u = new URL(endpoint);
      u.searchParams.set("query", ctx.question);
      u.searchParams.set("mode", ctx.mode);
      u.searchParams.set("generate_mode", ctx.mode);
      u.searchParams.set("streaming", "false");
      if (ctx.agent !== undefined) u.searchParams.set("agent", ctx.agent);
      const r = await this.get(u, ctx.deadline, headers);
      if (r !== null && r.status === 200) {
        const acc = parseAnswer(r);
        if (acc.shaped) return { dialect: "get", acc };
      }
    }
    if (dialect === "get") return null;
    let r: FetchResult | null;
    this.checkDeadline(endpoint, ctx.deadline);
    try {
      r = await this.outbound.fetch(endpoint, {
        field: "site",
        method: "POST",
        headers,
        body: JSON.stringify({
          query: { text: ctx.question, site: ctx.host },
          prefer: { mode: ctx.mode, streaming: false },
          ...(ctx.agent === undefined ? {} : { meta: { agent: ctx.agent } }),
        }),
      });
    } catch (e) {
      if (e instanceof SvcError && e.code === "E_UPSTREAM") return null;
      throw e;
    }
    if (r.status !== 200) return null;
    const acc = parseAnswer(r);
    return acc.shaped ? { dialect: "post", acc } : null;
  }

  private answer(site: URL, endpoint: URL, dialect: "get" | "post", mode: AskMode, acc: Collected): AskAnswer {
    const prose = acc.prose.join("\n\n");
    return {
      site: site.host,
      endpoint: endpoint.href,
      dialect,
      mode,
      pages: acc.pages,
      ...(mode !== "list" && prose !== ""
        ? { answer: { text: prose, sources: acc.sources.length > 0 ? acc.sources : acc.pages.map((p) => p.url) } }
        : {}),
      notice: NOTICE,
    };
  }
}
