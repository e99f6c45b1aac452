/** @module sqlite-vec — better-sqlite3 + sqlite-vec `vec0` virtual table with a `bit[dimBits]` column, searched by its KNN MATCH query (Hamming). */
import Database from "better-sqlite3";
import * as sqliteVec from "sqlite-vec";
import { sortTopK, type PeerEngine, type TopK } from "./peer.js";

/**
 * rowid = row index + 1 (SQLite rowids are conventionally ≥ 1).
 * Rows are passed as their raw packed bytes, dimBits/8 per row. sqlite-vec's bit distance is the
 * popcount of the XOR of the byte blobs, which is invariant to how bits are ordered within a byte,
 * so it equals our Hamming distance as long as rows and queries are passed the same way (checked by test/bench/peers.test.ts).
 */
export class SqliteVecEngine implements PeerEngine {
  readonly name = "sqlite-vec";
  private db: Database.Database | null = null;
  private knn: Database.Statement | null = null;
  private n = 0;
  private vecBytes = 0; // dimBits / 8 bytes stored per row; our stride bytesPerRow ≥ vecBytes, the rest is zero padding

  async build(rows: Uint8Array, n: number, dimBits: number, bytesPerRow: number): Promise<void> {
    if (dimBits % 8 !== 0) throw new Error(`sqlite-vec: bit[] columns need dimBits % 8 == 0, got ${dimBits}`);
    this.close();
    this.n = n;
    this.vecBytes = dimBits / 8;
    const db = new Database(":memory:");
    sqliteVec.load(db);
    db.exec(`CREATE VIRTUAL TABLE vecs USING vec0(embedding bit[${dimBits}])`);
    const ins = db.prepare("INSERT INTO vecs(rowid, embedding) VALUES (?, vec_bit(?))");
    // better-sqlite3 binds JS numbers as REAL; vec0 only accepts INTEGER rowids, hence BigInt.
    db.transaction(() => {
      for (let i = 0; i < n; i++) ins.run(BigInt(i + 1), rows.subarray(i * bytesPerRow, i * bytesPerRow + this.vecBytes));
    })();
    this.knn = db.prepare("SELECT rowid, distance FROM vecs WHERE embedding MATCH vec_bit(?) AND k = ? ORDER BY distance").raw(true);
    this.db = db;
  }

  search(query: Uint8Array, k: number): TopK {
    if (!this.knn) throw new Error("sqlite-vec: search before build");
    k = Math.min(k, this.n);
    if (k <= 0) return { rows: new Int32Array(0), dists: new Int32Array(0) };
    const res = this.knn.all(query.subarray(0, this.vecBytes), k) as [number, number][];
    const rows = new Int32Array(res.length);
    const dists = new Int32Array(res.length);
    for (let i = 0; i < res.length; i++) {
      const [rowid, dist] = res[i]!;
      rows[i] = rowid - 1;
      // distance column is a REAL holding an integer bit count
      if (!Number.isInteger(dist)) throw new Error(`sqlite-vec: non-integral bit distance ${dist}`);
      dists[i] = dist;
    }
    return sortTopK(rows, dists);
  }

  close(): void {
    this.knn = null;
    this.db?.close();
    this.db = null;
    this.n = 0;
  }
}
