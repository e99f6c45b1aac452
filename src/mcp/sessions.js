/**
 * @module mcp/sessions — the table of open /mcp sessions and who may open one: keyless sessions are capped per client
 * address (IPv6 by /64, as the rate limits count), keyed ones per key, and a full table makes room by closing the
 * least recently seen keyless session, so keyless clients can never lock keyed ones out.
 */
import { SvcError } from "../errors.js";
import { clientKey } from "../net/rate-limit.js";
export const DEFAULT_SESSION_LIMITS = Object.freeze({ max: 1000, perAddress: 32, perKey: 200 });
export class SessionTable {
    limits;
    entries = new Map();
    owners = new Map();
    constructor(limits = DEFAULT_SESSION_LIMITS) {
        this.limits = limits;
    }
    get size() {
        return this.entries.size;
    }
    get(id) {
        return this.entries.get(id)?.value;
    }
    /** Mark a session used now. */
    touch(id, now) {
        const e = this.entries.get(id);
        if (e)
            e.lastSeen = now;
    }
    /**
     * Add session `id` for `keyId` (null: keyless, counted by `address`). Throws E_TOO_MANY_SESSIONS (429) when that
     * owner holds its share, E_CLOSED (503) when the table is full of keyed sessions. Returns the sessions it removed
     * to make room (the caller closes them): at most one, the least recently seen keyless session.
     */
    open(id, value, keyId, address, now) {
        const keyed = keyId !== null;
        const owner = keyed ? `k:${keyId}` : `a:${clientKey(address)}`;
        const cap = keyed ? this.limits.perKey : this.limits.perAddress;
        if ((this.owners.get(owner) ?? 0) >= cap) {
            throw new SvcError("E_TOO_MANY_SESSIONS", `${keyed ? "this API key" : `client address ${clientKey(address)}`} already has ${cap} open MCP sessions; close idle ones with DELETE /mcp`, { field: keyed ? "api-key" : "client" });
        }
        const evicted = [];
        if (this.entries.size >= this.limits.max) {
            let victim = null;
            let oldest = Infinity;
            for (const [sid, e] of this.entries) {
                if (!e.keyed && e.lastSeen < oldest) {
                    oldest = e.lastSeen;
                    victim = sid;
                }
            }
            if (victim === null)
                throw new SvcError("E_CLOSED", `too many open MCP sessions (${this.limits.max}); close idle ones with DELETE /mcp`);
            evicted.push([victim, this.entries.get(victim).value]);
            this.delete(victim);
        }
        this.entries.set(id, { value, owner, keyed, lastSeen: now });
        this.owners.set(owner, (this.owners.get(owner) ?? 0) + 1);
        return evicted;
    }
    /** Remove a session; false when it was not there. */
    delete(id) {
        const e = this.entries.get(id);
        if (!e)
            return false;
        this.entries.delete(id);
        const n = (this.owners.get(e.owner) ?? 1) - 1;
        if (n > 0)
            this.owners.set(e.owner, n);
        else
            this.owners.delete(e.owner);
        return true;
    }
    /** Sessions not seen since `before`. */
    idleSince(before) {
        return [...this.entries].filter(([, e]) => e.lastSeen < before).map(([id, e]) => [id, e.value]);
    }
    /** Every session. */
    all() {
        return [...this.entries].map(([id, e]) => [id, e.value]);
    }
}
//# sourceMappingURL=sessions.js.map