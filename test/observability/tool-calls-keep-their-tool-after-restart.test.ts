/**
 * A run left for the restart while one of its calls waits for approval: the restarted server
 * resumes it, and the call is then decided (denied) there. The call names a tool of the
 * server's (write_file), proposed before the restart: its result must be counted under that
 * tool, not as a name "the model made up" (`tool="(unknown)"`), and its span named after it.
 */
import { afterEach, expect, it } from "vitest";
import { type FakeUpstream, startFakeUpstream } from "../fakes/openai-upstream.js";
import { runAwaitingApproval } from "../helpers/awaiting-approval.js";
import { type OtlpReceiver, startOtlpReceiver } from "../helpers/otlp-receiver.js";
import { Exposition } from "../helpers/prometheus-text.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { finishedRun } from "../helpers/until.js";

let server: TestServer | undefined;
let upstream: FakeUpstream | undefined;
let receiver: OtlpReceiver | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
  await upstream?.close();
  upstream = undefined;
  await receiver?.close();
  receiver = undefined;
});

/** A run awaiting approval of write_file `call_w`, left for the restart; the restarted server. */
async function restartedWhileAwaiting(env: Record<string, string> = {}): Promise<{ runId: string }> {
  upstream = await startFakeUpstream();
  const first = await startTestServer({ env, upstream });
  server = first;
  const { runId } = await runAwaitingApproval(first);
  await first.close({ keepDir: true, resume: true });
  server = await startTestServer({ env, dir: first.dir, upstream });
  return { runId };
}

it("counts a call denied after a restart under its tool, not as (unknown)", async () => {
  const { runId } = await restartedWhileAwaiting();
  const s = server as TestServer;
  (upstream as FakeUpstream).enqueue({ text: "not written" });
  const denied = await s.request("POST", `/runs/${runId}/approvals/call_w`, { body: { decision: "deny" } });
  expect(denied.status).toBe(200);
  expect((await finishedRun(s, runId)).stopReason).toBe("complete");

  const m = new Exposition(await (await fetch(`${s.url}/metrics`)).text());
  expect(m.value("agent_tool_calls_total", { tool: "(unknown)", outcome: "DENIED" })).toBe(0);
  expect(m.value("agent_tool_calls_total", { tool: "write_file", outcome: "DENIED" })).toBe(1);
});

it("counts a call a restart with ON_RESTART=abort closes under its tool, not as (unknown)", async () => {
  upstream = await startFakeUpstream();
  const first = await startTestServer({ upstream });
  server = first;
  const { runId } = await runAwaitingApproval(first);
  await first.close({ keepDir: true, resume: true });
  server = await startTestServer({ env: { ON_RESTART: "abort" }, dir: first.dir, upstream });
  const s = server;
  expect((await finishedRun(s, runId)).stopReason).toBe("aborted");

  const m = new Exposition(await (await fetch(`${s.url}/metrics`)).text());
  expect(m.value("agent_tool_calls_total", { tool: "(unknown)", outcome: "ABORTED" })).toBe(0);
  expect(m.value("agent_tool_calls_total", { tool: "write_file", outcome: "ABORTED" })).toBe(1);
});

it("names the execute_tool span of a call denied after a restart after its tool", async () => {
  receiver = await startOtlpReceiver();
  const { runId } = await restartedWhileAwaiting({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url });
  const s = server as TestServer;
  (upstream as FakeUpstream).enqueue({ text: "not written" });
  const denied = await s.request("POST", `/runs/${runId}/approvals/call_w`, { body: { decision: "deny" } });
  expect(denied.status).toBe(200);
  expect((await finishedRun(s, runId)).stopReason).toBe("complete");
  await s.close();
  server = undefined;

  const tools = receiver.spans.filter((span) => span.attributes["gen_ai.operation.name"] === "execute_tool");
  expect(tools.map((span) => [span.name, span.attributes["gen_ai.tool.name"]])).toEqual([
    ["execute_tool write_file", "write_file"],
  ]);
});
