/**
 * GET /runs/{id}/steps of a live run agrees with the run's own events, messages and stats.
 *
 * A turn with parallel tool calls executes them one after another (law 6), and each result is
 * committed (a `message` event, the session's history, `stats.toolCalls`) as soon as its call
 * ends. The turn's step lists that result from then on too (it is stored with it), also while
 * a later call of the turn waits for a person or runs a long command: an operator watching a
 * run that waits for approval sees the turn's `list_files` in its step, with its status, as the
 * messages and events show it (after a restart, the resumed run re-reports the step with every
 * answered call as well).
 */
import { afterEach, describe, expect, it } from "vitest";
import { validateResponse } from "../helpers/openapi-validator.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { until } from "../helpers/until.js";

const servers: TestServer[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await s.close();
});

describe.each(["sqlite", "postgres"] as const)("a live run's steps, on %s", (backend) => {
  it("list a call whose result is committed while a later call of the same turn awaits approval", async () => {
    const server = await startTestServer({ backend });
    servers.push(server);
    server.upstream.enqueue(
      {
        toolCalls: [
          { id: "call_list", name: "list_files", arguments: "{}" },
          { id: "call_write", name: "write_file", arguments: JSON.stringify({ path: "a.txt", content: "x" }) },
        ],
      },
      { text: "done" },
    );
    const session = (await server.request("POST", "/sessions", { body: {} })).body.id;
    const run = (await server.request("POST", `/sessions/${session}/runs`, { body: { input: "go" } })).body.id;

    // The second call (write_file: ask) waits for a person; the first (list_files: allow) has run.
    await until(
      async () => (await server.request("GET", `/runs/${run}/approvals`)).body.items ?? [],
      (items: { toolCallId: string }[]) => items.some((a) => a.toolCallId === "call_write"),
      "write_file's approval request",
    );
    const messages = (await server.request("GET", `/sessions/${session}/messages`)).body.items;
    const results = messages
      .filter((m: { role: string }) => m.role === "tool")
      .map((m: { toolCallId: string }) => m.toolCallId);
    expect(results).toEqual(["call_list"]);
    const view = (await server.request("GET", `/runs/${run}`)).body;
    expect(view.status).toBe("awaiting_approval");
    expect(view.stats.toolCalls).toBe(1);

    const steps = await server.request("GET", `/runs/${run}/steps`);
    validateResponse({ method: "GET", path: "/runs/{id}/steps", status: steps.status, body: steps.body });
    expect(steps.body.items.map((s: { turn: number }) => s.turn)).toEqual([1]);
    // The committed result is in the turn's trace, as it is in the history and the stats.
    expect(
      steps.body.items[0].tools.map((t: { toolCallId: string; status: string }) => [t.toolCallId, t.status]),
    ).toEqual([["call_list", "ok"]]);

    await server.request("POST", `/runs/${run}/approvals/call_write`, { body: { decision: "deny" } });
    await until(
      async () => (await server.request("GET", `/runs/${run}`)).body.status,
      (s) => s === "finished",
      "the run to finish",
    );
  });
});
