/** /v1/trust over real HTTP: attestations stored and read by target (domains match their subdomains and endpoint URLs), newest first, refusals, append-only. */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call } from "../e2e/client.js";
import { startCommonsServer, type CommonsServer } from "../commons/commons-server.js";

describe("/v1/trust", () => {
  let srv: CommonsServer;
  const ids: string[] = [];

  beforeAll(async () => {
    srv = await startCommonsServer({});
  });
  afterAll(async () => {
    await srv?.dispose();
  });

  it("stores attestations and reads them by target, newest first", async () => {
    const writes = [
      {
        agent: "alpha",
        target: "api.acme.example",
        outcome: "worked",
        capability: "forecast",
        latency_ms: 120,
        note: "Fresh data at 14:00 UTC.",
      },
      { agent: "beta", target: "https://API.acme.example/v1/forecast?city=paris", outcome: "partial", note: "Stale after midnight." },
      { agent: "gamma", target: "acme.example", outcome: "failed", url: "https://api.acme.example/v1/forecast?city=paris" },
      { agent: "delta", target: "other.example", outcome: "unreachable" },
      { agent: "eps", target: "notacme.example", outcome: "worked" },
    ];
    for (const w of writes) {
      const r = await call(srv.url, null, "POST", "/v1/trust", w);
      expect(r.status).toBe(200);
      expect(r.body.id).toMatch(/^rec_[0-9a-f]{16}$/);
      expect(r.body).toMatchObject({ agent: w.agent, outcome: w.outcome });
      ids.push(r.body.id);
    }
    const first = await call(srv.url, null, "GET", "/v1/trust?target=api.acme.example");
    expect(first.body.records[0]).toMatchObject({ agent: "gamma", target: "acme.example", domain: "acme.example" });

    // a domain matches its subdomains and the endpoint URLs on it, newest first; not look-alike domains
    const dom = await call(srv.url, null, "GET", "/v1/trust?target=acme.example");
    expect(dom.status).toBe(200);
    expect(dom.body.records.map((r: { id: string }) => r.id)).toEqual([ids[2], ids[1], ids[0]]);
    expect(dom.body.notice).toMatch(/not ratings/);
    expect(
      (await call(srv.url, null, "GET", "/v1/trust?target=ACME.example&limit=1")).body.records.map((r: { id: string }) => r.id),
    ).toEqual([ids[2]]);
    // the URL is normalized (host lowercased) and matches records with that target or url
    const byUrl = await call(
      srv.url,
      null,
      "GET",
      `/v1/trust?target=${encodeURIComponent("https://api.acme.example/v1/forecast?city=paris")}`,
    );
    expect(byUrl.body.records.map((r: { id: string }) => r.id)).toEqual([ids[2], ids[1]]);
    expect(byUrl.body.records[1]).toMatchObject({ target: "https://api.acme.example/v1/forecast?city=paris", domain: "api.acme.example" });
    expect((await call(srv.url, null, "GET", "/v1/trust?target=nobody.example")).body.records).toEqual([]);

    const recent = await call(srv.url, null, "GET", "/v1/trust/recent");
    expect(recent.body.records.map((r: { id: string }) => r.id)).toEqual([...ids].reverse());
    expect((await call(srv.url, null, "GET", "/v1/trust/recent?limit=2")).body.records).toHaveLength(2);
  });

  it("refuses bad attestations with the reason and field", async () => {
    const ok = { agent: "alpha", target: "example.com", outcome: "worked" };
    const cases: Array<[Record<string, unknown>, string, string]> = [
      [{ ...ok, agent: undefined }, "E_REFUSED", "agent"],
      [{ ...ok, target: "" }, "E_REFUSED", "target"],
      [{ ...ok, target: "not a domain!" }, "E_BAD_REQUEST", "target"],
      [{ ...ok, target: "ftp://example.com/file" }, "E_BAD_REQUEST", "target"],
      [{ ...ok, outcome: "great" }, "E_BAD_REQUEST", "outcome"],
      [{ ...ok, outcome: undefined }, "E_BAD_REQUEST", "outcome"],
      [{ ...ok, latency_ms: -1 }, "E_BAD_REQUEST", "latency_ms"],
      [{ ...ok, latency_ms: 1.5 }, "E_BAD_REQUEST", "latency_ms"],
      [{ ...ok, url: "javascript:alert(1)" }, "E_BAD_REQUEST", "url"],
      [{ ...ok, note: "ok \u202e" }, "E_REFUSED", "note"],
      [{ ...ok, note: `see ${"ab12".repeat(30)}` }, "E_REFUSED", "note"],
      [{ ...ok, note: "x ".repeat(1001) }, "E_REFUSED", "note"],
      [{ ...ok, capability: "two\nlines" }, "E_REFUSED", "capability"],
    ];
    for (const [body, code, field] of cases) {
      const r = await call(srv.url, null, "POST", "/v1/trust", body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.error, JSON.stringify(body)).toMatchObject({ code, field });
    }
    expect((await call(srv.url, null, "GET", "/v1/trust")).body.error).toMatchObject({ code: "E_BAD_REQUEST", field: "target" });
    expect((await call(srv.url, null, "GET", "/v1/trust?target=example.com&limit=0")).body.error).toMatchObject({ field: "limit" });
    expect((await call(srv.url, null, "GET", "/v1/trust/recent")).body.records).toHaveLength(5);
  });

  it("cannot be edited or deleted by anyone, and survives a restart", async () => {
    for (const method of ["DELETE", "PATCH", "PUT"]) {
      for (const path of ["/v1/trust", "/v1/trust/recent", `/v1/trust/${ids[0]}`]) {
        const r = await call(srv.url, null, method, path, method === "DELETE" ? undefined : { outcome: "worked" });
        expect([404, 405], `${method} ${path}`).toContain(r.status);
      }
    }
    const before = (await call(srv.url, null, "GET", "/v1/trust/recent?limit=100")).body;
    await srv.restart();
    expect((await call(srv.url, null, "GET", "/v1/trust/recent?limit=100")).body).toEqual(before);
  });
});
