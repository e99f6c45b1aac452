/** For a `usageBound`: the length of `body[field]` when it is an array, else 0 (a request the handler then refuses). */
export function countIn(body, field) {
    const v = typeof body === "object" && body !== null ? body[field] : undefined;
    return Array.isArray(v) ? v.length : 0;
}
//# sourceMappingURL=route.js.map