/** @module routes/admin — /v1/admin: tenants with their keys and balances, issue and revoke keys, credit a wallet (admin keys only). */
import type { KeyBook, KeyRecord } from "../../account/keys.js";
import type { WalletBook } from "../../account/wallet-book.js";
import { SvcError } from "../../errors.js";
import { ADMIN_OPS } from "../../tools/admin-ops.js";
import { bodyOf } from "../input.js";
import type { Route, Schema } from "../route.js";

export { MAX_CREDIT_USD } from "../../input-rules.js";

const keyView: Schema = {
  type: "object",
  properties: {
    id: { type: "string", description: "key_<hex>: the public handle (the key itself is never stored)" },
    tenant: { type: "string" },
    admin: { type: "boolean" },
    name: { type: "string" },
    createdAt: { type: "integer", description: "epoch ms" },
    revokedAt: { type: ["integer", "null"], description: "epoch ms, null while live" },
  },
};
const balances: Schema = {
  type: "object",
  properties: { balanceUsd: { type: "number" }, creditedUsd: { type: "number" }, spentUsd: { type: "number" } },
};

/** A key record without its hash. */
function view(r: KeyRecord): Omit<KeyRecord, "hash"> {
  const { hash: _hash, ...rest } = r;
  return rest;
}

export function adminRoutes(deps: { keys: KeyBook; wallets: WalletBook }): Route[] {
  const tenantsWithKeys = () => new Set(deps.keys.list().map((r) => r.tenant));
  return [
    {
      method: "get",
      path: "/v1/admin/tenants",
      operationId: "admin_tenants",
      summary: "Every tenant with its keys (ids, names, created, revoked) and wallet balances",
      tags: ["admin"],
      auth: "admin",
      response: {
        status: 200,
        description: "Tenants sorted by name; wallet null for a tenant whose keys were never used",
        schema: {
          type: "object",
          properties: {
            tenants: {
              type: "array",
              items: {
                type: "object",
                properties: {
                  tenant: { type: "string" },
                  keys: { type: "array", items: keyView },
                  wallet: { oneOf: [balances, { type: "null" }] },
                },
              },
            },
          },
        },
      },
      handle() {
        const byTenant = new Map<string, KeyRecord[]>();
        for (const r of deps.keys.list()) {
          let list = byTenant.get(r.tenant);
          if (list === undefined) byTenant.set(r.tenant, (list = []));
          list.push(r);
        }
        const tenants = [...byTenant.keys()].sort().map((tenant) => {
          const w = deps.wallets.peek(tenant);
          return {
            tenant,
            keys: byTenant
              .get(tenant)!
              .sort((a, b) => a.createdAt - b.createdAt)
              .map(view),
            wallet: w === null ? null : { balanceUsd: w.balanceUsd, creditedUsd: w.creditedUsd, spentUsd: w.spentUsd },
          };
        });
        return { body: { tenants } };
      },
    },
    {
      method: "post",
      path: "/v1/admin/keys",
      operationId: "admin_create_key",
      summary: "Issue a key; without tenant it starts a new tenant. The key is in this reply only",
      tags: ["admin"],
      auth: "admin",
      input: ADMIN_OPS.admin_create_key,
      response: {
        status: 201,
        schema: {
          ...keyView,
          properties: { ...(keyView.properties as object), key: { type: "string", description: "the API key, shown only now" } },
        },
        description: "The new key",
      },
      async handle(ctx) {
        const b = bodyOf(ADMIN_OPS.admin_create_key.body, ctx.body);
        const tenant = b.tenant === "" ? undefined : b.tenant;
        const { key, record } = await deps.keys.create({
          tenant,
          name: b.name,
          admin: b.admin,
        });
        return { status: 201, body: { key, ...view(record) } };
      },
    },
    {
      method: "delete",
      path: "/v1/admin/keys/{keyId}",
      operationId: "admin_revoke_key",
      summary: "Revoke a key (it stops working at once; the record stays, marked revoked)",
      tags: ["admin"],
      auth: "admin",
      response: { status: 200, schema: keyView, description: "The revoked key" },
      async handle(ctx) {
        const id = ctx.params.keyId!;
        if (id === ctx.principal.keyId)
          throw new SvcError("E_CONFLICT", "this is the key making the request; revoke it with another admin key", { field: "keyId" });
        if (!deps.keys.list().some((r) => r.id === id)) throw new SvcError("E_NOT_FOUND", `no key '${id}'`, { field: "keyId" });
        return { body: view({ ...(await deps.keys.revoke(id)), hash: "" }) };
      },
    },
    {
      method: "post",
      path: "/v1/admin/tenants/{tenant}/credit",
      operationId: "admin_credit",
      summary: "Add credit (USD) to a tenant's wallet",
      tags: ["admin"],
      auth: "admin",
      input: ADMIN_OPS.admin_credit,
      response: {
        status: 200,
        schema: { ...balances, properties: { tenant: { type: "string" }, ...(balances.properties as object) } },
        description: "The wallet after the credit",
      },
      async handle(ctx) {
        const tenant = ctx.params.tenant!;
        const b = bodyOf(ADMIN_OPS.admin_credit.body, ctx.body);
        if (!tenantsWithKeys().has(tenant) && deps.wallets.peek(tenant) === null)
          throw new SvcError("E_NOT_FOUND", `no tenant '${tenant}'`, { field: "tenant" });
        await deps.wallets.credit(tenant, b.usd, "admin");
        const w = deps.wallets.peek(tenant)!;
        return { body: { tenant, balanceUsd: w.balanceUsd, creditedUsd: w.creditedUsd, spentUsd: w.spentUsd } };
      },
    },
  ];
}
