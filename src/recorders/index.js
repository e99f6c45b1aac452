/** @module recorders — the package entry for client-side recorders: `import { wrapClient } from "svc"` (or "svc/recorders"). */
export { flushRecorders, wrapClient } from "./llm-client.js";
export { HOOK_EVENTS, hookRecord, mergeHooks, removeHooks, parseAutoRecord } from "./hooks.js";
//# sourceMappingURL=index.js.map