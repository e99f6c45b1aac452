import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 60_000,
    // beforeAll hooks start real servers (svc serve, nats-server clusters): seconds on a quiet machine, more under load
    hookTimeout: 120_000,
    pool: "forks",
  },
});
