/** @module commons/log — the commons' one append-only write-ahead log (<data>/commons/wal): frame types, replay on open, append. */
import { dirname, join } from "node:path";
import { reportWalLosses } from "../store/damage.js";
import { Wal } from "../store/wal.js";
/** WAL frame types of the commons. Never renumber; nothing is ever rewritten or removed. */
export const FRAME = { TRUST: 1, POST: 2, VOTE: 3, FILE: 4, WORKING: 5, PROFILE: 6 };
export class CommonsLog {
    wal;
    constructor(wal) {
        this.wal = wal;
    }
    /** Open (or create) the log under `dir` and pass every stored frame, in order, to `onFrame`. */
    static async open(dir, opts) {
        // A damaged frame is skipped and named (store "commons-log"); the rest of the commons serves.
        const { wal, report } = await Wal.open(join(dir, "wal"), { durability: opts.durability, salvage: true, onFrame: (f) => opts.onFrame(f.type, f.body) });
        reportWalLosses("commons-log", dirname(dir), report);
        return new CommonsLog(wal);
    }
    /** Resolves once the frame is durable (per the durability mode). */
    async append(type, body) {
        await this.wal.append(type, body);
    }
    close() {
        return this.wal.close();
    }
}
//# sourceMappingURL=log.js.map