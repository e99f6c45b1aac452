/**
 * @module reporter — the one sink for storage damage and background failures. The composition root
 * (app/start-server.ts, cli/repair.ts) makes one and passes it to every store, collection, sweeper
 * and shard host it opens, as LevelDB passes its Reporter into each log reader; there is no
 * process-wide list. A store opened without one reports to `stderrReporter`.
 */
/** One storage damage finding (store/damage.ts reports a WAL's losses as these). `store` is a stable name ("wallet-ledger", "keys", "collection:<t>/<name>", ...). */
export interface DamageReport {
  store: string;
  /** The damaged file, relative to the data dir when known (never an absolute path on the wire). */
  file?: string;
  /** What was found: "torn-tail", "bad-frame", "bad-checksum", "unreadable", ... */
  kind: string;
  /** A human-readable line: reason and offset. */
  detail: string;
  /** Frames, records or blocks that were dropped or cannot be served (0 when none). */
  dropped: number;
  /** True while the store cannot serve (it answers 5xx until repaired); false for a reported, recovered loss. */
  offline: boolean;
  /** Epoch ms of the finding. */
  at: number;
}

/** A finding as a store reports it (`at` defaults to now). */
export type DamageFinding = Omit<DamageReport, "at"> & { at?: number };

export interface Reporter {
  /** Storage damage found at open, replay, read or scrub (store/damage.ts); the store keeps serving what it can. */
  damage(r: DamageFinding): void;
  /** The findings of `store` no longer hold (it was reloaded clean, repaired or deleted). */
  cleared(store: string): void;
  /** A task nobody awaits failed (a sweep, checkpoint, compaction, index build, snapshot); `task` names it. Each is tried again later. */
  background(err: unknown, task: string): void;
}

/** The default for library use: one line on stderr per finding or failure; keeps nothing. */
export const stderrReporter: Reporter = {
  damage: (r) => process.stderr.write(`svc: storage damage in ${r.store}${r.file ? ` (${r.file})` : ""}: ${r.detail}\n`),
  cleared: () => {},
  background: (err, task) => process.stderr.write(`svc: background ${task} failed: ${err instanceof Error ? err.message : String(err)}\n`),
};

/** At most this many findings are kept (the oldest go first). */
const MAX_REPORTS = 1000;

/**
 * The server's reporter: keeps the findings (`GET /v1/health` lists them, status "degraded";
 * `/metrics` counts them), the same finding again (a store opened again) once, and tells `out`
 * (the serve log) of each new finding and of every background failure.
 */
export class KeptReports implements Reporter {
  private readonly kept: DamageReport[] = [];

  constructor(private readonly out: Pick<Reporter, "background"> & { damage(r: DamageReport): void } = stderrReporter) {}

  damage(r: DamageFinding): void {
    const same = this.kept.find(
      (x) =>
        x.store === r.store &&
        x.file === r.file &&
        x.kind === r.kind &&
        x.detail === r.detail &&
        x.offline === r.offline &&
        x.dropped === r.dropped,
    );
    if (same !== undefined) return;
    const full: DamageReport = { ...r, at: r.at ?? Date.now() };
    this.kept.push(full);
    if (this.kept.length > MAX_REPORTS) this.kept.splice(0, this.kept.length - MAX_REPORTS);
    this.out.damage(full);
  }

  cleared(store: string): void {
    for (let i = this.kept.length - 1; i >= 0; i--) if (this.kept[i]!.store === store) this.kept.splice(i, 1);
  }

  background(err: unknown, task: string): void {
    this.out.background(err, task);
  }

  /** The findings so far, oldest first (copies). */
  reports(): DamageReport[] {
    return this.kept.map((r) => ({ ...r }));
  }
}
