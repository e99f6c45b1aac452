/**
 * @module salvage-json — `svc repair` for the stores kept as one JSON file (keys.json, wallets.json,
 * directory.json): split a damaged file into the elements of one array or object member without
 * parsing the whole, so each record is kept or dropped on its own; quarantine and rewrite the file.
 */
import { closeSync, copyFileSync, existsSync, fsyncSync, openSync, readdirSync, renameSync, writeSync } from "node:fs";
import { dirname, join } from "node:path";
import { parseStoredJson } from "../safe-values.js";
/**
 * The raw texts of the elements of the array (or `"name":value` members of the object) that is the
 * value of the first `"key":` in `text`, found by bracket depth outside strings; null when the key
 * or its opening bracket is missing. A damaged element comes back as garbage that JSON.parse refuses.
 */
export function salvageElements(text, key) {
    const m = new RegExp(`"${key}"\\s*:\\s*([[{])`).exec(text);
    if (m === null)
        return null;
    const out = [];
    let depth = 0;
    let inString = false;
    let start = m.index + m[0].length;
    for (let i = start; i < text.length; i++) {
        const c = text[i];
        if (inString) {
            if (c === "\\")
                i++;
            else if (c === '"')
                inString = false;
            continue;
        }
        if (c === '"')
            inString = true;
        else if (c === "{" || c === "[")
            depth++;
        else if (c === "}" || c === "]") {
            if (depth === 0) {
                if (text.slice(start, i).trim() !== "")
                    out.push(text.slice(start, i));
                return out;
            }
            depth--;
        }
        else if (c === "," && depth === 0) {
            out.push(text.slice(start, i));
            start = i + 1;
        }
    }
    if (text.slice(start).trim() !== "")
        out.push(text.slice(start)); // cut off: the last element is garbage
    return out;
}
/** Every `<dataDir>/tenants/<tenant>/<...sub>/<name>` entry: where the per-tenant stores of one kind (knowledge graphs, causal models) live, for repair. */
export function tenantStoreDirs(dataDir, ...sub) {
    const tenants = join(dataDir, "tenants");
    if (!existsSync(tenants))
        return [];
    return readdirSync(tenants).flatMap((tenant) => {
        const root = join(tenants, tenant, ...sub);
        return existsSync(root) ? readdirSync(root).map((name) => ({ tenant, name, dir: join(root, name) })) : [];
    });
}
/** The stored JSON (read safely: parseStoredJson), or undefined. */
export function tryParse(text) {
    try {
        return parseStoredJson(text);
    }
    catch {
        return undefined;
    }
}
/** While true (`svc repair --check`), the two functions below change nothing and say where the copy would go. */
let checkOnly = false;
/** Run `fn` with every quarantine and rewrite of this module turned into a report only. */
export function checkingOnly(fn) {
    checkOnly = true;
    try {
        return fn();
    }
    finally {
        checkOnly = false;
    }
}
/** Copy `file` to `<file>.damaged-<ms>` (fsynced), then replace it atomically by `body` (mode `mode`). Returns the copy's path. */
export function quarantineAndRewrite(file, body, mode = 0o644) {
    const backup = `${file}.damaged-${Date.now()}`;
    if (checkOnly)
        return `${backup} (not written: --check)`;
    copyFileSync(file, backup);
    syncPath(backup, "r");
    const tmp = `${file}.tmp`;
    const fd = openSync(tmp, "w", mode);
    try {
        writeSync(fd, body);
        fsyncSync(fd);
    }
    finally {
        closeSync(fd);
    }
    renameSync(tmp, file);
    syncPath(dirname(file), "r");
    return backup;
}
/** Rename `file` to `<file>.damaged-<ms>` (directory fsynced). Returns the new path. */
export function quarantine(file) {
    const backup = `${file}.damaged-${Date.now()}`;
    if (checkOnly)
        return `${backup} (not moved: --check)`;
    renameSync(file, backup);
    syncPath(dirname(file), "r");
    return backup;
}
function syncPath(path, flags) {
    const fd = openSync(path, flags);
    try {
        fsyncSync(fd);
    }
    finally {
        closeSync(fd);
    }
}
//# sourceMappingURL=salvage-json.js.map