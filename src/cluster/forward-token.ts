/**
 * @module forward-token — the cluster's forwarding secret, which nodes send on requests they forward so
 * the receiver can trust the client address they name (http/forward.ts). Decided by the stream order,
 * never by KV compare-and-set (nats-server 2.9.10 lets concurrent creates all win, #4320, and two
 * nodes starting together then kept different secrets): the secret is the FIRST message on the
 * subject `svc_home_lease.forward-token`. A node that finds none publishes a proposal (a fresh random
 * one, or the secret a cluster of an older release kept in the KV bucket `svc_cluster`, so an upgraded
 * cluster keeps it) and then reads the first message back: concurrent proposals are all stored, and
 * every node takes the same, the first. The subject gets a message only while it has none, far below
 * the stream's per-subject limit, so the first is never dropped.
 */
import { jetstream, jetstreamManager, type MsgRequest } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import { randomBytes } from "node:crypto";
import { LEASE_STREAM } from "./leader-lease.js";

export const FORWARD_TOKEN_SUBJECT = `${LEASE_STREAM}.forward-token`;
/** Where releases before this one kept the secret (read once, as the proposal of an upgraded cluster). */
const OLD_BUCKET = "svc_cluster";
const OLD_KEY = "forward-token";

/** The first message's text on the subject, or null when it has none. */
async function first(nc: NatsConnection): Promise<string | null> {
  const jsm = await jetstreamManager(nc, { timeout: 2000 });
  // the first message on the subject at or after sequence 1 (STREAM.MSG.GET with next_by_subj, nats-server 2.9+); null: none
  const m = await jsm.streams.getMessage(LEASE_STREAM, { seq: 1, next_by_subj: FORWARD_TOKEN_SUBJECT } as unknown as MsgRequest);
  return m === null ? null : new TextDecoder().decode(m.data);
}

/** The secret an older release kept in KV, or null (no bucket, no key, any error). */
async function oldSecret(nc: NatsConnection): Promise<string | null> {
  try {
    const e = await (await new Kvm(nc).open(OLD_BUCKET)).get(OLD_KEY);
    return e !== null && e.operation === "PUT" && e.string() !== "" ? e.string() : null;
  } catch {
    return null;
  }
}

/** The cluster's forwarding secret (the stream svc_home_lease must exist: LeaderLease.open creates it). */
export async function forwardToken(nc: NatsConnection): Promise<string> {
  const found = await first(nc);
  if (found !== null && found !== "") return found;
  const proposal = (await oldSecret(nc)) ?? randomBytes(32).toString("base64url");
  await jetstream(nc, { timeout: 2000 }).publish(FORWARD_TOKEN_SUBJECT, proposal);
  const won = await first(nc);
  if (won === null || won === "") throw new Error(`${FORWARD_TOKEN_SUBJECT} holds no secret after a publish`);
  return won;
}
