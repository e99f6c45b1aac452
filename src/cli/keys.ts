/** @module keys — `svc keys create|list|revoke`: manage API keys in a data dir (a running server picks changes up within a second). */
import { KeyStore } from "../account/keys.js";
import { SvcError } from "../errors.js";
import { say, type Command } from "./command.js";
import { DEFAULT_DATA_DIR } from "./serve.js";

export const keysCommand: Command = {
  name: "keys",
  usage: `svc keys create [--tenant ID] [--admin] [--name TEXT] [--data ./data/var]
  svc keys list [--data ./data/var]
  svc keys revoke <key-id> [--data ./data/var]
      Issue a key (without --tenant it starts a new tenant, with a fresh
      wallet), list keys (never the keys themselves: they are stored hashed),
      or revoke one. Admin keys are unmetered. --json: the result as JSON.`,
  options: {
    tenant: { type: "string" },
    admin: { type: "boolean" },
    name: { type: "string" },
    data: { type: "string" },
    json: { type: "boolean" },
  },
  async run(values, args) {
    const store = KeyStore.open((values.data as string | undefined) ?? DEFAULT_DATA_DIR);
    const json = values.json === true;
    switch (args[0]) {
      case "create": {
        const { key, record } = store.create({
          tenant: values.tenant as string | undefined,
          admin: values.admin === true,
          name: values.name as string | undefined,
        });
        if (json) say(JSON.stringify({ key, id: record.id, tenant: record.tenant, admin: record.admin }));
        else {
          say(`key ${record.id} for tenant ${record.tenant}${record.admin ? " (admin)" : ""}; shown only now:`);
          say(`  ${key}`);
        }
        return 0;
      }
      case "list": {
        const keys = store.list().map(({ hash: _hash, ...r }) => r);
        if (json) say(JSON.stringify(keys));
        else
          for (const r of keys)
            say(
              `${r.id}  tenant ${r.tenant}${r.admin ? "  admin" : ""}  created ${new Date(r.createdAt).toISOString()}${r.revokedAt ? `  REVOKED ${new Date(r.revokedAt).toISOString()}` : ""}${r.name ? `  ${r.name}` : ""}`,
            );
        return 0;
      }
      case "revoke": {
        const id = args[1];
        if (id === undefined) throw new SvcError("E_BAD_REQUEST", "svc keys revoke needs a key id (see svc keys list)", { field: "id" });
        const r = store.revoke(id);
        say(json ? JSON.stringify({ revoked: r.id, tenant: r.tenant }) : `revoked ${r.id} (tenant ${r.tenant})`);
        return 0;
      }
      default:
        throw new SvcError("E_BAD_REQUEST", `svc keys needs create, list or revoke, got '${args[0] ?? ""}'`, { field: "action" });
    }
  },
};
