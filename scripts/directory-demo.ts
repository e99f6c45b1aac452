/**
 * @module directory-demo — the seeded generator of plausible (fictional) businesses: `npx tsx scripts/directory-demo.ts [--n 300] [--seed 20261123]`
 * writes data/directory/businesses.jsonl (the demo `npm start` loads into an empty directory). Also imported by the
 * directory benchmark (100k profiles) and tests. No real people or contact details: names are made of place words,
 * websites and emails use the reserved `.example` top-level domain, phone numbers come from Ofcom's drama ranges.
 */
import { mulberry32 } from "../src/kernels/random.js";
import { mkdirSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

/** Uniform in [0, 1) from the seeded mulberry32 (src/kernels/random.ts). */
export function rng(seed: number): () => number {
  const next = mulberry32(seed);
  return () => next() / 4294967296;
}

interface Trade {
  category: string;
  noun: string[];
  services: string[];
  industries: string[];
  questions: string[];
}

const TRADES: Trade[] = [
  {
    category: "Plumber",
    noun: ["Plumbing", "Plumbing & Heating"],
    services: ["boiler repair", "leak detection", "bathroom installation", "drain unblocking", "radiator fitting", "emergency callout"],
    industries: ["residential", "landlords", "hospitality"],
    questions: ["What needs fixing?", "Is water leaking right now?"],
  },
  {
    category: "Electrician",
    noun: ["Electrical", "Electrics"],
    services: ["rewiring", "fuse board upgrade", "EV charger installation", "lighting design", "safety inspection", "solar panel wiring"],
    industries: ["residential", "retail", "offices"],
    questions: ["What work do you need?"],
  },
  {
    category: "Dentist",
    noun: ["Dental", "Dental Practice", "Smile Clinic"],
    services: ["check-up", "hygienist", "teeth whitening", "implants", "orthodontics", "emergency dentistry"],
    industries: ["families", "private patients"],
    questions: ["Are you a new patient?", "Are you in pain?"],
  },
  {
    category: "Accountant",
    noun: ["Accountants", "Accounting", "Tax Advisers"],
    services: ["bookkeeping", "payroll", "VAT returns", "annual accounts", "tax planning", "company formation"],
    industries: ["startups", "construction", "hospitality", "charities", "freelancers"],
    questions: ["What does your business do?", "Roughly how many transactions a month?"],
  },
  {
    category: "Law firm",
    noun: ["Solicitors", "Law", "Legal"],
    services: ["conveyancing", "employment law", "wills and probate", "family law", "commercial contracts", "dispute resolution"],
    industries: ["property", "small business", "families"],
    questions: ["What is the matter about?"],
  },
  {
    category: "Hair salon",
    noun: ["Hair", "Hair Studio", "Barbers"],
    services: ["cut and finish", "colouring", "balayage", "beard trim", "bridal hair"],
    industries: ["walk-in", "weddings"],
    questions: [],
  },
  {
    category: "Auto repair",
    noun: ["Motors", "Garage", "Auto Care"],
    services: ["MOT testing", "servicing", "brake repair", "diagnostics", "tyre fitting", "clutch replacement"],
    industries: ["private motorists", "fleets"],
    questions: ["What make and model is the car?"],
  },
  {
    category: "Bakery",
    noun: ["Bakery", "Bakehouse"],
    services: ["sourdough bread", "celebration cakes", "pastries", "wholesale supply", "gluten-free baking"],
    industries: ["cafes", "events", "retail"],
    questions: [],
  },
  {
    category: "Cafe",
    noun: ["Coffee", "Café", "Coffee House"],
    services: ["specialty coffee", "breakfast", "brunch", "catering", "private hire"],
    industries: ["hospitality", "events"],
    questions: [],
  },
  {
    category: "Veterinary clinic",
    noun: ["Vets", "Veterinary Clinic", "Animal Hospital"],
    services: ["vaccinations", "neutering", "dental care for pets", "emergency care", "pet microchipping"],
    industries: ["pet owners", "farms", "equine"],
    questions: ["What kind of animal?", "What is the concern?"],
  },
  {
    category: "Physiotherapist",
    noun: ["Physio", "Physiotherapy", "Sports Injury Clinic"],
    services: ["sports massage", "back pain treatment", "post-operative rehab", "acupuncture", "running gait analysis"],
    industries: ["athletes", "office workers", "older adults"],
    questions: ["Where is the pain or injury?"],
  },
  {
    category: "Architect",
    noun: ["Architects", "Architecture", "Design Studio"],
    services: ["house extensions", "planning applications", "loft conversions", "interior design", "listed building consent"],
    industries: ["residential", "commercial property", "heritage"],
    questions: ["What is the project?", "Do you own the property?"],
  },
  {
    category: "IT support",
    noun: ["IT", "Tech Support", "Computing"],
    services: ["managed IT", "network setup", "cybersecurity audit", "Microsoft 365 migration", "data backup", "helpdesk"],
    industries: ["law firms", "clinics", "small business", "schools"],
    questions: ["How many staff use computers?", "What is the main problem?"],
  },
  {
    category: "Marketing agency",
    noun: ["Marketing", "Digital", "Creative Agency"],
    services: ["SEO", "social media management", "branding", "pay-per-click advertising", "content writing", "email campaigns"],
    industries: ["e-commerce", "hospitality", "professional services", "startups"],
    questions: ["What do you want to achieve?", "What is your monthly budget?"],
  },
  {
    category: "Cleaning service",
    noun: ["Cleaning", "Cleaners"],
    services: ["office cleaning", "end of tenancy cleaning", "carpet cleaning", "window cleaning", "deep cleaning"],
    industries: ["offices", "landlords", "residential"],
    questions: ["What kind of premises, and how big?"],
  },
  {
    category: "Locksmith",
    noun: ["Locksmiths", "Locks & Keys"],
    services: ["emergency lockout", "lock replacement", "safe opening", "key cutting", "security upgrades"],
    industries: ["residential", "commercial"],
    questions: [],
  },
  {
    category: "Roofer",
    noun: ["Roofing", "Roofing & Guttering"],
    services: ["roof repair", "flat roofing", "gutter cleaning", "chimney repair", "slate roofing"],
    industries: ["residential", "heritage"],
    questions: ["What is wrong with the roof?"],
  },
  {
    category: "Photographer",
    noun: ["Photography", "Photo Studio"],
    services: ["wedding photography", "product photography", "headshots", "event photography", "drone photography"],
    industries: ["weddings", "e-commerce", "corporate"],
    questions: ["What is the date of the shoot?"],
  },
  {
    category: "Florist",
    noun: ["Flowers", "Florist"],
    services: ["wedding flowers", "funeral tributes", "same-day delivery", "corporate arrangements"],
    industries: ["weddings", "events", "offices"],
    questions: [],
  },
  {
    category: "Fitness studio",
    noun: ["Fitness", "Yoga Studio", "Gym"],
    services: ["personal training", "yoga classes", "pilates", "strength training", "nutrition coaching"],
    industries: ["adults", "seniors", "athletes"],
    questions: ["What are your goals?"],
  },
  {
    category: "Real estate agency",
    noun: ["Estates", "Property", "Lettings"],
    services: ["property sales", "lettings", "property management", "valuations"],
    industries: ["landlords", "first-time buyers", "commercial property"],
    questions: ["Are you buying, selling or letting?"],
  },
  {
    category: "Insurance broker",
    noun: ["Insurance", "Insurance Brokers"],
    services: ["business insurance", "home insurance", "professional indemnity", "fleet insurance"],
    industries: ["construction", "small business", "hospitality"],
    questions: ["What do you need to insure?"],
  },
  {
    category: "Translation service",
    noun: ["Translations", "Language Services"],
    services: ["document translation", "certified translation", "interpreting", "website localisation"],
    industries: ["legal", "medical", "e-commerce"],
    questions: ["Which languages?", "Roughly how many words?"],
  },
  {
    category: "Landscaping",
    noun: ["Landscapes", "Gardens", "Garden Design"],
    services: ["garden design", "patio laying", "fencing", "tree surgery", "lawn care"],
    industries: ["residential", "commercial grounds"],
    questions: ["How big is the garden?"],
  },
  {
    category: "Moving company",
    noun: ["Removals", "Movers"],
    services: ["house removals", "office relocation", "packing service", "storage", "man and van"],
    industries: ["residential", "offices"],
    questions: ["From where to where, and when?"],
  },
  {
    category: "Printing shop",
    noun: ["Print", "Printers"],
    services: ["business cards", "large format printing", "leaflets", "banners", "bookbinding"],
    industries: ["events", "retail", "schools"],
    questions: [],
  },
  {
    category: "Optician",
    noun: ["Opticians", "Eyecare"],
    services: ["eye tests", "contact lenses", "designer frames", "children's eyecare"],
    industries: ["families", "seniors"],
    questions: [],
  },
  {
    category: "Web design studio",
    noun: ["Web Studio", "Web Design", "Digital Studio"],
    services: ["website design", "e-commerce websites", "WordPress development", "web hosting", "accessibility audit"],
    industries: ["small business", "charities", "e-commerce"],
    questions: ["Do you have a website today?", "What is your budget?"],
  },
];

/** Towns (places only) with a region and the first part of a fictional-looking street address. */
const TOWNS: Array<[string, string]> = [
  ["Bristol", "South West"],
  ["Bath", "South West"],
  ["Exeter", "South West"],
  ["Plymouth", "South West"],
  ["Truro", "South West"],
  ["Leeds", "Yorkshire"],
  ["York", "Yorkshire"],
  ["Sheffield", "Yorkshire"],
  ["Norwich", "East of England"],
  ["Cambridge", "East of England"],
  ["Oxford", "South East"],
  ["Reading", "South East"],
  ["Brighton", "South East"],
  ["Manchester", "North West"],
  ["Liverpool", "North West"],
  ["Nottingham", "East Midlands"],
  ["Leicester", "East Midlands"],
  ["Cheltenham", "South West"],
  ["Cardiff", "Wales"],
  ["Glasgow", "Scotland"],
];
const FIRST = [
  "Oak",
  "Harbor",
  "Cedar",
  "North",
  "River",
  "Blue",
  "Summit",
  "Willow",
  "Granite",
  "Meadow",
  "Castle",
  "Bridge",
  "Maple",
  "Copper",
  "Silver",
  "Heath",
  "Elm",
  "Kestrel",
  "Foxglove",
  "Hawthorn",
  "Beacon",
  "Orchard",
  "Juniper",
  "Linden",
  "Ash",
  "Marsh",
  "Vale",
  "Chalk",
  "Fern",
  "Sparrow",
  "Heron",
  "Thistle",
  "Rowan",
  "Clover",
  "Harbour",
  "Quarry",
  "Mill",
  "Wharf",
  "Lantern",
  "Anchor",
];
const SECOND = ["", "field", "gate", "stone", "view", "brook", "wood", "side", "ford", "hill", "well", "bank", "mere", "cross", "dale"];
const STREETS = [
  "Mill Lane",
  "High Street",
  "Station Road",
  "Church Street",
  "Victoria Road",
  "Market Place",
  "Queen Street",
  "Park Road",
  "King Street",
  "Bridge Street",
  "Castle Hill",
  "Orchard Way",
];
const ADJ = ["friendly", "independent", "family-run", "award-winning", "long-established", "small", "specialist"];

const pick = <T>(r: () => number, a: readonly T[]): T => a[Math.floor(r() * a.length)]!;
function some<T>(r: () => number, a: readonly T[], min: number, max: number): T[] {
  const n = Math.min(a.length, min + Math.floor(r() * (max - min + 1)));
  const copy = [...a];
  for (let i = copy.length - 1; i > 0; i--) {
    const j = Math.floor(r() * (i + 1));
    [copy[i], copy[j]] = [copy[j]!, copy[i]!];
  }
  return copy.slice(0, n);
}
const slugOf = (s: string) =>
  s
    .normalize("NFKD")
    .replace(/[\u0300-\u036f]/g, "")
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "");
const pad = (n: number, w: number) => String(n).padStart(w, "0");

/** `n` import records (the JSON Lines objects `svc directory import` reads), deterministic in `seed`. About 1 in 12 is claimed, half of those take bookings. */
export function generateBusinesses(n: number, seed = 20261123): Array<Record<string, unknown>> {
  const r = rng(seed);
  const out: Array<Record<string, unknown>> = [];
  const used = new Set<string>();
  for (let i = 0; i < n; i++) {
    const trade = pick(r, TRADES);
    const [town, region] = pick(r, TOWNS);
    let name = "";
    let id = "";
    for (let tries = 0; tries < 20; tries++) {
      const a = pick(r, FIRST);
      const b = pick(r, SECOND);
      name = `${a}${b} ${pick(r, trade.noun)}`;
      id = slugOf(`${name} ${town}`);
      if (!used.has(id)) break;
    }
    for (let k = 2; used.has(id); k++) id = `${slugOf(`${name} ${town}`)}-${k}`;
    used.add(id);
    const services = some(r, trade.services, 2, 5);
    const industries = some(r, trade.industries, 1, 3);
    const near = some(
      r,
      TOWNS.filter(([, reg]) => reg === region).map(([t]) => t),
      1,
      3,
    );
    const areas = [...new Set([town, ...near])];
    const year = 1975 + Math.floor(r() * 49);
    const site = `https://${slugOf(name)}-${slugOf(town)}.example/`;
    const month = 6 + Math.floor(r() * 5);
    const adj = pick(r, ADJ);
    const list = (a: string[]) => (a.length > 1 ? `${a.slice(0, -1).join(", ")} and ${a[a.length - 1]}` : a[0]!);
    const rec: Record<string, unknown> = {
      id,
      name,
      category: trade.category,
      description: `${name} is ${/^[aeiou]/.test(adj) ? "an" : "a"} ${adj} ${trade.category.toLowerCase()} in ${town} offering ${list(services)} for ${list(industries)} clients. Established ${year}.`,
      services,
      industries,
      areas,
      website: site,
      email: `hello@${slugOf(name)}-${slugOf(town)}.example`,
      phone: r() < 0.5 ? `+44 1632 960${pad(Math.floor(r() * 1000), 3)}` : `+44 20 7946 0${pad(Math.floor(r() * 1000), 3)}`,
      address: { street: `${1 + Math.floor(r() * 120)} ${pick(r, STREETS)}`, locality: town, region, country: "GB" },
      source_url: site,
      source_date: `2026-${pad(month, 2)}-${pad(1 + Math.floor(r() * 28), 2)}`,
    };
    if (r() < 1 / 12) {
      rec.owner = { name: `Owner of ${name}`, email: `owner@${slugOf(name)}-${slugOf(town)}.example` };
      if (r() < 0.5) {
        const late = r() < 0.5;
        rec.booking = {
          utc_offset: "+00:00",
          hours: {
            mon: ["09:00-12:30", "13:30-17:00"],
            tue: ["09:00-17:00"],
            wed: ["09:00-12:30", "13:30-17:00"],
            thu: ["09:00-17:00"],
            fri: ["09:00-16:00"],
            ...(late ? { sat: ["10:00-13:00"] } : {}),
          },
          slot_minutes: pick(r, [15, 30, 30, 45, 60]),
          questions: trade.questions.map((text, q) => ({ text, required: q === 0 })),
        };
      }
    }
    out.push(rec);
  }
  return out;
}

/** Writes the demo file. */
function main(): void {
  const arg = (name: string, dflt: number) => {
    const at = process.argv.indexOf(`--${name}`);
    return at >= 0 ? Number(process.argv[at + 1]) : dflt;
  };
  const n = arg("n", 300);
  const seed = arg("seed", 20261123);
  const dir = fileURLToPath(new URL("../data/directory/", import.meta.url));
  mkdirSync(dir, { recursive: true });
  const recs = generateBusinesses(n, seed);
  writeFileSync(`${dir}businesses.jsonl`, recs.map((x) => JSON.stringify(x)).join("\n") + "\n");
  process.stdout.write(
    `wrote ${recs.length} businesses (seed ${seed}, ${recs.filter((x) => x.owner).length} claimed, ${recs.filter((x) => x.booking).length} taking bookings) to data/directory/businesses.jsonl\n`,
  );
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) main();
