import { SvcError } from "../errors.js";
export function positiveInt(name, value, fallback) {
    if (value === undefined)
        return fallback;
    const n = Number(value);
    if (typeof value !== "string" || !Number.isInteger(n) || n <= 0)
        throw new SvcError("E_BAD_REQUEST", `--${name} must be a positive integer, got ${value}`, { field: name });
    return n;
}
/** Write one line to stdout. */
export function say(line) {
    process.stdout.write(`${line}\n`);
}
//# sourceMappingURL=command.js.map