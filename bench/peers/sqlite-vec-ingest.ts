/** @module sqlite-vec-ingest — the durable-ingest peer: sqlite-vec `vec0` float[D] + a metadata column in a WAL-mode file database, synchronous=FULL, one transaction per batch. */
import Database from "better-sqlite3";
import * as sqliteVec from "sqlite-vec";

/** Insert `batches` (each count x dim float32) with bucket metadata; returns acknowledged vectors per second. */
export function sqliteVecDurableIngest(path: string, dim: number, batches: Float32Array[]): { perSec: number; n: number } {
  const db = new Database(path);
  try {
    sqliteVec.load(db);
    db.pragma("journal_mode = WAL");
    db.pragma("synchronous = FULL"); // fsync at every commit: each batch is durable when run() returns
    db.exec(`CREATE VIRTUAL TABLE vecs USING vec0(embedding float[${dim}], bucket integer)`);
    const ins = db.prepare("INSERT INTO vecs(rowid, embedding, bucket) VALUES (?, ?, ?)");
    const insertBatch = db.transaction((values: Float32Array, first: number) => {
      const count = values.length / dim;
      for (let j = 0; j < count; j++) {
        const v = values.subarray(j * dim, (j + 1) * dim);
        ins.run(BigInt(first + j + 1), Buffer.from(v.buffer, v.byteOffset, v.byteLength), BigInt((first + j) % 100));
      }
    });
    let n = 0;
    const t0 = performance.now();
    for (const values of batches) {
      insertBatch(values, n);
      n += values.length / dim;
    }
    return { perSec: n / ((performance.now() - t0) / 1000), n };
  } finally {
    db.close();
  }
}
