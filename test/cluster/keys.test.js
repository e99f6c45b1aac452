/**
 * Shared API keys (cluster/keys.ts) on a real 3-server JetStream cluster: each ClusterKeys has its
 * own NATS connection, as one svc node does. A key created through one authenticates through the
 * others within a second, a revocation likewise; a node copies its local keys.json into the bucket.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect } from "@nats-io/transport-node";
import { KeyStore } from "../../src/account/keys.js";
import { ClusterKeys } from "../../src/cluster/keys.js";
import { startNatsCluster } from "./nats-cluster.js";
let cluster;
const conns = [];
const opened = [];
const node = async (opts = {}) => {
    const nc = await connect({ servers: cluster.urls, maxReconnectAttempts: -1, reconnectTimeWait: 100 });
    conns.push(nc);
    const k = await ClusterKeys.open(nc, opts);
    opened.push(k);
    return k;
};
/** ms until `cond` holds (polled every 5 ms), failing after `ms`. */
const within = async (cond, ms) => {
    const t0 = Date.now();
    while (!cond()) {
        if (Date.now() - t0 > ms)
            throw new Error(`condition not met within ${ms} ms`);
        await new Promise((r) => setTimeout(r, 5));
    }
    return Date.now() - t0;
};
beforeAll(async () => {
    cluster = await startNatsCluster(3, "svc-keys");
}, 60_000);
afterAll(async () => {
    for (const k of opened)
        k.close();
    for (const nc of conns)
        await nc.close().catch(() => undefined);
    await cluster?.stop();
});
describe("cluster keys", () => {
    it("a key issued on node A authenticates on node C within a second; a revocation on B stops it on A and C", async () => {
        const [a, b, c] = [await node(), await node(), await node()];
        const { key, record } = await a.create({ tenant: "acme", name: "ci" });
        expect(a.authenticate(key)).toEqual({ tenant: "acme", admin: false, keyId: record.id });
        const seen = await within(() => c.authenticate(key) !== null && b.authenticate(key) !== null, 1000);
        expect(c.authenticate(key)).toEqual({ tenant: "acme", admin: false, keyId: record.id });
        expect(b.list().map((r) => r.id)).toContain(record.id);
        expect(c.authenticate("svc_not-a-key")).toBeNull();
        const revoked = await b.revoke(record.id);
        expect(revoked.revokedAt).not.toBeNull();
        expect(b.authenticate(key)).toBeNull();
        const gone = await within(() => a.authenticate(key) === null && c.authenticate(key) === null, 1000);
        expect(c.list().find((r) => r.id === record.id)?.revokedAt).toBe(revoked.revokedAt);
        // revoking again keeps the first time; an unknown id is E_NOT_FOUND
        expect((await c.revoke(record.id)).revokedAt).toBe(revoked.revokedAt);
        await expect(c.revoke("key_000000000000")).rejects.toMatchObject({ code: "E_NOT_FOUND" });
        await expect(a.create({ tenant: "Not A Tenant" })).rejects.toMatchObject({ code: "E_BAD_REQUEST", field: "tenant" });
        console.log(`key seen on another node after ${seen} ms, revocation after ${gone} ms`);
    }, 30_000);
    it("a node copies its local keys.json into the bucket when absent, and never overwrites a key the bucket has", async () => {
        const dir = mkdtempSync(join(tmpdir(), "svc-ckeys-"));
        try {
            const local = KeyStore.open(dir);
            const admin = local.create({ tenant: "admin", admin: true, name: "first" });
            const first = await node({ importFrom: dir });
            expect(first.authenticate(admin.key)).toEqual({ tenant: "admin", admin: true, keyId: admin.record.id });
            const other = await node();
            expect(other.authenticate(admin.key)?.admin).toBe(true);
            // revoked in the cluster; a later start of the node with the same keys.json does not bring it back
            await other.revoke(admin.record.id);
            const again = await node({ importFrom: dir });
            expect(again.authenticate(admin.key)).toBeNull();
            expect(again.size).toBeGreaterThanOrEqual(2);
        }
        finally {
            rmSync(dir, { recursive: true, force: true });
        }
    }, 30_000);
    it("keys keep working when one of three nats-servers is killed", async () => {
        const a = await node();
        const c = await node();
        cluster.kill(0);
        try {
            const t0 = Date.now();
            const { key } = await a.create({ tenant: "survivor" });
            const created = Date.now() - t0;
            const seen = await within(() => c.authenticate(key) !== null, 20_000);
            console.log(`with a server killed: key created in ${created} ms, seen on another node ${seen} ms later`);
            expect(c.authenticate(key)?.tenant).toBe("survivor");
        }
        finally {
            cluster.start(0);
            await cluster.ready();
        }
    }, 60_000);
});
//# sourceMappingURL=keys.test.js.map