/**
 * @module mcp/sessions — the table of open /mcp sessions and who may open one: keyless sessions are capped per client
 * address (IPv6 by /64, as the rate limits count), keyed ones per key, and a full table makes room by closing the
 * least recently seen keyless session, so keyless clients can never lock keyed ones out.
 */
import { SvcError } from "../errors.js";
import { clientKey } from "../net/rate-limit.js";

export interface SessionLimits {
  /** Open sessions at most. */
  max: number;
  /** Keyless sessions per client address (IPv4, or IPv6 /64). */
  perAddress: number;
  /** Sessions per API key. */
  perKey: number;
}

export const DEFAULT_SESSION_LIMITS: Readonly<SessionLimits> = Object.freeze({ max: 1000, perAddress: 32, perKey: 200 });

interface Entry<T> {
  value: T;
  /** "k:<key id>" or "a:<client key>": the share it counts against. */
  owner: string;
  keyed: boolean;
  lastSeen: number;
}

export class SessionTable<T> {
  private readonly entries = new Map<string, Entry<T>>();
  private readonly owners = new Map<string, number>();

  constructor(readonly limits: SessionLimits = DEFAULT_SESSION_LIMITS) {}

  get size(): number {
    return this.entries.size;
  }

  get(id: string): T | undefined {
    return this.entries.get(id)?.value;
  }

  /** Mark a session used now. */
  touch(id: string, now: number): void {
    const e = this.entries.get(id);
    if (e) e.lastSeen = now;
  }

  /**
   * Add session `id` for `keyId` (null: keyless, counted by `address`). Throws E_TOO_MANY_SESSIONS (429) when that
   * owner holds its share, E_CLOSED (503) when the table is full of keyed sessions. Returns the sessions it removed
   * to make room (the caller closes them): at most one, the least recently seen keyless session.
   */
  open(id: string, value: T, keyId: string | null, address: string | undefined, now: number): Array<[string, T]> {
    const keyed = keyId !== null;
    const owner = keyed ? `k:${keyId}` : `a:${clientKey(address)}`;
    const cap = keyed ? this.limits.perKey : this.limits.perAddress;
    if ((this.owners.get(owner) ?? 0) >= cap) {
      throw new SvcError(
        "E_TOO_MANY_SESSIONS",
        `${keyed ? "this API key" : `client address ${clientKey(address)}`} already has ${cap} open MCP sessions; close idle ones with DELETE /mcp`,
        { field: keyed ? "api-key" : "client" },
      );
    }
    const evicted: Array<[string, T]> = [];
    if (this.entries.size >= this.limits.max) {
      let victim: string | null = null;
      let oldest = Infinity;
      for (const [sid, e] of this.entries) {
        if (!e.keyed && e.lastSeen < oldest) {
          oldest = e.lastSeen;
          victim = sid;
        }
      }
      if (victim === null)
        throw new SvcError("E_CLOSED", `too many open MCP sessions (${this.limits.max}); close idle ones with DELETE /mcp`);
      evicted.push([victim, this.entries.get(victim)!.value]);
      this.delete(victim);
    }
    this.entries.set(id, { value, owner, keyed, lastSeen: now });
    this.owners.set(owner, (this.owners.get(owner) ?? 0) + 1);
    return evicted;
  }

  /** Remove a session; false when it was not there. */
  delete(id: string): boolean {
    const e = this.entries.get(id);
    if (!e) return false;
    this.entries.delete(id);
    const n = (this.owners.get(e.owner) ?? 1) - 1;
    if (n > 0) this.owners.set(e.owner, n);
    else this.owners.delete(e.owner);
    return true;
  }

  /** Sessions not seen since `before`. */
  idleSince(before: number): Array<[string, T]> {
    return [...this.entries].filter(([, e]) => e.lastSeen < before).map(([id, e]) => [id, e.value]);
  }

  /** Every session. */
  all(): Array<[string, T]> {
    return [...this.entries].map(([id, e]) => [id, e.value]);
  }
}
