/** @module keys — API keys: shown once in clear, stored as SHA-256 hashes in <data>/keys.json; each key belongs to one tenant. */
import { createHash, randomBytes } from "node:crypto";
import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, statSync, writeSync } from "node:fs";
import { join } from "node:path";
import { SvcError } from "../errors.js";
import { stderrReporter, type Reporter } from "../store/reporter.js";
import { parseStoredJson } from "../safe-values.js";
import { quarantineAndRewrite, salvageElements, tryParse, type StoreRepair } from "../store/salvage-json.js";
import { TENANT_RE } from "../input-rules.js";

export interface KeyRecord {
  /** Public handle, `key_<hex>`: what `list` shows and `revoke` takes. */
  id: string;
  /** SHA-256 (hex) of the key; the key itself is never stored. */
  hash: string;
  tenant: string;
  /** Admin keys are unmetered and may manage keys. */
  admin: boolean;
  name: string;
  createdAt: number;
  revokedAt: number | null;
}

/** Who a request acts for. */
export interface Principal {
  tenant: string;
  admin: boolean;
  keyId: string | null;
}

/**
 * What the server needs of a key store: the local `KeyStore` (keys.json) and cluster mode's
 * `ClusterKeys` (KV bucket) both serve it. `authenticate`, `list` and `size` answer from memory;
 * writes may wait for the store (await them).
 */
export interface KeyBook {
  /** Issue a key (without `tenant`, for a new tenant); the clear key exists only in this answer. */
  create(opts?: {
    tenant?: string;
    admin?: boolean;
    name?: string;
  }): { key: string; record: KeyRecord } | Promise<{ key: string; record: KeyRecord }>;
  list(): KeyRecord[];
  /** Mark a key revoked (E_NOT_FOUND for an unknown id); revoking twice keeps the first time. */
  revoke(id: string): KeyRecord | Promise<KeyRecord>;
  /** The principal of a live key, or null for an unknown or revoked one. */
  authenticate(key: string): Principal | null;
  readonly size: number;
  /** Why no key can be checked (the store is damaged or unreachable), or null. */
  readonly offline: string | null;
}

const FILE = "keys.json";
/** The server re-reads keys.json (written by `svc keys` in another process) at most this often. */
const RELOAD_CHECK_MS = 500;

/** Hashes of the keys presented lately: a client's key is hashed once, not per request (SHA-256 was ~2-3 µs of a query's server CPU). Cleared when full, so random keys cannot grow it. */
const recentHashes = new Map<string, string>();
const RECENT_HASHES = 1024;

export function hashKey(key: string): string {
  let hash = recentHashes.get(key);
  if (hash === undefined) {
    hash = createHash("sha256").update(key).digest("hex");
    if (recentHashes.size >= RECENT_HASHES) recentHashes.clear();
    recentHashes.set(key, hash);
  }
  return hash;
}

export function newTenantId(): string {
  return `t_${randomBytes(6).toString("hex")}`;
}

/** A new key and its record (not stored yet). Without `tenant` the key starts a new tenant. */
export function newKey(opts: { tenant?: string; admin?: boolean; name?: string } = {}): { key: string; record: KeyRecord } {
  const tenant = opts.tenant ?? newTenantId();
  if (!TENANT_RE.test(tenant))
    throw new SvcError("E_BAD_REQUEST", "tenant must be 1-64 characters of a-z, 0-9, '_' and '-', starting with a letter or digit", {
      field: "tenant",
    });
  const key = `svc_${randomBytes(24).toString("base64url")}`;
  const record: KeyRecord = {
    id: `key_${randomBytes(6).toString("hex")}`,
    hash: hashKey(key),
    tenant,
    admin: opts.admin ?? false,
    name: opts.name ?? "",
    createdAt: Date.now(),
    revokedAt: null,
  };
  return { key, record };
}

/**
 * The key file is small and rarely written: each change rewrites it whole (temp file, fsync,
 * rename, fsync of the directory). A server notices changes made by the CLI through the
 * file's mtime and size, checked at most every RELOAD_CHECK_MS on authentication.
 */
export class KeyStore implements KeyBook {
  private readonly path: string;
  private records: KeyRecord[] = [];
  private byHash = new Map<string, KeyRecord>();
  private stamp = "";
  private checkedAt = 0;
  /** Why keys.json cannot be read (fail closed: no key authenticates, nothing is written), or null. */
  private damage: string | null = null;

  private constructor(
    readonly dir: string,
    private readonly reporter: Reporter,
  ) {
    this.path = join(dir, FILE);
  }

  /** `reporter`: told when keys.json cannot be read, and when it reads again. */
  static open(dir: string, reporter: Reporter = stderrReporter): KeyStore {
    mkdirSync(dir, { recursive: true });
    const store = new KeyStore(dir, reporter);
    store.reload();
    return store;
  }

  /** Issue a key. Without `tenant` the key starts a new tenant. Returns the clear key: the only time it exists. */
  create(opts: { tenant?: string; admin?: boolean; name?: string } = {}): { key: string; record: KeyRecord } {
    this.reload();
    this.assertOnline();
    const { key, record } = newKey(opts);
    this.records.push(record);
    this.save();
    return { key, record };
  }

  list(): KeyRecord[] {
    this.reload();
    this.assertOnline();
    return this.records.map((r) => ({ ...r }));
  }

  revoke(id: string): KeyRecord {
    this.reload();
    this.assertOnline();
    const r = this.records.find((x) => x.id === id);
    if (r === undefined) throw new SvcError("E_NOT_FOUND", `no key '${id}'`, { field: "id" });
    if (r.revokedAt === null) {
      r.revokedAt = Date.now();
      this.save();
    }
    return { ...r };
  }

  /** The principal of a live key, or null for an unknown or revoked one. */
  authenticate(key: string): Principal | null {
    const now = Date.now();
    if (now - this.checkedAt > RELOAD_CHECK_MS) {
      this.checkedAt = now;
      this.reload();
    }
    this.assertOnline();
    const r = this.byHash.get(hashKey(key));
    if (r === undefined || r.revokedAt !== null) return null;
    return { tenant: r.tenant, admin: r.admin, keyId: r.id };
  }

  get size(): number {
    return this.records.length;
  }

  /** Why the key file cannot be read, or null when the keys serve. */
  get offline(): string | null {
    return this.damage;
  }

  private assertOnline(): void {
    if (this.damage !== null)
      throw new SvcError(
        "E_STORE_OFFLINE",
        `the API keys are offline: ${this.damage}; no key is accepted until \`svc repair\` (GET /v1/health names the damage)`,
        { field: "api-key" },
      );
  }

  /**
   * Re-read keys.json when it changed. An unreadable file fails closed: every key is refused with
   * E_STORE_OFFLINE (not E_AUTH: the key may be fine) and nothing is written over the file, until
   * a readable one replaces it (`svc repair`, or a restored copy).
   */
  private reload(): void {
    if (!existsSync(this.path)) return;
    const st = statSync(this.path);
    const stamp = `${st.mtimeMs}:${st.size}:${st.ino}`;
    if (stamp === this.stamp) return;
    this.stamp = stamp;
    const parsed = parseKeyFile(readFileSync(this.path, "utf8"));
    if (parsed instanceof Error) {
      this.records = [];
      this.byHash = new Map();
      this.damage = `${this.path}: ${parsed.message}`;
      this.reporter.damage({
        store: "keys",
        file: FILE,
        kind: "unreadable",
        dropped: 0,
        offline: true,
        detail: `${parsed.message}; authenticated routes answer 503 E_STORE_OFFLINE, public routes serve`,
      });
      return;
    }
    if (this.damage !== null) this.reporter.cleared("keys");
    this.damage = null;
    this.records = parsed;
    this.byHash = new Map(this.records.map((r) => [r.hash, r]));
  }

  private save(): void {
    const tmp = `${this.path}.tmp`;
    const fd = openSync(tmp, "w", 0o600);
    try {
      writeSync(fd, JSON.stringify({ version: 1, keys: this.records }, null, 2));
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, this.path);
    const dfd = openSync(this.dir, "r");
    try {
      fsyncSync(dfd);
    } finally {
      closeSync(dfd);
    }
    this.byHash = new Map(this.records.map((r) => [r.hash, r]));
    this.stamp = "";
    this.reload();
  }
}

/** True for a well-formed key record (what repair keeps and the server trusts). */
export function isKeyRecord(r: unknown): r is KeyRecord {
  if (typeof r !== "object" || r === null) return false;
  const k = r as Record<string, unknown>;
  return (
    typeof k.id === "string" &&
    /^key_[0-9a-f]{12}$/.test(k.id) &&
    typeof k.hash === "string" &&
    /^[0-9a-f]{64}$/.test(k.hash) &&
    typeof k.tenant === "string" &&
    TENANT_RE.test(k.tenant) &&
    typeof k.admin === "boolean" &&
    typeof k.name === "string" &&
    Number.isFinite(k.createdAt) &&
    (k.revokedAt === null || Number.isFinite(k.revokedAt))
  );
}

/** The records of a keys.json text, or why it is not one: any malformed record makes the whole file unreadable (fail closed). */
export function parseKeyFile(text: string): KeyRecord[] | Error {
  let parsed: { keys?: unknown };
  try {
    parsed = parseStoredJson(text) as { keys?: unknown };
  } catch (e) {
    return new Error(`not valid JSON (${e instanceof Error ? e.message : String(e)})`);
  }
  if (typeof parsed !== "object" || parsed === null || !Array.isArray(parsed.keys))
    return new Error("not a key file ({version, keys: [...]})");
  const bad = parsed.keys.findIndex((r) => !isKeyRecord(r));
  if (bad >= 0) return new Error(`key record ${bad} is malformed`);
  return parsed.keys as KeyRecord[];
}

/**
 * `svc repair` of `<dataDir>/keys.json`: an unreadable file is quarantined and rewritten with the
 * records that still parse and are well formed; the others are dropped (those keys stop working:
 * fail closed). Run with the server stopped.
 */
export function repairKeyFile(dataDir: string): StoreRepair | null {
  const path = join(dataDir, FILE);
  if (!existsSync(path)) return null;
  const text = readFileSync(path, "utf8");
  const parsed = parseKeyFile(text);
  if (!(parsed instanceof Error)) return { store: "keys", file: FILE, action: "ok", kept: parsed.length, dropped: 0, detail: "readable" };
  const parts = salvageElements(text, "keys") ?? [];
  const kept = parts.map(tryParse).filter(isKeyRecord);
  const backup = quarantineAndRewrite(path, JSON.stringify({ version: 1, keys: kept }, null, 2), 0o600);
  return {
    store: "keys",
    file: FILE,
    action: "rewritten",
    kept: kept.length,
    dropped: parts.length - kept.length,
    backup,
    detail: parsed.message,
  };
}
