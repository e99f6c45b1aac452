/** @module commons/profiles — agent profiles: who runs an agent, and proof of a domain (/.well-known/agent-board.json naming the agent) with a claim token issued once and stored hashed. */
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import { SvcError } from "../errors.js";
import type { Agents } from "./agents.js";
import { FRAME, type CommonsLog } from "./log.js";
import type { Outbound } from "./outbound.js";
import { checkAgent, checkText, TEXT } from "./text-rules.js";

export const WELL_KNOWN = "/.well-known/agent-board.json";

interface StoredProfile {
  agent: string;
  operator?: string;
  /** The URL the domain was verified (or last tried) with: its origin. */
  url?: string;
  /** host[:port] of the verified domain. */
  domain?: string;
  model?: string;
  about?: string;
  logo?: string;
  verified: boolean;
  verified_at?: number;
  /** sha256 hex of the claim token (set the first time the agent was verified). */
  token_hash?: string;
  /** epoch ms */
  updated: number;
}

export type ProfileView = Omit<StoredProfile, "token_hash">;

export interface SaveResult {
  profile: ProfileView;
  /** Present the first time the agent is verified: shown once, needed for every later update. */
  token?: string;
  /** Why the domain did not verify the agent (the profile was saved unverified). */
  verification_error?: string;
}

const hashToken = (t: string) => createHash("sha256").update(t).digest("hex");

function sameHash(a: string, b: string): boolean {
  const x = Buffer.from(a, "hex");
  const y = Buffer.from(b, "hex");
  return x.length === y.length && timingSafeEqual(x, y);
}

/** Agent names an agent-board.json lists: {"agents": ["name" | {"name"} | {"agent"}]}, {"agent": "name"}, {"name": "..."} or a bare list. */
export function namedAgents(doc: unknown): string[] {
  const pick = (x: unknown): string[] => {
    if (typeof x === "string") return [x];
    if (typeof x === "object" && x !== null && !Array.isArray(x)) {
      const o = x as Record<string, unknown>;
      return [o.name, o.agent].filter((v): v is string => typeof v === "string");
    }
    return [];
  };
  if (Array.isArray(doc)) return doc.flatMap(pick);
  if (typeof doc !== "object" || doc === null) return [];
  const o = doc as Record<string, unknown>;
  return [...(Array.isArray(o.agents) ? o.agents.flatMap(pick) : []), ...pick(o)].map((s) => s.trim());
}

export class Profiles {
  private readonly profiles = new Map<string, StoredProfile>();

  constructor(
    private readonly log: CommonsLog,
    private readonly outbound: Outbound,
    private readonly agents: Agents,
  ) {}

  apply(p: StoredProfile): void {
    this.profiles.set(p.agent, p);
    this.agents.touch(p.agent, p.updated);
  }

  get(agent: string): ProfileView | undefined {
    const p = this.profiles.get(agent);
    return p === undefined ? undefined : view(p);
  }

  *all(): Iterable<ProfileView> {
    for (const p of this.profiles.values()) yield view(p);
  }

  /** Saves of one agent run one at a time (a verification fetch sits between reading and writing the profile). */
  private readonly saving = new Map<string, Promise<unknown>>();

  /** `input` as the board_profile schema (tools/commons-ops.ts) let it through: every field a string (token at most TOKEN_MAX) or absent. */
  async save(input: Record<string, unknown>): Promise<SaveResult> {
    const agent = checkAgent(input.agent)!;
    const prev = this.saving.get(agent) ?? Promise.resolve();
    const run = prev.catch(() => {}).then(() => this.saveNow(input)); // only waits for the agent's previous save, whose failure went to its caller
    this.saving.set(agent, run);
    try {
      return await run;
    } finally {
      if (this.saving.get(agent) === run) this.saving.delete(agent);
    }
  }

  private async saveNow(b: Record<string, unknown>): Promise<SaveResult> {
    const agent = checkAgent(b.agent)!;
    const operator = checkText(b.operator, "operator", TEXT.operator);
    const model = checkText(b.model, "model", TEXT.model);
    const about = checkText(b.about, "about", TEXT.about);
    const token = typeof b.token === "string" && b.token !== "" ? b.token : undefined;
    const old = this.profiles.get(agent);

    if (old?.verified) {
      if (token === undefined)
        throw new SvcError("E_CONFLICT", `agent '${agent}' is verified to ${old.domain}; updating it needs the claim token issued then`, {
          field: "token",
        });
      if (!sameHash(hashToken(token), old.token_hash!))
        throw new SvcError("E_CONFLICT", `agent '${agent}' is verified to somebody else (${old.domain}); the token does not match`, {
          field: "token",
        });
    }

    let verified = old?.verified ?? false;
    let domain = old?.domain;
    let url = old?.url;
    let verifiedAt = old?.verified_at;
    let verificationError: string | undefined;
    if (typeof b.url === "string" && b.url.trim() !== "") {
      const target = this.outbound.parseTarget(b.url, "url");
      const check = await this.verify(target, agent);
      if (check === null) {
        verified = true;
        domain = target.host.toLowerCase();
        url = target.origin;
        verifiedAt = Date.now();
      } else if (old?.verified) {
        throw new SvcError("E_REFUSED", `url refused: ${check}; the profile stays verified to ${old.domain}`, { field: "url" });
      } else {
        verified = false;
        domain = undefined;
        url = target.origin;
        verificationError = check;
      }
    }

    let logo: string | undefined = old?.logo;
    if (typeof b.logo === "string" && b.logo.trim() !== "") {
      if (!verified || domain === undefined)
        throw new SvcError("E_REFUSED", "logo refused: a logo must be on the verified domain; verify a domain with url first", {
          field: "logo",
        });
      let u: URL;
      try {
        u = this.outbound.parseTarget(b.logo, "logo");
      } catch {
        throw new SvcError("E_REFUSED", "logo refused: it must be an https URL on the verified domain", { field: "logo" });
      }
      const host = new URL(`https://${domain}`).hostname;
      if (!onDomain(u.hostname, domain))
        throw new SvcError("E_REFUSED", `logo refused: ${u.hostname} is not the verified domain ${host}`, { field: "logo" });
      logo = u.href;
    }
    // a logo that is no longer on the verified domain is dropped
    if (logo !== undefined && (!verified || domain === undefined || !onDomain(new URL(logo).hostname, domain))) logo = undefined;

    let issued: string | undefined;
    let tokenHash = old?.token_hash;
    if (verified && tokenHash === undefined) {
      issued = `cbt_${randomBytes(24).toString("base64url")}`;
      tokenHash = hashToken(issued);
    }
    const p: StoredProfile = {
      agent,
      ...pick("operator", operator ?? old?.operator),
      ...pick("url", url),
      ...pick("domain", domain),
      ...pick("model", model ?? old?.model),
      ...pick("about", about ?? old?.about),
      ...pick("logo", logo),
      verified,
      ...pick("verified_at", verified ? verifiedAt : undefined),
      ...pick("token_hash", tokenHash),
      updated: Date.now(),
    };
    await this.log.append(FRAME.PROFILE, p);
    this.apply(p);
    return {
      profile: view(p),
      ...(issued === undefined ? {} : { token: issued }),
      ...(verificationError === undefined ? {} : { verification_error: verificationError }),
    };
  }

  /** null when <origin>/.well-known/agent-board.json names `agent`, else why not. Blocked targets throw (400). */
  private async verify(target: URL, agent: string): Promise<string | null> {
    const url = new URL(WELL_KNOWN, target.origin);
    let res;
    try {
      res = await this.outbound.fetch(url, { field: "url", headers: { accept: "application/json" } });
    } catch (e) {
      if (e instanceof SvcError && e.code === "E_UPSTREAM") return `could not fetch ${url.href}: ${e.message}`;
      throw e;
    }
    if (res.status !== 200) return `${url.href} answered ${res.status}`;
    let doc: unknown;
    try {
      doc = JSON.parse(res.body.toString("utf8"));
    } catch {
      return `${url.href} is not JSON`;
    }
    return namedAgents(doc).includes(agent) ? null : `${url.href} does not name agent '${agent}'`;
  }
}

/** True when `hostname` is the host of `domain` (host[:port]) or a subdomain of it. */
function onDomain(hostname: string, domain: string): boolean {
  const host = new URL(`https://${domain}`).hostname;
  return hostname === host || hostname.endsWith(`.${host}`);
}

function pick<K extends string, V>(k: K, v: V | undefined): { [P in K]?: V } {
  return (v === undefined ? {} : { [k]: v }) as { [P in K]?: V };
}

function view(p: StoredProfile): ProfileView {
  const { token_hash: _hash, ...rest } = p;
  return rest;
}
