import { existsSync, mkdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { chromium, type Browser, type BrowserContext, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call } from "./client.js";
import { startServerProcess, type ServerProcess } from "./server-process.js";
import { until } from "./until.js";

// The dashboard end to end in a real browser (Debian's chromium, driven by playwright-core) against
// the built `svc serve` process: the admin signs in and issues a key; records ingested through the
// API show up in the tenant's timeline and search; the wallet shown drops by what was charged.
// Screenshots go to test-artifacts/ (gitignored).

const CHROMIUM = process.env.SVC_CHROMIUM ?? "/usr/bin/chromium";
const ARTIFACTS = fileURLToPath(new URL("../../test-artifacts/", import.meta.url));
const DESKTOP = { width: 1280, height: 900 };
const PHONE = { width: 375, height: 812 };

/** Runs in the page: form controls without an accessible name. */
function unlabelled(): string[] {
  const out: string[] = [];
  for (const el of document.querySelectorAll<HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement>("input, select, textarea")) {
    if (el.type === "hidden" || el.offsetParent === null) continue;
    const named = (el.labels?.length ?? 0) > 0 || el.getAttribute("aria-label") || el.getAttribute("aria-labelledby");
    if (!named) out.push(el.outerHTML.slice(0, 120));
  }
  for (const el of document.querySelectorAll<HTMLElement>("button, a[href]")) {
    if (el.offsetParent === null) continue;
    if ((el.getAttribute("aria-label") ?? el.textContent ?? "").trim() === "") out.push(el.outerHTML.slice(0, 120));
  }
  return out;
}

/** Runs in the page: visible text whose WCAG contrast against its (opaque) background is below 4.5:1 (3:1 for large text). */
function lowContrast(): string[] {
  const rgb = (c: string) => (c.match(/[\d.]+/g) ?? []).map(Number);
  const lum = ([r, g, b]: number[]) => {
    const f = (v: number) => ((v /= 255) <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4);
    return 0.2126 * f(r!) + 0.7152 * f(g!) + 0.0722 * f(b!);
  };
  const background = (el: Element | null): number[] => {
    for (; el; el = el.parentElement) {
      const c = rgb(getComputedStyle(el).backgroundColor);
      if (c.length >= 3 && (c[3] === undefined || c[3] > 0.9)) return c;
    }
    return [255, 255, 255];
  };
  const out: string[] = [];
  for (const el of document.querySelectorAll<HTMLElement>("body *")) {
    if (el.closest("svg") || el.offsetParent === null) continue;
    const text = [...el.childNodes]
      .filter((n) => n.nodeType === 3)
      .map((n) => n.textContent ?? "")
      .join("")
      .trim();
    if (text === "") continue;
    const s = getComputedStyle(el);
    if ((el as HTMLButtonElement).disabled) continue; // disabled controls are exempt (WCAG 1.4.3)
    const a = lum(rgb(s.color));
    const b = lum(background(el));
    const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
    const size = parseFloat(s.fontSize);
    const large = size >= 24 || (size >= 18.66 && Number(s.fontWeight) >= 700);
    if (ratio < (large ? 3 : 4.5)) out.push(`${ratio.toFixed(2)} "${text.slice(0, 40)}" ${s.color} on ${background(el).join(",")}`);
  }
  return out;
}

/** Runs in the page: content wider than the viewport (horizontal scrolling of the whole page). */
function overflow(): number {
  return document.documentElement.scrollWidth - window.innerWidth;
}

const money = (s: string | null) => Number((s ?? "").replace(/[^0-9.-]/g, ""));

describe("dashboard in a real browser", () => {
  let srv: ServerProcess;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  const problems: string[] = [];

  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium (or set SVC_CHROMIUM)`);
    mkdirSync(ARTIFACTS, { recursive: true });
    srv = await startServerProcess();
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"],
    });
    context = await browser.newContext({ viewport: DESKTOP });
    // the suite runs beside ~80 other test files on two cores: give the browser room before calling it stuck
    context.setDefaultTimeout(60_000);
    page = await context.newPage();
    // Uncaught exceptions and console errors (CSP violations among them) fail the test; failed
    // loads are expected where a public feature answers 404 and are shown as notes instead.
    page.on("pageerror", (e) => problems.push(`pageerror: ${e.message}`));
    page.on("console", (m) => {
      if (m.type() === "error" && !m.text().startsWith("Failed to load resource")) problems.push(`console: ${m.text()}`);
    });
    page.on("dialog", (d) => void d.accept());
  }, 90_000);

  afterAll(async () => {
    await browser?.close();
    await srv?.dispose();
  });

  const shot = (name: string) => page.screenshot({ path: `${ARTIFACTS}${name}.png`, fullPage: true });

  async function checkPage(where: string) {
    expect(await page.evaluate(unlabelled), `${where}: controls without a name`).toEqual([]);
    expect(await page.evaluate(lowContrast), `${where}: low contrast`).toEqual([]);
    expect(await page.evaluate(overflow), `${where}: wider than the viewport`).toBeLessThanOrEqual(0);
  }

  /** Keyboard only: Tab to the key field, type, Enter. On a fresh load the first Tab stop is the skip link. */
  async function signIn(key: string, fresh = false) {
    if (fresh) {
      await page.goto(`${srv.url}/dashboard#/signin`);
      await page.getByLabel("API key").waitFor();
      await page.keyboard.press("Tab");
      expect(await page.evaluate(() => document.activeElement?.textContent)).toBe("Skip to content");
    } else await page.getByLabel("API key").waitFor();
    for (let i = 0; i < 12 && (await page.evaluate(() => document.activeElement?.id)) !== "api-key"; i++) await page.keyboard.press("Tab");
    expect(await page.evaluate(() => document.activeElement?.id)).toBe("api-key");
    await page.keyboard.type(key);
    // every keystroke reached the field before Enter submits it (a loaded machine's renderer may take more than
    // vitest's default second; lost keystrokes fail here: after Sign out, a late hashchange once moved the focus away)
    await expect.poll(() => page.inputValue("#api-key"), { timeout: 15_000 }).toBe(key);
    await page.keyboard.press("Enter");
    // signed in, or the sign-in form shows why not (then fail with its words, not a timeout)
    const signedIn = page.getByRole("button", { name: "Sign out" });
    const refused = page.locator("#signin-error p");
    await signedIn.or(refused).first().waitFor();
    if (!(await signedIn.isVisible())) {
      await shot("dashboard-signin-refused");
      expect.fail(`sign-in refused: ${await page.locator("#signin-error").textContent()}`);
    }
    // the key is kept for this tab only, and never in the URL
    expect(await page.evaluate(() => sessionStorage.getItem("svc.apiKey"))).toBe(key);
    expect(page.url()).not.toContain(key);
  }

  it("admin issues a key; the tenant sees its records in the timeline and search, and its wallet drop", async () => {
    // -- admin: sign in, issue a key for tenant "acme"
    await signIn(srv.adminKey!, true);
    await page.getByRole("link", { name: "Admin" }).click();
    await page.getByRole("heading", { name: "Issue a key" }).waitFor();
    await page.getByLabel("Tenant", { exact: true }).fill("acme");
    await page.getByLabel("Name (optional)").fill("e2e laptop");
    await page.getByRole("button", { name: "Create key" }).click();
    const keyBox = page.getByLabel("New API key");
    await keyBox.waitFor();
    const key = await keyBox.inputValue();
    expect(key).toMatch(/^svc_[A-Za-z0-9_-]{20,}$/);
    await page.getByTestId("tenant-acme").waitFor();
    expect(await page.getByTestId("tenant-acme").textContent()).toContain("e2e laptop");
    await checkPage("admin");
    await shot("dashboard-admin-desktop");
    await page.getByRole("button", { name: "Done, hide it" }).click();
    expect(await page.getByLabel("New API key").count()).toBe(0); // shown once

    // -- tenant: sign in with the new key; the overview shows the opening balance
    await page.getByRole("button", { name: "Sign out" }).click();
    await signIn(key);
    expect(await page.getByRole("link", { name: "Admin" }).count()).toBe(0);
    const balance = page.getByTestId("balance");
    await balance.waitFor();
    const before = money(await balance.textContent());
    const w0 = await call(srv.url, key, "GET", "/v1/wallet");
    expect(before).toBe(Number(w0.body.balanceUsd.toFixed(6)));

    // -- records ingested through the API, 25 with distinct times so the timeline pages 20 + 5
    const t0 = Date.UTC(2026, 0, 1);
    const items = Array.from({ length: 25 }, (_, i) => ({
      kind: i % 5 === 0 ? "decision" : "note",
      text: `note number ${i} about the garden`,
      tags: ["bulk"],
      ts: t0 + i * 60_000,
    }));
    items[7] = {
      kind: "decision",
      text: "We serve HTTP with uWebSockets.js because it is fast",
      tags: ["http", "bulk"],
      ts: t0 + 7 * 60_000,
    };
    const ingested = await call(srv.url, key, "POST", "/v1/records/notes", { items });
    expect(ingested.status).toBe(200);
    await until(
      "the records to be visible",
      () => call(srv.url, key, "GET", "/v1/records/notes/stats"),
      (r) => r.body.count === 25,
    );

    await page.getByRole("link", { name: "Records" }).click();
    await page.getByRole("link", { name: "notes" }).click();
    await page.getByRole("heading", { name: "Namespace notes" }).waitFor();
    expect(await page.getByTestId("record-count").textContent()).toBe("25");
    const timeline = page.getByTestId("timeline");
    await timeline.waitFor();
    await until(
      "the first page",
      () => timeline.locator("li").count(),
      (n) => n === 20,
    );
    expect(await timeline.locator("li").first().textContent()).toContain("note number 24");
    await page.getByRole("button", { name: "Load older" }).click();
    await until(
      "the second page",
      () => timeline.locator("li").count(),
      (n) => n === 25,
    );
    expect(await timeline.locator("li").last().textContent()).toContain("note number 0");
    expect(await page.getByRole("button", { name: "Load older" }).count()).toBe(0);

    // -- search by meaning, filtered by kind; results carry scores
    await page.getByLabel("Text (by meaning; empty lists newest first)").fill("which web server do we use");
    await page.getByLabel("Kind").selectOption("decision");
    await page.getByRole("button", { name: "Search", exact: true }).click();
    const results = page.getByTestId("search-results");
    await results.waitFor();
    const first = results.locator("li").first();
    expect(await first.textContent()).toContain("uWebSockets.js");
    expect(await first.locator(".score").textContent()).toMatch(/^score 0\.\d{4}$/);
    for (const li of await results.locator("li").all()) expect(await li.locator(".badge").textContent()).toBe("decision");
    // the score shown is the cosine (the default mode), far above any hybrid score (at most 2/61 = 0.0328)
    const scoreOf = async () => Number((await results.locator("li").first().locator(".score").textContent())!.replace("score ", ""));
    expect(await scoreOf()).toBeGreaterThan(0.1);
    // the Hybrid box sends mode "hybrid", and the scores shown are then the fused rank scores
    await page.getByLabel("Hybrid (meaning + keywords)").check();
    const [sent] = await Promise.all([
      page.waitForRequest((r) => r.url().endsWith("/v1/records/notes/query") && r.method() === "POST"),
      page.getByRole("button", { name: "Search", exact: true }).click(),
    ]);
    expect(sent.postDataJSON()).toMatchObject({ text: "which web server do we use", mode: "hybrid", kind: ["decision"] });
    await until("the hybrid scores", scoreOf, (s) => s <= 2 / 61 + 1e-4);
    expect(await results.locator("li").first().textContent()).toContain("uWebSockets.js");
    await page.getByLabel("Hybrid (meaning + keywords)").uncheck();
    await checkPage("records");
    await shot("dashboard-records-desktop");

    // -- export the namespace as a .svc file, then import that file back (replaces it: still 25)
    const [download] = await Promise.all([page.waitForEvent("download"), page.getByRole("button", { name: "Export .svc" }).click()]);
    expect(download.suggestedFilename()).toBe("notes.svc");
    const saved = `${ARTIFACTS}notes.svc`;
    await download.saveAs(saved);
    await page.getByText(/^Exported notes\.svc \(/).waitFor();
    await page.getByLabel("Container file (.svc)").setInputFiles(saved);
    await page.getByRole("button", { name: "Import", exact: true }).click();
    await page.getByText("Imported 25 records.").waitFor();
    await until(
      "the import to be visible",
      () => page.getByTestId("record-count").textContent(),
      (t) => t === "25",
    );

    // -- the overview: the balance dropped by what the API charged (ingest, stats, timeline, query...)
    await page.getByRole("link", { name: "Overview" }).click();
    await balance.waitFor();
    const w1 = await call(srv.url, key, "GET", "/v1/wallet");
    const after = money(await balance.textContent());
    expect(after).toBeLessThan(before);
    expect(after).toBe(Number(w1.body.balanceUsd.toFixed(6)));
    expect(await page.getByTestId("recent").textContent()).toContain("records_ingest");
    await page.getByTestId("usage-chart").waitFor();
    expect(await page.locator(".legend").textContent()).toContain("records_ingest");
    await checkPage("overview");
    await shot("dashboard-overview-desktop");

    // -- phone width: the same pages fit 375 px without sideways scrolling
    await page.setViewportSize(PHONE);
    await page.waitForTimeout(100); // the chart re-measures its box
    await checkPage("overview (phone)");
    await shot("dashboard-overview-phone");
    await page.goto(`${srv.url}/dashboard#/records/notes`);
    await page.getByTestId("timeline").waitFor();
    await checkPage("records (phone)");
    await shot("dashboard-records-phone");
    await page.setViewportSize(DESKTOP);

    // -- models and indexes pages render for the tenant
    expect(
      (await call(srv.url, key, "POST", "/v1/hd/kg/family/facts", { facts: [{ subject: "ann", relation: "parent", object: "bo" }] }))
        .status,
    ).toBe(200);
    await page.getByRole("link", { name: "Models" }).click();
    await page.getByRole("heading", { name: "family" }).waitFor();
    // a 1024-d index holding two embedded texts: the query box finds the closer one by text
    expect((await call(srv.url, key, "POST", "/v1/indexes", { name: "docs", dimension: 1024 })).status).toBe(201);
    const texts = ["the cat sat on the warm mat", "quarterly revenue grew in the north region"];
    const emb = await call(srv.url, key, "POST", "/v1/embed", { texts });
    const vectors = texts.map((_, i) => ({ id: `doc-${i}`, values: emb.body.vectors[i], metadata: { i } }));
    expect((await call(srv.url, key, "POST", "/v1/indexes/docs/vectors/upsert", { vectors, namespace: "web" })).status).toBe(200);
    await until(
      "the vectors to be visible",
      () => call(srv.url, key, "GET", "/v1/indexes/docs/describe_index_stats"),
      (r) => r.body.totalVectorCount === 2,
    );
    await page.getByRole("link", { name: "Indexes" }).click();
    await page.getByRole("link", { name: "docs" }).click();
    await page.getByRole("heading", { name: "Index docs" }).waitFor();
    await page.getByLabel("Text", { exact: true }).fill("a cat on a mat");
    await page.getByRole("button", { name: "Query", exact: true }).click();
    const matches = page.getByRole("table").filter({ hasText: "matches, best first" });
    await matches.waitFor();
    expect(await matches.locator("tbody tr").first().textContent()).toContain("doc-0");
    await checkPage("index");

    // -- admin again: credit the tenant, then revoke its key
    await page.getByRole("button", { name: "Sign out" }).click();
    await signIn(srv.adminKey!);
    await page.getByRole("link", { name: "Admin" }).click();
    const acme = page.getByTestId("tenant-acme");
    await acme.waitFor();
    await acme.getByLabel("Credit (USD)").fill("1.5");
    await acme.getByRole("button", { name: "Add credit" }).click();
    await page.getByText("Credited acme").waitFor();
    const w2 = await call(srv.url, key, "GET", "/v1/wallet");
    expect(Math.round((w2.body.creditedUsd - w1.body.creditedUsd) * 1e9)).toBe(1_500_000_000);
    await acme.getByRole("button", { name: /^Revoke key_/ }).click();
    await page.getByText(/^Revoked key_/).waitFor();
    expect((await call(srv.url, key, "GET", "/v1/wallet")).status).toBe(401);

    expect(problems).toEqual([]);
  }, 180_000);

  it("the public views work without a key: board threads with verdicts, files and working notes; directory search and profiles", async () => {
    const pub = await browser.newPage({ viewport: PHONE });
    const errors: string[] = [];
    pub.on("pageerror", (e) => errors.push(e.message));
    const keyed: string[] = [];
    pub.on("request", (r) => {
      if (r.headers()["api-key"]) keyed.push(r.url());
    });

    // A thread written through the API, if this server has the board (else the page says it is not available).
    const first = await call(srv.url, null, "POST", "/v1/board", {
      agent: "ana",
      subject: "Cache sizes for the scan",
      message: "Which arena size works best for one million rows?",
      topic: "perf",
    });
    const hasBoard = first.status === 200;
    if (hasBoard) {
      const thread = first.body.id as string;
      expect(
        (
          await call(srv.url, null, "POST", "/v1/board", {
            agent: "bo",
            message: "Two hundred megabytes was enough here.",
            reply_to: thread,
          })
        ).status,
      ).toBe(200);
      expect((await call(srv.url, null, "POST", "/v1/board/vote", { agent: "cy", post: thread, verdict: "useful" })).status).toBe(200);
      expect(
        (
          await call(srv.url, null, "POST", "/v1/board/vote", {
            agent: "dee",
            post: thread,
            verdict: "disputed",
            why: "the question leaves out the dimension",
          })
        ).status,
      ).toBe(200);
      expect(
        (
          await call(srv.url, null, "POST", "/v1/board/files", {
            agent: "bo",
            filename: "sizes.csv",
            content: [{ rows: 1000000, mb: 200 }],
            thread,
          })
        ).status,
      ).toBe(200);
      expect(
        (await call(srv.url, null, "POST", "/v1/board/working", { agent: "ana", note: "measuring arena growth now", thread })).status,
      ).toBe(200);
    }
    await pub.goto(`${srv.url}/dashboard#/board`);
    await pub.getByRole("heading", { name: "Noticeboard", level: 1 }).waitFor();
    if (hasBoard) {
      await pub.getByRole("link", { name: "Cache sizes for the scan" }).click();
      await pub.getByRole("heading", { name: "Cache sizes for the scan", level: 1 }).waitFor();
      const verdicts = await pub.getByRole("list", { name: "Verdicts" }).first().textContent();
      expect(verdicts).toContain("useful by cy");
      expect(verdicts).toContain("disputed by dee: the question leaves out the dimension");
      expect(await pub.getByRole("list", { name: "Replies" }).textContent()).toContain("Two hundred megabytes");
      expect(await pub.locator("main").textContent()).toContain("measuring arena growth now");
      await pub.getByRole("button", { name: "Show the content of sizes.csv" }).click();
      expect(await pub.locator("pre.file-content").textContent()).toContain("1000000");
    } else {
      await pub.getByText("is not available on this server yet").first().waitFor();
    }
    expect(await pub.evaluate(overflow)).toBeLessThanOrEqual(0);
    expect(await pub.evaluate(unlabelled)).toEqual([]);
    expect(await pub.evaluate(lowContrast)).toEqual([]);
    await pub.screenshot({ path: `${ARTIFACTS}dashboard-board-phone.png`, fullPage: true });

    const dir = await call(srv.url, null, "GET", "/api/businesses?limit=1");
    await pub.goto(`${srv.url}/dashboard#/directory`);
    await pub.getByRole("heading", { name: "Business directory" }).waitFor();
    await pub.getByLabel("Words (name, services, industries, areas, description)").fill(dir.status === 200 ? "plumbing" : "anything");
    await pub.getByRole("button", { name: "Search" }).click();
    if (dir.status === 200 && dir.body.total > 0) {
      const list = pub.getByTestId("businesses");
      await list.waitFor();
      const link = list.getByRole("link").first();
      // the page first lists everything; wait for the answer to the query
      const name = await until(
        "the search results",
        async () => (await link.textContent()) ?? "",
        (t) => /plumb/i.test(t),
      );
      await pub.screenshot({ path: `${ARTIFACTS}dashboard-directory-phone.png`, fullPage: true });
      await link.click();
      await pub.getByRole("heading", { name, level: 1 }).waitFor();
      await pub.getByRole("heading", { name: "Claim and verification" }).waitFor();
      expect(await pub.locator("dl.profile").textContent()).toContain(name);
      // the claim card reads the wrapped facts ({value, state, source}); the profile lists the business's fields, not them
      const claimRow = pub.locator("dl.facts div", { hasText: "Claim" }).locator("dd");
      expect(await claimRow.textContent()).toMatch(/^(un)?claimed \(\d{4}-\d{2}-\d{2}\)$/);
      expect(await pub.locator("dl.profile dt").allTextContents()).not.toEqual(
        expect.arrayContaining(["claim", "listed", "bookable", "updated", "verification"]),
      );
      expect(await pub.evaluate(overflow)).toBeLessThanOrEqual(0);
      expect(await pub.evaluate(lowContrast)).toEqual([]);
      await pub.screenshot({ path: `${ARTIFACTS}dashboard-profile-phone.png`, fullPage: true });
    } else {
      await pub.locator("[data-testid=businesses], .note, .error").first().waitFor();
    }
    expect(errors).toEqual([]);
    expect(keyed).toEqual([]); // public views send no key
    await pub.close();
  });
});
