/**
 * A decision a peer answered 200 while the run's owner was lost is stored in the ledger only;
 * the instance that then takes the run over announces it (`approval.resolved`) before what
 * follows: so it does when it resumes the run (test/cluster/takeover.test.ts), and so does the
 * owner that closes a cancelled call after a peer's decision ("A announces the approval before
 * the aborted result"). A run taken over to be ended `aborted` (its cancel stored too, or the
 * peer runs with ON_RESTART=abort) must not drop it: a client that was answered 200 sees its
 * decision in the run's events before the call's aborted result.
 */
import { beforeEach, describe, expect, it } from "vitest";
import { api } from "../helpers/child-server.js";
import { crashHarness } from "../helpers/crash-harness.js";
import { openSse } from "../helpers/sse-client.js";
import { finishedRun, until } from "../helpers/until.js";

const crash = crashHarness({ instanceId: "owner-a" });

describe("a decision answered 200 by a peer while the owner was lost (postgres)", () => {
  beforeEach(() => crash.prepare("postgres"));

  it.each([
    ["the peer runs with ON_RESTART=abort", { ON_RESTART: "abort" }, false],
    ["the run is cancelled on the peer after the decision", {}, true],
  ] as const)(
    "is announced (approval.resolved) before the aborted result when %s",
    async (_, peerEnv, cancel) => {
      // A peer, up before the owner's run starts (so the decision lands while the lost owner's lease holds the run).
      const b = await crash.restart({ env: { INSTANCE_ID: "peer-b", ...peerEnv } });
      const a = await crash.start({ RUN_LEASE_MS: "3000" });
      crash.upstream.enqueue({
        toolCalls: [{ id: "call_d", name: "shell", arguments: JSON.stringify({ command: "echo x > x.txt" }) }],
      });
      const session = await api(a.url, "POST", "/sessions", {});
      const run = await api(a.url, "POST", `/sessions/${session.body.id}/runs`, { input: "go" });
      const runId = run.body.id as string;
      await until(
        () => api(a.url, "GET", `/runs/${runId}/approvals`),
        (r) => r.body?.items?.length === 1,
        "the approval request",
      );
      await crash.kill(a);

      // Nobody executes the run now: the peer writes the decision to the ledger.
      const decided = await b.request("POST", `/runs/${runId}/approvals/call_d`, { body: { decision: "approve" } });
      expect(decided.status).toBe(200);
      if (cancel) expect((await b.request("DELETE", `/runs/${runId}`)).status).toBe(202);

      // The peer takes the run over once the lease expires, and ends it aborted.
      const end = await finishedRun(b, runId);
      expect(end.stopReason).toBe("aborted");
      const events = await (await openSse(`${b.url}/runs/${runId}/events`)).ended;
      expect(events.map((e) => Number(e.id))).toEqual(events.map((_, i) => i + 1));
      const kinds = events.map((e) => (e.event === "message" ? `message:${e.json.message.role}` : e.event));
      const resolved = events.find((e) => e.event === "approval.resolved");
      expect(resolved?.json, `events: ${kinds.join(" ")}`).toMatchObject({ toolCallId: "call_d", decision: "approve" });
      expect(kinds.indexOf("approval.resolved")).toBeLessThan(kinds.indexOf("message:tool"));
    },
    30_000,
  );
});
