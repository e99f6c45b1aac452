/**
 * What cluster mode stands on, checked against a real 3-server JetStream cluster on loopback: a
 * replicated stream acknowledges a publish once a quorum has it, message ids deduplicate retries,
 * writes go on with one server killed, fail without quorum, and nothing acknowledged is lost.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect } from "@nats-io/transport-node";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { startNatsCluster } from "./nats-cluster.js";
let cluster;
let nc;
let js;
const STREAM = "svc_test_ops";
beforeAll(async () => {
    cluster = await startNatsCluster(3);
    nc = await connect({ servers: cluster.urls, maxReconnectAttempts: -1, reconnectTimeWait: 100 });
    const jsm = await jetstreamManager(nc);
    await jsm.streams.add({ name: STREAM, subjects: [`${STREAM}.>`], num_replicas: 3, duplicate_window: 60_000_000_000 });
    js = jetstream(nc, { timeout: 2000 });
}, 60_000);
afterAll(async () => {
    await nc?.close().catch(() => undefined);
    await cluster?.stop();
});
describe("JetStream on a 3-server loopback cluster", () => {
    it("acknowledges each publish with a sequence, and a repeated message id is a duplicate, not a second message", async () => {
        const a = await js.publish(`${STREAM}.s0`, "op-1", { msgID: "w-1" });
        const b = await js.publish(`${STREAM}.s0`, "op-1", { msgID: "w-1" });
        expect(a.duplicate).toBe(false);
        expect(b.duplicate).toBe(true);
        expect(b.seq).toBe(a.seq);
        const c = await js.publish(`${STREAM}.s1`, "op-2", { msgID: "w-2" });
        expect(c.seq).toBe(a.seq + 1);
    });
    it("keeps accepting writes with one server killed, refuses without quorum, and loses nothing acknowledged", async () => {
        const acked = [];
        cluster.kill(2);
        for (let i = 0; i < 20; i++) {
            const ack = await publishWithRetry(`${STREAM}.s${i % 4}`, `one-down-${i}`, `one-down-${i}`);
            acked.push(ack);
        }
        expect(acked).toHaveLength(20);
        cluster.kill(1);
        await expect(js.publish(`${STREAM}.s0`, "no-quorum", { msgID: "no-quorum", timeout: 1500 })).rejects.toThrow();
        cluster.start(1);
        cluster.start(2);
        await cluster.ready(30_000);
        const after = await publishWithRetry(`${STREAM}.s0`, "back", "back");
        expect(after).toBeGreaterThan(Math.max(...acked));
        const jsm = await jetstreamManager(nc);
        for (const seq of acked) {
            const m = await jsm.streams.getMessage(STREAM, { seq });
            expect(m?.string()).toMatch(/^one-down-\d+$/);
        }
    }, 90_000);
});
/** Publish, retrying while the cluster elects a new leader (the message id keeps a retry from applying twice). */
async function publishWithRetry(subject, data, msgID) {
    const deadline = Date.now() + 30_000;
    for (;;) {
        try {
            return (await js.publish(subject, data, { msgID, timeout: 2000 })).seq;
        }
        catch (e) {
            if (Date.now() > deadline)
                throw e;
            await new Promise((r) => setTimeout(r, 250));
        }
    }
}
//# sourceMappingURL=jetstream.test.js.map