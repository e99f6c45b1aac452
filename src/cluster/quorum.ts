/**
 * @module quorum — how cluster mode retries a JetStream call (a publish, a KV write or read, a
 * consumer's creation) while the cluster cannot answer it: no stream leader (an election after a
 * server died, up to ~9 s on nats-server 2.9), no responders, timeouts. Used by the log, the
 * wallet ledger, the KV stores and the stream tail, so they all give up the same way.
 */
import { JetStreamApiCodes, JetStreamApiError } from "@nats-io/jetstream";
import { SvcError } from "../errors.js";

/** Pause between tries. */
const RETRY_MS = 100;
/** Retry-After (seconds) of E_NO_QUORUM: about a stream leader election on nats-server 2.9. */
export const NO_QUORUM_RETRY_AFTER_S = 5;

/** 503 E_NO_QUORUM with Retry-After. */
export function noQuorum(message: string, field = "cluster", cause?: unknown): SvcError {
  return new SvcError("E_NO_QUORUM", message, {
    field,
    details: { retryAfterSeconds: NO_QUORUM_RETRY_AFTER_S },
    ...(cause === undefined ? {} : { cause }),
  });
}

export interface UntilQuorumOptions {
  /** Checked after each failure: once true, E_CLOSED (a stopped reader stops retrying at once). */
  stopped?: () => boolean;
  /** The field E_NO_QUORUM names (default "cluster"). */
  field?: string;
}

/** True for the error of a compare-and-set that lost: the key moved past the revision named (or exists, for a create). */
export function isRevisionConflict(e: unknown): boolean {
  return (
    e instanceof JetStreamApiError &&
    (e.code === JetStreamApiCodes.StreamWrongLastSequence || e.code === JetStreamApiCodes.StreamWrongLastSequenceUnknown)
  );
}

/**
 * Run `f` until it succeeds, for up to `timeoutMs` (Infinity: for as long as it takes), then
 * E_NO_QUORUM naming `what`. Not retried: a revision conflict (thrown as it is; a retry after a
 * timeout may find the first try kept, which the caller resolves by reading the entry) and a
 * stream that does not exist (E_NOT_FOUND, field `stream`, at once: it will not appear by itself).
 */
export async function untilQuorum<T>(what: string, timeoutMs: number, f: () => Promise<T>, opts: UntilQuorumOptions = {}): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (let attempt = 1; ; attempt++) {
    try {
      return await f();
    } catch (e) {
      if (isRevisionConflict(e)) throw e;
      if (e instanceof JetStreamApiError && e.code === JetStreamApiCodes.StreamNotFound)
        throw new SvcError("E_NOT_FOUND", `${what}: its stream does not exist`, { field: "stream", cause: e });
      if (opts.stopped?.()) throw new SvcError("E_CLOSED", `${what} is closed`, { cause: e });
      const left = deadline - Date.now();
      if (left <= 0) {
        throw noQuorum(
          `${what}: JetStream did not answer after ${attempt} attempt(s) in ${timeoutMs} ms (fewer than a quorum of NATS servers reachable: ${e instanceof Error ? e.message : String(e)}); retry`,
          opts.field ?? "cluster",
          e,
        );
      }
      await new Promise((r) => setTimeout(r, Math.min(RETRY_MS, left)));
    }
  }
}

/** `p`, or `late()`'s error once `ms` passed first (a bounded wait on a stream fold; the timer is cleared either way). */
export async function within<T>(p: Promise<T>, ms: number, late: () => Error): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([p, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(late()), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}
