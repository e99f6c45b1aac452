/**
 * @module pgvector-served — the served peer of the HTTP bench: PostgreSQL + pgvector (HNSW, cosine) in its own
 * throwaway cluster on loopback, loaded with the same rows, `hnsw.ef_search` raised until recall@10 reaches the
 * target on the verify queries, then queried by 32 connections (node-postgres, one prepared statement, closed
 * loop) while the CPU time of the postmaster and all its backends is read from /proc: server CPU per query.
 * PostgreSQL and pgvector are not installed by this project (PGVECTOR_INSTALL says how): where either is missing the lane says so and how to
 * install them, and is skipped (never faked).
 */
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";

export interface PgPeerResult {
  peer: string;
  /** Achieved recall@10 against exact float cosine on the verify queries, at `efSearch`. */
  recallAt10: number;
  efSearch: number;
  loadSeconds: number;
  indexSeconds: number;
  connections: number;
  seconds: number;
  queries: number;
  qps: number;
  /** CPU cores busy in the postmaster and its backends during the measured run. */
  serverCores: number;
  /** Server CPU milliseconds per query (process CPU time / queries answered). */
  serverCpuMsPerQuery: number;
}

export const PGVECTOR_INSTALL =
  "PostgreSQL + pgvector >= 0.5 (HNSW) are needed for this lane. Debian: `apt-get install postgresql-15 postgresql-server-dev-15` (bookworm); pgvector: `apt-get install postgresql-<major>-pgvector` where the distribution has one (bookworm has none: `apt-cache search pgvector` finds nothing), else build its public source (`make && make install` with pg_config on the PATH, as its README says). `pg_config --sharedir`/extension/vector.control must exist. This lane ran on PostgreSQL 15.20 (bookworm's package) + pgvector 0.8.1 built from source";

/** The PostgreSQL bin dir with pgvector installed beside it, or a sentence saying what is missing. */
export function findPostgres(): { bin: string } | { missing: string } {
  let bin: string;
  let share: string;
  try {
    bin = execFileSync("pg_config", ["--bindir"], { encoding: "utf8" }).trim();
    share = execFileSync("pg_config", ["--sharedir"], { encoding: "utf8" }).trim();
  } catch {
    return { missing: `pg_config not found. ${PGVECTOR_INSTALL}` };
  }
  // Debian's pg_config (postgresql-common) names /usr/bin; the server binaries live under /usr/lib/postgresql/<v>/bin.
  if (!existsSync(join(bin, "initdb"))) {
    const lib = "/usr/lib/postgresql";
    const v = existsSync(lib)
      ? readdirSync(lib)
          .sort()
          .reverse()
          .find((d) => existsSync(join(lib, d, "bin", "initdb")))
      : undefined;
    if (v === undefined) return { missing: `no initdb found (PostgreSQL server not installed). ${PGVECTOR_INSTALL}` };
    bin = join(lib, v, "bin");
  }
  if (!existsSync(join(share, "extension", "vector.control")))
    return { missing: `pgvector is not installed (${join(share, "extension", "vector.control")} is missing). ${PGVECTOR_INSTALL}` };
  return { bin };
}

/** utime + stime of `pid` and every process whose parent is `pid`, in seconds. */
function treeCpuSeconds(pid: number): number {
  const tick = 100; // USER_HZ
  let sum = 0;
  for (const d of readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${d}/stat`, "utf8");
    } catch {
      continue;
    }
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    if (Number(d) === pid || Number(f[1]) === pid) sum += (Number(f[11]) + Number(f[12])) / tick;
  }
  return sum;
}

const vecText = (v: Float32Array) => `[${Array.from(v, (x) => x.toPrecision(7)).join(",")}]`;

export interface PgPeerOptions {
  bin: string;
  n: number;
  dim: number;
  row(i: number): Float32Array;
  /** Verify queries and their exact top-10 (row numbers); the load queries cycle through `queries`. */
  verify: { queries: Float32Array[]; truth: number[][] };
  queries: Float32Array[];
  recallTarget: number;
  connections: number;
  seconds: number;
  warmupSeconds: number;
  log: (line: string) => void;
}

export async function runPgvectorPeer(o: PgPeerOptions): Promise<PgPeerResult> {
  const root = mkdtempSync(join(tmpdir(), "svc-pgvector-"));
  const data = join(root, "data");
  // PostgreSQL refuses to run as root: as root, the cluster belongs to the postgres user.
  const asUser = process.getuid?.() === 0 ? Number(execFileSync("id", ["-u", "postgres"], { encoding: "utf8" })) : undefined;
  const asGroup = asUser === undefined ? undefined : Number(execFileSync("id", ["-g", "postgres"], { encoding: "utf8" }));
  if (asUser !== undefined) chownSync(root, asUser, asGroup!);
  const ids = asUser === undefined ? {} : { uid: asUser, gid: asGroup };
  let server: ChildProcess | undefined;
  const port = 20000 + Math.floor(Math.random() * 20000);
  const pool: pg.Client[] = [];
  try {
    execFileSync(join(o.bin, "initdb"), ["-D", data, "-A", "trust", "-U", "bench", "--no-sync"], { ...ids, stdio: "ignore" });
    // Loopback only, socket in our dir; no fsync (a throwaway bench cluster); memory for the HNSW build.
    server = spawn(
      join(o.bin, "postgres"),
      [
        "-D",
        data,
        "-k",
        root,
        "-p",
        String(port),
        "-c",
        "listen_addresses=127.0.0.1",
        "-c",
        "fsync=off",
        "-c",
        "synchronous_commit=off",
        "-c",
        "shared_buffers=1GB",
        "-c",
        "maintenance_work_mem=2GB",
        "-c",
        "max_connections=100",
        "-c",
        "jit=off",
      ],
      { ...ids, stdio: "ignore" },
    );
    const connect = async () => {
      const c = new pg.Client({ host: "127.0.0.1", port, user: "bench", database: "postgres" });
      await c.connect();
      return c;
    };
    let admin: pg.Client | undefined;
    for (const end = Date.now() + 30_000; admin === undefined;) {
      try {
        admin = await connect();
      } catch (err) {
        if (Date.now() > end) throw err;
        await new Promise((r) => setTimeout(r, 200));
      }
    }
    pool.push(admin);
    const version = (await admin.query("SELECT version() AS v")).rows[0].v as string;
    await admin.query("CREATE EXTENSION vector");
    const ext = (await admin.query("SELECT extversion FROM pg_extension WHERE extname = 'vector'")).rows[0].extversion as string;
    await admin.query(`CREATE TABLE items (id int PRIMARY KEY, embedding vector(${o.dim}))`);
    const t0 = performance.now();
    for (let b = 0; b < o.n; b += 1000) {
      const ids: number[] = [];
      const vs: string[] = [];
      for (let i = b; i < Math.min(o.n, b + 1000); i++) {
        ids.push(i);
        vs.push(vecText(o.row(i)));
      }
      await admin.query("INSERT INTO items SELECT i, v::vector FROM unnest($1::int[], $2::text[]) AS t(i, v)", [ids, vs]);
    }
    const loadSeconds = (performance.now() - t0) / 1000;
    const t1 = performance.now();
    await admin.query("SET max_parallel_maintenance_workers = 1");
    await admin.query("CREATE INDEX ON items USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64)");
    const indexSeconds = (performance.now() - t1) / 1000;
    const peer = `PostgreSQL ${/PostgreSQL (\S+)/.exec(version)?.[1] ?? "?"} + pgvector ${ext} HNSW (m 16, ef_construction 64, cosine)`;
    o.log(`${peer}: ${o.n.toLocaleString("en-US")} rows loaded in ${loadSeconds.toFixed(1)} s, HNSW built in ${indexSeconds.toFixed(1)} s`);

    const SQL = "SELECT id FROM items ORDER BY embedding <=> $1::vector LIMIT 10";
    const recallAt = async (ef: number) => {
      await admin!.query(`SET hnsw.ef_search = ${ef}`);
      let hit = 0;
      for (let q = 0; q < o.verify.queries.length; q++) {
        const got = new Set((await admin!.query(SQL, [vecText(o.verify.queries[q]!)])).rows.map((r) => r.id as number));
        hit += o.verify.truth[q]!.slice(0, 10).filter((id) => got.has(id)).length;
      }
      return hit / (10 * o.verify.queries.length);
    };
    let efSearch = 40;
    let recallAt10 = await recallAt(efSearch);
    while (recallAt10 < o.recallTarget && efSearch < 1000) recallAt10 = await recallAt((efSearch *= 2));
    o.log(`${peer}: recall@10 ${recallAt10.toFixed(3)} at hnsw.ef_search ${efSearch} (target ${o.recallTarget})`);

    for (let i = 1; i < o.connections; i++) pool.push(await connect());
    for (const c of pool) await c.query(`SET hnsw.ef_search = ${efSearch}`);
    const bodies = o.queries.map(vecText);
    const run = async (seconds: number) => {
      const end = performance.now() + seconds * 1000;
      let done = 0;
      await Promise.all(
        pool.map(async (c, k) => {
          for (let j = k; performance.now() < end; j += pool.length) {
            await c.query({ name: "knn", text: SQL, values: [bodies[j % bodies.length]!] });
            done++;
          }
        }),
      );
      return done;
    };
    await run(o.warmupSeconds);
    const cpu0 = treeCpuSeconds(server.pid!);
    const w0 = performance.now();
    const queries = await run(o.seconds);
    const wall = (performance.now() - w0) / 1000;
    const cpu = treeCpuSeconds(server.pid!) - cpu0;
    return {
      peer,
      recallAt10,
      efSearch,
      loadSeconds,
      indexSeconds,
      connections: o.connections,
      seconds: wall,
      queries,
      qps: queries / wall,
      serverCores: cpu / wall,
      serverCpuMsPerQuery: (cpu / queries) * 1000,
    };
  } finally {
    await Promise.all(pool.map((c) => c.end().catch(() => undefined))); // a connection that already failed has nothing to end
    if (server !== undefined && server.exitCode === null) {
      const exited = new Promise((r) => server!.once("exit", r));
      server.kill("SIGINT"); // fast shutdown
      await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);
      if (server.exitCode === null) server.kill("SIGKILL");
    }
    rmSync(root, { recursive: true, force: true });
  }
}
