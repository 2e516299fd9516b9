/**
 * A DELETE taken by B for a run executing on A, answered 202 (the cancel stored), and A's
 * start of an allowed tool written after it, before A hears of the cancel (its notification is
 * slow, as while A's listener reconnects and it polls every second): the ledger took the
 * start (toolCall.started did not look at the stored cancel, unlike toolCall.decided and the
 * run's end), so a shell command ran after the run's cancel was stored and acknowledged. Now
 * the start is refused (cancel_requested): the call gets its aborted result, the run ends aborted.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { afterEach, expect, it, onTestFinished } from "vitest";
import type { Store } from "../../src/store/store.js";
import { createTestPgDatabase } from "../helpers/pg-database.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { finishedRun, until } from "../helpers/until.js";

const servers: TestServer[] = [];
afterEach(async () => {
  for (const s of servers.splice(0).reverse()) await s.close();
});

it("a shell command whose start A writes after B stored the run's cancel (202) does not run", async () => {
  let arrived = false;
  let release!: () => void;
  const opened = new Promise<void>((resolve) => {
    release = resolve;
  });
  // A's write of the tool's start is on its way (a slow commit) while B takes the DELETE.
  const wrapA = (store: Store): Store => ({
    ...store,
    // A hears of stored cancels late (a second), as while its listener is down.
    runs: new Proxy(store.runs, {
      get(target, name, receiver) {
        const value = Reflect.get(target, name, receiver);
        if (name !== "cancelRequested" || typeof value !== "function") return value;
        return async (...args: unknown[]) => {
          await new Promise((resolve) => setTimeout(resolve, 1000));
          return value.apply(target, args);
        };
      },
    }),
    commitRun: async (runId, changes, events, fence) => {
      if (changes.some((c) => c.kind === "toolCall.started")) {
        arrived = true;
        await opened;
      }
      return store.commitRun(runId, changes, events, fence);
    },
  });
  const database = await createTestPgDatabase();
  onTestFinished(() => database.drop());
  const a = await startTestServer({ pgUrl: database.url, wrapStore: wrapA });
  servers.push(a);
  const b = await startTestServer({ pgUrl: database.url, upstream: a.upstream });
  servers.push(b);

  a.upstream.enqueue(
    { toolCalls: [{ id: "call_s", name: "shell", arguments: JSON.stringify({ command: "echo ran > a.txt" }) }] },
    { text: "done" },
  );
  const session = (await a.request("POST", "/sessions", { body: { approval: { tools: { shell: "allow" } } } })).body;
  const run = (await a.request("POST", `/sessions/${session.id}/runs`, { body: { input: "write" } })).body;
  await until(
    async () => arrived,
    (x) => x,
    "A's start of the tool",
  );
  const cancelled = await b.request("DELETE", `/runs/${run.id}`);
  expect(cancelled.status).toBe(202);
  release();

  const ended = await finishedRun(b, run.id);
  expect(ended.stopReason).toBe("aborted");
  const file = join(a.dir, "workspaces", session.workspace, "a.txt");
  const result = (await b.request("GET", `/sessions/${session.id}/messages`)).body.items.find(
    (m: { role: string }) => m.role === "tool",
  );
  expect({ written: existsSync(file), code: result.metadata.errorCode }).toEqual({ written: false, code: "ABORTED" });
});
