/**
 * /v1/commons over real HTTP against the built `svc serve` as a child process: the signed
 * helper records and the node's public key, the code (hashing to the record), verification,
 * and builds confined to each tenant's <data>/tenants/<tenant>/build/ (traversal, absolute
 * paths, NUL and symbolic links refused; one tenant cannot read another's files).
 */
import { spawnSync } from "node:child_process";
import { createHash, createPublicKey, verify } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { mkdtemp, realpath, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAIN, startServerProcess, type ServerProcess } from "../e2e/server-process.js";
import { call, cli as runCli, newTenantKey, type Reply } from "../e2e/client.js";

/** Run the built CLI; SVC_PROGRESS is left as the environment has it. */
const cli = (args: string[]) => runCli(args, {}, { clear: ["SVC_API_KEY", "SVC_URL"] });

function expectError(r: Reply, status: number, code: string, field?: string): void {
  expect(r.status, r.raw.toString()).toBe(status);
  expect(r.headers.get("content-type")).toBe("application/json");
  expect(r.body.error.code, r.raw.toString()).toBe(code);
  if (field !== undefined) expect(r.body.error.field, r.raw.toString()).toBe(field);
}

const sha256 = (b: Buffer | string) => createHash("sha256").update(b).digest("hex");
/** Every file under `dir`, relative, sorted. */
/** Files and symbolic links under `dir`, relative, sorted; a link to a directory is listed, never followed (Node 24's recursive readdir follows it). */
const tree = (dir: string, base = dir): string[] =>
  existsSync(dir)
    ? readdirSync(dir, { withFileTypes: true })
        .flatMap((e) =>
          e.isDirectory()
            ? tree(join(dir, e.name), base)
            : e.isFile() || e.isSymbolicLink()
              ? [join(dir, e.name).slice(base.length + 1)]
              : [],
        )
        .sort()
    : [];

const MEETING = {
  uid: "weekly-sync-42@example.com",
  summary: "Weekly sync — 東京 office",
  location: "Room 4",
  dtstart: "20250106T150000Z",
  dtend: "20250106T160000Z",
  byday: ["MO", "WE"],
  count: 10,
  alarm_minutes: 15,
  prodid: "-//Acme Corp//Meeting Series 1.0//EN",
};
const SHEET = {
  header: "Quarter",
  merge_start_row: 0,
  merge_start_col: 0,
  merge_end_row: 0,
  merge_end_col: 1,
  cells: { "1,0": "a", "1,1": 2 },
};

describe("commons over HTTP (svc serve process)", () => {
  let srv: ServerProcess;
  let a: { key: string; tenant: string };
  let b: { key: string; tenant: string };
  let outside: string;
  let rungs: Array<Record<string, any>>;
  const idOf = (module: string) => rungs.find((r) => r.module === module)!.id as string;
  const buildDir = (tenant: string) => join(srv.dataDir, "tenants", tenant, "build");

  beforeAll(async () => {
    outside = await mkdtemp(join(tmpdir(), "svc-commons-outside-"));
    srv = await startServerProcess();
    [a, b] = [await newTenantKey(srv), await newTenantKey(srv)];
    const r = await call(srv.url, a.key, "GET", "/v1/commons/rungs");
    expect(r.status, r.raw.toString()).toBe(200);
    rungs = r.body.rungs;
  });
  afterAll(async () => {
    await srv?.dispose();
    if (outside) await rm(outside, { recursive: true, force: true });
  });

  it("lists the ten helpers: rec_ ids, SHA-256, ed25519 signatures checkable with the served public key", async () => {
    const r = await call(srv.url, a.key, "GET", "/v1/commons/rungs");
    expect(Object.keys(r.body).sort()).toEqual(["publicKey", "rungs"]);
    expect(rungs.map((x) => x.name)).toEqual([
      "combo chart slide",
      "fillable form",
      "landscape document",
      "email message",
      "merged-header sheet",
      "meeting series",
      "task parser",
      "form filler",
      "merged-cell grid reader",
      "line folder",
    ]);
    const { pem, raw } = r.body.publicKey as { pem: string; raw: string };
    expect(Buffer.from(raw, "base64")).toHaveLength(32);
    const key = createPublicKey(pem);
    for (const x of rungs) {
      expect(x.id).toMatch(/^rec_[0-9a-f]{16}$/);
      expect(x.codeHash).toMatch(/^[0-9a-f]{64}$/);
      expect(x.signature).toBe("signed (ed25519)");
      expect(x.description).not.toMatch(/\n/);
      expect(x.entryPoints).toContain("build");
      expect(verify(null, Buffer.from(x.codeHash, "hex"), key, Buffer.from(x.signatureValue, "base64"))).toBe(true);
      expect((await call(srv.url, b.key, "GET", `/v1/commons/rungs/${x.id}`)).body).toEqual(x);
    }
    // the signing key is the node's, in <data>/keys/ as `svc build` keeps it
    expect(existsSync(join(srv.dataDir, "keys", "signing-key.pem"))).toBe(true);
    expectError(await call(srv.url, a.key, "GET", "/v1/commons/rungs/rec_0000000000000000"), 404, "E_NOT_FOUND", "id");
  });

  it("serves each helper's code as text whose SHA-256 is the record's codeHash", async () => {
    for (const x of rungs) {
      const r = await call(srv.url, a.key, "GET", `/v1/commons/rungs/${x.id}/code`);
      expect(r.status).toBe(200);
      expect(r.headers.get("content-type")).toBe("text/plain; charset=utf-8");
      expect(r.raw.toString("utf8")).toContain("export");
      expect(sha256(r.raw)).toBe(x.codeHash);
    }
    expectError(await call(srv.url, a.key, "GET", "/v1/commons/rungs/rec_0000000000000000/code"), 404, "E_NOT_FOUND", "id");
  });

  it("verify re-hashes and checks the signature, saying what matched; 404 unknown, 400 without a string id", async () => {
    const x = rungs.find((r) => r.module === "line-folder")!;
    const pub = (await call(srv.url, a.key, "GET", "/v1/commons/rungs")).body.publicKey.raw;
    const r = await call(srv.url, a.key, "POST", "/v1/commons/verify", { id: x.id });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      id: x.id,
      name: "line folder",
      ok: true,
      hashMatches: true,
      signatureValid: true,
      expectedHash: x.codeHash,
      actualHash: x.codeHash,
      publicKey: pub,
    });
    expectError(await call(srv.url, a.key, "POST", "/v1/commons/verify", { id: "rec_0000000000000000" }), 404, "E_NOT_FOUND", "id");
    expectError(await call(srv.url, a.key, "POST", "/v1/commons/verify", {}), 400, "E_BAD_REQUEST", "id");
    expectError(await call(srv.url, a.key, "POST", "/v1/commons/verify", { id: 7 }), 400, "E_BAD_REQUEST", "id");
  });

  it("builds the line folder and the meeting series into the tenant's build dir and answers the file", async () => {
    const long = "DESCRIPTION:" + "é".repeat(60) + " and then some more ASCII text to fold";
    const r = await call(srv.url, a.key, "POST", `/v1/commons/rungs/${idOf("line-folder")}/build`, {
      lines: ["BEGIN:X", long],
      output_path: "out/folded.txt",
    });
    expect(r.status, r.raw.toString()).toBe(200);
    expect(r.headers.get("content-type")).toBe("text/plain; charset=utf-8");
    expect(r.headers.get("content-disposition")).toBe('attachment; filename="folded.txt"');
    expect(r.headers.get("x-svc-output-path")).toBe("out/folded.txt");
    expect(JSON.parse(r.headers.get("x-svc-result")!)).toEqual({ path: "out/folded.txt" });
    const text = r.raw.toString("utf8");
    expect(text.startsWith("BEGIN:X\r\n")).toBe(true);
    const physical = text.split("\r\n");
    expect(physical.at(-1)).toBe("");
    expect(physical.length).toBeGreaterThan(3); // the long line was folded
    for (const line of physical) expect(Buffer.byteLength(line)).toBeLessThanOrEqual(75);
    expect(text.replace(/\r\n /g, "")).toBe(`BEGIN:X\r\n${long}\r\n`);
    expect(readFileSync(join(buildDir(a.tenant), "out", "folded.txt"))).toEqual(r.raw);

    const m = await call(srv.url, a.key, "POST", `/v1/commons/rungs/${idOf("meeting-series")}/build`, {
      ...MEETING,
      output_path: "cal/sync.ics",
    });
    expect(m.status, m.raw.toString()).toBe(200);
    expect(m.headers.get("content-type")).toBe("text/calendar; charset=utf-8");
    expect(m.headers.get("x-svc-output-path")).toBe("cal/sync.ics");
    expect(JSON.parse(m.headers.get("x-svc-result")!)).toBe("cal/sync.ics");
    const ics = m.raw.toString("utf8");
    expect(ics.startsWith("BEGIN:VCALENDAR\r\n")).toBe(true);
    expect(ics).toContain("RRULE:FREQ=WEEKLY;BYDAY=MO,WE;COUNT=10\r\n");
    expect(ics).toContain("PRODID:-//Acme Corp//Meeting Series 1.0//EN\r\n");
    expect(
      ics
        .split("\n")
        .slice(0, -1)
        .every((l) => l.endsWith("\r")),
    ).toBe(true);
    expect(readFileSync(join(buildDir(a.tenant), "cal", "sync.ics"))).toEqual(m.raw);

    // a non-ASCII file name: percent-encoded path header, RFC 6266 filename*
    const u = await call(srv.url, a.key, "POST", `/v1/commons/rungs/${idOf("line-folder")}/build`, {
      lines: ["x"],
      output_path: "résumé notes.txt",
    });
    expect(u.status).toBe(200);
    expect(decodeURIComponent(u.headers.get("x-svc-output-path")!)).toBe("résumé notes.txt");
    expect(u.headers.get("content-disposition")).toBe(
      `attachment; filename="r_sum_ notes.txt"; filename*=UTF-8''${encodeURIComponent("résumé notes.txt")}`,
    );

    // the task parser writes no file: {result}
    const t = await call(srv.url, a.key, "POST", `/v1/commons/rungs/${idOf("task-parser")}/build`, {
      task: "put some keychain on dresser",
      receptacles: ["dresser 1"],
    });
    expect(t.status).toBe(200);
    expect(t.headers.get("content-type")).toBe("application/json");
    expect(t.body).toEqual({ result: { entry_point: "pick_and_place_simple", object_type: "keychain", target_type: "dresser" } });

    // metered as commons_build; reads are free
    const w = await call(srv.url, a.key, "GET", "/v1/wallet?limit=100");
    const ops = (w.body.recent as Array<{ op: string }>).map((e) => e.op);
    expect(ops.filter((o) => o === "commons_build")).toHaveLength(4);
    expect(ops.every((o) => o === "commons_build" || o.startsWith("credit:"))).toBe(true);
  });

  it("the combo chart slide answers the resolved (absolute) output path in x-svc-result, as the contract says, like the CLI", async () => {
    const chart = {
      chartTitle: "Sales",
      categories: ["Q1", "Q2"],
      barSeriesName: "Units",
      barValues: [3, 5],
      lineSeriesName: "Margin",
      lineValues: [1, 2],
    };
    const r = await call(srv.url, a.key, "POST", `/v1/commons/rungs/${idOf("combo-chart-slide")}/build`, {
      ...chart,
      outputPath: "h/c.pptx",
    });
    expect(r.status, r.raw.toString()).toBe(200);
    expect(r.headers.get("x-svc-output-path")).toBe("h/c.pptx");
    const resolved = JSON.parse(r.headers.get("x-svc-result")!) as string;
    expect(resolved).toBe(resolve(buildDir(a.tenant), "h", "c.pptx"));
    expect(readFileSync(resolved)).toEqual(r.raw);
    // the CLI, run in a directory with the same relative path, answers the same form
    const cwd = await mkdtemp(join(tmpdir(), "svc-combo-cli-"));
    try {
      writeFileSync(join(cwd, "args.json"), JSON.stringify({ ...chart, outputPath: "h/c.pptx" }));
      const c = spawnSync(process.execPath, [MAIN, "build", "combo-chart-slide", "args.json", "--data", join(cwd, "data")], {
        cwd,
        encoding: "utf8",
        timeout: 60_000,
      });
      expect(c.status, c.stderr).toBe(0);
      expect(JSON.parse(c.stdout)).toBe(join(await realpath(cwd), "h", "c.pptx"));
    } finally {
      await rm(cwd, { recursive: true, force: true });
    }
  });

  it("a helper's own validation errors keep their code and field, without the server's paths", async () => {
    const lf = `/v1/commons/rungs/${idOf("line-folder")}/build`;
    expectError(await call(srv.url, a.key, "POST", lf, { lines: ["a\nb"], output_path: "v.txt" }), 400, "E_BAD_REQUEST", "lines.0");
    expectError(await call(srv.url, a.key, "POST", lf, { lines: ["a"] }), 400, "E_BAD_REQUEST", "output_path");
    expectError(await call(srv.url, a.key, "POST", lf, { lines: ["a"], output_path: "out" }), 400, "E_BAD_REQUEST", "output_path"); // a directory
    const missing = await call(srv.url, a.key, "POST", `/v1/commons/rungs/${idOf("merged-cell-grid-reader")}/build`, {
      input_path: "nope.xlsx",
      output_path: "g.json",
    });
    expectError(missing, 400, "E_BAD_REQUEST", "input_path");
    expect(missing.body.error.message).toContain("nope.xlsx");
    expect(missing.body.error.message).not.toContain(srv.dataDir);
    expectError(await call(srv.url, a.key, "POST", lf, [1]), 400, "E_BAD_REQUEST", "body");
    expectError(
      await call(srv.url, a.key, "POST", "/v1/commons/rungs/rec_0000000000000000/build", { lines: [], output_path: "z.txt" }),
      404,
      "E_NOT_FOUND",
      "id",
    );
    expect(existsSync(join(buildDir(a.tenant), "v.txt"))).toBe(false);
    expect(existsSync(join(buildDir(a.tenant), "z.txt"))).toBe(false);
  });

  it("an output path ending in a separator, with a name over 255 bytes or over 4000 bytes in all is 400 naming the field, not 500", async () => {
    const lf = `/v1/commons/rungs/${idOf("line-folder")}/build`;
    for (const output_path of [
      "x/",
      "deep/dir/",
      "x\\",
      `${"a".repeat(256)}.txt`,
      `d/${"b".repeat(300)}/x.txt`,
      `${"é".repeat(126)}.txt`,
      `${"c/".repeat(2001)}x.txt`,
    ]) {
      const r = await call(srv.url, a.key, "POST", lf, { lines: ["x"], output_path });
      expectError(r, 400, "E_BAD_REQUEST", "output_path");
      expect(r.body.error.message).not.toContain(srv.dataDir);
    }
    const form = await call(srv.url, a.key, "POST", `/v1/commons/rungs/${idOf("merged-cell-grid-reader")}/build`, {
      input_path: `${"n".repeat(256)}.xlsx`,
      output_path: "g.json",
    });
    expectError(form, 400, "E_BAD_REQUEST", "input_path");
    // 255 bytes is still a name
    const ok = await call(srv.url, a.key, "POST", lf, { lines: ["x"], output_path: `${"a".repeat(251)}.txt` });
    expect(ok.status, ok.raw.toString()).toBe(200);
  });

  it("each tenant builds into its own dir and cannot read another tenant's files through input paths", async () => {
    const sheet = await call(srv.url, a.key, "POST", `/v1/commons/rungs/${idOf("merged-header-sheet")}/build`, {
      ...SHEET,
      output_path: "sheets/q.xlsx",
    });
    expect(sheet.status, sheet.raw.toString()).toBe(200);
    expect(sheet.headers.get("content-type")).toBe("application/vnd.openxmlformats-officedocument.spreadsheetml.sheet");
    expect(sheet.raw.subarray(0, 2).toString("latin1")).toBe("PK");
    // A reads its own sheet back through the grid reader
    const grid = `/v1/commons/rungs/${idOf("merged-cell-grid-reader")}/build`;
    const g = await call(srv.url, a.key, "POST", grid, { input_path: "sheets/q.xlsx", output_path: "grid.json" });
    expect(g.status, g.raw.toString()).toBe(200);
    expect(g.headers.get("content-type")).toBe("application/json");
    expect(g.body).toEqual([
      ["Quarter", "Quarter"],
      ["a", 2],
    ]);

    // B's build lands in B's dir
    const lb = await call(srv.url, b.key, "POST", `/v1/commons/rungs/${idOf("line-folder")}/build`, {
      lines: ["tenant b"],
      output_path: "out/folded.txt",
    });
    expect(lb.status).toBe(200);
    expect(readFileSync(join(buildDir(b.tenant), "out", "folded.txt"), "utf8")).toBe("tenant b\r\n");
    expect(readFileSync(join(buildDir(a.tenant), "out", "folded.txt"), "utf8")).not.toBe("tenant b\r\n");

    // and B cannot reach A's sheet: same relative name is B's own (absent), the others are refused
    expectError(
      await call(srv.url, b.key, "POST", grid, { input_path: "sheets/q.xlsx", output_path: "stolen.json" }),
      400,
      "E_BAD_REQUEST",
      "input_path",
    );
    expectError(
      await call(srv.url, b.key, "POST", grid, { input_path: `../../${a.tenant}/build/sheets/q.xlsx`, output_path: "stolen.json" }),
      400,
      "E_BAD_REQUEST",
      "input_path",
    );
    expectError(
      await call(srv.url, b.key, "POST", grid, { input_path: join(buildDir(a.tenant), "sheets", "q.xlsx"), output_path: "stolen.json" }),
      400,
      "E_BAD_REQUEST",
      "input_path",
    );
    expect(tree(buildDir(b.tenant))).toEqual(["out/folded.txt"]);
  });

  it("refuses path traversal, absolute paths, NUL bytes and symbolic-link escapes, writing nothing outside", async () => {
    const before = tree(srv.dataDir).filter((p) => !p.startsWith("tenants/") && !p.startsWith("wallet/"));
    const lf = `/v1/commons/rungs/${idOf("line-folder")}/build`;
    const grid = `/v1/commons/rungs/${idOf("merged-cell-grid-reader")}/build`;
    const form = `/v1/commons/rungs/${idOf("form-filler")}/build`;
    const escapes = ["../x", "/etc/passwd", "a/../../x", "x\0y", "..", "sub/..", join(outside, "abs.txt"), "../../../x"];
    for (const bad of escapes) {
      expectError(await call(srv.url, b.key, "POST", lf, { lines: ["pwned"], output_path: bad }), 400, "E_BAD_REQUEST", "output_path");
      expectError(await call(srv.url, b.key, "POST", grid, { input_path: bad, output_path: "g.json" }), 400, "E_BAD_REQUEST", "input_path");
      expectError(await call(srv.url, b.key, "POST", form, { input_pdf: bad, output_pdf: "f.pdf" }), 400, "E_BAD_REQUEST", "input_pdf");
      expectError(await call(srv.url, b.key, "POST", form, { input_pdf: "in.pdf", output_pdf: bad }), 400, "E_BAD_REQUEST", "output_pdf");
    }
    for (const [field, helper] of [
      ["outputPath", "landscape-document"],
      ["outputPath", "combo-chart-slide"],
      ["output_path", "email-message"],
      ["output_path", "fillable-form"],
      ["output_path", "meeting-series"],
      ["output_path", "merged-header-sheet"],
    ] as const) {
      expectError(
        await call(srv.url, b.key, "POST", `/v1/commons/rungs/${idOf(helper)}/build`, { [field]: "../../escape.bin" }),
        400,
        "E_BAD_REQUEST",
        field,
      );
    }
    // symbolic links placed in the build dir (by hand: the API makes none) cannot lead out
    writeFileSync(join(outside, "secret.xlsx"), "not yours");
    mkdirSync(buildDir(b.tenant), { recursive: true });
    symlinkSync(outside, join(buildDir(b.tenant), "linkdir"));
    symlinkSync(join(outside, "secret.xlsx"), join(buildDir(b.tenant), "secret.xlsx"));
    symlinkSync(join(outside, "planted.txt"), join(buildDir(b.tenant), "dangling.txt"));
    expectError(
      await call(srv.url, b.key, "POST", lf, { lines: ["pwned"], output_path: "linkdir/x.txt" }),
      400,
      "E_BAD_REQUEST",
      "output_path",
    );
    expectError(
      await call(srv.url, b.key, "POST", lf, { lines: ["pwned"], output_path: "linkdir/deeper/x.txt" }),
      400,
      "E_BAD_REQUEST",
      "output_path",
    );
    expectError(
      await call(srv.url, b.key, "POST", lf, { lines: ["pwned"], output_path: "secret.xlsx" }),
      400,
      "E_BAD_REQUEST",
      "output_path",
    );
    expectError(
      await call(srv.url, b.key, "POST", lf, { lines: ["pwned"], output_path: "dangling.txt" }),
      400,
      "E_BAD_REQUEST",
      "output_path",
    );
    expectError(
      await call(srv.url, b.key, "POST", grid, { input_path: "secret.xlsx", output_path: "g.json" }),
      400,
      "E_BAD_REQUEST",
      "input_path",
    );
    expectError(
      await call(srv.url, b.key, "POST", grid, { input_path: "linkdir/secret.xlsx", output_path: "g.json" }),
      400,
      "E_BAD_REQUEST",
      "input_path",
    );

    expect(tree(outside)).toEqual(["secret.xlsx"]);
    expect(readFileSync(join(outside, "secret.xlsx"), "utf8")).toBe("not yours");
    expect(tree(srv.dataDir).filter((p) => !p.startsWith("tenants/") && !p.startsWith("wallet/"))).toEqual(before);
    expect(tree(join(srv.dataDir, "tenants", b.tenant)).filter((p) => !p.startsWith("build/"))).toEqual([]);
    expect(tree(buildDir(b.tenant))).toEqual(["dangling.txt", "linkdir", "out/folded.txt", "secret.xlsx"]);
  });

  it("the registry, code and verify are public reads; building needs a key", async () => {
    const id = idOf("line-folder");
    const withKey = await call(srv.url, a.key, "GET", `/v1/commons/rungs/${id}/code`);
    for (const key of [null, "svc_not_a_key"]) {
      const list = await call(srv.url, key, "GET", "/v1/commons/rungs");
      expect(list.status, list.raw.toString()).toBe(200);
      expect(list.body.rungs).toEqual(rungs);
      expect((await call(srv.url, key, "GET", `/v1/commons/rungs/${id}`)).body).toEqual(rungs.find((r) => r.id === id));
      const code = await call(srv.url, key, "GET", `/v1/commons/rungs/${id}/code`);
      expect(code.status).toBe(200);
      expect(code.raw.equals(withKey.raw)).toBe(true);
      expect(sha256(code.raw)).toBe(rungs.find((r) => r.id === id)!.codeHash);
      const v = await call(srv.url, key, "POST", "/v1/commons/verify", { id });
      expect(v.status, v.raw.toString()).toBe(200);
      expect(v.body).toMatchObject({ id, ok: true, hashMatches: true, signatureValid: true });
    }
    for (const key of [null, "svc_not_a_key"]) {
      expectError(
        await call(srv.url, key, "POST", `/v1/commons/rungs/${id}/build`, { lines: ["x"], output_path: "anon.txt" }),
        401,
        "E_AUTH",
        "api-key",
      );
    }
    expect(existsSync(join(srv.dataDir, "tenants", "local"))).toBe(false);
  });
});
