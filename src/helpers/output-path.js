/** @module output-path — resolves a helper's output path: parent directories created, writability checked. */
import { accessSync, constants, mkdirSync, statSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { SvcError } from "../errors.js";
/**
 * Resolve `path`, create its parent directories and check that the directory is writable,
 * so a helper fails with a descriptive error before producing anything. Returns the
 * absolute path.
 */
export function prepareOutput(path, field) {
    const absolute = resolve(path);
    const dir = dirname(absolute);
    try {
        mkdirSync(dir, { recursive: true });
        if (!statSync(dir).isDirectory())
            throw new Error(`${dir} is not a directory`);
        accessSync(dir, constants.W_OK);
    }
    catch (err) {
        throw new SvcError("E_IO", `${field}: cannot write into ${dir}: ${err.message}`, { field, cause: err });
    }
    try {
        if (statSync(absolute).isDirectory())
            throw new SvcError("E_BAD_REQUEST", `${field}: ${absolute} is a directory`, { field });
    }
    catch (err) {
        if (err instanceof SvcError)
            throw err;
    }
    return absolute;
}
//# sourceMappingURL=output-path.js.map