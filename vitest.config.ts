import { tmpdir } from "node:os";
import { join } from "node:path";
import { defineConfig } from "vitest/config";

// V8's compiled code of the modules Node loads, kept across processes: the suite starts the
// built server, the client and the build tools some hundreds of times, and each start compiled
// the same ~1,000 modules again (a fifth of a server start's CPU). Children inherit it, and
// the helpers that give a child an environment of its own pass it on (test/helpers/compile-cache.ts).
process.env.NODE_COMPILE_CACHE ??= join(tmpdir(), "agent-server-test-compile-cache");

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/global-setup.ts"],
    setupFiles: ["test/setup.ts"],
    testTimeout: 20_000,
    hookTimeout: 60_000,
    // expect.poll's own default (1 s) is a fixed wait a loaded machine can outlast: a condition
    // polled for comes within 10 s or is a failure (a test that means less says so at its call).
    expect: { poll: { timeout: 10_000 } },
    pool: "forks",
    // One test file per core (vitest's default leaves one core out: on 2 cores, one file at a
    // time). The suite's files mostly wait on child processes and sockets.
    maxWorkers: "100%",
    // Each worker runs file after file in one process instead of a new process per file: the
    // modules a file imports (the server's whole graph, ~1,000) are loaded once per worker, not
    // once per file (spawn and import were ~1 s of a loaded core per file, a fifth of the run).
    // So a file must leave nothing behind: its hooks close its servers and restore spies, real
    // timers and any process.env it changed, and no file mocks a module.
    isolate: false,
    reporters: process.env.VITEST_JSON_REPORT
      ? ["default", ["json", { outputFile: process.env.VITEST_JSON_REPORT }]]
      : ["default"],
  },
});
