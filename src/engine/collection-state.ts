/** @module collection-state — what the parts of a collection share: its directory, config, kernels, pool, rotation, log, live and retired partitions, and the flags of checkpointing and closing. */
import { readFileSync, rmSync } from "node:fs";
import { join, relative } from "node:path";
import type { Kernels } from "../kernels/abi.js";
import { Rotation } from "../kernels/rotation.js";
import type { ScanPool } from "../pool/scan-pool.js";
import type { Log } from "../store/log.js";
import { stderrReporter, type Reporter } from "../store/reporter.js";
import { parseSums } from "./block-sums.js";
import type { Checkpoint, CollectionConfig } from "./collection-files.js";
import { MetadataIndex } from "./filter/metadata-index.js";
import { rowBytesOf } from "./input-checks.js";
import { Partition } from "./partition.js";
import { RoaringBitmap32 } from "./roaring.js";

/**
 * One per open collection, handed to the applier, writer, reader and maintenance. Partitions are
 * keyed by namespace; a retired one (deleteAll, compaction, a namespace move onto it) closes once
 * no query pins it and no checkpoint is being written.
 */
export class CollectionState {
  readonly dir: string;
  readonly config: CollectionConfig;
  readonly kernels: Kernels;
  readonly pool: ScanPool;
  /** The seeded rotation that encodes float vectors into bits (cosine); null for hamming collections. */
  readonly rotation: Rotation | null;
  /** How damage found here is named in the damage register. */
  readonly damage: { store: string; root: string };
  /** Where damage and background failures go (store/reporter.ts). */
  readonly reporter: Reporter;
  readonly partitions = new Map<string, Partition>();
  /** Bytes of one stored row (input-checks.ts rowBytesOf). */
  readonly rowBytes: number;
  /** Set once by Collection.open, after replay. */
  log!: Log;
  /** The last checkpoint's sequence number and the next partition generation (directory p<gen>). */
  seq: number;
  nextGen: number;
  retired: Partition[] = [];
  /** Partition directories the durable checkpoint refers to. */
  referenced = new Set<string>();
  checkpointing: Promise<void> | null = null;
  closing = false;
  closed = false;

  constructor(
    dir: string,
    config: CollectionConfig,
    opts: { kernels: Kernels; pool: ScanPool; damage?: { store: string; root: string }; reporter?: Reporter; salvage?: boolean },
    cp: Checkpoint | null,
  ) {
    this.dir = dir;
    this.config = config;
    this.kernels = opts.kernels;
    this.pool = opts.pool;
    this.rotation = config.metric === "cosine" ? new Rotation(opts.kernels, config.dimension, config.seed) : null;
    this.rowBytes = rowBytesOf(config.dimension, this.rotation !== null);
    this.seq = cp?.seq ?? 0;
    this.damage = opts.damage ?? { store: `collection:${dir}`, root: dir };
    this.reporter = opts.reporter ?? stderrReporter;
    let gen = 0;
    for (const s of cp?.partitions ?? []) {
      // Salvage (svc repair): a tombstones or index file that cannot be read is rebuilt (partition.ts).
      const read = <T>(file: string, parse: (b: Buffer) => T): T | undefined => {
        try {
          return parse(readFileSync(join(this.partsDir, s.dir, file)));
        } catch (err) {
          if (!opts.salvage) throw err;
          return undefined;
        }
      };
      const tombstones = read(s.tombstones, (b) => RoaringBitmap32.deserialize(b, "portable"));
      const index = read(s.index, (b) => MetadataIndex.deserialize(b));
      let sums: ReturnType<typeof parseSums> | undefined;
      if (s.sums !== undefined) {
        const path = join(this.partsDir, s.dir, s.sums);
        try {
          sums = parseSums(readFileSync(path), path);
        } catch (err) {
          // Without the sums the files cannot be checked this time; the next checkpoint writes new ones.
          this.reportDamage({
            file: path,
            kind: "unreadable",
            dropped: 0,
            detail: `block sums unreadable, files opened unchecked: ${(err as Error).message}`,
          });
        }
      }
      this.partitions.set(
        s.namespace,
        new Partition(this.kernels, this.partsDir, config, {
          ...s,
          tombstones,
          index,
          sums,
          salvage: opts.salvage,
          tombstonesLost: tombstones === undefined,
          tombstonesFile: s.tombstones,
          indexLost: index === undefined,
        }),
      );
      gen = Math.max(gen, Number(s.dir.slice(1)) + 1);
    }
    this.nextGen = gen;
    this.referenced = new Set(cp?.partitions.map((p) => p.dir));
  }

  get dimension(): number {
    return this.config.dimension;
  }

  get partsDir(): string {
    return join(this.dir, "parts");
  }

  /** The namespace's partition, created (empty, next generation) when it has none. */
  partition(ns: string): Partition {
    let p = this.partitions.get(ns);
    if (p === undefined) {
      p = this.freshPartition(ns);
      this.partitions.set(ns, p);
    }
    return p;
  }

  /** An empty partition of the next generation for `ns`, not yet in `partitions`. */
  freshPartition(ns: string): Partition {
    return new Partition(this.kernels, this.partsDir, this.config, { namespace: ns, dir: `p${this.nextGen++}`, rows: 0, recordBytes: 0 });
  }

  /** Drop a namespace's partition; its files go once nothing reads them and no checkpoint refers to them. */
  retire(ns: string): void {
    const p = this.partitions.get(ns);
    if (p === undefined) return;
    this.partitions.delete(ns);
    this.retired.push(p);
    this.closeRetired();
  }

  /** Close retired partitions nothing reads any more; delete their files unless the checkpoint still needs them. */
  closeRetired(): void {
    if (this.checkpointing !== null) return;
    this.retired = this.retired.filter((p) => {
      if (p.pins > 0) return true;
      p.close();
      if (!this.referenced.has(p.dir)) rmSync(p.path, { recursive: true, force: true });
      return false;
    });
  }

  reportDamage(r: { file: string; kind: string; dropped: number; detail: string }): void {
    this.reporter.damage({
      store: this.damage.store,
      file: relative(this.damage.root, r.file),
      kind: r.kind,
      detail: r.detail,
      dropped: r.dropped,
      offline: false,
    });
  }
}
