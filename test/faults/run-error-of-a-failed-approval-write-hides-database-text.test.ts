/**
 * c5b01d3: "A run's error names the database failure's kind, never the driver's text, address
 * or tables". A run whose approval request cannot be stored (the database refuses the write)
 * still shows the database's own text in its error and stop detail: the approval gate's failure
 * goes through tool-phase's failAt with messageOf(err), not through the run-failure words.
 */
import { afterEach, expect, it } from "vitest";
import { StorageError } from "../../src/store/errors.js";
import type { Store } from "../../src/store/store.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { finishedRun } from "../helpers/until.js";

const DRIVER_TEXT = "permission denied for table tool_calls (host db-primary.internal:5432)";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

it("a run whose approval request the database refused ends with an error naming the failure's kind, not the database's text", async () => {
  let refuse = true;
  server = await startTestServer({
    wrapStore: (store: Store): Store => ({
      ...store,
      commitRun: (runId, changes, events, fence) => {
        if (refuse && changes.some((c) => c.kind === "toolCall.awaitingApproval")) {
          refuse = false;
          return Promise.reject(new StorageError("denied", DRIVER_TEXT));
        }
        return store.commitRun(runId, changes, events, fence);
      },
    }),
  });
  server.upstream.enqueue({
    toolCalls: [{ id: "call_w", name: "write_file", arguments: JSON.stringify({ path: "a.txt", content: "x" }) }],
  });
  const session = (await server.request("POST", "/sessions", { body: {} })).body;
  const run = (await server.request("POST", `/sessions/${session.id}/runs`, { body: { input: "write" } })).body;
  const ended = await finishedRun(server, run.id);
  expect(refuse).toBe(false);
  expect(ended.stopReason).toBe("error");
  const shown = JSON.stringify({ error: ended.error, stopDetail: ended.stopDetail });
  expect(shown).not.toContain("tool_calls");
  expect(shown).not.toContain("db-primary.internal");
  expect(shown).toContain("the database refused the server's access (permissions)");
});
