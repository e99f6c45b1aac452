/** @module registry — the ten document helpers: records (id, description, entry points, SHA-256 of the code, ed25519 signature), code, verification, dispatch. */
import {
  createHash,
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  sign,
  verify as verifySignatureBytes,
  type KeyObject,
} from "node:crypto";
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { SvcError } from "../errors.js";
import { helperCode } from "./code-closure.js";

/** One helper of the shelf: its display name (as in the contract), module file name and entry points. */
export interface HelperSpec {
  name: string;
  module: string;
  description: string;
  entryPoints: string[];
}

/** In the contract's table order. `module` is the file name under src/helpers/ without extension. */
export const HELPERS: readonly HelperSpec[] = [
  {
    name: "combo chart slide",
    module: "combo-chart-slide",
    description: "A presentation file with one bar-plus-line chart slide.",
    entryPoints: ["build"],
  },
  { name: "fillable form", module: "fillable-form", description: "A one-page fillable form document.", entryPoints: ["build"] },
  {
    name: "landscape document",
    module: "landscape-document",
    description: "A word-processing file with a portrait section then a landscape section.",
    entryPoints: ["build"],
  },
  {
    name: "email message",
    module: "email-message",
    description: "A multipart email file: text and HTML alternatives plus one attachment.",
    entryPoints: ["build"],
  },
  {
    name: "merged-header sheet",
    module: "merged-header-sheet",
    description: "A spreadsheet with one truly merged cell.",
    entryPoints: ["build"],
  },
  {
    name: "meeting series",
    module: "meeting-series",
    description: "A calendar file with one weekly recurring event and a reminder.",
    entryPoints: ["build"],
  },
  {
    name: "task parser",
    module: "task-parser",
    description: "An ALFRED entry point, object type and target receptacle type from a household-task sentence.",
    entryPoints: ["build", "parseTask"],
  },
  { name: "form filler", module: "form-filler", description: "A filled copy of an existing fillable form.", entryPoints: ["build"] },
  {
    name: "merged-cell grid reader",
    module: "merged-cell-grid-reader",
    description: "A JSON grid of the active sheet with merges resolved.",
    entryPoints: ["build"],
  },
  {
    name: "line folder",
    module: "line-folder",
    description: "A text file of content lines folded at 75 octets with CRLF line ends.",
    entryPoints: ["build", "fold", "unfold"],
  },
];

export type SignatureStatus = "signed (ed25519)" | "unsigned";

export interface HelperRecord {
  /** `rec_` + the first 16 hex digits of sha256("svc-helper:" + name): stable across nodes, restarts and code changes. */
  id: string;
  name: string;
  module: string;
  description: string;
  entryPoints: string[];
  /** SHA-256 (lower-case hex) of the helper's code (its module and every module it imports, see helperCodeBytes) when the record was published. */
  codeHash: string;
  signature: SignatureStatus;
  /** Base64 ed25519 signature over the 32 raw bytes of `codeHash`; null when unsigned. */
  signatureValue: string | null;
}

export interface VerifyResult {
  id: string;
  name: string;
  /** hashMatches and, for a signed record, signatureValid. */
  ok: boolean;
  /** The code as it is now hashes to the published codeHash. */
  hashMatches: boolean;
  /** The published signature verifies over the published codeHash with publicKey; null when unsigned. */
  signatureValid: boolean | null;
  expectedHash: string;
  /** Null when the helper's module file is gone. */
  actualHash: string | null;
  /** Raw 32-byte ed25519 public key, base64; null when unsigned. */
  publicKey: string | null;
}

export interface PublicKeyExport {
  /** SPKI PEM. */
  pem: string;
  /** The raw 32-byte key, base64. */
  raw: string;
}

export interface Registry {
  /** Records of the helpers whose code file exists, in the contract's order. */
  list(): HelperRecord[];
  /** By id, display name or module name; E_NOT_FOUND otherwise. */
  get(id: string): HelperRecord;
  /** The helper's code as it is now (UTF-8): its module and every module it imports, framed (see helperCodeBytes). */
  code(id: string): string;
  verify(id: string): VerifyResult;
  readonly publicKey: PublicKeyExport | null;
  /** Calls the helper module's `build(args)` and returns its (awaited) result. */
  run(id: string, args: unknown): Promise<unknown>;
}

export interface RegistryOptions {
  /** Data directory; the signing key lives at `<dataDir>/keys/signing-key.pem`. Without one, records are unsigned. */
  dataDir?: string;
  /** Where the code files (`<module>.ts`) are read from; default: see `defaultCodeDir`. */
  codeDir?: string;
}

/** `rec_<16 hex>` from the helper's display name. */
export function helperId(name: string): string {
  return `rec_${createHash("sha256").update(`svc-helper:${name}`).digest("hex").slice(0, 16)}`;
}

export function sha256Hex(bytes: Buffer | string): string {
  return createHash("sha256").update(bytes).digest("hex");
}

/** This module's directory: src/helpers under tsx/vitest, dist/helpers when built. */
const MODULE_DIR = dirname(fileURLToPath(import.meta.url));

/** Written by scripts/helper-hashes.mjs right after the compile: module -> SHA-256 of its code (helperCodeBytes over dist/). */
export const HASHES_FILE = "code-hashes.json";

/**
 * "The code" of a helper is what the node executes: its module (dist/helpers/<module>.js when
 * built, src/helpers/<module>.ts under tsx or vitest) and every module that imports, followed
 * through the files' real imports (args, output-path, errors, ...), framed into one text
 * (helperCodeBytes). That text is what is hashed, signed, served by the code endpoint and
 * verified before each build, so a change to a shared module fails verification too.
 */
export function defaultCodeDir(): string {
  return MODULE_DIR;
}

/** The executed file of a module in `codeDir`: the compiled .js when present, else the .ts source. */
function codeFile(codeDir: string, module: string): string {
  const js = join(codeDir, `${module}.js`);
  return existsSync(js) ? js : join(codeDir, `${module}.ts`);
}

/** The helper's code now (see defaultCodeDir and code-closure.ts), or null when its module file is gone. */
export function helperCodeBytes(codeDir: string, module: string): Buffer | null {
  return helperCode(codeFile(codeDir, module), dirname(codeDir));
}

/** The hashes the build recorded (code-hashes.json beside the code), or null when there is none (running from source). */
function buildHashes(codeDir: string): Record<string, string> | null {
  const path = join(codeDir, HASHES_FILE);
  if (!existsSync(path)) return null;
  try {
    const parsed = JSON.parse(readFileSync(path, "utf8")) as unknown;
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) throw new Error("not an object");
    return Object.fromEntries(
      Object.entries(parsed).filter((e): e is [string, string] => typeof e[1] === "string" && /^[0-9a-f]{64}$/.test(e[1])),
    );
  } catch (err) {
    throw new SvcError(
      "E_CODE_MISMATCH",
      `helper code hashes (${HASHES_FILE}) are unreadable: ${(err as Error).message}; rebuild with npm run build`,
      { cause: err },
    );
  }
}

/**
 * The node's ed25519 key: `<dataDir>/keys/signing-key.pem` (PKCS#8, mode 0600), created on
 * first use. Concurrent first uses agree: the file is created exclusively and a loser reads
 * the winner's key.
 */
export function loadOrCreateSigningKey(dataDir: string): KeyObject {
  const dir = join(resolve(dataDir), "keys");
  const path = join(dir, "signing-key.pem");
  const read = (): KeyObject => {
    const key = createPrivateKey(readFileSync(path, "utf8"));
    if (key.asymmetricKeyType !== "ed25519") throw new SvcError("E_IO", `${path} does not hold an ed25519 private key`);
    return key;
  };
  try {
    if (existsSync(path)) return read();
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const { privateKey } = generateKeyPairSync("ed25519");
    try {
      writeFileSync(path, privateKey.export({ type: "pkcs8", format: "pem" }), { mode: 0o600, flag: "wx" });
      chmodSync(path, 0o600);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "EEXIST") return read();
      throw err;
    }
    return privateKey;
  } catch (err) {
    if (err instanceof SvcError) throw err;
    throw new SvcError("E_IO", `signing key ${path}: ${(err as Error).message}`, { cause: err });
  }
}

export function exportPublicKey(key: KeyObject): PublicKeyExport {
  const pub = key.type === "private" ? createPublicKey(key) : key;
  const der = pub.export({ type: "spki", format: "der" });
  return { pem: pub.export({ type: "spki", format: "pem" }).toString(), raw: der.subarray(der.length - 32).toString("base64") };
}

/** The ed25519 signature (base64) over the raw bytes of a hex SHA-256. */
export function signHash(hashHex: string, privateKey: KeyObject): string {
  return sign(null, Buffer.from(hashHex, "hex"), privateKey).toString("base64");
}

/** Whether `signatureB64` is a valid ed25519 signature by `publicKeyPem` over the raw bytes of `hashHex`. */
export function verifyHashSignature(hashHex: string, signatureB64: string, publicKeyPem: string): boolean {
  try {
    return verifySignatureBytes(null, Buffer.from(hashHex, "hex"), createPublicKey(publicKeyPem), Buffer.from(signatureB64, "base64"));
  } catch {
    return false;
  }
}

/**
 * Check a published record against code bytes (null: the code is gone) and the node's public
 * key. An unsigned record has `signatureValid: null`; a signed one without a key fails. Each part is reported on its own: a changed code file fails
 * `hashMatches`, an altered hash or signature fails `signatureValid`.
 */
export function verifyRecord(record: HelperRecord, code: Buffer | string | null, publicKey: PublicKeyExport | null): VerifyResult {
  const actualHash = code === null ? null : sha256Hex(code);
  const hashMatches = actualHash === record.codeHash;
  const signatureValid =
    record.signature === "unsigned"
      ? null
      : record.signatureValue !== null && publicKey !== null && verifyHashSignature(record.codeHash, record.signatureValue, publicKey.pem);
  return {
    id: record.id,
    name: record.name,
    ok: hashMatches && signatureValid !== false,
    hashMatches,
    signatureValid,
    expectedHash: record.codeHash,
    actualHash,
    publicKey: publicKey?.raw ?? null,
  };
}

function findSpec(idOrName: string): HelperSpec {
  const key = idOrName.trim().toLowerCase();
  const spec = HELPERS.find((h) => helperId(h.name) === key || h.name === key || h.module === key);
  if (spec === undefined)
    throw new SvcError("E_NOT_FOUND", `no helper ${JSON.stringify(idOrName)}; known: ${HELPERS.map((h) => h.module).join(", ")}`, {
      field: "id",
    });
  return spec;
}

/**
 * Open the registry. A helper's record is published — its code hash signed — when the
 * registry opens (or, for a file that appears later, when first seen), and kept for the
 * registry's life. The hash is the one the build recorded (code-hashes.json) when there is
 * one, so a module edited after the build (the helper's own or any it imports) fails
 * verification from the first request on; from source (no build) it is the code's hash at first
 * sight. verify() re-reads the code (the whole closure) and compares; run() verifies first and
 * refuses (E_CODE_MISMATCH) code that no longer matches.
 */
export function openRegistry(options: RegistryOptions = {}): Registry {
  const codeDir = resolve(options.codeDir ?? defaultCodeDir());
  const privateKey = options.dataDir === undefined ? null : loadOrCreateSigningKey(options.dataDir);
  const publicKey = privateKey === null ? null : exportPublicKey(privateKey);
  const built = buildHashes(codeDir);
  const published = new Map<string, HelperRecord>();
  const codePath = (spec: HelperSpec) => codeFile(codeDir, spec.module);
  /** The code now; null when it cannot be read (gone). */
  const codeNow = (spec: HelperSpec): Buffer | null => {
    try {
      return helperCodeBytes(codeDir, spec.module);
    } catch {
      return null;
    }
  };

  const publish = (spec: HelperSpec): HelperRecord | undefined => {
    const known = published.get(spec.module);
    if (known !== undefined) return known;
    const bytes = codeNow(spec);
    if (bytes === null) return undefined;
    const codeHash = built?.[spec.module] ?? sha256Hex(bytes);
    const record: HelperRecord = {
      id: helperId(spec.name),
      name: spec.name,
      module: spec.module,
      description: spec.description,
      entryPoints: [...spec.entryPoints],
      codeHash,
      signature: privateKey === null ? "unsigned" : "signed (ed25519)",
      signatureValue: privateKey === null ? null : signHash(codeHash, privateKey),
    };
    published.set(spec.module, record);
    return record;
  };
  for (const spec of HELPERS) publish(spec);
  const copy = (r: HelperRecord): HelperRecord => ({ ...r, entryPoints: [...r.entryPoints] });
  const recordOf = (idOrName: string): HelperRecord => {
    const spec = findSpec(idOrName);
    const record = publish(spec);
    if (record === undefined)
      throw new SvcError("E_NOT_FOUND", `helper ${JSON.stringify(spec.name)} has no code at ${codePath(spec)}`, { field: "id" });
    return record;
  };

  function verify(id: string): VerifyResult {
    const record = recordOf(id);
    return verifyRecord(record, codeNow(findSpec(record.module)), publicKey);
  }

  return {
    publicKey,
    list: () =>
      HELPERS.flatMap((spec) => {
        const r = publish(spec);
        return r === undefined ? [] : [copy(r)];
      }),
    get: (id) => copy(recordOf(id)),
    code(id) {
      const record = recordOf(id);
      const code = codeNow(findSpec(record.module));
      if (code === null)
        throw new SvcError("E_NOT_FOUND", `helper ${JSON.stringify(record.name)}: code file ${codePath(findSpec(record.module))} is gone`, {
          field: "id",
        });
      return code.toString("utf8");
    },
    verify,
    async run(id, args) {
      const spec = findSpec(id);
      const check = verify(id);
      if (!check.ok) {
        const why =
          check.actualHash === null
            ? "its code file is gone"
            : !check.hashMatches
              ? `its code hashes to ${check.actualHash}, not the published ${check.expectedHash}`
              : "its published signature does not verify";
        throw new SvcError("E_CODE_MISMATCH", `helper ${JSON.stringify(spec.name)} will not run: ${why}`, { field: "id" });
      }
      let mod: Record<string, unknown>;
      try {
        mod = (await import(pathToFileURL(codePath(spec)).href)) as Record<string, unknown>;
      } catch (err) {
        throw new SvcError("E_NOT_FOUND", `helper ${JSON.stringify(spec.name)} cannot be loaded: ${(err as Error).message}`, {
          field: "id",
          cause: err,
        });
      }
      if (typeof mod.build !== "function")
        throw new SvcError("E_NOT_FOUND", `helper ${JSON.stringify(spec.name)} has no build entry point`, { field: "id" });
      return await (mod.build as (a: unknown) => unknown)(args);
    },
  };
}
