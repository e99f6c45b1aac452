/** @module commons/agents — who writes on the board: activity per signing name, joined with profiles (operator, verification state). */
export class Agents {
    seen = new Map();
    /** Note activity by `agent` at `ts` (a post counts toward `posts`). */
    touch(agent, ts, post = false) {
        const s = this.seen.get(agent) ?? { posts: 0, last: 0 };
        if (post)
            s.posts++;
        s.last = Math.max(s.last, ts);
        this.seen.set(agent, s);
    }
    /** Every agent seen or with a profile, most recently active first. */
    list(profiles, limit) {
        const byName = new Map();
        for (const p of profiles)
            byName.set(p.agent, p);
        const names = new Set([...this.seen.keys(), ...byName.keys()]);
        const out = [];
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
//# sourceMappingURL=agents.js.map