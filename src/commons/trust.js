/** @module commons/trust — trust records (attestations): one per call an agent made to a target; append-only, read by target (a domain matches its endpoint URLs) or newest first. */
import { randomBytes } from "node:crypto";
import { SvcError } from "../errors.js";
import { FRAME } from "./log.js";
import { bodyObject, checkAgent, checkText } from "./text-rules.js";
export const OUTCOMES = ["worked", "partial", "failed", "unreachable"];
/** A domain (host name, optionally :port) or an http(s) URL, normalized; null when it is neither. */
export function normalizeTarget(raw) {
    const s = raw.trim();
    if (/^https?:\/\//i.test(s)) {
        try {
            const u = new URL(s);
            if (u.username !== "" || u.password !== "" || u.hostname === "")
                return null;
            u.hash = "";
            return { target: u.href, domain: u.hostname.toLowerCase() };
        }
        catch {
            return null;
        }
    }
    const m = /^([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*)(?::(\d{1,5}))?$/i.exec(s);
    if (!m || m[1].length > 253)
        return null;
    const host = m[1].toLowerCase();
    return { target: m[2] === undefined ? host : `${host}:${m[2]}`, domain: host };
}
/** True when `domain` is `query` or one of its subdomains. */
function underDomain(domain, query) {
    return domain === query || domain.endsWith(`.${query}`);
}
export class TrustRecords {
    log;
    /** Oldest first. */
    records = [];
    constructor(log) {
        this.log = log;
    }
    /** Replay one stored record. */
    apply(r) {
        this.records.push(r);
    }
    get count() {
        return this.records.length;
    }
    /** Validate and store an attestation; returns the stored record. Throws E_REFUSED / E_BAD_REQUEST naming the field. */
    async record(input) {
        const b = bodyObject(input);
        const agent = checkAgent(b.agent);
        if (typeof b.target !== "string" || b.target.trim() === "")
            throw new SvcError("E_REFUSED", "target refused: it is required: the domain or endpoint URL that was called", { field: "target" });
        if (b.target.length > 2000)
            throw new SvcError("E_REFUSED", "target refused: it is longer than 2000 characters", { field: "target" });
        const t = normalizeTarget(b.target);
        if (t === null)
            throw new SvcError("E_BAD_REQUEST", "target must be a domain (example.com) or an http(s) endpoint URL", { field: "target" });
        if (typeof b.outcome !== "string" || !OUTCOMES.includes(b.outcome)) {
            throw new SvcError("E_BAD_REQUEST", `outcome must be one of ${OUTCOMES.join(", ")}`, { field: "outcome" });
        }
        const capability = checkText(b.capability, "capability", { max: 100, oneLine: true });
        let url;
        if (b.url !== undefined && b.url !== null && b.url !== "") {
            const u = typeof b.url === "string" && b.url.length <= 2000 && /^https?:\/\//i.test(b.url) ? normalizeTarget(b.url) : null;
            if (u === null)
                throw new SvcError("E_BAD_REQUEST", "url must be the http(s) endpoint URL that was called (at most 2000 characters)", { field: "url" });
            url = u.target;
        }
        let latency;
        if (b.latency_ms !== undefined && b.latency_ms !== null) {
            if (typeof b.latency_ms !== "number" || !Number.isInteger(b.latency_ms) || b.latency_ms < 0 || b.latency_ms > 86_400_000) {
                throw new SvcError("E_BAD_REQUEST", "latency_ms must be an integer number of milliseconds in [0, 86400000]", { field: "latency_ms" });
            }
            latency = b.latency_ms;
        }
        const note = checkText(b.note, "note", { max: 2000 });
        const rec = {
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
    about(rawTarget, limit) {
        if (rawTarget === null || rawTarget.trim() === "")
            throw new SvcError("E_BAD_REQUEST", "target is required (a domain or endpoint URL)", { field: "target" });
        const t = normalizeTarget(rawTarget);
        if (t === null)
            throw new SvcError("E_BAD_REQUEST", "target must be a domain (example.com) or an http(s) endpoint URL", { field: "target" });
        const isUrl = /^https?:\/\//i.test(rawTarget.trim());
        const urlDomain = (u) => (u === undefined ? null : normalizeTarget(u)?.domain ?? null);
        const out = [];
        for (let i = this.records.length - 1; i >= 0 && out.length < limit; i--) {
            const r = this.records[i];
            const hit = isUrl
                ? r.target === t.target || r.url === t.target
                : underDomain(r.domain, t.domain) || (urlDomain(r.url) !== null && underDomain(urlDomain(r.url), t.domain));
            if (hit)
                out.push(r);
        }
        return { target: t.target, records: out };
    }
    /** The newest records across every target. */
    recent(limit) {
        return this.records.slice(-limit).reverse();
    }
}
//# sourceMappingURL=trust.js.map