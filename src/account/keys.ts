/** @module keys — API keys: shown once in clear, stored as SHA-256 hashes in <data>/keys.json; each key belongs to one tenant. */
import { createHash, randomBytes } from "node:crypto";
import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, statSync, writeSync } from "node:fs";
import { join } from "node:path";
import { SvcError } from "../errors.js";
import { parseStoredJson } from "../safe-values.js";

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

const FILE = "keys.json";
const TENANT_RE = /^[a-z0-9][a-z0-9_-]{0,63}$/;
/** The server re-reads keys.json (written by `svc keys` in another process) at most this often. */
const RELOAD_CHECK_MS = 500;

export function hashKey(key: string): string {
  return createHash("sha256").update(key).digest("hex");
}

export function newTenantId(): string {
  return `t_${randomBytes(6).toString("hex")}`;
}

/**
 * The key file is small and rarely written: each change rewrites it whole (temp file, fsync,
 * rename, fsync of the directory). A server notices changes made by the CLI through the
 * file's mtime and size, checked at most every RELOAD_CHECK_MS on authentication.
 */
export class KeyStore {
  private readonly path: string;
  private records: KeyRecord[] = [];
  private byHash = new Map<string, KeyRecord>();
  private stamp = "";
  private checkedAt = 0;

  private constructor(readonly dir: string) {
    this.path = join(dir, FILE);
  }

  static open(dir: string): KeyStore {
    mkdirSync(dir, { recursive: true });
    const store = new KeyStore(dir);
    store.reload();
    return store;
  }

  /** Issue a key. Without `tenant` the key starts a new tenant. Returns the clear key: the only time it exists. */
  create(opts: { tenant?: string; admin?: boolean; name?: string } = {}): { key: string; record: KeyRecord } {
    this.reload();
    const tenant = opts.tenant ?? newTenantId();
    if (!TENANT_RE.test(tenant)) throw new SvcError("E_BAD_REQUEST", "tenant must be 1-64 characters of a-z, 0-9, '_' and '-', starting with a letter or digit", { field: "tenant" });
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
    this.records.push(record);
    this.save();
    return { key, record };
  }

  list(): KeyRecord[] {
    this.reload();
    return this.records.map((r) => ({ ...r }));
  }

  revoke(id: string): KeyRecord {
    this.reload();
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
    const r = this.byHash.get(hashKey(key));
    if (r === undefined || r.revokedAt !== null) return null;
    return { tenant: r.tenant, admin: r.admin, keyId: r.id };
  }

  get size(): number {
    return this.records.length;
  }

  private reload(): void {
    if (!existsSync(this.path)) return;
    const st = statSync(this.path);
    const stamp = `${st.mtimeMs}:${st.size}:${st.ino}`;
    if (stamp === this.stamp) return;
    const parsed = parseStoredJson(readFileSync(this.path, "utf8")) as { version: number; keys: KeyRecord[] };
    this.records = parsed.keys;
    this.byHash = new Map(this.records.map((r) => [r.hash, r]));
    this.stamp = stamp;
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
