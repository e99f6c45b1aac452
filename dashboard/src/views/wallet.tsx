/** @module views/wallet — the tenant's overview: balance and totals, a usage chart by operation, recent charges. */
import { useState } from "preact/hooks";
import { api } from "../api.js";
import { UsageChart, type UsageSeries } from "../chart.js";
import { Card, int, Show, Table, useLoad, usd, when, whenShort, type Who } from "../ui.js";

interface Wallet {
  tenant: string;
  balanceUsd: number;
  creditedUsd: number;
  spentUsd: number;
  unmetered: boolean;
  recent: Array<{ ts: number; op: string; costUsd: number; written: number; scanned: number }>;
}

const RANGES = {
  "15m": { label: "Last 15 minutes, per minute", grain: "minute", buckets: 15 },
  "1h": { label: "Last hour, per minute", grain: "minute", buckets: 60 },
  "2d": { label: "Last 2 days, per hour", grain: "hour", buckets: 48 },
  "30d": { label: "Last 30 days, per day", grain: "day", buckets: 30 },
} as const;

export function WalletView(props: { who: Who }) {
  const wallet = useLoad((signal) => api<Wallet>("/v1/wallet?limit=20", { signal }), []);
  const [range, setRange] = useState<keyof typeof RANGES>("1h");
  const [metric, setMetric] = useState<"costUsd" | "calls">("costUsd");
  const usage = useLoad(
    (signal) => api<UsageSeries>(`/v1/wallet/usage?grain=${RANGES[range].grain}&buckets=${RANGES[range].buckets}`, { signal }),
    [range],
  );
  const refresh = () => {
    wallet.reload();
    usage.reload();
  };
  return (
    <>
      <div class="title-row">
        <h1>Overview</h1>
        <button type="button" onClick={refresh}>
          Refresh
        </button>
      </div>
      <Card id="wallet-h" title={<>Wallet of {props.who.tenant}</>}>
        <Show value={wallet}>
          {(w) => (
            <>
              <div class="stats" data-testid="wallet">
                <div class="stat">
                  <span class="stat-label">Balance</span>
                  <span class="stat-value" data-testid="balance">
                    {usd(w.balanceUsd)}
                  </span>
                </div>
                <div class="stat">
                  <span class="stat-label">Credited</span>
                  <span class="stat-value">{usd(w.creditedUsd)}</span>
                </div>
                <div class="stat">
                  <span class="stat-label">Spent</span>
                  <span class="stat-value">{usd(w.spentUsd)}</span>
                </div>
              </div>
              {w.unmetered && <p class="note">This is an admin key: its own requests are not charged.</p>}
            </>
          )}
        </Show>
      </Card>
      <Card id="usage-h" title="Usage by operation">
        <div class="controls">
          <label>
            Range{" "}
            <select value={range} onChange={(e) => setRange(e.currentTarget.value as keyof typeof RANGES)}>
              {Object.entries(RANGES).map(([k, v]) => (
                <option key={k} value={k}>
                  {v.label}
                </option>
              ))}
            </select>
          </label>
          <label>
            Show{" "}
            <select value={metric} onChange={(e) => setMetric(e.currentTarget.value as "costUsd" | "calls")}>
              <option value="costUsd">Cost (USD)</option>
              <option value="calls">Calls</option>
            </select>
          </label>
        </div>
        <Show value={usage} what="The usage series">
          {(u) => <UsageChart series={u} metric={metric} />}
        </Show>
      </Card>
      <Card id="recent-h" title="Recent charges and credits">
        <Show value={wallet}>
          {(w) =>
            w.recent.length === 0 ? (
              <p class="muted">Nothing yet.</p>
            ) : (
              <Table testid="recent" cols={["Time", "Operation", ["Cost", "num"], ["Written", "num opt"], ["Scanned", "num opt"]]}>
                {w.recent.map((r, i) => (
                  <tr key={i}>
                    <td class="nowrap">
                      <time dateTime={new Date(r.ts).toISOString()} title={when(r.ts)}>
                        {whenShort(r.ts)}
                      </time>
                    </td>
                    <td class="break">{r.op}</td>
                    <td class="num">{r.costUsd < 0 ? <span class="ok">+{usd(-r.costUsd)}</span> : usd(r.costUsd)}</td>
                    <td class="num opt">{int(r.written)}</td>
                    <td class="num opt">{int(r.scanned)}</td>
                  </tr>
                ))}
              </Table>
            )
          }
        </Show>
      </Card>
    </>
  );
}
