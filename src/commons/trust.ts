/** @module commons/trust — trust records (attestations): one per call an agent made to a target; append-only, read by target (a domain matches its endpoint URLs) or newest first. */
import { randomBytes } from "node:crypto";
import { SvcError } from "../errors.js";
import { FRAME, type CommonsLog } from "./log.js";
import { checkAgent, checkText, OUTCOMES, TEXT, URL_MAX } from "./text-rules.js";

export { OUTCOMES };
export type Outcome = (typeof OUTCOMES)[number];

export interface TrustRecord {
  id: string;
  agent: string;
  /** As normalized: a lowercase host (domain), or a URL with a lowercase host. */
  target: string;
  /** The host the record is about (the target's host). */
  domain: string;
  outcome: Outcome;
  capability?: string;
  url?: string;
  latency_ms?: number;
  note?: string;
  /** epoch ms */
  ts: number;
}

/** A domain (host name, optionally :port) or an http(s) URL, normalized; null when it is neither. */
export function normalizeTarget(raw: string): { target: string; domain: string } | null {
  const s = raw.trim();
  if (/^https?:\/\//i.test(s)) {
    try {
      const u = new URL(s);
      if (u.username !== "" || u.password !== "" || u.hostname === "") return null;
      u.hash = "";
      return { target: u.href, domain: u.hostname.toLowerCase() };
    } catch {
      return null;
    }
  }
  const m = /^([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*)(?::(\d{1,5}))?$/i.exec(s);
  if (!m || m[1]!.length > 253) return null;
  const host = m[1]!.toLowerCase();
  return { target: m[2] === undefined ? host : `${host}:${m[2]}`, domain: host };
}

/** True when `domain` is `query` or one of its subdomains. */
function underDomain(domain: string, query: string): boolean {
  return domain === query || domain.endsWith(`.${query}`);
}

export class TrustRecords {
  /** Oldest first. */
  private readonly records: TrustRecord[] = [];

  constructor(private readonly log: CommonsLog) {}

  /** Replay one stored record. */
  apply(r: TrustRecord): void {
    this.records.push(r);
  }

  get count(): number {
    return this.records.length;
  }

  /**
   * Validate and store an attestation; returns the stored record. Throws E_REFUSED / E_BAD_REQUEST naming the field.
   * `b` as the trust_record schema (tools/commons-ops.ts) let it through: types, outcome, url length and latency_ms
   * are checked; the text rules and what target and url name are checked here.
   */
  async record(b: {
    agent?: unknown;
    target?: string | null;
    outcome: Outcome;
    capability?: unknown;
    url?: string | null;
    latency_ms?: number | null;
    note?: unknown;
  }): Promise<TrustRecord> {
    const agent = checkAgent(b.agent)!;
    if (typeof b.target !== "string" || b.target.trim() === "")
      throw new SvcError("E_REFUSED", "target refused: it is required: the domain or endpoint URL that was called", { field: "target" });
    if (b.target.length > URL_MAX)
      throw new SvcError("E_REFUSED", `target refused: it is longer than ${URL_MAX} characters`, { field: "target" });
    const t = normalizeTarget(b.target);
    if (t === null)
      throw new SvcError("E_BAD_REQUEST", "target must be a domain (example.com) or an http(s) endpoint URL", { field: "target" });
    const capability = checkText(b.capability, "capability", TEXT.capability);
    let url: string | undefined;
    if (typeof b.url === "string" && b.url !== "") {
      const u = /^https?:\/\//i.test(b.url) ? normalizeTarget(b.url) : null;
      if (u === null)
        throw new SvcError("E_BAD_REQUEST", `url must be the http(s) endpoint URL that was called (at most ${URL_MAX} characters)`, {
          field: "url",
        });
      url = u.target;
    }
    const latency = b.latency_ms ?? undefined;
    const note = checkText(b.note, "note", TEXT.trustNote);
    const rec: TrustRecord = {
      id: `rec_${randomBytes(8).toString("hex")}`,
      agent,
      target: t.target,
      domain: t.domain,
      outcome: b.outcome,
      ...(capability === undefined ? {} : { capability }),
      ...(url === undefined ? {} : { url }),
      ...(latency === undefined ? {} : { latency_ms: latency }),
      ...(note === undefined ? {} : { note }),
      ts: Date.now(),
    };
    await this.log.append(FRAME.TRUST, rec);
    this.apply(rec);
    return rec;
  }

  /**
   * Records about `target`, newest first. A domain matches records whose target or url is on it
   * or a subdomain; a URL matches records with that exact target or url.
   */
  about(rawTarget: string, limit: number): { target: string; records: TrustRecord[] } {
    if (rawTarget.trim() === "") throw new SvcError("E_BAD_REQUEST", "target is required (a domain or endpoint URL)", { field: "target" });
    const t = normalizeTarget(rawTarget);
    if (t === null)
      throw new SvcError("E_BAD_REQUEST", "target must be a domain (example.com) or an http(s) endpoint URL", { field: "target" });
    const isUrl = /^https?:\/\//i.test(rawTarget.trim());
    const urlDomain = (u: string | undefined) => (u === undefined ? null : (normalizeTarget(u)?.domain ?? null));
    const out: TrustRecord[] = [];
    for (let i = this.records.length - 1; i >= 0 && out.length < limit; i--) {
      const r = this.records[i]!;
      const hit = isUrl
        ? r.target === t.target || r.url === t.target
        : underDomain(r.domain, t.domain) || (urlDomain(r.url) !== null && underDomain(urlDomain(r.url)!, t.domain));
      if (hit) out.push(r);
    }
    return { target: t.target, records: out };
  }

  /** The newest records across every target. */
  recent(limit: number): TrustRecord[] {
    return this.records.slice(-limit).reverse();
  }
}
