/** The backup routes without a local index service (cluster mode): every one answers 501 E_NOT_IMPLEMENTED, a documented refusal, never a crash. */
import { describe, expect, it } from "vitest";
import { ERRORS } from "../../src/errors.js";
import { backupRoutes } from "../../src/http/routes/backups.js";
import type { RequestContext } from "../../src/http/route.js";

describe("backup routes in cluster mode", () => {
  it("answer 501 E_NOT_IMPLEMENTED on every route", async () => {
    const routes = backupRoutes(null);
    expect(routes.map((r) => r.operationId).sort()).toEqual([
      "create_backup",
      "create_index_from_backup",
      "delete_backup",
      "describe_backup",
      "describe_restore_job",
      "list_backups",
      "list_index_backups",
      "list_restore_jobs",
    ]);
    expect(ERRORS.E_NOT_IMPLEMENTED.status).toBe(501);
    for (const r of routes) {
      const ctx = {
        id: "t",
        params: { name: "films", backup_id: "00000000-0000-4000-8000-000000000000", job_id: "00000000-0000-4000-8000-000000000000" },
        query: new URLSearchParams(),
        body: { name: "x" },
        principal: { tenant: "t", admin: false },
        baseUrl: "http://x",
        usage: {},
        contentType: "application/json",
      } as unknown as RequestContext;
      await expect(Promise.resolve().then(() => r.handle(ctx))).rejects.toMatchObject({ code: "E_NOT_IMPLEMENTED" });
    }
  });
});
