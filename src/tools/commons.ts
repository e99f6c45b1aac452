/** @module tools/commons — the document helpers' signed registry (list, code, verify, build) and the tenant's wallet. */
import { z } from "zod";
import { ADMIN_OPS, tenantId } from "./admin-ops.js";
import { COMMONS_OPS } from "./commons-ops.js";
import { DESTROY, file, json, op, out, READ, WRITE } from "./define.js";
import type { Tool } from "./tool.js";
import { WALLET_OPS } from "./wallet-ops.js";

const helperId = z
  .string()
  .regex(/^rec_[0-9a-f]+$/)
  .describe("a helper's id (rec_<hex>) from commons_list");
const helper = out({ id: z.string(), name: z.string(), description: z.string(), codeHash: z.string() });

const list = op("commons_list", {
  name: "commons_list",
  title: "List document helpers",
  annotations: READ,
  description:
    "The document-building helpers (combo chart slide, fillable form, landscape document, email, merged-header sheet, meeting series, task parser, form filler, grid reader, line folder): id, description, entry points, code hash and signature.",
  input: z.object({}),
  output: out({ rungs: z.array(helper), publicKey: z.string().nullable() }),
});
const get = op("commons_get", {
  name: "commons_get",
  title: "Describe a helper",
  annotations: READ,
  description: "One document helper's signed record.",
  input: z.object({ id: helperId }),
  output: helper,
});
const code: Tool = {
  name: "commons_code",
  title: "A helper's code",
  access: "tenant",
  annotations: READ,
  operations: ["commons_code"],
  description:
    "The code of a document helper as the node runs it: its module and every module it imports, each after a line naming its path (the bytes its codeHash is the SHA-256 of).",
  input: z.object({ id: helperId }),
  output: out({ code: z.string() }),
  async run({ id }, api) {
    const reply = await api.call("commons_code", { args: { id } });
    return { code: reply.raw?.data.toString("utf8") ?? "" };
  },
};
const verify = op("commons_verify", {
  name: "commons_verify",
  title: "Verify a helper",
  annotations: READ,
  description: "Re-hash a helper's code and check its ed25519 signature; says which parts matched.",
  input: COMMONS_OPS.commons_verify.body,
  output: out({ id: z.string() }),
});
const build: Tool = {
  name: "commons_build",
  title: "Build a document",
  access: "tenant",
  annotations: WRITE,
  operations: ["commons_build"],
  description:
    "Run a document helper with its argument object (see commons_get / the helper contract). Output paths are relative to your build directory. Returns the produced file as base64 (or {result} for helpers that write no file, like the task parser).",
  input: z.object({ id: helperId, args: z.record(z.string(), z.unknown()).describe("the helper's arguments") }),
  output: out({}),
  async run({ id, args }, api) {
    const reply = await api.call("commons_build", { args: { id, ...(args as object) } });
    if (!reply.raw) return json(reply);
    const result = reply.headers["x-svc-result"];
    return {
      ...file(reply, "output"),
      path: decodeURI(reply.headers["x-svc-output-path"] ?? ""),
      result: result === undefined ? null : JSON.parse(result),
    };
  },
};
const wallet = op("wallet", {
  name: "wallet",
  title: "Wallet",
  annotations: READ,
  description: "This tenant's balance (USD), totals and recent usage: every REST and tool call deducts from it.",
  input: WALLET_OPS.wallet.query,
  output: out({}),
});

const usage = op("wallet_usage", {
  name: "wallet_usage",
  title: "Usage over time",
  annotations: READ,
  description: "This tenant's charges over time by operation: USD and calls per minute, hour or UTC day.",
  input: WALLET_OPS.wallet_usage.query,
  output: out({}),
});

/** Operator tools (an admin key): tenants, revocation, credit. Keys are issued on the dashboard or with `svc keys`, never to a model. */
const adminTenants = op("admin_tenants", {
  name: "admin_tenants",
  title: "Tenants",
  annotations: READ,
  description: "Admin: every tenant with its keys (ids, names, created, revoked) and wallet balance.",
  input: z.object({}),
  output: out({ tenants: z.array(out({ tenant: z.string() })) }),
});
const adminRevoke = op("admin_revoke_key", {
  name: "admin_revoke_key",
  title: "Revoke a key",
  annotations: DESTROY,
  description: "Admin: revoke an API key by id (it stops working at once).",
  input: z.object({ keyId: z.string().min(1) }),
  output: out({ id: z.string() }),
});
const adminCredit = op("admin_credit", {
  name: "admin_credit",
  title: "Credit a wallet",
  annotations: WRITE,
  description: "Admin: add credit (USD) to a tenant's wallet.",
  input: z.object({ tenant: tenantId, ...ADMIN_OPS.admin_credit.body.shape }),
  output: out({ tenant: z.string() }),
});

/** The document helpers' registry. */
export const helperTools: Tool[] = [list, get, code, verify, build];
export const walletTools: Tool[] = [wallet, usage];
/** Admin keys only: tenants, keys, credit. */
export const adminTools: Tool[] = [adminTenants, adminRevoke, adminCredit];
