/**
 * A run resumed after a crash reads its call's ledger row before asking for approval; a cancel
 * meanwhile closes the call at once (the loop no longer waits for the gate) and the run ends.
 * The gate went on and wrote its request after the call's result: the ledger's row went back
 * to awaiting approval, the run's end found the call open again and gave it a second result
 * (kill-anywhere postgres seeds 992845032, 992846048: the session's next run then failed,
 * INVALID_HISTORY). Now the gate records nothing once the run is cancelled, and the ledger
 * refuses any change to a call that has its result.
 */
import { describe, expect, it } from "vitest";
import type { Store } from "../../src/store/store.js";
import { api, freePort } from "../helpers/child-server.js";
import { crashHarness } from "../helpers/crash-harness.js";
import { aroundStore } from "../helpers/store-around.js";
import { until } from "../helpers/until.js";

const crash = crashHarness({ instanceId: "gate" });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.each(["sqlite", "postgres"] as const)("on %s", (backend) => {
  it("a cancel while a resumed run's approval gate reads the ledger leaves the call one result and the session usable", async () => {
    await crash.prepare(backend, "approval-gate-");
    // Killed right after the model's reply is stored: its shell call (which asks, by default) is proposed.
    const a = await crash.start({ AGENT_FAILPOINTS: "after-assistant-commit" });
    crash.upstream.enqueue({ toolCalls: [{ id: "call_s", name: "shell", arguments: '{"command":"echo hi"}' }] });
    const session = await api(a.url, "POST", "/sessions", {});
    const run = await api(a.url, "POST", `/sessions/${session.body.id}/runs`, { input: "go" });
    expect(run.status).toBe(201);
    expect(await a.exited).toBe("SIGKILL");
    const runId = run.body.id as string;

    const port = await freePort();
    let cancel: Promise<Response> | null = null;
    let callClosed = false;
    let closed: () => void = () => {};
    const closing = new Promise<void>((resolve) => {
      closed = resolve;
    });
    let askedLate: () => void = () => {};
    const lateRequest = new Promise<void>((resolve) => {
      askedLate = resolve;
    });
    const raceTheGate = (store: Store): Store => {
      const watched: Store = {
        ...store,
        commitRun: async (id, changes, events, fence) => {
          const stored = await store.commitRun(id, changes, events, fence);
          for (const change of changes) {
            if (change.kind === "message" && change.message.role === "tool" && change.message.toolCallId === "call_s") {
              callClosed = true;
              closed();
            }
            if (change.kind === "toolCall.awaitingApproval" && callClosed) askedLate();
          }
          return stored;
        },
      };
      return aroundStore(watched, "toolCalls", (name, args, call) => {
        // The resumed run's gate reads the call's row: a client cancels the run, and the read
        // answers once the loop has closed the call.
        if (name === "get" && args[1] === "call_s" && !cancel) {
          cancel = fetch(`http://127.0.0.1:${port}/runs/${runId}`, { method: "DELETE" });
          return closing.then(call);
        }
        // The run's end reads the calls still open: after the gate's late request, if it makes one.
        if (name === "open" && callClosed) return Promise.race([lateRequest, sleep(500)]).then(call);
        return call();
      });
    };
    const b = await crash.restart({ port, wrapStore: raceTheGate });
    // Sent once the resumed run's gate reads the call, and answered once the loop has closed it.
    const answered = await until(
      async () => (cancel ? await cancel : null),
      (response) => response !== null,
      "the cancel sent as the gate reads the call",
    );
    expect(answered?.status).toBe(202);
    const ended = await until(
      async () => (await b.request("GET", `/runs/${runId}`)).body,
      (r) => r.status === "finished",
      "the cancelled run to end",
    );
    expect(ended.stopReason).toBe("aborted");

    const messages = (await b.request("GET", `/sessions/${session.body.id}/messages`)).body.items;
    const results = messages.filter((m: { role: string }) => m.role === "tool");
    expect(
      results.map((m: { toolCallId: string; metadata: { errorCode: string } }) => [m.toolCallId, m.metadata.errorCode]),
    ).toEqual([["call_s", "ABORTED"]]);
    expect(await b.ctx.store.toolCalls.open(runId)).toEqual([]);
    // Closed before it was ever asked: no request for it is shown to a client.
    const events = await b.ctx.store.events.after(runId, 0);
    expect(events.map((e) => e.type)).not.toContain("approval.requested");

    // The session's next run reads a valid history.
    crash.upstream.enqueue({ text: "done" });
    const next = await b.request("POST", `/sessions/${session.body.id}/runs?wait=true`, { body: { input: "again" } });
    expect(next.body.run).toMatchObject({ status: "finished", stopReason: "complete" });
  });
});
