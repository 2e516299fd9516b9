/**
 * agent_approvals_pending is "tool calls waiting for an approval decision". After a restart the
 * resumed run waits again for the decision it waited for before (its question is asked again,
 * it shows `awaiting_approval`, GET /runs/{id}/approvals lists it, this process executes it),
 * yet the gauge read 0: only an `approval.requested` event written by this process counted,
 * and a resumed run does not write one again. An operator alerting on approvals left waiting
 * lost every one of them at each deploy. Now the gauge is read, when scraped, from the approval
 * waiters of the runs executed here, however their calls came to wait.
 */
import { afterEach, expect, it } from "vitest";
import { startFakeUpstream } from "../fakes/openai-upstream.js";
import { Exposition } from "../helpers/prometheus-text.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { until } from "../helpers/until.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const scrape = async (s: TestServer) => new Exposition(await (await fetch(`${s.url}/metrics`)).text());

it("counts the approval a run resumed after a restart waits for", async () => {
  const upstream = await startFakeUpstream();
  const first = await startTestServer({ upstream });
  server = first;
  const session = await first.request("POST", "/sessions", { body: {} });
  upstream.enqueue(
    { toolCalls: [{ id: "call_w", name: "write_file", arguments: '{"path":"a.txt","content":"a"}' }] },
    { text: "written" },
  );
  const run = await first.request("POST", `/sessions/${session.body.id}/runs`, { body: { input: "write" } });
  expect(run.status).toBe(201);
  await until(
    async () => (await first.request("GET", `/runs/${run.body.id}`)).body.status,
    (status) => status === "awaiting_approval",
    "the run to wait for approval",
  );
  // Before the restart the gauge counts it.
  expect((await scrape(first)).value("agent_approvals_pending")).toBe(1);
  await first.close({ keepDir: true, resume: true });
  server = undefined;

  const second = await startTestServer({ dir: first.dir, upstream });
  server = second;
  // The resumed run is executed here and waits for the same decision.
  await until(
    async () => (await second.request("GET", `/runs/${run.body.id}`)).body.status,
    (status) => status === "awaiting_approval",
    "the resumed run to wait for approval",
  );
  await until(
    async () => (await scrape(second)).value("agent_runs_live"),
    (n) => n === 1,
    "the resumed run to be live here",
  );
  const pending = await second.request("GET", `/runs/${run.body.id}/approvals`);
  expect(pending.status).toBe(200);
  expect(pending.body.items.map((a: { toolCallId: string }) => a.toolCallId)).toEqual(["call_w"]);

  const m = await scrape(second);
  expect({ live: m.value("agent_runs_live"), approvalsPending: m.value("agent_approvals_pending") }).toEqual({
    live: 1,
    approvalsPending: 1,
  });

  // Decided: the run ends and the gauge is 0 (never below).
  const decided = await second.request("POST", `/runs/${run.body.id}/approvals/call_w`, {
    body: { decision: "approve" },
  });
  expect(decided.status).toBe(200);
  expect((await second.ctx.manager.waitForFinish(run.body.id)).stopReason).toBe("complete");
  expect((await scrape(second)).value("agent_approvals_pending")).toBe(0);
  await upstream.close();
});
