/** @module task-parser — deterministic rules turning a household-task sentence plus receptacle list into an ALFRED entry point, object type and target type. */
import { z } from "zod";
import { SvcError } from "../errors.js";
import { parseArgs } from "./args.js";

/** The six ALFRED task families; these names are the only possible `entry_point` values. */
export const ENTRY_POINTS = [
  "pick_and_place_simple",
  "look_at_obj_in_light",
  "pick_clean_then_place_in_recep",
  "pick_heat_then_place_in_recep",
  "pick_cool_then_place_in_recep",
  "pick_two_obj_and_place",
] as const;
export type EntryPoint = (typeof ENTRY_POINTS)[number];

export interface ParsedTask {
  entry_point: EntryPoint;
  object_type: string;
  target_type: string;
}

const TaskParserArgs = z.object({ task: z.string(), receptacles: z.array(z.string()) }).strict();
export type TaskParserArgs = z.input<typeof TaskParserArgs>;

// ---------------------------------------------------------------- vocabulary

/** Words that mark a family; matched against whole tokens. */
const HEAT = new Set([
  "heat",
  "heated",
  "heats",
  "heating",
  "hot",
  "warm",
  "warmed",
  "warms",
  "warming",
  "cook",
  "cooked",
  "cooks",
  "microwaved",
  "microwaving",
]);
const COOL = new Set([
  "cool",
  "cooled",
  "cools",
  "cooling",
  "cold",
  "chill",
  "chilled",
  "chills",
  "chilling",
  "refrigerate",
  "refrigerated",
  "freeze",
  "frozen",
  "froze",
]);
const CLEAN = new Set([
  "clean",
  "cleaned",
  "cleans",
  "cleaning",
  "rinse",
  "rinsed",
  "rinses",
  "rinsing",
  "wash",
  "washed",
  "washes",
  "washing",
  "scrub",
  "scrubbed",
]);
const TWO = new Set(["two", "2", "both", "pair", "couple"]);
const LOOK = new Set([
  "look",
  "looking",
  "examine",
  "examining",
  "inspect",
  "inspecting",
  "view",
  "study",
  "observe",
  "read",
  "check",
  "see",
  "illuminate",
  "turn",
  "switch",
]);

/** Verbs after which the object phrase starts (particles such as "up" are skipped). */
const VERBS = new Set([
  ...HEAT,
  ...COOL,
  ...CLEAN,
  ...LOOK,
  "put",
  "puts",
  "place",
  "places",
  "set",
  "move",
  "moves",
  "bring",
  "take",
  "takes",
  "pick",
  "picks",
  "grab",
  "get",
  "carry",
  "drop",
  "find",
  "finds",
  "throw",
  "toss",
  "insert",
  "store",
  "stow",
  "transfer",
  "deliver",
  "lay",
  "leave",
  "hold",
  "microwave",
  "fetch",
  "retrieve",
  "locate",
  "search",
  "use",
]);
/** Verbs that move an object somewhere: with one, a listed lamp alone does not make a look task. */
const PLACE_VERBS = new Set([
  "put",
  "puts",
  "place",
  "places",
  "set",
  "move",
  "moves",
  "bring",
  "drop",
  "throw",
  "toss",
  "insert",
  "store",
  "stow",
  "transfer",
  "deliver",
  "lay",
  "leave",
]);
const PARTICLES = new Set(["up", "off", "down", "out", "away", "over", "at", "on", "for"]);

/** Words that end an object phrase. */
const STOPS = new Set([
  "in",
  "into",
  "on",
  "onto",
  "inside",
  "to",
  "at",
  "atop",
  "within",
  "from",
  "and",
  "then",
  "under",
  "underneath",
  "beneath",
  "below",
  "with",
  "by",
  "using",
  "near",
  "next",
  "beside",
  "while",
  "in",
  "of",
  "out",
  "off",
  "for",
  "so",
  "after",
  "before",
  "when",
  "until",
  "that",
  "which",
  "light",
]);

/** Prepositions that put the following receptacle in the destination role. */
const PLACE_PREPS = new Set(["in", "into", "on", "onto", "inside", "to", "at", "atop", "within"]);
/** Prepositions that put the following receptacle in the source role. */
const SOURCE_PREPS = new Set(["from", "off", "out"]);

/** Determiners, quantifiers and family adjectives stripped from an object phrase. */
const FILLER = new Set([
  ...HEAT,
  ...COOL,
  ...CLEAN,
  ...TWO,
  "a",
  "an",
  "the",
  "some",
  "any",
  "one",
  "of",
  "another",
  "other",
  "single",
  "first",
  "second",
  "each",
  "your",
  "my",
  "that",
  "this",
  "these",
  "those",
  "please",
  "piece",
  "pieces",
]);
const PRONOUNS = new Set(["it", "them", "they", "one", "both", "ones", "itself", "that", "this", "those", "these"]);

/** ALFRED object types (lower-case, compact), used to read multi-word object names. */
const OBJECT_TYPES = [
  "alarmclock",
  "apple",
  "aluminumfoil",
  "baseballbat",
  "basketball",
  "book",
  "boots",
  "bottle",
  "bowl",
  "box",
  "bread",
  "butterknife",
  "candle",
  "cd",
  "cellphone",
  "cloth",
  "creditcard",
  "cup",
  "dishsponge",
  "egg",
  "footstool",
  "fork",
  "glassbottle",
  "handtowel",
  "houseplant",
  "kettle",
  "keychain",
  "knife",
  "ladle",
  "laptop",
  "lettuce",
  "mug",
  "newspaper",
  "pan",
  "papertowelroll",
  "pen",
  "pencil",
  "peppershaker",
  "pillow",
  "plate",
  "plunger",
  "pot",
  "potato",
  "remotecontrol",
  "saltshaker",
  "scrubbrush",
  "soapbar",
  "soapbottle",
  "spatula",
  "spoon",
  "spraybottle",
  "statue",
  "tennisracket",
  "teddybear",
  "tissuebox",
  "toiletpaper",
  "tomato",
  "towel",
  "vase",
  "watch",
  "wateringcan",
  "winebottle",
];
/** Everyday names for ALFRED object types. */
const OBJECT_SYNONYMS: Record<string, string> = {
  remote: "remotecontrol",
  tvremote: "remotecontrol",
  clock: "alarmclock",
  phone: "cellphone",
  mobilephone: "cellphone",
  smartphone: "cellphone",
  card: "creditcard",
  keys: "keychain",
  key: "keychain",
  keyring: "keychain",
  soap: "soapbar",
  sponge: "dishsponge",
  plant: "houseplant",
  papertowel: "papertowelroll",
  papertowels: "papertowelroll",
  racket: "tennisracket",
  bat: "baseballbat",
  teddy: "teddybear",
  wine: "winebottle",
  computer: "laptop",
  notebook: "laptop",
  disc: "cd",
  compactdisc: "cd",
  salt: "saltshaker",
  pepper: "peppershaker",
  loaf: "bread",
};
/** ALFRED receptacle types: a two-word name of one of these that the list lacks is not read as a partial match. */
const RECEPTACLE_TYPES = new Set([
  "armchair",
  "bathtubbasin",
  "bed",
  "box",
  "cabinet",
  "cart",
  "coffeemachine",
  "coffeetable",
  "countertop",
  "desk",
  "desklamp",
  "diningtable",
  "drawer",
  "dresser",
  "floorlamp",
  "fridge",
  "garbagecan",
  "handtowelholder",
  "laundryhamper",
  "microwave",
  "ottoman",
  "safe",
  "shelf",
  "sidetable",
  "sinkbasin",
  "sofa",
  "stoveburner",
  "toaster",
  "toilet",
  "toiletpaperhanger",
  "towelholder",
  "tvstand",
]);
/** Everyday names for ALFRED receptacle types; each value is tried against the list. */
const RECEPTACLE_SYNONYMS: Record<string, string[]> = {
  fridge: ["fridge", "refrigerator"],
  refrigerator: ["fridge", "refrigerator"],
  coffeemaker: ["coffeemachine"],
  coffeepot: ["coffeemachine"],
  trash: ["garbagecan"],
  trashcan: ["garbagecan"],
  bin: ["garbagecan"],
  trashbin: ["garbagecan"],
  wastebasket: ["garbagecan"],
  garbage: ["garbagecan"],
  garbagebin: ["garbagecan"],
  tub: ["bathtubbasin", "bathtub"],
  bathtub: ["bathtubbasin", "bathtub"],
  bath: ["bathtubbasin", "bathtub"],
  couch: ["sofa"],
  counter: ["countertop"],
  kitchencounter: ["countertop"],
  stove: ["stoveburner"],
  burner: ["stoveburner"],
  stovetop: ["stoveburner"],
  oven: ["microwave"],
  tv: ["tvstand"],
  television: ["tvstand"],
  nightstand: ["nightstand", "sidetable"],
  hamper: ["laundryhamper"],
  basket: ["laundryhamper"],
  sink: ["sinkbasin", "sink"],
  lamp: ["desklamp", "floorlamp"],
  light: ["desklamp", "floorlamp"],
};

// ---------------------------------------------------------------- words

/** Lower-case word tokens; "on top of" reads as "onto", "next to" as "at". */
function tokenize(text: string): string[] {
  return text
    .toLowerCase()
    .replace(/[’']s\b/g, "")
    .replace(/[^a-z0-9]+/g, " ")
    .replace(/\bon top of\b/g, "onto")
    .replace(/\b(next to|close to)\b/g, "at")
    .replace(/\b(a )?(pair|couple) of\b/g, "two")
    .replace(/\b(pieces?|slices?|loaf|loaves|bunch|head|bar|roll) of\b/g, " ")
    .replace(/\bbottles? of wine\b/g, "wine bottle")
    .replace(/ +/g, " ")
    .trim()
    .split(" ")
    .filter((w) => w !== "");
}

/** Possible singular forms of a word, the word itself first. */
function singulars(word: string): string[] {
  const out = [word];
  if (word.endsWith("ies") && word.length > 4) out.push(`${word.slice(0, -3)}y`);
  if (word.endsWith("ves")) out.push(`${word.slice(0, -3)}f`, `${word.slice(0, -3)}fe`);
  if (word.endsWith("es")) out.push(word.slice(0, -2));
  if (word.endsWith("s") && !word.endsWith("ss")) out.push(word.slice(0, -1));
  return out;
}

/** The one singular form used when no vocabulary decides. */
function singular(word: string): string {
  if (/ies$/.test(word) && word.length > 4) return `${word.slice(0, -3)}y`;
  if (/(sses|ches|shes|xes|zes|oes)$/.test(word)) return word.slice(0, -2);
  if (/[^su]s$/.test(word) && !/(is|us)$/.test(word)) return word.slice(0, -1);
  return word;
}

/** Compact form: the words joined without separators ("coffee machine" -> "coffeemachine"). */
const compact = (words: string[]) => words.join("");

// ---------------------------------------------------------------- receptacles

interface ReceptacleType {
  /** As written in the list (lower-case, identifier removed), e.g. "sinkbasin" or "sink basin". */
  name: string;
  /** `name` without separators, for matching. */
  key: string;
}

/** "cabinet 3" -> "cabinet"; "Sink Basin 2" -> "sink basin"; "Cabinet|+01.2|3" -> "cabinet"; "fridge" -> "fridge". */
function receptacleType(item: string, i: number): string {
  let words = item
    .trim()
    .toLowerCase()
    .split(/\s+/)
    .filter((w) => w !== "");
  if (words.length === 1) words = [words[0]!.split("|")[0]!.replace(/[_#-]?\d+$/, "")];
  else if (/\d/.test(words[words.length - 1]!)) words = words.slice(0, -1);
  const name = words.join(" ").replace(/[_#-]+$/, "");
  if (!/[a-z]/.test(name))
    throw new SvcError(
      "E_BAD_REQUEST",
      `task-parser: receptacles.${i}: expected a type name followed by an identifier, like "cabinet 3"; got ${JSON.stringify(item)}`,
      { field: `receptacles.${i}` },
    );
  return name;
}

function receptacleTypes(items: string[]): ReceptacleType[] {
  const seen = new Map<string, ReceptacleType>();
  items.forEach((item, i) => {
    const name = receptacleType(item, i);
    const key = name.replace(/[^a-z0-9]/g, "");
    if (!seen.has(key)) seen.set(key, { name, key });
  });
  return [...seen.values()];
}

const isLight = (t: ReceptacleType) => /(lamp|light)$/.test(t.key) && !t.key.includes("switch");

interface Mention {
  type: ReceptacleType;
  /** Token index of the first and one past the last word of the mention. */
  start: number;
  end: number;
}

/**
 * The list type a compact phrase names: an exact (or plural) match, then an everyday synonym,
 * then — for a single word of four letters or more — a type ending with it, its head noun
 * ("table" -> "diningtable", "lamp" -> "desklamp"); the first in list order wins ties.
 * Prefixes ("sink" -> "sinkbasin") go through the synonyms only, so "desk" never reads as
 * "desklamp". `loose: false` allows exact matches only.
 */
function matchReceptacle(words: string[], types: ReceptacleType[], loose: boolean): ReceptacleType | undefined {
  const last = words[words.length - 1]!;
  const candidates = singulars(last).map((s) => compact([...words.slice(0, -1), s]));
  for (const c of candidates) {
    const exact = types.find((t) => t.key === c);
    if (exact !== undefined) return exact;
  }
  if (!loose) return undefined;
  for (const c of candidates) {
    for (const alias of RECEPTACLE_SYNONYMS[c] ?? []) {
      const hit = types.find((t) => t.key === alias);
      if (hit !== undefined) return hit;
    }
  }
  if (words.length !== 1) return undefined;
  for (const c of candidates) {
    if (c.length < 4 || FILLER.has(c) || STOPS.has(c)) continue;
    const hit = types.find((t) => t.key.endsWith(c));
    if (hit !== undefined) return hit;
  }
  return undefined;
}

/** Receptacle mentions in tokens [from, tokens.length), longest phrase first, left to right. */
function findMentions(tokens: string[], from: number, types: ReceptacleType[]): Mention[] {
  const out: Mention[] = [];
  for (let i = from; i < tokens.length;) {
    let found: Mention | undefined;
    // "desk lamp" names a desklamp: with only a floorlamp listed, "lamp" must not match it.
    const compound = i > 0 && singulars(tokens[i]!).some((s) => RECEPTACLE_TYPES.has(compact([tokens[i - 1]!, s])));
    for (let n = Math.min(3, tokens.length - i); n >= 1 && found === undefined; n--) {
      const type = matchReceptacle(tokens.slice(i, i + n), types, !(compound && n === 1));
      if (type !== undefined) found = { type, start: i, end: i + n };
    }
    if (found === undefined) i++;
    else {
      out.push(found);
      i = found.end;
    }
  }
  return out;
}

/** The nearest preposition before token `index` (skipping determiners), or undefined. */
function governingPrep(tokens: string[], index: number): string | undefined {
  for (let i = index - 1; i >= 0; i--) {
    const w = tokens[i]!;
    if (PLACE_PREPS.has(w) || SOURCE_PREPS.has(w) || STOPS.has(w)) return w;
    if (!FILLER.has(w)) return undefined;
  }
  return undefined;
}

// ---------------------------------------------------------------- objects

/** Object phrases: the words after each verb (and its particles) up to the next stop word. */
function objectPhrases(tokens: string[]): { words: string[]; start: number; end: number }[] {
  const out: { words: string[]; start: number; end: number }[] = [];
  for (let i = 0; i < tokens.length; i++) {
    if (!VERBS.has(tokens[i]!)) continue;
    let j = i + 1;
    while (j < tokens.length && PARTICLES.has(tokens[j]!)) j++;
    const start = j;
    while (j < tokens.length && !STOPS.has(tokens[j]!) && !(VERBS.has(tokens[j]!) && !FILLER.has(tokens[j]!))) j++;
    out.push({ words: tokens.slice(start, j), start, end: j });
  }
  return out;
}

/** The object type a phrase names, fillers stripped; undefined for a pronoun or nothing. */
function objectType(phrase: string[]): string | undefined {
  const words = phrase.filter((w) => !FILLER.has(w));
  if (words.length === 0 || words.every((w) => PRONOUNS.has(w))) return undefined;
  // Longest known name ending at the phrase's last word, e.g. "alarm clock", "credit cards".
  for (let n = Math.min(3, words.length); n >= 1; n--) {
    const tail = words.slice(words.length - n);
    for (const s of singulars(tail[tail.length - 1]!)) {
      const key = compact([...tail.slice(0, -1), s]);
      if (OBJECT_TYPES.includes(key)) return key;
      const synonym = OBJECT_SYNONYMS[key];
      if (synonym !== undefined) return synonym;
    }
  }
  // Unknown: the words joined, the last one singular ("paper clips" -> "paperclip").
  return compact([...words.slice(0, -1), singular(words[words.length - 1]!)]);
}

// ---------------------------------------------------------------- parser

/** The light sources of ALFWorld rooms (objects there, not receptacles). */
const LAMP_TYPES = new Set(["desklamp", "floorlamp"]);

/** The lamp type a sentence names: "desklamp", "desk lamp", "floor lamps", ... (undefined for a bare "lamp"). */
function namedLamp(tokens: string[]): string | undefined {
  for (const [i, w] of tokens.entries()) {
    for (const key of [...singulars(w), ...singulars(tokens[i + 1] ?? "").map((s) => w + s)]) if (LAMP_TYPES.has(key)) return key;
  }
  return undefined;
}

function bad(task: string, why: string): SvcError {
  return new SvcError("E_BAD_REQUEST", `task-parser: task: ${why}: ${JSON.stringify(task)}`, { field: "task" });
}

/** The first family word in the sentence decides among clean, heat and cool. */
function modifierFamily(tokens: string[]): EntryPoint | undefined {
  for (const [i, w] of tokens.entries()) {
    if (CLEAN.has(w)) return "pick_clean_then_place_in_recep";
    if (HEAT.has(w) || (w === "microwave" && i === 0)) return "pick_heat_then_place_in_recep";
    if (COOL.has(w)) return "pick_cool_then_place_in_recep";
  }
  return undefined;
}

/**
 * Parse a task sentence against the room's receptacle list.
 *
 * - look_at_obj_in_light: a looking verb (look, examine, inspect, read, turn on, ...) and a
 *   light source; the target is the listed lamp the sentence names, else the lamp type it
 *   names ("desklamp", "floor lamp": lamps need not be listed), else for a bare "lamp" or
 *   "light" the list's only kind of lamp.
 * - otherwise clean / heat / cool by the first family word ("a clean mug", "heat some egg",
 *   "chilled apple"), else pick_two_obj_and_place for "two", "2", "both", "a pair of", else
 *   pick_and_place_simple.
 * - The object is the first non-pronoun phrase after a verb; the target is the last
 *   receptacle of the list named after the object phrase in a destination role (after in,
 *   into, on, onto, to, ...; "from the fridge" is a source, not a target).
 *
 * Throws E_BAD_REQUEST (field `task`) when no object or no listed target can be found.
 */
export function parseTask(task: string, receptacles: string[]): ParsedTask {
  const types = receptacleTypes(receptacles);
  const tokens = tokenize(task);
  if (tokens.length === 0) throw bad(task, "empty sentence");
  if (types.length === 0)
    throw new SvcError("E_BAD_REQUEST", "task-parser: receptacles: the list is empty, so no target can be chosen", {
      field: "receptacles",
    });

  const phrases = objectPhrases(tokens);
  const lookVerb = tokens.some(
    (w, i) =>
      LOOK.has(w) &&
      ((w !== "turn" && w !== "switch") || ["on", "up"].includes(tokens[i + 1] ?? "")) &&
      !(w === "look" && tokens[i + 1] === "for"),
  );
  const lightMentions = findMentions(tokens, 0, types.filter(isLight));
  const lightByPosition = lightMentions.some((m) =>
    ["under", "underneath", "beneath", "below", "with", "by", "using", "near", "at"].includes(governingPrep(tokens, m.start) ?? ""),
  );
  const namesLight = tokens.some((w) => /^(lamps?|lights?)$/.test(w) || /.+lamps?$/.test(w));
  const placeVerb = tokens.some((w) => PLACE_VERBS.has(w));
  const lightTask = lookVerb
    ? namesLight || lightMentions.length > 0 || (!placeVerb && types.some(isLight))
    : lightByPosition && !placeVerb;

  if (lightTask) {
    // The lamp: a listed one the sentence names; else the lamp type the sentence names (in
    // ALFWorld lamps are objects, so "look at the alarmclock under the desklamp" need not list
    // it); else, for a bare "lamp" or "light", the list's only kind of lamp.
    const named = namedLamp(tokens);
    const target = lightMentions[0]?.type.name ?? named ?? types.find(isLight)?.name;
    if (target === undefined) throw bad(task, "it names no kind of lamp (desklamp, floorlamp) and the receptacle list has none");
    const inLight = (start: number, end: number) => lightMentions.some((m) => m.start < end && m.end > start);
    let object: string | undefined;
    for (const p of phrases) {
      if (inLight(p.start, p.end)) continue;
      object = objectType(p.words.filter((w) => !/^(lamps?|lights?)$/.test(w)));
      if (object !== undefined && !LAMP_TYPES.has(object)) break;
      object = undefined;
    }
    if (object === undefined) throw bad(task, "no object to look at");
    return { entry_point: "look_at_obj_in_light", object_type: object, target_type: target };
  }

  let objectEnd = 0;
  let object: string | undefined;
  for (const p of phrases) {
    object = objectType(p.words);
    if (object !== undefined) {
      objectEnd = p.end;
      break;
    }
  }
  if (object === undefined && phrases.length === 0) {
    // No verb: "a clean mug in the coffee machine" — the words before the first preposition.
    const stop = tokens.findIndex((w) => PLACE_PREPS.has(w));
    if (stop > 0) {
      object = objectType(tokens.slice(0, stop));
      objectEnd = stop;
    }
  }
  if (object === undefined) throw bad(task, "no object found");

  const mentions = findMentions(tokens, objectEnd, types);
  const roles = mentions.map((m) => ({ m, prep: governingPrep(tokens, m.start) }));
  const destination =
    [...roles].reverse().find((r) => r.prep !== undefined && PLACE_PREPS.has(r.prep)) ??
    [...roles].reverse().find((r) => r.prep === undefined || !SOURCE_PREPS.has(r.prep));
  if (destination === undefined) throw bad(task, `no target receptacle of the list (${types.map((t) => t.name).join(", ")}) is named`);

  const entry = modifierFamily(tokens) ?? (tokens.some((w) => TWO.has(w)) ? "pick_two_obj_and_place" : "pick_and_place_simple");
  return { entry_point: entry, object_type: object, target_type: destination.m.type.name };
}

/** Validate `{task, receptacles}` (no other properties) and parse; returns `{entry_point, object_type, target_type}`. */
export function build(args: unknown): ParsedTask {
  const a = parseArgs("task-parser", TaskParserArgs, args);
  return parseTask(a.task, a.receptacles);
}
