/**
 * The business directory over real HTTP against the built `svc serve` (seeded with the shipped
 * demo on first start): search and paging, profile JSON, pages with JSON-LD, llms-full.txt,
 * admin claim and booking, availability, consultation requests up to the 429 of the 11th write,
 * and `svc directory import` into a fresh data dir (which is then not seeded).
 */
import { writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startServerProcess, type ServerProcess } from "../e2e/server-process.js";
import { call, cli, type Reply } from "../e2e/client.js";

function expectError(r: Reply, status: number, code: string, field?: string): void {
  expect(r.status, r.raw.toString()).toBe(status);
  expect(r.body.error.code, r.raw.toString()).toBe(code);
  expect(typeof r.body.error.message).toBe("string");
  if (field !== undefined) expect(r.body.error.field).toBe(field);
}

const BOOKING = {
  utc_offset: "+01:00",
  hours: { mon: ["09:00-17:00"], tue: ["09:00-17:00"], wed: ["09:00-17:00"], thu: ["09:00-17:00"], fri: ["09:00-17:00"] },
  slot_minutes: 60,
  questions: [{ text: "What do you need?", required: true }],
};

describe("business directory over HTTP (svc serve process, demo data)", () => {
  let srv: ServerProcess;
  let admin: string;
  beforeAll(async () => {
    srv = await startServerProcess();
    admin = srv.adminKey!;
  });
  afterAll(async () => {
    await srv?.dispose();
  });

  it("GET /health is {ok: true}", async () => {
    const r = await call(srv.url, null, "GET", "/health");
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ ok: true });
  });

  it("pages through all 300 demo profiles by following next; q, category and partial matches work; bad paging is a 400", async () => {
    const seen: string[] = [];
    let path: string | null = "/api/businesses?limit=100";
    let pages = 0;
    while (path !== null) {
      const r = await call(srv.url, null, "GET", path);
      expect(r.status, r.raw.toString()).toBe(200);
      expect(r.body).toMatchObject({ total: 300, limit: 100, offset: pages * 100 });
      seen.push(...r.body.results.map((x: { id: string }) => x.id));
      path = r.body.next;
      pages++;
    }
    expect(pages).toBe(3);
    expect(new Set(seen).size).toBe(300);

    const dentists = await call(srv.url, null, "GET", "/api/businesses?category=dentist&limit=100");
    expect(dentists.body.total).toBeGreaterThan(0);
    for (const x of dentists.body.results) expect(x.category.value).toBe("Dentist");
    const town = dentists.body.results[0].areas.value[0] as string;
    const all = await call(srv.url, null, "GET", `/api/businesses?q=dentist+${encodeURIComponent(town)}`);
    expect(all.body.total).toBeGreaterThan(0);
    expect(all.body.match).toBe("all");
    for (const x of all.body.results) expect(x.match).toBe("all");
    const partial = await call(srv.url, null, "GET", `/api/businesses?q=${encodeURIComponent("dentist xylophone")}`);
    expect(partial.body.match).toBe("partial");
    expect(partial.body.total).toBe(dentists.body.total);
    for (const x of partial.body.results) expect(x).toMatchObject({ match: "partial", matched: ["dentist"] });
    const none = await call(srv.url, null, "GET", "/api/businesses?q=xylophone");
    expect(none.body).toMatchObject({ total: 0, match: "none", results: [], next: null });

    expectError(await call(srv.url, null, "GET", "/api/businesses?limit=0"), 400, "E_BAD_REQUEST", "limit");
    expectError(await call(srv.url, null, "GET", "/api/businesses?limit=101"), 400, "E_BAD_REQUEST", "limit");
    expectError(await call(srv.url, null, "GET", "/api/businesses?offset=-1"), 400, "E_BAD_REQUEST", "offset");
    expectError(await call(srv.url, null, "GET", "/api/businesses?limit=abc"), 400, "E_BAD_REQUEST", "limit");
  });

  it("plurals and inflections fold through the stemmer: bakeries finds what bakery finds", async () => {
    const ids = async (q: string) => {
      const r = await call(srv.url, null, "GET", `/api/businesses?q=${encodeURIComponent(q)}&limit=100`);
      expect(r.status, r.raw.toString()).toBe(200);
      return { total: r.body.total as number, ids: (r.body.results as Array<{ id: string }>).map((x) => x.id) };
    };
    const bakery = await ids("bakery");
    expect(bakery.total).toBeGreaterThan(0);
    expect(await ids("bakeries")).toEqual(bakery);
    expect(await ids("Bakeries")).toEqual(bakery);
    const dentist = await ids("dentist");
    expect(dentist.total).toBeGreaterThan(0);
    expect(await ids("dentists")).toEqual(dentist);
  });

  it("profile, services, trust, actions: every field {value, state, source}; unknown ids are 404 naming id", async () => {
    const first = (await call(srv.url, null, "GET", "/api/businesses?q=plumber&limit=1")).body.results[0];
    const id = first.id as string;
    const p = await call(srv.url, null, "GET", `/api/businesses/${id}`);
    expect(p.status).toBe(200);
    expect(p.body).toMatchObject({ id, page: `/businesses/${id}` });
    // every member but the service's handles (id, page) is a fact about the business: {value, state, source}
    const wrapped = Object.keys(p.body).filter((k) => k !== "id" && k !== "page");
    expect(wrapped).toEqual(
      expect.arrayContaining([
        "listed",
        "claim",
        "verification",
        "bookable",
        "updated",
        "name",
        "category",
        "description",
        "services",
        "website",
        "email",
        "phone",
        "address",
      ]),
    );
    for (const f of wrapped) {
      expect(Object.keys(p.body[f]).sort(), f).toEqual(["source", "state", "value"]);
      expect(Object.keys(p.body[f].source).sort(), f).toEqual(["asserted_by", "date", "url"]);
      expect(p.body[f].source.date, f).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    }
    expect(p.body.claim).toMatchObject({
      value: expect.stringMatching(/^(un)?claimed$/),
      state: "verified",
      source: { url: null, asserted_by: "operator" },
    });
    expect(typeof p.body.listed.value).toBe("boolean");
    expect(typeof p.body.bookable.value).toBe("boolean");
    expect(p.body.verification.value).toMatch(/^(un)?verified$/);
    expect(Date.parse(p.body.updated.value)).not.toBeNaN();
    for (const f of ["claim", "bookable"]) expect(first[f], f).toEqual(p.body[f]); // the search result carries the same facts
    const s = await call(srv.url, null, "GET", `/api/businesses/${id}/services`);
    expect(s.body.services).toEqual(p.body.services);
    const t = await call(srv.url, null, "GET", `/api/businesses/${id}/trust`);
    expect(t.body.claim).toEqual(p.body.claim);
    expect(t.body.verification).toEqual(p.body.verification);
    expect(t.body.fields.name).toEqual({ state: p.body.name.state, source: p.body.name.source });
    const unclaimed = (await call(srv.url, null, "GET", "/api/businesses?limit=100")).body.results.find(
      (x: { claim: { value: string } }) => x.claim.value === "unclaimed",
    ).id;
    expect((await call(srv.url, null, "GET", `/api/businesses/${unclaimed}/actions`)).body).toEqual({ id: unclaimed, actions: [] });
    expectError(
      await call(srv.url, null, "GET", `/api/businesses/${unclaimed}/availability?start=2026-06-01T00:00:00Z&end=2026-06-02T00:00:00Z`),
      409,
      "not_available",
    );
    for (const suffix of ["", "/services", "/trust", "/actions"])
      expectError(await call(srv.url, null, "GET", `/api/businesses/no-such-business${suffix}`), 404, "E_NOT_FOUND", "id");
  });

  it("profile pages are HTML with JSON-LD carrying svc:state:<field>, isBasedOn and dateModified; llms-full.txt has one line per listed profile", async () => {
    const id = (await call(srv.url, null, "GET", "/api/businesses?limit=1")).body.results[0].id as string;
    const page = await call(srv.url, null, "GET", `/businesses/${id}`);
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toBe("text/html; charset=utf-8");
    const html = page.raw.toString();
    const m = /<script type="application\/ld\+json">([\s\S]*?)<\/script>/.exec(html);
    const ld = JSON.parse(m![1]!);
    expect(ld["@context"]).toBe("https://schema.org");
    expect(ld.identifier).toBe(id);
    expect(ld.isBasedOn[0]).toMatch(/^https:\/\/.*\.example\/$/);
    expect(ld.dateModified).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    const names = ld.additionalProperty.map((x: { name: string }) => x.name);
    for (const f of ["name", "category", "services", "website"]) expect(names).toContain(`svc:state:${f}`);
    expect(ld["@id"]).toBe(`${srv.url.replace("127.0.0.1", "127.0.0.1")}/businesses/${id}#business`);

    const search = await call(srv.url, null, "GET", "/businesses?q=plumber");
    expect(search.status).toBe(200);
    expect(search.raw.toString()).toContain(`href="/businesses/`);

    const llms = await call(srv.url, null, "GET", "/llms-full.txt");
    expect(llms.headers.get("content-type")).toBe("text/plain; charset=utf-8");
    const lines = llms.raw
      .toString()
      .split("\n")
      .filter((l) => l.startsWith("- "));
    expect(lines).toHaveLength(300);
    expect(lines.some((l) => l.includes(`/businesses/${id})`))).toBe(true);
    // unlisting removes the line
    expect((await call(srv.url, admin, "POST", `/api/admin/businesses/${id}/listing`, { listed: false })).status).toBe(200);
    const after = (await call(srv.url, null, "GET", "/llms-full.txt")).raw
      .toString()
      .split("\n")
      .filter((l) => l.startsWith("- "));
    expect(after).toHaveLength(299);
    expect((await call(srv.url, null, "GET", "/api/businesses?limit=1")).body.total).toBe(299);
    expect((await call(srv.url, admin, "POST", `/api/admin/businesses/${id}/listing`, { listed: true })).status).toBe(200);
  });

  it("admin claims and turns booking on; availability; consultation requests: 201, double booking 409, unconfirmed 400, the 11th write in 10 minutes 429", async () => {
    const id = (await call(srv.url, null, "GET", "/api/businesses?q=accountant&limit=100")).body.results.find(
      (x: { claim: { value: string } }) => x.claim.value === "unclaimed",
    ).id as string;
    expectError(
      await call(srv.url, null, "POST", `/api/admin/businesses/${id}/claim`, { owner: { name: "O", email: "o@x.example" } }),
      401,
      "E_AUTH",
    );
    expectError(await call(srv.url, admin, "POST", `/api/admin/businesses/${id}/booking`, { booking: BOOKING }), 409, "E_CONFLICT", "id");
    expect(
      (await call(srv.url, admin, "POST", `/api/admin/businesses/${id}/claim`, { owner: { name: "Owner", email: "owner@acct.example" } }))
        .body.claim.value,
    ).toBe("claimed");
    expect((await call(srv.url, null, "GET", `/api/businesses/${id}/actions`)).body.actions).toEqual([]);
    expectError(
      await call(srv.url, admin, "POST", `/api/admin/businesses/${id}/booking`, { booking: { ...BOOKING, slot_minutes: 3 } }),
      400,
      "E_BAD_REQUEST",
      "booking.slot_minutes",
    );
    const on = await call(srv.url, admin, "POST", `/api/admin/businesses/${id}/booking`, { booking: BOOKING });
    expect(on.status, on.raw.toString()).toBe(200);
    expect(on.body.bookable).toMatchObject({ value: true, state: "verified" });
    const owner = await call(srv.url, admin, "PATCH", `/api/admin/businesses/${id}/fields`, { fields: { phone: "+44 20 7946 0111" } });
    expect(owner.body.phone).toMatchObject({ value: "+44 20 7946 0111", state: "owner_asserted" });
    expect((await call(srv.url, null, "GET", `/api/businesses/${id}/actions`)).body.actions[0].type).toBe("consultation_request");

    const day = 86_400_000;
    const start = new Date(Math.ceil(Date.now() / day) * day + day).toISOString(); // a midnight at least a day ahead
    const end = new Date(Date.parse(start) + 7 * day).toISOString();
    const av = await call(srv.url, null, "GET", `/api/businesses/${id}/availability?start=${start}&end=${end}`);
    expect(av.status, av.raw.toString()).toBe(200);
    expect(av.body.slots.length).toBe(5 * 8);
    expectError(
      await call(
        srv.url,
        null,
        "GET",
        `/api/businesses/${id}/availability?start=${start}&end=${new Date(Date.parse(start) + 15 * day).toISOString()}`,
      ),
      400,
      "E_BAD_REQUEST",
      "end",
    );
    expectError(
      await call(srv.url, null, "GET", `/api/businesses/${id}/availability?start=2026-06-01T09:00:00&end=${end}`),
      400,
      "E_BAD_REQUEST",
      "start",
    );

    const [a, b] = av.body.slots as Array<{ start: string }>;
    const req = (slot: string, extra: Record<string, unknown> = {}) =>
      call(srv.url, null, "POST", `/api/businesses/${id}/consultation-request`, {
        start: slot,
        customer: { name: "Ana", email: "ana@customer.example" },
        company: "Ana Ltd",
        answers: { "What do you need?": "Year-end accounts" },
        customer_confirmed: true,
        agent: { name: "http-test" },
        ...extra,
      });
    let writes = 0;
    const ok = await req(a!.start);
    writes++;
    expect(ok.status, ok.raw.toString()).toBe(201);
    expect(ok.body).toMatchObject({
      business: id,
      start: a!.start,
      customer: { name: "Ana", email: "ana@customer.example" },
      company: "Ana Ltd",
      status: "requested",
      customer_confirmed: true,
    });
    const utc = new Date(Date.parse(a!.start)).toISOString(); // the same instant, another offset
    expectError(await req(utc), 409, "E_CONFLICT", "start");
    writes++;
    expectError(await req(b!.start, { customer_confirmed: false }), 400, "E_BAD_REQUEST", "customer_confirmed");
    writes++;
    expectError(await req(b!.start, { customer: { name: "Ana" } }), 400, "E_BAD_REQUEST", "customer.email");
    writes++;
    expectError(await call(srv.url, null, "POST", "/api/businesses/no-such-business/consultation-request", {}), 404, "E_NOT_FOUND");
    writes++; // refused attempts count too
    const left = (await call(srv.url, null, "GET", `/api/businesses/${id}/availability?start=${start}&end=${end}`)).body.slots.map(
      (s: { start: string }) => s.start,
    );
    expect(left).not.toContain(a!.start);
    expect(left).toContain(b!.start);
    const list = await call(srv.url, admin, "GET", `/api/admin/businesses/${id}/requests`);
    expect(list.body.requests.map((r: { id: string }) => r.id)).toEqual([ok.body.id]);

    for (const slot of (av.body.slots as Array<{ start: string }>).slice(2)) {
      if (writes === 10) break;
      expect((await req(slot.start)).status).toBe(201);
      writes++;
    }
    const limited = await req(av.body.slots[20].start);
    expectError(limited, 429, "rate_limited");
    expect(Number(limited.headers.get("retry-after"))).toBeGreaterThan(0);
    // reads are not limited
    expect((await call(srv.url, null, "GET", `/api/businesses/${id}`)).status).toBe(200);
  });
});

describe("svc directory import", () => {
  it("imports a CSV into a data dir with progress on stderr; the server then serves it and does not seed the demo", async () => {
    const data = await mkdtemp(join(tmpdir(), "svc-dir-cli-"));
    const file = join(data, "in.csv");
    writeFileSync(
      file,
      "id,name,category,services,locality,country\noak,Oak Plumbing,Plumber,boiler repair;leak detection,Bristol,GB\nelm,Elm Dental,Dentist,implants,Bath,GB\nbad,,Dentist,,,\n",
    );
    try {
      const r = await cli(["directory", "import", file, "--data", data]);
      expect(r.code, r.stderr).toBe(2); // one line was rejected
      expect(r.stderr).toContain("import ");
      expect(r.stderr).toMatch(/100%/);
      expect(r.stderr).toContain("\nline 4: name: is required\n");
      expect(r.stdout).toMatch(/2 created, 0 updated, 1 rejected; 2 businesses/);
      const again = await cli(["directory", "import", file, "--data", data, "--json"]);
      expect(JSON.parse(again.stdout)).toEqual({ lines: 3, created: 0, updated: 2, rejected: 1, businesses: 2 });
      expect((await cli(["directory", "import", join(data, "missing.jsonl"), "--data", data])).code).toBe(2);
      const srv = await startServerProcess({ dataDir: data });
      try {
        const all = await call(srv.url, null, "GET", "/api/businesses");
        expect(all.body.results.map((x: { id: string }) => x.id)).toEqual(["elm", "oak"]);
      } finally {
        await srv.stop();
      }
    } finally {
      await rm(data, { recursive: true, force: true });
    }
  });
});
