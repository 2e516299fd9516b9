/**
 * One instance (SQLite). A DELETE arrives while the write of an allowed tool's start is on its
 * way: the run's signal fires before the start is committed. The loop checked the signal before
 * the start write, not after it, and executed the tool once the commit returned: write_file,
 * which does not look at its signal, wrote its file in a run cancelled before the tool began
 * (law 7c). Now the call gets its "aborted before execution" result and the tool does not run.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { afterEach, expect, it, vi } from "vitest";
import { LiveRun } from "../../src/runs/live-run.js";
import type { Store } from "../../src/store/store.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { finishedRun, until } from "../helpers/until.js";

let server: TestServer | undefined;
let cancels: { mockRestore(): void } | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
  cancels?.mockRestore();
  cancels = undefined;
});

it("a DELETE while the tool's start is being written: the tool does not run", async () => {
  let arrived = false;
  let release!: () => void;
  const opened = new Promise<void>((resolve) => {
    release = resolve;
  });
  const wrapStore = (store: Store): Store => ({
    ...store,
    commitRun: async (runId, changes, events, fence) => {
      if (changes.some((c) => c.kind === "toolCall.started")) {
        arrived = true;
        await opened;
      }
      return store.commitRun(runId, changes, events, fence);
    },
  });
  server = await startTestServer({ wrapStore });
  const s = server;
  s.upstream.enqueue({
    toolCalls: [{ id: "call_w", name: "write_file", arguments: JSON.stringify({ path: "a.txt", content: "x" }) }],
  });
  const session = (await s.request("POST", "/sessions", { body: { approval: { tools: { write_file: "allow" } } } }))
    .body;
  const run = (await s.request("POST", `/sessions/${session.id}/runs`, { body: { input: "write" } })).body;
  await until(
    async () => arrived,
    (x) => x,
    "the tool's start",
  );
  // The run's signal fires (LiveRun.cancel) when the DELETE is taken: seen here, not guessed at
  // with a fixed wait (a loaded machine could take the DELETE after the start was let through).
  const spy = vi.spyOn(LiveRun.prototype, "cancel");
  cancels = spy;
  const fired = () =>
    spy.mock.contexts.some((live, i) => (live as LiveRun).id === run.id && spy.mock.results[i]?.value === true);
  const cancelling = s.request("DELETE", `/runs/${run.id}`);
  // The DELETE is taken (the run's signal fires) while the start is still on its way.
  await until(
    async () => fired(),
    (x) => x,
    "the run's signal to fire",
  );
  release();
  expect((await cancelling).status).toBe(202);
  const ended = await finishedRun(s, run.id);
  expect(ended.stopReason).toBe("aborted");
  const messages = (await s.request("GET", `/sessions/${session.id}/messages`)).body.items;
  const results = messages.filter((m: { role: string }) => m.role === "tool");
  expect(results.map((m: { metadata: { errorCode: string } }) => m.metadata.errorCode)).toEqual(["ABORTED"]);
  const file = join(s.dir, "workspaces", session.workspace, "a.txt");
  expect(existsSync(file)).toBe(false);
});
