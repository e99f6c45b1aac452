/** @module version — the software version, reported by /v1/health, the OpenAPI document and the MCP servers. */
export const VERSION = "0.1.0";
//# sourceMappingURL=version.js.map