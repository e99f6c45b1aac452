/** @module views/admin — tenants with keys and balances; issue a key (shown once, with a copy button), revoke keys, credit a wallet. */
import { useRef, useState } from "preact/hooks";
import { api, ApiError, seg } from "../api.js";
import { Card, CheckField, ErrorNote, Show, Status, SubmitField, Table, useAction, useLoad, usd, when } from "../ui.js";

interface KeyView {
  id: string;
  tenant: string;
  admin: boolean;
  name: string;
  createdAt: number;
  revokedAt: number | null;
}
interface Tenant {
  tenant: string;
  keys: KeyView[];
  wallet: { balanceUsd: number; creditedUsd: number; spentUsd: number } | null;
}

function NewKey(props: { issued: KeyView & { key: string }; onDone: () => void }) {
  const input = useRef<HTMLInputElement>(null);
  const [copied, setCopied] = useState<string | null>(null);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(props.issued.key);
      setCopied("Copied to the clipboard.");
    } catch {
      input.current?.select();
      setCopied(document.execCommand("copy") ? "Copied to the clipboard." : "Select the key and copy it (Ctrl+C).");
    }
  };
  return (
    <div class="new-key" role="region" aria-labelledby="new-key-h" data-testid="new-key">
      <h3 id="new-key-h">New key for tenant {props.issued.tenant}</h3>
      <p>
        <strong>Copy it now: it is shown only once.</strong> The server keeps only its hash.
      </p>
      <div class="copy-row">
        <label for="new-key-value" class="visually-hidden">
          New API key
        </label>
        <input
          id="new-key-value"
          ref={input}
          readOnly
          value={props.issued.key}
          onFocus={(e) => e.currentTarget.select()}
          spellcheck={false}
        />
        <button type="button" onClick={copy}>
          Copy
        </button>
      </div>
      {copied && <Status>{copied}</Status>}
      <button type="button" class="secondary" onClick={props.onDone}>
        Done, hide it
      </button>
    </div>
  );
}

function CreateKey(props: { tenants: string[]; onCreated: () => void }) {
  const [tenant, setTenant] = useState("");
  const [name, setName] = useState("");
  const [admin, setAdmin] = useState(false);
  const [issued, setIssued] = useState<(KeyView & { key: string }) | null>(null);
  const { busy, error, run } = useAction();
  const submit = (e: Event) => {
    e.preventDefault();
    return run(async () => {
      const body: Record<string, unknown> = { name: name.trim(), admin };
      if (tenant.trim() !== "") body.tenant = tenant.trim();
      const k = await api<KeyView & { key: string }>("/v1/admin/keys", { body });
      setIssued(k);
      setName("");
      setTenant("");
      setAdmin(false);
      props.onCreated();
    });
  };
  return (
    <Card id="create-h" title="Issue a key">
      {issued ? (
        <NewKey issued={issued} onDone={() => setIssued(null)} />
      ) : (
        <form onSubmit={submit} class="form-grid">
          <div class="field">
            <label for="key-tenant">Tenant</label>
            <input
              id="key-tenant"
              list="tenant-list"
              value={tenant}
              onInput={(e) => setTenant(e.currentTarget.value)}
              placeholder="leave empty for a new tenant"
              aria-describedby="key-tenant-help"
              pattern="[a-z0-9][a-z0-9_\-]{0,63}"
            />
            <datalist id="tenant-list">
              {props.tenants.map((t) => (
                <option key={t} value={t} />
              ))}
            </datalist>
            <small id="key-tenant-help">An existing tenant gets another key; empty starts a new tenant with a fresh wallet.</small>
          </div>
          <div class="field">
            <label for="key-name">Name (optional)</label>
            <input
              id="key-name"
              value={name}
              maxLength={100}
              onInput={(e) => setName(e.currentTarget.value)}
              placeholder="e.g. laptop, CI"
            />
          </div>
          <CheckField id="key-admin" label="Admin key (unmetered, can manage keys)" checked={admin} onChange={setAdmin} />
          <SubmitField label="Create key" busy={busy} busyLabel="Creating…" />
        </form>
      )}
      <ErrorNote error={error} />
    </Card>
  );
}

function Credit(props: { tenant: string; onDone: (msg: string) => void }) {
  const [amount, setAmount] = useState("");
  const { error, run } = useAction();
  const id = `credit-${props.tenant}`;
  const submit = (e: Event) => {
    e.preventDefault();
    return run(async () => {
      const w = await api<{ balanceUsd: number }>(`/v1/admin/tenants/${seg(props.tenant)}/credit`, { body: { usd: Number(amount) } });
      setAmount("");
      props.onDone(`Credited ${props.tenant}: balance now ${usd(w.balanceUsd)}.`);
    });
  };
  return (
    <form onSubmit={submit} class="inline-form">
      <label for={id}>Credit (USD)</label>
      <input
        id={id}
        type="number"
        min="0.000001"
        step="any"
        required
        value={amount}
        onInput={(e) => setAmount(e.currentTarget.value)}
        inputMode="decimal"
      />
      <button type="submit">Add credit</button>
      <ErrorNote error={error} />
    </form>
  );
}

export function AdminView() {
  const tenants = useLoad((signal) => api<{ tenants: Tenant[] }>("/v1/admin/tenants", { signal }), []);
  const [message, setMessage] = useState<{ text: string; kind: "ok" | "error" } | null>(null);
  const done = (text: string) => {
    setMessage({ text, kind: "ok" });
    tenants.reload();
  };
  const revoke = async (k: KeyView) => {
    if (!confirm(`Revoke key ${k.id}${k.name ? ` (${k.name})` : ""} of tenant ${k.tenant}? It stops working at once.`)) return;
    try {
      await api(`/v1/admin/keys/${seg(k.id)}`, { method: "DELETE" });
      done(`Revoked ${k.id}.`);
    } catch (err) {
      setMessage({ text: (err as ApiError).message, kind: "error" });
    }
  };
  return (
    <>
      <h1>Admin</h1>
      <CreateKey tenants={tenants.data?.tenants.map((t) => t.tenant) ?? []} onCreated={tenants.reload} />
      <section class="card" aria-labelledby="tenants-h">
        <div class="title-row">
          <h2 id="tenants-h">Tenants</h2>
          <button type="button" onClick={tenants.reload}>
            Refresh
          </button>
        </div>
        {message && <Status kind={message.kind}>{message.text}</Status>}
        <Show value={tenants}>
          {(d) =>
            d.tenants.length === 0 ? (
              <p class="muted">No tenants yet.</p>
            ) : (
              <ul class="tenant-list">
                {d.tenants.map((t) => (
                  <li key={t.tenant} class="tenant" data-testid={`tenant-${t.tenant}`}>
                    <div class="tenant-head">
                      <h3>{t.tenant}</h3>
                      <span class="balance">
                        {t.wallet ? `balance ${usd(t.wallet.balanceUsd)} · spent ${usd(t.wallet.spentUsd)}` : "wallet not opened yet"}
                      </span>
                    </div>
                    <Table caption={<>Keys of {t.tenant}</>} hideCaption cols={["Key id", "Name", ["Created", "opt"], "State"]}>
                      {t.keys.map((k) => (
                        <tr key={k.id}>
                          <td>
                            <code>{k.id}</code>
                            {k.admin && <span class="badge">admin</span>}
                          </td>
                          <td>{k.name || "—"}</td>
                          <td class="opt">{when(k.createdAt)}</td>
                          <td>
                            <div class="state-cell">
                              {k.revokedAt === null ? "live" : `revoked ${when(k.revokedAt)}`}
                              {k.revokedAt === null && (
                                <button type="button" class="danger" onClick={() => revoke(k)} aria-label={`Revoke ${k.id}`}>
                                  Revoke
                                </button>
                              )}
                            </div>
                          </td>
                        </tr>
                      ))}
                    </Table>
                    <Credit tenant={t.tenant} onDone={done} />
                  </li>
                ))}
              </ul>
            )
          }
        </Show>
      </section>
    </>
  );
}
