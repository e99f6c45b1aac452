import { createHash } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { hashKey, KeyStore } from "../../src/account/keys.js";
import { SvcError } from "../../src/errors.js";
import { KeptReports } from "../../src/store/reporter.js";

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "svc-keys-"));
});
afterEach(() => {
  vi.useRealTimers();
  rmSync(dir, { recursive: true, force: true });
});

function thrown(f: () => unknown): SvcError {
  try {
    f();
  } catch (err) {
    expect(err).toBeInstanceOf(SvcError);
    return err as SvcError;
  }
  throw new Error("expected a throw");
}

describe("KeyStore", () => {
  it("stores keys only as SHA-256 hashes: the clear key never reaches keys.json", () => {
    const store = KeyStore.open(dir);
    const a = store.create({ tenant: "acme", name: "ci" });
    const b = store.create({ tenant: "acme", admin: true });
    const file = readFileSync(join(dir, "keys.json"), "utf8");
    for (const { key, record } of [a, b]) {
      expect(key).toMatch(/^svc_[\w-]{20,}$/);
      expect(record.hash).toBe(createHash("sha256").update(key).digest("hex"));
      expect(record.hash).toBe(hashKey(key));
      expect(file).not.toContain(key);
      // not even the random part without its prefix
      expect(file).not.toContain(key.slice(4));
      expect(file).toContain(record.hash);
      expect(file).toContain(record.id);
    }
    expect(a.record).toMatchObject({ tenant: "acme", admin: false, name: "ci", revokedAt: null });
    expect(b.record).toMatchObject({ tenant: "acme", admin: true, revokedAt: null });
    expect(a.record.id).toMatch(/^key_[0-9a-f]{12}$/);
    expect(a.record.id).not.toBe(b.record.id);
    expect(a.key).not.toBe(b.key);
    // readable by the owner only
    expect(statSync(join(dir, "keys.json")).mode & 0o077).toBe(0);
    const parsed = JSON.parse(file) as { version: number; keys: Array<Record<string, unknown>> };
    expect(parsed.version).toBe(1);
    expect(parsed.keys.map((k) => k.id)).toEqual([a.record.id, b.record.id]);
  });

  it("authenticates live keys to their tenant and admin flag; unknown and revoked keys get null", () => {
    const store = KeyStore.open(dir);
    const user = store.create({ tenant: "acme" });
    const admin = store.create({ tenant: "ops", admin: true });
    expect(store.authenticate(user.key)).toEqual({ tenant: "acme", admin: false, keyId: user.record.id });
    expect(store.authenticate(admin.key)).toEqual({ tenant: "ops", admin: true, keyId: admin.record.id });
    expect(store.authenticate(`${user.key}x`)).toBeNull();
    expect(store.authenticate("")).toBeNull();
    // the stored hash is not a key
    expect(store.authenticate(user.record.hash)).toBeNull();

    const revoked = store.revoke(user.record.id);
    expect(revoked.revokedAt).toEqual(expect.any(Number));
    expect(store.authenticate(user.key)).toBeNull();
    expect(store.authenticate(admin.key)).not.toBeNull();
    // revoking again keeps the first revocation time
    expect(store.revoke(user.record.id).revokedAt).toBe(revoked.revokedAt);
    expect(store.list().find((r) => r.id === user.record.id)!.revokedAt).toBe(revoked.revokedAt);

    const e = thrown(() => store.revoke("key_000000000000"));
    expect(e.code).toBe("E_NOT_FOUND");
    expect(e.field).toBe("id");
  });

  it("a key without a tenant starts a new tenant; bad tenant ids are refused", () => {
    const store = KeyStore.open(dir);
    const a = store.create();
    const b = store.create();
    expect(a.record.tenant).toMatch(/^t_[0-9a-f]{12}$/);
    expect(b.record.tenant).toMatch(/^t_[0-9a-f]{12}$/);
    expect(a.record.tenant).not.toBe(b.record.tenant);
    for (const tenant of ["", "Acme", "-x", "a b", "a/b", "x".repeat(65)]) {
      const e = thrown(() => store.create({ tenant }));
      expect(e.code).toBe("E_BAD_REQUEST");
      expect(e.field).toBe("tenant");
    }
    expect(store.size).toBe(2);
  });

  it("survives a reopen: keys, revocations and tenants are read back from keys.json", () => {
    const s1 = KeyStore.open(dir);
    const live = s1.create({ tenant: "acme" });
    const dead = s1.create({ tenant: "acme" });
    s1.revoke(dead.record.id);
    const s2 = KeyStore.open(dir);
    expect(s2.size).toBe(2);
    expect(s2.authenticate(live.key)).toEqual({ tenant: "acme", admin: false, keyId: live.record.id });
    expect(s2.authenticate(dead.key)).toBeNull();
    expect(s2.list()).toEqual(s1.list());
  });

  it("picks up keys created and revoked by another KeyStore on the same file (the CLI next to a server), re-reading at most every 500 ms", () => {
    vi.useFakeTimers({ toFake: ["Date"] });
    vi.setSystemTime(new Date("2030-01-01T00:00:00Z"));
    const server = KeyStore.open(dir);
    const cli = KeyStore.open(dir);
    expect(server.authenticate("svc_nothing")).toBeNull(); // checks the file now

    const { key, record } = cli.create({ tenant: "late" });
    // within the re-read interval the server still works from what it read
    expect(server.authenticate(key)).toBeNull();
    vi.advanceTimersByTime(501);
    expect(server.authenticate(key)).toEqual({ tenant: "late", admin: false, keyId: record.id });

    cli.revoke(record.id);
    expect(server.authenticate(key)).not.toBeNull();
    vi.advanceTimersByTime(501);
    expect(server.authenticate(key)).toBeNull();

    // and the other way round: a key the server's store issues is seen by a fresh CLI store
    const second = server.create({ tenant: "late", admin: true });
    expect(KeyStore.open(dir).authenticate(second.key)).toEqual({ tenant: "late", admin: true, keyId: second.record.id });
    // a write by one store never loses the other's records
    expect(cli.list().map((r) => r.id)).toEqual([record.id, second.record.id]);
    cli.create({ tenant: "third" });
    expect(
      KeyStore.open(dir)
        .list()
        .map((r) => r.tenant),
    ).toEqual(["late", "late", "third"]);
  });
});

describe("KeyStore with a damaged keys.json", () => {
  it("fails closed when the file becomes unreadable while serving, never writes over it, and serves again once it is readable", () => {
    const reporter = new KeptReports({ damage: () => {}, background: () => {} });
    const store = KeyStore.open(dir, reporter);
    const { key } = store.create({ tenant: "acme" });
    const path = join(dir, "keys.json");
    const good = readFileSync(path, "utf8");
    writeFileSync(path, good.replace('"admin": false', '"admin": fals'));
    const before = readFileSync(path, "utf8");
    vi.useFakeTimers({ now: Date.now() + 10_000 }); // past the reload interval
    expect(thrown(() => store.authenticate(key))).toMatchObject({ code: "E_STORE_OFFLINE", status: 503, field: "api-key" });
    expect(store.offline).toContain("keys.json");
    expect(thrown(() => store.create({ tenant: "other" })).code).toBe("E_STORE_OFFLINE");
    expect(thrown(() => store.revoke("key_000000000000")).code).toBe("E_STORE_OFFLINE");
    expect(readFileSync(path, "utf8")).toBe(before);
    expect(reporter.reports()).toContainEqual(
      expect.objectContaining({ store: "keys", file: "keys.json", kind: "unreadable", offline: true }),
    );
    writeFileSync(path, good); // restored
    vi.setSystemTime(Date.now() + 10_000);
    expect(store.authenticate(key)).toMatchObject({ tenant: "acme" });
    expect(store.offline).toBeNull();
    expect(reporter.reports().filter((r) => r.store === "keys")).toEqual([]);
  });

  it("a record that parses but is malformed (an admin flag that is not a boolean) makes the file unreadable too", () => {
    const store = KeyStore.open(dir);
    store.create({ tenant: "acme" });
    const path = join(dir, "keys.json");
    writeFileSync(path, readFileSync(path, "utf8").replace('"admin": false', '"admin": "yes"'));
    const again = KeyStore.open(dir);
    expect(again.offline).toMatch(/key record 0 is malformed/);
    expect(again.size).toBe(0);
  });
});
