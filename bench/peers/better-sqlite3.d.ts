/** @module better-sqlite3 — minimal local typings for the subset of better-sqlite3 12 used by the peers (the package ships no types and @types/better-sqlite3 is not installed). */
declare module "better-sqlite3" {
  namespace Database {
    /** Bound parameter values: blobs may be any Uint8Array (copied by SQLite at bind time). */
    type BindValue = number | bigint | string | Uint8Array | null;
    interface RunResult {
      changes: number;
      lastInsertRowid: number | bigint;
    }
    interface Statement {
      run(...params: BindValue[]): RunResult;
      get(...params: BindValue[]): unknown;
      all(...params: BindValue[]): unknown[];
      /** toggles returning rows as arrays of column values instead of objects */
      raw(toggle?: boolean): this;
    }
    interface Options {
      readonly?: boolean;
      fileMustExist?: boolean;
      timeout?: number;
    }
    interface Database {
      prepare(sql: string): Statement;
      exec(sql: string): this;
      transaction<A extends unknown[], R>(fn: (...args: A) => R): (...args: A) => R;
      loadExtension(path: string, entryPoint?: string): this;
      pragma(source: string, options?: { simple?: boolean }): unknown;
      close(): this;
      readonly open: boolean;
    }
  }
  interface DatabaseConstructor {
    new (filename?: string, options?: Database.Options): Database.Database;
    (filename?: string, options?: Database.Options): Database.Database;
  }
  const Database: DatabaseConstructor;
  export = Database;
}
