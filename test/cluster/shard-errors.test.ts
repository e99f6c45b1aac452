/** A shard's failure answers: NATS/JetStream unavailability is a 503 (a read goes to another replica), never a 500 (found by the nemesis test under Node 24: "JetStream system temporarily unavailable" answered 500 E_INTERNAL). */
import { describe, expect, it } from "vitest";
import { SvcError } from "../../src/errors.js";
import { errorReply } from "../../src/cluster/shards.js";

const natsError = (name: string, message: string) => Object.assign(new Error(message), { name });

describe("errorReply", () => {
  it("keeps an SvcError's code, field and details", () => {
    const r = errorReply(new SvcError("E_BAD_REQUEST", "bad", { field: "topK" }));
    expect(r).toEqual({ error: { code: "E_BAD_REQUEST", message: "bad", field: "topK" } });
  });

  it("answers a read that could not reach JetStream with E_NOT_CAUGHT_UP (retried on another replica), a write with E_NO_QUORUM", () => {
    for (const name of ["JetStreamApiError", "TimeoutError", "NoResponders", "JetStreamStatusError"]) {
      const e = natsError(name, "JetStream system temporarily unavailable");
      expect(errorReply(e)).toMatchObject({ error: { code: "E_NOT_CAUGHT_UP", details: { retryAfterSeconds: 1 } } });
      expect(errorReply(e, true)).toMatchObject({ error: { code: "E_NO_QUORUM", details: { retryAfterSeconds: 5 } } });
    }
  });

  it("answers any other failure with E_INTERNAL", () => {
    expect(errorReply(new TypeError("x is not a function"))).toMatchObject({ error: { code: "E_INTERNAL" } });
  });
});
