import { expect } from "vitest";
import { SvcError } from "../../src/errors.js";
/** The SvcError a helper's build rejects with (fails the test if it resolves or throws something else). */
export async function failure(p) {
    const err = await p.then(() => undefined, (e) => e);
    expect(err).toBeInstanceOf(SvcError);
    return err;
}
//# sourceMappingURL=failure.js.map