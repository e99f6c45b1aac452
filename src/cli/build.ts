/** @module build — `svc build <helper> <args.json>`: runs one document helper through the registry and prints its result as JSON. */
import { readFileSync } from "node:fs";
import { SvcError } from "../errors.js";
import { openRegistry } from "../helpers/registry.js";
import { say, type Command } from "./command.js";

/** Read and parse the argument file; `-` reads stdin. */
function readArgs(file: string): unknown {
  let text: string;
  try {
    text = readFileSync(file === "-" ? 0 : file, "utf8");
  } catch (err) {
    throw new SvcError("E_BAD_REQUEST", `cannot read the argument file ${file}: ${(err as Error).message}`, { field: "args", cause: err });
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw new SvcError("E_BAD_REQUEST", `the argument file ${file} is not JSON: ${(err as Error).message}`, { field: "args", cause: err });
  }
}

export const buildCommand: Command = {
  name: "build",
  usage: `svc build <helper> <args.json|-> [--data ./data/var]
  svc build --list [--data ./data/var]
      Run a document helper (module name such as line-folder, or display name such as
      "line folder") with the JSON argument object in the file, print its result as JSON.
      --list prints the helper records (id, code hash, signature). The node's signing
      key is kept in <data>/keys/signing-key.pem. Errors exit 2 with a stable code.`,
  options: { data: { type: "string" }, list: { type: "boolean" } },
  async run(values, args) {
    const dataDir = typeof values.data === "string" ? values.data : "./data/var";
    try {
      const registry = openRegistry({ dataDir });
      if (values.list === true) {
        say(JSON.stringify(registry.list(), null, 2));
        return 0;
      }
      const [helper, file, ...extra] = args;
      if (helper === undefined || file === undefined || extra.length > 0)
        throw new SvcError("E_BAD_REQUEST", "usage: svc build <helper> <args.json>", { field: helper === undefined ? "helper" : "args" });
      const result = await registry.run(helper, readArgs(file));
      say(JSON.stringify(result));
      return 0;
    } catch (err) {
      if (!(err instanceof SvcError)) throw err;
      process.stderr.write(`svc build: ${err.code}: ${err.message}\n${JSON.stringify(err.toJSON())}\n`);
      return 2;
    }
  },
};
