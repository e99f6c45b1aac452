/** @module task-parser.test — sentences of all six ALFRED families, plural and multi-word receptacles, and the errors. */
import { describe, expect, it } from "vitest";
import { build, ENTRY_POINTS, parseTask } from "../../src/helpers/task-parser.js";

const KITCHEN = [
  "countertop 1",
  "countertop 2",
  "cabinet 1",
  "cabinet 2",
  "cabinet 3",
  "fridge 1",
  "sinkbasin 1",
  "microwave 1",
  "coffeemachine 1",
  "garbagecan 1",
  "drawer 1",
  "drawer 2",
  "drawer 3",
  "diningtable 1",
  "stoveburner 1",
  "stoveburner 2",
  "shelf 1",
  "shelf 2",
];
const BEDROOM = [
  "bed 1",
  "desk 1",
  "desklamp 1",
  "drawer 1",
  "drawer 2",
  "dresser 1",
  "garbagecan 1",
  "shelf 1",
  "shelf 2",
  "safe 1",
  "box 1",
  "sidetable 1",
];
const LIVING = [
  "sofa 1",
  "armchair 1",
  "coffeetable 1",
  "floorlamp 1",
  "tvstand 1",
  "box 1",
  "box 2",
  "drawer 1",
  "cabinet 1",
  "sidetable 1",
  "ottoman 1",
];
const SPACED = ["Sink Basin 1", "Coffee Machine 1", "Garbage Can 2", "Desk Lamp 1", "Counter Top 3", "Cabinet 4"];

type Case = [task: string, receptacles: string[], entry: (typeof ENTRY_POINTS)[number], object: string, target: string];

const CASES: Case[] = [
  // ALFRED template phrasings
  ["put a clean mug in coffeemachine", KITCHEN, "pick_clean_then_place_in_recep", "mug", "coffeemachine"],
  ["heat some egg and put it in countertop", KITCHEN, "pick_heat_then_place_in_recep", "egg", "countertop"],
  ["cool some apple and put it in fridge", KITCHEN, "pick_cool_then_place_in_recep", "apple", "fridge"],
  ["look at alarmclock under the desklamp", BEDROOM, "look_at_obj_in_light", "alarmclock", "desklamp"],
  ["find two pillow and put them in sofa", LIVING, "pick_two_obj_and_place", "pillow", "sofa"],
  ["put some keychain on dresser", BEDROOM, "pick_and_place_simple", "keychain", "dresser"],
  ["examine the book with the desklamp", BEDROOM, "look_at_obj_in_light", "book", "desklamp"],
  ["put a hot potato in fridge", KITCHEN, "pick_heat_then_place_in_recep", "potato", "fridge"],
  ["put a cool tomato in microwave", KITCHEN, "pick_cool_then_place_in_recep", "tomato", "microwave"],
  ["clean some fork and put it in drawer", KITCHEN, "pick_clean_then_place_in_recep", "fork", "drawer"],
  ["put two cellphone in bed", BEDROOM, "pick_two_obj_and_place", "cellphone", "bed"],
  ["examine the watch with the floorlamp", LIVING, "look_at_obj_in_light", "watch", "floorlamp"],
  // plural receptacles reduce to the listed singular type
  ["put two pencils in drawers", BEDROOM, "pick_two_obj_and_place", "pencil", "drawer"],
  ["place two cds in the cabinets", KITCHEN, "pick_two_obj_and_place", "cd", "cabinet"],
  ["put a pair of vases on the shelves", BEDROOM, "pick_two_obj_and_place", "vase", "shelf"],
  ["put two tissue boxes in boxes", LIVING, "pick_two_obj_and_place", "tissuebox", "box"],
  ["move both remotes to the boxes", LIVING, "pick_two_obj_and_place", "remotecontrol", "box"],
  ["put the knives in one of the drawers", KITCHEN, "pick_and_place_simple", "knife", "drawer"],
  // multi-word names against compact list types, and the reverse
  ["wash the plate in the sink basin and put it on the counter", KITCHEN, "pick_clean_then_place_in_recep", "plate", "countertop"],
  ["put a hot mug in the coffee machine", KITCHEN, "pick_heat_then_place_in_recep", "mug", "coffeemachine"],
  ["throw a chilled tomato in the garbage can", KITCHEN, "pick_cool_then_place_in_recep", "tomato", "garbagecan"],
  ["turn on the desk lamp and look at the alarm clock", BEDROOM, "look_at_obj_in_light", "alarmclock", "desklamp"],
  ["hold the vase under the floor lamp", LIVING, "look_at_obj_in_light", "vase", "floorlamp"],
  ["rinse the mug in the sink and put it in the coffeemachine", SPACED, "pick_clean_then_place_in_recep", "mug", "coffee machine"],
  ["put the credit card in the trash", SPACED, "pick_and_place_simple", "creditcard", "garbage can"],
  ["look at the book under the desklamp", SPACED, "look_at_obj_in_light", "book", "desk lamp"],
  ["put a clean bowl on the countertop", SPACED, "pick_clean_then_place_in_recep", "bowl", "counter top"],
  // everyday phrasings
  ["rinse off a ladle and move it to the table", KITCHEN, "pick_clean_then_place_in_recep", "ladle", "diningtable"],
  ["take the apple out of the fridge and place it on the dining table", KITCHEN, "pick_and_place_simple", "apple", "diningtable"],
  ["microwave the potato and put it on the counter", KITCHEN, "pick_heat_then_place_in_recep", "potato", "countertop"],
  ["put the mug in the microwave", KITCHEN, "pick_and_place_simple", "mug", "microwave"],
  ["Put the cooked egg on the stove.", KITCHEN, "pick_heat_then_place_in_recep", "egg", "stoveburner"],
  ["put a cold bottle of wine in the cabinet", KITCHEN, "pick_cool_then_place_in_recep", "winebottle", "cabinet"],
  ["put a bar of soap in the garbage can", KITCHEN, "pick_and_place_simple", "soapbar", "garbagecan"],
  ["look for the apple and put it in the fridge", BEDROOM.concat(["fridge 1"]), "pick_and_place_simple", "apple", "fridge"],
  ["put the pencil on the desk", BEDROOM, "pick_and_place_simple", "pencil", "desk"],
  ["pick up the cd and turn on the lamp", BEDROOM, "look_at_obj_in_light", "cd", "desklamp"],
  ["carry the statue to the side table", LIVING, "pick_and_place_simple", "statue", "sidetable"],
  ["pick up two keys and drop them in the safe", BEDROOM, "pick_two_obj_and_place", "keychain", "safe"],
];

describe("task parser", () => {
  it(`parses ${CASES.length} sentences across all six families`, () => {
    for (const [task, receptacles, entry_point, object_type, target_type] of CASES) {
      expect(build({ task, receptacles }), task).toEqual({ entry_point, object_type, target_type });
    }
    expect(new Set(CASES.map((c) => c[2]))).toEqual(new Set(ENTRY_POINTS));
  });

  it("returns only types found in the list as targets, as written there", () => {
    for (const [task, receptacles] of CASES) {
      const { target_type } = parseTask(task, receptacles);
      const listed = receptacles.map((r) => r.toLowerCase().replace(/\s+\S*\d\S*$/, ""));
      expect(listed, task).toContain(target_type);
    }
  });

  it("is deterministic and ignores case, punctuation and receptacle order of identifiers", () => {
    const a = build({ task: "PUT two Pencils in Drawers!", receptacles: ["drawer 2", "Drawer 1", "desk 1"] });
    const b = build({ task: "put two pencils in drawers", receptacles: ["desk 1", "drawer 1"] });
    expect(a).toEqual(b);
    expect(a).toEqual({ entry_point: "pick_two_obj_and_place", object_type: "pencil", target_type: "drawer" });
  });

  it("rejects unparseable tasks with E_BAD_REQUEST on task", () => {
    const bad: [string, string[]][] = [
      ["", KITCHEN],
      ["   ", KITCHEN],
      ["put the apple in the bathtub", KITCHEN], // target not in the list
      ["hello there", KITCHEN],
      ["put it in the fridge", KITCHEN], // no object
      ["look at the watch under the lamp", ["sofa 1", "drawer 1"]], // a bare lamp, and none listed
    ];
    for (const [task, receptacles] of bad) {
      expect(() => build({ task, receptacles }), task).toThrow(expect.objectContaining({ code: "E_BAD_REQUEST", field: "task" }));
    }
  });

  // ALFWorld's own task sentences (its six goal templates) against an ALFWorld room's receptacle
  // list: lamps are objects there, so the list has none and the lamp type comes from the sentence.
  const ALFWORLD_ROOM = [
    "bed 1",
    "desk 1",
    "drawer 1",
    "drawer 2",
    "drawer 3",
    "dresser 1",
    "garbagecan 1",
    "laundryhamper 1",
    "safe 1",
    "shelf 1",
    "shelf 2",
    "sidetable 1",
  ];
  const ALFWORLD_KITCHEN = [
    "cabinet 1",
    "cabinet 2",
    "coffeemachine 1",
    "countertop 1",
    "countertop 2",
    "diningtable 1",
    "drawer 1",
    "fridge 1",
    "garbagecan 1",
    "microwave 1",
    "sinkbasin 1",
    "stoveburner 1",
    "toaster 1",
  ];
  it.each([
    ["look at alarmclock under the desklamp.", ALFWORLD_ROOM, "look_at_obj_in_light", "alarmclock", "desklamp"],
    ["examine the book with the desklamp.", ALFWORLD_ROOM, "look_at_obj_in_light", "book", "desklamp"],
    ["look at cd under the floorlamp.", ALFWORLD_ROOM, "look_at_obj_in_light", "cd", "floorlamp"],
    ["examine the pillow with the floorlamp.", ALFWORLD_ROOM, "look_at_obj_in_light", "pillow", "floorlamp"],
    ["look at the watch under the desk lamp", LIVING, "look_at_obj_in_light", "watch", "desklamp"],
    ["put a keychain in safe.", ALFWORLD_ROOM, "pick_and_place_simple", "keychain", "safe"],
    ["put some cellphone on bed.", ALFWORLD_ROOM, "pick_and_place_simple", "cellphone", "bed"],
    ["put a clean lettuce in diningtable.", ALFWORLD_KITCHEN, "pick_clean_then_place_in_recep", "lettuce", "diningtable"],
    ["clean some plate and put it in cabinet.", ALFWORLD_KITCHEN, "pick_clean_then_place_in_recep", "plate", "cabinet"],
    ["put a hot apple in fridge.", ALFWORLD_KITCHEN, "pick_heat_then_place_in_recep", "apple", "fridge"],
    ["heat some egg and put it in garbagecan.", ALFWORLD_KITCHEN, "pick_heat_then_place_in_recep", "egg", "garbagecan"],
    ["put a cool mug in coffeemachine.", ALFWORLD_KITCHEN, "pick_cool_then_place_in_recep", "mug", "coffeemachine"],
    ["cool some potato and put it in microwave.", ALFWORLD_KITCHEN, "pick_cool_then_place_in_recep", "potato", "microwave"],
    ["put two pencil in drawer.", ALFWORLD_ROOM, "pick_two_obj_and_place", "pencil", "drawer"],
    ["find two book and put them in shelf.", ALFWORLD_ROOM, "pick_two_obj_and_place", "book", "shelf"],
  ] as const)("ALFWorld: %s", (task, receptacles, entry_point, object_type, target_type) => {
    expect(build({ task, receptacles: [...receptacles] })).toEqual({ entry_point, object_type, target_type });
  });

  it("validates the argument object strictly", () => {
    const ok = { task: "put some keychain on dresser", receptacles: ["dresser 1"] };
    expect(() => build({ ...ok, extra: true })).toThrow(expect.objectContaining({ code: "E_BAD_REQUEST" }));
    expect(() => build({ receptacles: ["dresser 1"] })).toThrow(expect.objectContaining({ code: "E_BAD_REQUEST", field: "task" }));
    expect(() => build({ task: ok.task })).toThrow(expect.objectContaining({ code: "E_BAD_REQUEST", field: "receptacles" }));
    expect(() => build({ ...ok, receptacles: "dresser 1" })).toThrow(
      expect.objectContaining({ code: "E_BAD_REQUEST", field: "receptacles" }),
    );
    expect(() => build({ ...ok, receptacles: ["dresser 1", 7] })).toThrow(
      expect.objectContaining({ code: "E_BAD_REQUEST", field: "receptacles.1" }),
    );
    expect(() => build({ ...ok, receptacles: ["dresser 1", "  "] })).toThrow(
      expect.objectContaining({ code: "E_BAD_REQUEST", field: "receptacles.1" }),
    );
    expect(() => build({ ...ok, receptacles: [] })).toThrow(expect.objectContaining({ code: "E_BAD_REQUEST", field: "receptacles" }));
  });
});
