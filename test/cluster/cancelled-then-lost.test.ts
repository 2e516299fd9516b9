import { afterEach, expect, it } from "vitest";
import { type FakeUpstream, startFakeUpstream } from "../fakes/openai-upstream.js";
import { api } from "../helpers/child-server.js";
import { type Instances, startInstances } from "../helpers/instances.js";
import { until } from "../helpers/until.js";

/**
 * A run cancelled through instance B while instance A, which executes it, is paused, then A is
 * lost (kill -9): B's reaper ends it aborted, and its stop detail says what happened (no
 * server restarted).
 */
let upstream: FakeUpstream | undefined;
let instances: Instances | undefined;
afterEach(async () => {
  await instances?.stop();
  await upstream?.close();
});

it("a run cancelled on B, its instance A lost before it acted on it: aborted by B's reaper, 'before the instance executing it was lost'", async () => {
  upstream = await startFakeUpstream();
  instances = await startInstances({ count: 2, upstream, env: { RUN_LEASE_MS: "1000", SHELL_SANDBOX: "off" } });
  const [a, b] = instances.servers as [(typeof instances.servers)[0], (typeof instances.servers)[0]];
  upstream.enqueue({
    toolCalls: [{ id: "call_w", name: "write_file", arguments: JSON.stringify({ path: "a.txt", content: "hi" }) }],
  });
  const session = await api(a.url, "POST", "/sessions", { approval: { tools: { write_file: "ask" } } });
  const run = await api(a.url, "POST", `/sessions/${session.body.id}/runs`, { input: "write" });
  expect(run.status).toBe(201);
  await until(
    async () => (await api(b.url, "GET", `/runs/${run.body.id}`)).body.status,
    (status) => status === "awaiting_approval",
    "the approval request",
  );
  a.process.kill("SIGSTOP");
  const cancelled = await api(b.url, "DELETE", `/runs/${run.body.id}`);
  expect(cancelled.status).toBe(202);
  a.process.kill("SIGKILL");
  await a.exited;
  const finished = await until(
    async () => (await api(b.url, "GET", `/runs/${run.body.id}`)).body,
    (view) => view.status === "finished",
    "the run to finish on B",
  );
  expect(finished.stopReason).toBe("aborted");
  expect(finished.stopDetail).toContain("by a DELETE /runs/{id} request before the instance executing it was lost");
  expect(finished.stopDetail).not.toContain("restarted");
});
