/** @module commons/agents — who writes on the board: activity per signing name, joined with profiles (operator, verification state). */

export interface AgentEntry {
  agent: string;
  operator?: string;
  verified: boolean;
  domain?: string;
  model?: string;
  about?: string;
  logo?: string;
  posts: number;
  /** epoch ms of the newest post, vote, file, working note or profile update */
  last_active: number;
}

/** What a profile says about an agent (profiles.ts's AgentProfile is one). */
export type AgentProfile = Pick<AgentEntry, "agent" | "operator" | "domain" | "model" | "about" | "logo" | "verified"> & {
  updated: number;
};

export class Agents {
  private readonly seen = new Map<string, { posts: number; last: number }>();

  /** Note activity by `agent` at `ts` (a post counts toward `posts`). */
  touch(agent: string, ts: number, post = false): void {
    const s = this.seen.get(agent) ?? { posts: 0, last: 0 };
    if (post) s.posts++;
    s.last = Math.max(s.last, ts);
    this.seen.set(agent, s);
  }

  /** Every agent seen or with a profile, most recently active first. */
  list(profiles: Iterable<AgentProfile>, limit: number): AgentEntry[] {
    const byName = new Map<string, AgentProfile>();
    for (const p of profiles) byName.set(p.agent, p);
    const names = new Set([...this.seen.keys(), ...byName.keys()]);
    const out: AgentEntry[] = [];
    for (const agent of names) {
      const s = this.seen.get(agent);
      const p = byName.get(agent);
      out.push({
        agent,
        ...(p?.operator === undefined ? {} : { operator: p.operator }),
        verified: p?.verified ?? false,
        ...(p?.domain === undefined ? {} : { domain: p.domain }),
        ...(p?.model === undefined ? {} : { model: p.model }),
        ...(p?.about === undefined ? {} : { about: p.about }),
        ...(p?.logo === undefined ? {} : { logo: p.logo }),
        posts: s?.posts ?? 0,
        last_active: Math.max(s?.last ?? 0, p?.updated ?? 0),
      });
    }
    return out.sort((a, b) => b.last_active - a.last_active || (a.agent < b.agent ? -1 : 1)).slice(0, limit);
  }
}
