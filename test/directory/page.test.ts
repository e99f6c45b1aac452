/** Pages generated from the identity: the profile's JSON-LD parses and carries svc:state:<field>, isBasedOn and dateModified; HTML is escaped; llms-full.txt has one line per listed profile. */
import { describe, expect, it } from "vitest";
import { applyImport, checkImport, type Business } from "../../src/directory/identity.js";
import { jsonLd, llmsFull, renderProfile, schemaType } from "../../src/directory/page.js";
import { generateBusinesses } from "../../scripts/directory-demo.js";

const BASE = "http://dir.test";
function biz(raw: Record<string, unknown>, date = "2026-06-01"): Business {
  const rec = checkImport(raw, date);
  return applyImport(undefined, rec.id!, rec, "2026-06-01T00:00:00.000Z");
}

/** The JSON-LD blocks of an HTML page, parsed. */
function ldBlocks(html: string): Array<Record<string, any>> {
  return [...html.matchAll(/<script type="application\/ld\+json">([\s\S]*?)<\/script>/g)].map(
    (m) => JSON.parse(m[1]!) as Record<string, any>,
  );
}

describe("profile page", () => {
  const b = biz({
    id: "oak-plumbing",
    name: "Oak Plumbing",
    category: "Plumber",
    description: "Boilers & leaks. </script><script>alert(1)</script>",
    services: ["boiler repair", "leak detection"],
    areas: ["Bristol", "Bath"],
    industries: ["residential"],
    website: "https://oak.example/",
    email: "hello@oak.example",
    phone: "+44 20 7946 0123",
    address: { street: "1 Mill Lane", locality: "Bristol", country: "GB" },
    source_date: "2026-05-04",
  });
  b.fields.phone = { value: "+44 20 7946 0999", state: "owner_asserted", source: { url: null, date: "2026-06-10", asserted_by: "owner" } };

  it("embeds one JSON-LD block that parses, typed from the category, with svc:state:<field> for every field, isBasedOn and dateModified", () => {
    const html = renderProfile(b, BASE);
    const blocks = ldBlocks(html);
    expect(blocks).toHaveLength(1);
    const ld = blocks[0]!;
    expect(ld).toEqual(jsonLd(b, BASE));
    expect(ld["@context"]).toBe("https://schema.org");
    expect(ld["@type"]).toBe("Plumber");
    expect(ld.name).toBe("Oak Plumbing");
    expect(ld.telephone).toBe("+44 20 7946 0999");
    expect(ld.address).toEqual({
      "@type": "PostalAddress",
      streetAddress: "1 Mill Lane",
      addressLocality: "Bristol",
      addressCountry: "GB",
    });
    expect(ld.makesOffer.map((o: any) => o.itemOffered.name)).toEqual(["boiler repair", "leak detection"]);
    expect(ld.isBasedOn).toEqual(["https://oak.example/"]);
    expect(ld.dateModified).toBe("2026-06-10");
    const props = Object.fromEntries((ld.additionalProperty as Array<{ name: string; value: string }>).map((p) => [p.name, p.value]));
    expect(props).toEqual({
      "svc:state:name": "sourced",
      "svc:state:category": "sourced",
      "svc:state:description": "sourced",
      "svc:state:services": "sourced",
      "svc:state:industries": "sourced",
      "svc:state:areas": "sourced",
      "svc:state:website": "sourced",
      "svc:state:email": "sourced",
      "svc:state:phone": "owner_asserted",
      "svc:state:address": "sourced",
      "svc:claim": "unclaimed",
      "svc:verification": "unverified",
    });
    // the description's </script> cannot end the block or inject markup
    expect(html.match(/<script/g)).toHaveLength(1);
    expect(html).toContain("Boilers &amp; leaks. &lt;/script&gt;");
    expect(ld.description).toContain("</script><script>alert(1)</script>");
    expect(html).toContain('<link rel="canonical" href="http://dir.test/businesses/oak-plumbing">');
  });

  it("falls back to LocalBusiness or the closest type", () => {
    expect(schemaType("Dentist")).toBe("Dentist");
    expect(schemaType("Law firm")).toBe("LegalService");
    expect(schemaType("Accountant")).toBe("AccountingService");
    expect(schemaType("Candle maker")).toBe("LocalBusiness");
  });

  it("renders every generated demo profile with parseable JSON-LD", () => {
    for (const raw of generateBusinesses(60, 7)) {
      const x = biz(raw);
      const [ld] = ldBlocks(renderProfile(x, BASE));
      expect(ld!.name).toBe(x.fields.name.value);
      expect((ld!.additionalProperty as Array<{ name: string }>).filter((p) => p.name.startsWith("svc:state:")).length).toBe(
        Object.keys(x.fields).length,
      );
    }
  });
});

describe("llms-full.txt", () => {
  it("has exactly one line per listed profile, newlines in values folded", () => {
    const bs = [
      biz({ id: "a", name: "Alpha\nBuilders", category: "Builder", description: "Line one.\n\nLine two." }),
      biz({ id: "b", name: "Beta Bakery", category: "Bakery", services: ["bread"] }),
      biz({ id: "c", name: "Gamma Cafe", category: "Cafe", listed: false }),
    ];
    const listed = bs.filter((x) => x.listed);
    const text = llmsFull(listed, BASE);
    const lines = text.split("\n").filter((l) => l.startsWith("- "));
    expect(lines).toHaveLength(2);
    expect(lines[0]).toBe(
      "- [Alpha Builders](http://dir.test/businesses/a): Builder; Line one. Line two.; unclaimed; facts as of 2026-06-01",
    );
    expect(lines[1]).toContain("(http://dir.test/businesses/b): Bakery; services: bread");
    expect(text).not.toContain("Gamma");
  });
});
