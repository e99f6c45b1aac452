/** @module email-message.test — the message parsed back with mailparser and walked by hand: MIME tree, RFC 2047 subject, UTC date, attachment, line limits. */
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import fc from "fast-check";
import { simpleParser } from "mailparser";
import { afterAll, describe, expect, it } from "vitest";
import { build, type EmailArgs } from "../../src/helpers/email-message.js";

const dir = mkdtempSync(join(tmpdir(), "svc-email-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const SUBJECT = "Résumé — 東京 meeting ✓";
const PLAIN = "Hello Bob,\nline with trailing space \n" + "long ".repeat(30).trim() + "\n= equals, naïve café — 東京 😀";
const HTML = "<html><body><p>Hello <b>Bob</b> — 東京 😀</p><p>" + "x".repeat(200) + "</p></body></html>";

const args = (output_path: string, extra: Partial<EmailArgs> = {}): EmailArgs => ({
  from_addr: "Alice Example <alice@example.com>",
  to_addr: "Bob <bob@example.org>, carol@example.net",
  subject: SUBJECT,
  plain_text: PLAIN,
  html_text: HTML,
  attachment: { filename: "report.csv", content_type: "text/csv", content: "name,city\nZoë,東京\n" },
  date: "2025-05-06T16:30:00+02:00",
  output_path,
  ...extra,
});

interface Part {
  headers: Map<string, string>;
  body: string;
}

/** Split a MIME entity into unfolded headers (lower-case names) and body. */
function entity(text: string): Part {
  const cut = text.indexOf("\r\n\r\n");
  const head = cut < 0 ? text : text.slice(0, cut);
  const headers = new Map<string, string>();
  for (const line of head.replace(/\r\n[ \t]/g, " ").split("\r\n")) {
    const colon = line.indexOf(":");
    headers.set(line.slice(0, colon).toLowerCase(), line.slice(colon + 1).trim());
  }
  return { headers, body: cut < 0 ? "" : text.slice(cut + 4) };
}

/** The child entities of a multipart body, by its boundary parameter. */
function children(part: Part): Part[] {
  const m = /boundary="([^"]+)"/.exec(part.headers.get("content-type") ?? "");
  expect(m, "a boundary parameter").not.toBeNull();
  const boundary = m![1]!;
  const delimiter = `\r\n--${boundary}`;
  const body = `\r\n${part.body}`;
  const close = body.indexOf(`${delimiter}--`);
  expect(close).toBeGreaterThan(0);
  return body
    .slice(0, close)
    .split(delimiter)
    .slice(1)
    .map((chunk) => entity(chunk.replace(/^\r\n/, "")));
}

describe("email message", () => {
  const path = join(dir, "a", "b", "message.eml");
  const returned = build(args(path));
  const raw = readFileSync(path);
  const text = raw.toString("utf8");

  it("returns the output path; the file uses CRLF only and keeps lines within 78 characters", () => {
    expect(returned).toBe(path);
    // output_path comes back as given, relative too (not resolved)
    const rel = relative(process.cwd(), join(dir, "rel", "message.eml"));
    expect(build(args(rel))).toBe(rel);
    expect(readFileSync(join(dir, "rel", "message.eml"), "utf8")).toContain("Subject:");
    expect(text.replace(/\r\n/g, "")).not.toMatch(/[\r\n]/);
    expect(text.endsWith("\r\n")).toBe(true);
    for (const line of text.split("\r\n")) expect(Buffer.byteLength(line)).toBeLessThanOrEqual(78);
    // The MIME body is 7-bit: only the verbatim From/To could carry 8-bit octets.
    expect(text).toMatch(/^[\x00-\x7F]*$/);
  });

  it("is multipart/mixed > [multipart/alternative > [text/plain, text/html], attachment]", () => {
    const top = entity(text);
    expect(top.headers.get("mime-version")).toBe("1.0");
    expect(top.headers.get("content-type")).toMatch(/^multipart\/mixed;/);
    expect(top.headers.get("message-id")).toMatch(/^<[0-9a-f]{32}@example\.com>$/);
    const [alt, attachment, ...rest] = children(top);
    expect(rest).toHaveLength(0);
    expect(alt!.headers.get("content-type")).toMatch(/^multipart\/alternative;/);
    const [plain, html, ...more] = children(alt!);
    expect(more).toHaveLength(0);
    expect(plain!.headers.get("content-type")).toBe("text/plain; charset=UTF-8");
    expect(html!.headers.get("content-type")).toBe("text/html; charset=UTF-8");
    expect(plain!.headers.get("content-transfer-encoding")).toBe("quoted-printable");
    expect(html!.headers.get("content-transfer-encoding")).toBe("quoted-printable");
    for (const line of plain!.body.split("\r\n")) expect(line.length).toBeLessThanOrEqual(76);
    expect(attachment!.headers.get("content-disposition")).toBe('attachment; filename="report.csv"');
    expect(attachment!.headers.get("content-type")).toBe("text/csv; charset=UTF-8");
    expect(attachment!.headers.get("content-transfer-encoding")).toBe("base64");
    expect(Buffer.from(attachment!.body.replace(/\r\n/g, ""), "base64").toString("utf8")).toBe("name,city\nZoë,東京\n");
    // The two boundaries differ and neither occurs inside any part's content.
    const boundaries = [top, alt!].map((p) => /boundary="([^"]+)"/.exec(p.headers.get("content-type")!)![1]!);
    expect(new Set(boundaries).size).toBe(2);
    for (const p of [plain!, html!, attachment!]) for (const b of boundaries) expect(p.body).not.toContain(b);
  });

  it("parses back with mailparser: headers, subject, UTC date, bodies, attachment", async () => {
    const mail = await simpleParser(raw);
    expect(mail.subject).toBe(SUBJECT);
    expect(mail.from?.value).toEqual([{ name: "Alice Example", address: "alice@example.com" }]);
    expect(entity(text).headers.get("from")).toBe("Alice Example <alice@example.com>"); // verbatim
    expect(entity(text).headers.get("to")).toBe("Bob <bob@example.org>, carol@example.net");
    expect(mail.to && !Array.isArray(mail.to) ? mail.to.value.map((a) => a.address) : []).toEqual(["bob@example.org", "carol@example.net"]);
    expect(mail.date?.toISOString()).toBe("2025-05-06T14:30:00.000Z");
    expect(mail.headers.get("mime-version")).toBe("1.0");
    expect(mail.text).toBe(PLAIN);
    expect(mail.html).toBe(HTML);
    expect(mail.attachments).toHaveLength(1);
    const a = mail.attachments[0]!;
    expect(a.filename).toBe("report.csv");
    expect(a.contentType).toBe("text/csv");
    expect(a.contentDisposition).toBe("attachment");
    expect(a.content.toString("utf8")).toBe("name,city\nZoë,東京\n");
  });

  it("writes the Date header in UTC (RFC 5322 form): offsets converted, naive values taken as UTC", () => {
    expect(entity(text).headers.get("date")).toBe("Tue, 06 May 2025 14:30:00 +0000");
    const cases: [string, string][] = [
      ["2025-05-06T16:30:00", "Tue, 06 May 2025 16:30:00 +0000"],
      ["2025-05-06 16:30", "Tue, 06 May 2025 16:30:00 +0000"],
      ["2024-12-31T23:30:00-05:00", "Wed, 01 Jan 2025 04:30:00 +0000"],
      ["2025-05-06T16:30:00.987Z", "Tue, 06 May 2025 16:30:00 +0000"],
      ["2025-05-06", "Tue, 06 May 2025 00:00:00 +0000"],
    ];
    for (const [date, header] of cases) {
      const p = join(dir, "dates.eml");
      build(args(p, { date }));
      expect(entity(readFileSync(p, "utf8")).headers.get("date"), date).toBe(header);
    }
  });

  it("defaults the date to the current time in UTC", async () => {
    const p = join(dir, "now.eml");
    const { date: _omit, ...noDate } = args(p);
    const before = Math.floor(Date.now() / 1000) * 1000;
    build(noDate);
    const after = Date.now();
    const header = entity(readFileSync(p, "utf8")).headers.get("date")!;
    expect(header).toMatch(/^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} \+0000$/);
    const t = (await simpleParser(readFileSync(p))).date!.getTime();
    expect(t).toBeGreaterThanOrEqual(before);
    expect(t).toBeLessThanOrEqual(after);
  });

  it("encodes non-ASCII subjects as RFC 2047 words of at most 75 characters, never splitting a UTF-8 character", async () => {
    const subjects = [
      SUBJECT,
      `${SUBJECT} `.repeat(6).trim(),
      "😀".repeat(40),
      "e\u0301".repeat(50),
      "  leading and trailing spaces  ",
      "ASCII that looks encoded =?UTF-8?B?SGk=?= stays literal",
      "plain ascii subject that is long enough to need folding across more than one header line for sure",
      "",
    ];
    for (const subject of subjects) {
      const p = join(dir, "subject.eml");
      build(args(p, { subject }));
      const raw2 = readFileSync(p, "utf8");
      const headerBlock = raw2.slice(0, raw2.indexOf("\r\n\r\n"));
      const subjectLines = /(^|\r\n)(Subject:.*(?:\r\n[ \t].*)*)/.exec(headerBlock)![2]!.split("\r\n");
      for (const line of subjectLines) expect(Buffer.byteLength(line), line).toBeLessThanOrEqual(line.includes("=?UTF-8?B?") ? 76 : 78);
      for (const word of headerBlock.match(/=\?UTF-8\?B\?[^?]*\?=/g) ?? []) {
        expect(word.length).toBeLessThanOrEqual(75);
        const bytes = Buffer.from(word.slice(10, -2), "base64");
        expect(Buffer.from(bytes.toString("utf8"), "utf8").equals(bytes), word).toBe(true);
        expect(bytes.toString("utf8")).not.toContain("\uFFFD");
      }
      expect((await simpleParser(readFileSync(p))).subject ?? "", JSON.stringify(subject)).toBe(subject);
    }
  });

  it("property: any subject folds into lines within RFC 2047's 76 octets (78 for plain ASCII) and parses back", async () => {
    const p = join(dir, "subject-property.eml");
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.string({ unit: "grapheme", maxLength: 120 }),
          fc.string({ unit: "binary", maxLength: 120 }),
          fc.string({ maxLength: 200 }),
        ),
        async (raw) => {
          const subject = raw.replace(/[\r\n\0]/g, " "); // a header cannot carry line breaks (refused elsewhere)
          try {
            build(args(p, { subject }));
          } catch (err) {
            expect((err as { code?: string }).code).toBe("E_BAD_REQUEST");
            return;
          }
          const text = readFileSync(p, "utf8");
          const lines = /(^|\r\n)(Subject:.*(?:\r\n[ \t].*)*)/.exec(text.slice(0, text.indexOf("\r\n\r\n")))![2]!.split("\r\n");
          for (const line of lines) expect(Buffer.byteLength(line), line).toBeLessThanOrEqual(line.includes("=?") ? 76 : 78);
          expect((await simpleParser(readFileSync(p))).subject ?? "").toBe(subject);
        },
      ),
      { seed: 0x5eb7ec7, numRuns: 150 },
    );
  });

  it("names a non-ASCII or long attachment with RFC 2231 and it parses back", async () => {
    for (const filename of ["Résumé — 東京.pdf", `${"quarterly-report-".repeat(6)}final ✓.txt`, 'quote " and \\ backslash.txt']) {
      const p = join(dir, "attach.eml");
      build(args(p, { attachment: { filename, content_type: "application/x-svc-test", content: "bytes ✓" } }));
      const raw2 = readFileSync(p, "utf8");
      for (const line of raw2.split("\r\n")) expect(line.length).toBeLessThanOrEqual(78);
      const a = (await simpleParser(readFileSync(p))).attachments[0]!;
      expect(a.filename).toBe(filename);
      expect(a.contentType).toBe("application/x-svc-test");
      expect(a.contentDisposition).toBe("attachment");
      expect(a.content.toString("utf8")).toBe("bytes ✓");
    }
  });

  it("is deterministic: same input, same bytes", () => {
    const p1 = join(dir, "d1.eml");
    const p2 = join(dir, "d2.eml");
    build(args(p1));
    build(args(p2));
    expect(readFileSync(p1).equals(readFileSync(p2))).toBe(true);
  });

  it("validates every argument before writing anything", () => {
    const p = join(dir, "never", "x.eml");
    const good = args(p);
    const bad: [unknown, string][] = [
      [{ ...good, from_addr: undefined }, "from_addr"],
      [{ ...good, to_addr: "bob@example.org\r\nBcc: eve@example.com" }, "to_addr"],
      [{ ...good, subject: "two\nlines" }, "subject"],
      [{ ...good, plain_text: 3 }, "plain_text"],
      [{ ...good, html_text: undefined }, "html_text"],
      [{ ...good, attachment: undefined }, "attachment"],
      [{ ...good, attachment: { ...good.attachment, filename: undefined } }, "attachment.filename"],
      [{ ...good, attachment: { ...good.attachment, content_type: "not a type" } }, "attachment.content_type"],
      [{ ...good, attachment: { ...good.attachment, content: undefined } }, "attachment.content"],
      [{ ...good, date: "yesterday" }, "date"],
      [{ ...good, date: "2025-02-30T10:00:00Z" }, "date"],
      [{ ...good, date: "2025-05-06T24:00:00Z" }, "date"],
      [{ ...good, output_path: undefined }, "output_path"],
      [{ ...good, from_addr: `${"x".repeat(1000)}@example.com` }, "from_addr"],
    ];
    for (const [a, field] of bad) expect(() => build(a), field).toThrow(expect.objectContaining({ code: "E_BAD_REQUEST", field }));
    expect(existsSync(join(dir, "never"))).toBe(false);
  });
});
