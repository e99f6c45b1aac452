/** @module commons/log — the commons' one append-only write-ahead log (<data>/commons/wal): frame types, replay on open, append. */
import { dirname, join } from "node:path";
import { reportWalLosses } from "../store/damage.js";
import type { Log, OpenLog } from "../store/log.js";
import { stderrReporter, type Reporter } from "../store/reporter.js";
import { Wal, type Durability } from "../store/wal.js";

/** WAL frame types of the commons. Never renumber; nothing is ever rewritten or removed. */
export const FRAME = { TRUST: 1, POST: 2, VOTE: 3, FILE: 4, WORKING: 5, PROFILE: 6 } as const;
export type FrameType = (typeof FRAME)[keyof typeof FRAME];

export class CommonsLog {
  private constructor(private readonly wal: Log) {}

  /** Open (or create) the log under `dir` (or `openLog`'s: cluster mode's fenced JetStream log) and pass every stored frame, in order, to `onFrame`. */
  static async open(
    dir: string,
    opts: { durability?: Durability; openLog?: OpenLog; reporter?: Reporter; onFrame: (type: number, body: unknown) => void },
  ): Promise<CommonsLog> {
    // A damaged frame is skipped and named (store "commons-log"); the rest of the commons serves.
    const openLog = opts.openLog ?? Wal.opener(join(dir, "wal"), { durability: opts.durability });
    const { log: wal, report } = await openLog({ onFrame: (f) => opts.onFrame(f.type, f.body) });
    reportWalLosses(opts.reporter ?? stderrReporter, "commons-log", dirname(dir), report);
    return new CommonsLog(wal);
  }

  /** Resolves once the frame is durable (per the durability mode). */
  async append(type: FrameType, body: unknown): Promise<void> {
    await this.wal.append(type, body);
  }

  close(): Promise<void> {
    return this.wal.close();
  }
}
